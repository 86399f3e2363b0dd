package dev.kiln.catalogue;

import dev.kiln.testing.BlockingStep;
import dev.kiln.Tensor;
import dev.kiln.io.Npy;
import dev.kiln.io.NpyFormatException;
import dev.kiln.runtime.Buffer;
import dev.kiln.runtime.ConcurrentUseException;
import dev.kiln.runtime.DeviceRegistry;
import dev.kiln.runtime.DeviceSpec;
import dev.kiln.runtime.ExecutionPlan;
import dev.kiln.runtime.MemoryBudget;
import dev.kiln.runtime.MemoryBudgetException;
import dev.kiln.types.DType;
import dev.kiln.types.Shape;
import dev.kiln.types.Variable;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.foreign.MemorySegment;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.HashMap;
import java.util.Map;
import java.util.stream.Stream;

import static dev.kiln.catalogue.BadInput.bad;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * The runtime's bad-input catalogue (issue 13): execution plans (variables, use after close, concurrent use, replicas),
 * buffers, {@code .npy} files, device names, the memory budget and the value types. One row per case, checked by
 * {@link BadInput#check()}. Plans run on INTERP, so no kernel is compiled.
 */
class RuntimeBadInputCatalogueTest {
    private static final Class<IllegalArgumentException> IAE = IllegalArgumentException.class;
    private static final Class<IllegalStateException> ISE = IllegalStateException.class;
    private static final Class<IndexOutOfBoundsException> IOOBE = IndexOutOfBoundsException.class;
    private static final Class<NpyFormatException> NPY = NpyFormatException.class;

    @TempDir
    static Path tmp;

    /** x[8] + 1 summed up to the variable n in [1, 8]: a plan with one variable. */
    private static ExecutionPlan withVariable;
    /** The same plan, closed. */
    private static ExecutionPlan closed;
    private static Tensor x;

    @BeforeAll
    static void fixtures() throws IOException {
        x = Tensor.ones(8).to("INTERP").realize();
        Tensor n = Tensor.variable(new Variable("n", 1, 8)).to("INTERP");
        withVariable = Tensor.prepare(Tensor.where(Tensor.arange(8).to("INTERP").lt(n), x.add(1), 0.0f).sum());
        closed = Tensor.prepare(x.mul(2));
        closed.close();

        Files.createDirectories(tmp.resolve("dir.npy"));
        Files.write(tmp.resolve("empty.npy"), new byte[0]);
        Npy.write(tmp.resolve("good.npy"), Tensor.of(new float[] {1, 2, 3, 4}, 2, 2));
        byte[] good = Files.readAllBytes(tmp.resolve("good.npy"));
        Files.write(tmp.resolve("truncated.npy"), Arrays.copyOf(good, good.length - 3));
        npyWithHeader("unicode.npy", "{'descr': '<U5', 'fortran_order': False, 'shape': (2,), }", 40);
        npyWithHeader("float-dim.npy", "{'descr': '<f4', 'fortran_order': False, 'shape': (4.5,), }", 16);
        npyWithHeader("descr-number.npy", "{'descr': 4, 'fortran_order': False, 'shape': (4,), }", 16);
        npyWithHeader("duplicate-key.npy", "{'descr': '<f4', 'descr': '<f8', 'fortran_order': False, 'shape': (4,), }", 16);
        npyWithHeader("unclosed.npy", "{'descr': '<f4', 'fortran_order': False, 'shape': (4,", 16);
        npyWithHeader("deep.npy", "{'descr': '<f4', 'fortran_order': False, 'shape': " + "[".repeat(5_000) + "]".repeat(5_000) + ", }", 0);
        npyWithHeader("extra-key.npy", "{'descr': '<f4', 'fortran_order': False, 'shape': (4,), 'order': 'C', }", 16);
        npyWithHeader("bad-string.npy", "{'descr': '<f4, 'fortran_order': False, 'shape': (4,), }", 16);
    }

    @AfterAll
    static void close() { withVariable.close(); }

    static Stream<BadInput> cases() {
        Path dir = tmp;
        return Stream.of(
                // ---- execution plans: variables
                bad("executeWithVars: an unknown variable", IAE, () -> withVariable.executeWithVars(Map.of("q", 1L)),
                        "executeWithVars: the plan has no variable 'q'; its variables are [n[1, 8]]"),
                bad("executeWithVars: a value above the maximum", IAE, () -> withVariable.executeWithVars(Map.of("n", 9L)),
                        "variable 'n' bound to 9, outside its range [1, 8]"),
                bad("executeWithVars: a value below the minimum", IAE, () -> withVariable.executeWithVars(Map.of("n", 0L)),
                        "variable 'n' bound to 0, outside its range [1, 8]"),
                bad("executeWithVars: a null value", IAE, () -> {
                    Map<String, Long> m = new HashMap<>();
                    m.put("n", null);
                    withVariable.executeWithVars(m);
                }, "executeWithVars: no value for variable 'n'"),
                bad("setVariable: an index past the variables", IOOBE, () -> withVariable.setVariable(1, 2),
                        "setVariable: variable 1 of a plan with 1 variables [n[1, 8]]"),
                bad("setVariable: a negative index", IOOBE, () -> withVariable.setVariable(-1, 2),
                        "setVariable: variable -1 of a plan with 1 variables [n[1, 8]]"),
                bad("setVariable: a value above the maximum", IAE, () -> withVariable.setVariable(0, 100),
                        "variable 'n' bound to 100, outside its range [1, 8]"),
                bad("setVariable: a plan without variables", IOOBE, () -> {
                    try (ExecutionPlan p = Tensor.prepare(x.add(3))) {
                        p.setVariable(0, 1);
                    }
                }, "setVariable: variable 0 of a plan with 0 variables []"),
                bad("outputBuffer: an index past the outputs", IOOBE, () -> withVariable.outputBuffer(1), "output 1 of a plan with 1 outputs"),
                bad("buffer: an unknown id", IAE, () -> withVariable.buffer(999), "plan has no buffer 999 (ids 0..1)"),
                bad("customState: a step that is no custom function", IAE, () -> withVariable.customState(0),
                        "customState: step 0 of 1 is not a stateful custom function"),
                bad("customState: a negative step", IAE, () -> withVariable.customState(-1),
                        "customState: step -1 of 1 is not a stateful custom function"),
                bad("replicate: a replacement of another dtype", IAE, () -> withVariable.replicate(Map.of(x.buffer(),
                        Buffer.allocateHeap("INTERP", DType.F64, 8))), "replicate: Buffer[INTERP, 8 x f32] cannot be replaced by Buffer[INTERP, 8 x f64] (dtype and count must match)"),
                bad("replicate: a replacement of another count", IAE, () -> withVariable.replicate(Map.of(x.buffer(),
                        Buffer.allocateHeap("INTERP", DType.F32, 7))), "replicate: Buffer[INTERP, 8 x f32] cannot be replaced by Buffer[INTERP, 7 x f32] (dtype and count must match)"),

                // ---- execution plans: use after close, concurrent use
                bad("execute after close", ISE, () -> closed.execute(), "execution plan is closed"),
                bad("executeProfiled after close", ISE, () -> closed.executeProfiled(), "execution plan is closed"),
                bad("executeWithVars after close", ISE, () -> closed.executeWithVars(Map.of()), "execution plan is closed"),
                bad("setVariable after close", ISE, () -> closed.setVariable(0, 1), "execution plan is closed"),
                bad("outputBuffer after close", ISE, () -> closed.outputBuffer(), "execution plan is closed"),
                bad("replicate after close", ISE, () -> closed.replicate(Map.of()), "execution plan is closed"),
                bad("releaseIntermediateBuffers after close", ISE, () -> closed.releaseIntermediateBuffers(), "execution plan is closed"),
                bad("customState after close", ISE, () -> closed.customState(0), "execution plan is closed"),
                bad("execute from a second thread during a run", ConcurrentUseException.class, () -> whileRunning(ExecutionPlan::execute),
                        "is already running on thread 'catalogue-runner' and runs one execution at a time; give each thread its own replica (ExecutionPlan.replicate(Map))"),
                bad("executeProfiled from a second thread during a run", ConcurrentUseException.class,
                        () -> whileRunning(ExecutionPlan::executeProfiled),
                        "is already running on thread 'catalogue-runner' and runs one execution at a time; give each thread its own replica (ExecutionPlan.replicate(Map))"),
                bad("close from a second thread during a run", ConcurrentUseException.class, () -> whileRunning(ExecutionPlan::close),
                        "is already running on thread 'catalogue-runner' and runs one execution at a time; give each thread its own replica (ExecutionPlan.replicate(Map))"),
                bad("setVariable from a second thread during a run", ConcurrentUseException.class, () -> whileRunning(p -> p.setVariable(0, 1)),
                        "is already running on thread 'catalogue-runner' and runs one execution at a time; give each thread its own replica (ExecutionPlan.replicate(Map))"),
                bad("prepare: a plan over the memory budget", MemoryBudgetException.class, () -> withBudget("1m",
                        () -> Tensor.zeros(1024, 1024).add(1).prepare()),
                        "needs 4194304 bytes (4 MiB), over the memory budget of 1048576 bytes (1 MiB) (set by -Dkiln.memory.budget=1m)"),

                // ---- buffers
                bad("Buffer: a segment too small", IAE, () -> new Buffer("CPU", DType.F32, 4, MemorySegment.ofArray(new byte[15])),
                        "buffer of 4 x f32 needs 16 bytes, segment has 15"),
                bad("Buffer: a negative count", IAE, () -> new Buffer("CPU", DType.F32, -1, MemorySegment.ofArray(new byte[4])),
                        "-1 elements of f32 is a negative count"),
                bad("Buffer: a packed count off the block", IAE, () -> new Buffer("CPU", DType.Q8_0, 33, MemorySegment.ofArray(new byte[68])),
                        "a q8_0 buffer holds whole blocks of 32 values, got 33"),
                bad("getDouble: index -1", IOOBE, () -> Buffer.allocateHeap("INTERP", DType.F32, 4).getDouble(-1),
                        "Buffer[INTERP, 4 x f32]: element -1 out of range [0, 4)"),
                bad("getDouble: index past the end", IOOBE, () -> Buffer.allocateHeap("INTERP", DType.F32, 4).getDouble(4),
                        "Buffer[INTERP, 4 x f32]: element 4 out of range [0, 4)"),
                bad("setDouble: index past the end", IOOBE, () -> Buffer.allocateHeap("INTERP", DType.F32, 4).setDouble(9, 1),
                        "Buffer[INTERP, 4 x f32]: element 9 out of range [0, 4)"),
                bad("getLong: index past the end", IOOBE, () -> Buffer.allocateHeap("INTERP", DType.I32, 2).getLong(2),
                        "Buffer[INTERP, 2 x i32]: element 2 out of range [0, 2)"),
                bad("setLong: index -5", IOOBE, () -> Buffer.allocateHeap("INTERP", DType.I64, 2).setLong(-5, 1),
                        "Buffer[INTERP, 2 x i64]: element -5 out of range [0, 2)"),
                bad("getLong: a float buffer", IAE, () -> Buffer.allocateHeap("INTERP", DType.F32, 2).getLong(0),
                        "f32 is not an integer or bool dtype"),
                bad("setDouble: an integer buffer", IAE, () -> Buffer.allocateHeap("INTERP", DType.I32, 2).setDouble(0, 1.5),
                        "i32 is not a float dtype"),
                bad("getDouble: a packed buffer", IAE, () -> Buffer.allocateHeap("INTERP", DType.Q4_0, 32).getDouble(0),
                        "q4_0 is not an integer or bool dtype"),
                bad("allocateHeap: over the memory budget", MemoryBudgetException.class, () -> withBudget("1k",
                        () -> Buffer.allocateHeap("INTERP", DType.F32, 1024)),
                        "buffer of 1024 x f32 on INTERP needs 4096 bytes (4 KiB), over the memory budget of 1024 bytes (1 KiB) (set by -Dkiln.memory.budget=1k)"),
                bad("allocateOffHeap: over the memory budget", MemoryBudgetException.class, () -> withBudget("1k",
                        () -> Buffer.allocateOffHeap("CPU", DType.F64, 1024)),
                        "buffer of 1024 x f64 on CPU needs 8192 bytes (8 KiB), over the memory budget of 1024 bytes (1 KiB) (set by -Dkiln.memory.budget=1k)"),
                bad("allocateHeap: past a Java array", IAE, () -> withBudget("1t", () -> Buffer.allocateHeap("INTERP", DType.F64, 1L << 31)),
                        "heap buffer of 17179869184 bytes exceeds the 2 GiB heap array limit"),
                bad("allocateOffHeap: 2^62 elements", IAE, () -> Buffer.allocateOffHeap("CPU", DType.F64, 1L << 62),
                        "4611686018427387904 elements of f64 take more than 2^63 - 1 bytes"),

                // ---- .npy files through the API
                bad("Npy.read: a missing file", UncheckedIOException.class, () -> Npy.read(dir.resolve("missing.npy")),
                        "missing.npy: no such file or directory"),
                bad("Npy.read: a directory", UncheckedIOException.class, () -> Npy.read(dir.resolve("dir.npy")), "dir.npy: Is a directory"),
                bad("Npy.readHeader: an empty file", NPY, () -> Npy.readHeader(dir.resolve("empty.npy")),
                        "empty.npy: expected the .npy magic string \\x93NUMPY at the start, found an empty file"),
                bad("Npy.readArray: truncated data", NPY, () -> Npy.readArray(dir.resolve("truncated.npy")),
                        "truncated.npy: truncated data: expected 16 data bytes for f32 [2, 2], found 13"),
                bad("Npy.read: a unicode dtype", NPY, () -> Npy.read(dir.resolve("unicode.npy")),
                        "unicode.npy: unsupported dtype '<U5' (strings); Kiln reads b1, i1, i2, i4, i8, u1, u2, u4, u8, f2, f4 and f8 (either byte order)"),
                bad("Npy.read: a fractional dimension", NPY, () -> Npy.read(dir.resolve("float-dim.npy")),
                        "float-dim.npy: malformed header: expected ',' or ')' at character 52, found '.5,), }'"),
                bad("Npy.read: a descr that is no string", NPY, () -> Npy.read(dir.resolve("descr-number.npy")),
                        "descr-number.npy: unsupported dtype 4 (a structured dtype); Kiln reads plain b1, i1, i2, i4, i8, u1, u2, u4, u8, f2, f4 and f8 (either byte order)"),
                bad("Npy.read: a key given twice (the last wins, as in NumPy)", NPY, () -> Npy.read(dir.resolve("duplicate-key.npy")),
                        "duplicate-key.npy: truncated data: expected 32 data bytes for f64 [4], found 16"),
                bad("Npy.read: an unclosed tuple", NPY, () -> Npy.read(dir.resolve("unclosed.npy")),
                        "unclosed.npy: malformed header: expected more header text at character 53, found the end of the header"),
                bad("Npy.read: 5,000 nested lists", NPY, () -> Npy.read(dir.resolve("deep.npy")),
                        "deep.npy: malformed header: tuples and lists nested deeper than 64 levels at character 114"),
                bad("Npy.read: an unknown key", NPY, () -> Npy.read(dir.resolve("extra-key.npy")),
                        "extra-key.npy: expected the header keys descr, fortran_order and shape, found [descr, fortran_order, shape, order]"),
                bad("Npy.read: an unterminated string", NPY, () -> Npy.read(dir.resolve("bad-string.npy")),
                        "bad-string.npy: malformed header: expected ',' or '}' at character 17, found 'fortran_order': False, 'shape': (4,), }'"),
                bad("Npy.write: bf16", IAE, () -> Npy.write(dir.resolve("o.npy"), Tensor.zeros(DType.BF16, 2).to("INTERP")),
                        "Npy.write: bf16 has no NumPy dtype; cast the tensor to f32 first (exact)"),
                bad("Npy.write: a packed dtype", IAE, () -> Npy.write(dir.resolve("o.npy"), DType.Q8_0, new int[] {32},
                        MemorySegment.ofArray(new byte[34])), "Npy.write: packed dtype q8_0 has no NumPy dtype; dequantise it first"),
                bad("Npy.write: a shape the buffer does not fill", IAE, () -> Npy.write(dir.resolve("o.npy"),
                        Buffer.allocateHeap("INTERP", DType.F32, 4), 2, 3), "Npy.write: shape [2, 3] needs 6 elements, Buffer[INTERP, 4 x f32] holds 4"),
                bad("Npy.write: data shorter than the shape", IAE, () -> Npy.write(dir.resolve("o.npy"), DType.F32, new int[] {4},
                        MemorySegment.ofArray(new byte[8])), "Npy.write: shape [4] of f32 needs 16 bytes, the data has 8"),
                bad("Npy.write: into a missing folder", UncheckedIOException.class, () -> Npy.write(dir.resolve("no/such/dir/o.npy"),
                        Tensor.zeros(2).to("INTERP")), "no/such/dir/o.npy: no such file or directory"),

                // ---- device names, the budget setting, value types
                bad("DeviceSpec.parse: empty", IAE, () -> DeviceSpec.parse(""), "device '' is not of the form KIND or KIND:INDEX (e.g. CPU, CUDA:1)"),
                bad("DeviceSpec.parse: a trailing colon", IAE, () -> DeviceSpec.parse("CPU:"),
                        "device 'CPU:' is not of the form KIND or KIND:INDEX (e.g. CPU, CUDA:1)"),
                bad("DeviceSpec.parse: a space inside", IAE, () -> DeviceSpec.parse("C PU"),
                        "device 'C PU' is not of the form KIND or KIND:INDEX (e.g. CPU, CUDA:1)"),
                bad("DeviceSpec: a negative index", IAE, () -> new DeviceSpec("CPU", -2), "device index must be >= 0, got -2 for CPU"),
                bad("DeviceRegistry.get: an unknown kind", IAE, () -> DeviceRegistry.get("TPU"), "unknown device 'TPU'"),
                bad("MemoryBudget.parse: a word", IAE, () -> MemoryBudget.parse("plenty", "-Dkiln.memory.budget"),
                        "-Dkiln.memory.budget='plenty' is not a memory size: give a positive number of bytes, optionally with a suffix k, m, g or t (e.g. 512m, 8g)"),
                bad("MemoryBudget.parse: a negative size", IAE, () -> MemoryBudget.parse("-5m", "KILN_MEMORY_BUDGET"),
                        "KILN_MEMORY_BUDGET='-5m' is not a memory size: give a positive number of bytes, optionally with a suffix k, m, g or t (e.g. 512m, 8g)"),
                bad("MemoryBudget.parse: zero", IAE, () -> MemoryBudget.parse("0", "KILN_MEMORY_BUDGET"),
                        "KILN_MEMORY_BUDGET='0' is not a memory size: give a positive number of bytes, optionally with a suffix k, m, g or t (e.g. 512m, 8g)"),
                bad("MemoryBudget.parse: past a long", IAE, () -> MemoryBudget.parse("9999999t", "KILN_MEMORY_BUDGET"),
                        "KILN_MEMORY_BUDGET='9999999t' is not a memory size: give a positive number of bytes, optionally with a suffix k, m, g or t (e.g. 512m, 8g)"),
                bad("MemoryBudget.parse: an unknown suffix", IAE, () -> MemoryBudget.parse("5x", "KILN_MEMORY_BUDGET"),
                        "KILN_MEMORY_BUDGET='5x' is not a memory size: give a positive number of bytes, optionally with a suffix k, m, g or t (e.g. 512m, 8g)"),
                bad("MemoryBudget.check: a bad setting", IAE, () -> withBudget("lots", () -> MemoryBudget.check(1, "a test")),
                        "-Dkiln.memory.budget='lots' is not a memory size: give a positive number of bytes, optionally with a suffix k, m, g or t (e.g. 512m, 8g)"),
                bad("Variable: a blank name", IAE, () -> new Variable(" ", 1, 2), "variable name must not be blank"),
                bad("Variable: min above max", IAE, () -> new Variable("n", 5, 2), "variable 'n' has min 5 > max 2"),
                bad("Variable.bind: a value above max", IAE, () -> new Variable("n", 1, 4).bind(5),
                        "variable 'n' bound to 5, outside its range [1, 4]"),
                bad("Shape.of: a negative dim", IAE, () -> Shape.of(3, -1), "shape [3, -1] has negative dimension -1 at axis 1"),
                bad("Shape.dim: an axis past the rank", IOOBE, () -> Shape.of(2, 3).dim(2), "axis 2 out of range for shape [2, 3] (rank 2)"),
                bad("Shape.dim: a negative axis", IOOBE, () -> Shape.of(2, 3).dim(-1), "axis -1 out of range for shape [2, 3] (rank 2)"),
                bad("Shape.variable: an axis past the rank", IOOBE, () -> Shape.of(2).variable(1), "axis 1 out of range for shape [2] (rank 1)"),
                bad("Shape.symbolic: a variable past int", IAE, () -> Shape.symbolic(new Variable("n", 1, 1L << 40)),
                        "symbolic dimension 0: variable 'n' has range [1, 1099511627776]; a size must lie in [0, 2147483647]"),
                bad("Shape.symbolic: a dim of another type", IAE, () -> Shape.symbolic(2, "three"),
                        "shape dimension 1 must be an Integer or a Variable, got String three"),
                bad("DType.byteSize: a negative count", IAE, () -> DType.F32.byteSize(-3), "-3 elements of f32 is a negative count"));
    }

    /** {@code call} on {@link #withVariable}'s twin while another thread is inside a run of it. */
    private static void whileRunning(ThrowingConsumer<ExecutionPlan> call) throws Throwable {
        BlockingStep step = new BlockingStep();
        ExecutionPlan plan = Tensor.prepare(step.over(Tensor.ones(4).to("INTERP").realize()).add(1));
        Thread runner = Thread.ofPlatform().name("catalogue-runner").start(plan::execute);
        try {
            assertThat(step.awaitInside()).as("the runner entered the plan").isTrue();
            call.accept(plan);
        } finally {
            step.release();
            runner.join(10_000);
            plan.close();
        }
    }

    @FunctionalInterface
    private interface ThrowingConsumer<T> {
        void accept(T t) throws Throwable;
    }

    /** Runs {@code call} with the memory budget set to {@code budget}, then restores the setting. */
    private static void withBudget(String budget, BadInput.Call call) throws Throwable {
        String saved = System.getProperty(MemoryBudget.PROPERTY);
        System.setProperty(MemoryBudget.PROPERTY, budget);
        try {
            call.run();
        } finally {
            if (saved == null) System.clearProperty(MemoryBudget.PROPERTY);
            else System.setProperty(MemoryBudget.PROPERTY, saved);
        }
    }

    /** A .npy file of format 1.0 (2.0 when the header needs it) with {@code header} and {@code dataBytes} zero bytes of data. */
    private static void npyWithHeader(String name, String header, int dataBytes) throws IOException {
        byte[] h = (header + "\n").getBytes(StandardCharsets.ISO_8859_1);
        boolean v2 = h.length + 10 > 0xffff;
        int pre = v2 ? 12 : 10;
        byte[] out = new byte[pre + h.length + dataBytes];
        byte[] magic = {(byte) 0x93, 'N', 'U', 'M', 'P', 'Y', (byte) (v2 ? 2 : 1), 0};
        System.arraycopy(magic, 0, out, 0, 8);
        for (int k = 0; k < pre - 8; k++) out[8 + k] = (byte) (h.length >> (8 * k));
        System.arraycopy(h, 0, out, pre, h.length);
        Files.write(tmp.resolve(name), out);
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("cases")
    void failsTypedOnOneLine(BadInput c) {
        c.check();
    }

    @Test
    void theCatalogueHoldsDistinctCases() {
        BadInput.assertDistinct(cases().toList(), 70);
    }
}

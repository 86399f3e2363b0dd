package dev.kiln.cpu;

import dev.kiln.types.DType;
import dev.kiln.types.Variable;
import dev.kiln.codegen.KernelEvaluator;
import dev.kiln.codegen.KernelProgram;
import dev.kiln.codegen.Lowerer;
import dev.kiln.codegen.Stmt;
import dev.kiln.ir.Op;
import dev.kiln.ir.ReduceArg;
import dev.kiln.ir.Slot;
import dev.kiln.ir.UOp;
import dev.kiln.runtime.Buffer;
import dev.kiln.schedule.Schedule;
import dev.kiln.schedule.ScheduleItem;
import dev.kiln.schedule.Scheduler;
import dev.kiln.testing.TestGraphs;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Supplier;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * Renders every kernel of the test graphs to Java, compiles each graph's kernels in one batch and runs
 * them: every kernel must match the {@link KernelEvaluator} and the graph must match the INTERP device
 * bit for bit (NaN payloads aside), also when the kernel runs as 2 or 3 separate ranges, as THREAD will
 * run it.
 */
class JavaKernelTest {
    static Stream<Arguments> graphs() { return TestGraphs.graphs(); }

    @ParameterizedTest(name = "{0}")
    @MethodSource("graphs")
    void compiledKernelsMatchTheInterpreterBitForBit(String name, Supplier<UOp> graph) {
        UOp root = graph.get();
        Buffer expected = TestGraphs.interpret(root);
        Schedule schedule = Scheduler.schedule(List.of(root));
        List<KernelProgram> programs = new ArrayList<>();
        for (ScheduleItem item : schedule.items()) {
            if (item instanceof ScheduleItem.Kernel k) programs.add(Lowerer.lower(k.output(), k.inputs(), "k" + programs.size()));
        }
        List<CpuKernel> kernels = CpuKernel.compile(programs);
        for (CpuKernel k : kernels) assertThat(k.source()).as(k.name()).doesNotContain("Math.fma");

        Map<UOp, Buffer> buffers = new IdentityHashMap<>();
        int next = 0;
        for (ScheduleItem item : schedule.items()) {
            for (UOp in : item.inputs()) {
                if (in.op() == Op.BUFFER) buffers.put(in, (Buffer) in.arg());
            }
            UOp o = item.output();
            switch (item) {
                case ScheduleItem.Kernel k -> {
                    KernelProgram p = programs.get(next);
                    CpuKernel kernel = kernels.get(next++);
                    List<MemorySegment> inputs = new ArrayList<>();
                    for (UOp in : k.inputs()) inputs.add(buffers.get(in).segment());
                    Buffer reference = allocate(o);
                    KernelEvaluator.run(p, withOutput(reference, inputs), Map.of());
                    Buffer whole = allocate(o);
                    kernel.run(withOutput(whole, inputs).toArray(MemorySegment[]::new), new long[0], 0, kernel.extent());
                    check(name + " / " + kernel.name(), kernel, o, reference, whole);
                    for (int parts : new int[] {2, 3}) {
                        Buffer split = allocate(o);
                        MemorySegment[] bufs = withOutput(split, inputs).toArray(MemorySegment[]::new);
                        for (int i = 0; i < parts; i++) kernel.run(bufs, new long[0], kernel.extent() * i / parts, kernel.extent() * (i + 1) / parts);
                        check(name + " / " + kernel.name() + " in " + parts + " ranges", kernel, o, reference, split);
                    }
                    buffers.put(o, whole);
                }
                case ScheduleItem.View view -> buffers.put(o, buffers.get(view.inputs().getFirst()));
                case ScheduleItem.Join join -> buffers.put(o, dev.kiln.testing.TestGraphs.join(join, buffers));
                default -> throw new AssertionError("not used by these graphs: " + item);
            }
        }
        TestGraphs.assertSameBits(name, root.dtype(), root.shape().numel(), expected.segment(), buffers.get(root).segment());
    }

    private static Buffer allocate(UOp node) { return Buffer.allocateHeap("TEST", node.dtype(), node.shape().numel()); }

    private static List<MemorySegment> withOutput(Buffer out, List<MemorySegment> inputs) {
        List<MemorySegment> all = new ArrayList<>(List.of(out.segment()));
        all.addAll(inputs);
        return all;
    }

    private static void check(String what, CpuKernel kernel, UOp node, Buffer expected, Buffer actual) {
        try {
            TestGraphs.assertSameBits(what, node.dtype(), node.shape().numel(), expected.segment(), actual.segment());
        } catch (AssertionError e) {
            throw new AssertionError(e.getMessage() + "\n" + kernel.source(), e);
        }
    }

    // ---------------------------------------------------------------- hand-built programs

    private static final Slot OUT = new Slot(Slot.Kind.PARAM, 0, DType.F32);
    private static final Slot IN = new Slot(Slot.Kind.PARAM, 1, DType.F32);

    /** {@code out[i] = f(i)} for i in [0, n). */
    private static KernelProgram elementwise(String name, int n, long inSize, List<Variable> vars, java.util.function.Function<UOp, UOp> index,
                                             java.util.function.Function<UOp, UOp> value) {
        Variable i = new Variable("i0", 0, n - 1);
        Stmt.Store store = new Stmt.Store(OUT, index.apply(UOp.variable(i)), value.apply(UOp.variable(i)));
        Stmt.Block body = new Stmt.Block(List.of(new Stmt.Loop(i, Stmt.LoopKind.GLOBAL, new Stmt.Block(List.of(store)))));
        return new KernelProgram(name, List.of(OUT, IN), List.of((long) n, inSize), vars, body);
    }

    private static MemorySegment[] f32Buffers(long... sizes) {
        MemorySegment[] out = new MemorySegment[sizes.length];
        for (int i = 0; i < sizes.length; i++) out[i] = Buffer.allocateHeap("TEST", DType.F32, sizes[i]).segment();
        return out;
    }

    private static UOp load(UOp index) { return UOp.of(Op.LOAD, DType.F32, null, IN.uop(), index); }

    @Test
    void anOutOfRangeStoreIsAnIndexOutOfBoundsException() {
        KernelProgram p = elementwise("bad_store", 4, 4, List.of(), i -> i.add(1), i -> UOp.constant(DType.F32, 1));
        CpuKernel k = CpuKernel.compile(List.of(p)).getFirst();
        // the buffer is larger than the parameter's size: the kernel still may not write past its size
        MemorySegment[] bufs = f32Buffers(64, 4);
        assertThatThrownBy(() -> k.run(bufs, new long[0])).isInstanceOf(IndexOutOfBoundsException.class);
        assertThatThrownBy(() -> KernelEvaluator.run(p, List.of(bufs), Map.of())).isInstanceOf(IndexOutOfBoundsException.class);
    }

    @Test
    void anOutOfRangeLoadIsAnIndexOutOfBoundsExceptionButAFalseGateNeverReads() {
        KernelProgram bad = elementwise("bad_load", 4, 4, List.of(), i -> i, i -> load(i.mul(-1)));
        CpuKernel k = CpuKernel.compile(List.of(bad)).getFirst();
        assertThatThrownBy(() -> k.run(f32Buffers(4, 4), new long[0])).isInstanceOf(IndexOutOfBoundsException.class);

        // in[i - 2] only where i >= 2, else 0
        KernelProgram gated = elementwise("gated", 4, 2, List.of(), i -> i, i -> UOp.of(Op.LOAD, DType.F32, null, IN.uop(), i.add(-2),
                UOp.index(1).lt(i)));
        CpuKernel g = CpuKernel.compile(List.of(gated)).getFirst();
        MemorySegment[] bufs = f32Buffers(4, 2);
        bufs[1].setAtIndex(java.lang.foreign.ValueLayout.JAVA_FLOAT, 0, 5f);
        bufs[1].setAtIndex(java.lang.foreign.ValueLayout.JAVA_FLOAT, 1, 6f);
        g.run(bufs, new long[0]);
        assertThat(bufs[0].toArray(java.lang.foreign.ValueLayout.JAVA_FLOAT)).containsExactly(0f, 0f, 5f, 6f);
        assertThat(g.source()).as("a non-empty parameter is read at a safe index, then the value dropped")
                .contains("(v0 ? (long) i0 - 2 : 0L)");

        // an empty parameter behind an always-false gate is never read (there is no safe element 0)
        KernelProgram empty = elementwise("gated_empty", 4, 0, List.of(), i -> i, i -> UOp.of(Op.LOAD, DType.F32, null, IN.uop(), i,
                UOp.index(4).lt(i)));
        CpuKernel e = CpuKernel.compile(List.of(empty)).getFirst();
        MemorySegment[] none = f32Buffers(4, 0);
        e.run(none, new long[0]);
        assertThat(none[0].toArray(java.lang.foreign.ValueLayout.JAVA_FLOAT)).containsExactly(0f, 0f, 0f, 0f);
    }

    @Test
    void tooSmallBuffersAndRangesOutsideTheExtentAreRejected() {
        KernelProgram p = elementwise("copy", 4, 4, List.of(), i -> i, JavaKernelTest::load);
        CpuKernel k = CpuKernel.compile(List.of(p)).getFirst();
        assertThat(k.extent()).isEqualTo(4);
        assertThatThrownBy(() -> k.run(f32Buffers(4, 2), new long[0])).isInstanceOf(IndexOutOfBoundsException.class);
        assertThatThrownBy(() -> k.run(f32Buffers(4, 4), new long[0], 2, 5)).isInstanceOf(IndexOutOfBoundsException.class);
        assertThatThrownBy(() -> k.run(f32Buffers(4, 4), new long[0], 3, 2)).isInstanceOf(IndexOutOfBoundsException.class);
    }

    @Test
    void symbolicVariablesAreReadFromVarsAndChecked() {
        Variable n = new Variable("n", 1, 10);
        KernelProgram p = elementwise("scaled", 4, 4, List.of(n), i -> i,
                i -> UOp.of(Op.MUL, DType.F32, null, load(i), UOp.of(Op.CAST, DType.F32, null, i.mul(UOp.variable(n)).add(UOp.variable(n)))));
        CpuKernel k = CpuKernel.compile(List.of(p)).getFirst();
        MemorySegment[] bufs = f32Buffers(4, 4);
        for (int i = 0; i < 4; i++) bufs[1].setAtIndex(java.lang.foreign.ValueLayout.JAVA_FLOAT, i, 0.5f + i);
        k.run(bufs, new long[] {7});
        MemorySegment[] ref = f32Buffers(4, 4);
        MemorySegment.copy(bufs[1], 0, ref[1], 0, 16);
        KernelEvaluator.run(p, List.of(ref), Map.of(n, 7L));
        assertThat(bufs[0].toArray(java.lang.foreign.ValueLayout.JAVA_FLOAT)).containsExactly(ref[0].toArray(java.lang.foreign.ValueLayout.JAVA_FLOAT));
        assertThatThrownBy(() -> k.run(bufs, new long[] {11})).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("'n'").hasMessageContaining("11");
    }

    @Test
    void aVariableNamedLikeALoopIndexGetsItsOwnJavaName() {
        Variable clash = new Variable("i0", 0, 100), reserved = new Variable("end", 0, 5);
        KernelProgram p = elementwise("clash", 4, 4, List.of(clash, reserved), i -> i,
                i -> UOp.of(Op.CAST, DType.F32, null, i.add(UOp.variable(clash)).add(UOp.variable(reserved).mul(1000))));
        CpuKernel k = CpuKernel.compile(List.of(p)).getFirst();
        MemorySegment[] bufs = f32Buffers(4, 4);
        k.run(bufs, new long[] {10, 2});
        assertThat(bufs[0].toArray(java.lang.foreign.ValueLayout.JAVA_FLOAT)).containsExactly(2010f, 2011f, 2012f, 2013f);
    }

    @Test
    void aKernelWithoutAnOutputLoopRunsOnceForTheRangeZeroToOne() {
        Slot acc = new Slot(Slot.Kind.REGISTER, 0, DType.F32);
        Variable r = new Variable("r0", 0, 3);
        Stmt.Block body = new Stmt.Block(List.of(
                new Stmt.Define(acc, UOp.constant(DType.F32, 0)),
                new Stmt.Loop(r, Stmt.LoopKind.REDUCE, new Stmt.Block(List.of(new Stmt.Accumulate(acc, ReduceArg.Kind.SUM, load(UOp.variable(r)))))),
                new Stmt.Store(OUT, UOp.index(0), acc.uop())));
        KernelProgram p = new KernelProgram("total", List.of(OUT, IN), List.of(1L, 4L), List.of(), body);
        CpuKernel k = CpuKernel.compile(List.of(p)).getFirst();
        assertThat(k.extent()).isEqualTo(1);
        MemorySegment[] bufs = f32Buffers(1, 4);
        for (int i = 0; i < 4; i++) bufs[1].setAtIndex(java.lang.foreign.ValueLayout.JAVA_FLOAT, i, 1.5f * i);
        k.run(bufs, new long[0], 1, 1); // an empty range does nothing
        assertThat(bufs[0].get(java.lang.foreign.ValueLayout.JAVA_FLOAT, 0)).isEqualTo(0f);
        k.run(bufs, new long[0], 0, 1);
        assertThat(bufs[0].get(java.lang.foreign.ValueLayout.JAVA_FLOAT, 0)).isEqualTo(9f);
    }

    @Test
    void aCompileErrorCarriesTheDiagnosticAndTheSource() {
        String code = """
                package dev.kiln.cpu;

                final class Broken {
                    public static void run(java.lang.foreign.MemorySegment[] bufs, long[] vars, long start, long end) {
                        int x = undefinedThing;
                    }
                }
                """;
        assertThatThrownBy(() -> JavaKernelCompiler.compile(List.of(new JavaKernelCompiler.Source("Broken", code))))
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("Broken.java:5")
                .hasMessageContaining("cannot find symbol")
                .hasMessageContaining("int x = undefinedThing;");
    }

    @Test
    void classBytesDefineAWorkingKernelAgain() throws Throwable {
        KernelProgram p = elementwise("twice", 4, 4, List.of(), i -> i, i -> UOp.of(Op.ADD, DType.F32, null, load(i), load(i)));
        CpuKernel k = CpuKernel.compile(List.of(p)).getFirst();
        CpuKernel again = new CpuKernel(k.name(), k.source(), k.classBytes(), JavaKernelCompiler.define(k.classBytes()), k.extent());
        MemorySegment[] bufs = f32Buffers(4, 4);
        for (int i = 0; i < 4; i++) bufs[1].setAtIndex(java.lang.foreign.ValueLayout.JAVA_FLOAT, i, i + 0.25f);
        again.run(bufs, new long[0]);
        assertThat(bufs[0].toArray(java.lang.foreign.ValueLayout.JAVA_FLOAT)).containsExactly(0.5f, 2.5f, 4.5f, 6.5f);
    }

    @Test
    void generatedSourceReadsLikeTheProgram() {
        Schedule s = Scheduler.schedule(List.of(TestGraphs.data(1, 3, 4).softmax(-1).uop()));
        List<KernelProgram> programs = new ArrayList<>();
        for (ScheduleItem item : s.items()) {
            if (item instanceof ScheduleItem.Kernel k) programs.add(Lowerer.lower(k.output(), k.inputs(), "softmax" + programs.size()));
        }
        String src = JavaRenderer.render(programs.getFirst(), "Softmax");
        assertThat(src).contains("package dev.kiln.cpu;", "final class Softmax", "for (int i0 = (int) start; i0 < (int) end; i0++)",
                "MemorySegment p0 = bufs[0]", "float acc0 = ", "JAVA_FLOAT_UNALIGNED").doesNotContain("Math.fma");
    }
}

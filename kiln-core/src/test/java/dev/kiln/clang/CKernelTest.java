package dev.kiln.clang;

import dev.kiln.types.DType;
import dev.kiln.types.Variable;
import dev.kiln.codegen.KernelEvaluator;
import dev.kiln.codegen.KernelProgram;
import dev.kiln.codegen.Lowerer;
import dev.kiln.codegen.Opt;
import dev.kiln.codegen.Stmt;
import dev.kiln.ir.Op;
import dev.kiln.ir.ReduceArg;
import dev.kiln.ir.Slot;
import dev.kiln.ir.UOp;
import dev.kiln.runtime.Buffer;
import dev.kiln.runtime.CompiledKernel;
import dev.kiln.runtime.KernelRunner;
import dev.kiln.compile.ContentStore;
import dev.kiln.runtime.DeviceRegistry;
import dev.kiln.ir.Elements;
import dev.kiln.schedule.Schedule;
import dev.kiln.schedule.ScheduleItem;
import dev.kiln.schedule.Scheduler;
import dev.kiln.testing.TestGraphs;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentSkipListMap;
import java.util.function.Function;
import java.util.function.Supplier;
import java.util.stream.IntStream;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * Renders every kernel of the test graphs to C, compiles them through the CLANG device (shared objects
 * of many kernels, the kernel cache) and runs them: every kernel must match the {@link KernelEvaluator} and the graph must match the INTERP
 * device bit for bit (NaN payloads aside), also when the kernel runs as 2 or 3 separate ranges, as THREAD
 * will run it, and also as the CLANG device's heuristic optimises it (tiles, upcast lanes, grouped
 * reductions, threads).
 *
 * <p>The one exception: a kernel that computes exp2, log2 or sin takes them from the C library, which
 * may differ from Java's {@code Math} by an ulp in double (about 0.1% of arguments). Its float results
 * may then differ by a few ulps of their dtype ({@link #TRANSCENDENTAL_ULPS}); every other kernel, and
 * every integer result, is compared bit for bit. The elements that differed are printed after the run.
 */
class CKernelTest {
    /** Tolerance, in ulps of the result's dtype, for kernels that compute exp2, log2 or sin. */
    static final int TRANSCENDENTAL_ULPS = 4;

    private static final Set<Op> TRANSCENDENTAL = Set.of(Op.EXP2, Op.LOG2, Op.SIN);
    private static final Map<String, Integer> INEXACT = new ConcurrentSkipListMap<>();

    static Stream<Arguments> graphs() { return TestGraphs.graphs(); }

    @AfterAll
    static void reportInexactElements() {
        if (!INEXACT.isEmpty()) System.out.println("CKernelTest: elements within tolerance but not bit-exact (exp2/log2/sin): " + INEXACT);
    }

    /** The programs of a graph's kernels, lowered and then as {@code optimize} leaves them. */
    private static List<KernelProgram> programsOf(Schedule schedule, Function<KernelProgram, KernelProgram> optimize) {
        List<KernelProgram> programs = new ArrayList<>();
        for (ScheduleItem item : schedule.items()) {
            if (item instanceof ScheduleItem.Kernel k) programs.add(optimize.apply(Lowerer.lower(k.output(), k.inputs(), "k" + programs.size())));
        }
        return programs;
    }

    /**
     * Compiles every graph's kernels, as lowered and as optimised, in a few large batches through the
     * device (and its kernel cache): a compiler run costs a process, so one per graph would dominate the test.
     */
    @BeforeAll
    static void compileEveryGraphInBatches() {
        if (DeviceRegistry.providers().get("CLANG").unavailableReason().isPresent()) return; // each test skips, with the reason
        ClangDevice device = (ClangDevice) DeviceRegistry.get("CLANG");
        List<KernelProgram> all = new ArrayList<>();
        graphs().forEach(args -> {
            @SuppressWarnings("unchecked") Supplier<UOp> graph = (Supplier<UOp>) args.get()[1];
            Schedule s = Scheduler.schedule(List.of(graph.get()));
            all.addAll(programsOf(s, Function.identity()));
            all.addAll(programsOf(s, device::optimize));
        });
        int batch = 64;
        IntStream.range(0, (all.size() + batch - 1) / batch).parallel()
                .forEach(i -> device.compile(all.subList(i * batch, Math.min(all.size(), (i + 1) * batch))));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("graphs")
    void compiledKernelsMatchTheInterpreterBitForBit(String name, Supplier<UOp> graph) {
        ClangAvailability.compiler();
        runGraph(name, graph.get(), Function.identity(), true);
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("graphs")
    void optimisedKernelsMatchTheEvaluatorOfTheSameProgram(String name, Supplier<UOp> graph) {
        ClangAvailability.compiler();
        ClangDevice device = (ClangDevice) DeviceRegistry.get("CLANG");
        // GROUP reorders float sums, so the graph is compared with INTERP only when no kernel was grouped
        runGraph(name + " (optimised)", graph.get(), device::optimize, false);
    }

    private static void runGraph(String name, UOp root, Function<KernelProgram, KernelProgram> optimize, boolean exactGraph) {
        Buffer expected = TestGraphs.interpret(root);
        Schedule schedule = Scheduler.schedule(List.of(root));
        List<KernelProgram> programs = programsOf(schedule, optimize);
        List<CompiledKernel> kernels = DeviceRegistry.get("CLANG").compile(programs);
        boolean transcendental = false, grouped = false;

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
                    CompiledKernel kernel = kernels.get(next++);
                    long extent = p.outerExtent();
                    String what = name + " / " + p.name();
                    boolean inexact = usesTranscendentals(p);
                    transcendental |= inexact;
                    grouped |= p.opts().stream().anyMatch(opt -> opt instanceof Opt.Group);
                    List<MemorySegment> inputs = new ArrayList<>();
                    for (UOp in : k.inputs()) inputs.add(buffers.get(in).segment());
                    Buffer reference = allocate(o);
                    KernelEvaluator.run(p, withOutput(reference, inputs), Map.of());
                    Buffer whole = allocate(o);
                    kernel.runner().run(withOutput(whole, inputs).toArray(MemorySegment[]::new), new long[0], 0, extent);
                    check(what, kernel, o, reference, whole, inexact);
                    for (int parts : new int[] {2, 3}) {
                        Buffer split = allocate(o);
                        MemorySegment[] bufs = withOutput(split, inputs).toArray(MemorySegment[]::new);
                        for (int i = 0; i < parts; i++) kernel.runner().run(bufs, new long[0], extent * i / parts, extent * (i + 1) / parts);
                        check(what + " in " + parts + " ranges", kernel, o, reference, split, inexact);
                    }
                    buffers.put(o, whole);
                }
                case ScheduleItem.View view -> buffers.put(o, buffers.get(view.inputs().getFirst()));
                case ScheduleItem.Join join -> buffers.put(o, dev.kiln.testing.TestGraphs.join(join, buffers));
                default -> throw new AssertionError("not used by these graphs: " + item);
            }
        }
        if (exactGraph || !grouped) {
            compare(name, root.dtype(), root.shape().numel(), expected.segment(), buffers.get(root).segment(), transcendental);
        }
    }

    static boolean usesTranscendentals(KernelProgram p) { return usesTranscendentals(p.body()); }

    private static boolean usesTranscendentals(Stmt s) {
        return switch (s) {
            case Stmt.Block b -> b.body().stream().anyMatch(CKernelTest::usesTranscendentals);
            case Stmt.Loop l -> usesTranscendentals(l.body());
            case Stmt.Define d -> computes(d.init());
            case Stmt.Accumulate a -> computes(a.value());
            case Stmt.Store st -> computes(st.value()) || computes(st.index());
        };
    }

    private static boolean computes(UOp u) { return u.toposort().stream().anyMatch(x -> TRANSCENDENTAL.contains(x.op())); }

    /** Off-heap, as the device's own buffers: kernels reject heap memory. */
    private static Buffer allocate(UOp node) {
        long bytes = Math.max(1, node.dtype().byteSize(node.shape().numel()));
        return new Buffer("TEST", node.dtype(), node.shape().numel(), Arena.ofAuto().allocate(bytes, 64));
    }

    private static List<MemorySegment> withOutput(Buffer out, List<MemorySegment> inputs) {
        List<MemorySegment> all = new ArrayList<>(List.of(out.segment()));
        all.addAll(inputs);
        return all;
    }

    private static void check(String what, CompiledKernel kernel, UOp node, Buffer expected, Buffer actual, boolean transcendental) {
        try {
            compare(what, node.dtype(), node.shape().numel(), expected.segment(), actual.segment(), transcendental);
        } catch (AssertionError e) {
            throw new AssertionError(e.getMessage() + "\n" + kernel.source(), e);
        }
    }

    /** Bit for bit, or for float results of kernels with transcendentals within {@link #TRANSCENDENTAL_ULPS}. */
    static void compare(String what, DType dtype, long count, MemorySegment expected, MemorySegment actual, boolean transcendental) {
        if (!transcendental || !dtype.isFloat()) {
            TestGraphs.assertSameBits(what, dtype, count, expected, actual);
            return;
        }
        for (long i = 0; i < count; i++) {
            double e = Elements.getDouble(expected, dtype, i), a = Elements.getDouble(actual, dtype, i);
            if (Double.isNaN(e) ? Double.isNaN(a) : Double.doubleToRawLongBits(e) == Double.doubleToRawLongBits(a)) continue;
            double tolerance = TRANSCENDENTAL_ULPS * ulp(dtype, e);
            if (Double.isNaN(e) || Double.isInfinite(e) || Double.isNaN(a) || !(Math.abs(a - e) <= tolerance)) {
                throw new AssertionError(what + ": element " + i + " of " + count + " (" + dtype + ") expected " + e + " but was " + a
                        + " (more than " + TRANSCENDENTAL_ULPS + " ulps apart)");
            }
            INEXACT.merge(what.replaceAll(" / .*", "") + " (" + dtype + ")", 1, Integer::sum);
        }
    }

    private static double ulp(DType dt, double v) {
        return switch (dt) {
            case F64 -> Math.ulp(v);
            case F32 -> Math.ulp((float) v);
            case F16 -> Math.max(Math.ulp((float) v) * 0x1p13, 0x1p-24);
            case BF16 -> Math.max(Math.ulp((float) v) * 0x1p16, 0x1p-133);
            default -> 0;
        };
    }

    // ---------------------------------------------------------------- hand-built programs

    private static final Slot OUT = new Slot(Slot.Kind.PARAM, 0, DType.F32);
    private static final Slot IN = new Slot(Slot.Kind.PARAM, 1, DType.F32);

    /** {@code out[index(i)] = value(i)} for i in [0, n). */
    private static KernelProgram elementwise(String name, int n, long inSize, List<Variable> vars, Function<UOp, UOp> index,
                                             Function<UOp, UOp> value) {
        Variable i = new Variable("i0", 0, n - 1);
        Stmt.Store store = new Stmt.Store(OUT, index.apply(UOp.variable(i)), value.apply(UOp.variable(i)));
        Stmt.Block body = new Stmt.Block(List.of(new Stmt.Loop(i, Stmt.LoopKind.GLOBAL, new Stmt.Block(List.of(store)))));
        return new KernelProgram(name, List.of(OUT, IN), List.of((long) n, inSize), vars, body);
    }

    private static MemorySegment[] f32Buffers(long... sizes) {
        MemorySegment[] out = new MemorySegment[sizes.length];
        for (int i = 0; i < sizes.length; i++) out[i] = Arena.ofAuto().allocate(Math.max(1, 4 * sizes[i]), 64);
        return out;
    }

    private static UOp load(UOp index) { return UOp.of(Op.LOAD, DType.F32, null, IN.uop(), index); }

    private static CKernel compileOne(KernelProgram p) { return CKernel.compile(List.of(p), ClangAvailability.compiler()).getFirst(); }

    @Test
    void anOutOfRangeStoreIsSkippedAndReportedAsAnIndexOutOfBoundsException() {
        KernelProgram p = elementwise("bad_store", 4, 4, List.of(), i -> i.add(1), i -> UOp.constant(DType.F32, 1));
        CKernel k = compileOne(p);
        assertThat(k.source()).contains("kiln_in_range(");
        // the buffer is larger than the parameter's size: the kernel still may not write past its size
        MemorySegment[] bufs = f32Buffers(64, 4);
        assertThatThrownBy(() -> k.run(bufs, new long[0])).isInstanceOf(IndexOutOfBoundsException.class)
                .hasMessageContaining("bad_store").hasMessageContaining("p0 at 4, size 4");
        assertThat(bufs[0].getAtIndex(ValueLayout.JAVA_FLOAT, 4)).isEqualTo(0f);
    }

    @Test
    void anOutOfRangeLoadIsReportedButAFalseGateNeverReads() {
        KernelProgram bad = elementwise("bad_load", 4, 4, List.of(), i -> i, i -> load(i.mul(-1)));
        CKernel k = compileOne(bad);
        assertThatThrownBy(() -> k.run(f32Buffers(4, 4), new long[0])).isInstanceOf(IndexOutOfBoundsException.class)
                .hasMessageContaining("p1 at -1");

        // in[i - 2] only where i >= 2, else 0: the index is checked, and read, only where the gate holds
        KernelProgram gated = elementwise("gated", 4, 2, List.of(), i -> i, i -> UOp.of(Op.LOAD, DType.F32, null, IN.uop(), i.add(-2),
                UOp.index(1).lt(i)));
        CKernel g = compileOne(gated);
        MemorySegment[] bufs = f32Buffers(4, 2);
        bufs[1].setAtIndex(ValueLayout.JAVA_FLOAT, 0, 5f);
        bufs[1].setAtIndex(ValueLayout.JAVA_FLOAT, 1, 6f);
        g.run(bufs, new long[0]);
        assertThat(bufs[0].toArray(ValueLayout.JAVA_FLOAT)).containsExactly(0f, 0f, 5f, 6f);
    }

    @Test
    void badBuffersAndRangesAreRejectedBeforeTheCall() {
        KernelProgram p = elementwise("copy", 4, 4, List.of(), i -> i, CKernelTest::load);
        CKernel k = compileOne(p);
        assertThat(k.extent()).isEqualTo(4);
        assertThatThrownBy(() -> k.run(f32Buffers(4, 2), new long[0])).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("copy").hasMessageContaining("buffer 1").hasMessageContaining("16 bytes").hasMessageContaining("only 8");
        assertThatThrownBy(() -> k.run(f32Buffers(4, 4), new long[0], 2, 5)).isInstanceOf(IndexOutOfBoundsException.class);
        assertThatThrownBy(() -> k.run(f32Buffers(4, 4), new long[0], 3, 2)).isInstanceOf(IndexOutOfBoundsException.class);
        assertThatThrownBy(() -> k.run(f32Buffers(4), new long[0])).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("takes 2 buffers, got 1");
        assertThatThrownBy(() -> k.run(f32Buffers(4, 4), new long[] {1})).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("takes 0 variable values, got 1");

        MemorySegment[] heapOutput = {MemorySegment.ofArray(new float[4]), f32Buffers(4)[0]};
        assertThatThrownBy(() -> k.run(heapOutput, new long[0])).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("buffer 0").hasMessageContaining("Java heap").hasMessageContaining("writes");
        MemorySegment[] heapInput = {f32Buffers(4)[0], MemorySegment.ofArray(new float[] {1, 2, 3, 4})};
        k.run(heapInput, new long[0]); // inputs on the heap are copied off-heap for the call
        assertThat(heapInput[0].toArray(ValueLayout.JAVA_FLOAT)).containsExactly(1, 2, 3, 4);
        MemorySegment[] misaligned = {f32Buffers(5)[0].asSlice(2, 16), f32Buffers(4)[0]};
        assertThatThrownBy(() -> k.run(misaligned, new long[0])).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("not aligned");
        MemorySegment[] readOnly = {f32Buffers(4)[0].asReadOnly(), f32Buffers(4)[0].asReadOnly()};
        assertThatThrownBy(() -> k.run(readOnly, new long[0])).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("buffer 0").hasMessageContaining("read-only");
        MemorySegment[] freed = f32Buffers(4, 4);
        try (Arena a = Arena.ofShared()) {
            freed[1] = a.allocate(16, 64);
        }
        assertThatThrownBy(() -> k.run(freed, new long[0])).isInstanceOf(IllegalStateException.class).hasMessageContaining("freed");

        MemorySegment[] ok = f32Buffers(4, 4);
        ok[1] = ok[1].asReadOnly(); // inputs may be read-only
        k.run(ok, new long[0]);
    }

    @Test
    void aKernelBoundToAPlansBuffersStillChecksWhatCanChangeOnEveryCall() {
        Variable n = new Variable("n", 1, 10);
        KernelProgram p = elementwise("bound_copy", 4, 4, List.of(n), i -> i, CKernelTest::load);
        CKernel k = compileOne(p);
        MemorySegment[] bufs = f32Buffers(4, 4);
        Arena input = Arena.ofShared();
        bufs[1] = input.allocate(16, 64);
        for (int i = 0; i < 4; i++) bufs[1].setAtIndex(ValueLayout.JAVA_FLOAT, i, i + 1);
        KernelRunner bound = k.bind(bufs);
        bound.run(bufs, new long[] {1}, 0, 4);
        bound.run(bufs, new long[] {1}, 0, 4); // the second call takes the bound path
        assertThat(bufs[0].toArray(ValueLayout.JAVA_FLOAT)).containsExactly(1, 2, 3, 4);
        assertThatThrownBy(() -> bound.run(bufs, new long[] {11}, 0, 4)).isInstanceOf(IllegalArgumentException.class).hasMessageContaining("'n'");
        assertThatThrownBy(() -> bound.run(bufs, new long[] {1}, 0, 5)).isInstanceOf(IndexOutOfBoundsException.class);
        // other segments, in the same array or another, are checked in full
        MemorySegment[] small = {bufs[0], f32Buffers(2)[0]};
        assertThatThrownBy(() -> bound.run(small, new long[] {1}, 0, 4)).isInstanceOf(IllegalArgumentException.class).hasMessageContaining("only 8");
        MemorySegment original = bufs[1];
        bufs[1] = f32Buffers(2)[0];
        assertThatThrownBy(() -> bound.run(bufs, new long[] {1}, 0, 4)).isInstanceOf(IllegalArgumentException.class).hasMessageContaining("only 8");
        bufs[1] = original;
        input.close();
        assertThatThrownBy(() -> bound.run(bufs, new long[] {1}, 0, 4)).isInstanceOf(IllegalStateException.class).hasMessageContaining("freed");

        MemorySegment[] heapInput = {f32Buffers(4)[0], MemorySegment.ofArray(new float[] {5, 6, 7, 8})};
        KernelRunner staged = k.bind(heapInput);
        for (int call = 0; call < 2; call++) staged.run(heapInput, new long[] {1}, 0, 4); // staged off-heap on every call
        assertThat(heapInput[0].toArray(ValueLayout.JAVA_FLOAT)).containsExactly(5, 6, 7, 8);
    }

    @Test
    void shortAndLongCallsComputeTheSame() {
        int n = (int) CKernel.SHORT_CALL_WORK * 4;
        CKernel k = compileOne(elementwise("long_copy", n, n, List.of(), i -> i, CKernelTest::load));
        MemorySegment[] bufs = f32Buffers(n, n);
        for (int i = 0; i < n; i++) bufs[1].setAtIndex(ValueLayout.JAVA_FLOAT, i, i);
        k.run(bufs, new long[0], 0, 16); // short: without the thread-state transition
        k.run(bufs, new long[0], 16, n); // long: with it
        for (int i = 0; i < n; i++) assertThat(bufs[0].getAtIndex(ValueLayout.JAVA_FLOAT, i)).isEqualTo((float) i);
    }

    @Test
    void symbolicVariablesAreReadFromVarsAndChecked() {
        Variable n = new Variable("n", 1, 10);
        KernelProgram p = elementwise("scaled", 4, 4, List.of(n), i -> i,
                i -> UOp.of(Op.MUL, DType.F32, null, load(i), UOp.of(Op.CAST, DType.F32, null, i.mul(UOp.variable(n)).add(UOp.variable(n)))));
        CKernel k = compileOne(p);
        MemorySegment[] bufs = f32Buffers(4, 4);
        for (int i = 0; i < 4; i++) bufs[1].setAtIndex(ValueLayout.JAVA_FLOAT, i, 0.5f + i);
        k.run(bufs, new long[] {7});
        MemorySegment[] ref = f32Buffers(4, 4);
        MemorySegment.copy(bufs[1], 0, ref[1], 0, 16);
        KernelEvaluator.run(p, List.of(ref), Map.of(n, 7L));
        assertThat(bufs[0].toArray(ValueLayout.JAVA_FLOAT)).containsExactly(ref[0].toArray(ValueLayout.JAVA_FLOAT));
        assertThatThrownBy(() -> k.run(bufs, new long[] {11})).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("'n'").hasMessageContaining("11").hasMessageContaining("[1, 10]");
    }

    @Test
    void variablesNamedLikeLoopIndicesOrCWordsGetTheirOwnNames() {
        Variable clash = new Variable("i0", 0, 100), reserved = new Variable("end", 0, 5), keyword = new Variable("int", 0, 5),
                libm = new Variable("sin", 0, 5);
        KernelProgram p = elementwise("clash", 4, 4, List.of(clash, reserved, keyword, libm), i -> i,
                i -> UOp.of(Op.SIN, DType.F32, null, UOp.of(Op.CAST, DType.F32, null,
                        i.add(UOp.variable(clash)).add(UOp.variable(reserved).mul(1000)).add(UOp.variable(keyword).mul(100000)).add(UOp.variable(libm)))));
        CKernel k = compileOne(p);
        MemorySegment[] bufs = f32Buffers(4, 4);
        k.run(bufs, new long[] {10, 2, 3, 0});
        float[] want = new float[4];
        for (int i = 0; i < 4; i++) want[i] = (float) Math.sin(302010 + i);
        assertThat(bufs[0].toArray(ValueLayout.JAVA_FLOAT)).containsExactly(want);
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
        CKernel k = compileOne(p);
        assertThat(k.extent()).isEqualTo(1);
        MemorySegment[] bufs = f32Buffers(1, 4);
        for (int i = 0; i < 4; i++) bufs[1].setAtIndex(ValueLayout.JAVA_FLOAT, i, 1.5f * i);
        k.run(bufs, new long[0], 1, 1); // an empty range does nothing
        assertThat(bufs[0].get(ValueLayout.JAVA_FLOAT, 0)).isEqualTo(0f);
        k.run(bufs, new long[0], 0, 1);
        assertThat(bufs[0].get(ValueLayout.JAVA_FLOAT, 0)).isEqualTo(9f);
    }

    @Test
    void aCompileErrorCarriesTheCompilerOutputAndTheSource() {
        CCompiler cc = ClangAvailability.compiler();
        String broken = "KILN_EXPORT void broken(void** bufs, const int64_t* vars, int64_t start, int64_t end) { int x = undefined_thing; }\n";
        assertThatThrownBy(() -> cc.compileShared(CRenderer.translationUnit(List.of(broken))))
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("a Kiln bug")
                .hasMessageContaining("undefined_thing")
                .hasMessageContaining("int x = undefined_thing;");
    }

    @Test
    void generatedSourceReadsLikeTheProgram() {
        Schedule s = Scheduler.schedule(List.of(TestGraphs.data(1, 3, 4).softmax(-1).uop()));
        List<KernelProgram> programs = new ArrayList<>();
        for (ScheduleItem item : s.items()) {
            if (item instanceof ScheduleItem.Kernel k) programs.add(Lowerer.lower(k.output(), k.inputs(), "softmax" + programs.size()));
        }
        String src = CRenderer.render(programs.getFirst(), "softmax0");
        assertThat(src).contains("KILN_EXPORT void softmax0(void** bufs, const int64_t* vars, int64_t start, int64_t end)",
                "for (int64_t i0 = start; i0 < end; i0++)", "float* p0 = (float*) bufs[0];", "const float* p1", "float acc0 = ")
                .doesNotContain("fma").doesNotContain("kiln_in_range");
    }

    @Test
    void theCompilerIdentityNamesCompilerFlagsAndCpuFeatures() {
        CCompiler cc = ClangAvailability.compiler();
        var id = cc.identity();
        assertThat(id.fact("version")).contains(cc.version());
        assertThat(id.fact("flags").orElseThrow()).contains("-O2", "-ffp-contract=off", "-fno-fast-math", "-fPIC", "-shared");
        assertThat(id.fact("cpu.features")).isPresent();
        assertThat(id.fact("prelude.sha256")).contains(ContentStore.sha256(CRenderer.prelude()));
        assertThat(cc.family()).isIn("clang", "gcc", "cc");
        Map<String, String> facts = new TreeMap<>();
        id.facts().forEach(f -> facts.put(f.key(), f.value()));
        System.out.println("CLANG compiler identity: " + facts);
    }
}

package dev.kiln.codegen;

import dev.kiln.types.DType;
import dev.kiln.types.Variable;
import dev.kiln.Tensor;
import dev.kiln.ir.Op;
import dev.kiln.ir.ReduceArg;
import dev.kiln.ir.Slot;
import dev.kiln.ir.UOp;
import dev.kiln.runtime.Buffer;
import dev.kiln.ir.Elements;
import dev.kiln.schedule.Schedule;
import dev.kiln.schedule.ScheduleItem;
import dev.kiln.schedule.Scheduler;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.IdentityHashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.function.Supplier;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * Optimisation actions keep every kernel's result: each action alone on every axis it applies to,
 * random valid combinations and the default heuristic, run with the {@link KernelEvaluator} and compared
 * with the untransformed kernel on the same inputs. Bit for bit, except after GROUP of a kernel with
 * float registers (summation order changes), where values agree within rtol 1e-5 and atol 1e-4 (see
 * {@link #RTOL}); integer GROUP stays bit for bit. Invalid actions fail with messages that
 * name the kernel, the action, the loop and why.
 */
class OptimizerTest {
    // ---------------------------------------------------------------- catalog

    /** Small fusion shapes (from LoweringTest): every single action and random combinations. */
    static Stream<Arguments> small() {
        Tensor x = data(1, 3, 4), y = data(2, 2, 4, 5), v = data(3, 3, 4);
        Tensor img = data(4, 2, 2, 6, 6), w = data(5, 5, 2, 3, 3);
        Tensor ints = Tensor.arange(12).reshape(3, 4).realize();
        Tensor wide = Tensor.arange(96).cast(DType.I32).mul(-1640531535).reshape(4, 24).realize(); // wraps
        Tensor bytes = Tensor.arange(96).mul(37).cast(DType.U8).reshape(4, 24).realize();
        Tensor bits = Tensor.arange(48).mod(7).lt(2).reshape(4, 12).realize();
        Map<String, Supplier<Tensor>> g = new LinkedHashMap<>();
        g.put("elementwise chain", () -> x.add(1).mul(x).exp().relu());
        g.put("broadcast add", () -> x.add(v.sum(0)));
        g.put("permute and flip", () -> x.mT().flip(0).add(1));
        g.put("slice with step", () -> y.slice(1, 0, 5, 2).mul(2));
        g.put("pad constant of exp (f(0) != 0)", () -> x.exp().pad(new int[][] {{1, 0}, {2, 1}}));
        g.put("pad reflect", () -> x.pad(new int[][] {{1, 1}, {2, 2}}, Tensor.PadMode.REFLECT, 0));
        g.put("reshape across axes", () -> y.reshape(5, 8).sum(1).reshape(5, 1).expand(5, 3));
        g.put("two reductions one kernel", () -> ints.cast(DType.F32).sum(0).add(ints.cast(DType.F32).sum(1).sum()).relu());
        g.put("softmax", () -> y.softmax(-1));
        g.put("layernorm", () -> y.layerNorm(new int[] {5}, null, null, 1e-5));
        g.put("matmul bias relu", () -> x.matmul(y.slice(0, 0, 1, 1).reshape(4, 5)).add(1).relu());
        g.put("attention", () -> Tensor.scaledDotProductAttention(y, y, y, null, true, null));
        g.put("argmax and cumsum", () -> y.argmax(1).cast(DType.F32).add(y.cumsum(1).sum(1)));
        g.put("conv2d", () -> img.conv2d(w, null, new int[] {1, 1}, new int[] {1, 1}, new int[] {1, 1}, 1));
        g.put("max pool", () -> img.maxPool2d(new int[] {2, 2}, new int[] {2, 2}, new int[] {0, 0}, new int[] {1, 1}, false));
        g.put("integer math", () -> ints.mod(5).mul(ints.floorDiv(3)).add(ints.shl(2)).bitwiseXor(7));
        g.put("sort", () -> v.sort(1, true).values());
        g.put("zero-size", () -> Tensor.zeros(0, 3).add(1));
        g.put("sum over empty axis", () -> Tensor.zeros(3, 0).sum(1));
        g.put("i32 reductions that wrap", () -> Tensor.stack(0, wide.sum(1).cast(DType.I32), wide.prod(1).cast(DType.I32),
                wide.max(1), wide.min(1), wide.sum(0).slice(0, 0, 4, 1).cast(DType.I32)));
        g.put("u8 and bool reductions", () -> Tensor.stack(0, bytes.max(1).cast(DType.I32), bytes.min(1).cast(DType.I32),
                bytes.sum(1).cast(DType.I32), bits.any(1).cast(DType.I32), bits.all(1).cast(DType.I32)));
        g.put("f64 sum of squares", () -> data(6, 4, 24).cast(DType.F64).square().sum(1));
        return named(g);
    }

    /** Kernels big enough for the heuristic's rules to fire. */
    static Stream<Arguments> large() {
        Tensor a = data(7, 64, 32), b = data(8, 32, 48), q = data(9, 2, 16, 16);
        Tensor rows = data(10, 8, 512), flat = data(11, 4096), img = data(12, 1, 4, 10, 10), w = data(13, 8, 4, 3, 3);
        Tensor ints = Tensor.arange(4096).cast(DType.I32).mul(-1640531535).realize();
        Map<String, Supplier<Tensor>> g = new LinkedHashMap<>();
        g.put("matmul 64x32x48", () -> a.matmul(b));
        g.put("batched matmul 2x16x16x16", () -> q.matmul(q.mT()).relu());
        g.put("row sums 8x512", () -> rows.sum(1));
        g.put("softmax rows 8x512", () -> rows.softmax(-1));
        g.put("full sum 4096", () -> flat.sum());
        g.put("i32 full sum 4096 (wraps)", () -> ints.sum().cast(DType.I32).add(ints.max()));
        g.put("conv2d 3x3", () -> img.conv2d(w, null, new int[] {1, 1}, new int[] {1, 1}, new int[] {1, 1}, 1));
        g.put("elementwise 64x64", () -> data(14, 64, 64).exp().mul(2).add(data(15, 64)));
        g.put("attention values, heads merged", OptimizerTest::headsMergedValues);
        return named(g);
    }

    private static Stream<Arguments> named(Map<String, Supplier<Tensor>> g) {
        return g.entrySet().stream().map(e -> Arguments.of(e.getKey(), e.getValue()));
    }

    /** Deterministic, irregular test data of a shape (seed varies the values). */
    static Tensor data(int seed, int... shape) {
        int n = 1;
        for (int d : shape) n *= d;
        return Tensor.arange(n).cast(DType.F32).mul(0.7 + 0.13 * seed).add(seed).sin().mul(2).reshape(shape).realize();
    }

    /**
     * Tolerance after GROUP of float reductions. Both orders round every partial sum to the register's
     * dtype, so they differ by rounding errors of the partial sums (about ulp x sum of |terms|, near 1e-5
     * for these f32 sums of hundreds of terms up to 2), not of the result, which may cancel to almost 0:
     * hence the absolute part.
     */
    static final double RTOL = 1e-5, ATOL = 1e-4;

    static final List<CpuInfo> CPUS = List.of(new CpuInfo(1, 16), new CpuInfo(4, 32), new CpuInfo(16, 64), new CpuInfo(3, 8));

    // ---------------------------------------------------------------- properties

    @ParameterizedTest(name = "{0}")
    @MethodSource("small")
    void everySingleActionKeepsTheResult(String name, Supplier<Tensor> graph) {
        forEachKernel(graph, k -> {
            for (Opt o : singleActions(k.program)) k.check(List.of(o));
        });
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("small")
    void randomCombinationsKeepTheResult(String name, Supplier<Tensor> graph) {
        Random rnd = new Random(name.hashCode());
        forEachKernel(graph, k -> {
            for (int trial = 0; trial < 25; trial++) k.check(randomOpts(k.program, rnd, 1 + rnd.nextInt(4)));
        });
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource({"small", "large"})
    void heuristicActionsAreValidAndKeepTheResult(String name, Supplier<Tensor> graph) {
        forEachKernel(graph, k -> {
            for (CpuInfo cpu : CPUS) k.check(Heuristics.defaultOpts(k.program, cpu));
        });
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("large")
    void randomCombinationsOnLargeKernels(String name, Supplier<Tensor> graph) {
        Random rnd = new Random(name.hashCode());
        forEachKernel(graph, k -> {
            for (int trial = 0; trial < 3; trial++) k.check(randomOpts(k.program, rnd, 1 + rnd.nextInt(3)));
        });
    }

    // ---------------------------------------------------------------- the heuristic's choices

    @Test
    void matmulIsRegisterTiledAndThreaded() {
        KernelProgram p = onlyKernel(data(7, 64, 32).matmul(data(8, 32, 48)));
        assertThat(axisNames(p)).containsExactly("i0 (extent 64, GLOBAL)", "i1 (extent 48, GLOBAL)", "r0 (extent 32, REDUCE)");
        // 8 lanes of j, 2 vectors per row, 4 rows: 8 vector accumulators, the reduction loop inside
        List<Opt> opts = Heuristics.defaultOpts(p, new CpuInfo(4, 32));
        assertThat(opts).containsExactly(new Opt.Upcast(1, 8), new Opt.Upcast(1, 2), new Opt.Upcast(0, 4), new Opt.Thread(0, 4));
        KernelProgram q = Optimizer.apply(p, opts);
        assertThat(axisNames(q)).containsExactly("i0_o (extent 16, THREAD)", "i1_o_o (extent 3, GLOBAL)", "r0 (extent 32, REDUCE)");
        assertThat(q.workers()).isEqualTo(4);
        assertThat(q.opts()).isEqualTo(opts);
        assertThat(Heuristics.defaultOpts(p, new CpuInfo(1, 32))).containsExactly(new Opt.Upcast(1, 8), new Opt.Upcast(1, 2), new Opt.Upcast(0, 4));
        // 16 lanes: 3 vectors per row do not halve, so one
        assertThat(Heuristics.defaultOpts(p, new CpuInfo(16, 64))).containsExactly(new Opt.Upcast(1, 16), new Opt.Upcast(0, 4), new Opt.Thread(0, 16));
    }

    /**
     * A decode step's probabilities times values: 4 query heads over 2 key-value heads (grouped), one row, the
     * output's heads and head dimension one axis of 64: a head's probability is at {@code i / 16}, its value row at
     * {@code (i / 32) * 16 + i % 16}, neither uniform nor contiguous along the axis, both within 16 aligned lanes.
     */
    static Tensor headsMergedValues() {
        Tensor probs = data(22, 2, 2, 1, 24), values = data(23, 24, 2, 16);
        Tensor v = values.permute(1, 0, 2).reshape(2, 1, 24, 16).expand(2, 2, 24, 16);
        return probs.matmul(v).reshape(1, 64);
    }

    @Test
    void anAxisOfMergedHeadsIsVectorLanesWithinEachHead() {
        KernelProgram p = onlyKernel(headsMergedValues(), "values");
        List<Stmt.Loop> axes = Optimizer.axes(p);
        int merged = axes.size() - 2; // the output axis of 64 around the reduction
        assertThat(axes.get(merged).extent()).isEqualTo(64);
        // lanes, then four vectors side by side: four independent sums over the reduction
        assertThat(Heuristics.defaultOpts(p, new CpuInfo(1, 64))).containsExactly(new Opt.Upcast(merged, 16), new Opt.Upcast(merged, 4));
        assertThat(Heuristics.defaultOpts(p, new CpuInfo(1, 32))).containsExactly(new Opt.Upcast(merged, 8), new Opt.Upcast(merged, 4));
        KernelProgram applied = Optimizer.apply(p, List.of(new Opt.Upcast(merged, 16)));
        String text = ProgramText.render(applied);
        assertThat(text).contains("(upcast)");
        // lanes that would straddle two heads are not vector lanes: 32 lanes span two heads' probabilities
        assertThat(Heuristics.defaultOpts(p, new CpuInfo(1, 128))).doesNotContain(new Opt.Upcast(merged, 32));
    }

    @Test
    void matmulWithoutVectorLanesIsTiledForTheCache() {
        KernelProgram p = onlyKernel(data(7, 64, 32).cast(DType.F16).matmul(data(8, 32, 48).cast(DType.F16)));
        assertThat(Heuristics.defaultOpts(p, new CpuInfo(4, 32))).containsExactly(new Opt.Tile(0, 16), new Opt.Tile(1, 16), new Opt.Thread(0, 4));
        assertThat(Heuristics.defaultOpts(p, new CpuInfo(1, 32))).containsExactly(new Opt.Tile(0, 32), new Opt.Tile(1, 16));
    }

    @Test
    void fullSumIsGroupedByTheLaneCount() {
        KernelProgram p = onlyKernel(data(11, 4096).sum());
        assertThat(Heuristics.defaultOpts(p, new CpuInfo(8, 32))).containsExactly(new Opt.Group(0, 8));
        assertThat(Heuristics.defaultOpts(p, new CpuInfo(8, 64))).containsExactly(new Opt.Group(0, 16));
    }

    @Test
    void aReductionOfAnOddLengthIsGroupedWhereTheRendererMasksItsLastGroup() {
        KernelProgram p = onlyKernel(data(12, 8, 169).sum(1), "rows");
        assertThat(axisNames(p)).containsExactly("i0 (extent 8, GLOBAL)", "r0 (extent 169, REDUCE)");
        assertThat(Heuristics.defaultOpts(p, new CpuInfo(1, 64, true, true))).containsExactly(new Opt.Group(1, 16));
        assertThat(Heuristics.defaultOpts(p, new CpuInfo(1, 64, true))).doesNotContain(new Opt.Group(1, 16));
        KernelProgram q = Optimizer.apply(p, new Opt.Group(1, 16));
        // 169 = 10 x 16 + 9: eleven groups, the last one's lanes from 9 on read nothing
        assertThat(axisNames(q)).containsExactly("i0 (extent 8, GLOBAL)", "r0_o (extent 11, REDUCE)");
        forEachKernel(() -> data(12, 8, 169).sum(1), k -> k.check(List.of(new Opt.Group(1, 16))));
        forEachKernel(() -> data(12, 8, 169).max(1), k -> k.check(List.of(new Opt.Group(1, 16))));
        assertRejected(p, new Opt.Group(1, 170), "above the limit");
        assertRejected(onlyKernel(data(12, 8, 13).sum(1)), new Opt.Group(1, 16), "the extent 13 is less than one group of 16");
    }

    @Test
    void smallKernelsAreNotThreadedAndStridedStoresNotUpcast() {
        assertThat(Heuristics.defaultOpts(onlyKernel(data(1, 16, 16).add(1)), new CpuInfo(8, 32))).containsExactly(new Opt.Upcast(1, 8));
        // a transpose loads with stride 16 in the innermost loop: no vector loads
        assertThat(Heuristics.defaultOpts(onlyKernel(data(1, 16, 16).mT().add(1)), new CpuInfo(8, 32))).isEmpty();
    }

    @Test
    void rowsThatAreNoMultipleOfTheLanesAreVectorsAndAnOverlappingLastVector() {
        // 6 rows of 21: two 8-lane vectors and one more over the last 8 (13..15 twice); too little work for threads
        KernelProgram p = onlyKernel(data(14, 6, 21).exp().add(1), "rows");
        List<Opt> opts = Heuristics.defaultOpts(p, new CpuInfo(2, 32));
        assertThat(opts).startsWith(new Opt.UpcastOverlap(1, 8));
        KernelProgram applied = Optimizer.apply(p, opts);
        List<String> loops = new ArrayList<>();
        Optimizer.walk(applied.body(), s -> {
            if (s instanceof Stmt.Loop l) loops.add(l.index().name() + " " + l.extent() + " " + l.kind());
        });
        assertThat(loops).containsExactly("i0 6 GLOBAL", "i1_o 2 GLOBAL", "i1_up 8 UPCAST", "i1_last 8 UPCAST");
        assertThat(ProgramText.render(applied)).contains("p0[ADD(ADD(MUL(i0, 21), i1_last), 13)]");
        // a row shorter than the vector in narrower vectors: 13 as 8 + 8, 6 as 4 + 4; 3 stays scalar
        assertThat(Heuristics.defaultOpts(onlyKernel(data(15, 6, 13).exp(), "short"), new CpuInfo(2, 32))).containsExactly(new Opt.UpcastOverlap(1, 8));
        assertThat(Heuristics.defaultOpts(onlyKernel(data(15, 6, 6).exp(), "shorter"), new CpuInfo(2, 32))).containsExactly(new Opt.UpcastOverlap(1, 4));
        assertThat(Heuristics.defaultOpts(onlyKernel(data(15, 6, 3).exp(), "shortest"), new CpuInfo(2, 32))).isEmpty();
    }

    @Test
    void aKernelThatReadsWhatItStoresGetsSingleIterationsAfterItsVectors() {
        // out[i, j] = out[i, j] + 1 in place (a contraction's epilogue): running j = 16..20 twice would add 2
        Slot out = new Slot(Slot.Kind.PARAM, 0, DType.F32);
        Variable i = new Variable("i0", 0, 5), j = new Variable("i1", 0, 20);
        UOp at = UOp.variable(i).mul(21).add(UOp.variable(j));
        UOp value = UOp.of(Op.ADD, DType.F32, null, UOp.of(Op.LOAD, DType.F32, null, out.uop(), at), UOp.constant(DType.F32, 1));
        Stmt.Block body = new Stmt.Block(List.of(new Stmt.Loop(i, Stmt.LoopKind.GLOBAL, new Stmt.Block(List.of(
                new Stmt.Loop(j, Stmt.LoopKind.GLOBAL, new Stmt.Block(List.of(new Stmt.Store(out, at, value)))))))));
        KernelProgram p = new KernelProgram("in_place", List.of(out), List.of(126L), List.of(), body);
        assertThat(Heuristics.defaultOpts(p, new CpuInfo(1, 32))).containsExactly(new Opt.UpcastRemainder(1, 8));
        assertRejected(p, new Opt.UpcastOverlap(1, 8), "UPCAST_OVERLAP(axis=1, amount=8) on loop i1", "reads p0, which it stores into");
    }

    @Test
    void paddingGatesAreSplitOffSoTheInteriorIsVectorLanes() {
        // a 3x3 max pool, stride 2, padding 1 on 112 columns: only output column 0 reads the left padding, so
        // columns 1..55 are a loop of their own without the column gate, 16-lane vectors of every other element
        KernelProgram p = onlyKernel(data(16, 1, 8, 112, 112).maxPool2d(new int[] {3, 3}, new int[] {2, 2}, new int[] {1, 1}, null, false), "pool");
        KernelProgram depthwise = onlyKernel(data(17, 1, 8, 56, 56).conv2d(data(18, 8, 1, 3, 3), data(19, 8), null, new int[] {1, 1}, null, 8)
                .clamp(0, 6), "depthwise");
        List<Opt> opts = Heuristics.defaultOpts(p, new CpuInfo(2, 64, true));
        assertThat(opts).startsWith(new Opt.Split(2, 1), new Opt.UpcastOverlap(5, 16));
        // a renderer that would leave every other element to single lanes (C) keeps the pool a scalar loop
        assertThat(Heuristics.defaultOpts(p, new CpuInfo(2, 64, false))).noneMatch(o -> o instanceof Opt.Split || o instanceof Opt.UpcastOverlap);
        KernelProgram applied = Optimizer.apply(p, opts);
        String text = ProgramText.render(applied);
        assertThat(text).contains("for i3_a in 0..1 (global)", "for i3_b_o in 0..3 (global)", "for i3_b_last in 0..16 (upcast)");
        String interior = text.substring(text.indexOf("for i3_b_o"));
        assertThat(interior).as("no gate on the column in the interior").doesNotContain("CMPLT(0, ADD(r1").doesNotContain("CMPLT(0, r1");
        // both edges gated (stride 1, padding 1, 20 columns): columns 1..18 are the interior, 0 and 19 stay single
        KernelProgram both = onlyKernel(data(16, 1, 8, 20, 20).maxPool2d(new int[] {3, 3}, new int[] {1, 1}, new int[] {1, 1}, null, false), "both");
        List<Opt> twoSided = Heuristics.defaultOpts(both, new CpuInfo(2, 64, true));
        assertThat(twoSided).startsWith(new Opt.Split(2, 19), new Opt.Split(2, 1));
        List<String> parts = new ArrayList<>();
        Optimizer.walk(Optimizer.apply(both, twoSided).body(), st -> {
            if (st instanceof Stmt.Loop l && l.index().name().startsWith("i3")) parts.add(l.index().name() + " " + l.extent());
        });
        assertThat(parts).as("column 0, columns 1..18 as 16 lanes and 16 more ending at 18, column 19")
                .containsExactly("i3_a_a 1", "i3_a_b_o 1", "i3_a_b_up 16", "i3_a_b_last 16", "i3_b 1");
        // a body too large to copy three times (a depthwise 3x3 convolution with its bias and ReLU6) is not split
        assertThat(Heuristics.expandedNodes(Optimizer.axes(p).get(2).body(), 1)).isLessThanOrEqualTo(Heuristics.SPLIT_MAX_NODES);
        assertThat(Heuristics.expandedNodes(Optimizer.axes(depthwise).get(2).body(), 1)).isGreaterThan(Heuristics.SPLIT_MAX_NODES);
        assertThat(Heuristics.defaultOpts(depthwise, new CpuInfo(2, 64, true))).noneMatch(o -> o instanceof Opt.Split);
        // a gate that no stretch of the row escapes (a pool whose window pads both edges of a 4-column row) is left alone
        KernelProgram small = onlyKernel(data(16, 1, 8, 4, 4).maxPool2d(new int[] {3, 3}, new int[] {1, 1}, new int[] {1, 1}, null, false), "small");
        assertThat(Heuristics.defaultOpts(small, new CpuInfo(2, 64, true))).noneMatch(o -> o instanceof Opt.Split);
    }

    @Test
    void smallWindowsAreUnrolled() {
        KernelProgram p = onlyKernel(data(12, 1, 4, 10, 10).conv2d(data(13, 8, 4, 3, 3), null,
                new int[] {1, 1}, new int[] {1, 1}, new int[] {1, 1}, 1));
        List<Opt> opts = Heuristics.defaultOpts(p, new CpuInfo(1, 16));
        assertThat(opts).contains(new Opt.Unroll(Optimizer.axes(p).size() - 1, 3));
    }

    /**
     * UNROLL of a max (or min) reduction folds its copies into a register of their own and that once into the
     * accumulator, so the accumulator's chain has one step per group of copies (the property tests above check the
     * values bit for bit, max pooling and integer maxima and minima among them).
     */
    @Test
    void unrolledMaximaFoldIntoARegisterOfTheirOwnFirst() {
        KernelProgram p = onlyKernel(data(16, 6, 12).max(1));
        KernelProgram q = Optimizer.apply(p, List.of(new Opt.Unroll(1, 4)));
        Stmt.Loop outer = Optimizer.axes(q).get(1);
        assertThat(outer.extent()).isEqualTo(3);
        List<Stmt> body = outer.body().body();
        assertThat(body).hasSize(3);
        Slot copies = ((Stmt.Define) body.getFirst()).register();
        assertThat(body.get(1)).isInstanceOfSatisfying(Stmt.Loop.class, rest -> {
            assertThat(rest.kind()).isEqualTo(Stmt.LoopKind.UNROLL);
            assertThat(rest.extent()).as("the copies after the first").isEqualTo(3);
            assertThat(rest.body().body()).singleElement().isInstanceOfSatisfying(Stmt.Accumulate.class, a -> assertThat(a.register()).isEqualTo(copies));
        });
        assertThat(body.getLast()).isInstanceOfSatisfying(Stmt.Accumulate.class, a -> {
            assertThat(a.kind()).isEqualTo(ReduceArg.Kind.MAX);
            assertThat(a.register()).isNotEqualTo(copies);
            assertThat(a.value()).isEqualTo(copies.uop());
        });
        // a sum keeps its order: its copies accumulate one by one
        KernelProgram sum = Optimizer.apply(onlyKernel(data(16, 6, 12).sum(1)), List.of(new Opt.Unroll(1, 4)));
        assertThat(Optimizer.axes(sum).get(1).body().body()).singleElement().isInstanceOfSatisfying(Stmt.Loop.class,
                l -> assertThat(l.kind()).isEqualTo(Stmt.LoopKind.UNROLL));
    }

    @Test
    void groupedProgramShape() {
        KernelProgram p = onlyKernel(data(10, 8, 16).sum(1));
        KernelProgram q = Optimizer.apply(p, List.of(new Opt.Group(1, 4)));
        Stmt.Loop outer = Optimizer.axes(q).get(0);
        List<Stmt> body = outer.body().body();
        // the register, the lane loop (a partial, the split loop accumulating into it, the combine), the store
        assertThat(body).hasSize(3);
        assertThat(body.getFirst()).isInstanceOf(Stmt.Define.class);
        Slot register = ((Stmt.Define) body.getFirst()).register();
        assertThat(body.get(1)).isInstanceOfSatisfying(Stmt.Loop.class, lanes -> {
            assertThat(lanes.kind()).isEqualTo(Stmt.LoopKind.UPCAST);
            assertThat(lanes.extent()).isEqualTo(4);
            List<Stmt> inLane = lanes.body().body();
            assertThat(inLane).hasSize(3);
            Slot partial = ((Stmt.Define) inLane.getFirst()).register();
            assertThat(partial).isNotEqualTo(register);
            assertThat(inLane.get(1)).isInstanceOfSatisfying(Stmt.Loop.class, split -> {
                assertThat(split.kind()).isEqualTo(Stmt.LoopKind.REDUCE);
                assertThat(split.extent()).isEqualTo(4);
                assertThat(split.body().body()).singleElement().isInstanceOfSatisfying(Stmt.Accumulate.class, a -> assertThat(a.register()).isEqualTo(partial));
            });
            assertThat(inLane.get(2)).isInstanceOfSatisfying(Stmt.Accumulate.class, a -> {
                assertThat(a.register()).isEqualTo(register);
                assertThat(a.value()).isEqualTo(partial.uop());
            });
        });
        assertThat(body.getLast()).isInstanceOf(Stmt.Store.class);
    }

    // ---------------------------------------------------------------- invalid actions

    @Test
    void invalidActionsAreRejectedWithClearMessages() {
        KernelProgram p = onlyKernel(data(7, 6, 8).matmul(data(8, 8, 10)), "mm");
        // axes: 0 i0 (6, GLOBAL), 1 i1 (10, GLOBAL), 2 r0 (8, REDUCE)
        assertRejected(p, new Opt.Upcast(3, 2), "kernel mm: UPCAST(axis=3, amount=2): no axis 3",
                "0: i0 (extent 6, GLOBAL), 1: i1 (extent 10, GLOBAL), 2: r0 (extent 8, REDUCE)");
        assertRejected(p, new Opt.Upcast(-1, 2), "no axis -1");
        assertRejected(p, new Opt.Upcast(0, 1), "kernel mm: UPCAST(axis=0, amount=1) on loop i0 (extent 6, GLOBAL)", "at least 2");
        assertRejected(p, new Opt.Upcast(0, 4), "on loop i0 (extent 6, GLOBAL)", "4 does not divide the extent 6");
        assertRejected(p, new Opt.Upcast(2, 2), "on loop r0 (extent 8, REDUCE)", "UPCAST needs an output loop");
        assertRejected(p, new Opt.Unroll(0, 2), "UNROLL(axis=0, amount=2) on loop i0", "UNROLL applies to reduce loops");
        assertRejected(p, new Opt.Unroll(2, 3), "3 does not divide the extent 8");
        assertRejected(p, new Opt.Tile(2, 4), "TILE(axis=2, amount=4) on loop r0 (extent 8, REDUCE)", "TILE needs an output loop");
        assertRejected(p, new Opt.Tile(1, 3), "3 does not divide the extent 10");
        assertRejected(p, new Opt.Split(1, 10), "SPLIT(axis=1, amount=10) on loop i1 (extent 10, GLOBAL)", "within 1..9, got 10");
        assertRejected(p, new Opt.Split(0, 3), "SPLIT(axis=0, amount=3) on loop i0", "the kernel's outermost loop");
        assertRejected(p, new Opt.Split(2, 3), "SPLIT needs an output loop");
        assertRejected(p, new Opt.UpcastOverlap(1, 5), "5 divides the extent 10; use UPCAST");
        assertRejected(p, new Opt.UpcastOverlap(1, 16), "the extent 10 is less than one group of 16");
        assertRejected(p, new Opt.Group(1, 2), "GROUP(axis=1, amount=2) on loop i1 (extent 10, GLOBAL)", "needs a reduce loop");
        assertRejected(p, new Opt.Group(2, 0), "at least 2, got 0");
        assertRejected(p, new Opt.Thread(1, 4), "THREAD(axis=1, amount=4) on loop i1", "kernel's outermost loop");
        assertRejected(p, new Opt.Thread(2, 4), "on loop r0", "kernel's outermost loop");
        assertRejected(p, new Opt.Thread(0, 1), "at least 2, got 1");
        KernelProgram threaded = Optimizer.apply(p, new Opt.Thread(0, 2));
        assertRejected(threaded, new Opt.Thread(0, 2), "on loop i0 (extent 6, THREAD)", "already threaded on loop i0");

        assertRejected(p, new Opt.UpcastRemainder(1, 5), "UPCAST_REMAINDER(axis=1, amount=5) on loop i1 (extent 10, GLOBAL)", "use UPCAST");
        assertRejected(p, new Opt.UpcastRemainder(1, 16), "the extent 10 is less than one group of 16");
        KernelProgram cube = onlyKernel(data(16, 3, 6, 10).exp(), "cube");
        assertRejected(cube, new Opt.UpcastRemainder(1, 4), "on loop i1 (extent 6, GLOBAL)", "applies to an innermost output loop");
        assertRejected(p, new Opt.UpcastRemainder(2, 3), "on loop r0 (extent 8, REDUCE)", "needs an output loop");
        KernelProgram row = onlyKernel(data(9, 13).exp(), "row");
        assertRejected(row, new Opt.UpcastRemainder(0, 4), "outermost loop is the range the runtime splits");

        KernelProgram big = onlyKernel(data(10, 8, 64).sum(1), "rows");
        assertRejected(big, new Opt.Upcast(0, 64), "above the limit of 32");
        assertRejected(big, new Opt.Unroll(1, 64), "UNROLL(axis=1, amount=64) on loop r0 (extent 64, REDUCE)", "above the limit of 32");
        assertRejected(big, new Opt.Group(1, 64), "above the limit of 32");

        KernelProgram scalar = onlyKernel(data(11, 64).sum(), "total");
        assertRejected(scalar, new Opt.Thread(0, 2), "kernel total: THREAD(axis=0, amount=2) on loop r0 (extent 64, REDUCE)",
                "outermost loop");
        KernelProgram none = onlyKernel(Tensor.zeros(0, 3).add(1), "empty");
        assertRejected(none, new Opt.Upcast(0, 2), "kernel empty: UPCAST(axis=0, amount=2): no axis 0; the kernel has no loops");
        // split the outermost loop: THREAD still needs it to be the only top-level statement
        assertThat(Optimizer.apply(p, List.of(new Opt.Upcast(0, 2), new Opt.Thread(0, 3))).workers()).isEqualTo(3);
    }

    private static void assertRejected(KernelProgram p, Opt o, String... parts) {
        assertThatThrownBy(() -> Optimizer.apply(p, o)).isInstanceOf(IllegalArgumentException.class)
                .satisfies(e -> {
                    for (String part : parts) assertThat(e.getMessage()).contains(part);
                });
    }

    // ---------------------------------------------------------------- action generators

    /** Every single action with every amount that applies to a loop of the program. */
    static List<Opt> singleActions(KernelProgram p) {
        List<Opt> out = new ArrayList<>();
        List<Stmt.Loop> axes = Optimizer.axes(p);
        for (int k = 0; k < axes.size(); k++) {
            Stmt.Loop l = axes.get(k);
            for (int a : divisors(l.extent(), Integer.MAX_VALUE)) {
                if (l.kind() == Stmt.LoopKind.REDUCE) {
                    if (a <= Optimizer.MAX_EXPANSION) {
                        out.add(new Opt.Unroll(k, a));
                        out.add(new Opt.Group(k, a));
                    }
                } else if (inNest(p, l)) { // the loops UPCAST_REMAINDER leaves side by side are no longer split
                    if (a <= Optimizer.MAX_EXPANSION) out.add(new Opt.Upcast(k, a));
                    out.add(new Opt.Tile(k, a));
                }
            }
            if (l.kind() == Stmt.LoopKind.REDUCE) { // groups whose last one runs past the extent, masked
                for (int a : new int[] {3, 4, 16}) if (a < l.extent() && l.extent() % a != 0) addIfValid(p, new Opt.Group(k, a), out);
            }
            if (l.kind() != Stmt.LoopKind.REDUCE && remainderApplies(p, l)) {
                for (int a : new int[] {3, 4, 16}) if (a < l.extent() && l.extent() % a != 0) out.add(new Opt.UpcastRemainder(k, a));
                for (int a : new int[] {3, 4, 16}) if (a < l.extent() && l.extent() % a != 0) addIfValid(p, new Opt.UpcastOverlap(k, a), out);
                for (long at : new long[] {1, l.extent() / 2, l.extent() - 1}) if (at >= 1 && at < l.extent()) out.add(new Opt.Split(k, (int) at));
            }
            if (k == 0 && threadable(p, l)) out.add(new Opt.Thread(0, 2 + k));
        }
        return out;
    }

    private static void addIfValid(KernelProgram p, Opt o, List<Opt> out) {
        try {
            Optimizer.apply(p, o);
            out.add(o);
        } catch (IllegalArgumentException notHere) {
            // e.g. UPCAST_OVERLAP on a kernel that reads what it stores
        }
    }

    /** Whether {@code l} is in the chain of single output loops from the top of the kernel. */
    private static boolean inNest(KernelProgram p, Stmt.Loop l) {
        Stmt.Block b = p.body();
        while (b.body().size() == 1 && b.body().getFirst() instanceof Stmt.Loop m && m.kind() != Stmt.LoopKind.REDUCE) {
            if (m == l) return true;
            b = m.body();
        }
        return false;
    }

    /** An innermost GLOBAL loop that is not the kernel's top-level statement: where UPCAST_REMAINDER applies. */
    private static boolean remainderApplies(KernelProgram p, Stmt.Loop l) {
        boolean[] inner = {false};
        Optimizer.walk(l.body(), x -> inner[0] |= x instanceof Stmt.Loop m && (m.kind() == Stmt.LoopKind.GLOBAL || m.kind() == Stmt.LoopKind.THREAD));
        return l.kind() == Stmt.LoopKind.GLOBAL && !inner[0] && !p.body().body().contains(l);
    }

    /** {@code count} random actions, each valid on the program the previous ones leave. */
    static List<Opt> randomOpts(KernelProgram p, Random rnd, int count) {
        List<Opt> opts = new ArrayList<>();
        KernelProgram cur = p;
        for (int i = 0; i < count; i++) {
            List<Opt> choices = new ArrayList<>();
            for (Opt o : singleActions(cur)) if (o.amount() <= 8 || o instanceof Opt.Tile) choices.add(o);
            if (choices.isEmpty()) break;
            Opt o = choices.get(rnd.nextInt(choices.size()));
            if (o instanceof Opt.Thread t) o = new Opt.Thread(0, 2 + rnd.nextInt(15));
            cur = Optimizer.apply(cur, o);
            opts.add(o);
        }
        return opts;
    }

    private static boolean threadable(KernelProgram p, Stmt.Loop l) {
        boolean threaded = Optimizer.axes(p).stream().anyMatch(x -> x.kind() == Stmt.LoopKind.THREAD);
        return !threaded && l.kind() == Stmt.LoopKind.GLOBAL && p.body().body().size() == 1 && p.body().body().getFirst() == l;
    }

    private static List<Integer> divisors(long n, int max) {
        List<Integer> out = new ArrayList<>();
        for (int a = 2; a <= Math.min(n, max); a++) if (n % a == 0) out.add(a);
        return out;
    }

    private static List<String> axisNames(KernelProgram p) {
        return Optimizer.axes(p).stream().map(l -> l.index().name() + " (extent " + l.extent() + ", " + l.kind() + ")").toList();
    }

    // ---------------------------------------------------------------- running kernels

    /** One kernel of a schedule with its input buffers, ready to run transformed variants. */
    static final class Kernel {
        final KernelProgram program;
        final List<MemorySegment> inputs;
        final Buffer expected;
        final boolean floatRegisters;

        Kernel(KernelProgram program, List<MemorySegment> inputs) {
            this.program = program;
            this.inputs = inputs;
            this.expected = run(program);
            boolean[] f = {false};
            Optimizer.walk(program.body(), s -> f[0] |= s instanceof Stmt.Define d && d.register().dtype().isFloat());
            this.floatRegisters = f[0];
        }

        Buffer run(KernelProgram p) {
            Buffer out = Buffer.allocateHeap("TEST", p.outputDType(), p.sizes().getFirst());
            out.segment().fill((byte) 0x5A); // an element the program fails to write shows up
            List<MemorySegment> segs = new ArrayList<>();
            segs.add(out.segment());
            segs.addAll(inputs);
            KernelEvaluator.run(p, segs, Map.of());
            return out;
        }

        void check(List<Opt> opts) {
            KernelProgram q = Optimizer.apply(program, opts);
            assertThat(q.opts()).isEqualTo(opts);
            Buffer got = run(q);
            boolean exact = !floatRegisters || opts.stream().noneMatch(o -> o instanceof Opt.Group);
            DType dt = program.outputDType();
            for (long i = 0; i < program.sizes().getFirst(); i++) {
                String what = program.name() + " with " + opts + ", element " + i;
                if (dt.isFloat()) {
                    double e = Elements.getDouble(expected.segment(), dt, i), a = Elements.getDouble(got.segment(), dt, i);
                    if (Double.isNaN(e)) {
                        assertThat(a).as(what).isNaN(); // NaN payloads are not part of the semantics
                    } else if (exact) {
                        assertThat(Double.doubleToRawLongBits(a)).as(what + ": " + a + " vs " + e).isEqualTo(Double.doubleToRawLongBits(e));
                    } else if (Double.isInfinite(e)) {
                        assertThat(a).as(what).isEqualTo(e);
                    } else {
                        assertThat(Math.abs(a - e)).as(what + ": " + a + " vs " + e).isLessThanOrEqualTo(RTOL * Math.abs(e) + ATOL);
                    }
                } else {
                    assertThat(Elements.getLong(got.segment(), dt, i)).as(what).isEqualTo(Elements.getLong(expected.segment(), dt, i));
                }
            }
        }
    }

    /** Schedules a graph and hands each kernel, with its inputs computed by the untransformed kernels, to {@code check}. */
    static void forEachKernel(Supplier<Tensor> graph, java.util.function.Consumer<Kernel> check) {
        UOp root = graph.get().uop();
        Schedule s = Scheduler.schedule(List.of(root));
        Map<UOp, Buffer> buffers = new IdentityHashMap<>();
        int n = 0;
        for (ScheduleItem item : s.items()) {
            for (UOp in : item.inputs()) if (in.op() == Op.BUFFER) buffers.put(in, (Buffer) in.arg());
            switch (item) {
                case ScheduleItem.Kernel k -> {
                    List<MemorySegment> segs = new ArrayList<>();
                    for (UOp in : k.inputs()) segs.add(buffers.get(in).segment());
                    Kernel kernel = new Kernel(Lowerer.lower(k.output(), k.inputs(), "k" + n++), segs);
                    buffers.put(item.output(), kernel.expected);
                    check.accept(kernel);
                }
                case ScheduleItem.View view -> buffers.put(item.output(), buffers.get(view.inputs().getFirst()));
                case ScheduleItem.Join join -> buffers.put(item.output(), dev.kiln.testing.TestGraphs.join(join, buffers));
                default -> throw new AssertionError("not used by these graphs: " + item);
            }
        }
    }

    static KernelProgram onlyKernel(Tensor t) { return onlyKernel(t, "k"); }

    static KernelProgram onlyKernel(Tensor t, String name) {
        List<ScheduleItem> items = Scheduler.schedule(List.of(t.uop())).items();
        assertThat(items).hasSize(1);
        ScheduleItem.Kernel k = (ScheduleItem.Kernel) items.getFirst();
        return Lowerer.lower(k.output(), k.inputs(), name);
    }
}

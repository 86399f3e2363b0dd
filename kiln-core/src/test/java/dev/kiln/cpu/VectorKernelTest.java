package dev.kiln.cpu;

import dev.kiln.types.DType;
import dev.kiln.Tensor;
import dev.kiln.codegen.CpuInfo;
import dev.kiln.codegen.Heuristics;
import dev.kiln.codegen.KernelEvaluator;
import dev.kiln.codegen.KernelProgram;
import dev.kiln.codegen.Lowerer;
import dev.kiln.codegen.Opt;
import dev.kiln.codegen.Optimizer;
import dev.kiln.codegen.Stmt;
import dev.kiln.ir.Op;
import dev.kiln.ir.UOp;
import dev.kiln.runtime.Buffer;
import dev.kiln.ir.Elements;
import dev.kiln.schedule.Schedule;
import dev.kiln.schedule.ScheduleItem;
import dev.kiln.schedule.Scheduler;
import dev.kiln.testing.TestGraphs;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

import java.lang.classfile.Attributes;
import java.lang.classfile.ClassFile;
import java.lang.classfile.MethodModel;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.IdentityHashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Supplier;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Vector lanes and unrolled loops keep every value: each kernel of the shared test graphs and of graphs
 * shaped for vectors (register tiles, masks, gathers, NaN and -0.0 in max and min) is rendered after
 * forced actions (UPCAST of each output loop by 4, 8 and 16, register tiles, UNROLL of reductions, the
 * default heuristic) with 128-, 256- and 512-bit vectors and with none, compiled, run whole and in 3
 * ranges (as THREAD runs it), and compared with the unoptimised kernel run by the {@link KernelEvaluator}:
 * bit for bit, except after GROUP of float registers (the heuristic's, which reorders sums; rtol 1e-5,
 * atol 1e-4 as in OptimizerTest), which must equal the evaluator of the grouped program bit for bit. Each graph's result is also checked against the INTERP device.
 */
class VectorKernelTest {
    static Stream<Arguments> graphs() { return Stream.concat(TestGraphs.graphs(), vectorGraphs()); }

    private static final double RTOL = 1e-5, ATOL = 1e-4;

    /** An optimised rendering of a kernel: actions and the vector size the renderer may use. */
    private record Variant(String name, List<Opt> opts, int vectorBytes) {}

    @ParameterizedTest(name = "{0}")
    @MethodSource("graphs")
    void vectorAndUnrolledKernelsMatchTheEvaluator(String name, Supplier<UOp> graph) {
        UOp root = graph.get();
        Buffer expected = TestGraphs.interpret(root);
        Schedule schedule = Scheduler.schedule(List.of(root));
        Map<UOp, Buffer> buffers = new IdentityHashMap<>();
        int n = 0, vectorised = 0;
        for (ScheduleItem item : schedule.items()) {
            for (UOp in : item.inputs()) {
                if (in.op() == Op.BUFFER) buffers.put(in, (Buffer) in.arg());
            }
            UOp o = item.output();
            switch (item) {
                case ScheduleItem.Kernel k -> {
                    KernelProgram p = Lowerer.lower(k.output(), k.inputs(), "k" + n++);
                    List<MemorySegment> inputs = new ArrayList<>();
                    for (UOp in : k.inputs()) inputs.add(buffers.get(in).segment());
                    Buffer reference = allocate(o);
                    KernelEvaluator.run(p, withOutput(reference, inputs), Map.of());
                    vectorised += checkVariants(name, p, o, inputs, reference);
                    buffers.put(o, reference);
                }
                case ScheduleItem.View view -> buffers.put(o, buffers.get(view.inputs().getFirst()));
                case ScheduleItem.Join join -> buffers.put(o, dev.kiln.testing.TestGraphs.join(join, buffers));
                default -> throw new AssertionError("not used by these graphs: " + item);
            }
        }
        TestGraphs.assertSameBits(name, root.dtype(), root.shape().numel(), expected.segment(), buffers.get(root).segment());
        if (vectorGraphs().anyMatch(a -> a.get()[0].equals(name)) && !name.contains("no vector form")) {
            assertThat(vectorised).as(name + ": variants rendered with vector lanes").isPositive();
        }
    }

    /** Checks every variant of a kernel; returns how many were rendered with vector lanes. */
    private static int checkVariants(String graph, KernelProgram p, UOp node, List<MemorySegment> inputs, Buffer reference) {
        List<Variant> variants = variants(p);
        List<JavaKernelCompiler.Source> sources = new ArrayList<>();
        for (int v = 0; v < variants.size(); v++) {
            Variant variant = variants.get(v);
            sources.add(new JavaKernelCompiler.Source("V" + v, JavaRenderer.render(Optimizer.apply(p, variant.opts()), "V" + v, variant.vectorBytes())));
        }
        List<JavaKernelCompiler.Compiled> classes = JavaKernelCompiler.compile(sources).classes();
        int vectorised = 0;
        for (int v = 0; v < variants.size(); v++) {
            Variant variant = variants.get(v);
            KernelProgram q = Optimizer.apply(p, variant.opts());
            CpuKernel k = new CpuKernel(p.name(), sources.get(v).code(), classes.get(v).classBytes(), classes.get(v).run(), q.outerExtent());
            String what = graph + " / " + p.name() + " / " + variant.name();
            int size = runBytecodeSize(k.classBytes());
            if (size > 8000) throw new AssertionError(what + ": run() has " + size + " bytes of bytecode, above the 8000 the JIT compiles\n" + k.source());
            if (k.source().contains("in vector lanes")) vectorised++;
            boolean exact = variant.opts().stream().noneMatch(o -> o instanceof Opt.Group) || !node.dtype().isFloat() && !hasFloatRegisters(q);
            Buffer grouped = null; // a grouped program's own order of sums, which every rendering must keep exactly
            if (!exact) {
                grouped = allocate(node);
                KernelEvaluator.run(q, withOutput(grouped, inputs), Map.of());
            }
            for (int parts : new int[] {1, 3}) {
                Buffer out = allocate(node);
                MemorySegment[] bufs = withOutput(out, inputs).toArray(MemorySegment[]::new);
                for (int i = 0; i < parts; i++) k.run(bufs, new long[0], k.extent() * i / parts, k.extent() * (i + 1) / parts);
                try {
                    if (exact) TestGraphs.assertSameBits(what + " in " + parts + " ranges", node.dtype(), node.shape().numel(), reference.segment(), out.segment());
                    else {
                        assertClose(what, node, reference, out);
                        TestGraphs.assertSameBits(what + " in " + parts + " ranges, against the evaluator of the grouped program", node.dtype(),
                                node.shape().numel(), grouped.segment(), out.segment());
                    }
                } catch (AssertionError e) {
                    throw new AssertionError(e.getMessage() + "\n" + k.source(), e);
                }
            }
        }
        return vectorised;
    }

    private static void addIfValid(KernelProgram p, String name, List<Opt> opts, int vectorBytes, List<Variant> out) {
        try {
            Optimizer.apply(p, opts);
        } catch (IllegalArgumentException notHere) {
            return; // not an innermost output loop, or a kernel that reads what it stores
        }
        out.add(new Variant(name, opts, vectorBytes));
    }

    /** UPCASTs by lane counts, register tiles, unrolled reductions and the default heuristic, as far as they apply. */
    private static List<Variant> variants(KernelProgram p) {
        List<Variant> out = new ArrayList<>();
        List<Stmt.Loop> axes = Optimizer.axes(p);
        List<Integer> outputs = new ArrayList<>(), reduces = new ArrayList<>();
        for (int a = 0; a < axes.size(); a++) (axes.get(a).kind() == Stmt.LoopKind.REDUCE ? reduces : outputs).add(a);
        for (int a : outputs) {
            long e = axes.get(a).extent();
            if (e % 4 == 0) {
                out.add(new Variant("UPCAST " + a + " by 4, 128-bit", List.of(new Opt.Upcast(a, 4)), 16));
                out.add(new Variant("UPCAST " + a + " by 4, no vectors", List.of(new Opt.Upcast(a, 4)), 0));
            }
            if (e % 4 == 0) out.add(new Variant("UPCAST " + a + " by 4, 256-bit", List.of(new Opt.Upcast(a, 4)), 32)); // 64-bit lanes
            if (e % 8 == 0) out.add(new Variant("UPCAST " + a + " by 8, 256-bit", List.of(new Opt.Upcast(a, 8)), 32));
            if (e % 8 == 0) out.add(new Variant("UPCAST " + a + " by 8, 512-bit", List.of(new Opt.Upcast(a, 8)), 64));
            if (e % 16 == 0) out.add(new Variant("UPCAST " + a + " by 16, 512-bit", List.of(new Opt.Upcast(a, 16)), 64));
        }
        for (int a : outputs) { // vectors for the whole multiples, then single iterations (where the loop is innermost)
            long e = axes.get(a).extent();
            for (int lanes : new int[] {4, 8}) {
                if (e % lanes == 0 || e < 2L * lanes) continue;
                List<Opt> opts = List.of(new Opt.UpcastRemainder(a, lanes));
                try {
                    Optimizer.apply(p, opts);
                } catch (IllegalArgumentException notInnermost) {
                    continue;
                }
                out.add(new Variant("UPCAST_REMAINDER " + a + " by " + lanes + ", " + lanes * 4 * 8 + "-bit", opts, lanes * 4));
            }
            // vectors, one more overlapping the last of them; a split-off first column, then the rest in vectors
            for (int lanes : new int[] {4, 8}) {
                if (e % lanes == 0 || e < lanes) continue;
                addIfValid(p, "UPCAST_OVERLAP " + a + " by " + lanes, List.of(new Opt.UpcastOverlap(a, lanes)), lanes * 4, out);
                if (e - 1 >= lanes && (e - 1) % lanes != 0) {
                    addIfValid(p, "SPLIT " + a + " at 1, UPCAST_OVERLAP by " + lanes, List.of(new Opt.Split(a, 1), new Opt.UpcastOverlap(a + 1, lanes)), lanes * 4, out);
                }
            }
        }
        if (outputs.size() >= 2) { // register tiles: lanes of the innermost output loop, its outer loop by 2, rows by 2 or 4
            int i = outputs.get(outputs.size() - 2), j = outputs.getLast();
            long ei = axes.get(i).extent(), ej = axes.get(j).extent();
            for (int lanes : new int[] {4, 8}) {
                if (ej % lanes != 0) continue;
                List<Opt> tile = new ArrayList<>(List.of(new Opt.Upcast(j, lanes)));
                if (ej / lanes % 2 == 0) tile.add(new Opt.Upcast(j, 2));
                if (ei % 4 == 0) tile.add(new Opt.Upcast(i, 4));
                else if (ei % 2 == 0) tile.add(new Opt.Upcast(i, 2));
                if (tile.size() > 1) out.add(new Variant("register tile " + tile, tile, 32));
            }
        }
        if (!reduces.isEmpty() && !outputs.isEmpty()) { // unrolled innermost reductions inside lanes
            int r = reduces.getLast(), j = outputs.getLast();
            long er = axes.get(r).extent(), ej = axes.get(j).extent();
            int unroll = er % 4 == 0 ? 4 : er % 3 == 0 ? 3 : er % 2 == 0 ? 2 : 0;
            if (unroll > 0 && ej % 8 == 0) {
                out.add(new Variant("UNROLL " + r + " by " + unroll + ", lanes", List.of(new Opt.Unroll(r, unroll), new Opt.Upcast(j, 8)), 32));
            } else if (unroll > 0) {
                out.add(new Variant("UNROLL " + r + " by " + unroll, List.of(new Opt.Unroll(r, unroll)), 32));
            }
        }
        if (!reduces.isEmpty() && !outputs.isEmpty()) { // partial sums of a grouped reduction, each in vector lanes
            int r = reduces.getLast(), j = outputs.getLast();
            if (axes.get(r).extent() % 2 == 0 && axes.get(j).extent() % 8 == 0) {
                out.add(new Variant("GROUP " + r + " by 2, lanes", List.of(new Opt.Group(r, 2), new Opt.Upcast(j, 8)), 32));
            }
        }
        if (outputs.size() >= 2) { // cache tiles around the lanes
            int i = outputs.get(outputs.size() - 2), j = outputs.getLast();
            long ei = axes.get(i).extent(), ej = axes.get(j).extent();
            if (ei % 2 == 0 && ej % 16 == 0) {
                out.add(new Variant("TILE and lanes", List.of(new Opt.Tile(i, 2), new Opt.Tile(j, 16), new Opt.Upcast(j + 2, 8)), 32));
            }
        }
        for (CpuInfo cpu : List.of(new CpuInfo(2, 32, true), new CpuInfo(4, 64, true), new CpuInfo(1, 16, true))) {
            out.add(new Variant("heuristic " + cpu, Heuristics.defaultOpts(p, cpu), cpu.vectorBytes()));
        }
        return out;
    }

    private static boolean hasFloatRegisters(KernelProgram p) {
        boolean[] found = {false};
        Optimizer.walk(p.body(), s -> found[0] |= s instanceof Stmt.Define d && d.register().dtype().isFloat());
        return found[0];
    }

    private static void assertClose(String what, UOp node, Buffer expected, Buffer actual) {
        for (long i = 0; i < node.shape().numel(); i++) {
            double e = Elements.getDouble(expected.segment(), node.dtype(), i), a = Elements.getDouble(actual.segment(), node.dtype(), i);
            boolean ok = Double.isNaN(e) ? Double.isNaN(a) : e == a || Math.abs(a - e) <= ATOL + RTOL * Math.abs(e);
            if (!ok) throw new AssertionError(what + ": element " + i + " expected " + e + " but was " + a);
        }
    }

    private static Buffer allocate(UOp node) { return Buffer.allocateHeap("TEST", node.dtype(), node.shape().numel()); }

    private static List<MemorySegment> withOutput(Buffer out, List<MemorySegment> inputs) {
        List<MemorySegment> all = new ArrayList<>(List.of(out.segment()));
        all.addAll(inputs);
        return all;
    }

    /** The length of the {@code run} method's bytecode: above 8000 bytes HotSpot never compiles it. */
    private static int runBytecodeSize(byte[] classBytes) {
        for (MethodModel m : ClassFile.of().parse(classBytes).methods()) {
            if (m.methodName().equalsString("run")) return m.findAttribute(Attributes.code()).orElseThrow().codeLength();
        }
        throw new AssertionError("no run method");
    }

    // ---------------------------------------------------------------- graphs shaped for vector lanes

    private static Supplier<UOp> t(Supplier<Tensor> graph) { return () -> graph.get().uop(); }

    private static Tensor data(int seed, int... shape) { return TestGraphs.data(seed, shape); }

    /** Values whose max and min need NaN to win and -0.0 to be below 0.0, in both operand orders. */
    private static final double[] SIGNED_ZEROS_AND_NANS = {-0.0, 0.0, 0.0, -0.0, Double.NaN, 1, -1, Double.NaN, -0.0, -0.0, 0.0, 0.0,
            Double.NEGATIVE_INFINITY, Double.POSITIVE_INFINITY, 2.5, -2.5};

    static Stream<Arguments> vectorGraphs() {
        Map<String, Supplier<UOp>> g = new LinkedHashMap<>();
        Tensor a = data(1, 16, 32), b = data(2, 32, 24), bias = data(3, 24);
        g.put("matmul 16x32x24 bias relu", t(() -> a.matmul(b).add(bias).relu()));
        g.put("batched matmul 2x8x16x16", t(() -> data(4, 2, 8, 16).matmul(data(5, 2, 16, 16))));
        g.put("f64 matmul 8x8x16", t(() -> data(6, 8, 8).cast(DType.F64).matmul(data(7, 8, 16).cast(DType.F64))));
        Tensor wide = Tensor.arange(128).cast(DType.I32).mul(-1640531535).reshape(8, 16).realize();
        g.put("i32 matmul wraps 8x16x16", t(() -> wide.matmul(wide.mT().slice(0, 0, 16, 1).reshape(16, 8).cat(1, wide.mT().reshape(16, 8)))));
        g.put("softmax rows 4x32", t(() -> data(8, 4, 32).softmax(-1)));
        // a decode step's probabilities times values, grouped heads, the output's heads and head size one axis:
        // per-head values uniform and contiguous only within aligned groups of 16 lanes
        g.put("attention values, heads merged 64", t(() -> data(16, 2, 2, 1, 24).matmul(data(17, 24, 2, 16).permute(1, 0, 2)
                .reshape(2, 1, 24, 16).expand(2, 2, 24, 16)).reshape(1, 64)));
        g.put("layernorm 4x16", t(() -> data(9, 4, 16).layerNorm(new int[] {16}, null, null, 1e-5)));
        double[] zn = SIGNED_ZEROS_AND_NANS;
        Tensor x = Tensor.of(DType.F32, zn, 2, 8), y = Tensor.of(DType.F64, zn, 2, 8);
        g.put("f32 max and min of NaN and signed zeros", t(() -> Tensor.stack(0, x.max(0), x.min(0), x.slice(0, 0, 1, 1).reshape(8)
                .maximum(x.slice(0, 1, 2, 1).reshape(8)), x.slice(0, 1, 2, 1).reshape(8).maximum(x.slice(0, 0, 1, 1).reshape(8)),
                x.slice(0, 0, 1, 1).reshape(8).minimum(x.slice(0, 1, 2, 1).reshape(8)))));
        g.put("f64 max and min of NaN and signed zeros", t(() -> Tensor.stack(0, y.max(0), y.min(0),
                y.slice(0, 1, 2, 1).reshape(8).maximum(y.slice(0, 0, 1, 1).reshape(8)))));
        Tensor s = data(10, 24).mul(30), u = data(11, 24);
        g.put("f32 lanewise fallbacks 24 wide", t(() -> Tensor.stack(0, s.sin(), s.exp2(), s.abs().log2(), s.trunc(), s.floorDiv(u), s.mod(u))));
        specialValues(g, DType.F32);
        specialValues(g, DType.F64);
        integerEdges(g, DType.I32);
        integerEdges(g, DType.I64);
        g.put("f32 to i32 wraps through i64, lane by lane", t(() -> s.mul(1e8).cast(DType.I32).cast(DType.F32).add(s.cast(DType.I32).cast(DType.F32))));
        g.put("f32 to i64 to f32", t(() -> s.mul(1e12).cast(DType.I64).cast(DType.F32)));
        g.put("f32 to f64 and back, 4 lanes", t(() -> data(12, 8, 4).cast(DType.F64).mul(1.1).cast(DType.F32)));
        g.put("where of a comparison", t(() -> Tensor.where(s.lt(u), s, u)));
        g.put("masks to floats", t(() -> s.lt(u).cast(DType.F32).add(s.ne(u).logicalAnd(s.gt(0)).cast(DType.F32))));
        g.put("index math as values", t(() -> Tensor.arange(24).cast(DType.F32).mul(s).add(Tensor.arange(24).lt(12).cast(DType.F32))));
        g.put("bool outputs 16 wide", t(() -> data(13, 4, 16).lt(data(14, 4, 16)).logicalOr(data(15, 4, 16).gt(1))));
        g.put("padded loads 6x40", t(() -> data(15, 4, 16).pad(new int[][] {{1, 1}, {13, 11}}).add(1)));
        g.put("conv2d 3x3 8x8 image", t(() -> data(16, 1, 4, 8, 8).conv2d(data(17, 8, 4, 3, 3), null, new int[] {1, 1}, new int[] {1, 1},
                new int[] {1, 1}, 1)));
        g.put("causal attention 1x2x8x8", t(() -> {
            Tensor q = data(18, 1, 2, 8, 8);
            return Tensor.scaledDotProductAttention(q, q.mul(0.5), q.add(1), null, true, null);
        }));
        g.put("transposed loads gather 16x16", t(() -> data(19, 16, 16).mT().add(data(20, 16, 16))));
        g.put("tails 5x20", t(() -> data(21, 5, 20).exp().add(data(22, 20))));
        g.put("odd rows 3x21 with a padded, gated load", t(() -> data(27, 3, 19).pad(new int[][] {{0, 0}, {1, 1}}).mul(data(28, 3, 21)).relu()));
        g.put("odd rows 2x3x13, per-row scale", t(() -> data(29, 2, 3, 13).mul(data(30, 2, 3, 1)).add(1)));
        // every other element in vector lanes (two loads and a permute), under a gate the same for all lanes, after a split-off edge
        g.put("max pool 3x3 stride 2 padded 2x37x37", t(() -> data(31, 1, 2, 37, 37).maxPool2d(new int[] {3, 3}, new int[] {2, 2}, new int[] {1, 1}, null, false)));
        g.put("max pool 3x3 stride 1 padded both edges 2x20x20", t(() -> data(36, 1, 2, 20, 20).maxPool2d(new int[] {3, 3}, new int[] {1, 1}, new int[] {1, 1}, null, false)));
        g.put("max pool 3x3 stride 2 unpadded 2x47x47", t(() -> data(32, 1, 2, 47, 47).maxPool2d(new int[] {3, 3}, new int[] {2, 2}, new int[] {0, 0}, null, false)));
        g.put("avg pool 2x2 stride 2 3x40x40", t(() -> data(33, 1, 3, 40, 40).avgPool2d(new int[] {2, 2}, new int[] {2, 2}, new int[] {0, 0}, false, true)));
        g.put("f64 every other element 4x48", t(() -> data(34, 4, 48).cast(DType.F64).reshape(4, 24, 2).slice(2, 0, 1, 1).reshape(4, 24).add(1)));
        g.put("i32 every other element 4x48", t(() -> data(35, 4, 48).mul(100).cast(DType.I32).reshape(4, 24, 2).slice(2, 1, 2, 1).reshape(4, 24).mul(3)));
        Tensor bits = Tensor.of(new boolean[] {true, false, false, true, false, false, true, false, false, false, true, true, false, true,
                false, false, false, false, false, false, true, false, true, false}, 3, 8);
        g.put("bool any and all 3x8", t(() -> Tensor.stack(0, bits.any(0), bits.all(0), bits.any(0).logicalXor(bits.all(0)))));
        g.put("argmax over rows 8x16", t(() -> data(23, 16, 8).argmax(0).cast(DType.F32)));
        g.put("f16 add (no vector form)", t(() -> data(24, 4, 16).cast(DType.F16).add(data(25, 4, 16).cast(DType.F16))));
        g.put("u8 mixed with f32 (no vector form)", t(() -> Tensor.arange(64).mul(37).cast(DType.U8).reshape(4, 16).cast(DType.F32).mul(data(26, 4, 16))));
        return g.entrySet().stream().map(e -> Arguments.of(e.getKey(), e.getValue()));
    }

    /** Floats at their edges: NaN, infinities, signed zeros, subnormals, huge and tiny values. */
    private static final double[] SPECIAL = {Double.NaN, Double.POSITIVE_INFINITY, Double.NEGATIVE_INFINITY, 0.0, -0.0, 1, -1, 0.5,
            1e-3, 3.7, -2.5, 65504, 1e-40, 1e38, 7, -7, 2, 1.5, -0.75, 1e-8, 100.25, -3e5, 0.1, 4};

    /** One graph per op with a vector form, on every pair of special values (24 lanes: 3 vectors of 8 or 6 of 4). */
    private static void specialValues(Map<String, Supplier<UOp>> g, DType dt) {
        double[] rotated = new double[SPECIAL.length];
        for (int i = 0; i < rotated.length; i++) rotated[i] = SPECIAL[(i + 5) % SPECIAL.length];
        Tensor x = Tensor.of(dt, SPECIAL, SPECIAL.length), y = Tensor.of(dt, rotated, SPECIAL.length);
        Map<String, Supplier<UOp>> ops = new LinkedHashMap<>();
        ops.put("add and sub", t(() -> x.add(y).sub(x.sub(y).mul(0.5))));
        ops.put("mul and div", t(() -> x.mul(y).div(y.add(0.25))));
        ops.put("maximum", t(() -> x.maximum(y)));
        ops.put("minimum", t(() -> x.minimum(y)));
        ops.put("comparisons", t(() -> x.lt(y).cast(dt).add(x.eq(y).cast(dt).mul(2)).add(x.ne(y).cast(dt).mul(4))));
        ops.put("sqrt, reciprocal, neg", t(() -> x.sqrt().add(x.reciprocal()).sub(x.neg())));
        ops.put("where", t(() -> Tensor.where(x.lt(y), x, y.neg())));
        ops.put("mul then add rounds twice", () -> x.mul(y).add(x.mul(0.1)).uop());
        for (var e : ops.entrySet()) g.put(dt + " " + e.getKey() + " of special values", e.getValue());
    }

    /** One graph per integer op with a vector form, at the dtype's edges (wraparound, signs). */
    private static void integerEdges(Map<String, Supplier<UOp>> g, DType dt) {
        long[] a = new long[32], b = new long[32];
        long min = dt == DType.I32 ? Integer.MIN_VALUE : Long.MIN_VALUE, max = dt == DType.I32 ? Integer.MAX_VALUE : Long.MAX_VALUE;
        long[] edges = {min, min + 1, -1, 0, 1, 2, max - 1, max, 7, -7, 3, -3, 1 << 20, -(1 << 20), 123456789, -987654321};
        for (int i = 0; i < 32; i++) {
            a[i] = edges[i % edges.length];
            b[i] = edges[(i * 7 + 3) % edges.length];
        }
        Tensor x = Tensor.of(dt, a, 32), y = Tensor.of(dt, b, 32);
        Map<String, Supplier<Tensor>> ops = new LinkedHashMap<>();
        ops.put("add, mul, neg wrap", () -> x.add(y).mul(x).sub(y.neg()));
        ops.put("maximum and minimum", () -> x.maximum(y).add(x.minimum(y).mul(3)));
        ops.put("bitwise", () -> x.bitwiseAnd(y).bitwiseOr(x.bitwiseXor(7)));
        ops.put("comparisons", () -> x.lt(y).cast(dt).add(x.eq(y).cast(dt).mul(2)).add(x.ne(y).cast(dt).mul(4)));
        ops.put("lane by lane division and shifts", () -> x.floorDiv(y).add(x.mod(7)).add(x.shl(3)));
        ops.put("to floats", () -> x.cast(DType.F32).add(y.cast(DType.F32)));
        for (var e : ops.entrySet()) g.put(dt + " " + e.getKey() + " at the edges", t(e.getValue()));
    }

    // ---------------------------------------------------------------- what the renderer writes

    private static KernelProgram onlyKernel(Tensor t) {
        KernelProgram p = null;
        for (ScheduleItem item : Scheduler.schedule(List.of(t.uop())).items()) {
            if (item instanceof ScheduleItem.Kernel k) p = Lowerer.lower(k.output(), k.inputs(), "k");
        }
        return p;
    }

    private static int count(String source, String regex) {
        Matcher m = Pattern.compile(regex).matcher(source);
        int n = 0;
        while (m.find()) n++;
        return n;
    }

    @Test
    void elementwiseLanesAreVectorLoadsOpsAndStores() {
        KernelProgram p = onlyKernel(data(1, 4, 16).mul(2).add(data(2, 4, 16)));
        String src = JavaRenderer.render(Optimizer.apply(p, List.of(new Opt.Upcast(1, 8))), "K", 32);
        assertThat(src).contains("import jdk.incubator.vector.*;", "VectorSpecies<Float> F32X8 = FloatVector.SPECIES_256",
                "FloatVector.fromMemorySegment(F32X8, p1, ", ".intoMemorySegment(p0, ", "// i1_up = 0..7 in vector lanes");
        assertThat(src).doesNotContain("toArray", "for (int i1_up", "Math.fma", "fma(");
        // too wide for the machine: the lanes are unrolled scalars
        String scalar = JavaRenderer.render(Optimizer.apply(p, List.of(new Opt.Upcast(1, 8))), "K", 16);
        assertThat(scalar).doesNotContain("Vector").contains("(long) i0 * 16 + (long) i1_o * 8 + 7");
    }

    @Test
    void maxAndMinReductionsAccumulateInVectorRegisters() {
        Tensor x = Tensor.of(DType.F32, SIGNED_ZEROS_AND_NANS, 2, 8);
        String src = JavaRenderer.render(Optimizer.apply(onlyKernel(x.max(0)), List.of(new Opt.Upcast(0, 8))), "K", 32);
        assertThat(src).contains("FloatVector acc0 = FloatVector.broadcast(F32X8, Float.NEGATIVE_INFINITY);", "acc0 = acc0.max(");
    }

    @Test
    void transcendentalsRunLaneByLaneInDouble() {
        String src = JavaRenderer.render(Optimizer.apply(onlyKernel(data(1, 16).sin()), List.of(new Opt.Upcast(0, 8))), "K", 32);
        assertThat(src).contains(".intoArray(", "for (int lane = 0; lane < 8; lane++) ", "(float) Math.sin(", "FloatVector.fromArray(F32X8, ");
        // the lane arrays are declared once at the start of run, not in the loop: a kernel call allocates them once
        String loop = src.substring(src.indexOf("for (int i0"));
        assertThat(loop).doesNotContain("new float[", ".toArray(");
        assertThat(src.substring(src.indexOf("public static void run"), src.indexOf("for (int i0"))).contains("float[] ", " = new float[8];");
    }

    @Test
    void matmulRegisterTileLoadsEachColumnVectorOncePerReductionStep() {
        KernelProgram p = onlyKernel(data(1, 64, 64).matmul(data(2, 64, 64)));
        List<Opt> opts = Heuristics.defaultOpts(p, new CpuInfo(2, 32));
        assertThat(opts).containsExactly(new Opt.Upcast(1, 8), new Opt.Upcast(1, 2), new Opt.Upcast(0, 4), new Opt.Thread(0, 2));
        String src = JavaRenderer.render(Optimizer.apply(p, opts), "K", 32);
        String loop = src.substring(src.indexOf("for (int r0"), src.indexOf("intoMemorySegment"));
        // per step of r0: 2 column vectors, 4 row elements broadcast, 8 multiplies and 8 adds into 8 vector accumulators
        assertThat(count(loop, "FloatVector.fromMemorySegment")).isEqualTo(2);
        assertThat(count(loop, "FloatVector.broadcast")).isEqualTo(4);
        assertThat(count(loop, "\\.mul\\(")).isEqualTo(8);
        assertThat(count(loop, "acc\\d+ = acc\\d+\\.add\\(")).isEqualTo(8);
        assertThat(count(src, "FloatVector acc\\d+ = ")).isEqualTo(8);
        assertThat(src).doesNotContain("toArray", "fma");
    }

    @Test
    void gatedContiguousLoadsAreMaskedVectorLoads() {
        KernelProgram p = onlyKernel(data(1, 16).pad(new int[][] {{3, 5}}));
        String src = JavaRenderer.render(Optimizer.apply(p, List.of(new Opt.Upcast(0, 8))), "K", 32);
        assertThat(src).containsPattern("FloatVector.fromMemorySegment\\(F32X8, p1, .*, ORDER, v\\d+\\);");
    }

    @Test
    void unrolledReductionsRunInOrderWithoutALoop() {
        KernelProgram p = onlyKernel(data(1, 4, 3).sum(1));
        String src = JavaRenderer.render(Optimizer.apply(p, List.of(new Opt.Unroll(1, 3))), "K", 32);
        assertThat(src).doesNotContain("for (int r0").contains("acc0 = acc0 + ");
        assertThat(count(src, "acc0 = acc0 \\+ ")).isEqualTo(3);
    }
}

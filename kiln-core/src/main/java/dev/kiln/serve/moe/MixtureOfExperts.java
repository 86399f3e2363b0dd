package dev.kiln.serve.moe;

import dev.kiln.Tensor;
import dev.kiln.types.DType;
import dev.kiln.ir.CustomFunction;
import dev.kiln.runtime.WorkerPool;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.VectorSpecies;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Mixture-of-experts layers (Mixtral, Qwen-MoE): a router picks the top-k experts of each token and the
 * token's output is the weighted sum of those experts' MLPs.
 *
 * <p>The router (linear, softmax over experts, top-k, optional renormalisation) is ordinary tensor ops,
 * compiled like any other. The experts run as one host step ({@link Tensor#custom}) that is sparse: it
 * groups the (token, slot) assignments by expert and runs each routed expert once, as a small dense
 * matmul over just its tokens. That step is a {@link Layer}, a stateful custom function: each execution
 * plan keeps a {@link MoeLayerState} for it (residency mask, backing store, counters, top-k capture).
 *
 * <p>Results are exactly reproducible: each output element is computed by one fixed sequence of float
 * operations (vector lanes summed in a fixed order, {@link StrictMath} for the activation) whatever the
 * residency masks, the thread count or the JIT state.
 */
public final class MixtureOfExperts {
    private MixtureOfExperts() {}

    /** The expert MLP. */
    enum Kind {
        /** {@code down(silu(gate(x)) * up(x))}: gate, up and down weights. */
        SWIGLU,
        /** {@code down(relu(up(x)))}. */
        RELU,
        /** {@code down(silu(up(x)))}. */
        SILU,
        /** {@code down(gelu_tanh(up(x)))}. */
        GELU_TANH
    }

    static Kind activation(String name) {
        return switch (name) {
            case "relu" -> Kind.RELU;
            case "silu" -> Kind.SILU;
            case "gelu_tanh" -> Kind.GELU_TANH;
            default -> throw new IllegalArgumentException("mixtureOfExpertsMlp: unknown activation '" + name
                    + "' (expected relu, silu or gelu_tanh)");
        };
    }

    /**
     * A mixture-of-experts layer with SwiGLU experts (Mixtral style) over the last axis of {@code x},
     * {@code (..., d)}: router probabilities {@code softmax(x · router)} over the experts, the {@code topK}
     * most probable experts per token (ties go to the lower expert index), their probabilities
     * renormalised to sum to 1, and the output {@code sum_k w_k * down_e(silu(gate_e(x)) * up_e(x))} for
     * each chosen expert {@code e}. Same shape and dtype as {@code x}.
     *
     * <p>The experts compute sparsely: each routed expert runs once over just the tokens routed to it.
     * In an execution plan each such layer has a {@link MoeLayerState} (expert residency, counters, top-k
     * capture), found with {@link MoeLayers#of}.
     *
     * @param router (d, experts)
     * @param gate (experts, ff, d), as {@code nn.Linear} weights stacked over experts
     * @param up (experts, ff, d)
     * @param down (experts, d, ff)
     * @param topK experts per token, 1..experts
     * @throws IllegalArgumentException on shapes that do not fit together, non-float dtypes or a bad topK
     */
    public static Tensor layer(Tensor x, Tensor router, Tensor gate, Tensor up, Tensor down, int topK) {
        return layer(x, router, gate, up, down, topK, true);
    }

    /**
     * {@link #layer(Tensor, Tensor, Tensor, Tensor, Tensor, int)} choosing whether the top-k
     * probabilities are renormalised to sum to 1 (Mixtral) or used as they are (Qwen-MoE's default).
     */
    public static Tensor layer(Tensor x, Tensor router, Tensor gate, Tensor up, Tensor down, int topK, boolean renormalize) {
        return build("mixtureOfExperts", Kind.SWIGLU, x, router, gate, up, down, topK, renormalize);
    }

    /**
     * A mixture-of-experts layer whose experts are plain two-layer MLPs {@code down_e(act(up_e(x)))}, routed
     * as {@link #layer(Tensor, Tensor, Tensor, Tensor, Tensor, int, boolean)}.
     *
     * @param router (d, experts)
     * @param up (experts, ff, d)
     * @param down (experts, d, ff)
     * @param activation {@code "relu"}, {@code "silu"} or {@code "gelu_tanh"}
     * @throws IllegalArgumentException on bad shapes, dtypes, topK or activation
     */
    public static Tensor mlpLayer(Tensor x, Tensor router, Tensor up, Tensor down, int topK, boolean renormalize, String activation) {
        return build("mixtureOfExpertsMlp", activation(activation), x, router, null, up, down, topK, renormalize);
    }

    private static Tensor build(String op, Kind kind, Tensor x, Tensor router, Tensor gate, Tensor up, Tensor down, int topK, boolean renormalize) {
        if (x.ndim() < 1) throw new IllegalArgumentException(op + ": x " + x.shape() + " needs a feature axis (..., d)");
        List<Tensor> all = new ArrayList<>(List.of(x, router, up, down));
        if (gate != null) all.add(gate);
        for (Tensor t : all) {
            if (!t.dtype().isFloat()) {
                throw new IllegalArgumentException(op + ": x, router and expert weights must have float dtypes, got " + t.dtype() + t.shape());
            }
        }
        int d = x.dim(-1);
        if (router.ndim() != 2 || router.dim(0) != d) {
            throw new IllegalArgumentException(op + ": router " + router.shape() + " must be (d, experts) with d = " + d + " of x " + x.shape());
        }
        int experts = router.dim(1);
        if (experts < 1) throw new IllegalArgumentException(op + ": router " + router.shape() + " has no experts");
        if (topK < 1 || topK > experts) {
            throw new IllegalArgumentException(op + ": topK " + topK + " out of range 1.." + experts + " (router " + router.shape() + ")");
        }
        if (up.ndim() != 3 || up.dim(0) != experts || up.dim(2) != d) {
            throw new IllegalArgumentException(op + ": up " + up.shape() + " must be (experts, ff, d) = (" + experts + ", ff, " + d + ")");
        }
        int ff = up.dim(1);
        if (gate != null && !gate.shape().equals(up.shape())) {
            throw new IllegalArgumentException(op + ": gate " + gate.shape() + " must match up " + up.shape() + " (experts, ff, d)");
        }
        if (down.ndim() != 3 || down.dim(0) != experts || down.dim(1) != d || down.dim(2) != ff) {
            throw new IllegalArgumentException(op + ": down " + down.shape() + " must be (experts, d, ff) = (" + experts + ", " + d + ", " + ff + ")");
        }

        DType outType = x.dtype();
        long lead = 1;
        for (int i = 0; i < x.ndim() - 1; i++) lead *= x.dim(i);
        int tokens = Math.toIntExact(lead);
        var dev = x.device();
        Tensor x2 = x.cast(DType.F32).reshape(tokens, d);
        Tensor probs = x2.matmul(router.to(dev).cast(DType.F32)).softmax(-1);
        Tensor.Sorted top = probs.topk(topK, -1, true); // stable: ties go to the lower expert index
        Tensor weights = renormalize ? top.values().div(top.values().sum(new int[] {-1}, true)) : top.values();
        Layer layer = new Layer(op, kind, experts, topK, d, ff);
        List<Tensor> inputs = new ArrayList<>(List.of(x2, top.indices(), weights));
        if (gate != null) inputs.add(gate.to(dev).cast(DType.F32));
        inputs.add(up.to(dev).cast(DType.F32));
        inputs.add(down.to(dev).cast(DType.F32));
        Tensor y = Tensor.custom(op, DType.F32, new int[] {tokens, d}, layer, inputs.toArray(Tensor[]::new));
        return y.reshape(x.dims()).cast(outType);
    }

    // =====================================================================================================
    // the expert step

    private static final VectorSpecies<Float> S = FloatVector.SPECIES_PREFERRED;
    private static final ValueLayout.OfFloat F = ValueLayout.JAVA_FLOAT_UNALIGNED;
    private static final ValueLayout.OfLong L = ValueLayout.JAVA_LONG_UNALIGNED;
    /** Below this many multiply-adds a forward runs on the calling thread. */
    private static final long PARALLEL_WORK = 1 << 18;

    /**
     * One MoE layer's expert step: the graph's custom function, shared by every plan (and replica) that runs
     * the graph. It holds the layer's shape, no per-run state; {@link #weightsChanged()} is the one shared
     * mutable fact (it invalidates every plan's backing store).
     *
     * <p>Inputs: x (T, d) f32, top-k indices (T, k) i64, top-k weights (T, k) f32, then the expert weights
     * (gate and) up (E, ff, d) and down (E, d, ff), f32. Output (T, d) f32.
     */
    static final class Layer implements CustomFunction.Stateful<MoeLayerState> {
        final String op;
        final Kind kind;
        final int experts, topK, d, ff;
        private final AtomicLong weightEpoch = new AtomicLong();

        Layer(String op, Kind kind, int experts, int topK, int d, int ff) {
            this.op = op;
            this.kind = kind;
            this.experts = experts;
            this.topK = topK;
            this.d = d;
            this.ff = ff;
        }

        /** Weight matrices per expert: gate, up, down or up, down. */
        int matrices() { return kind == Kind.SWIGLU ? 3 : 2; }

        /** Floats of one expert's weights (all its matrices). */
        long expertFloats() { return (long) matrices() * ff * d; }

        long weightEpoch() { return weightEpoch.get(); }

        void weightsChanged() { weightEpoch.incrementAndGet(); }

        @Override
        public MoeLayerState newState() { return new MoeLayerState(this); }

        @Override
        public void apply(List<MemorySegment> in, MemorySegment out, MoeLayerState state) {
            int tokens = Math.toIntExact(in.get(1).byteSize() / 8 / topK);
            MemorySegment[] w = in.subList(3, in.size()).toArray(MemorySegment[]::new);
            int[] idx = new int[tokens * topK];
            for (int p = 0; p < idx.length; p++) {
                long e = in.get(1).getAtIndex(L, p);
                if (e < 0 || e >= experts) throw new IllegalStateException(op + ": router chose expert " + e + " of " + experts);
                idx[p] = (int) e;
            }
            synchronized (state) {
                forward(state, in.get(0), idx, in.get(2), w, out, tokens);
            }
        }

        private void forward(MoeLayerState state, MemorySegment x, int[] idx, MemorySegment weights, MemorySegment[] w,
                             MemorySegment out, int tokens) {
            // counting sort of the (token, slot) positions by expert, in position order within an expert
            int[] start = new int[experts + 1];
            for (int e : idx) start[e + 1]++;
            for (int e = 0; e < experts; e++) start[e + 1] += start[e];
            int[] order = new int[idx.length];
            int[] fill = Arrays.copyOf(start, experts);
            for (int p = 0; p < idx.length; p++) order[fill[idx[p]]++] = p;

            boolean[] resident = state.residentForForward(w);
            int slots = 0;
            for (int e = 0; e < experts; e++) if (!resident[e] && start[e + 1] > start[e]) slots++;
            state.reserveStaging(slots);
            ExpertWeights[] source = new ExpertWeights[experts];
            long hits = 0, misses = 0, residentCalls = 0, stagedCalls = 0, staged = 0;
            for (int e = 0; e < experts; e++) {
                int n = start[e + 1] - start[e];
                if (n == 0) continue;
                if (resident[e]) {
                    source[e] = inPlace(w, e);
                    hits += n;
                    residentCalls++;
                } else {
                    source[e] = state.stage(e, (int) stagedCalls);
                    misses += n;
                    stagedCalls++;
                    staged += expertFloats() * 4;
                }
            }

            float[] y = state.scratch((long) idx.length * d);
            runExperts(start, order, source, x, y);

            // out[t] = sum over slots, in slot order, of weight * expert output
            float[] row = new float[d];
            for (int t = 0; t < tokens; t++) {
                Arrays.fill(row, 0f);
                for (int s = 0; s < topK; s++) {
                    int p = t * topK + s;
                    float wt = weights.getAtIndex(F, p);
                    for (int c = 0; c < d; c++) row[c] += wt * y[p * d + c];
                }
                MemorySegment.copy(row, 0, out, F, (long) t * d * 4, d);
            }
            state.record(idx, hits, misses, residentCalls, stagedCalls, staged);
        }

        /** Expert {@code e}'s matrices read in place from the layer's weight inputs. */
        private ExpertWeights inPlace(MemorySegment[] w, int e) {
            long bytes = (long) ff * d * 4;
            long[] offsets = new long[w.length];
            Arrays.fill(offsets, e * bytes);
            return new ExpertWeights(w, offsets);
        }

        /** Runs every routed expert over its tokens, split across the worker pool when there is enough work. */
        private void runExperts(int[] start, int[] order, ExpertWeights[] source, MemorySegment x, float[] y) {
            long perRow = (long) matrices() * ff * d;
            long work = (long) start[experts] * perRow;
            List<Runnable> tasks = new ArrayList<>();
            int workers = WorkerPool.size();
            long target = work < PARALLEL_WORK || workers <= 1 ? Long.MAX_VALUE : Math.max(PARALLEL_WORK / 4, work / (4L * workers));
            for (int e = 0; e < experts; e++) {
                int n = start[e + 1] - start[e];
                if (n == 0) continue;
                int chunk = (int) Math.max(1, Math.min(n, target / Math.max(perRow, 1)));
                for (int r = start[e]; r < start[e + 1]; r += chunk) {
                    int from = r, to = Math.min(start[e + 1], r + chunk);
                    ExpertWeights src = source[e];
                    tasks.add(() -> expert(src, order, from, to, x, y));
                }
            }
            if (target == Long.MAX_VALUE || tasks.size() <= 1) tasks.forEach(Runnable::run);
            else WorkerPool.runAll(tasks);
        }

        /** One expert over positions {@code order[from..to)}: y[p] = expert(x[p / k]). */
        private void expert(ExpertWeights src, int[] order, int from, int to, MemorySegment x, float[] y) {
            int n = to - from;
            float[] xe = new float[n * d];
            for (int i = 0; i < n; i++) MemorySegment.copy(x, F, (long) (order[from + i] / topK) * d * 4, xe, i * d, d);
            float[] h = new float[n * ff];
            int m = 0;
            if (kind == Kind.SWIGLU) {
                float[] g = new float[n * ff];
                project(src, m++, ff, d, xe, n, g);
                project(src, m++, ff, d, xe, n, h);
                for (int q = 0; q < h.length; q++) h[q] *= silu(g[q]);
            } else {
                project(src, m++, ff, d, xe, n, h);
                for (int q = 0; q < h.length; q++) h[q] = activate(h[q]);
            }
            float[] ye = new float[n * d];
            project(src, m, d, ff, h, n, ye);
            for (int i = 0; i < n; i++) System.arraycopy(ye, i * d, y, order[from + i] * d, d);
        }

        private float activate(float v) {
            return switch (kind) {
                case RELU -> Float.isNaN(v) ? v : Math.max(v, 0f);
                case SILU -> silu(v);
                case GELU_TANH -> (float) (0.5 * v * (1 + StrictMath.tanh(0.7978845608028654 * (v + 0.044715 * v * v * v))));
                case SWIGLU -> throw new IllegalStateException("SwiGLU has no single activation");
            };
        }

        private static float silu(float v) { return (float) (v / (1 + StrictMath.exp(-(double) v))); }
    }

    /**
     * An expert's matrices: matrix {@code m} (rows x cols, row-major) starts at {@code offsets[m]} bytes in
     * {@code segments[m]}.
     */
    record ExpertWeights(MemorySegment[] segments, long[] offsets) {}

    /**
     * {@code out[i * rows + j] = dot(a[i], W[j])} for the {@code rows} x {@code cols} matrix {@code m} of
     * {@code w} (read where it lies) and the {@code n} rows of {@code a} (length {@code cols} each). Register
     * blocks of 2 weight rows x 4 tokens, and 4 weight rows x 1 token for the tokens left over, reuse each
     * load several times; every output goes through {@link #finish}, so its value does not depend on the
     * block it was computed in.
     */
    static void project(ExpertWeights w, int m, int rows, int cols, float[] a, int n, float[] out) {
        MemorySegment seg = w.segments()[m];
        long base = w.offsets()[m], rowBytes = 4L * cols;
        int bound = S.loopBound(cols);
        float[] lanes = new float[S.length()];
        int j = 0;
        for (; j + 4 <= rows; j += 4) {
            int i = 0;
            for (; i + 4 <= n; i += 4) {
                for (int r = j; r < j + 4; r += 2) block2x4(seg, base + r * rowBytes, rowBytes, a, i, cols, bound, lanes, out, i * rows + r, rows);
            }
            for (; i < n; i++) block4x1(seg, base + j * rowBytes, rowBytes, a, i * cols, cols, bound, lanes, out, i * rows + j);
        }
        for (; j < rows; j++) {
            for (int i = 0; i < n; i++) {
                FloatVector acc = FloatVector.zero(S);
                long wj = base + j * rowBytes;
                for (int p = 0; p < bound; p += S.length()) acc = fromArray(a, i * cols + p).fma(load(seg, wj + 4L * p), acc);
                out[i * rows + j] = finish(acc, a, i * cols, seg, wj, bound, cols, lanes);
            }
        }
    }

    /** Weight rows r, r + 1 (at {@code w0}, {@code w0 + rowBytes}) against tokens i..i+3. */
    private static void block2x4(MemorySegment seg, long w0, long rowBytes, float[] a, int i, int cols, int bound, float[] lanes,
                                 float[] out, int o, int rows) {
        long w1 = w0 + rowBytes;
        int a0 = i * cols, a1 = a0 + cols, a2 = a1 + cols, a3 = a2 + cols;
        FloatVector c00 = FloatVector.zero(S), c01 = c00, c02 = c00, c03 = c00, c10 = c00, c11 = c00, c12 = c00, c13 = c00;
        for (int p = 0; p < bound; p += S.length()) {
            FloatVector x0 = fromArray(a, a0 + p), x1 = fromArray(a, a1 + p), x2 = fromArray(a, a2 + p), x3 = fromArray(a, a3 + p);
            FloatVector v = load(seg, w0 + 4L * p);
            c00 = x0.fma(v, c00);
            c01 = x1.fma(v, c01);
            c02 = x2.fma(v, c02);
            c03 = x3.fma(v, c03);
            v = load(seg, w1 + 4L * p);
            c10 = x0.fma(v, c10);
            c11 = x1.fma(v, c11);
            c12 = x2.fma(v, c12);
            c13 = x3.fma(v, c13);
        }
        out[o] = finish(c00, a, a0, seg, w0, bound, cols, lanes);
        out[o + rows] = finish(c01, a, a1, seg, w0, bound, cols, lanes);
        out[o + 2 * rows] = finish(c02, a, a2, seg, w0, bound, cols, lanes);
        out[o + 3 * rows] = finish(c03, a, a3, seg, w0, bound, cols, lanes);
        out[o + 1] = finish(c10, a, a0, seg, w1, bound, cols, lanes);
        out[o + 1 + rows] = finish(c11, a, a1, seg, w1, bound, cols, lanes);
        out[o + 1 + 2 * rows] = finish(c12, a, a2, seg, w1, bound, cols, lanes);
        out[o + 1 + 3 * rows] = finish(c13, a, a3, seg, w1, bound, cols, lanes);
    }

    /** Weight rows j..j+3 (from {@code w0}) against the token at {@code a0}. */
    private static void block4x1(MemorySegment seg, long w0, long rowBytes, float[] a, int a0, int cols, int bound, float[] lanes,
                                 float[] out, int o) {
        long w1 = w0 + rowBytes, w2 = w1 + rowBytes, w3 = w2 + rowBytes;
        FloatVector c0 = FloatVector.zero(S), c1 = c0, c2 = c0, c3 = c0;
        for (int p = 0; p < bound; p += S.length()) {
            FloatVector x = fromArray(a, a0 + p);
            c0 = x.fma(load(seg, w0 + 4L * p), c0);
            c1 = x.fma(load(seg, w1 + 4L * p), c1);
            c2 = x.fma(load(seg, w2 + 4L * p), c2);
            c3 = x.fma(load(seg, w3 + 4L * p), c3);
        }
        out[o] = finish(c0, a, a0, seg, w0, bound, cols, lanes);
        out[o + 1] = finish(c1, a, a0, seg, w1, bound, cols, lanes);
        out[o + 2] = finish(c2, a, a0, seg, w2, bound, cols, lanes);
        out[o + 3] = finish(c3, a, a0, seg, w3, bound, cols, lanes);
    }

    /**
     * The end of one dot product, so that its rounding never varies: the vector lanes (fused multiply-adds,
     * the same in the JIT's intrinsic and the interpreted fallback) are summed in lane order, then the tail
     * past {@code bound} is added with {@link Math#fma}.
     */
    private static float finish(FloatVector acc, float[] a, int a0, MemorySegment seg, long w0, int bound, int cols, float[] lanes) {
        acc.intoArray(lanes, 0);
        float s = 0f;
        for (float l : lanes) s += l;
        for (int p = bound; p < cols; p++) s = Math.fma(a[a0 + p], seg.get(F, w0 + 4L * p), s);
        return s;
    }

    private static FloatVector fromArray(float[] a, int at) { return FloatVector.fromArray(S, a, at); }

    private static FloatVector load(MemorySegment seg, long at) { return FloatVector.fromMemorySegment(S, seg, at, ByteOrder.nativeOrder()); }
}

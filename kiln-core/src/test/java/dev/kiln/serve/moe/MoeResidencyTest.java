package dev.kiln.serve.moe;

import dev.kiln.Tensor;
import dev.kiln.runtime.ExecutionPlan;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.junit.jupiter.api.Test;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Mixture-of-experts layers in execution plans: results do not depend on the residency masks, the
 * residency counters and the top-k capture agree with an independent routing computed here in double
 * precision, and each plan keeps its own state.
 */
class MoeResidencyTest {
    static final int T = 24, D = 16, FF = 12, E = 8, K = 2;

    /** One layer's weights as host arrays (router (d, E), gate/up (E, ff, d), down (E, d, ff)). */
    record Weights(float[] router, float[] gate, float[] up, float[] down) {
        static Weights random(Random r, int d, int ff, int e) {
            return new Weights(randn(r, d * e, 1.0), randn(r, e * ff * d, 1 / Math.sqrt(d)), randn(r, e * ff * d, 1 / Math.sqrt(d)),
                    randn(r, e * d * ff, 1 / Math.sqrt(ff)));
        }

        Tensor apply(Tensor x, String device, int d, int ff, int e, int k) {
            return MixtureOfExperts.layer(x, on(router, device, d, e), on(gate, device, e, ff, d), on(up, device, e, ff, d),
                    on(down, device, e, d, ff), k);
        }
    }

    static float[] randn(Random r, int n, double scale) {
        float[] f = new float[n];
        for (int i = 0; i < n; i++) f[i] = (float) (r.nextGaussian() * scale);
        return f;
    }

    static Tensor on(float[] data, String device, int... shape) {
        return Tensor.of(data, shape).to(device).realize();
    }

    /** Two stacked MoE layers; outputs: layer 1's and layer 2's. */
    record Model(Tensor x, Weights w1, Weights w2, Tensor y1, Tensor y2) {
        static Model build(String device, long seed) {
            Random r = new Random(seed);
            Tensor x = on(randn(r, T * D, 1.0), device, T, D);
            Weights w1 = Weights.random(r, D, FF, E), w2 = Weights.random(r, D, FF, E);
            Tensor y1 = w1.apply(x, device, D, FF, E, K);
            Tensor y2 = w2.apply(y1, device, D, FF, E, K);
            return new Model(x, w1, w2, y1, y2);
        }

        ExecutionPlan prepare() { return Tensor.prepare(y1, y2); }
    }

    static float[] floats(ExecutionPlan plan, int output) {
        MemorySegment s = plan.outputBuffer(output).segment();
        return s.toArray(ValueLayout.JAVA_FLOAT);
    }

    /** The k experts of each token by double-precision softmax, ties to the lower index, checked to have no near tie. */
    static int[] topK(float[] x, float[] router, int tokens, int d, int e, int k) {
        int[] out = new int[tokens * k];
        for (int t = 0; t < tokens; t++) {
            double[] logit = new double[e];
            for (int j = 0; j < e; j++) for (int c = 0; c < d; c++) logit[j] += (double) x[t * d + c] * router[c * e + j];
            double max = Arrays.stream(logit).max().orElseThrow(), sum = 0;
            double[] p = new double[e];
            for (int j = 0; j < e; j++) sum += p[j] = Math.exp(logit[j] - max);
            for (int j = 0; j < e; j++) p[j] /= sum;
            Integer[] order = new Integer[e];
            for (int j = 0; j < e; j++) order[j] = j;
            Arrays.sort(order, (a, b) -> p[a] != p[b] ? Double.compare(p[b], p[a]) : Integer.compare(a, b));
            if (k < e) assertThat(p[order[k - 1]] - p[order[k]]).as("routing gap of token " + t).isGreaterThan(1e-6);
            for (int s = 0; s < k; s++) out[t * k + s] = order[s];
        }
        return out;
    }

    static boolean[] randomMask(Random r, int e) {
        boolean[] m = new boolean[e];
        for (int i = 0; i < e; i++) m[i] = r.nextBoolean();
        return m;
    }

    static boolean[] all(int e, boolean v) {
        boolean[] m = new boolean[e];
        Arrays.fill(m, v);
        return m;
    }

    /** The counters a forward with these routes and masks must give. */
    static MoeResidencyStats.Layer expected(int[] routes, boolean[] mask, long expertBytes) {
        long hits = 0, misses = 0;
        boolean[] used = new boolean[mask.length];
        for (int e : routes) {
            if (mask[e]) hits++;
            else misses++;
            used[e] = true;
        }
        long residentCalls = 0, stagedCalls = 0;
        for (int e = 0; e < mask.length; e++) {
            if (used[e] && mask[e]) residentCalls++;
            if (used[e] && !mask[e]) stagedCalls++;
        }
        return new MoeResidencyStats.Layer(1, hits, misses, residentCalls, stagedCalls, stagedCalls * expertBytes);
    }

    @ParameterizedTest
    @ValueSource(strings = {"CPU", "INTERP"})
    void resultsAndRoutesDoNotDependOnTheMasks(String device) {
        Model m = Model.build(device, 1);
        try (ExecutionPlan plan = m.prepare()) {
            List<MoeLayerState> layers = MoeLayers.of(plan);
            assertThat(layers).hasSize(2);
            assertThat(MoeLayers.enableTopkCapture(plan, E)).isTrue();

            plan.execute();
            float[] y1 = floats(plan, 0), y2 = floats(plan, 1);
            List<int[]> routes = MoeLayers.takeTopkCapture(plan).orElseThrow();
            assertThat(routes.get(0)).containsExactly(topK(m.x.toFloatArray(), m.w1.router, T, D, E, K));
            assertThat(routes.get(1)).containsExactly(topK(y1, m.w2.router, T, D, E, K));
            assertThat(MoeLayers.takeTopkCapture(plan)).as("a take clears the capture").isEmpty();
            MoeResidencyStats allResident = MoeLayers.takeResidencyStats(plan).orElseThrow();
            for (int l = 0; l < 2; l++) {
                assertThat(allResident.layers().get(l)).isEqualTo(expected(routes.get(l), all(E, true), layers.get(l).expertBytes()));
            }

            Random r = new Random(2);
            List<boolean[][]> configs = new ArrayList<>();
            configs.add(new boolean[][] {all(E, false), all(E, false)});
            for (int i = 0; i < 4; i++) configs.add(new boolean[][] {randomMask(r, E), randomMask(r, E)});
            configs.add(new boolean[][] {all(E, true), all(E, true)});
            for (boolean[][] masks : configs) {
                MoeLayers.setResidentExpertsPerLayer(plan, masks);
                plan.execute();
                assertThat(floats(plan, 0)).as("layer 1 output with masks " + Arrays.deepToString(masks)).containsExactly(y1);
                assertThat(floats(plan, 1)).as("layer 2 output with masks " + Arrays.deepToString(masks)).containsExactly(y2);
                assertThat(MoeLayers.takeTopkCapture(plan).orElseThrow()).containsExactly(routes.get(0), routes.get(1));
                MoeResidencyStats stats = MoeLayers.takeResidencyStats(plan).orElseThrow();
                long total = 0;
                for (int l = 0; l < 2; l++) {
                    MoeResidencyStats.Layer s = stats.layers().get(l);
                    assertThat(s.hits() + s.misses()).isEqualTo((long) T * K);
                    assertThat(s).isEqualTo(expected(routes.get(l), masks[l], layers.get(l).expertBytes()));
                    total += s.bytesStaged();
                }
                assertThat(stats.bytesStaged()).isEqualTo(total);
                assertThat(stats.hits() + stats.misses()).isEqualTo(2L * T * K);
            }
        }
    }

    @Test
    void mergedMaskAppliesToEveryLayerAndCountersAccumulateUntilTaken() {
        Model m = Model.build("CPU", 3);
        try (ExecutionPlan plan = m.prepare()) {
            boolean[] mask = {true, false, true, false, true, false, true, false};
            MoeLayers.setResidentExperts(plan, mask);
            for (MoeLayerState s : MoeLayers.of(plan)) assertThat(s.resident()).containsExactly(mask);
            plan.execute();
            plan.execute();
            MoeResidencyStats two = MoeLayers.takeResidencyStats(plan).orElseThrow();
            for (MoeResidencyStats.Layer s : two.layers()) {
                assertThat(s.forwards()).isEqualTo(2);
                assertThat(s.hits() + s.misses()).isEqualTo(2L * T * K);
                assertThat(s.bytesStaged()).isEqualTo(s.stagedExpertCalls() * MoeLayers.of(plan).getFirst().expertBytes());
            }
            assertThat(MoeLayers.takeResidencyStats(plan).orElseThrow().layers())
                    .containsOnly(new MoeResidencyStats.Layer(0, 0, 0, 0, 0, 0));
            assertThat(MoeLayers.takeTopkCapture(plan)).as("capture was never enabled").isEmpty();
        }
    }

    @Test
    void theBackingStoreHoldsExactlyTheNonResidentExpertsAndFollowsWeightChanges() {
        Model m = Model.build("CPU", 4);
        try (ExecutionPlan plan = m.prepare()) {
            MoeLayerState first = MoeLayers.of(plan).getFirst();
            boolean[] mask = {false, true, true, false, false, true, true, true};
            first.setResident(mask);
            assertThat(first.backingStoreBytes()).as("eviction happens at the next forward").isZero();
            plan.execute();
            assertThat(first.backingStoreBytes()).isEqualTo(3 * first.expertBytes());

            // overwrite layer 1's expert weights in place, as setting a parameter does
            float[] newGate = randn(new Random(5), E * FF * D, 0.5);
            MemorySegment.copy(newGate, 0, gateBuffer(m), ValueLayout.JAVA_FLOAT, 0, newGate.length);
            float[] before = floats(plan, 1);
            first.weightsChanged();
            MoeLayers.takeResidencyStats(plan);
            plan.execute();
            float[] staged = floats(plan, 1);
            assertThat(MoeLayers.takeResidencyStats(plan).orElseThrow().layers().getFirst().stagedExpertCalls()).isPositive();
            assertThat(staged).as("the new weights matter").isNotEqualTo(before);
            first.setResident(all(E, true));
            plan.execute();
            assertThat(first.backingStoreBytes()).isZero();
            assertThat(floats(plan, 1)).as("staged weights were refreshed after weightsChanged").containsExactly(staged);
        }
    }

    /** The buffer of layer 1's gate weights, input 3 of its expert step. */
    private static MemorySegment gateBuffer(Model m) {
        dev.kiln.ir.UOp u = m.y1.uop().toposort().stream().filter(n -> n.op() == dev.kiln.ir.Op.CUSTOM).findFirst().orElseThrow().src(3);
        while (u.op() == dev.kiln.ir.Op.RESHAPE) u = u.src(0);
        assertThat(u.op()).isEqualTo(dev.kiln.ir.Op.BUFFER);
        return ((dev.kiln.runtime.Buffer) u.arg()).segment();
    }

    @Test
    void everyPlanHasItsOwnStateOverSharedWeights() {
        Model m = Model.build("CPU", 6);
        try (ExecutionPlan a = m.prepare(); ExecutionPlan b = m.prepare()) {
            assertThat(MoeLayers.of(a).getFirst()).isSameAs(MoeLayers.of(a).getFirst());
            assertThat(MoeLayers.of(a).getFirst()).isNotSameAs(MoeLayers.of(b).getFirst());
            MoeLayers.setResidentExperts(a, all(E, false));
            MoeLayers.enableTopkCapture(a, E);
            a.execute();
            b.execute();
            assertThat(floats(a, 1)).containsExactly(floats(b, 1));
            assertThat(MoeLayers.takeResidencyStats(a).orElseThrow().hits()).isZero();
            assertThat(MoeLayers.takeResidencyStats(b).orElseThrow().misses()).isZero();
            assertThat(MoeLayers.takeTopkCapture(a)).isPresent();
            assertThat(MoeLayers.takeTopkCapture(b)).isEmpty();
            assertThat(MoeLayers.of(b).getFirst().resident()).containsOnly(true);
        }
    }

    @Test
    void aWeightChangeDeclaredOnOnePlanRefreshesTheBackingStoreOfEveryPlanSharingTheLayer() {
        Model m = Model.build("CPU", 8);
        try (ExecutionPlan a = m.prepare(); ExecutionPlan b = m.prepare()) {
            MoeLayers.setResidentExperts(b, all(E, false));
            b.execute(); // evicts every routed expert of b with the old weights
            float[] newGate = randn(new Random(9), E * FF * D, 0.5);
            MemorySegment.copy(newGate, 0, gateBuffer(m), ValueLayout.JAVA_FLOAT, 0, newGate.length);
            MoeLayers.weightsChanged(a);
            a.execute();
            b.execute();
            assertThat(floats(b, 1)).containsExactly(floats(a, 1));
        }
    }

    @Test
    void aPlanWithoutMoeLayersHasNothingToReport() {
        try (ExecutionPlan plan = Tensor.of(1f, 2f).add(1).prepare()) {
            assertThat(MoeLayers.of(plan)).isEmpty();
            assertThat(MoeLayers.enableTopkCapture(plan, 4)).isFalse();
            assertThat(MoeLayers.takeTopkCapture(plan)).isEmpty();
            assertThat(MoeLayers.takeResidencyStats(plan)).isEmpty();
            MoeLayers.setResidentExpertsPerLayer(plan, new boolean[0][]);
        }
    }

    /** Enough tokens for the expert step to split across the worker pool; checked against a dense double-precision reference. */
    @Test
    void aLargeLayerMatchesADenseReferenceWhateverTheMask() {
        int t = 256, d = 32, ff = 48, e = 8, k = 2;
        Random r = new Random(7);
        float[] xs = randn(r, t * d, 1.0);
        Weights w = Weights.random(r, d, ff, e);
        Tensor y = w.apply(on(xs, "CPU", t, d), "CPU", d, ff, e, k);
        try (ExecutionPlan plan = y.prepare()) {
            plan.execute();
            float[] resident = floats(plan, 0);
            MoeLayers.setResidentExperts(plan, randomMask(r, e));
            plan.execute();
            assertThat(floats(plan, 0)).containsExactly(resident);
            int[] routes = topK(xs, w.router, t, d, e, k);
            double[] ref = dense(xs, w, routes, t, d, ff, e, k);
            for (int i = 0; i < ref.length; i++) {
                assertThat((double) resident[i]).as("element " + i).isCloseTo(ref[i], org.assertj.core.data.Offset.offset(1e-5 + 1e-4 * Math.abs(ref[i])));
            }
        }
    }

    /** Output of the routed SwiGLU experts in double precision, weights renormalised over the k. */
    static double[] dense(float[] x, Weights w, int[] routes, int t, int d, int ff, int e, int k) {
        double[] out = new double[t * d];
        for (int tok = 0; tok < t; tok++) {
            double[] logit = new double[e];
            for (int j = 0; j < e; j++) for (int c = 0; c < d; c++) logit[j] += (double) x[tok * d + c] * w.router[c * e + j];
            double sum = 0;
            double[] p = new double[k];
            for (int s = 0; s < k; s++) sum += p[s] = Math.exp(logit[routes[tok * k + s]]);
            for (int s = 0; s < k; s++) {
                int ex = routes[tok * k + s];
                double[] h = new double[ff];
                for (int j = 0; j < ff; j++) {
                    double g = 0, u = 0;
                    for (int c = 0; c < d; c++) {
                        g += (double) w.gate[(ex * ff + j) * d + c] * x[tok * d + c];
                        u += (double) w.up[(ex * ff + j) * d + c] * x[tok * d + c];
                    }
                    h[j] = g / (1 + Math.exp(-g)) * u;
                }
                for (int c = 0; c < d; c++) {
                    double o = 0;
                    for (int j = 0; j < ff; j++) o += (double) w.down[(ex * d + c) * ff + j] * h[j];
                    out[tok * d + c] += p[s] / sum * o;
                }
            }
        }
        return out;
    }
}

package dev.kiln.onnx;

import dev.kiln.Tensor;
import onnx.Onnx.GraphProto;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.Map;

import static dev.kiln.onnx.OnnxTestModels.*;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * The random operators of {@link RandomOnnxOps}: the same values for a seed twice and on INTERP and CPU, and their
 * distributions: sample mean and variance within 5 standard errors of the sample size, and a Kolmogorov-Smirnov or
 * chi-square test at significance 0.001, all with fixed seeds (so a pass or failure is reproducible, and a broken
 * generator fails).
 */
class RandomOnnxOpsTest {
    @TempDir
    Path dir;

    static final int N = 20000;
    /** The Kolmogorov-Smirnov critical value at significance 0.001, over sqrt(n). */
    static final double KS_001 = 1.949;

    /** A model of {@code op} (seeded where {@code seed} is not null) beside Identity(x), so it runs on x's device. */
    private OnnxModel randomModel(String op, Double seed, onnx.Onnx.AttributeProto... attrs) {
        var n = node(op, List.of(), List.of("y"), attrs);
        if (seed != null) n = n.toBuilder().addAttribute(f("seed", seed)).build();
        return load(dir, model(17, GraphProto.newBuilder().addInput(value("x", 1, 1)).addOutput(anyShape("y", 1)).addOutput(anyShape("z", 1))
                .addNode(n).addNode(node("Identity", List.of("x"), List.of("z")))));
    }

    private static Map<String, Tensor> x() { return Map.of("x", Tensor.of(new float[] {0}, 1)); }

    @Test
    void uniformIsReproducibleAcrossRunsAndDevicesAndUniform() {
        OnnxModel m = randomModel("RandomUniform", 3.0, f("low", -2), f("high", 5), ints("shape", N));
        double[] a = run(m, "INTERP", x()).getFirst(), b = run(m, "INTERP", x()).getFirst(), c = run(m, "CPU", x()).getFirst();
        assertThat(b).containsExactly(a);
        assertThat(c).containsExactly(a);
        assertThat(Arrays.stream(a).allMatch(v -> v >= -2 && v < 5)).isTrue();
        double width = 7, mean = 1.5, var = width * width / 12, mu4 = Math.pow(width, 4) / 80;
        assertMoments(a, mean, var, Math.sqrt((mu4 - var * var) / N));
        assertThat(ks(a, v -> Math.min(1, Math.max(0, (v + 2) / width)))).isLessThan(KS_001 / Math.sqrt(N));
    }

    @Test
    void normalHasItsMeanVarianceAndShape() {
        OnnxModel m = randomModel("RandomNormal", 7.0, f("mean", 1), f("scale", 2), ints("shape", 100, N / 100));
        double[] a = run(m, "CPU", x()).getFirst();
        assertThat(a).containsExactly(run(m, "INTERP", x()).getFirst());
        assertMoments(a, 1, 4, 4 * Math.sqrt(2.0 / N));
        assertThat(ks(a, v -> phi((v - 1) / 2))).isLessThan(KS_001 / Math.sqrt(N));
    }

    @Test
    void theKolmogorovSmirnovTestRejectsAWrongDistribution() {
        // the test above can fail: the same draws judged against a normal of another scale are rejected
        double[] a = run(randomModel("RandomNormal", 7.0, f("mean", 1), f("scale", 2), ints("shape", N)), "CPU", x()).getFirst();
        assertThat(ks(a, v -> phi((v - 1) / 2.2))).isGreaterThan(KS_001 / Math.sqrt(N));
    }

    @Test
    void dtypesKeepTheirPrecisionAndTheHalfOpenInterval() {
        var g = GraphProto.newBuilder().addInput(value("x", 1, 1)).addOutput(anyShape("h", 10)).addOutput(anyShape("d", 11)).addOutput(anyShape("z", 1))
                // f16 has 11 bits: without the clamp, values of u just below 1 round up to high itself
                .addNode(node("RandomUniform", List.of(), List.of("h"), i("dtype", 10), f("low", 0), f("high", 1), ints("shape", N), f("seed", 9)))
                .addNode(node("RandomNormal", List.of(), List.of("d"), i("dtype", 11), ints("shape", N), f("seed", 9)))
                .addNode(node("Identity", List.of("x"), List.of("z")));
        List<double[]> out = run(load(dir, model(17, g)), "CPU", x());
        assertThat(Arrays.stream(out.get(0)).max().orElseThrow()).isLessThan(1).isGreaterThan(0.99);
        assertThat(Arrays.stream(out.get(1)).filter(v -> (double) (float) v != v).count()).as("f64 normals drawn in f64").isGreaterThan(N * 9L / 10);
        assertMoments(out.get(1), 0, 1, Math.sqrt(2.0 / N));
        assertThat(RandomOnnxOps.largestBelow(1, dev.kiln.types.DType.F16)).isEqualTo(1 - 0x1p-11);
        assertThat(RandomOnnxOps.largestBelow(0, dev.kiln.types.DType.F16)).isEqualTo(-0x1p-24);
        assertThat(RandomOnnxOps.largestBelow(-1, dev.kiln.types.DType.F16)).isEqualTo(-1 - 0x1p-10);
        assertThat(RandomOnnxOps.largestBelow(0.1, dev.kiln.types.DType.F32)).isEqualTo((double) 0.099999994f);
    }

    @Test
    void unseededNodesDrawDifferentStreamsAndSeedsMatter() {
        var g = GraphProto.newBuilder().addInput(value("x", 1, 1)).addOutput(anyShape("y1", 1)).addOutput(anyShape("y2", 1)).addOutput(anyShape("z", 1))
                .addNode(node("RandomUniform", List.of(), List.of("y1"), ints("shape", 64)))
                .addNode(node("RandomUniform", List.of(), List.of("y2"), ints("shape", 64)))
                .addNode(node("Identity", List.of("x"), List.of("z")));
        List<double[]> out = run(load(dir, model(17, g)), "CPU", x());
        assertThat(out.get(0)).isNotEqualTo(out.get(1));
        double[] s1 = run(randomModel("RandomUniform", 1.0, ints("shape", 64)), "CPU", x()).getFirst();
        double[] s2 = run(randomModel("RandomUniform", 2.0, ints("shape", 64)), "CPU", x()).getFirst();
        assertThat(s1).isNotEqualTo(s2);
    }

    @Test
    void bernoulliDrawsEachProbability() {
        OnnxModel m = load(dir, model(15, GraphProto.newBuilder().addInput(value("p", 11, N)).addOutput(anyShape("y", 11))
                .addNode(node("Bernoulli", List.of("p"), List.of("y"), f("seed", 5)))));
        double[] p = new double[N];
        for (int k = 0; k < N; k++) p[k] = k % 2 == 0 ? 0.3 : 0.9;
        double[] y = run(m, "INTERP", Map.of("p", Tensor.of(p, N))).getFirst();
        assertThat(y).containsExactly(run(m, "CPU", Map.of("p", Tensor.of(p, N))).getFirst());
        double even = 0, odd = 0;
        for (int k = 0; k < N; k++) {
            assertThat(y[k]).isIn(0.0, 1.0);
            if (k % 2 == 0) even += y[k]; else odd += y[k];
        }
        int half = N / 2;
        assertThat(Math.abs(even / half - 0.3)).isLessThan(5 * Math.sqrt(0.3 * 0.7 / half));
        assertThat(Math.abs(odd / half - 0.9)).isLessThan(5 * Math.sqrt(0.9 * 0.1 / half));
    }

    @Test
    void multinomialFollowsTheSoftmaxOfItsLogProbabilities() {
        double[] probs = {0.1, 0.2, 0.3, 0.4};
        double[] logits = Arrays.stream(probs).map(q -> Math.log(q) + 7).toArray(); // unnormalised: softmax removes the 7
        OnnxModel m = load(dir, model(17, GraphProto.newBuilder().addInput(value("x", 11, 1, 4)).addOutput(anyShape("y", 7))
                .addNode(node("Multinomial", List.of("x"), List.of("y"), i("sample_size", N), i("dtype", 7), f("seed", 11)))));
        Map<String, Tensor> in = Map.of("x", Tensor.of(logits, 1, 4));
        double[] y = run(m, "CPU", in).getFirst();
        assertThat(y).hasSize(N).containsExactly(run(m, "INTERP", in).getFirst());
        long[] counts = new long[4];
        for (double v : y) counts[(int) v]++;
        double chi2 = 0;
        for (int k = 0; k < 4; k++) chi2 += Math.pow(counts[k] - N * probs[k], 2) / (N * probs[k]);
        assertThat(chi2).as("chi-square, 3 degrees of freedom, critical 16.27 at 0.001").isLessThan(16.27);
    }

    @Test
    void trainingDropoutScalesTheKeptElementsAndReportsTheMask() {
        OnnxModel m = load(dir, model(13, GraphProto.newBuilder().addInput(value("x", 1, N)).addInput(value("r", 1, 1)).addInput(value("t", 9, 1))
                .addOutput(anyShape("y", 1)).addOutput(anyShape("mask", 9))
                .addNode(node("Dropout", List.of("x", "r", "t"), List.of("y", "mask"), i("seed", 4)))));
        float[] x = new float[N];
        for (int k = 0; k < N; k++) x[k] = 1 + k % 7;
        Map<String, Tensor> in = Map.of("x", Tensor.of(x, N), "r", Tensor.of(new float[] {0.25f}, 1), "t", Tensor.of(new boolean[] {true}, 1));
        List<double[]> out = run(m, "CPU", in);
        assertThat(out.get(0)).containsExactly(run(m, "INTERP", in).get(0));
        double kept = 0;
        for (int k = 0; k < N; k++) {
            kept += out.get(1)[k];
            assertThat(out.get(0)[k]).isCloseTo(x[k] * out.get(1)[k] / 0.75, org.assertj.core.data.Offset.offset(1e-5));
        }
        assertThat(Math.abs(kept / N - 0.75)).isLessThan(5 * Math.sqrt(0.75 * 0.25 / N));
    }

    @Test
    void badAttributesAreTypedErrorsNamingTheNode() {
        // refused when the model loads: the dtype is an attribute
        assertThatThrownBy(() -> randomModel("RandomUniform", 1.0, i("dtype", 6), ints("shape", 2)))
                .isInstanceOf(UnsupportedOnnxOpException.class).hasMessageContaining("RandomUniform").hasMessageContaining("at node 'n'").hasMessageContaining("i32");
        assertThatThrownBy(() -> load(dir, model(17, GraphProto.newBuilder().addInput(value("x", 1, 1, 2)).addOutput(anyShape("y", 1))
                .addNode(node("Multinomial", List.of("x"), List.of("y"), i("dtype", 1))))))
                .isInstanceOf(UnsupportedOnnxOpException.class).hasMessageContaining("Multinomial").hasMessageContaining("f32");
        assertThatThrownBy(() -> randomModel("RandomUniform", 1.0).run(x())).isInstanceOf(OnnxFormatException.class).hasMessageContaining("shape");
        var bad = GraphProto.newBuilder().addInput(value("x", 1, 4)).addOutput(anyShape("y", 1))
                .addInitializer(onnx.Onnx.TensorProto.newBuilder().setName("r").setDataType(1).addFloatData(1.5f))
                .addInitializer(onnx.Onnx.TensorProto.newBuilder().setName("t").setDataType(9).addInt32Data(1))
                .addNode(node("Dropout", List.of("x", "r", "t"), List.of("y")));
        assertThatThrownBy(() -> load(dir, model(13, bad)).run(Map.of("x", Tensor.of(new float[4], 4))))
                .isInstanceOf(OnnxFormatException.class).hasMessageContaining("Dropout node 'n'").hasMessageContaining("1.5");
    }

    private static void assertMoments(double[] a, double mean, double var, double varError) {
        double m = Arrays.stream(a).average().orElseThrow();
        double v = Arrays.stream(a).map(x -> (x - m) * (x - m)).sum() / (a.length - 1);
        assertThat(Math.abs(m - mean)).as("sample mean " + m).isLessThan(5 * Math.sqrt(var / a.length));
        assertThat(Math.abs(v - var)).as("sample variance " + v).isLessThan(5 * varError);
    }

    /** The Kolmogorov-Smirnov statistic of the sample against the CDF. */
    private static double ks(double[] sample, java.util.function.DoubleUnaryOperator cdf) {
        double[] s = sample.clone();
        Arrays.sort(s);
        double d = 0;
        for (int k = 0; k < s.length; k++) {
            double f = cdf.applyAsDouble(s[k]);
            d = Math.max(d, Math.max((k + 1.0) / s.length - f, f - (double) k / s.length));
        }
        return d;
    }

    /** The standard normal CDF (Abramowitz and Stegun 7.1.26 for erf, error below 1.5e-7). */
    private static double phi(double z) {
        double x = Math.abs(z) / Math.sqrt(2), t = 1 / (1 + 0.3275911 * x);
        double erf = 1 - t * (0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429)))) * Math.exp(-x * x);
        return z >= 0 ? (1 + erf) / 2 : (1 - erf) / 2;
    }
}

package dev.kiln.onnx;

import dev.kiln.Tensor;
import dev.kiln.runtime.DeviceRegistry;
import dev.kiln.runtime.PreparedKernel;
import onnx.Onnx.AttributeProto;
import onnx.Onnx.GraphProto;
import onnx.Onnx.ModelProto;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.junit.jupiter.api.Test;

import java.util.List;
import java.util.Map;

import static dev.kiln.onnx.OnnxPlanTest.floats;
import static dev.kiln.onnx.OnnxPlanTest.node;
import static dev.kiln.onnx.OnnxPlanTest.value;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

/**
 * Conv followed by an inference BatchNormalization with constant operands runs as one Conv with folded weights
 * and bias, and computes what the two nodes define (checked against a direct evaluation in double); pairs that
 * would change the model's meaning are left as they are.
 */
class ConvBatchNormFoldingTest {
    private static final int CI = 2, CO = 3, H = 5, K = 3;
    private static final float[] W = OnnxPlanTest.data(CO * CI * K * K, 1), B = {0.1f, -0.2f, 0.3f};
    private static final float[] SCALE = {1.5f, -0.5f, 2f}, SHIFT = {0.25f, 0.5f, -1f}, MEAN = {0.3f, -0.1f, 0.2f}, VAR = {0.5f, 2f, 0.05f};
    private static final float EPS = 1e-3f;

    private static AttributeProto ints(String name, long... v) {
        AttributeProto.Builder a = AttributeProto.newBuilder().setName(name).setType(AttributeProto.AttributeType.INTS);
        for (long x : v) a.addInts(x);
        return a.build();
    }

    /** x -> Conv(W, B, pads 1) -> BatchNormalization -> Relu -> y, with extra outputs or readers as asked. */
    private static ModelProto model(boolean convIsOutput, boolean secondReader, boolean paramsAreInputs) {
        GraphProto.Builder g = GraphProto.newBuilder().setName("g")
                .addInitializer(floats("W", new int[] {CO, CI, K, K}, W)).addInitializer(floats("B", new int[] {CO}, B))
                .addInput(value("x", 1, CI, H, H)).addOutput(value("y", 1, CO, H, H))
                .addNode(node("Conv", List.of("x", "W", "B"), List.of("c"), ints("pads", 1, 1, 1, 1)))
                .addNode(node("BatchNormalization", List.of("c", "s", "t", "m", "v"), List.of("n"),
                        AttributeProto.newBuilder().setName("epsilon").setType(AttributeProto.AttributeType.FLOAT).setF(EPS).build()))
                .addNode(node("Relu", List.of("n"), List.of("y")));
        float[][] params = {SCALE, SHIFT, MEAN, VAR};
        String[] names = {"s", "t", "m", "v"};
        for (int k = 0; k < 4; k++) {
            if (paramsAreInputs) g.addInput(value(names[k], CO));
            else g.addInitializer(floats(names[k], new int[] {CO}, params[k]));
        }
        if (convIsOutput) g.addOutput(value("c", 1, CO, H, H));
        if (secondReader) g.addNode(node("Neg", List.of("c"), List.of("z"))).addOutput(value("z", 1, CO, H, H));
        return OnnxPlanTest.model(g);
    }

    /** relu(bn(conv(x))) computed directly, in double. */
    private static double[] expected(float[] x) {
        double[] out = new double[CO * H * H];
        for (int co = 0; co < CO; co++) {
            for (int i = 0; i < H; i++) {
                for (int j = 0; j < H; j++) {
                    double acc = B[co];
                    for (int ci = 0; ci < CI; ci++) {
                        for (int a = 0; a < K; a++) {
                            for (int b = 0; b < K; b++) {
                                int r = i + a - 1, c = j + b - 1;
                                if (r >= 0 && r < H && c >= 0 && c < H) acc += (double) x[(ci * H + r) * H + c] * W[((co * CI + ci) * K + a) * K + b];
                            }
                        }
                    }
                    double n = (acc - MEAN[co]) / Math.sqrt(VAR[co] + (double) EPS) * SCALE[co] + SHIFT[co];
                    out[(co * H + i) * H + j] = Math.max(n, 0);
                }
            }
        }
        return out;
    }

    private static boolean computesASquareRoot(OnnxPlan plan) {
        return plan.plan().kernels().stream().map(PreparedKernel::source).anyMatch(s -> s.contains("sqrt"));
    }

    /**
     * Weights large enough to be scaled by channels side by side on the workers get each element's one rounding of
     * {@code w * scale / sqrt(var + eps)} (the scale in double), bit for bit, into new storage or in place.
     */
    @ParameterizedTest
    @ValueSource(booleans = {false, true})
    void largeWeightsAreScaledPerChannelBitForBit(boolean inPlace) {
        int channels = 70, per = 1000;
        float[] w = OnnxPlanTest.data(channels * per, 3), sc = OnnxPlanTest.data(channels, 4), bi = OnnxPlanTest.data(channels, 5),
                mu = OnnxPlanTest.data(channels, 6), va = new float[channels];
        for (int c = 0; c < channels; c++) va[c] = 0.5f + c;
        Tensor[] folded = ConvBatchNormFolding.fold(Tensor.of(w, channels, 10, 10, 10), null, Tensor.of(sc, channels), Tensor.of(bi, channels),
                Tensor.of(mu, channels), Tensor.of(va, channels), EPS, inPlace);
        float[] got = folded[0].toFloatArray();
        for (int c = 0; c < channels; c++) {
            double s = sc[c] / Math.sqrt(va[c] + (double) EPS);
            for (int k = 0; k < per; k++) {
                int i = c * per + k;
                assertThat(Float.floatToRawIntBits(got[i])).as("element %d", i).isEqualTo(Float.floatToRawIntBits((float) (w[i] * s)));
            }
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"INTERP", "CPU"})
    void aConvAndItsBatchNormRunAsOneConvWithTheSameValues(String device) {
        OnnxModel m = OnnxModel.fromProto(model(false, false, false), "test");
        float[] x = OnnxPlanTest.data(CI * H * H, 2);
        try (OnnxPlan plan = m.prepare(DeviceRegistry.get(device), Map.of())) {
            List<Tensor> out = plan.run(Map.of("x", Tensor.of(x, 1, CI, H, H)));
            float[] got = out.getFirst().toFloatArray();
            double[] want = expected(x);
            for (int i = 0; i < want.length; i++) assertThat((double) got[i]).as("element %d", i).isCloseTo(want[i], within(1e-5 * (1 + Math.abs(want[i]))));
            if (device.equals("CPU")) assertThat(computesASquareRoot(plan)).as("the batch norm is folded into the weights").isFalse();
        }
    }

    @Test
    void pairsThatWouldChangeTheModelAreNotFolded() {
        float[] x = OnnxPlanTest.data(CI * H * H, 3);
        for (boolean[] c : new boolean[][] {{true, false, false}, {false, true, false}, {false, false, true}}) {
            OnnxModel m = OnnxModel.fromProto(model(c[0], c[1], c[2]), "test");
            Map<String, Tensor> feeds = new java.util.HashMap<>(Map.of("x", Tensor.of(x, 1, CI, H, H)));
            if (c[2]) {
                feeds.put("s", Tensor.of(SCALE, CO));
                feeds.put("t", Tensor.of(SHIFT, CO));
                feeds.put("m", Tensor.of(MEAN, CO));
                feeds.put("v", Tensor.of(VAR, CO));
            }
            try (OnnxPlan plan = m.prepare(DeviceRegistry.get("CPU"), Map.of())) {
                float[] got = plan.run(feeds).getFirst().toFloatArray();
                double[] want = expected(x);
                for (int i = 0; i < want.length; i++) assertThat((double) got[i]).isCloseTo(want[i], within(1e-5 * (1 + Math.abs(want[i]))));
                assertThat(computesASquareRoot(plan)).as("case %s: the batch norm stays", java.util.Arrays.toString(c)).isTrue();
            }
        }
    }
    /**
     * Weights a ConstantOfShape makes are scaled in place (ResNet-50 light's 100 MB need no second copy), and only
     * when nothing else reads them: a second Conv over the same weights, or the model's next run (which builds them
     * again), sees the weights as the file defines them.
     */
    @Test
    void weightsAConstantOfShapeMakesFoldInPlaceOnlyWhenTheConvAloneReadsThem() {
        float fill = 0.25f;
        for (boolean shared : new boolean[] {false, true}) {
            GraphProto.Builder g = GraphProto.newBuilder().setName("g")
                    .addInitializer(onnx.Onnx.TensorProto.newBuilder().setName("shape").setDataType(onnx.Onnx.TensorProto.DataType.INT64_VALUE)
                            .addDims(4).addInt64Data(CO).addInt64Data(CI).addInt64Data(K).addInt64Data(K).build())
                    .addInput(value("x", 1, CI, H, H)).addOutput(value("y", 1, CO, H, H))
                    .addNode(node("ConstantOfShape", List.of("shape"), List.of("W"), AttributeProto.newBuilder().setName("value")
                            .setType(AttributeProto.AttributeType.TENSOR).setT(floats("", new int[] {1}, fill)).build()))
                    .addNode(node("Conv", List.of("x", "W"), List.of("c"), ints("pads", 1, 1, 1, 1)))
                    .addNode(node("BatchNormalization", List.of("c", "s", "t", "m", "v"), List.of("y"),
                            AttributeProto.newBuilder().setName("epsilon").setType(AttributeProto.AttributeType.FLOAT).setF(EPS).build()));
            float[][] params = {SCALE, SHIFT, MEAN, VAR};
            String[] names = {"s", "t", "m", "v"};
            for (int k = 0; k < 4; k++) g.addInitializer(floats(names[k], new int[] {CO}, params[k]));
            if (shared) g.addNode(node("Conv", List.of("x", "W"), List.of("z"), ints("pads", 1, 1, 1, 1))).addOutput(value("z", 1, CO, H, H));
            OnnxModel m = OnnxModel.fromProto(OnnxPlanTest.model(g), "test");
            float[] x = OnnxPlanTest.data(CI * H * H, 4);
            for (int run = 0; run < 2; run++) {
                List<Tensor> out = m.run(Map.of("x", Tensor.of(x, 1, CI, H, H)));
                float[] y = out.getFirst().toFloatArray();
                float[] z = shared ? out.get(1).toFloatArray() : null;
                for (int co = 0; co < CO; co++) {
                    for (int i = 0; i < H; i++) {
                        for (int j = 0; j < H; j++) {
                            double acc = 0;
                            for (int ci = 0; ci < CI; ci++) {
                                for (int a = 0; a < K; a++) {
                                    for (int b = 0; b < K; b++) {
                                        int r = i + a - 1, c = j + b - 1;
                                        if (r >= 0 && r < H && c >= 0 && c < H) acc += (double) x[(ci * H + r) * H + c] * fill;
                                    }
                                }
                            }
                            int at = (co * H + i) * H + j;
                            double want = (acc - MEAN[co]) / Math.sqrt(VAR[co] + (double) EPS) * SCALE[co] + SHIFT[co];
                            assertThat((double) y[at]).as("shared %s, run %d, y[%d]", shared, run, at).isCloseTo(want, within(1e-5 * (1 + Math.abs(want))));
                            if (z != null) assertThat((double) z[at]).as("run %d, z[%d]: the unfolded Conv's weights", run, at).isCloseTo(acc, within(1e-5 * (1 + Math.abs(acc))));
                        }
                    }
                }
            }
        }
    }
}

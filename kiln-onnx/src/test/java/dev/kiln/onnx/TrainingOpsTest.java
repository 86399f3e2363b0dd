package dev.kiln.onnx;

import dev.kiln.Tensor;
import onnx.Onnx.GraphProto;
import onnx.Onnx.ModelProto;
import onnx.Onnx.OperatorSetIdProto;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import static dev.kiln.onnx.OnnxTestModels.*;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.data.Offset.offset;

/** The ai.onnx.preview.training optimizers against values computed here from ONNX's update rules. */
class TrainingOpsTest {
    @TempDir
    Path dir;

    private OnnxModel optimizer(String op, int groups, int outs, int n, onnx.Onnx.AttributeProto... attrs) {
        var g = GraphProto.newBuilder().addInput(value("R", 1)).addInput(value("T", 7));
        List<String> in = new ArrayList<>(List.of("R", "T"));
        for (int k = 0; k < groups * n; k++) {
            g.addInput(value("in" + k, 1, 2));
            in.add("in" + k);
        }
        List<String> out = new ArrayList<>();
        for (int k = 0; k < outs * n; k++) {
            g.addOutput(anyShape("out" + k, 1));
            out.add("out" + k);
        }
        var node = node(op, in, out, attrs).toBuilder().setDomain("ai.onnx.preview.training").build();
        ModelProto m = model(17, g.addNode(node)).toBuilder()
                .addOpsetImport(OperatorSetIdProto.newBuilder().setDomain("ai.onnx.preview.training").setVersion(1)).build();
        return load(dir, m);
    }

    private static Map<String, Tensor> inputs(float r, long t, float[]... tensors) {
        Map<String, Tensor> in = new LinkedHashMap<>();
        in.put("R", Tensor.scalar(r, dev.kiln.types.DType.F32));
        in.put("T", Tensor.scalar(t, dev.kiln.types.DType.I64));
        for (int k = 0; k < tensors.length; k++) in.put("in" + k, Tensor.of(tensors[k], 2));
        return in;
    }

    @Test
    void adamWithEpsilonReproducesOnnxsMultipleTensorReference() {
        // ONNX's test_adam_multiple reference was computed with epsilon 1e-2 (its model omits the attribute): given it, Kiln matches
        OnnxModel m = optimizer("Adam", 4, 3, 1, f("alpha", 0.95), f("beta", 0.85), f("norm_coefficient", 0.001), f("epsilon", 1e-2));
        List<double[]> out = run(m, "CPU", inputs(0.1f, 0, new float[] {1, 2}, new float[] {-1, -3}, new float[] {4, 1}, new float[] {1, 10}));
        assertThat(out.get(0)[1]).isCloseTo(1.9745853, offset(1e-6));
        assertThat(out.get(1)).containsExactly(new double[] {3.75005, 0.80009997}, offset(1e-6));
        assertThat(out.get(2)).containsExactly(new double[] {0.9997002, 9.848201}, offset(1e-5));
    }

    @Test
    void adamCorrectsBiasOnceTIsPositive() {
        double alpha = 0.9, beta = 0.999, eps = 1e-6, r = 0.01;
        OnnxModel m = optimizer("Adam", 4, 3, 1);
        float[] x = {1, -2}, g = {0.5f, 0.25f}, v = {0.1f, 0.2f}, h = {0.01f, 0.02f};
        double[] got = run(m, "INTERP", inputs((float) r, 3, x, g, v, h)).getFirst();
        for (int k = 0; k < 2; k++) {
            double vn = alpha * v[k] + (1 - alpha) * g[k], hn = beta * h[k] + (1 - beta) * g[k] * g[k];
            double rAdj = r * Math.sqrt(1 - Math.pow(beta, 3)) / (1 - Math.pow(alpha, 3));
            assertThat(got[k]).isCloseTo(x[k] - rAdj * vn / (Math.sqrt(hn) + eps), offset(1e-5));
        }
    }

    @Test
    void momentumStandardAndNesterovAndAdagradDecay() {
        float[] x = {1, 2}, g = {0.5f, -1}, v = {0.25f, 0.5f};
        for (String mode : List.of("standard", "nesterov")) {
            OnnxModel m = optimizer("Momentum", 3, 2, 1, f("alpha", 0.9), f("beta", 0.1), f("norm_coefficient", 0.01), s("mode", mode));
            for (long t : new long[] {0, 4}) {
                double[] got = run(m, "CPU", inputs(0.5f, t, x, g, v)).getFirst();
                for (int k = 0; k < 2; k++) {
                    double gr = 0.01 * x[k] + g[k], vn = 0.9 * v[k] + (t > 0 ? 0.1 : 1) * gr;
                    double want = mode.equals("standard") ? x[k] - 0.5 * vn : x[k] - 0.5 * (gr + 0.9 * vn);
                    assertThat(got[k]).as(mode + " T=" + t).isCloseTo(want, offset(1e-6));
                }
            }
        }
        OnnxModel a = optimizer("Adagrad", 3, 2, 1, f("decay_factor", 0.1), f("epsilon", 1e-5));
        double[] got = run(a, "CPU", inputs(0.5f, 10, x, g, v)).getFirst();
        for (int k = 0; k < 2; k++) {
            double hn = v[k] + g[k] * g[k];
            assertThat(got[k]).isCloseTo(x[k] - 0.5 / (1 + 10 * 0.1) * g[k] / (Math.sqrt(hn) + 1e-5), offset(1e-6));
        }
    }

    @Test
    void badNodesAreTypedErrors() {
        assertThatThrownBy(() -> optimizer("Momentum", 3, 2, 1, f("alpha", 0.9), f("beta", 0.1), f("norm_coefficient", 0), s("mode", "heavy"))
                .run(inputs(0.5f, 1, new float[2], new float[2], new float[2]))).isInstanceOf(UnsupportedOnnxOpException.class).hasMessageContaining("heavy");
        assertThatThrownBy(() -> optimizer("Momentum", 3, 2, 1, f("alpha", 0.9)).run(inputs(0.5f, 1, new float[2], new float[2], new float[2])))
                .isInstanceOf(OnnxFormatException.class).hasMessageContaining("Momentum node 'n'").hasMessageContaining("beta");
    }
}

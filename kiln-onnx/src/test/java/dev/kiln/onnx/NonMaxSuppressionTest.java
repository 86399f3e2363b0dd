package dev.kiln.onnx;

import dev.kiln.Tensor;
import onnx.Onnx.GraphProto;
import onnx.Onnx.TensorProto;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;

import static dev.kiln.onnx.OnnxTestModels.*;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** NonMaxSuppression against a brute-force reference written here independently, and its typed errors. */
class NonMaxSuppressionTest {
    @TempDir
    Path dir;

    private OnnxModel nms(int batches, int classes, int n, long centerPoint, long max, float iou, Float score) {
        var g = GraphProto.newBuilder().addInput(value("boxes", 1, batches, n, 4)).addInput(value("scores", 1, batches, classes, n))
                .addOutput(anyShape("sel", 7))
                .addInitializer(TensorProto.newBuilder().setName("max").setDataType(7).addInt64Data(max))
                .addInitializer(TensorProto.newBuilder().setName("iou").setDataType(1).addFloatData(iou));
        List<String> in = new ArrayList<>(List.of("boxes", "scores", "max", "iou"));
        if (score != null) {
            g.addInitializer(TensorProto.newBuilder().setName("score").setDataType(1).addFloatData(score));
            in.add("score");
        }
        return load(dir, model(11, g.addNode(node("NonMaxSuppression", in, List.of("sel"), i("center_point_box", centerPoint)))));
    }

    /**
     * The reference: for each batch and class, repeatedly take the best remaining box (lowest index on ties) above the
     * score threshold, and drop every remaining box overlapping it by more than the IoU threshold.
     */
    static List<long[]> reference(float[] boxes, float[] scores, int batches, int classes, int n, boolean center, long max, double iouT, Float scoreT) {
        List<long[]> out = new ArrayList<>();
        for (int b = 0; b < batches; b++) {
            for (int c = 0; c < classes; c++) {
                boolean[] alive = new boolean[n];
                for (int i = 0; i < n; i++) alive[i] = scoreT == null || scores[(b * classes + c) * n + i] > scoreT;
                for (int taken = 0; taken < max; taken++) {
                    int best = -1;
                    for (int i = 0; i < n; i++) if (alive[i] && (best < 0 || scores[(b * classes + c) * n + i] > scores[(b * classes + c) * n + best])) best = i;
                    if (best < 0) break;
                    out.add(new long[] {b, c, best});
                    alive[best] = false;
                    double[] p = corners(boxes, b * n + best, center);
                    for (int i = 0; i < n; i++) if (alive[i] && iou(p, corners(boxes, b * n + i, center)) > iouT) alive[i] = false;
                }
            }
        }
        return out;
    }

    /** {y1, x1, y2, x2} with y1 <= y2, x1 <= x2. */
    private static double[] corners(float[] v, int k, boolean center) {
        double a = v[4 * k], b = v[4 * k + 1], c = v[4 * k + 2], d = v[4 * k + 3];
        if (center) return new double[] {b - d / 2, a - c / 2, b + d / 2, a + c / 2};
        return new double[] {Math.min(a, c), Math.min(b, d), Math.max(a, c), Math.max(b, d)};
    }

    private static double iou(double[] p, double[] q) {
        double ap = (p[2] - p[0]) * (p[3] - p[1]), aq = (q[2] - q[0]) * (q[3] - q[1]);
        if (ap <= 0 || aq <= 0) return 0;
        double h = Math.max(0, Math.min(p[2], q[2]) - Math.max(p[0], q[0])), w = Math.max(0, Math.min(p[3], q[3]) - Math.max(p[1], q[1]));
        return h * w / (ap + aq - h * w);
    }

    @Test
    void matchesTheReferenceOnRandomBoxesInBothFormats() {
        Random rnd = new Random(17);
        int batches = 2, classes = 3, n = 40;
        for (int trial = 0; trial < 6; trial++) {
            boolean center = trial % 2 == 1;
            float[] boxes = new float[batches * n * 4], scores = new float[batches * classes * n];
            for (int k = 0; k < batches * n; k++) {
                float a = rnd.nextFloat() * 10, b = rnd.nextFloat() * 10, w = 0.5f + rnd.nextFloat() * 4, h = 0.5f + rnd.nextFloat() * 4;
                float[] box = center ? new float[] {a, b, w, h} : rnd.nextBoolean() ? new float[] {a, b, a + h, b + w} : new float[] {a + h, b + w, a, b};
                System.arraycopy(box, 0, boxes, 4 * k, 4);
            }
            // a few exact ties: the lower index must come first
            for (int k = 0; k < scores.length; k++) scores[k] = k % 9 == 0 ? 0.5f : rnd.nextFloat();
            long max = trial < 2 ? 100 : 3 + trial;
            float iouT = 0.2f + 0.1f * trial;
            Float scoreT = trial % 3 == 0 ? null : 0.3f;
            OnnxModel m = nms(batches, classes, n, center ? 1 : 0, max, iouT, scoreT);
            List<long[]> want = reference(boxes, scores, batches, classes, n, center, max, iouT, scoreT);
            for (String device : List.of("INTERP", "CPU")) {
                Map<String, Tensor> in = Map.of("boxes", Tensor.of(boxes, batches, n, 4), "scores", Tensor.of(scores, batches, classes, n));
                Map<String, Tensor> on = new java.util.HashMap<>();
                in.forEach((k, v) -> on.put(k, v.to(device).realize()));
                Tensor sel = m.run(on).getFirst().realize();
                assertThat(sel.dims()).containsExactly(want.size(), 3);
                long[] got = sel.toLongArray();
                for (int k = 0; k < want.size(); k++) {
                    assertThat(new long[] {got[3 * k], got[3 * k + 1], got[3 * k + 2]}).as("trial " + trial + " row " + k + " on " + device).containsExactly(want.get(k));
                }
            }
        }
    }

    /**
     * Boxes of a symbolic count in one prepared plan: the selection reads each run's boxes at their count (never the rows
     * past it, which hold the last longer run's boxes here), against the reference.
     */
    @Test
    void aPreparedPlanSelectsAmongEachRunsBoxes() {
        var g = GraphProto.newBuilder().addInput(OnnxPlanTest.value("boxes", 1, "n", 4)).addInput(OnnxPlanTest.value("scores", 1, 2, "n"))
                .addOutput(anyShape("sel", 7))
                .addInitializer(TensorProto.newBuilder().setName("max").setDataType(7).addInt64Data(2))
                .addInitializer(TensorProto.newBuilder().setName("iou").setDataType(1).addFloatData(0.4f))
                .addNode(node("NonMaxSuppression", List.of("boxes", "scores", "max", "iou"), List.of("sel")));
        OnnxModel m = load(dir, model(11, g));
        Random rnd = new Random(3);
        for (String device : List.of("INTERP", "CPU")) {
            try (OnnxPlan plan = m.prepare(dev.kiln.runtime.DeviceRegistry.get(device), Map.of("n", 8))) {
                for (int n : new int[] {8, 3, 5, 1}) {
                    float[] boxes = new float[n * 4], scores = new float[2 * n];
                    for (int k = 0; k < n; k++) System.arraycopy(new float[] {k * 0.5f, 0, k * 0.5f + 1, 1}, 0, boxes, 4 * k, 4);
                    for (int k = 0; k < scores.length; k++) scores[k] = rnd.nextFloat();
                    List<long[]> want = reference(boxes, scores, 1, 2, n, false, 2, 0.4, null);
                    Tensor sel = plan.run(Map.of("boxes", Tensor.of(boxes, 1, n, 4), "scores", Tensor.of(scores, 1, 2, n))).getFirst();
                    assertThat(sel.dims()).as("%d boxes on %s", n, device).containsExactly(want.size(), 3);
                    long[] got = sel.toLongArray();
                    for (int k = 0; k < want.size(); k++) assertThat(new long[] {got[3 * k], got[3 * k + 1], got[3 * k + 2]}).containsExactly(want.get(k));
                }
            }
        }
    }

    @Test
    void zeroMaxSelectsNothing() {
        OnnxModel m = nms(1, 1, 2, 0, 0, 0.5f, null);
        Tensor sel = m.run(Map.of("boxes", Tensor.of(new float[] {0, 0, 1, 1, 0, 0, 2, 2}, 1, 2, 4), "scores", Tensor.of(new float[] {0.9f, 0.8f}, 1, 1, 2)))
                .getFirst().realize();
        assertThat(sel.dims()).containsExactly(0, 3);
    }

    @Test
    void badInputsAreTypedErrorsNamingTheNodeAndValue() {
        Map<String, Tensor> in = Map.of("boxes", Tensor.of(new float[8], 1, 2, 4), "scores", Tensor.of(new float[2], 1, 1, 2));
        assertThatThrownBy(() -> nms(1, 1, 2, 0, 5, 1.5f, null).run(in)).isInstanceOf(OnnxFormatException.class)
                .hasMessageContaining("NonMaxSuppression node 'n'").hasMessageContaining("iou_threshold").hasMessageContaining("1.5");
        assertThatThrownBy(() -> nms(1, 1, 2, 2, 5, 0.5f, null).run(in)).isInstanceOf(OnnxFormatException.class).hasMessageContaining("center_point_box");
        assertThatThrownBy(() -> nms(1, 1, 2, 0, -1, 0.5f, null).run(in)).isInstanceOf(OnnxFormatException.class).hasMessageContaining("-1");
        var rank2 = GraphProto.newBuilder().addInput(value("boxes", 1, 2, 4)).addInput(value("scores", 1, 1, 1, 2)).addOutput(anyShape("sel", 7))
                .addNode(node("NonMaxSuppression", List.of("boxes", "scores"), List.of("sel")));
        assertThatThrownBy(() -> load(dir, model(11, rank2)).run(Map.of("boxes", Tensor.of(new float[8], 2, 4), "scores", Tensor.of(new float[2], 1, 1, 2))))
                .isInstanceOf(OnnxFormatException.class).hasMessageContaining("rank 3");
    }
}

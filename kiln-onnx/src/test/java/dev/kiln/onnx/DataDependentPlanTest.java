package dev.kiln.onnx;

import dev.kiln.Tensor;
import dev.kiln.runtime.Device;
import dev.kiln.runtime.DeviceRegistry;
import dev.kiln.runtime.MemoryStats;
import onnx.Onnx.GraphProto;
import onnx.Onnx.NodeProto;
import onnx.Onnx.TensorProto;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Random;

import static dev.kiln.onnx.OnnxTestModels.*;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * Data-dependent output sizes in a prepared {@link OnnxPlan}: NonMaxSuppression, NonZero and Compress make their
 * selection when the plan runs (a sized host step), so ONE plan gives a different number of rows on each run, zero
 * included, and everything downstream (Gather) follows that count; against references written here.
 */
class DataDependentPlanTest {
    @TempDir
    Path dir;

    private static Device device(String name) {
        var unavailable = DeviceRegistry.providers().get(name).unavailableReason();
        Assumptions.assumeTrue(unavailable.isEmpty(), () -> name + " unavailable: " + unavailable.orElse(""));
        return DeviceRegistry.get(name);
    }

    private static NodeProto named(String name, String op, List<String> in, List<String> out, onnx.Onnx.AttributeProto... attrs) {
        return node(op, in, out, attrs).toBuilder().setName(name).build();
    }

    private static Tensor on(Device d, Tensor t) { return t.to(d).realize(); }

    /**
     * A detector's tail: boxes [1, N, 4] and scores [1, C, N] in, NonMaxSuppression with constant limits (or the maximum a
     * graph input), then the kept boxes gathered as detectors do ({@code selected[:, 2]}, Gather of boxes[0]), and the
     * number of detections as exporters compute it ({@code Shape(selected)[0]}: a value the plan computes when it runs).
     */
    private OnnxModel detector(int classes, int n, boolean maxIsInput) {
        var g = GraphProto.newBuilder().addInput(value("boxes", 1, 1, n, 4)).addInput(value("scores", 1, 1, classes, n))
                .addOutput(anyShape("selected", 7)).addOutput(anyShape("kept_boxes", 1)).addOutput(anyShape("count", 7))
                .addInitializer(TensorProto.newBuilder().setName("iou").setDataType(1).addFloatData(0.5f))
                .addInitializer(TensorProto.newBuilder().setName("score").setDataType(1).addFloatData(0.25f))
                .addInitializer(TensorProto.newBuilder().setName("two").setDataType(7).addInt64Data(2))
                .addInitializer(TensorProto.newBuilder().setName("zero").setDataType(7).addInt64Data(0));
        if (maxIsInput) g.addInput(value("max", 7, 1));
        else g.addInitializer(TensorProto.newBuilder().setName("max").setDataType(7).addDims(1).addInt64Data(3));
        g.addNode(named("nms", "NonMaxSuppression", List.of("boxes", "scores", "max", "iou", "score"), List.of("selected")))
                .addNode(named("col", "Gather", List.of("selected", "two"), List.of("box_index"), i("axis", 1)))
                .addNode(named("batch0", "Gather", List.of("boxes", "zero"), List.of("boxes0"), i("axis", 0)))
                .addNode(named("pick", "Gather", List.of("boxes0", "box_index"), List.of("kept_boxes"), i("axis", 0)))
                .addNode(named("shape", "Shape", List.of("selected"), List.of("selected_shape")))
                .addNode(named("count", "Gather", List.of("selected_shape", "zero"), List.of("count"), i("axis", 0)));
        return load(dir, model(11, g));
    }

    private static float[][] boxSet(Random rnd, int classes, int n, float scoreScale) {
        float[] boxes = new float[n * 4], scores = new float[classes * n];
        for (int k = 0; k < n; k++) {
            float y = rnd.nextFloat() * 4, x = rnd.nextFloat() * 4, h = 0.5f + rnd.nextFloat() * 2, w = 0.5f + rnd.nextFloat() * 2;
            System.arraycopy(new float[] {y, x, y + h, x + w}, 0, boxes, 4 * k, 4);
        }
        for (int k = 0; k < scores.length; k++) scores[k] = rnd.nextFloat() * scoreScale;
        return new float[][] {boxes, scores};
    }

    @ParameterizedTest
    @ValueSource(strings = {"INTERP", "CPU", "CLANG"})
    void onePreparedDetectorGivesEachRunItsOwnSelection(String deviceName) {
        Device d = device(deviceName);
        int classes = 2, n = 12;
        long baseline = MemoryStats.liveBytes();
        try (OnnxModel m = detector(classes, n, false); OnnxPlan plan = m.prepare(d, Map.of())) {
            Random rnd = new Random(5);
            List<Integer> counts = new ArrayList<>();
            // scores scaled below the threshold 0.25 on the second run: nothing is selected
            for (float scale : new float[] {1f, 0.2f, 0.3f, 0.6f, 0.27f, 1f}) {
                float[][] set = boxSet(rnd, classes, n, scale);
                List<long[]> want = NonMaxSuppressionTest.reference(set[0], set[1], 1, classes, n, false, 3, 0.5, 0.25f);
                List<Tensor> out = plan.run(Map.of("boxes", on(d, Tensor.of(set[0], 1, n, 4)), "scores", on(d, Tensor.of(set[1], 1, classes, n))));
                assertThat(out.get(0).dims()).containsExactly(want.size(), 3);
                assertThat(plan.outputDims(1)).containsExactly(want.size(), 4);
                assertThat(out.get(2).toLongArray()).as("count").containsExactly(want.size());
                long[] got = out.get(0).toLongArray();
                float[] kept = out.get(1).toFloatArray();
                for (int k = 0; k < want.size(); k++) {
                    assertThat(Arrays.copyOfRange(got, 3 * k, 3 * k + 3)).as("row %d", k).containsExactly(want.get(k));
                    int box = (int) want.get(k)[2];
                    assertThat(Arrays.copyOfRange(kept, 4 * k, 4 * k + 4)).as("box of row %d", k).containsExactly(Arrays.copyOfRange(set[0], 4 * box, 4 * box + 4));
                }
                counts.add(want.size());
            }
            assertThat(counts).as("selections per run").contains(0);
            assertThat(counts.stream().distinct().count()).as("distinct counts in " + counts).isGreaterThanOrEqualTo(3);
        }
        assertThat(MemoryStats.liveBytes()).as("the plan's memory is freed").isEqualTo(baseline);
    }

    @ParameterizedTest
    @ValueSource(strings = {"INTERP", "CPU"})
    void aMaximumGivenWhenThePlanRunsIsReadThenAndCheckedNamingTheNode(String deviceName) {
        Device d = device(deviceName);
        int classes = 1, n = 8;
        try (OnnxModel m = detector(classes, n, true); OnnxPlan plan = m.prepare(d, Map.of())) {
            float[][] set = boxSet(new Random(9), classes, n, 1f);
            for (long max : new long[] {0, 1, 8, 2}) {
                List<long[]> want = NonMaxSuppressionTest.reference(set[0], set[1], 1, classes, n, false, max, 0.5, 0.25f);
                List<Tensor> out = plan.run(Map.of("boxes", on(d, Tensor.of(set[0], 1, n, 4)), "scores", on(d, Tensor.of(set[1], 1, classes, n)),
                        "max", on(d, Tensor.of(dev.kiln.types.DType.I64, new long[] {max}, 1))));
                assertThat(out.get(0).dims()).as("max %d", max).containsExactly(want.size(), 3);
                long[] got = out.get(0).toLongArray();
                for (int k = 0; k < want.size(); k++) assertThat(Arrays.copyOfRange(got, 3 * k, 3 * k + 3)).containsExactly(want.get(k));
            }
            Map<String, Tensor> negative = Map.of("boxes", on(d, Tensor.of(set[0], 1, n, 4)), "scores", on(d, Tensor.of(set[1], 1, classes, n)),
                    "max", on(d, Tensor.of(dev.kiln.types.DType.I64, new long[] {-1}, 1)));
            assertThatThrownBy(() -> plan.run(negative)).isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("NonMaxSuppression node 'nms'").hasMessageContaining("max_output_boxes_per_class must be at least 0, got -1");
        }
    }

    /** x [2, 3]: NonZero(x > 0) [2, count], and x's positive values gathered back through the flat index row * 3 + column. */
    private OnnxModel nonZeroGather() {
        var g = GraphProto.newBuilder().addInput(value("x", 1, 2, 3)).addOutput(anyShape("nz", 7)).addOutput(anyShape("picked", 1))
                .addInitializer(TensorProto.newBuilder().setName("zero_f").setDataType(1).addFloatData(0))
                .addInitializer(TensorProto.newBuilder().setName("zero").setDataType(7).addInt64Data(0))
                .addInitializer(TensorProto.newBuilder().setName("one").setDataType(7).addInt64Data(1))
                .addInitializer(TensorProto.newBuilder().setName("three").setDataType(7).addInt64Data(3))
                .addInitializer(TensorProto.newBuilder().setName("flat").setDataType(7).addDims(1).addInt64Data(6))
                .addNode(named("gt", "Greater", List.of("x", "zero_f"), List.of("mask")))
                .addNode(named("nonzero", "NonZero", List.of("mask"), List.of("nz")))
                .addNode(named("rows", "Gather", List.of("nz", "zero"), List.of("r"), i("axis", 0)))
                .addNode(named("cols", "Gather", List.of("nz", "one"), List.of("c"), i("axis", 0)))
                .addNode(named("scale", "Mul", List.of("r", "three"), List.of("r3")))
                .addNode(named("index", "Add", List.of("r3", "c"), List.of("idx")))
                .addNode(named("flatten", "Reshape", List.of("x", "flat"), List.of("xf")))
                .addNode(named("pick", "Gather", List.of("xf", "idx"), List.of("picked"), i("axis", 0)));
        return load(dir, model(13, g));
    }

    @ParameterizedTest
    @ValueSource(strings = {"INTERP", "CPU"})
    void nonZeroThenGatherFollowsEachRunsCount(String deviceName) {
        Device d = device(deviceName);
        try (OnnxModel m = nonZeroGather(); OnnxPlan plan = m.prepare(d, Map.of())) {
            float[][] runs = {{1, -2, 3, 0, 5, -1}, {-1, -1, -1, -1, -1, -1}, {1, 2, 3, 4, 5, 6}, {0, 0, 0, 0, 0, 9}};
            for (float[] x : runs) {
                List<Tensor> out = plan.run(Map.of("x", on(d, Tensor.of(x, 2, 3))));
                List<Long> rows = new ArrayList<>(), cols = new ArrayList<>();
                List<Float> values = new ArrayList<>();
                for (int k = 0; k < 6; k++) if (x[k] > 0) { rows.add((long) k / 3); cols.add((long) k % 3); values.add(x[k]); }
                int count = values.size();
                assertThat(out.get(0).dims()).as(Arrays.toString(x)).containsExactly(2, count);
                List<Long> want = new ArrayList<>(rows);
                want.addAll(cols);
                assertThat(out.get(0).toLongArray()).containsExactly(want.stream().mapToLong(Long::longValue).toArray());
                assertThat(out.get(1).dims()).containsExactly(count);
                float[] got = out.get(1).toFloatArray();
                for (int k = 0; k < count; k++) assertThat(got[k]).isEqualTo(values.get(k));
            }
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"INTERP", "CPU"})
    void compressByAConditionGivenWhenThePlanRuns(String deviceName) {
        Device d = device(deviceName);
        var g = GraphProto.newBuilder().addInput(value("x", 1, 3, 4)).addInput(value("cond", 9, 4)).addOutput(anyShape("y", 1))
                .addNode(named("compress", "Compress", List.of("x", "cond"), List.of("y"), i("axis", 1)));
        try (OnnxModel m = load(dir, model(13, g)); OnnxPlan plan = m.prepare(d, Map.of())) {
            float[] x = new float[12];
            for (int k = 0; k < 12; k++) x[k] = k;
            for (boolean[] cond : new boolean[][] {{true, false, true, false}, {false, false, false, false}, {true, true, true, true}}) {
                long[] c = new long[4];
                for (int k = 0; k < 4; k++) c[k] = cond[k] ? 1 : 0;
                List<Tensor> out = plan.run(Map.of("x", on(d, Tensor.of(x, 3, 4)), "cond", on(d, Tensor.of(dev.kiln.types.DType.BOOL, c, 4))));
                List<Float> want = new ArrayList<>();
                for (int r = 0; r < 3; r++) for (int k = 0; k < 4; k++) if (cond[k]) want.add(x[r * 4 + k]);
                assertThat(out.getFirst().dims()).containsExactly(3, (int) Arrays.stream(c).sum());
                float[] got = out.getFirst().toFloatArray();
                for (int k = 0; k < want.size(); k++) assertThat(got[k]).isEqualTo(want.get(k));
            }
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"INTERP", "CPU"})
    void uniqueGivesEachRunsUniquesWithIndicesInverseAndCounts(String deviceName) {
        Device d = device(deviceName);
        var g = GraphProto.newBuilder().addInput(value("x", 1, 6)).addOutput(anyShape("y", 1)).addOutput(anyShape("first", 7))
                .addOutput(anyShape("inverse", 7)).addOutput(anyShape("counts", 7))
                .addNode(named("unique", "Unique", List.of("x"), List.of("y", "first", "inverse", "counts")));
        try (OnnxModel m = load(dir, model(11, g)); OnnxPlan plan = m.prepare(d, Map.of())) {
            for (float[] x : new float[][] {{3, 1, 3, 2, 1, 3}, {5, 5, 5, 5, 5, 5}, {6, 5, 4, 3, 2, 1}}) {
                List<Tensor> out = plan.run(Map.of("x", on(d, Tensor.of(x, 6))));
                // the reference: sorted distinct values, the first index of each, each element's position among them, counts
                float[] distinct = new float[6];
                int k = 0;
                for (float v : x) {
                    boolean seen = false;
                    for (int j = 0; j < k; j++) seen |= distinct[j] == v;
                    if (!seen) distinct[k++] = v;
                }
                float[] y = Arrays.copyOf(distinct, k);
                Arrays.sort(y);
                long[] first = new long[k], counts = new long[k], inverse = new long[6];
                for (int j = 0; j < k; j++) {
                    first[j] = -1;
                    for (int e = 0; e < 6; e++) {
                        if (x[e] != y[j]) continue;
                        if (first[j] < 0) first[j] = e;
                        counts[j]++;
                        inverse[e] = j;
                    }
                }
                assertThat(out.get(0).dims()).as(Arrays.toString(x)).containsExactly(k);
                assertThat(out.get(0).toFloatArray()).containsExactly(y);
                assertThat(out.get(1).toLongArray()).containsExactly(first);
                assertThat(out.get(2).toLongArray()).containsExactly(inverse);
                assertThat(out.get(3).toLongArray()).containsExactly(counts);
            }
        }
    }

    /** NonZero of an input of a symbolic size: coordinates within each run's dims, never from the rows past them. */
    @ParameterizedTest
    @ValueSource(strings = {"INTERP", "CPU"})
    void nonZeroOfASymbolicInputCountsWithinTheRunsSize(String deviceName) {
        Device d = device(deviceName);
        var g = GraphProto.newBuilder().addInput(OnnxPlanTest.value("x", "rows", 3)).addOutput(anyShape("nz", 7))
                .addNode(named("nonzero", "NonZero", List.of("x"), List.of("nz")));
        try (OnnxModel m = load(dir, model(13, g)); OnnxPlan plan = m.prepare(d, Map.of("rows", 4))) {
            plan.run(Map.of("x", on(d, Tensor.of(new float[] {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1}, 4, 3)))); // leaves ones in every row
            List<Tensor> out = plan.run(Map.of("x", on(d, Tensor.of(new float[] {0, 2, 0, 3, 0, 4}, 2, 3))));
            assertThat(out.getFirst().dims()).containsExactly(2, 3);
            assertThat(out.getFirst().toLongArray()).containsExactly(0, 1, 1, 1, 0, 2);
        }
    }

    /** PyTorch's {@code x[x != 0]} and {@code torch.nonzero} as exported: NonZero, Transpose to [count, rank], GatherND. */
    @ParameterizedTest
    @ValueSource(strings = {"INTERP", "CPU", "CLANG"})
    void nonZeroTransposeGatherNDAsPyTorchExportsIt(String deviceName) {
        Device d = device(deviceName);
        var g = GraphProto.newBuilder().addInput(value("x", 1, 2, 3)).addOutput(anyShape("idx", 7)).addOutput(anyShape("values", 1))
                .addNode(named("nonzero", "NonZero", List.of("x"), List.of("nz")))
                .addNode(named("transpose", "Transpose", List.of("nz"), List.of("idx"), ints("perm", 1, 0)))
                .addNode(named("gather", "GatherND", List.of("x", "idx"), List.of("values")));
        try (OnnxModel m = load(dir, model(13, g)); OnnxPlan plan = m.prepare(d, Map.of())) {
            for (float[] x : new float[][] {{0, 2, 0, 3, 0, 4}, {0, 0, 0, 0, 0, 0}, {1, 2, 3, 4, 5, 6}}) {
                List<Tensor> out = plan.run(Map.of("x", on(d, Tensor.of(x, 2, 3))));
                List<Long> idx = new ArrayList<>();
                List<Float> values = new ArrayList<>();
                for (int k = 0; k < 6; k++) if (x[k] != 0) { idx.add((long) k / 3); idx.add((long) k % 3); values.add(x[k]); }
                assertThat(out.get(0).dims()).containsExactly(values.size(), 2);
                assertThat(out.get(0).toLongArray()).containsExactly(idx.stream().mapToLong(Long::longValue).toArray());
                assertThat(out.get(1).dims()).containsExactly(values.size());
                float[] got = out.get(1).toFloatArray();
                for (int k = 0; k < values.size(); k++) assertThat(got[k]).isEqualTo(values.get(k));
            }
        }
    }
    /** A value of element type {@code elemType} whose dims are sizes or symbol names. */
    private static onnx.Onnx.ValueInfoProto symbolic(String name, int elemType, Object... dims) {
        onnx.Onnx.ValueInfoProto v = OnnxPlanTest.value(name, dims);
        return v.toBuilder().setType(v.getType().toBuilder().setTensorType(v.getType().getTensorType().toBuilder().setElemType(elemType))).build();
    }

    /**
     * Compress along a symbolic axis ({@code x[mask]} over rows up to a maximum): the condition read at its length in the run
     * and against the axis's length in the run, so a condition over rows past it (left by an earlier, longer run) keeps none.
     */
    @ParameterizedTest
    @ValueSource(strings = {"INTERP", "CPU"})
    void compressAlongASymbolicAxis(String deviceName) {
        Device d = device(deviceName);
        var g = GraphProto.newBuilder().addInput(OnnxPlanTest.value("x", "rows", 3)).addInput(symbolic("cond", 9, "rows"))
                .addInput(symbolic("fixed", 9, 5)).addOutput(anyShape("y", 1)).addOutput(anyShape("z", 1))
                .addNode(named("compress", "Compress", List.of("x", "cond"), List.of("y"), i("axis", 0)))
                .addNode(named("compress_fixed", "Compress", List.of("x", "fixed"), List.of("z"), i("axis", 0)));
        try (OnnxModel m = load(dir, model(13, g)); OnnxPlan plan = m.prepare(d, Map.of("rows", 5))) {
            long[] all = {1, 1, 1, 1, 1};
            for (long[] cond : new long[][] {{1, 1, 1, 1, 1}, {0, 1}, {1, 0, 1, 1}, {0}}) {
                int rows = cond.length;
                float[] x = new float[rows * 3];
                for (int k = 0; k < x.length; k++) x[k] = 10 * k + rows;
                List<Tensor> out = plan.run(Map.of("x", on(d, Tensor.of(x, rows, 3)), "cond", on(d, Tensor.of(dev.kiln.types.DType.BOOL, cond, rows)),
                        "fixed", on(d, Tensor.of(dev.kiln.types.DType.BOOL, all, 5))));
                List<Float> want = new ArrayList<>();
                for (int r = 0; r < rows; r++) if (cond[r] != 0) for (int k = 0; k < 3; k++) want.add(x[r * 3 + k]);
                assertThat(out.get(0).dims()).as(Arrays.toString(cond)).containsExactly(want.size() / 3, 3);
                assertThat(out.get(0).toFloatArray()).as(Arrays.toString(cond)).containsExactly(toArray(want));
                // a condition of 5 against the run's rows: the rows past them are never kept
                assertThat(out.get(1).dims()).as(Arrays.toString(cond)).containsExactly(rows, 3);
                assertThat(out.get(1).toFloatArray()).as(Arrays.toString(cond)).containsExactly(x);
            }
        }
    }

    private static float[] toArray(List<Float> values) {
        float[] out = new float[values.size()];
        for (int k = 0; k < out.length; k++) out[k] = values.get(k);
        return out;
    }

    /**
     * Unique of an input of a symbolic size (up to 6 elements), along its one axis and along the symbolic axis of a matrix:
     * each run's uniques, first indices and counts within the run's size, and the inverse indices at the input's length.
     */
    @ParameterizedTest
    @ValueSource(strings = {"INTERP", "CPU"})
    void uniqueOfASymbolicInput(String deviceName) {
        Device d = device(deviceName);
        var g = GraphProto.newBuilder().addInput(OnnxPlanTest.value("x", "n")).addInput(OnnxPlanTest.value("m", "n", 2))
                .addOutput(anyShape("y", 1)).addOutput(anyShape("first", 7)).addOutput(anyShape("inverse", 7)).addOutput(anyShape("counts", 7))
                .addOutput(anyShape("rows", 1)).addOutput(anyShape("row_inverse", 7))
                .addNode(named("unique", "Unique", List.of("x"), List.of("y", "first", "inverse", "counts")))
                .addNode(named("unique_rows", "Unique", List.of("m"), List.of("rows", "", "row_inverse"), i("axis", 0), i("sorted", 0)));
        try (OnnxModel m = load(dir, model(11, g)); OnnxPlan plan = m.prepare(d, Map.of("n", 6))) {
            for (float[] x : new float[][] {{3, 1, 3, 2, 1, 3}, {7, 7, 2}, {4}, {9, 8, 9, 8}}) {
                int n = x.length;
                float[] mat = new float[2 * n];
                for (int k = 0; k < n; k++) {
                    mat[2 * k] = x[k];
                    mat[2 * k + 1] = -x[k];
                }
                List<Tensor> out = plan.run(Map.of("x", on(d, Tensor.of(x, n)), "m", on(d, Tensor.of(mat, n, 2))));
                float[] y = distinct(x, true);
                long[] first = new long[y.length], counts = new long[y.length], inverse = new long[n];
                for (int j = 0; j < y.length; j++) {
                    first[j] = -1;
                    for (int e = 0; e < n; e++) {
                        if (x[e] != y[j]) continue;
                        if (first[j] < 0) first[j] = e;
                        counts[j]++;
                        inverse[e] = j;
                    }
                }
                String as = Arrays.toString(x);
                assertThat(out.get(0).toFloatArray()).as(as).containsExactly(y);
                assertThat(out.get(1).toLongArray()).as(as).containsExactly(first);
                assertThat(out.get(2).toLongArray()).as(as).containsExactly(inverse);
                assertThat(out.get(3).toLongArray()).as(as).containsExactly(counts);
                // rows in first-occurrence order: (v, -v) for each distinct v as it first comes
                float[] seen = distinct(x, false);
                float[] rows = new float[2 * seen.length];
                long[] rowInverse = new long[n];
                for (int j = 0; j < seen.length; j++) {
                    rows[2 * j] = seen[j];
                    rows[2 * j + 1] = -seen[j];
                    for (int e = 0; e < n; e++) if (x[e] == seen[j]) rowInverse[e] = j;
                }
                assertThat(out.get(4).dims()).as(as).containsExactly(seen.length, 2);
                assertThat(out.get(4).toFloatArray()).as(as).containsExactly(rows);
                assertThat(out.get(5).toLongArray()).as(as).containsExactly(rowInverse);
            }
        }
        // without an axis, a matrix of a symbolic size has no flattened size: refused naming the node
        var flat = GraphProto.newBuilder().addInput(OnnxPlanTest.value("m", "n", 2)).addOutput(anyShape("y", 1))
                .addNode(named("unique_flat", "Unique", List.of("m"), List.of("y")));
        assertThatThrownBy(() -> load(dir, model(11, flat)).prepare(d, Map.of("n", 6))).isInstanceOf(UnsupportedOnnxOpException.class)
                .hasMessageContaining("'unique_flat'").hasMessageContaining("flattened");
    }

    /** The distinct values of {@code x}, sorted or in first-occurrence order. */
    private static float[] distinct(float[] x, boolean sorted) {
        float[] out = new float[x.length];
        int k = 0;
        for (float v : x) {
            boolean seen = false;
            for (int j = 0; j < k; j++) seen |= out[j] == v;
            if (!seen) out[k++] = v;
        }
        out = Arrays.copyOf(out, k);
        if (sorted) Arrays.sort(out);
        return out;
    }
}

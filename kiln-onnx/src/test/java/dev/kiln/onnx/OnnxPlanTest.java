package dev.kiln.onnx;

import dev.kiln.Tensor;
import dev.kiln.runtime.DeviceRegistry;
import onnx.Onnx.AttributeProto;
import onnx.Onnx.GraphProto;
import onnx.Onnx.ModelProto;
import onnx.Onnx.NodeProto;
import onnx.Onnx.OperatorSetIdProto;
import onnx.Onnx.TensorProto;
import onnx.Onnx.TensorShapeProto;
import onnx.Onnx.TypeProto;
import onnx.Onnx.ValueInfoProto;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.junit.jupiter.api.Test;

import java.util.Arrays;
import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.within;

/** {@link OnnxModel#prepare}: one plan for every size of a symbolic input dimension. */
class OnnxPlanTest {
    static final int MAX = 6;

    static ValueInfoProto value(String name, Object... dims) {
        TensorShapeProto.Builder s = TensorShapeProto.newBuilder();
        for (Object d : dims) {
            if (d instanceof String p) s.addDim(TensorShapeProto.Dimension.newBuilder().setDimParam(p));
            else s.addDim(TensorShapeProto.Dimension.newBuilder().setDimValue(((Number) d).longValue()));
        }
        return ValueInfoProto.newBuilder().setName(name)
                .setType(TypeProto.newBuilder().setTensorType(TypeProto.Tensor.newBuilder().setElemType(1).setShape(s))).build();
    }

    static NodeProto node(String op, List<String> in, List<String> out, AttributeProto... attrs) {
        return NodeProto.newBuilder().setOpType(op).setName(op.toLowerCase() + "_" + out.getFirst()).addAllInput(in).addAllOutput(out)
                .addAllAttribute(Arrays.asList(attrs)).build();
    }

    static TensorProto floats(String name, int[] dims, float... v) {
        TensorProto.Builder b = TensorProto.newBuilder().setName(name).setDataType(1);
        for (int d : dims) b.addDims(d);
        for (float f : v) b.addFloatData(f);
        return b.build();
    }

    static ModelProto model(GraphProto.Builder g) {
        return ModelProto.newBuilder().setIrVersion(8).addOpsetImport(OperatorSetIdProto.newBuilder().setDomain("").setVersion(13)).setGraph(g).build();
    }

    /**
     * x [N, 4]: y = softmax(relu(x W + b)) [N, 3], and z = softmax(x x^T) [N, N], whose softmax reduces over
     * the symbolic axis.
     */
    static ModelProto mlpAndAttention() {
        float[] w = new float[12];
        for (int i = 0; i < w.length; i++) w[i] = (float) Math.cos(i * 0.7);
        return model(GraphProto.newBuilder().setName("g")
                .addInitializer(floats("W", new int[] {4, 3}, w)).addInitializer(floats("B", new int[] {3}, 0.1f, -0.2f, 0.3f))
                .addInput(value("x", "N", 4)).addOutput(value("y", "N", 3)).addOutput(value("z", "N", "N"))
                .addNode(node("MatMul", List.of("x", "W"), List.of("m")))
                .addNode(node("Add", List.of("m", "B"), List.of("a")))
                .addNode(node("Relu", List.of("a"), List.of("r")))
                .addNode(node("Softmax", List.of("r"), List.of("y")))
                .addNode(node("Transpose", List.of("x"), List.of("xt")))
                .addNode(node("MatMul", List.of("x", "xt"), List.of("s")))
                .addNode(node("Softmax", List.of("s"), List.of("z"))));
    }

    static float[] data(int n, int seed) {
        float[] out = new float[n];
        for (int i = 0; i < n; i++) out[i] = (float) Math.sin(seed * 13 + i * 0.37);
        return out;
    }

    @ParameterizedTest
    @ValueSource(strings = {"INTERP", "CPU"})
    void onePlanServesEverySizeAndEqualsExactRuns(String device) {
        OnnxModel m = OnnxModel.fromProto(mlpAndAttention(), "test");
        try (OnnxPlan plan = m.prepare(DeviceRegistry.get(device), Map.of("N", MAX))) {
            assertThat(plan.variables()).containsOnlyKeys("N");
            assertThat(plan.variables().get("N").max()).isEqualTo(MAX);
            int kernels = plan.plan().kernels().size();
            for (int n = 1; n <= MAX; n++) {
                Tensor x = Tensor.of(data(n * 4, n), n, 4);
                List<Tensor> got = plan.run(Map.of("x", x));
                List<Tensor> want = m.run(Map.of("x", x.to("INTERP")));
                assertThat(plan.plan().kernels()).hasSize(kernels); // the same plan, nothing recompiled
                for (int k = 0; k < 2; k++) {
                    assertThat(got.get(k).dims()).as("output %d at N=%d", k, n).containsExactly(want.get(k).dims());
                    float[] g = got.get(k).toFloatArray(), e = want.get(k).toFloatArray();
                    for (int i = 0; i < e.length; i++) assertThat(g[i]).as("%s output %d N=%d element %d", device, k, n, i).isCloseTo(e[i], within(1e-5f));
                }
            }
            // running again with the bound inputs gives the same result
            plan.execute();
            assertThat(plan.outputs().getFirst().dims()).containsExactly(MAX, 3);
        }
    }

    @Test
    void initializersReachThePlanAsConstants() {
        // W and B are immutable buffers (read-only memory), so a GEMM may pack them once; the input x is not
        OnnxModel m = OnnxModel.fromProto(mlpAndAttention(), "test");
        try (OnnxPlan plan = m.prepare(DeviceRegistry.get("CPU"), Map.of("N", MAX))) {
            var buffers = plan.plan().buffers().values();
            assertThat(buffers).filteredOn(b -> b.segment().isReadOnly()).extracting(dev.kiln.runtime.Buffer::count).contains(12L, 3L);
            assertThat(buffers).filteredOn(b -> !b.segment().isReadOnly()).isNotEmpty();
        }
    }

    @Test
    void sizesOutsideThePlanAndMissingMaximaAreNamed() {
        OnnxModel m = OnnxModel.fromProto(mlpAndAttention(), "test");
        assertThatThrownBy(() -> m.prepare(DeviceRegistry.get("INTERP"), Map.of())).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("symbolic dimension 'N'").hasMessageContaining("maximum");
        assertThatThrownBy(() -> m.prepare(DeviceRegistry.get("INTERP"), Map.of("N", 4, "T", 2))).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("no symbolic input dimension 'T'").hasMessageContaining("[N]");
        try (OnnxPlan plan = m.prepare(DeviceRegistry.get("INTERP"), Map.of("N", 4))) {
            assertThatThrownBy(() -> plan.bind(Map.of("x", Tensor.zeros(5, 4)))).isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("dimension 'N' is 5, the plan was prepared for 1 to 4");
            assertThatThrownBy(() -> plan.bind(Map.of("x", Tensor.zeros(2, 3)))).isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("[N, 4]").hasMessageContaining("[2, 3]");
            assertThatThrownBy(plan::execute).isInstanceOf(IllegalStateException.class);
        }
    }

    @Test
    void operatorsThatNeedASymbolicSizeAtBuildTimeNameTheNode() {
        ModelProto p = model(GraphProto.newBuilder().addInput(value("x", "N", 4)).addOutput(OnnxTestModels.anyShape("y", 1))
                .addNode(node("Shape", List.of("x"), List.of("s")))
                .addNode(node("ReduceProd", List.of("s"), List.of("p")))
                .addNode(node("Reshape", List.of("x", "p"), List.of("y"))));
        OnnxModel m = OnnxModel.fromProto(p, "test");
        // Shape of a symbolic size is a value the plan computes when it runs; the Reshape that needs 4N now is refused
        assertThatThrownBy(() -> m.prepare(DeviceRegistry.get("INTERP"), Map.of("N", 4))).isInstanceOf(UnsupportedOnnxOpException.class)
                .hasMessageContaining("Reshape").hasMessageContaining("'reshape_y'").hasMessageContaining("needs the values of 'p'");
    }

    /** Shape and Size of a symbolic input are values the plan computes when it runs, at each run's size. */
    @Test
    void shapeAndSizeOfASymbolicInputFollowEachRun() {
        ModelProto p = model(GraphProto.newBuilder().addInput(value("x", "N", 4)).addOutput(OnnxTestModels.anyShape("s", 7))
                .addOutput(OnnxTestModels.anyShape("n", 7))
                .addNode(node("Shape", List.of("x"), List.of("s")))
                .addNode(node("Size", List.of("x"), List.of("n"))));
        try (OnnxModel m = OnnxModel.fromProto(p, "test"); OnnxPlan plan = m.prepare(DeviceRegistry.get("CPU"), Map.of("N", 6))) {
            for (int n : new int[] {3, 6, 1}) {
                List<Tensor> out = plan.run(Map.of("x", Tensor.zeros(n, 4)));
                assertThat(out.get(0).toLongArray()).containsExactly(n, 4);
                assertThat(out.get(1).toLongArray()).containsExactly(4L * n);
            }
        }
    }

    /**
     * Slice along a symbolic axis (N in [1, 6]) in one plan: the last row ({@code x[-1:]}, a model's last position) and the
     * first ({@code x[0:1]}) each run against Java at every size; the whole axis is x itself; a part whose length would
     * depend on N ({@code x[1:]}), or that N may cut ({@code x[-2:]} when N may be 1), is refused naming the node.
     */
    @ParameterizedTest
    @ValueSource(strings = {"INTERP", "CPU"})
    void sliceAlongASymbolicAxis(String device) {
        var d = DeviceRegistry.get(device);
        java.util.function.Function<long[], ModelProto> slice = se -> model(GraphProto.newBuilder().addInput(value("x", "N", 2))
                .addInitializer(longs("starts", se[0])).addInitializer(longs("ends", se[1])).addInitializer(longs("axes", 0))
                .addOutput(OnnxTestModels.anyShape("y", 1))
                .addNode(node("Slice", List.of("x", "starts", "ends", "axes"), List.of("y"))));
        for (long[] se : new long[][] {{-1, Long.MAX_VALUE}, {0, 1}, {0, Long.MAX_VALUE}, {-9, 9}}) {
            try (OnnxModel m = OnnxModel.fromProto(slice.apply(se), "slice"); OnnxPlan plan = m.prepare(d, Map.of("N", MAX))) {
                for (int n : new int[] {3, 1, 6}) {
                    float[] x = data(2 * n, n);
                    int from = (int) (se[0] < 0 ? Math.max(0, n + se[0]) : Math.min(se[0], n));
                    int to = (int) (se[1] < 0 ? Math.max(0, n + se[1]) : Math.min(se[1], n));
                    Tensor y = plan.run(Map.of("x", Tensor.of(x, n, 2).to(d).realize())).getFirst();
                    assertThat(y.dims()).as("x[%d:%d] of %d rows", se[0], se[1], n).containsExactly(Math.max(0, to - from), 2);
                    assertThat(y.toFloatArray()).as("x[%d:%d] of %d rows", se[0], se[1], n)
                            .containsExactly(Arrays.copyOfRange(x, 2 * from, 2 * Math.max(from, to)));
                }
            }
        }
        for (long[] se : new long[][] {{1, Long.MAX_VALUE}, {-2, Long.MAX_VALUE}, {0, 2}, {-1, 3}, {-1, 0}}) {
            OnnxModel m = OnnxModel.fromProto(slice.apply(se), "slice");
            assertThatThrownBy(() -> m.prepare(d, Map.of("N", MAX))).as("x[%d:%d]", se[0], se[1]).isInstanceOf(UnsupportedOnnxOpException.class)
                    .hasMessageContaining("'slice_y'").hasMessageContaining("whose size 'N' is in [1, 6]");
        }
    }

    static TensorProto longs(String name, long... v) {
        TensorProto.Builder b = TensorProto.newBuilder().setName(name).setDataType(7).addDims(v.length);
        for (long x : v) b.addInt64Data(x);
        return b.build();
    }

    /**
     * A Slice from a start known only when the plan runs to that start plus 2 (a loop's {@code x[t:t + 2]}): two rows at an
     * offset computed when the plan runs, a negative start counted from the end and one before the axis clamped to it, as
     * ONNX says; a part past the end (which ONNX would shorten, changing the shape) fails the run naming the node.
     */
    @ParameterizedTest
    @ValueSource(strings = {"INTERP", "CPU"})
    void sliceFromAStartKnownWhenThePlanRuns(String device) {
        var d = DeviceRegistry.get(device);
        ModelProto p = model(GraphProto.newBuilder().addInput(value("x", 6, 2))
                .addInput(ValueInfoProto.newBuilder().setName("t").setType(TypeProto.newBuilder().setTensorType(TypeProto.Tensor.newBuilder().setElemType(7)
                        .setShape(TensorShapeProto.newBuilder().addDim(TensorShapeProto.Dimension.newBuilder().setDimValue(1))))))
                .addInitializer(longs("two", 2)).addOutput(OnnxTestModels.anyShape("y", 1))
                .addNode(node("Add", List.of("t", "two"), List.of("end")))
                .addNode(node("Slice", List.of("x", "t", "end"), List.of("y"))));
        float[] x = data(12, 3);
        try (OnnxModel m = OnnxModel.fromProto(p, "slice_at"); OnnxPlan plan = m.prepare(d, Map.of())) {
            for (long t : new long[] {0, 3, 4, -2, -6, -9}) {
                int from = (int) (t < 0 ? Math.max(0, 6 + t) : t);
                Tensor y = plan.run(Map.of("x", Tensor.of(x, 6, 2).to(d).realize(), "t", Tensor.of(new long[] {t}, 1).to(d).realize())).getFirst();
                assertThat(y.dims()).containsExactly(2, 2);
                assertThat(y.toFloatArray()).as("x[%d:%d]", t, t + 2).containsExactly(Arrays.copyOfRange(x, 2 * from, 2 * from + 4));
            }
            assertThatThrownBy(() -> plan.run(Map.of("x", Tensor.of(x, 6, 2).to(d).realize(), "t", Tensor.of(new long[] {5}, 1).to(d).realize())))
                    .isInstanceOf(dev.kiln.runtime.IndexOutOfRangeException.class).hasMessageContaining("Slice node 'slice_y'");
        }
    }

    /**
     * A Reshape to a shape computed from Shape of a symbolic input ({@code x.reshape(x.shape[0], 2, 2)}, exported as Shape,
     * Slice, Concat): the symbolic axis kept, one plan for every N; a shape that would move the symbolic axis is refused
     * naming the node.
     */
    @ParameterizedTest
    @ValueSource(strings = {"INTERP", "CPU"})
    void reshapeToAShapeOfSymbolicSizes(String device) {
        var d = DeviceRegistry.get(device);
        java.util.function.Function<List<String>, ModelProto> reshape = parts -> model(GraphProto.newBuilder().addInput(value("x", "N", 4))
                .addInitializer(longs("zero", 0)).addInitializer(longs("one", 1)).addInitializer(longs("two", 2))
                .addOutput(OnnxTestModels.anyShape("y", 1))
                .addNode(node("Shape", List.of("x"), List.of("s")))
                .addNode(node("Slice", List.of("s", "zero", "one"), List.of("n")))
                .addNode(node("Concat", parts, List.of("shape"), OnnxTestModels.i("axis", 0)))
                .addNode(node("Reshape", List.of("x", "shape"), List.of("y"))));
        try (OnnxModel m = OnnxModel.fromProto(reshape.apply(List.of("n", "two", "two")), "reshape"); OnnxPlan plan = m.prepare(d, Map.of("N", MAX))) {
            for (int n : new int[] {3, 1, 6}) {
                float[] x = data(4 * n, n);
                Tensor y = plan.run(Map.of("x", Tensor.of(x, n, 4).to(d).realize())).getFirst();
                assertThat(y.dims()).containsExactly(n, 2, 2);
                assertThat(y.toFloatArray()).containsExactly(x);
            }
        }
        OnnxModel moved = OnnxModel.fromProto(reshape.apply(List.of("two", "n", "two")), "reshape");
        assertThatThrownBy(() -> moved.prepare(d, Map.of("N", MAX))).isInstanceOf(UnsupportedOnnxOpException.class)
                .hasMessageContaining("'reshape_y'").hasMessageContaining("symbolic axes");
    }
}

package dev.kiln.onnx;

import dev.kiln.Tensor;
import dev.kiln.runtime.DeviceRegistry;
import dev.kiln.types.DType;
import onnx.Onnx.AttributeProto;
import onnx.Onnx.GraphProto;
import onnx.Onnx.ModelProto;
import onnx.Onnx.NodeProto;
import onnx.Onnx.TensorProto;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.util.List;
import java.util.Map;

import static dev.kiln.onnx.OnnxTestModels.i;
import static dev.kiln.onnx.OnnxTestModels.value;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * A Loop that appends to a list (a sequence state that starts empty and that the body only extends with SequenceInsert, as
 * TorchScript exports {@code ys.append(y)}) in a prepared plan ({@link ListAccumulators}): the list is the loop's scan output,
 * its length the iterations of each run; what reads it whole works, what needs its length while the graph is built is
 * refused naming the node, and a body that reads the list is not taken for one. Models built in Java, checked against Java.
 */
class ListLoopPlanTest {
    private static final int FLOAT = TensorProto.DataType.FLOAT_VALUE, INT64 = TensorProto.DataType.INT64_VALUE, BOOL = TensorProto.DataType.BOOL_VALUE;

    private static NodeProto node(String op, String name, List<String> in, List<String> out, AttributeProto... attrs) {
        return NodeProto.newBuilder().setOpType(op).setName(name).addAllInput(in).addAllOutput(out).addAllAttribute(List.of(attrs)).build();
    }

    /**
     * x doubles M times (M a graph input), each doubled x appended to a list; the list read by {@code tail}. Where
     * {@code readsList}, the body also reads the list's length (so the list is no mere accumulator).
     */
    private static ModelProto doublingList(boolean readsList, NodeProto... tail) {
        GraphProto.Builder body = GraphProto.newBuilder().setName("body")
                .addInput(value("i", INT64)).addInput(value("cond_in", BOOL)).addInput(value("x_in", FLOAT, 2)).addInput(SequenceValuesTest.seq("list_in", FLOAT))
                .addNode(node("Mul", "double", List.of("x_in", "two"), List.of("x_out")))
                .addNode(node("SequenceInsert", "append", List.of("list_in", "x_out"), List.of("list_out")))
                .addNode(node("Identity", "cond", List.of("cond_in"), List.of("cond_out")));
        if (readsList) body.addNode(node("SequenceLength", "length", List.of("list_in"), List.of("length")));
        body.addOutput(value("cond_out", BOOL)).addOutput(value("x_out", FLOAT, 2)).addOutput(SequenceValuesTest.seq("list_out", FLOAT));
        GraphProto.Builder g = GraphProto.newBuilder().addInput(value("x0", FLOAT, 2)).addInput(value("m", INT64))
                .addInitializer(TensorProto.newBuilder().setName("two").setDataType(FLOAT).addFloatData(2f))
                .addNode(node("SequenceEmpty", "empty", List.of(), List.of("list0"), i("dtype", FLOAT)))
                .addNode(node("Loop", "loop", List.of("m", "", "x0", "list0"), List.of("x_final", "list"),
                        AttributeProto.newBuilder().setName("body").setType(AttributeProto.AttributeType.GRAPH).setG(body).build()));
        for (NodeProto t : tail) g.addNode(t);
        g.addOutput(value("x_final", FLOAT, 2)).addOutput(OnnxTestModels.anyShape("out", FLOAT));
        return OnnxTestModels.model(17, g);
    }

    private static Map<String, Tensor> inputs(dev.kiln.runtime.Device d, long m) {
        return Map.of("x0", Tensor.of(new float[] {1, -3}, 2).to(d).realize(), "m", Tensor.scalar(m, DType.I64).to(d).realize());
    }

    /** Stacked along the last axis: [2, M], column t holding x0 * 2^(t+1); M = 3, 1, then 70 (past the plan's first rows). */
    @ParameterizedTest
    @ValueSource(strings = {"INTERP", "CPU"})
    void stackedListInAPreparedPlan(String device) {
        var unavailable = DeviceRegistry.providers().get(device).unavailableReason();
        org.junit.jupiter.api.Assumptions.assumeTrue(unavailable.isEmpty(), () -> device + " unavailable: " + unavailable.orElse(""));
        var d = DeviceRegistry.get(device);
        ModelProto proto = doublingList(false, node("ConcatFromSequence", "stack", List.of("list"), List.of("out"), i("axis", -1), i("new_axis", 1)));
        long baseline = dev.kiln.runtime.MemoryStats.liveBytes();
        try (OnnxPlan plan = OnnxModel.fromProto(proto, "list.onnx").prepare(d, Map.of())) {
            for (int m : new int[] {3, 1, 70}) {
                List<Tensor> out = plan.run(inputs(d, m));
                float[] want = new float[2 * m];
                for (int t = 0; t < m; t++) {
                    want[t] = (float) Math.pow(2, t + 1);
                    want[m + t] = -3 * (float) Math.pow(2, t + 1);
                }
                assertThat(out.get(1).dims()).as("M = %d", m).containsExactly(2, m);
                assertThat(out.get(1).toFloatArray()).as("M = %d", m).containsExactly(want);
                assertThat(out.get(0).toFloatArray()).as("M = %d", m).containsExactly(want[m - 1], want[2 * m - 1]);
            }
        }
        assertThat(dev.kiln.runtime.MemoryStats.liveBytes()).as("the plan's memory is freed").isEqualTo(baseline);
        // the same model under run: the loop built per iteration, as before, gives the same values
        List<Tensor> out = OnnxModel.fromProto(proto, "list.onnx").run(inputs(d, 3));
        assertThat(out.get(1).toFloatArray()).containsExactly(2, 4, 8, -6, -12, -24);
    }

    /** What needs the list's length while the graph is built is refused in a prepared plan, naming the node; run gives it. */
    @Test
    void readingTheListAsKnownNowIsRefusedNamingTheNode() {
        var d = DeviceRegistry.get("INTERP");
        ModelProto joined = doublingList(false, node("ConcatFromSequence", "join", List.of("list"), List.of("out"), i("axis", 0)));
        assertThatThrownBy(() -> OnnxModel.fromProto(joined, "list.onnx").prepare(d, Map.of())).isInstanceOf(UnsupportedOnnxOpException.class)
                .hasMessageContaining("ConcatFromSequence").hasMessageContaining("'join'").hasMessageContaining("symbolic size times 2");
        assertThat(OnnxModel.fromProto(joined, "list.onnx").run(inputs(d, 2)).get(1).toFloatArray()).containsExactly(2, -6, 4, -12);
        ModelProto first = doublingList(false, node("Constant", "zero", List.of(), List.of("zero"), AttributeProto.newBuilder().setName("value")
                        .setType(AttributeProto.AttributeType.TENSOR).setT(TensorProto.newBuilder().setDataType(INT64).addInt64Data(0)).build()),
                node("SequenceAt", "first", List.of("list", "zero"), List.of("out")));
        assertThatThrownBy(() -> OnnxModel.fromProto(first, "list.onnx").prepare(d, Map.of())).isInstanceOf(UnsupportedOnnxOpException.class)
                .hasMessageContaining("SequenceAt").hasMessageContaining("'first'").hasMessageContaining("known only when the plan runs");
    }

    /** A body that reads its list (its length here) is not an accumulator: built per iteration, so refused in a prepared plan. */
    @Test
    void aBodyThatReadsItsListIsNotTakenForOne() {
        var d = DeviceRegistry.get("INTERP");
        ModelProto proto = doublingList(true, node("ConcatFromSequence", "stack", List.of("list"), List.of("out"), i("axis", 0), i("new_axis", 1)));
        assertThatThrownBy(() -> OnnxModel.fromProto(proto, "list.onnx").prepare(d, Map.of())).isInstanceOf(UnsupportedOnnxOpException.class)
                .hasMessageContaining("Loop").hasMessageContaining("'loop'");
        assertThat(OnnxModel.fromProto(proto, "list.onnx").run(inputs(d, 2)).get(1).dims()).containsExactly(2, 2);
    }
    /**
     * x doubles M times and each doubled x is joined to {@code acc} as a column (Concat along axis 1 of [2, 1] pieces): a
     * tensor the body grows, read nowhere else. M a graph input, or the constant 4 where {@code constantM}.
     */
    private static ModelProto growingColumns(boolean constantM) {
        GraphProto.Builder body = GraphProto.newBuilder().setName("body")
                .addInput(value("i", INT64)).addInput(value("cond_in", BOOL)).addInput(value("x_in", FLOAT, 2)).addInput(OnnxTestModels.anyShape("acc_in", FLOAT))
                .addNode(node("Mul", "double", List.of("x_in", "two"), List.of("x_out")))
                .addNode(node("Reshape", "column", List.of("x_out", "shape21"), List.of("col")))
                .addNode(node("Concat", "join", List.of("acc_in", "col"), List.of("acc_out"), i("axis", -1)))
                .addNode(node("Identity", "cond", List.of("cond_in"), List.of("cond_out")))
                .addOutput(value("cond_out", BOOL)).addOutput(value("x_out", FLOAT, 2)).addOutput(OnnxTestModels.anyShape("acc_out", FLOAT));
        GraphProto.Builder g = GraphProto.newBuilder().addInput(value("x0", FLOAT, 2)).addInput(value("start", FLOAT, 2, 1))
                .addInitializer(TensorProto.newBuilder().setName("two").setDataType(FLOAT).addFloatData(2f))
                .addInitializer(TensorProto.newBuilder().setName("shape21").setDataType(INT64).addDims(2).addInt64Data(2).addInt64Data(1));
        if (constantM) g.addInitializer(TensorProto.newBuilder().setName("m").setDataType(INT64).addInt64Data(4));
        else g.addInput(value("m", INT64));
        g.addNode(node("Loop", "loop", List.of("m", "", "x0", "start"), List.of("x_final", "acc"),
                        AttributeProto.newBuilder().setName("body").setType(AttributeProto.AttributeType.GRAPH).setG(body).build()))
                .addOutput(value("x_final", FLOAT, 2)).addOutput(OnnxTestModels.anyShape("acc", FLOAT));
        return OnnxTestModels.model(17, g);
    }

    /**
     * A tensor grown along its last axis in one prepared plan: [2, 1 + M], the start column then x0 * 2^(t+1); M = 3, 0 and
     * 70 from the input (past the first rows: the plan grows), and a constant M = 4 (the iterations known while it is built).
     */
    @ParameterizedTest
    @ValueSource(strings = {"INTERP", "CPU"})
    void tensorGrownByConcatInAPreparedPlan(String device) {
        var unavailable = DeviceRegistry.providers().get(device).unavailableReason();
        org.junit.jupiter.api.Assumptions.assumeTrue(unavailable.isEmpty(), () -> device + " unavailable: " + unavailable.orElse(""));
        var d = DeviceRegistry.get(device);
        Tensor start = Tensor.of(new float[] {5, 7}, 2, 1).to(d).realize(), x0 = Tensor.of(new float[] {1, -3}, 2).to(d).realize();
        long baseline = dev.kiln.runtime.MemoryStats.liveBytes();
        try (OnnxPlan plan = OnnxModel.fromProto(growingColumns(false), "grow.onnx").prepare(d, Map.of());
             OnnxPlan fixed = OnnxModel.fromProto(growingColumns(true), "grow.onnx").prepare(d, Map.of())) {
            for (int m : new int[] {3, 0, 70, 2}) {
                List<Tensor> out = plan.run(Map.of("x0", x0, "start", start, "m", Tensor.scalar(m, DType.I64).to(d).realize()));
                assertThat(out.get(1).dims()).as("M = %d", m).containsExactly(2, 1 + m);
                assertThat(out.get(1).toFloatArray()).as("M = %d", m).containsExactly(columns(m));
            }
            List<Tensor> out = fixed.run(Map.of("x0", x0, "start", start));
            assertThat(out.get(1).dims()).containsExactly(2, 5);
            assertThat(out.get(1).toFloatArray()).containsExactly(columns(4));
        }
        assertThat(dev.kiln.runtime.MemoryStats.liveBytes()).as("the plans' memory is freed").isEqualTo(baseline);
    }

    /** The grown tensor in Java: rows (5, 2, 4, ...) and (7, -6, -12, ...), M columns after the start. */
    private static float[] columns(int m) {
        float[] want = new float[2 * (1 + m)];
        want[0] = 5;
        want[1 + m] = 7;
        for (int t = 0; t < m; t++) {
            want[1 + t] = (float) Math.pow(2, t + 1);
            want[1 + m + 1 + t] = -3 * (float) Math.pow(2, t + 1);
        }
        return want;
    }
}

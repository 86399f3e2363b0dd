package dev.kiln.onnx;

import dev.kiln.Tensor;
import dev.kiln.runtime.Device;
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

/**
 * Under {@link OnnxModel#run}, a Loop that appends to a list or grows a tensor by Concat is one body plan, as in a prepared
 * plan ({@link ListAccumulators}), not a graph built once per iteration: 5,000 iterations run (the per-iteration build
 * refuses more than {@value LoopUnrolling#MAX_ITERATIONS}) and nothing is logged as unrolled. A loop that must still be built
 * per iteration (a list whose elements' shapes follow the iteration number) is, and says why once. Models built in Java,
 * checked against Java.
 */
class RunLoopPlanTest {
    private static final int FLOAT = TensorProto.DataType.FLOAT_VALUE, INT64 = TensorProto.DataType.INT64_VALUE, BOOL = TensorProto.DataType.BOOL_VALUE;
    private static final int LONG_RUN = LoopUnrolling.MAX_ITERATIONS + 904;

    private static NodeProto node(String op, String name, List<String> in, List<String> out, AttributeProto... attrs) {
        return NodeProto.newBuilder().setOpType(op).setName(name).addAllInput(in).addAllOutput(out).addAllAttribute(List.of(attrs)).build();
    }

    private static AttributeProto body(GraphProto.Builder g) {
        return AttributeProto.newBuilder().setName("body").setType(AttributeProto.AttributeType.GRAPH).setG(g).build();
    }

    private static void assumeAvailable(String device) {
        var unavailable = DeviceRegistry.providers().get(device).unavailableReason();
        org.junit.jupiter.api.Assumptions.assumeTrue(unavailable.isEmpty(), () -> device + " unavailable: " + unavailable.orElse(""));
    }

    /** x (two values) goes up by one M times (M a graph input), each new x appended to a list; the list joined, and its length. */
    private static ModelProto countingList() {
        GraphProto.Builder body = GraphProto.newBuilder().setName("body")
                .addInput(value("i", INT64)).addInput(value("cond_in", BOOL)).addInput(value("x_in", FLOAT, 2)).addInput(SequenceValuesTest.seq("list_in", FLOAT))
                .addNode(node("Add", "step", List.of("x_in", "one"), List.of("x_out")))
                .addNode(node("SequenceInsert", "append", List.of("list_in", "x_out"), List.of("list_out")))
                .addNode(node("Identity", "cond", List.of("cond_in"), List.of("cond_out")))
                .addOutput(value("cond_out", BOOL)).addOutput(value("x_out", FLOAT, 2)).addOutput(SequenceValuesTest.seq("list_out", FLOAT));
        GraphProto.Builder g = GraphProto.newBuilder().addInput(value("x0", FLOAT, 2)).addInput(value("m", INT64))
                .addInitializer(TensorProto.newBuilder().setName("one").setDataType(FLOAT).addFloatData(1f))
                .addNode(node("SequenceEmpty", "empty", List.of(), List.of("list0"), i("dtype", FLOAT)))
                .addNode(node("Loop", "count", List.of("m", "", "x0", "list0"), List.of("x_final", "list"), body(body)))
                .addNode(node("ConcatFromSequence", "join", List.of("list"), List.of("joined"), i("axis", 0)))
                .addNode(node("SequenceLength", "length", List.of("list"), List.of("n")))
                .addOutput(value("x_final", FLOAT, 2)).addOutput(OnnxTestModels.anyShape("joined", FLOAT)).addOutput(value("n", INT64));
        return OnnxTestModels.model(17, g);
    }

    /** x goes up by one M times (M a graph input), each new x joined to {@code acc} as a column: a tensor the body grows by Concat. */
    private static ModelProto growingColumns() {
        GraphProto.Builder body = GraphProto.newBuilder().setName("body")
                .addInput(value("i", INT64)).addInput(value("cond_in", BOOL)).addInput(value("x_in", FLOAT, 2)).addInput(OnnxTestModels.anyShape("acc_in", FLOAT))
                .addNode(node("Add", "step", List.of("x_in", "one"), List.of("x_out")))
                .addNode(node("Reshape", "column", List.of("x_out", "shape21"), List.of("col")))
                .addNode(node("Concat", "join", List.of("acc_in", "col"), List.of("acc_out"), i("axis", -1)))
                .addNode(node("Identity", "cond", List.of("cond_in"), List.of("cond_out")))
                .addOutput(value("cond_out", BOOL)).addOutput(value("x_out", FLOAT, 2)).addOutput(OnnxTestModels.anyShape("acc_out", FLOAT));
        GraphProto.Builder g = GraphProto.newBuilder().addInput(value("x0", FLOAT, 2)).addInput(value("start", FLOAT, 2, 1)).addInput(value("m", INT64))
                .addInitializer(TensorProto.newBuilder().setName("one").setDataType(FLOAT).addFloatData(1f))
                .addInitializer(TensorProto.newBuilder().setName("shape21").setDataType(INT64).addDims(2).addInt64Data(2).addInt64Data(1))
                .addNode(node("Loop", "grow", List.of("m", "", "x0", "start"), List.of("x_final", "acc"), body(body)))
                .addOutput(value("x_final", FLOAT, 2)).addOutput(OnnxTestModels.anyShape("acc", FLOAT));
        return OnnxTestModels.model(17, g);
    }

    private static Tensor scalar(long m, Device d) { return Tensor.scalar(m, DType.I64).to(d).realize(); }

    /** A list appended to {@value #LONG_RUN} times under run: one body plan, the list joined from its rows. */
    @ParameterizedTest
    @ValueSource(strings = {"INTERP", "CPU"})
    void aListLoopUnderRunIsOneBodyPlan(String device) {
        assumeAvailable(device);
        var d = DeviceRegistry.get(device);
        for (int m : new int[] {LONG_RUN, 3}) {
            List<Tensor> out = OnnxModel.fromProto(countingList(), "run_list.onnx").run(Map.of("x0", Tensor.of(new float[] {1, -3}, 2).to(d).realize(),
                    "m", scalar(m, d)));
            float[] want = new float[2 * m];
            for (int t = 0; t < m; t++) {
                want[2 * t] = 1 + t + 1;
                want[2 * t + 1] = -3 + t + 1;
            }
            assertThat(out.get(0).toFloatArray()).as("M = %d", m).containsExactly(1 + m, -3 + m);
            assertThat(out.get(1).toFloatArray()).as("M = %d", m).containsExactly(want);
            assertThat(out.get(2).toLongArray()).as("M = %d", m).containsExactly(m);
        }
        assertThat(LoopUnrolling.said()).noneMatch(s -> s.startsWith("run_list.onnx"));
    }

    /** A tensor grown by Concat {@value #LONG_RUN} times under run: one body plan, the start column joined with the rows. */
    @ParameterizedTest
    @ValueSource(strings = {"INTERP", "CPU"})
    void aTensorGrownByConcatUnderRunIsOneBodyPlan(String device) {
        assumeAvailable(device);
        var d = DeviceRegistry.get(device);
        for (int m : new int[] {LONG_RUN, 0, 2}) {
            List<Tensor> out = OnnxModel.fromProto(growingColumns(), "run_grow.onnx").run(Map.of("x0", Tensor.of(new float[] {1, -3}, 2).to(d).realize(),
                    "start", Tensor.of(new float[] {5, 7}, 2, 1).to(d).realize(), "m", scalar(m, d)));
            float[] want = new float[2 * (1 + m)];
            want[0] = 5;
            want[1 + m] = 7;
            for (int t = 0; t < m; t++) {
                want[1 + t] = 1 + t + 1;
                want[1 + m + 1 + t] = -3 + t + 1;
            }
            assertThat(out.get(1).dims()).as("M = %d", m).containsExactly(2, 1 + m);
            assertThat(out.get(1).toFloatArray()).as("M = %d", m).containsExactly(want);
        }
        assertThat(LoopUnrolling.said()).noneMatch(s -> s.startsWith("run_grow.onnx"));
    }

    /**
     * A list of x's prefixes, {@code x[:i + 1]} in iteration i, M = 4: each element's shape follows the iteration number, which
     * a body plan over stand-ins has no value for. The loop is built per iteration, says why once, and gives the prefixes
     * joined; as a for-loop of constant M it is built the same way in a prepared plan.
     */
    @Test
    void aListOfShapesThatFollowTheIterationIsBuiltPerIterationAndSaysWhy() {
        GraphProto.Builder body = GraphProto.newBuilder().setName("body")
                .addInput(value("i", INT64)).addInput(value("cond_in", BOOL)).addInput(SequenceValuesTest.seq("list_in", FLOAT))
                .addNode(node("Add", "end", List.of("i", "one"), List.of("end")))
                .addNode(node("Unsqueeze", "end1", List.of("end", "axes0"), List.of("ends")))
                .addNode(node("Slice", "prefix", List.of("x", "starts", "ends"), List.of("p")))
                .addNode(node("SequenceInsert", "append", List.of("list_in", "p"), List.of("list_out")))
                .addNode(node("Identity", "cond", List.of("cond_in"), List.of("cond_out")))
                .addOutput(value("cond_out", BOOL)).addOutput(SequenceValuesTest.seq("list_out", FLOAT));
        GraphProto.Builder g = GraphProto.newBuilder().addInput(value("x", FLOAT, 6))
                .addInitializer(TensorProto.newBuilder().setName("m").setDataType(INT64).addInt64Data(4))
                .addInitializer(TensorProto.newBuilder().setName("one").setDataType(INT64).addInt64Data(1))
                .addInitializer(TensorProto.newBuilder().setName("axes0").setDataType(INT64).addDims(1).addInt64Data(0))
                .addInitializer(TensorProto.newBuilder().setName("starts").setDataType(INT64).addDims(1).addInt64Data(0))
                .addNode(node("SequenceEmpty", "empty", List.of(), List.of("list0"), i("dtype", FLOAT)))
                .addNode(node("Loop", "prefixes", List.of("m", "", "list0"), List.of("list"), body(body)))
                .addNode(node("ConcatFromSequence", "join", List.of("list"), List.of("joined"), i("axis", 0)))
                .addOutput(OnnxTestModels.anyShape("joined", FLOAT));
        ModelProto proto = OnnxTestModels.model(17, g);
        float[] x = {1, 2, 3, 4, 5, 6}, want = {1, 1, 2, 1, 2, 3, 1, 2, 3, 4};
        var d = DeviceRegistry.get("INTERP");
        assertThat(OnnxModel.fromProto(proto, "prefixes.onnx").run(Map.of("x", Tensor.of(x, 6).realize())).getFirst().toFloatArray()).containsExactly(want);
        assertThat(LoopUnrolling.said()).filteredOn(s -> s.startsWith("prefixes.onnx: Loop node 'prefixes'")).singleElement().asString()
                .contains("at node 'prefix'").contains("the body cannot be built once for every iteration");
        try (OnnxPlan plan = OnnxModel.fromProto(proto, "prefixes.onnx").prepare(d, Map.of())) {
            assertThat(plan.run(Map.of("x", Tensor.of(x, 6).realize())).getFirst().toFloatArray()).containsExactly(want);
        }
    }

    /**
     * SequenceMap in its expanded form (a for-loop over a sequence of the enclosing graph: SequenceAt of the iteration number,
     * the result appended to a list): the sequence, of tensors of one shape (SplitToSequence's rows of x), is read by the body
     * as one tensor of its rows and SequenceAt gathers from it, so {@value #LONG_RUN} elements are one body plan under run.
     */
    @ParameterizedTest
    @ValueSource(strings = {"INTERP", "CPU"})
    void aLoopOverASequenceOfOneShapeIsOneBodyPlan(String device) {
        assumeAvailable(device);
        var d = DeviceRegistry.get(device);
        GraphProto.Builder body = GraphProto.newBuilder().setName("body")
                .addInput(value("i", INT64)).addInput(value("cond_in", BOOL)).addInput(SequenceValuesTest.seq("out_in", FLOAT))
                .addNode(node("SequenceAt", "at", List.of("pieces", "i"), List.of("e")))
                .addNode(node("Add", "plus", List.of("e", "y"), List.of("r")))
                .addNode(node("SequenceInsert", "append", List.of("out_in", "r"), List.of("out_out")))
                .addNode(node("Identity", "cond", List.of("cond_in"), List.of("cond_out")))
                .addOutput(value("cond_out", BOOL)).addOutput(SequenceValuesTest.seq("out_out", FLOAT));
        GraphProto.Builder g = GraphProto.newBuilder().addInput(value("x", FLOAT, LONG_RUN, 2)).addInput(value("y", FLOAT, 2))
                .addNode(node("SplitToSequence", "split", List.of("x"), List.of("pieces"), i("axis", 0), i("keepdims", 0)))
                .addNode(node("SequenceLength", "count", List.of("pieces"), List.of("n")))
                .addNode(node("SequenceEmpty", "empty", List.of(), List.of("out0"), i("dtype", FLOAT)))
                .addNode(node("Loop", "map", List.of("n", "", "out0"), List.of("out"), body(body)))
                .addNode(node("ConcatFromSequence", "stack", List.of("out"), List.of("stacked"), i("axis", 0), i("new_axis", 1)))
                .addOutput(OnnxTestModels.anyShape("stacked", FLOAT));
        float[] x = new float[2 * LONG_RUN];
        for (int k = 0; k < x.length; k++) x[k] = k * 0.5f;
        float[] want = new float[x.length];
        for (int k = 0; k < x.length; k++) want[k] = x[k] + (k % 2 == 0 ? 10 : -1);
        List<Tensor> out = OnnxModel.fromProto(OnnxTestModels.model(17, g), "run_map.onnx").run(Map.of("x", Tensor.of(x, LONG_RUN, 2).to(d).realize(),
                "y", Tensor.of(new float[] {10, -1}, 2).to(d).realize()));
        assertThat(out.getFirst().dims()).containsExactly(LONG_RUN, 2);
        assertThat(out.getFirst().toFloatArray()).containsExactly(want);
        assertThat(LoopUnrolling.said()).noneMatch(m -> m.startsWith("run_map.onnx"));
    }
}

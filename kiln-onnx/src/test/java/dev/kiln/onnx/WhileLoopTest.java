package dev.kiln.onnx;

import dev.kiln.LoopLimit;
import dev.kiln.LoopLimitException;
import dev.kiln.Tensor;
import dev.kiln.runtime.DeviceRegistry;
import dev.kiln.types.DType;
import onnx.Onnx.AttributeProto;
import onnx.Onnx.GraphProto;
import onnx.Onnx.ModelProto;
import onnx.Onnx.NodeProto;
import onnx.Onnx.TensorProto;
import onnx.Onnx.ValueInfoProto;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import static dev.kiln.onnx.OnnxTestModels.value;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * ONNX Loop whose number of iterations is known only when it runs ({@link LoopOp} on {@code Tensor.loop}): a condition the
 * body computes, a trip count from the model's input, both, none at all; scan outputs of a loop that ends early; one
 * prepared plan for every trip count; the iteration limit; refusals. Models built in Java, checked against loops in Java.
 */
class WhileLoopTest {
    private static final int FLOAT = TensorProto.DataType.FLOAT_VALUE, INT64 = TensorProto.DataType.INT64_VALUE, BOOL = TensorProto.DataType.BOOL_VALUE;

    private static NodeProto node(String op, String name, List<String> in, List<String> out, AttributeProto... attrs) {
        return NodeProto.newBuilder().setOpType(op).setName(name).addAllInput(in).addAllOutput(out).addAllAttribute(List.of(attrs)).build();
    }

    private static void assumeAvailable(String device) {
        var unavailable = DeviceRegistry.providers().get(device).unavailableReason();
        if (unavailable.isPresent()) System.out.println("ONNX while-loop tests on " + device + " skipped: " + unavailable.get());
        org.junit.jupiter.api.Assumptions.assumeTrue(unavailable.isEmpty(), () -> device + " unavailable: " + unavailable.orElse(""));
    }

    private static ValueInfoProto scalar(String name, int type) { return value(name, type); }

    /**
     * x doubles while its sum stays below {@code limit}, a graph input the body reads: body outputs the condition, x, then
     * the scan outputs sum(x) and the iteration number. M and the initial condition are the graph inputs {@code m} and
     * {@code c} where {@code withM} and {@code withCond}.
     */
    private static ModelProto doubling(boolean withM, boolean withCond) {
        GraphProto.Builder body = GraphProto.newBuilder().setName("body")
                .addInput(scalar("i", INT64)).addInput(scalar("cond_in", BOOL)).addInput(value("x_in", FLOAT, 2))
                .addNode(node("Mul", "double", List.of("x_in", "two"), List.of("x_out")))
                .addNode(node("ReduceSum", "sum", List.of("x_out"), List.of("s"), OnnxTestModels.i("keepdims", 0)))
                .addNode(node("Less", "less", List.of("s", "limit"), List.of("cond_out")))
                .addNode(node("Identity", "iteration", List.of("i"), List.of("i_out")))
                .addOutput(scalar("cond_out", BOOL)).addOutput(value("x_out", FLOAT, 2)).addOutput(scalar("s", FLOAT)).addOutput(scalar("i_out", INT64));
        GraphProto.Builder g = GraphProto.newBuilder().addInput(value("x0", FLOAT, 2)).addInput(scalar("limit", FLOAT))
                .addInitializer(TensorProto.newBuilder().setName("two").setDataType(FLOAT).addFloatData(2f));
        if (withM) g.addInput(scalar("m", INT64));
        if (withCond) g.addInput(scalar("c", BOOL));
        g.addNode(node("Loop", "while", List.of(withM ? "m" : "", withCond ? "c" : "", "x0"), List.of("x_final", "sums", "iterations"),
                AttributeProto.newBuilder().setName("body").setType(AttributeProto.AttributeType.GRAPH).setG(body).build()));
        g.addOutput(value("x_final", FLOAT, 2)).addOutput(OnnxTestModels.anyShape("sums", FLOAT)).addOutput(OnnxTestModels.anyShape("iterations", INT64));
        return OnnxTestModels.model(16, g);
    }

    private static Map<String, Tensor> inputs(String device, float limit, Long m, Boolean c) {
        var d = DeviceRegistry.get(device);
        Map<String, Tensor> in = new LinkedHashMap<>();
        in.put("x0", Tensor.of(new float[] {1, 2}, 2).to(d).realize());
        in.put("limit", Tensor.scalar(limit, DType.F32).to(d).realize());
        if (m != null) in.put("m", Tensor.scalar(m, DType.I64).to(d).realize());
        if (c != null) in.put("c", Tensor.of(new boolean[] {c}).reshape().to(d).realize());
        return in;
    }

    /** The loop in Java: x doubling from (1, 2) while the sum stays below limit, at most m times, not at all unless c. */
    private static List<float[]> expected(float limit, long m, boolean c) {
        float[] x = {1, 2};
        List<Float> sums = new ArrayList<>();
        boolean go = c;
        for (long i = 0; go && i < m; i++) {
            x = new float[] {x[0] * 2, x[1] * 2};
            sums.add(x[0] + x[1]);
            go = x[0] + x[1] < limit;
        }
        float[] s = new float[sums.size()], it = new float[sums.size()];
        for (int i = 0; i < s.length; i++) {
            s[i] = sums.get(i);
            it[i] = i;
        }
        return List.of(x, s, it);
    }

    private static void check(List<Tensor> out, List<float[]> want) {
        for (int k = 0; k < 3; k++) {
            assertThat(out.get(k).dims()[0]).as("output %d length", k).isEqualTo(k == 0 ? 2 : want.get(k).length);
            assertThat(out.get(k).realize().toFloatArray()).as("output %d", k).containsExactly(want.get(k));
        }
    }

    /** The body computes its condition: no M, no initial condition; the scan outputs hold the iterations that ran. */
    @ParameterizedTest
    @ValueSource(strings = {"INTERP", "CPU", "CLANG"})
    void conditionComputedByTheBody(String device) {
        assumeAvailable(device);
        OnnxModel model = OnnxModel.fromProto(doubling(false, false), "while.onnx");
        check(model.run(inputs(device, 100, null, null)), expected(100, Long.MAX_VALUE, true)); // 6 iterations: 6 ... 192
        check(model.run(inputs(device, 5, null, null)), expected(5, Long.MAX_VALUE, true)); // one: 6 is not below 5
    }

    /**
     * M a constant (20) and the condition computed by the body: one prepared plan lays the scan outputs out at M rows and
     * gives each run the rows of the iterations that ran (6, 1, all 20), the plan binding their length as it runs.
     */
    @ParameterizedTest
    @ValueSource(strings = {"INTERP", "CPU"})
    void earlyExitScanOutputsInAPreparedPlan(String device) {
        assumeAvailable(device);
        var d = DeviceRegistry.get(device);
        ModelProto proto = doubling(true, false);
        GraphProto.Builder g = proto.getGraph().toBuilder();
        for (int i = 0; i < g.getInputCount(); i++) if (g.getInput(i).getName().equals("m")) g.removeInput(i);
        g.addInitializer(TensorProto.newBuilder().setName("m").setDataType(INT64).addInt64Data(20));
        OnnxModel model = OnnxModel.fromProto(proto.toBuilder().setGraph(g).build(), "while.onnx");
        long baseline = dev.kiln.runtime.MemoryStats.liveBytes();
        try (OnnxPlan plan = model.prepare(d, Map.of())) {
            for (float limit : new float[] {100, 5, 1e9f, 100}) {
                List<Tensor> out = plan.run(inputs(device, limit, null, null));
                check(out, expected(limit, 20, true));
            }
        }
        assertThat(dev.kiln.runtime.MemoryStats.liveBytes()).as("the plan's memory is freed").isEqualTo(baseline);
    }

    /** M and the condition both given, from the model's inputs: whichever ends the loop first; M = 0 and a false condition run nothing. */
    @ParameterizedTest
    @ValueSource(strings = {"INTERP", "CPU"})
    void tripCountAndConditionFromTheInputs(String device) {
        assumeAvailable(device);
        OnnxModel model = OnnxModel.fromProto(doubling(true, true), "while.onnx");
        check(model.run(inputs(device, 100, 3L, true)), expected(100, 3, true));
        check(model.run(inputs(device, 100, 50L, true)), expected(100, 50, true));
        List<Tensor> none = model.run(inputs(device, 100, 0L, true));
        check(none, expected(100, 0, true));
        assertThat(none.get(1).dims()).containsExactly(0);
        check(model.run(inputs(device, 100, 50L, false)), expected(100, 50, false));
    }

    /** More iterations than the first run keeps rows for: the loop runs again with a row for each. */
    @Test
    void longLoopsKeepEveryRow() {
        OnnxModel model = OnnxModel.fromProto(counting(), "count.onnx");
        List<Tensor> out = model.run(Map.of("limit", Tensor.scalar(1500, DType.I64).realize()));
        assertThat(out.get(0).toLongArray()).containsExactly(1500);
        long[] rows = out.get(1).toLongArray();
        assertThat(rows).hasSize(1500);
        for (int i = 0; i < rows.length; i++) assertThat(rows[i]).isEqualTo(i + 1);
    }

    /** x = x + 1 while x < limit (a graph input), x a scan output too: no M, no initial condition. */
    private static ModelProto counting() {
        GraphProto.Builder body = GraphProto.newBuilder().setName("body")
                .addInput(scalar("i", INT64)).addInput(scalar("cond_in", BOOL)).addInput(scalar("x_in", INT64))
                .addNode(node("Add", "inc", List.of("x_in", "one"), List.of("x_out")))
                .addNode(node("Less", "less", List.of("x_out", "limit"), List.of("cond_out")))
                .addNode(node("Identity", "row", List.of("x_out"), List.of("y")))
                .addOutput(scalar("cond_out", BOOL)).addOutput(scalar("x_out", INT64)).addOutput(scalar("y", INT64));
        GraphProto.Builder g = GraphProto.newBuilder().addInput(scalar("limit", INT64))
                .addInitializer(TensorProto.newBuilder().setName("one").setDataType(INT64).addInt64Data(1))
                .addInitializer(TensorProto.newBuilder().setName("zero").setDataType(INT64).addInt64Data(0))
                .addNode(node("Loop", "count", List.of("", "", "zero"), List.of("x_final", "ys"),
                        AttributeProto.newBuilder().setName("body").setType(AttributeProto.AttributeType.GRAPH).setG(body).build()))
                .addOutput(scalar("x_final", INT64)).addOutput(OnnxTestModels.anyShape("ys", INT64));
        return OnnxTestModels.model(16, g);
    }

    /** x += i for i below M, M a graph input; no scan outputs. */
    private static ModelProto summing(boolean scanOutput) {
        GraphProto.Builder body = GraphProto.newBuilder().setName("body")
                .addInput(scalar("i", INT64)).addInput(scalar("cond_in", BOOL)).addInput(value("x_in", INT64, 1))
                .addNode(node("Add", "add", List.of("x_in", "i"), List.of("x_out")))
                .addNode(node("Identity", "cond", List.of("cond_in"), List.of("cond_out")))
                .addOutput(scalar("cond_out", BOOL)).addOutput(value("x_out", INT64, 1));
        if (scanOutput) body.addOutput(value("x_out", INT64, 1));
        GraphProto.Builder g = GraphProto.newBuilder().addInput(scalar("m", INT64)).addInput(value("x0", INT64, 1))
                .addNode(node("Loop", "sum", List.of("m", "", "x0"), scanOutput ? List.of("x_final", "ys") : List.of("x_final"),
                        AttributeProto.newBuilder().setName("body").setType(AttributeProto.AttributeType.GRAPH).setG(body).build()))
                .addOutput(value("x_final", INT64, 1));
        if (scanOutput) g.addOutput(OnnxTestModels.anyShape("ys", INT64));
        return OnnxTestModels.model(16, g);
    }

    /** A trip count from the model's input: one prepared plan serves every count; run gives the scan outputs too. */
    @ParameterizedTest
    @ValueSource(strings = {"INTERP", "CPU"})
    void tripCountFromTheModelsInput(String device) {
        assumeAvailable(device);
        var d = DeviceRegistry.get(device);
        OnnxModel model = OnnxModel.fromProto(summing(false), "sum.onnx");
        try (OnnxPlan plan = model.prepare(d, Map.of())) {
            for (long m : new long[] {4, 0, 100}) {
                List<Tensor> out = plan.run(Map.of("m", Tensor.scalar(m, DType.I64).to(d).realize(), "x0", Tensor.of(new long[] {7}, 1).to(d).realize()));
                assertThat(out.getFirst().toLongArray()).as("M = %d", m).containsExactly(7 + m * (m - 1) / 2);
            }
        }
        OnnxModel scanned = OnnxModel.fromProto(summing(true), "sum.onnx");
        List<Tensor> out = scanned.run(Map.of("m", Tensor.scalar(4, DType.I64).to(d).realize(), "x0", Tensor.of(new long[] {7}, 1).to(d).realize()));
        assertThat(out.get(0).toLongArray()).containsExactly(13);
        assertThat(out.get(1).dims()).containsExactly(4, 1);
        assertThat(out.get(1).toLongArray()).containsExactly(7, 8, 10, 13);
    }

    /**
     * Scan outputs of a loop whose M is a graph input, in one prepared plan: laid out at the plan's first capacity (64 rows)
     * and bound to each run's iterations; a run of more (100, then 1000) builds the plan again with room for them, and the
     * plan keeps that room (a later short run does not shrink it). Memory back to the baseline once closed.
     */
    @ParameterizedTest
    @ValueSource(strings = {"INTERP", "CPU"})
    void scanOutputsOfARunTimeTripCountInAPreparedPlan(String device) {
        assumeAvailable(device);
        var d = DeviceRegistry.get(device);
        OnnxModel scanned = OnnxModel.fromProto(summing(true), "sum.onnx");
        long baseline = dev.kiln.runtime.MemoryStats.liveBytes();
        try (OnnxPlan plan = scanned.prepare(d, Map.of())) {
            for (long m : new long[] {4, 0, 100, 3, 1000, 64, 65}) {
                List<Tensor> out = plan.run(Map.of("m", Tensor.scalar(m, DType.I64).to(d).realize(), "x0", Tensor.of(new long[] {7}, 1).to(d).realize()));
                long[] rows = new long[(int) m];
                long x = 7;
                for (int i = 0; i < m; i++) rows[i] = x += i;
                assertThat(out.get(0).toLongArray()).as("M = %d", m).containsExactly(x);
                assertThat(out.get(1).dims()).as("M = %d", m).containsExactly((int) m, 1);
                assertThat(out.get(1).toLongArray()).as("M = %d", m).containsExactly(rows);
                assertThat(plan.outputDims(1)).containsExactly((int) m, 1);
            }
        }
        assertThat(dev.kiln.runtime.MemoryStats.liveBytes()).as("the plan's memory is freed").isEqualTo(baseline);
    }

    /**
     * No trip count, the condition computed by the body (a TorchScript {@code while}): the scan outputs in one prepared plan,
     * 1500 iterations in a plan that first reserved 64 rows, then runs of 5 and 1 in the grown plan.
     */
    @ParameterizedTest
    @ValueSource(strings = {"INTERP", "CPU"})
    void whileLoopScanOutputsInAPreparedPlan(String device) {
        assumeAvailable(device);
        var d = DeviceRegistry.get(device);
        try (OnnxPlan plan = OnnxModel.fromProto(counting(), "count.onnx").prepare(d, Map.of())) {
            for (long limit : new long[] {10, 1500, 5, 1}) {
                List<Tensor> out = plan.run(Map.of("limit", Tensor.scalar(limit, DType.I64).to(d).realize()));
                long n = Math.max(1, limit);
                long[] rows = new long[(int) n];
                for (int i = 0; i < n; i++) rows[i] = i + 1;
                assertThat(out.get(0).toLongArray()).as("limit %d", limit).containsExactly(n);
                assertThat(out.get(1).toLongArray()).as("limit %d", limit).containsExactly(rows);
            }
        }
        try (OnnxPlan plan = OnnxModel.fromProto(doubling(false, false), "while.onnx").prepare(d, Map.of())) {
            for (float limit : new float[] {100, 5, 1e30f}) check(plan.run(inputs(device, limit, null, null)), expected(limit, Long.MAX_VALUE, true));
        }
    }

    /**
     * A loop of scan outputs whose M is a graph input, inside the body of another loop (run twice): the inner loop's
     * outputs outgrow the plan's first rows inside the outer loop's body plan, and the plan grows as for a loop at the top
     * (the inner step's failure reaches the OnnxPlan through the outer loop's step). acc = 2 * sum(x0 + 1 ... x0 + m).
     */
    @ParameterizedTest
    @ValueSource(strings = {"INTERP", "CPU"})
    void aLoopInsideALoopBodyGrowsThePlan(String device) {
        assumeAvailable(device);
        var d = DeviceRegistry.get(device);
        GraphProto.Builder inner = GraphProto.newBuilder().setName("inner_body")
                .addInput(scalar("i", INT64)).addInput(scalar("c_in", BOOL)).addInput(value("y_in", FLOAT, 1))
                .addNode(node("Add", "inc", List.of("y_in", "one"), List.of("y_out")))
                .addNode(node("Identity", "c", List.of("c_in"), List.of("c_out")))
                .addNode(node("Identity", "row", List.of("y_out"), List.of("y_row")))
                .addOutput(scalar("c_out", BOOL)).addOutput(value("y_out", FLOAT, 1)).addOutput(value("y_row", FLOAT, 1));
        GraphProto.Builder outer = GraphProto.newBuilder().setName("outer_body")
                .addInput(scalar("j", INT64)).addInput(scalar("cond_in", BOOL)).addInput(scalar("acc_in", FLOAT))
                .addNode(node("Loop", "inner", List.of("m", "", "x0"), List.of("y_final", "ys"),
                        AttributeProto.newBuilder().setName("body").setType(AttributeProto.AttributeType.GRAPH).setG(inner).build()))
                .addNode(node("ReduceSum", "sum", List.of("ys"), List.of("s"), OnnxTestModels.i("keepdims", 0)))
                .addNode(node("Add", "accumulate", List.of("acc_in", "s"), List.of("acc_out")))
                .addNode(node("Identity", "cond", List.of("cond_in"), List.of("cond_out")))
                .addOutput(scalar("cond_out", BOOL)).addOutput(scalar("acc_out", FLOAT));
        GraphProto.Builder g = GraphProto.newBuilder().addInput(scalar("m", INT64)).addInput(value("x0", FLOAT, 1))
                .addInitializer(TensorProto.newBuilder().setName("one").setDataType(FLOAT).addFloatData(1f))
                .addInitializer(TensorProto.newBuilder().setName("zero").setDataType(FLOAT).addFloatData(0f))
                .addInitializer(TensorProto.newBuilder().setName("twice").setDataType(INT64).addInt64Data(2))
                .addNode(node("Loop", "outer", List.of("twice", "", "zero"), List.of("acc"),
                        AttributeProto.newBuilder().setName("body").setType(AttributeProto.AttributeType.GRAPH).setG(outer).build()))
                .addOutput(scalar("acc", FLOAT));
        long baseline = dev.kiln.runtime.MemoryStats.liveBytes();
        try (OnnxPlan plan = OnnxModel.fromProto(OnnxTestModels.model(13, g), "nested.onnx").prepare(d, Map.of())) {
            for (long m : new long[] {3, 100, 5, 300}) {
                List<Tensor> out = plan.run(Map.of("m", Tensor.scalar(m, DType.I64).to(d).realize(), "x0", Tensor.of(new float[] {0.5f}, 1).to(d).realize()));
                assertThat(out.getFirst().toFloatArray()).as("M = %d", m).containsExactly(2 * (m * 0.5f + m * (m + 1) / 2f));
            }
        }
        assertThat(dev.kiln.runtime.MemoryStats.liveBytes()).as("the plan's memory is freed").isEqualTo(baseline);
    }

    /** A loop past its limit in a prepared plan fails with the limit's exception naming the node, not by growing forever. */
    @Test
    void aPreparedWhileLoopStopsAtTheLimit() {
        var d = DeviceRegistry.get("INTERP");
        try (OnnxPlan plan = LoopLimit.with(200, () -> OnnxModel.fromProto(counting(), "count.onnx").prepare(d, Map.of()))) {
            assertThat(plan.run(Map.of("limit", Tensor.scalar(150, DType.I64).realize())).get(1).dims()).containsExactly(150);
            assertThatThrownBy(() -> plan.run(Map.of("limit", Tensor.scalar(1000, DType.I64).realize()))).isInstanceOf(LoopLimitException.class)
                    .hasMessageContaining("Loop node 'count'");
        }
    }

    /** x grows by one element per iteration (Concat) while its sum stays below limit: the shape changes, so M, the condition and x come from the inputs. */
    private static ModelProto growing() {
        GraphProto.Builder body = GraphProto.newBuilder().setName("body")
                .addInput(scalar("i", INT64)).addInput(scalar("cond_in", BOOL)).addInput(OnnxTestModels.anyShape("x_in", INT64))
                .addNode(node("Reshape", "row", List.of("i", "shape1"), List.of("i1")))
                .addNode(node("Concat", "append", List.of("x_in", "i1"), List.of("x_out"), OnnxTestModels.i("axis", 0)))
                .addNode(node("ReduceSum", "sum", List.of("x_out"), List.of("s"), OnnxTestModels.i("keepdims", 0)))
                .addNode(node("Less", "less", List.of("s", "limit"), List.of("cond_out")))
                .addOutput(scalar("cond_out", BOOL)).addOutput(OnnxTestModels.anyShape("x_out", INT64));
        GraphProto.Builder g = GraphProto.newBuilder().addInput(value("x0", INT64, 1)).addInput(scalar("limit", INT64))
                .addInitializer(TensorProto.newBuilder().setName("shape1").setDataType(INT64).addDims(1).addInt64Data(1))
                .addNode(node("Loop", "grow", List.of("", "", "x0"), List.of("x_final"),
                        AttributeProto.newBuilder().setName("body").setType(AttributeProto.AttributeType.GRAPH).setG(body).build()))
                .addOutput(OnnxTestModels.anyShape("x_final", INT64));
        return OnnxTestModels.model(16, g);
    }

    /** Loop-carried values whose shape changes are built once per iteration under run; a prepared plan refuses them, naming the node. */
    @Test
    void changingShapesAreBuiltPerIteration() {
        OnnxModel model = OnnxModel.fromProto(growing(), "grow.onnx");
        List<Tensor> out = model.run(Map.of("x0", Tensor.of(new long[] {5}, 1).realize(), "limit", Tensor.scalar(12, DType.I64).realize()));
        assertThat(out.getFirst().toLongArray()).containsExactly(5, 0, 1, 2, 3, 4); // sums 5 6 8 11 15: stops after 15
        // the slower path says so, and why, once
        assertThat(LoopUnrolling.said()).filteredOn(s -> s.startsWith("grow.onnx: Loop node 'grow'")).singleElement().asString()
                .contains("is i64[1] on entry and i64[2] after an iteration");
        assertThatThrownBy(() -> model.prepare(DeviceRegistry.get("INTERP"), Map.of())).isInstanceOf(UnsupportedOnnxOpException.class)
                .hasMessageContaining("'grow'").hasMessageContaining("is i64[1] on entry and i64[2] after an iteration");
    }

    /**
     * A while loop inside a for loop's body: per outer iteration i (M a graph input), y starts at x + 1 and doubles while it
     * stays below 10 (i + 1); x takes the final y. The inner loop's condition and state come from the outer body's values.
     */
    private static ModelProto nested() {
        GraphProto.Builder inner = GraphProto.newBuilder().setName("inner")
                .addInput(scalar("j", INT64)).addInput(scalar("c_in", BOOL)).addInput(scalar("y_in", FLOAT))
                .addNode(node("Mul", "double", List.of("y_in", "two"), List.of("y_out")))
                .addNode(node("Less", "below", List.of("y_out", "bound"), List.of("c_out")))
                .addOutput(scalar("c_out", BOOL)).addOutput(scalar("y_out", FLOAT));
        GraphProto.Builder outer = GraphProto.newBuilder().setName("outer")
                .addInput(scalar("i", INT64)).addInput(scalar("cond_in", BOOL)).addInput(scalar("x_in", FLOAT))
                .addNode(node("Add", "plus1", List.of("x_in", "onef"), List.of("y0")))
                .addNode(node("Add", "i1", List.of("i", "one"), List.of("i_plus")))
                .addNode(node("Cast", "fi", List.of("i_plus"), List.of("fi"), OnnxTestModels.i("to", FLOAT)))
                .addNode(node("Mul", "bound", List.of("fi", "ten"), List.of("bound")))
                .addNode(node("Less", "first", List.of("y0", "bound"), List.of("c0")))
                .addNode(node("Loop", "inner", List.of("", "c0", "y0"), List.of("x_out"),
                        AttributeProto.newBuilder().setName("body").setType(AttributeProto.AttributeType.GRAPH).setG(inner).build()))
                .addNode(node("Identity", "keep", List.of("cond_in"), List.of("cond_out")))
                .addOutput(scalar("cond_out", BOOL)).addOutput(scalar("x_out", FLOAT));
        GraphProto.Builder g = GraphProto.newBuilder().addInput(scalar("m", INT64)).addInput(scalar("x0", FLOAT))
                .addInitializer(TensorProto.newBuilder().setName("two").setDataType(FLOAT).addFloatData(2f))
                .addInitializer(TensorProto.newBuilder().setName("ten").setDataType(FLOAT).addFloatData(10f))
                .addInitializer(TensorProto.newBuilder().setName("onef").setDataType(FLOAT).addFloatData(1f))
                .addInitializer(TensorProto.newBuilder().setName("one").setDataType(INT64).addInt64Data(1))
                .addNode(node("Loop", "outer", List.of("m", "", "x0"), List.of("x_final"),
                        AttributeProto.newBuilder().setName("body").setType(AttributeProto.AttributeType.GRAPH).setG(outer).build()))
                .addOutput(scalar("x_final", FLOAT));
        return OnnxTestModels.model(16, g);
    }

    /** The nested loops in one prepared plan, against Java, for several trip counts and starts. */
    @ParameterizedTest
    @ValueSource(strings = {"INTERP", "CPU"})
    void whileLoopInsideALoopBody(String device) {
        assumeAvailable(device);
        var d = DeviceRegistry.get(device);
        try (OnnxPlan plan = OnnxModel.fromProto(nested(), "nested.onnx").prepare(d, Map.of())) {
            for (long m : new long[] {0, 1, 4}) {
                for (float x0 : new float[] {0.5f, 3f, 100f}) {
                    float x = x0;
                    for (int i = 0; i < m; i++) {
                        float y = x + 1;
                        if (y < 10f * (i + 1)) {
                            do y *= 2; while (y < 10f * (i + 1));
                        }
                        x = y;
                    }
                    List<Tensor> out = plan.run(Map.of("m", Tensor.scalar(m, DType.I64).to(d).realize(), "x0", Tensor.scalar(x0, DType.F32).to(d).realize()));
                    assertThat(out.getFirst().realize().toFloatArray()).as("M = %d, x0 = %s", m, x0).containsExactly(x);
                }
            }
        }
    }

    /** A condition that never fails stops at the iteration limit, naming the node and the setting. */
    @Test
    void endlessLoopsStopAtTheLimit() {
        String before = System.getProperty(LoopLimit.PROPERTY);
        try {
            System.setProperty(LoopLimit.PROPERTY, "200");
            OnnxModel model = OnnxModel.fromProto(summing(false), "sum.onnx");
            assertThatThrownBy(() -> model.run(Map.of("m", Tensor.scalar(Long.MAX_VALUE, DType.I64).realize(), "x0", Tensor.of(new long[] {0}, 1).realize()))
                    .getFirst().realize()).isInstanceOf(LoopLimitException.class).hasMessageContaining("Loop node 'sum'")
                    .hasMessageContaining("after 200 iterations").hasMessageContaining(LoopLimit.PROPERTY);
            OnnxModel counting = OnnxModel.fromProto(counting(), "count.onnx");
            assertThatThrownBy(() -> counting.run(Map.of("limit", Tensor.scalar(1000, DType.I64).realize())))
                    .isInstanceOf(LoopLimitException.class).hasMessageContaining("Loop node 'count'");
        } finally {
            if (before == null) System.clearProperty(LoopLimit.PROPERTY);
            else System.setProperty(LoopLimit.PROPERTY, before);
        }
        // a loop built once per iteration stops at the limit too; LoopLimit.with sets it for one build
        OnnxModel growing = OnnxModel.fromProto(growing(), "grow.onnx");
        assertThatThrownBy(() -> LoopLimit.with(3, () -> growing.run(Map.of("x0", Tensor.of(new long[] {0}, 1).realize(),
                "limit", Tensor.scalar(1000, DType.I64).realize())))).isInstanceOf(LoopLimitException.class).hasMessageContaining("Loop node 'grow'")
                .hasMessageContaining("after 3 iterations");
    }

    @Test
    void malformedLoopsAreRefusedNamingTheNode() {
        // a condition output of two values
        ModelProto m = doubling(false, false);
        GraphProto.Builder g = m.getGraph().toBuilder();
        NodeProto.Builder loop = g.getNode(0).toBuilder();
        AttributeProto.Builder body = loop.getAttribute(0).toBuilder();
        GraphProto.Builder b = body.getG().toBuilder();
        b.setNode(2, node("Less", "less", List.of("x_out", "limit"), List.of("cond_out")));
        ModelProto twoConditions = m.toBuilder().setGraph(g.setNode(0, loop.setAttribute(0, body.setG(b)))).build();
        assertThatThrownBy(() -> OnnxModel.fromProto(twoConditions, "while.onnx").run(inputs("INTERP", 100, null, null)))
                .isInstanceOf(OnnxFormatException.class).hasMessageContaining("Loop node 'while'").hasMessageContaining("condition output has shape [2]");
        // a trip count of two values
        assertThatThrownBy(() -> OnnxModel.fromProto(doubling(true, false), "while.onnx").run(Map.of("x0", Tensor.of(new float[] {1, 2}, 2),
                "limit", Tensor.scalar(1f, DType.F32), "m", Tensor.of(new long[] {1, 2}, 2)))).isInstanceOf(RuntimeException.class)
                .hasMessageContaining("'m'");
    }
}

package dev.kiln.onnx;

import dev.kiln.Tensor;
import dev.kiln.runtime.DeviceRegistry;
import dev.kiln.types.DType;
import onnx.Onnx.AttributeProto;
import onnx.Onnx.GraphProto;
import onnx.Onnx.ModelProto;
import onnx.Onnx.NodeProto;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.net.URISyntaxException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.function.UnaryOperator;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * ONNX If: the models of {@code tools/golden/gen_onnx_control_flow.py} (a condition known when the model runs, a constant
 * condition whose branches differ in shape, an If inside a Scan body) against ONNX Runtime's outputs on every host device,
 * and malformed If nodes refused with one typed exception naming the node.
 */
class IfOpTest {

    private static Path cases() throws URISyntaxException {
        return Path.of(IfOpTest.class.getResource("/if/in_scan/model.onnx").toURI()).getParent().getParent();
    }

    @ParameterizedTest
    @ValueSource(strings = {"INTERP", "CPU", "CLANG"})
    void modelsMatchOnnxRuntime(String device) throws Exception {
        var unavailable = DeviceRegistry.providers().get(device).unavailableReason();
        if (unavailable.isPresent()) System.out.println("If tests on " + device + " skipped: " + unavailable.get());
        Assumptions.assumeTrue(unavailable.isEmpty(), () -> device + " unavailable: " + unavailable.orElse(""));
        ConformanceRunner.Report report = ConformanceRunner.run(List.of(cases()), device, line -> {});
        assertThat(report.results()).hasSize(4);
        assertThat(report.results()).allSatisfy(r -> assertThat(r.status()).as(r.line()).isEqualTo(ConformanceRunner.Status.PASS));
    }

    private static ModelProto model(String name) throws Exception {
        return ModelProto.parseFrom(Files.readAllBytes(cases().resolve(name).resolve("model.onnx")));
    }

    /** The model with its If node's graph attribute {@code attr} edited (null: removed). */
    private static ModelProto withBranch(ModelProto m, String attr, UnaryOperator<GraphProto.Builder> edit) {
        NodeProto.Builder n = m.getGraph().getNode(0).toBuilder().clearAttribute();
        for (AttributeProto a : m.getGraph().getNode(0).getAttributeList()) {
            if (!a.getName().equals(attr)) n.addAttribute(a);
            else if (edit != null) n.addAttribute(a.toBuilder().setG(edit.apply(a.getG().toBuilder())));
        }
        return m.toBuilder().setGraph(m.getGraph().toBuilder().setNode(0, n)).build();
    }

    private static List<Tensor> run(ModelProto m, Tensor cond) {
        var d = DeviceRegistry.get("INTERP");
        return OnnxModel.fromProto(m, "if.onnx").run(Map.of("c", cond.to(d), "x", Tensor.zeros(DType.F32, 2, 3).to(d),
                "n", Tensor.zeros(DType.I64, 3).to(d)));
    }

    @Test
    void malformedIfNodesAreRefusedNamingTheNode() throws Exception {
        ModelProto m = model("runtime_condition_true");
        Tensor yes = Tensor.of(new boolean[] {true});
        assertThatThrownBy(() -> OnnxModel.fromProto(withBranch(m, "else_branch", null), "if.onnx")).isInstanceOf(OnnxFormatException.class)
                .hasMessageContaining("requires the attribute else_branch");
        assertThatThrownBy(() -> run(withBranch(m, "then_branch", b -> b.addInput(b.getOutput(0).toBuilder().setName("extra"))), yes.reshape()))
                .isInstanceOf(OnnxFormatException.class).hasMessageContaining("If node 'y': then_branch has inputs [extra]; an If branch takes none");
        assertThatThrownBy(() -> run(withBranch(m, "else_branch", b -> b.removeOutput(1)), yes.reshape())).isInstanceOf(OnnxFormatException.class)
                .hasMessageContaining("else_branch gives 1 outputs, the node has 2");
        assertThatThrownBy(() -> run(m, Tensor.of(new boolean[] {true, false}))).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("'c'");
        // branches whose output 0 differs in rank: under run the condition is read and its branch taken; a prepared plan takes
        // the branch each run chooses, built once for each (branchesOfDifferentRanksInAPreparedPlan)
        ModelProto ranks = withBranch(m, "else_branch", b -> b.setNode(0, NodeProto.newBuilder().setOpType("ReduceSum").addInput("x")
                .addOutput("e0").addAttribute(AttributeProto.newBuilder().setName("keepdims").setType(AttributeProto.AttributeType.INT).setI(0))));
        assertThat(run(ranks, yes.reshape()).getFirst().dims()).containsExactly(2, 3);
        assertThat(run(ranks, Tensor.of(new boolean[] {false}).reshape()).getFirst().dims()).isEmpty();
        try (OnnxPlan plan = OnnxModel.fromProto(ranks, "if.onnx").prepare(DeviceRegistry.get("INTERP"), Map.of())) {
            Map<String, Tensor> in = new java.util.HashMap<>(Map.of("x", Tensor.zeros(DType.F32, 2, 3), "n", Tensor.zeros(DType.I64, 3)));
            in.put("c", Tensor.of(new boolean[] {false}).reshape());
            assertThat(plan.run(in).getFirst().dims()).isEmpty();
            in.put("c", yes.reshape());
            assertThat(plan.run(in).getFirst().dims()).containsExactly(2, 3);
        }
        // a branch's operator Kiln lacks is refused when the model loads
        assertThatThrownBy(() -> OnnxModel.fromProto(withBranch(m, "then_branch", b -> b.setNode(0, b.getNode(0).toBuilder().setOpType("NoSuchOp"))),
                "if.onnx")).isInstanceOf(UnsupportedOnnxOpException.class).hasMessageContaining("NoSuchOp");
    }

    /** A constant condition builds only the branch it takes: the other one is never built (its shape may differ). */
    @Test
    void aConstantConditionBuildsOneBranch() throws Exception {
        ModelProto m = model("constant_condition");
        float[] x = {1, -2, 3, -4, 5, -6, 7, -8};
        List<Tensor> out = OnnxModel.fromProto(m, "if.onnx").run(Map.of("x", Tensor.of(x, 4, 2)));
        assertThat(out.getFirst().dims()).containsExactly(4, 2);
        assertThat(out.getFirst().toFloatArray()).containsExactly(1, 0, 3, 0, 5, 0, 7, 0);
    }

    /** A branch may give a value of the enclosing graph as its output, with no node in between (a common "else x"). */
    @Test
    void aBranchOutputMayNameAnOuterValue() {
        int f = onnx.Onnx.TensorProto.DataType.FLOAT_VALUE, b = onnx.Onnx.TensorProto.DataType.BOOL_VALUE;
        GraphProto.Builder then = GraphProto.newBuilder().setName("then")
                .addNode(NodeProto.newBuilder().setOpType("Neg").setName("neg").addInput("x").addOutput("nx"))
                .addOutput(OnnxTestModels.anyShape("nx", f));
        GraphProto.Builder otherwise = GraphProto.newBuilder().setName("else").addOutput(OnnxTestModels.anyShape("x", f));
        GraphProto.Builder g = GraphProto.newBuilder().addInput(OnnxTestModels.value("c", b)).addInput(OnnxTestModels.value("x", f, 3))
                .addNode(NodeProto.newBuilder().setOpType("If").setName("branch").addInput("c").addOutput("y")
                        .addAttribute(AttributeProto.newBuilder().setName("then_branch").setType(AttributeProto.AttributeType.GRAPH).setG(then))
                        .addAttribute(AttributeProto.newBuilder().setName("else_branch").setType(AttributeProto.AttributeType.GRAPH).setG(otherwise)))
                .addOutput(OnnxTestModels.anyShape("y", f));
        OnnxModel model = OnnxModel.fromProto(OnnxTestModels.model(13, g), "if.onnx");
        float[] x = {1, -2, 3};
        for (boolean c : new boolean[] {true, false}) {
            List<Tensor> out = model.run(Map.of("c", Tensor.of(new boolean[] {c}).reshape(), "x", Tensor.of(x, 3)));
            assertThat(out.getFirst().toFloatArray()).as("condition %s", c).containsExactly(c ? new float[] {-1, 2, -3} : x);
        }
    }

    /**
     * A branch built inside a prepared plan reads the plan's inputs, which have no values while it is built: an operator
     * there that needs them (NonZero) selects when the plan runs, as in the main graph, instead of reading the zeros the
     * input buffers hold then. Branches whose output differs in size (NonZero's count in one, a fixed [1, 2] in the other)
     * are selected when the plan runs by a sized step: each run gives the chosen branch's value at its size; an output the
     * branches give alike (x + x or x * x) is selected element-wise. Against Java, on each branch and count.
     */
    @ParameterizedTest
    @ValueSource(strings = {"INTERP", "CPU"})
    void branchesOfDifferentSizesInAPreparedPlan(String device) {
        var unavailable = DeviceRegistry.providers().get(device).unavailableReason();
        Assumptions.assumeTrue(unavailable.isEmpty(), () -> device + " unavailable: " + unavailable.orElse(""));
        var d = DeviceRegistry.get(device);
        int f = onnx.Onnx.TensorProto.DataType.FLOAT_VALUE, b = onnx.Onnx.TensorProto.DataType.BOOL_VALUE, i64 = onnx.Onnx.TensorProto.DataType.INT64_VALUE;
        GraphProto.Builder then = GraphProto.newBuilder().setName("then")
                .addNode(NodeProto.newBuilder().setOpType("NonZero").setName("nz").addInput("x").addOutput("t"))
                .addNode(NodeProto.newBuilder().setOpType("Add").setName("twice").addInput("x").addInput("x").addOutput("t2"))
                .addOutput(OnnxTestModels.anyShape("t", i64)).addOutput(OnnxTestModels.anyShape("t2", f));
        GraphProto.Builder otherwise = GraphProto.newBuilder().setName("else")
                .addInitializer(onnx.Onnx.TensorProto.newBuilder().setName("e").setDataType(i64).addDims(1).addDims(2).addInt64Data(7).addInt64Data(8))
                .addNode(NodeProto.newBuilder().setOpType("Mul").setName("square").addInput("x").addInput("x").addOutput("e2"))
                .addOutput(OnnxTestModels.anyShape("e", i64)).addOutput(OnnxTestModels.anyShape("e2", f));
        GraphProto.Builder g = GraphProto.newBuilder().addInput(OnnxTestModels.value("c", b)).addInput(OnnxTestModels.value("x", f, 4))
                .addNode(NodeProto.newBuilder().setOpType("If").setName("branch").addInput("c").addOutput("y").addOutput("z")
                        .addAttribute(AttributeProto.newBuilder().setName("then_branch").setType(AttributeProto.AttributeType.GRAPH).setG(then))
                        .addAttribute(AttributeProto.newBuilder().setName("else_branch").setType(AttributeProto.AttributeType.GRAPH).setG(otherwise)))
                .addOutput(OnnxTestModels.anyShape("y", i64)).addOutput(OnnxTestModels.anyShape("z", f));
        OnnxModel model = OnnxModel.fromProto(OnnxTestModels.model(13, g), "if.onnx");
        long baseline = dev.kiln.runtime.MemoryStats.liveBytes();
        try (OnnxPlan plan = model.prepare(d, Map.of())) {
            float[][] xs = {{0, 3, 0, 4}, {0, 3, 0, 4}, {1, 1, 1, 1}, {0, 0, 0, 0}, {2, -1, 0, 5}};
            boolean[] cs = {true, false, true, true, false};
            for (int r = 0; r < xs.length; r++) {
                float[] x = xs[r];
                List<Tensor> out = plan.run(Map.of("c", Tensor.of(new boolean[] {cs[r]}).reshape().to(d).realize(), "x", Tensor.of(x, 4).to(d).realize()));
                long[] want = cs[r] ? java.util.stream.IntStream.range(0, 4).filter(k -> x[k] != 0).asLongStream().toArray() : new long[] {7, 8};
                float[] z = new float[4];
                for (int k = 0; k < 4; k++) z[k] = cs[r] ? x[k] + x[k] : x[k] * x[k];
                assertThat(out.get(0).dims()).as("run %d", r).containsExactly(1, want.length);
                assertThat(out.get(0).toLongArray()).as("run %d", r).containsExactly(want);
                assertThat(out.get(1).toFloatArray()).as("run %d", r).containsExactly(z);
            }
        }
        assertThat(dev.kiln.runtime.MemoryStats.liveBytes()).as("the plan's memory is freed").isEqualTo(baseline);
        List<Tensor> out = model.run(Map.of("c", Tensor.of(new boolean[] {true}).reshape(), "x", Tensor.of(new float[] {0, 3, 0, 4}, 4)));
        assertThat(out.getFirst().toLongArray()).containsExactly(1, 3);
    }

    /**
     * Branches whose output differs on two axes ({@code NonZero(x)}, [1, count], or a constant [2, 3]) in a prepared plan:
     * each run gives the chosen branch's value with both axes at its size, and a reduction over it (ReduceSum to a scalar)
     * reads exactly those elements. Against Java, on each branch and count.
     */
    @ParameterizedTest
    @ValueSource(strings = {"INTERP", "CPU"})
    void branchesDifferingOnTwoAxesInAPreparedPlan(String device) {
        var unavailable = DeviceRegistry.providers().get(device).unavailableReason();
        Assumptions.assumeTrue(unavailable.isEmpty(), () -> device + " unavailable: " + unavailable.orElse(""));
        var d = DeviceRegistry.get(device);
        int f = onnx.Onnx.TensorProto.DataType.FLOAT_VALUE, b = onnx.Onnx.TensorProto.DataType.BOOL_VALUE, i64 = onnx.Onnx.TensorProto.DataType.INT64_VALUE;
        GraphProto.Builder then = GraphProto.newBuilder().setName("then")
                .addNode(NodeProto.newBuilder().setOpType("NonZero").setName("nz").addInput("x").addOutput("t"))
                .addOutput(OnnxTestModels.anyShape("t", i64));
        onnx.Onnx.TensorProto.Builder e = onnx.Onnx.TensorProto.newBuilder().setName("e").setDataType(i64).addDims(2).addDims(3);
        for (long v = 1; v <= 6; v++) e.addInt64Data(v);
        GraphProto.Builder otherwise = GraphProto.newBuilder().setName("else").addInitializer(e).addOutput(OnnxTestModels.anyShape("e", i64));
        GraphProto.Builder g = GraphProto.newBuilder().addInput(OnnxTestModels.value("c", b)).addInput(OnnxTestModels.value("x", f, 4))
                .addNode(NodeProto.newBuilder().setOpType("If").setName("branch").addInput("c").addOutput("y")
                        .addAttribute(AttributeProto.newBuilder().setName("then_branch").setType(AttributeProto.AttributeType.GRAPH).setG(then))
                        .addAttribute(AttributeProto.newBuilder().setName("else_branch").setType(AttributeProto.AttributeType.GRAPH).setG(otherwise)))
                .addNode(NodeProto.newBuilder().setOpType("ReduceSum").setName("sum").addInput("y").addOutput("s")
                        .addAttribute(AttributeProto.newBuilder().setName("keepdims").setType(AttributeProto.AttributeType.INT).setI(0)))
                .addOutput(OnnxTestModels.anyShape("y", i64)).addOutput(OnnxTestModels.value("s", i64));
        OnnxModel model = OnnxModel.fromProto(OnnxTestModels.model(13, g), "if2.onnx");
        long baseline = dev.kiln.runtime.MemoryStats.liveBytes();
        try (OnnxPlan plan = model.prepare(d, Map.of())) {
            float[][] xs = {{0, 3, 0, 4}, {0, 3, 0, 4}, {1, 1, 1, 1}, {0, 0, 0, 0}, {2, -1, 0, 5}, {0, 0, 7, 0}};
            boolean[] cs = {true, false, true, true, false, true};
            for (int r = 0; r < xs.length; r++) {
                float[] x = xs[r];
                List<Tensor> out = plan.run(Map.of("c", Tensor.of(new boolean[] {cs[r]}).reshape().to(d).realize(), "x", Tensor.of(x, 4).to(d).realize()));
                long[] want = cs[r] ? java.util.stream.IntStream.range(0, 4).filter(k -> x[k] != 0).asLongStream().toArray() : new long[] {1, 2, 3, 4, 5, 6};
                if (cs[r]) assertThat(out.get(0).dims()).as("run %d", r).containsExactly(1, want.length);
                else assertThat(out.get(0).dims()).as("run %d", r).containsExactly(2, 3);
                assertThat(out.get(0).toLongArray()).as("run %d", r).containsExactly(want);
                assertThat(out.get(1).toLongArray()).as("run %d", r).containsExactly(java.util.Arrays.stream(want).sum());
            }
        }
        assertThat(dev.kiln.runtime.MemoryStats.liveBytes()).as("the plan's memory is freed").isEqualTo(baseline);
    }

    /**
     * Branches whose output differs in rank ({@code x[k]}, a scalar, or {@code x * 2}, [4]) in a prepared plan, read on by
     * an Add: the plan is built with then_branch, and a run that chooses else_branch repeats on a build with it, kept for the
     * next such run (the plan alternates between the two builds without building again). The condition is checked before the
     * branch runs: a run of else_branch with an index out of range for then_branch's Gather gives else_branch's value, not
     * the Gather's error. Against Java.
     */
    @ParameterizedTest
    @ValueSource(strings = {"INTERP", "CPU"})
    void branchesOfDifferentRanksInAPreparedPlan(String device) {
        var unavailable = DeviceRegistry.providers().get(device).unavailableReason();
        Assumptions.assumeTrue(unavailable.isEmpty(), () -> device + " unavailable: " + unavailable.orElse(""));
        var d = DeviceRegistry.get(device);
        int f = onnx.Onnx.TensorProto.DataType.FLOAT_VALUE, b = onnx.Onnx.TensorProto.DataType.BOOL_VALUE, i64 = onnx.Onnx.TensorProto.DataType.INT64_VALUE;
        GraphProto.Builder then = GraphProto.newBuilder().setName("then")
                .addNode(NodeProto.newBuilder().setOpType("Gather").setName("pick").addInput("x").addInput("k").addOutput("t"))
                .addOutput(OnnxTestModels.anyShape("t", f));
        GraphProto.Builder otherwise = GraphProto.newBuilder().setName("else")
                .addInitializer(onnx.Onnx.TensorProto.newBuilder().setName("two").setDataType(f).addFloatData(2))
                .addNode(NodeProto.newBuilder().setOpType("Mul").setName("double").addInput("x").addInput("two").addOutput("e"))
                .addOutput(OnnxTestModels.anyShape("e", f));
        GraphProto.Builder g = GraphProto.newBuilder().addInput(OnnxTestModels.value("c", b)).addInput(OnnxTestModels.value("x", f, 4))
                .addInput(OnnxTestModels.value("k", i64))
                .addInitializer(onnx.Onnx.TensorProto.newBuilder().setName("half").setDataType(f).addFloatData(0.5f))
                .addNode(NodeProto.newBuilder().setOpType("If").setName("branch").addInput("c").addOutput("y")
                        .addAttribute(AttributeProto.newBuilder().setName("then_branch").setType(AttributeProto.AttributeType.GRAPH).setG(then))
                        .addAttribute(AttributeProto.newBuilder().setName("else_branch").setType(AttributeProto.AttributeType.GRAPH).setG(otherwise)))
                .addNode(NodeProto.newBuilder().setOpType("Add").setName("after").addInput("y").addInput("half").addOutput("z"))
                .addOutput(OnnxTestModels.anyShape("y", f)).addOutput(OnnxTestModels.anyShape("z", f));
        OnnxModel model = OnnxModel.fromProto(OnnxTestModels.model(13, g), "ranks.onnx");
        float[] x = {3, -1, 4, 10};
        long baseline = dev.kiln.runtime.MemoryStats.liveBytes();
        try (OnnxPlan plan = model.prepare(d, Map.of())) {
            boolean[] cs = {true, false, true, false, false, true};
            long[] ks = {1, 99, 3, -50, 2, 0};
            List<dev.kiln.runtime.ExecutionPlan> plans = new java.util.ArrayList<>();
            for (int r = 0; r < cs.length; r++) {
                List<Tensor> out = plan.run(Map.of("c", Tensor.of(new boolean[] {cs[r]}).reshape().to(d).realize(), "x", Tensor.of(x, 4).to(d).realize(),
                        "k", Tensor.scalar(ks[r], dev.kiln.types.DType.I64).to(d).realize()));
                float[] want = cs[r] ? new float[] {x[(int) ks[r]]} : new float[] {6, -2, 8, 20};
                float[] wantZ = want.clone();
                for (int j = 0; j < wantZ.length; j++) wantZ[j] += 0.5f;
                if (cs[r]) assertThat(out.get(0).dims()).as("run %d", r).isEmpty();
                else assertThat(out.get(0).dims()).as("run %d", r).containsExactly(4);
                assertThat(out.get(0).toFloatArray()).as("run %d", r).containsExactly(want);
                assertThat(out.get(1).toFloatArray()).as("run %d", r).containsExactly(wantZ);
                plans.add(plan.plan());
            }
            assertThat(plans.get(2)).as("back to then_branch: the first build, kept").isSameAs(plans.get(0));
            assertThat(plans.get(3)).as("back to else_branch: the second build, kept").isSameAs(plans.get(1)).isNotSameAs(plans.get(0));
        }
        assertThat(dev.kiln.runtime.MemoryStats.liveBytes()).as("both builds' memory is freed").isEqualTo(baseline);
    }

    /**
     * An If of different ranks inside a Loop body, in a prepared plan: with a condition that holds for every iteration of a
     * run (a graph input), each run takes its build; with one that changes between iterations ({@code i == 1}), no build
     * serves the run, which is refused naming the If.
     */
    @Test
    void branchesOfDifferentRanksInsideALoopBody() {
        var d = DeviceRegistry.get("INTERP");
        int f = onnx.Onnx.TensorProto.DataType.FLOAT_VALUE, b = onnx.Onnx.TensorProto.DataType.BOOL_VALUE, i64 = onnx.Onnx.TensorProto.DataType.INT64_VALUE;
        for (boolean perIteration : new boolean[] {false, true}) {
            GraphProto.Builder then = GraphProto.newBuilder().setName("then")
                    .addNode(NodeProto.newBuilder().setOpType("Identity").setName("same").addInput("x").addOutput("t"))
                    .addOutput(OnnxTestModels.anyShape("t", f));
            GraphProto.Builder otherwise = GraphProto.newBuilder().setName("else")
                    .addNode(NodeProto.newBuilder().setOpType("ReduceMax").setName("max").addInput("x").addOutput("e")
                            .addAttribute(AttributeProto.newBuilder().setName("keepdims").setType(AttributeProto.AttributeType.INT).setI(0)))
                    .addOutput(OnnxTestModels.anyShape("e", f));
            GraphProto.Builder body = GraphProto.newBuilder().setName("body")
                    .addInput(OnnxTestModels.value("i", i64)).addInput(OnnxTestModels.value("cond_in", b)).addInput(OnnxTestModels.value("acc_in", f))
                    .addNode(NodeProto.newBuilder().setOpType("Equal").setName("is1").addInput("i").addInput("one").addOutput("at1"))
                    .addNode(NodeProto.newBuilder().setOpType("If").setName("inner").addInput(perIteration ? "at1" : "c").addOutput("y")
                            .addAttribute(AttributeProto.newBuilder().setName("then_branch").setType(AttributeProto.AttributeType.GRAPH).setG(then))
                            .addAttribute(AttributeProto.newBuilder().setName("else_branch").setType(AttributeProto.AttributeType.GRAPH).setG(otherwise)))
                    .addNode(NodeProto.newBuilder().setOpType("ReduceSum").setName("sum").addInput("y").addOutput("s")
                            .addAttribute(AttributeProto.newBuilder().setName("keepdims").setType(AttributeProto.AttributeType.INT).setI(0)))
                    .addNode(NodeProto.newBuilder().setOpType("Add").setName("acc").addInput("acc_in").addInput("s").addOutput("acc_out"))
                    .addNode(NodeProto.newBuilder().setOpType("Identity").setName("keep").addInput("cond_in").addOutput("cond_out"))
                    .addOutput(OnnxTestModels.value("cond_out", b)).addOutput(OnnxTestModels.value("acc_out", f));
            GraphProto.Builder g = GraphProto.newBuilder().addInput(OnnxTestModels.value("c", b)).addInput(OnnxTestModels.value("x", f, 3))
                    .addInitializer(onnx.Onnx.TensorProto.newBuilder().setName("m").setDataType(i64).addInt64Data(3))
                    .addInitializer(onnx.Onnx.TensorProto.newBuilder().setName("one").setDataType(i64).addInt64Data(1))
                    .addInitializer(onnx.Onnx.TensorProto.newBuilder().setName("zero").setDataType(f).addFloatData(0))
                    .addNode(NodeProto.newBuilder().setOpType("Loop").setName("loop").addInput("m").addInput("").addInput("zero").addOutput("total")
                            .addAttribute(AttributeProto.newBuilder().setName("body").setType(AttributeProto.AttributeType.GRAPH).setG(body)))
                    .addOutput(OnnxTestModels.value("total", f));
            try (OnnxPlan plan = OnnxModel.fromProto(OnnxTestModels.model(13, g), "loop_if.onnx").prepare(d, Map.of())) {
                java.util.function.Function<Boolean, List<Tensor>> run = c -> plan.run(Map.of("c", Tensor.of(new boolean[] {c}).reshape(),
                        "x", Tensor.of(new float[] {1, 5, 2}, 3)));
                if (perIteration) {
                    assertThatThrownBy(() -> run.apply(true)).isInstanceOf(UnsupportedOnnxOpException.class).hasMessageContaining("If node 'inner'")
                            .hasMessageContaining("chose both in one run");
                } else {
                    assertThat(run.apply(false).getFirst().toFloatArray()).containsExactly(15); // 3 x max
                    assertThat(run.apply(true).getFirst().toFloatArray()).containsExactly(24); // 3 x sum
                    assertThat(run.apply(false).getFirst().toFloatArray()).containsExactly(15);
                }
            }
        }
    }
}

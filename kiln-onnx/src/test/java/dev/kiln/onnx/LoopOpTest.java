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
 * ONNX Loop on {@link Tensor#loop}: the models of {@code tools/golden/gen_onnx_control_flow.py} against ONNX Runtime on
 * every host device; the plan does not grow with the iterations.
 */
class LoopOpTest {

    private static Path cases() throws URISyntaxException {
        return Path.of(LoopOpTest.class.getResource("/loop/for_loop/model.onnx").toURI()).getParent().getParent();
    }

    @ParameterizedTest
    @ValueSource(strings = {"INTERP", "CPU", "CLANG"})
    void modelsMatchOnnxRuntime(String device) throws Exception {
        var unavailable = DeviceRegistry.providers().get(device).unavailableReason();
        if (unavailable.isPresent()) System.out.println("Loop tests on " + device + " skipped: " + unavailable.get());
        Assumptions.assumeTrue(unavailable.isEmpty(), () -> device + " unavailable: " + unavailable.orElse(""));
        ConformanceRunner.Report report = ConformanceRunner.run(List.of(cases()), device, line -> {});
        assertThat(report.results()).hasSize(2);
        assertThat(report.results()).allSatisfy(r -> assertThat(r.status()).as(r.line()).isEqualTo(ConformanceRunner.Status.PASS));
    }

    private static ModelProto model(String name) throws Exception {
        return ModelProto.parseFrom(Files.readAllBytes(cases().resolve(name).resolve("model.onnx")));
    }

    private static ModelProto withBody(ModelProto m, UnaryOperator<GraphProto.Builder> edit) {
        NodeProto.Builder n = m.getGraph().getNode(0).toBuilder().clearAttribute();
        for (AttributeProto a : m.getGraph().getNode(0).getAttributeList()) n.addAttribute(a.getName().equals("body") ? a.toBuilder().setG(edit.apply(a.getG().toBuilder())).build() : a);
        return m.toBuilder().setGraph(m.getGraph().toBuilder().setNode(0, n)).build();
    }

    private static List<Tensor> run(ModelProto m) {
        var d = DeviceRegistry.get("INTERP");
        return OnnxModel.fromProto(m, "loop.onnx").run(Map.of("x0", Tensor.zeros(DType.F32, 3).to(d), "w", Tensor.ones(DType.F32, 3).to(d)));
    }

    /** Loops whose length is known only when they run (WhileLoopTest has more), and a malformed body refused naming why. */
    @Test
    void loopsOfUnknownLengthRun() throws Exception {
        ModelProto m = model("for_loop");
        // the body computes its condition, false from the first iteration: one iteration runs (M is 5)
        ModelProto computed = withBody(m, b -> b.setNode(3, NodeProto.newBuilder().setOpType("Less").addInput("i").addInput("i").addOutput("cond_out")));
        List<Tensor> once = run(computed);
        assertThat(once.get(0).toFloatArray()).containsExactly(0, 0, 0); // x += 0 * w
        assertThat(once.get(1).dims()).containsExactly(1, 3);
        // a float trip count is the model's fault
        NodeProto fromInput = m.getGraph().getNode(0).toBuilder().setInput(0, "x0").build();
        ModelProto floatCount = m.toBuilder().setGraph(m.getGraph().toBuilder().setNode(0, fromInput)).build();
        assertThatThrownBy(() -> run(floatCount)).isInstanceOf(OnnxFormatException.class).hasMessageContaining("trip count M must be one integer, got f32[3]");
        // a body without its iteration and condition inputs
        assertThatThrownBy(() -> run(withBody(m, b -> b.addInput(b.getInput(2).toBuilder().setName("extra"))))).isInstanceOf(OnnxFormatException.class)
                .hasMessageContaining("the body takes 4 inputs, expected 3");
    }

    /** The plan holds one host step however many iterations: M = 5 and M = 5,000 give plans of one size. */
    @Test
    void iterationsDoNotGrowThePlan() throws Exception {
        ModelProto m = model("for_loop");
        int[] steps = new int[2];
        long[] counts = {5, 5000};
        for (int k = 0; k < 2; k++) {
            var init = m.getGraph().getInitializer(0).toBuilder().clearInt64Data().clearRawData().addInt64Data(counts[k]).build();
            var ys = m.getGraph().getOutput(1).toBuilder();
            ys.getTypeBuilder().getTensorTypeBuilder().getShapeBuilder().getDimBuilder(0).setDimValue(counts[k]);
            ModelProto longer = m.toBuilder().setGraph(m.getGraph().toBuilder().setInitializer(0, init).setOutput(1, ys)).build();
            List<Tensor> out = OnnxModel.fromProto(longer, "loop.onnx").run(Map.of("x0", Tensor.zeros(DType.F32, 3).realize(), "w", Tensor.ones(DType.F32, 3).realize()));
            try (var plan = out.getFirst().prepare()) {
                plan.execute();
                steps[k] = plan.preparedOps().size();
                double expected = counts[k] * (counts[k] - 1) / 2.0; // x = sum of i * 1
                assertThat(plan.outputBuffer().getDouble(0)).isEqualTo(expected);
            }
        }
        assertThat(steps[1]).isEqualTo(steps[0]);
    }
}

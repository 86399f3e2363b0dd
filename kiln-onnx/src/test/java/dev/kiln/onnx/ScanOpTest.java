package dev.kiln.onnx;

import dev.kiln.Tensor;
import dev.kiln.runtime.DeviceRegistry;
import org.junit.jupiter.api.Assumptions;
import onnx.Onnx.AttributeProto;
import onnx.Onnx.GraphProto;
import onnx.Onnx.ModelProto;
import onnx.Onnx.NodeProto;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.io.IOException;
import java.net.URISyntaxException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.function.UnaryOperator;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * ONNX Scan on {@link Tensor#scan}: the models of {@code tools/golden/gen_onnx_control_flow.py} (scan axes and directions, states
 * of two dtypes, values read from the enclosing graph, nested scans) against ONNX Runtime's outputs on every host device,
 * and malformed Scan nodes refused with one {@link OnnxFormatException} or {@link UnsupportedOnnxOpException} naming the node.
 */
class ScanOpTest {

    private static Path cases() throws URISyntaxException {
        return Path.of(ScanOpTest.class.getResource("/scan/nested/model.onnx").toURI()).getParent().getParent();
    }

    @ParameterizedTest
    @ValueSource(strings = {"INTERP", "CPU", "CLANG"})
    void modelsMatchOnnxRuntime(String device) throws Exception {
        var unavailable = DeviceRegistry.providers().get(device).unavailableReason();
        if (unavailable.isPresent()) System.out.println("Scan tests on " + device + " skipped: " + unavailable.get());
        Assumptions.assumeTrue(unavailable.isEmpty(), () -> device + " unavailable: " + unavailable.orElse(""));
        ConformanceRunner.Report report = ConformanceRunner.run(List.of(cases()), device, line -> {});
        assertThat(report.results()).hasSize(3);
        assertThat(report.results()).allSatisfy(r -> assertThat(r.status()).as(r.line()).isEqualTo(ConformanceRunner.Status.PASS));
    }

    private static ModelProto model(String name) throws Exception {
        return ModelProto.parseFrom(Files.readAllBytes(cases().resolve(name).resolve("model.onnx")));
    }

    /** The model with its first node's attribute {@code name} replaced (or removed, for null). */
    private static ModelProto withAttr(ModelProto m, String name, AttributeProto value) {
        NodeProto.Builder n = m.getGraph().getNode(0).toBuilder().clearAttribute();
        for (AttributeProto a : m.getGraph().getNode(0).getAttributeList()) if (!a.getName().equals(name)) n.addAttribute(a);
        if (value != null) n.addAttribute(value);
        return m.toBuilder().setGraph(m.getGraph().toBuilder().setNode(0, n)).build();
    }

    private static ModelProto withBody(ModelProto m, UnaryOperator<GraphProto.Builder> edit) {
        AttributeProto body = m.getGraph().getNode(0).getAttributeList().stream().filter(a -> a.getName().equals("body")).findFirst().orElseThrow();
        return withAttr(m, "body", body.toBuilder().setG(edit.apply(body.getG().toBuilder())).build());
    }

    private static AttributeProto ints(String name, long... v) {
        AttributeProto.Builder a = AttributeProto.newBuilder().setName(name).setType(AttributeProto.AttributeType.INTS);
        for (long x : v) a.addInts(x);
        return a.build();
    }

    private static AttributeProto count(long v) {
        return AttributeProto.newBuilder().setName("num_scan_inputs").setType(AttributeProto.AttributeType.INT).setI(v).build();
    }

    private static List<Tensor> run(ModelProto m) {
        var d = DeviceRegistry.get("INTERP");
        return OnnxModel.fromProto(m, "scan.onnx").run(Map.of("h0", Tensor.zeros(dev.kiln.types.DType.F32, 1, 4).to(d),
                "x", Tensor.zeros(dev.kiln.types.DType.F32, 40, 1, 4).to(d), "W", Tensor.zeros(dev.kiln.types.DType.F32, 4, 4).to(d)));
    }

    @Test
    void malformedScanNodesAreRefusedNamingTheNode() throws Exception {
        ModelProto rnn = model("rnn_outer_weight");
        assertThatThrownBy(() -> run(withAttr(rnn, "num_scan_inputs", count(0)))).isInstanceOf(OnnxFormatException.class)
                .hasMessageContaining("Scan node 'h_final': num_scan_inputs is 0, expected 1 to the node's 2 inputs");
        assertThatThrownBy(() -> run(withAttr(rnn, "num_scan_inputs", count(3)))).isInstanceOf(OnnxFormatException.class)
                .hasMessageContaining("num_scan_inputs is 3");
        assertThatThrownBy(() -> OnnxModel.fromProto(withAttr(rnn, "body", null), "scan.onnx")).isInstanceOf(OnnxFormatException.class)
                .hasMessageContaining("requires the attribute body");
        assertThatThrownBy(() -> run(withAttr(rnn, "scan_input_axes", ints("scan_input_axes", 0, 1)))).isInstanceOf(OnnxFormatException.class)
                .hasMessageContaining("scan_input_axes [0, 1] has 2 values, expected 1");
        assertThatThrownBy(() -> run(withAttr(rnn, "scan_input_axes", ints("scan_input_axes", 3)))).isInstanceOf(OnnxFormatException.class)
                .hasMessageContaining("scan_input_axes[0] 3 is out of range for rank 3");
        assertThatThrownBy(() -> run(withAttr(rnn, "scan_output_directions", ints("scan_output_directions", 2)))).isInstanceOf(OnnxFormatException.class)
                .hasMessageContaining("scan_output_directions[0] is 2, expected 0 (forward) or 1 (reverse)");
        // the body: an input too few, a value it never defines, an input that shadows the enclosing graph's, a state of another shape
        assertThatThrownBy(() -> run(withBody(rnn, b -> b.addInput(b.getInput(1).toBuilder().setName("extra"))))).isInstanceOf(OnnxFormatException.class)
                .hasMessageContaining("the body takes 3 inputs, the node gives 1 states and 1 scan inputs");
        assertThatThrownBy(() -> run(withBody(rnn, b -> b.setNode(0, b.getNode(0).toBuilder().setInput(1, "nowhere")))))
                .isInstanceOf(OnnxFormatException.class).hasMessageContaining("body").hasMessageContaining("reads 'nowhere'");
        assertThatThrownBy(() -> run(withBody(rnn, b -> b.setOutput(0, b.getOutput(0).toBuilder().setName("nowhere")))))
                .isInstanceOf(OnnxFormatException.class).hasMessageContaining("'nowhere'");
        assertThatThrownBy(() -> run(withBody(rnn, b -> b.setInput(1, b.getInput(1).toBuilder().setName("W")))))
                .isInstanceOf(OnnxFormatException.class).hasMessageContaining("input 'W' has the name of a value of the enclosing graph");
        AttributeProto keepdims = AttributeProto.newBuilder().setName("keepdims").setType(AttributeProto.AttributeType.INT).setI(0).build();
        assertThatThrownBy(() -> run(withBody(rnn, b -> b.addNode(NodeProto.newBuilder().setOpType("ReduceSum").addInput("pre").addOutput("total")
                .addAttribute(keepdims)).setOutput(0, b.getOutput(0).toBuilder().setName("total")))))
                .isInstanceOf(OnnxFormatException.class).hasMessageContaining("Scan node 'h_final'").hasMessageContaining("next state 0");
        // an operator the body uses that Kiln lacks is refused when the model loads, naming the body's node
        assertThatThrownBy(() -> OnnxModel.fromProto(withBody(rnn, b -> b.setNode(2, b.getNode(2).toBuilder().setOpType("NoSuchOp"))), "scan.onnx"))
                .isInstanceOf(UnsupportedOnnxOpException.class).hasMessageContaining("NoSuchOp");
        // opset 8's Scan (a batch axis and sequence lengths) is another operator
        ModelProto opset8 = rnn.toBuilder().setOpsetImport(0, rnn.getOpsetImport(0).toBuilder().setVersion(8)).build();
        assertThatThrownBy(() -> OnnxModel.fromProto(opset8, "scan.onnx")).isInstanceOf(UnsupportedOnnxOpException.class)
                .hasMessageContaining("from opset 9 on");
    }

    /** A body output may name a value of the enclosing graph itself, with no node in between: each step gives that value. */
    @Test
    void bodyOutputsNamingOuterValuesGiveThoseValues() throws Exception {
        ModelProto outerOutputs = withBody(model("rnn_outer_weight"), b -> b.setOutput(0, b.getOutput(0).toBuilder().setName("h0"))
                .setOutput(1, b.getOutput(1).toBuilder().setName("W")));
        var d = DeviceRegistry.get("INTERP");
        float[] h0 = {1, -2, 3, -4}, w = new float[16];
        for (int i = 0; i < w.length; i++) w[i] = i * 0.5f - 3;
        List<Tensor> out = OnnxModel.fromProto(outerOutputs, "scan.onnx").run(Map.of("h0", Tensor.of(h0, 1, 4).to(d),
                "x", Tensor.zeros(dev.kiln.types.DType.F32, 40, 1, 4).to(d), "W", Tensor.of(w, 4, 4).to(d)));
        assertThat(out.get(0).toFloatArray()).containsExactly(h0);
        assertThat(out.get(1).dims()).containsExactly(40, 4, 4);
        float[] ys = out.get(1).toFloatArray();
        for (int t = 0; t < 40; t++) assertThat(java.util.Arrays.copyOfRange(ys, 16 * t, 16 * t + 16)).as("step " + t).containsExactly(w);
    }

    /** The scan's plan does not grow with the steps: one host step however long the sequence. */
    @Test
    void longSequencesBuildOneStep() throws IOException, Exception {
        ModelProto rnn = model("rnn_outer_weight");
        var d = DeviceRegistry.get("CPU");
        List<Tensor> out = OnnxModel.fromProto(rnn, "scan.onnx").run(Map.of("h0", Tensor.zeros(dev.kiln.types.DType.F32, 1, 4).to(d).realize(),
                "x", Tensor.ones(dev.kiln.types.DType.F32, 40, 1, 4).to(d).realize(), "W", Tensor.zeros(dev.kiln.types.DType.F32, 4, 4).to(d).realize()));
        try (var plan = out.get(1).prepare()) {
            plan.execute();
            // the inputs' views, the scan's host step, the copy of its stacked outputs: nothing per step
            assertThat(plan.preparedOps()).hasSizeLessThanOrEqualTo(5);
            assertThat(plan.preparedOps()).filteredOn(op -> op instanceof dev.kiln.runtime.PreparedCustomFunction).hasSize(1);
            assertThat(plan.outputBuffer().getDouble(39 * 4)).isEqualTo(Math.tanh(1.0f), org.assertj.core.api.Assertions.within(1e-6));
        }
    }
}

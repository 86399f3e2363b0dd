package dev.kiln.onnx;

import dev.kiln.Tensor;
import dev.kiln.runtime.DeviceRegistry;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.nio.file.Path;
import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

/**
 * Models with control flow as users export them from PyTorch ({@code tools/golden/gen_torch_exports.py}: a scripted
 * data-dependent {@code if} and {@code while}, a scripted greedy decoder that grows its output with {@code torch.cat} and
 * breaks at the end-of-sequence token, a detector head ending in NonMaxSuppression), against PyTorch's own outputs.
 */
class TorchExportsTest {

    @ParameterizedTest
    @ValueSource(strings = {"INTERP", "CPU"})
    void exportsMatchPyTorch(String device) throws Exception {
        var unavailable = DeviceRegistry.providers().get(device).unavailableReason();
        Assumptions.assumeTrue(unavailable.isEmpty(), () -> device + " unavailable: " + unavailable.orElse(""));
        Path cases = Path.of(TorchExportsTest.class.getResource("/torch/nms_head/model.onnx").toURI()).getParent().getParent();
        ConformanceRunner.Report report = ConformanceRunner.run(List.of(cases), device, line -> {});
        assertThat(report.results()).extracting(ConformanceRunner.CaseResult::name)
                .containsExactlyInAnyOrder("greedy_decode", "nms_head", "script_if_while", "script_if_while_negative");
        assertThat(report.results()).allSatisfy(r -> assertThat(r.status()).as(r.line()).isEqualTo(ConformanceRunner.Status.PASS));
    }

    /**
     * The scripted {@code while} needs no input values while it is built: its trip count (INT64_MAX) and its condition are
     * read when the plan runs, so one prepared plan gives PyTorch's outputs for both signs of the input (the If selects).
     */
    @ParameterizedTest
    @ValueSource(strings = {"INTERP", "CPU"})
    void scriptedWhileLoopRunsInAPreparedPlan(String device) throws Exception {
        var unavailable = DeviceRegistry.providers().get(device).unavailableReason();
        Assumptions.assumeTrue(unavailable.isEmpty(), () -> device + " unavailable: " + unavailable.orElse(""));
        var d = DeviceRegistry.get(device);
        Path dir = Path.of(TorchExportsTest.class.getResource("/torch/script_if_while/model.onnx").toURI()).getParent();
        try (OnnxModel model = OnnxModel.load(dir.resolve("model.onnx")); OnnxPlan plan = model.prepare(d, Map.of())) {
            for (String c : List.of("script_if_while", "script_if_while_negative")) {
                Path data = dir.resolveSibling(c).resolve("test_data_set_0");
                List<Tensor> out = plan.run(Map.of("x", TensorProtos.read(data.resolve("input_0.pb")).to(d).realize()));
                Tensor y = TensorProtos.read(data.resolve("output_0.pb")), n = TensorProtos.read(data.resolve("output_1.pb"));
                assertThat(out.get(0).realize().toFloatArray()).as(c).containsExactly(y.toFloatArray(), within(1e-4f));
                assertThat(out.get(1).realize().toLongArray()).as(c).containsExactly(n.toLongArray());
            }
        }
    }
}

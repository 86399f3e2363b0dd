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

    /**
     * The detector head in one prepared plan, run on its four data sets in turn: NonMaxSuppression selects when the plan
     * runs (5, 5, 0 and 3 boxes), and the gathers of the kept boxes and scores follow each run's count.
     */
    @ParameterizedTest
    @ValueSource(strings = {"INTERP", "CPU"})
    void detectorHeadRunsInAPreparedPlan(String device) throws Exception {
        var unavailable = DeviceRegistry.providers().get(device).unavailableReason();
        Assumptions.assumeTrue(unavailable.isEmpty(), () -> device + " unavailable: " + unavailable.orElse(""));
        var d = DeviceRegistry.get(device);
        Path dir = Path.of(TorchExportsTest.class.getResource("/torch/nms_head/model.onnx").toURI()).getParent();
        long baseline = dev.kiln.runtime.MemoryStats.liveBytes();
        List<Integer> counts = new java.util.ArrayList<>();
        try (OnnxModel model = OnnxModel.load(dir.resolve("model.onnx")); OnnxPlan plan = model.prepare(d, Map.of())) {
            for (int set = 0; set < 4; set++) {
                Path data = dir.resolve("test_data_set_" + set);
                List<Tensor> out = plan.run(Map.of("features", TensorProtos.read(data.resolve("input_0.pb")).to(d).realize()));
                for (int k = 0; k < 3; k++) {
                    Tensor want = TensorProtos.read(data.resolve("output_" + k + ".pb"));
                    assertThat(out.get(k).dims()).as("set %d output %d", set, k).containsExactly(want.dims());
                    assertThat(out.get(k).toDoubleArray()).as("set %d output %d", set, k).containsExactly(want.toDoubleArray(), within(1e-5));
                }
                counts.add(out.getFirst().dims()[0]);
            }
        }
        assertThat(counts).containsExactly(5, 5, 0, 3);
        assertThat(dev.kiln.runtime.MemoryStats.liveBytes()).as("the plan's memory is freed").isEqualTo(baseline);
    }
}

package dev.kiln.onnx;

import dev.kiln.runtime.DeviceRegistry;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.nio.file.Path;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

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
}

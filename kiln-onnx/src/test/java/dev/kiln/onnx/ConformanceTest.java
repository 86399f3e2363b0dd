package dev.kiln.onnx;

import dev.kiln.runtime.DeviceRegistry;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Optional;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Runs the ONNX conformance data ({@code ../shared/conformance} beside the repository, or the folder named by the
 * system property {@code kiln.conformance}) on each device: no case may fail, and the pass rates must stay at or
 * above the floors of issue 6. CLANG runs where a C compiler is installed. Each device's report is written to {@code target/CONFORMANCE-<device>.md}.
 */
class ConformanceTest {
    /** The floors: onnx-node 85%, onnx-pytorch-operator 90%. */
    static final double NODE_FLOOR = 0.85, PYTORCH_FLOOR = 0.90;

    static Path data() {
        String p = System.getProperty("kiln.conformance");
        // surefire runs in the module folder: the repository root is its parent
        return p != null ? Path.of(p) : Path.of("").toAbsolutePath().getParent().resolveSibling("shared").resolve("conformance");
    }

    @ParameterizedTest
    @ValueSource(strings = {"INTERP", "CPU", "CLANG"})
    void suitesPassOn(String device) throws IOException {
        Optional<String> unavailable = DeviceRegistry.providers().get(device).unavailableReason();
        if (unavailable.isPresent()) System.out.println("ONNX conformance on " + device + " skipped: " + unavailable.get());
        Assumptions.assumeTrue(unavailable.isEmpty(), () -> device + " unavailable: " + unavailable.orElse(""));
        Path root = data();
        Path node = root.resolve("onnx-node"), pytorch = root.resolve("onnx-pytorch-operator");
        if (!Files.isDirectory(node) || !Files.isDirectory(pytorch)) System.out.println("ONNX conformance data not found at " + root + "; skipped");
        Assumptions.assumeTrue(Files.isDirectory(node) && Files.isDirectory(pytorch), () -> "ONNX conformance data not found at " + root);

        long start = System.nanoTime();
        ConformanceRunner.Report report = ConformanceRunner.run(List.of(node, pytorch), device, line -> {});
        System.out.printf("ONNX conformance on %s: %s in %.1f s%n", device, report.summary(), (System.nanoTime() - start) / 1e9);
        Files.createDirectories(Path.of("target"));
        Files.writeString(Path.of("target", "CONFORMANCE-" + device + ".md"), ConformanceRunner.markdown(List.of(report)));

        List<String> failures = report.results().stream().filter(r -> r.status() == ConformanceRunner.Status.FAIL).map(ConformanceRunner.CaseResult::line).toList();
        assertThat(failures).as("failed cases on " + device).isEmpty();
        assertThat(passRate(report, "onnx-node")).as("onnx-node pass rate on " + device).isGreaterThanOrEqualTo(NODE_FLOOR);
        assertThat(passRate(report, "onnx-pytorch-operator")).as("onnx-pytorch-operator pass rate on " + device).isGreaterThanOrEqualTo(PYTORCH_FLOOR);
    }

    private static double passRate(ConformanceRunner.Report report, String suite) {
        List<ConformanceRunner.CaseResult> rs = report.suite(suite);
        return (double) rs.stream().filter(r -> r.status() == ConformanceRunner.Status.PASS).count() / rs.size();
    }
}

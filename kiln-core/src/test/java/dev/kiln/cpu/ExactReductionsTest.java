package dev.kiln.cpu;

import dev.kiln.codegen.ReductionOrder;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * {@code kiln.reductions=exact} keeps every reduction in INTERP's order on the compiled devices (no packed GEMM,
 * no GROUP), so a matmul and a sum equal INTERP bit for bit; the default reorders. Each order runs in a JVM of
 * its own, since the order is chosen once per process.
 */
class ExactReductionsTest {
    private static String probe(Path cache, String order) throws Exception {
        List<String> cmd = List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "--add-modules", "jdk.incubator.vector", "--enable-native-access=ALL-UNNAMED", "-Dkiln.cache.dir=" + cache,
                "-Dkiln.reductions=" + order, "-cp", System.getProperty("java.class.path"), ExactReductionsProbe.class.getName());
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertThat(p.waitFor(120, TimeUnit.SECONDS)).isTrue();
        assertThat(p.exitValue()).as(out).isZero();
        return out;
    }

    @Test
    void exactOrderEqualsInterpBitForBitAndTheDefaultRunsTheGemm(@TempDir Path cache) throws Exception {
        String exact = probe(cache, "exact");
        assertThat(exact).contains("order=EXACT").contains("CPU matmul: gemm=false bitsEqualInterp=true")
                .contains("CPU sum: gemm=false bitsEqualInterp=true");
        if (exact.contains("CLANG")) {
            assertThat(exact).contains("CLANG matmul: gemm=false bitsEqualInterp=true").contains("CLANG sum: gemm=false bitsEqualInterp=true");
        }
        // the same cache folder: the fast order must not reuse the exact programs, nor the other way round
        String fast = probe(cache, "fast");
        assertThat(fast).contains("order=FAST").contains("CPU matmul: gemm=true");
    }

    @Test
    void anUnknownOrderIsRejectedWithTheValidOnes() {
        assertThat(ReductionOrder.parse(null)).isEqualTo(ReductionOrder.FAST);
        assertThat(ReductionOrder.parse(" Exact ")).isEqualTo(ReductionOrder.EXACT);
        assertThatThrownBy(() -> ReductionOrder.parse("fastest")).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("'fast' or 'exact'").hasMessageContaining("fastest");
    }
}

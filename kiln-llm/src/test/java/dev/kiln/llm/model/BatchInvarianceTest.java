package dev.kiln.llm.model;

import dev.kiln.runtime.DeviceRegistry;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.junit.jupiter.api.io.TempDir;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Batch invariance of a decode step on CLANG: a sequence's logits are the same bits whether it steps alone or in a full
 * batched step of 8 slots (the server's continuous batching), with x in f32 and quantised (where 8 rows of quantised x
 * take the int8 GEMM and one row the dot products), for every quantised test model. So `kiln serve` answers as `kiln
 * generate` does. With exact reductions every kernel sums in INTERP's order; in the default (fast) order the products
 * and the attention are native steps whose sums do not depend on the other rows (NativeBlockProducts), and the rest
 * reduces within a row.
 */
class BatchInvarianceTest {
    @ParameterizedTest
    @ValueSource(strings = {"exact", "fast"})
    void aSequenceGetsTheSameLogitsAloneAndInAFullBatch(String order, @TempDir Path cache) throws Exception {
        var reason = DeviceRegistry.providers().get("CLANG").unavailableReason();
        Assumptions.assumeTrue(reason.isEmpty(), () -> "CLANG device unavailable: " + reason.orElse(""));
        List<String> cmd = List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "--add-modules", "jdk.incubator.vector", "--enable-native-access=ALL-UNNAMED", "-Dkiln.cache.dir=" + cache,
                "-Dkiln.reductions=" + order, "-cp", System.getProperty("java.class.path"), BatchInvarianceProbe.class.getName(), "CLANG");
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertThat(p.waitFor(300, TimeUnit.SECONDS)).isTrue();
        assertThat(p.exitValue()).as(out).isZero();
        assertThat(out).contains("order=" + order);
        for (LlmFixtures.Case c : LlmFixtures.QUANTISED) {
            assertThat(out).as(out).contains(c + " x f32: same bits").contains(c + " x quantised: same bits");
        }
    }
}

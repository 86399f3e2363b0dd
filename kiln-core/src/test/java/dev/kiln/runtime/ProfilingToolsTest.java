package dev.kiln.runtime;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** The Chrome trace writer and the benchmark timer. */
class ProfilingToolsTest {
    @Test
    void traceIsValidTraceEventJson(@TempDir Path dir) throws Exception {
        var profiles = List.of(
                new KernelProfile("E_4x4 \"quoted\"", 0, 1_500, 32, 128, "kiln-worker-0", "src"),
                new KernelProfile("r_sum\n", 2_000, 500, 16, 64, "kiln-worker-1", ""));
        Path file = dir.resolve("trace.json");
        ChromeTrace.write(file, profiles);
        JsonNode root = new ObjectMapper().readTree(Files.readString(file));
        JsonNode events = root.get("traceEvents");
        assertThat(events).hasSize(2);
        assertThat(events.get(0).get("name").asText()).isEqualTo("E_4x4 \"quoted\"");
        assertThat(events.get(0).get("ph").asText()).isEqualTo("X");
        assertThat(events.get(0).get("dur").asDouble()).isEqualTo(1.5);
        assertThat(events.get(1).get("ts").asDouble()).isEqualTo(2.0);
        assertThat(events.get(1).get("args").get("gflops").asDouble()).isEqualTo(0.032);
        assertThat(Files.exists(dir.resolve("trace.json.tmp"))).isFalse();
    }

    @Test
    void benchmarkRunsWarmupThenRepetitionsAndReportsOrderStatistics() {
        int[] runs = {0};
        Benchmark.Result r = Benchmark.run(() -> runs[0]++, new Benchmark.Config(2, 7, 1_000_000_000L));
        assertThat(runs[0]).isEqualTo(9);
        assertThat(r.runs()).isEqualTo(7);
        assertThat(r.minNanos()).isLessThanOrEqualTo(r.medianNanos()).isLessThanOrEqualTo(r.maxNanos());
    }

    @Test
    void benchmarkStopsAtItsTimeBudget() {
        Benchmark.Result r = Benchmark.run(() -> sleep(5), new Benchmark.Config(0, 1000, 20_000_000L));
        assertThat(r.runs()).isLessThan(1000).isGreaterThanOrEqualTo(1);
        assertThatThrownBy(() -> new Benchmark.Config(0, 0, 1)).isInstanceOf(IllegalArgumentException.class).hasMessageContaining("repetitions");
    }

    private static void sleep(long ms) {
        try {
            Thread.sleep(ms);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}

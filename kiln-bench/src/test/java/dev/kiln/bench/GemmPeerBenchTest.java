package dev.kiln.bench;

import dev.kiln.runtime.MachinePeak;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.within;

/** The GEMM peer harness on tiny sizes: each peer's product, the NumPy protocol, the options and the table. */
class GemmPeerBenchTest {
    static final int N = 9;
    static final GemmRun.Timing THREE_RUNS = new GemmRun.Timing(1, Duration.ZERO, 3, Duration.ofSeconds(10));

    static float[] naive(float[] a, float[] b, int n) {
        float[] c = new float[n * n];
        for (int i = 0; i < n; i++) {
            for (int j = 0; j < n; j++) {
                double s = 0;
                for (int k = 0; k < n; k++) s += (double) a[i * n + k] * b[k * n + j];
                c[i * n + j] = (float) s;
            }
        }
        return c;
    }

    @Test
    void kilnCpuAndOrtComputeTheProduct() {
        float[] a = GemmPeerBench.uniform(N * N, 1), b = GemmPeerBench.uniform(N * N, 2), want = naive(a, b, N);
        for (GemmRun r : List.of(KilnGemm.run("CPU", a, b, N, THREE_RUNS), OrtGemm.run(a, b, N, 1, THREE_RUNS))) {
            assertThat(r).as(r.toString()).isInstanceOf(GemmRun.Timed.class);
            GemmRun.Timed t = (GemmRun.Timed) r;
            assertThat(t.sortedMs()).hasSize(3).isSorted();
            assertThat(GemmPeerBench.relativeDiff(t.product(), want)).as(t.peer()).isLessThan(GemmPeerBench.TOLERANCE);
        }
    }

    @Test
    void anUnknownKilnDeviceIsReportedNotThrown() {
        float[] a = new float[4];
        assertThat(KilnGemm.run("NO_SUCH_DEVICE", a, a, 2, THREE_RUNS)).isInstanceOf(GemmRun.Unavailable.class);
    }

    @Test
    void aMissingPythonMakesEveryNumpySizeUnavailable() {
        NumpyGemm.Outcome o = NumpyGemm.run("/nonexistent/python3", List.of(8, 16), 1, THREE_RUNS);
        assertThat(o.runs()).hasSize(2).allMatch(r -> r instanceof GemmRun.Unavailable);
        assertThat(o.kernel()).startsWith("unavailable (");
    }

    @Test
    void numpyOutputIsParsedPerSize() {
        NumpyGemm.Outcome o = NumpyGemm.parse(List.of("KERNEL numpy 2: OpenBLAS core Zen", "RESULT 8 3.0 1.0 2.0"), List.of(8, 16), 2);
        assertThat(o.kernel()).isEqualTo("numpy 2: OpenBLAS core Zen");
        GemmRun.Timed t = (GemmRun.Timed) o.runs().get(0);
        assertThat(t.sortedMs()).containsExactly(1.0, 2.0, 3.0);
        assertThat(t.medianMs()).isEqualTo(2.0);
        assertThat(t.gflops(8)).isCloseTo(2.0 * 512 / 2e6, within(1e-12));
        assertThat(o.runs().get(1)).isInstanceOf(GemmRun.Unavailable.class);
        assertThat(NumpyGemm.parse(List.of("UNAVAILABLE ModuleNotFoundError: numpy"), List.of(8), 2).runs().getFirst())
                .isEqualTo(new GemmRun.Unavailable(NumpyGemm.PEER, "ModuleNotFoundError: numpy"));
    }

    @Test
    void optionsHaveTheBriefsDefaultsAndRejectNonsense() {
        GemmPeerBench.Options o = GemmPeerBench.Options.parse(new String[0]);
        assertThat(o.sizes()).containsExactly(1024, 2048);
        assertThat(o.devices()).containsExactly("CPU", "CLANG");
        assertThat(o.threads()).isEqualTo(2);
        assertThat(GemmPeerBench.Options.parse(new String[] {"--sizes", "64, 128", "--devices", "CPU", "--runs", "4"}))
                .satisfies(p -> {
                    assertThat(p.sizes()).containsExactly(64, 128);
                    assertThat(p.devices()).containsExactly("CPU");
                    assertThat(p.timing().runs()).isEqualTo(4);
                });
        assertThatThrownBy(() -> GemmPeerBench.Options.parse(new String[] {"--runs"})).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> GemmPeerBench.Options.parse(new String[] {"--nope", "1"})).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> GemmPeerBench.Options.parse(new String[] {"--runs", "0"})).isInstanceOf(IllegalArgumentException.class);
    }

    @Test
    void theTableGivesRatiosToEachKilnDeviceAndNamesWhatDidNotRun() {
        Map<Integer, List<GemmRun>> rows = new LinkedHashMap<>();
        rows.put(100, List.of(new GemmRun.Timed("Kiln CPU", new double[] {2.0}, null, ""),
                new GemmRun.Unavailable("Kiln CLANG", "no compiler"),
                new GemmRun.Timed("ONNX Runtime", new double[] {1.0}, null, "")));
        String table = GemmPeerBench.table(rows, 4.0);
        assertThat(table).contains("CPU t/peer t").doesNotContain("CLANG t/peer t").contains("Kiln CLANG     unavailable (no compiler)");
        // ORT: 2 n^3 / 1 ms = 2 GFLOP/s, half the roof of 4; Kiln CPU takes twice its time
        assertThat(table.lines().filter(l -> l.contains("ONNX Runtime")).findFirst().orElseThrow())
                .matches(".*\\s2\\.0\\s+50\\.0%\\s+2\\.00\\s.*");
    }

    @Test
    void timingStopsAtTheRunBudgetButKeepsTheFewestRuns() {
        int[] calls = {0};
        double[] ms = GemmRun.time(() -> calls[0]++, new GemmRun.Timing(2, Duration.ZERO, 1000, Duration.ZERO));
        assertThat(ms).hasSize(GemmRun.Timing.MIN_RUNS);
        // every call outlasts twice a zero warm-up time, so one untimed call is enough
        assertThat(calls[0]).isEqualTo(1 + GemmRun.Timing.MIN_RUNS);
        assertThat(GemmRun.time(() -> {}, new GemmRun.Timing(0, Duration.ZERO, 5, Duration.ofSeconds(10)))).hasSize(5);
    }

    @Test
    void thePeakIsTheBestOfEachFigure() {
        MachinePeak x = new MachinePeak(2, List.of(new MachinePeak.VectorPeak(256, 1, 100), new MachinePeak.VectorPeak(512, 50, 2)), 10);
        MachinePeak y = new MachinePeak(2, List.of(new MachinePeak.VectorPeak(256, 60, 3), new MachinePeak.VectorPeak(512, 4, 200)), 20);
        assertThat(GemmPeerBench.best(x, y)).isEqualTo(new MachinePeak(2,
                List.of(new MachinePeak.VectorPeak(256, 60, 100), new MachinePeak.VectorPeak(512, 50, 200)), 20));
    }

    @Test
    void relativeDiffIsScaledByTheReferenceAndSeesNaN() {
        assertThat(GemmPeerBench.relativeDiff(new float[] {1, 2}, new float[] {1, 4})).isEqualTo(0.5);
        assertThat(GemmPeerBench.relativeDiff(new float[] {Float.NaN, 2}, new float[] {1, 4})).isInfinite();
    }
}

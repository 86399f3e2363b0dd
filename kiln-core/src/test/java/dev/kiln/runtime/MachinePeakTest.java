package dev.kiln.runtime;

import jdk.incubator.vector.VectorShape;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** The machine's peak: its measurement, its per-machine cache, and the roofline columns of the profile table. */
class MachinePeakTest {
    private static final MachinePeak PEAK = new MachinePeak(2, List.of(
            new MachinePeak.VectorPeak(256, 100, 200), new MachinePeak.VectorPeak(512, 200, 400)), 40);
    private static final Map<String, String> KEY = Map.of("cpu", "Test CPU", "cores", "2", "java", "25", "vectorBits", "512");

    @Test
    void aTinyBudgetGivesPositiveFiguresAtEveryNativeWidth() {
        MachinePeak p = PeakMeasurement.measure(Duration.ofMillis(20), 1 << 20);
        int preferred = VectorShape.preferredShape().vectorBitSize();
        assertThat(MachinePeak.nativeWidths()).isEqualTo(List.of(128, 256, 512).stream().filter(b -> b <= preferred).toList());
        assertThat(p.fma()).extracting(MachinePeak.VectorPeak::bits).isEqualTo(MachinePeak.nativeWidths());
        if (preferred >= 128) assertThat(p.widest()).hasValueSatisfying(w -> assertThat(w.bits()).isEqualTo(preferred));
        assertThat(p.threads()).isEqualTo(WorkerPool.size());
        for (MachinePeak.VectorPeak v : p.fma()) {
            assertThat(v.oneThreadGflops()).isPositive().isFinite();
            assertThat(v.allCoresGflops()).isPositive().isFinite();
        }
        assertThat(p.streamGBps()).isPositive().isFinite();
    }

    @Test
    void figuresMustBePositiveAndFinite() {
        assertThatThrownBy(() -> new MachinePeak(2, List.of(), Double.NaN)).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> new MachinePeak.VectorPeak(256, 0, 1)).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> new MachinePeak(2, List.of(new MachinePeak.VectorPeak(256, 1, 2), new MachinePeak.VectorPeak(256, 1, 2)), 1))
                .isInstanceOf(IllegalArgumentException.class);
    }

    @Test
    void summaryListsTheWidestWidthFirst() {
        assertThat(PEAK.summary()).isEqualTo(
                "peak f32 FMA: 512-bit 2 threads 400 GFLOP/s (1 thread 200), 256-bit 2 threads 200 GFLOP/s (1 thread 100); streaming 40.0 GB/s");
        assertThat(PEAK.peakGflops()).isEqualTo(400);
    }

    @Test
    void theCacheMeasuresOnceThenReadsItsEntry(@TempDir Path dir) throws Exception {
        AtomicInteger measured = new AtomicInteger();
        AtomicInteger told = new AtomicInteger();
        MachinePeakCache cache = new MachinePeakCache(dir, KEY, () -> { measured.incrementAndGet(); return PEAK; });
        assertThat(cache.get(told::incrementAndGet)).isEqualTo(new MachinePeakCache.Lookup(PEAK, true));
        assertThat(cache.get(told::incrementAndGet)).isEqualTo(new MachinePeakCache.Lookup(PEAK, false));
        assertThat(cache.file()).hasValueSatisfying(f -> assertThat(f).isRegularFile().hasParent(dir));
        // another process: reads the entry, measures nothing
        MachinePeakCache again = new MachinePeakCache(dir, KEY, () -> { measured.incrementAndGet(); return PEAK; });
        assertThat(again.get(told::incrementAndGet)).isEqualTo(new MachinePeakCache.Lookup(PEAK, false));
        assertThat(measured).hasValue(1);
        assertThat(told).hasValue(1);
        try (var files = Files.list(dir)) {
            assertThat(files.map(f -> f.getFileName().toString())).noneMatch(n -> n.endsWith(".tmp"));
        }
    }

    @Test
    void aCorruptEntryIsMeasuredAgainAndReplaced(@TempDir Path dir) throws Exception {
        MachinePeakCache cache = new MachinePeakCache(dir, KEY, () -> PEAK);
        Path file = cache.file().orElseThrow();
        for (String corrupt : List.of("\u0000\u0001garbage\\u12", "format=1\nkey.cpu=Test CPU\n", "")) {
            Files.writeString(file, corrupt);
            MachinePeakCache fresh = new MachinePeakCache(dir, KEY, () -> PEAK);
            assertThat(fresh.get(() -> {})).isEqualTo(new MachinePeakCache.Lookup(PEAK, true));
            assertThat(new MachinePeakCache(dir, KEY, () -> { throw new AssertionError("measured again"); }).get(() -> {}).peak()).isEqualTo(PEAK);
        }
    }

    /** Figures as a cold 128-bit loop left them: per lane a hundredth of the others'. */
    private static final List<MachinePeak.VectorPeak> COLD = List.of(new MachinePeak.VectorPeak(128, 0.58, 1.1),
            new MachinePeak.VectorPeak(256, 80, 160), new MachinePeak.VectorPeak(512, 160, 320));

    @Test
    void aWidthTimedBeforeItsLoopWasCompiledIsMeasuredAgain() {
        List<Integer> again = new java.util.ArrayList<>();
        List<MachinePeak.VectorPeak> fixed = PeakMeasurement.remeasureCold(COLD, 2, bits -> {
            again.add(bits);
            return new MachinePeak.VectorPeak(bits, 40, 0.9); // all cores slower this time: the better figure stays
        });
        assertThat(again).containsExactly(128);
        assertThat(fixed).containsExactly(new MachinePeak.VectorPeak(128, 40, 1.1), COLD.get(1), COLD.get(2));
        assertThat(PeakMeasurement.anyCold(COLD, 2)).isTrue();
        assertThat(PeakMeasurement.anyCold(fixed, 2)).isFalse();
    }

    @Test
    void everyWidthColdOnOneThreadButNotOnAllCoresIsMeasuredAgain() {
        // each loop timed on one thread before it was compiled, then on both cores once it was
        List<MachinePeak.VectorPeak> oneThreadCold = List.of(new MachinePeak.VectorPeak(128, 0.14, 54), new MachinePeak.VectorPeak(256, 0.19, 99),
                new MachinePeak.VectorPeak(512, 0.64, 208));
        assertThat(PeakMeasurement.anyCold(oneThreadCold, 2)).isTrue();
        List<Integer> again = new java.util.ArrayList<>();
        List<MachinePeak.VectorPeak> fixed = PeakMeasurement.remeasureCold(oneThreadCold, 2, bits -> {
            again.add(bits);
            return new MachinePeak.VectorPeak(bits, bits / 4.0, bits / 2.5);
        });
        assertThat(again).containsExactly(128, 256, 512);
        assertThat(fixed).containsExactly(new MachinePeak.VectorPeak(128, 32, 54), new MachinePeak.VectorPeak(256, 64, 102.4),
                new MachinePeak.VectorPeak(512, 128, 208));
        assertThat(PeakMeasurement.anyCold(fixed, 2)).isFalse();
        // one thread at a quarter of a core's share of all cores is the line (a busy neighbour), not below it
        assertThat(PeakMeasurement.anyCold(List.of(new MachinePeak.VectorPeak(512, 25, 200)), 2)).isFalse();
        assertThat(PeakMeasurement.anyCold(List.of(new MachinePeak.VectorPeak(512, 24, 200)), 2)).isTrue();
    }

    @Test
    void aWidthSlowerPerLaneForRealIsNotMeasuredAgain() {
        // 512 bits at half rate (AMD Zen 4): per lane half the 256-bit figure, a quarter of it just above the line
        List<MachinePeak.VectorPeak> halfRate = List.of(new MachinePeak.VectorPeak(128, 50, 100), new MachinePeak.VectorPeak(256, 100, 200),
                new MachinePeak.VectorPeak(512, 100, 200));
        assertThat(PeakMeasurement.remeasureCold(halfRate, 2, bits -> { throw new AssertionError("measured " + bits + " again"); })).isEqualTo(halfRate);
        assertThat(PeakMeasurement.anyCold(halfRate, 2)).isFalse();
        List<MachinePeak.VectorPeak> edge = List.of(new MachinePeak.VectorPeak(256, 100, 200), new MachinePeak.VectorPeak(512, 0.5 * 100, 100));
        assertThat(PeakMeasurement.anyCold(edge, 2)).as("512 bits at a quarter of 256's rate per lane").isFalse();
        List<MachinePeak.VectorPeak> below = List.of(new MachinePeak.VectorPeak(256, 100, 200), new MachinePeak.VectorPeak(512, 0.49 * 100, 100));
        assertThat(PeakMeasurement.anyCold(below, 2)).as("just below a quarter").isTrue();
    }

    @Test
    void aCachedEntryWithAColdWidthIsMeasuredAgain(@TempDir Path dir) throws Exception {
        MachinePeak cold = new MachinePeak(2, COLD, 40);
        new MachinePeakCache(dir, KEY, () -> cold).get(() -> {});
        AtomicInteger measured = new AtomicInteger();
        MachinePeakCache fresh = new MachinePeakCache(dir, KEY, () -> { measured.incrementAndGet(); return PEAK; });
        assertThat(fresh.get(() -> {})).isEqualTo(new MachinePeakCache.Lookup(PEAK, true));
        assertThat(new MachinePeakCache(dir, KEY, () -> { throw new AssertionError("measured again"); }).get(() -> {}).peak()).isEqualTo(PEAK);
        assertThat(measured).hasValue(1);
    }

    @Test
    void aForeignEntryIsMeasuredAgain(@TempDir Path dir) throws Exception {
        Map<String, String> otherMachine = new HashMap<>(KEY);
        otherMachine.put("cpu", "Another CPU");
        MachinePeak other = new MachinePeak(4, List.of(new MachinePeak.VectorPeak(256, 1, 4)), 10);
        MachinePeakCache foreign = new MachinePeakCache(dir, otherMachine, () -> other);
        foreign.get(() -> {});
        MachinePeakCache mine = new MachinePeakCache(dir, KEY, () -> PEAK);
        assertThat(mine.file()).isNotEqualTo(foreign.file());
        // the other machine's entry copied to this machine's name (a shared or copied cache folder)
        Files.copy(foreign.file().orElseThrow(), mine.file().orElseThrow());
        assertThat(mine.get(() -> {})).isEqualTo(new MachinePeakCache.Lookup(PEAK, true));
        assertThat(new MachinePeakCache(dir, otherMachine, () -> PEAK).get(() -> {}).peak()).isEqualTo(other);
    }

    @Test
    void withTheCacheOffTheFiguresAreKeptInMemory() {
        AtomicInteger measured = new AtomicInteger();
        MachinePeakCache cache = new MachinePeakCache(null, KEY, () -> { measured.incrementAndGet(); return PEAK; });
        assertThat(cache.file()).isEmpty();
        assertThat(cache.get(() -> {}).measured()).isTrue();
        assertThat(cache.get(() -> {}).measured()).isFalse();
        assertThat(measured).hasValue(1);
    }

    @Test
    void anUnwritableFolderKeepsTheFiguresInMemory(@TempDir Path dir) throws Exception {
        Path notAFolder = Files.writeString(dir.resolve("file"), "x");
        MachinePeakCache cache = new MachinePeakCache(notAFolder, KEY, () -> PEAK);
        assertThat(cache.get(() -> {})).isEqualTo(new MachinePeakCache.Lookup(PEAK, true));
        assertThat(cache.get(() -> {})).isEqualTo(new MachinePeakCache.Lookup(PEAK, false));
    }

    @Test
    void theKeyNamesWhatDecidesTheFigures() {
        assertThat(MachinePeakCache.thisMachine()).containsOnlyKeys("cpu", "cores", "java", "vectorBits")
                .containsEntry("cores", Integer.toString(WorkerPool.size()))
                .containsEntry("vectorBits", Integer.toString(VectorShape.preferredShape().vectorBitSize()));
    }

    @Test
    void theProfileTableShowsEachKernelsShareOfThePeakAndTheBandwidth() {
        // 2 us each: 400 GFLOP/s is 100% of the peak, 8 GB/s is 20% of the bandwidth
        var profiles = List.of(new KernelProfile("gemm", 0, 2_000, 800_000, 16_000, "w", ""),
                new KernelProfile("add", 0, 2_000, 8_000, 80_000, "w", ""));
        String table = ProfileReport.table(profiles, PEAK);
        List<String> lines = table.lines().toList();
        assertThat(lines.get(0)).endsWith("GB/s  % peak    % BW");
        assertThat(lines.get(1)).startsWith("  gemm ").endsWith(" 100.0%   20.0%");
        assertThat(lines.get(2)).startsWith("  add ").endsWith("   1.0%  100.0%");
        // totals: 808,000 flops and 96,000 bytes in 4 us
        assertThat(lines.get(3)).startsWith("  total (2 steps)").endsWith("  50.5%   60.0%");
        // the table without a peak is unchanged: its rows are the first columns of the new one
        List<String> plain = ProfileReport.table(profiles).lines().toList();
        for (int i = 0; i < plain.size(); i++) assertThat(lines.get(i)).startsWith(plain.get(i));
        assertThat(ProfileReport.table(profiles, new MachinePeak(2, List.of(), 40)).lines().skip(1).findFirst().orElseThrow())
                .endsWith("       -   20.0%");
    }
}

package dev.kiln.bench;

import dev.kiln.runtime.MachinePeak;
import dev.kiln.runtime.WorkerPool;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.SplittableRandom;

/**
 * f32 GEMM {@code A[n, n] · B[n, n]} on Kiln, ONNX Runtime and NumPy (OpenBLAS), and the machine's FMA
 * peak, all measured in one run, so that the rows of BENCHMARKS.md compare figures taken under the same
 * load:
 *
 * <pre>kiln-bench/bench.sh --main GemmPeerBench [--sizes 1024,2048] [--runs 10] [--warmup 3] [--warmup-ms 2000]
 *     [--budget-s 30] [--devices CPU,CLANG] [--threads 2] [--python python3] [--peak-ms 3000]</pre>
 *
 * <ul>
 *   <li>Kiln: both inputs realised on the device, the product prepared into a plan once, {@code execute()}
 *       timed ({@link KilnGemm}); each device in {@code --devices}, an unavailable one reported and skipped.</li>
 *   <li>ONNX Runtime: a one-node MatMul model, {@code --threads} intra-op threads, {@code session.run} timed
 *       ({@link OrtGemm}).</li>
 *   <li>NumPy: {@code np.matmul} in a python subprocess with {@code OPENBLAS_NUM_THREADS=--threads} and
 *       without {@code OPENBLAS_CORETYPE}/{@code OPENBLAS_L2_SIZE}; which BLAS kernel ran is printed
 *       ({@link NumpyGemm}).</li>
 *   <li>Peak: {@link MachinePeak#measure(Duration)}, fresh (not the on-disk cache), before the GEMMs; the
 *       roof is the all-worker FMA figure at the widest native vector width.</li>
 * </ul>
 *
 * Kiln and ORT get the same inputs (uniform in [-1, 1)), and each Kiln product is compared with ORT's
 * (max |Kiln - ORT| / max |ORT|), so that a fast but wrong kernel shows. Times are medians of the timed runs;
 * GFLOP/s count 2 n^3 operations.
 */
public final class GemmPeerBench {
    /** Relative difference from ORT above which a product is flagged: far above f32 rounding for these sizes. */
    static final double TOLERANCE = 1e-4;

    private GemmPeerBench() {}

    /**
     * The command's options.
     *
     * @param sizes   matrix sizes n
     * @param timing  untimed and timed runs per peer and size
     * @param devices Kiln devices, e.g. CPU and CLANG
     * @param threads threads for ORT and NumPy (Kiln uses its worker pool: one per core)
     * @param python  the python executable for NumPy
     * @param peak    the time the peak measurement may take
     */
    record Options(List<Integer> sizes, GemmRun.Timing timing, List<String> devices, int threads, String python, Duration peak) {
        static Options parse(String[] args) {
            List<Integer> sizes = List.of(1024, 2048);
            List<String> devices = List.of("CPU", "CLANG");
            int runs = 10, warmup = 3, threads = 2;
            Duration warmupTime = Duration.ofMillis(2000), runBudget = Duration.ofSeconds(30);
            String python = "python3";
            Duration peak = Duration.ofMillis(3000);
            if (args.length % 2 != 0) throw new IllegalArgumentException("options come in pairs: --name value");
            for (int i = 0; i < args.length; i += 2) {
                String v = args[i + 1];
                switch (args[i]) {
                    case "--sizes" -> sizes = Arrays.stream(v.split(",")).map(String::trim).map(Integer::parseInt).toList();
                    case "--runs" -> runs = Integer.parseInt(v);
                    case "--warmup" -> warmup = Integer.parseInt(v);
                    case "--devices" -> devices = Arrays.stream(v.split(",")).map(String::trim).filter(s -> !s.isEmpty()).toList();
                    case "--warmup-ms" -> warmupTime = Duration.ofMillis(Long.parseLong(v));
                    case "--budget-s" -> runBudget = Duration.ofSeconds(Long.parseLong(v));
                    case "--threads" -> threads = Integer.parseInt(v);
                    case "--python" -> python = v;
                    case "--peak-ms" -> peak = Duration.ofMillis(Long.parseLong(v));
                    default -> throw new IllegalArgumentException("unknown option " + args[i]);
                }
            }
            if (runs < 1 || warmup < 0 || threads < 1 || sizes.stream().anyMatch(n -> n < 1)) {
                throw new IllegalArgumentException("need runs >= 1, warmup >= 0, threads >= 1, sizes >= 1");
            }
            return new Options(sizes, new GemmRun.Timing(warmup, warmupTime, runs, runBudget), devices, threads, python, peak);
        }
    }

    public static void main(String[] args) {
        Options o;
        try {
            o = Options.parse(args);
        } catch (IllegalArgumentException e) {
            System.err.println("GemmPeerBench: " + e.getMessage());
            System.err.println("usage: GemmPeerBench [--sizes 1024,2048] [--runs N] [--warmup N] [--warmup-ms MS] [--budget-s S]"
                    + " [--devices CPU,CLANG] [--threads 2] [--python python3] [--peak-ms 3000]");
            System.exit(2);
            return;
        }
        GemmRun.Timing timing = o.timing();
        System.out.printf(Locale.ROOT, "GEMM f32 n x n x n, %s, %d cores, JDK %s, load average at start %s%n",
                Instant.now().truncatedTo(ChronoUnit.SECONDS), Runtime.getRuntime().availableProcessors(), Runtime.version(), loadAverage());
        System.out.printf(Locale.ROOT, "per peer and size: warm-up at least %d runs and %d ms, then %d timed runs (fewer, but %d, past %d s); "
                + "ORT and NumPy threads %d; Kiln: its worker pool (%d)%n", timing.warmupCalls(), timing.warmupTime().toMillis(), timing.runs(),
                GemmRun.Timing.MIN_RUNS, timing.runBudget().toSeconds(), o.threads(), WorkerPool.size());

        // Two measurements, each figure the better of the two: under load the JIT can still be compiling an FMA
        // loop when the first measurement's share for it runs out, and that figure alone would be far too low.
        MachinePeak peak = best(MachinePeak.measure(o.peak()), MachinePeak.measure(o.peak()));
        System.out.println(peak.summary() + "  (measured now, best of 2)");
        double roof = peak.peakGflops();
        System.out.printf(Locale.ROOT, "roof for %% peak: %d-thread FMA at %d bits = %.1f GFLOP/s%n", peak.threads(),
                peak.widest().map(MachinePeak.VectorPeak::bits).orElse(0), roof);
        // A narrower width beating the widest all-core figure means a disturbed measurement (a wider FMA never
        // does fewer operations per cycle), and every % peak below is then too high.
        peak.fma().stream().filter(p -> p.allCoresGflops() > 1.1 * roof).forEach(p -> System.out.printf(Locale.ROOT,
                "note: %d-bit on %d threads (%.0f GFLOP/s) beats the roof: the peak measurement was disturbed (load?)%n",
                p.bits(), peak.threads(), p.allCoresGflops()));
        if (peak.threads() != o.threads()) {
            System.out.printf(Locale.ROOT, "note: the roof is for %d threads, the peers run %d%n", peak.threads(), o.threads());
        }

        // NumPy first and in its own process: nothing of this JVM (JIT threads, ORT's pool) runs beside it.
        NumpyGemm.Outcome numpy = NumpyGemm.run(o.python(), o.sizes(), o.threads(), o.timing());
        System.out.println("numpy: " + numpy.kernel());
        System.out.println("numpy env: " + String.join(", ", NumpyGemm.UNSET) + " unset (here they were: " + unsetWere() + ")");

        Map<Integer, List<GemmRun>> bySize = new LinkedHashMap<>();
        List<String> checks = new ArrayList<>();
        for (int s = 0; s < o.sizes().size(); s++) {
            int n = o.sizes().get(s);
            float[] a = uniform(n * n, 1 + n), b = uniform(n * n, 2 + n);
            List<GemmRun> runs = new ArrayList<>();
            for (String device : o.devices()) runs.add(KilnGemm.run(device, a, b, n, o.timing()));
            GemmRun ort = OrtGemm.run(a, b, n, o.threads(), o.timing());
            runs.add(ort);
            runs.add(numpy.runs().get(s));
            bySize.put(n, runs);
            for (GemmRun r : runs) {
                if (r instanceof GemmRun.Timed t && t.product() != null && t != ort && ort instanceof GemmRun.Timed ref) {
                    double rel = relativeDiff(t.product(), ref.product());
                    checks.add(String.format(Locale.ROOT, "n=%d %s vs ORT: max|diff|/max|ORT| = %.2e %s", n, t.peer(), rel,
                            rel <= TOLERANCE ? "ok" : "WRONG (over " + TOLERANCE + ")"));
                }
            }
        }
        System.out.println();
        System.out.print(table(bySize, roof));
        System.out.println();
        checks.forEach(System.out::println);
        System.out.println("load average at end " + loadAverage());
    }

    /** The table: one row per size and peer, with the time ratios of each timed Kiln device to that peer. */
    static String table(Map<Integer, List<GemmRun>> bySize, double roof) {
        List<String> kilnPeers = bySize.values().stream().flatMap(List::stream)
                .filter(r -> r instanceof GemmRun.Timed && r.peer().startsWith("Kiln ")).map(GemmRun::peer).distinct().toList();
        StringBuilder sb = new StringBuilder();
        sb.append(String.format(Locale.ROOT, "%5s  %-14s %10s %10s %9s %7s", "n", "peer", "median ms", "min ms", "GFLOP/s", "% peak"));
        for (String k : kilnPeers) sb.append(String.format(Locale.ROOT, " %15s", k.substring("Kiln ".length()) + " t/peer t"));
        sb.append("  note\n");
        for (var e : bySize.entrySet()) {
            int n = e.getKey();
            for (GemmRun r : e.getValue()) {
                switch (r) {
                    case GemmRun.Timed t -> {
                        sb.append(String.format(Locale.ROOT, "%5d  %-14s %10.2f %10.2f %9.1f %6.1f%%", n, t.peer(), t.medianMs(), t.minMs(),
                                t.gflops(n), roof > 0 ? 100 * t.gflops(n) / roof : Double.NaN));
                        for (String k : kilnPeers) {
                            sb.append(e.getValue().stream().filter(x -> x.peer().equals(k) && x instanceof GemmRun.Timed).findFirst()
                                    .map(x -> String.format(Locale.ROOT, " %15.2f", ((GemmRun.Timed) x).medianMs() / t.medianMs()))
                                    .orElse(String.format(Locale.ROOT, " %15s", "-")));
                        }
                        sb.append("  ").append(t.detail()).append('\n');
                    }
                    case GemmRun.Unavailable u ->
                            sb.append(String.format(Locale.ROOT, "%5d  %-14s unavailable (%s)%n", n, u.peer(), u.reason()));
                }
            }
        }
        sb.append("(X t/peer t: Kiln X's median time over the peer's; below 1 Kiln is faster)\n");
        return sb.toString();
    }

    /** Each figure the larger of the two measurements' (both of this machine, so with the same widths and threads). */
    static MachinePeak best(MachinePeak x, MachinePeak y) {
        List<MachinePeak.VectorPeak> fma = new ArrayList<>();
        for (MachinePeak.VectorPeak p : x.fma()) {
            MachinePeak.VectorPeak q = y.fma().stream().filter(v -> v.bits() == p.bits()).findFirst().orElse(p);
            fma.add(new MachinePeak.VectorPeak(p.bits(), Math.max(p.oneThreadGflops(), q.oneThreadGflops()),
                    Math.max(p.allCoresGflops(), q.allCoresGflops())));
        }
        return new MachinePeak(x.threads(), fma, Math.max(x.streamGBps(), y.streamGBps()));
    }

    /** max |x - ref| / max |ref|: the error relative to the product's scale, so that sizes compare. */
    static double relativeDiff(float[] x, float[] ref) {
        if (x.length != ref.length) throw new IllegalArgumentException("products differ in size: " + x.length + " vs " + ref.length);
        double diff = 0, scale = 0;
        for (int i = 0; i < ref.length; i++) {
            diff = Math.max(diff, Math.abs((double) x[i] - ref[i]));
            scale = Math.max(scale, Math.abs(ref[i]));
            if (Float.isNaN(x[i]) != Float.isNaN(ref[i])) return Double.POSITIVE_INFINITY;
        }
        return scale == 0 ? diff : diff / scale;
    }

    /** {@code count} floats uniform in [-1, 1): signs mix, so a wrong kernel cannot hide behind a large sum. */
    static float[] uniform(int count, long seed) {
        SplittableRandom r = new SplittableRandom(seed);
        float[] v = new float[count];
        for (int i = 0; i < count; i++) v[i] = (float) (2 * r.nextDouble() - 1);
        return v;
    }

    private static String unsetWere() {
        List<String> set = NumpyGemm.UNSET.stream().filter(k -> System.getenv(k) != null).map(k -> k + "=" + System.getenv(k)).toList();
        return set.isEmpty() ? "not set" : String.join(", ", set);
    }

    private static String loadAverage() {
        try {
            String[] f = Files.readString(Path.of("/proc/loadavg")).trim().split(" ");
            return f[0] + " " + f[1] + " " + f[2];
        } catch (IOException | RuntimeException e) {
            return "unknown";
        }
    }
}

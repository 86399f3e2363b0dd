package dev.kiln.cli;

import dev.kiln.types.DType;
import dev.kiln.runtime.Buffer;
import dev.kiln.runtime.KernelProfile;
import dev.kiln.runtime.PreparedKernel;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;

/**
 * What the run, profile and bench commands print beyond {@link dev.kiln.runtime.ProfileReport}'s kernel
 * table: per-step medians over several profiled runs, the latency summary, and a tensor's summary line.
 */
final class Reports {
    private Reports() {}

    /**
     * The profile of a typical run: for each step, the median of its times over {@code runs} (every run
     * of one plan has the same steps in the same order); names, counts and threads from the first run.
     */
    static List<KernelProfile> medianProfile(List<List<KernelProfile>> runs) {
        if (runs.isEmpty()) throw new IllegalArgumentException("medianProfile: no runs");
        List<KernelProfile> first = runs.getFirst();
        for (List<KernelProfile> r : runs) {
            if (r.size() != first.size()) throw new IllegalStateException("profiled runs differ in their steps: " + first.size() + " vs " + r.size());
        }
        List<KernelProfile> out = new ArrayList<>();
        for (int i = 0; i < first.size(); i++) {
            int step = i;
            long[] elapsed = runs.stream().mapToLong(r -> r.get(step).elapsedNanos()).toArray();
            long[] start = runs.stream().mapToLong(r -> r.get(step).startNanos()).toArray();
            KernelProfile p = first.get(i);
            out.add(new KernelProfile(p.name(), median(start), median(elapsed), p.flops(), p.bytes(), p.thread(), p.source()));
        }
        return out;
    }

    /**
     * Latencies of a benchmark: the preparation time and the wall time of each timed run.
     *
     * @param compileNanos time to build and prepare the plan
     * @param runNanos     wall time of each timed run, in run order
     */
    record Latency(long compileNanos, long[] runNanos) {
        Latency {
            if (runNanos.length == 0) throw new IllegalArgumentException("Latency: no timed runs");
            runNanos = runNanos.clone();
        }

        long min() { return Arrays.stream(runNanos).min().orElseThrow(); }

        long median() { return Reports.median(runNanos); }

        /** The 90th percentile (nearest rank: the smallest time at least 90% of the runs do not exceed). */
        long p90() {
            long[] s = runNanos.clone();
            Arrays.sort(s);
            return s[(int) Math.ceil(0.9 * s.length) - 1];
        }

        double mean() { return Arrays.stream(runNanos).average().orElseThrow(); }

        /** Runs per second at the median latency. */
        double throughput() { return median() == 0 ? Double.POSITIVE_INFINITY : 1e9 / median(); }

        /** The summary lines. */
        String format() {
            return String.format(Locale.ROOT, """
                    compile     %10.2f ms
                    latency min %10.3f ms
                         median %10.3f ms
                            p90 %10.3f ms
                           mean %10.3f ms   (%d runs)
                    throughput  %10.1f runs/s (at the median)
                    """, compileNanos / 1e6, min() / 1e6, median() / 1e6, p90() / 1e6, mean() / 1e6, runNanos.length, throughput());
        }
    }

    static long median(long[] values) {
        long[] s = values.clone();
        Arrays.sort(s);
        int n = s.length;
        return n % 2 == 1 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
    }

    /**
     * One line describing a tensor: dtype, shape, and for non-empty ones the minimum, maximum and mean
     * (of the finite values; NaNs and infinities are counted separately) and the first values.
     */
    static String summary(DType dtype, int[] dims, Buffer buffer) {
        StringBuilder sb = new StringBuilder(dtype + " " + Arrays.toString(dims));
        long n = Arrays.stream(dims).asLongStream().reduce(1, (a, b) -> a * b);
        if (n == 0) return sb.append("  (empty)").toString();
        double min = Double.POSITIVE_INFINITY, max = Double.NEGATIVE_INFINITY, sum = 0;
        long finite = 0, nan = 0, inf = 0;
        List<String> first = new ArrayList<>();
        for (long i = 0; i < n; i++) {
            double v = buffer.getDouble(i);
            if (i < 4) first.add(format(dtype, v));
            if (Double.isNaN(v)) nan++;
            else if (Double.isInfinite(v)) inf++;
            else {
                finite++;
                min = Math.min(min, v);
                max = Math.max(max, v);
                sum += v;
            }
        }
        if (finite > 0) {
            sb.append("  min ").append(format(dtype, min)).append("  max ").append(format(dtype, max))
                    .append(String.format(Locale.ROOT, "  mean %.6g", sum / finite));
        }
        if (nan > 0) sb.append("  nan ").append(nan);
        if (inf > 0) sb.append("  inf ").append(inf);
        return sb.append("  first ").append(first).append(n > 4 ? " ..." : "").toString();
    }

    private static String format(DType dtype, double v) {
        if (dtype.isBool()) return v != 0 ? "true" : "false";
        if (!dtype.isFloat() && Double.isFinite(v)) return Long.toString((long) v);
        return String.format(Locale.ROOT, "%.6g", v);
    }

    /**
     * Each kernel's optimisation actions, one line per kernel in plan order ({@code -} for none): the
     * device's heuristic's, or BEAM search's when it is on.
     */
    static String opts(List<PreparedKernel> kernels) {
        int width = kernels.stream().mapToInt(k -> k.name().length()).max().orElse(0);
        StringBuilder sb = new StringBuilder("optimisation actions:").append(System.lineSeparator());
        for (PreparedKernel k : kernels) {
            List<String> actions = k.actions();
            sb.append(String.format(Locale.ROOT, "  %-" + width + "s %s", k.name(), actions.isEmpty() ? "-" : String.join(" ", actions)))
                    .append(System.lineSeparator());
        }
        return sb.toString();
    }
}

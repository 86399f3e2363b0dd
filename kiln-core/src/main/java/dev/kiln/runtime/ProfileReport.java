package dev.kiln.runtime;

import java.util.Comparator;
import java.util.List;
import java.util.Locale;

/** A plain-text table of kernel profiles, slowest first, with totals. */
public final class ProfileReport {
    private ProfileReport() {}

    /** The table: name, time, share of the total, GFLOP/s and GB/s per step, then the totals. */
    public static String table(List<KernelProfile> profiles) { return table(profiles, null); }

    /**
     * The table of {@link #table(List)} with two more columns, each step's place on the roofline:
     * {@code % peak}, its GFLOP/s over {@code peak}'s all-core FMA peak at the widest native width, and
     * {@code % BW}, its GB/s over {@code peak}'s streaming bandwidth (a kernel whose data stays in the
     * caches can pass 100%). The total row divides the totals alike.
     */
    public static String table(List<KernelProfile> profiles, MachinePeak peak) {
        long total = profiles.stream().mapToLong(KernelProfile::elapsedNanos).sum();
        long flops = profiles.stream().mapToLong(KernelProfile::flops).sum();
        long bytes = profiles.stream().mapToLong(KernelProfile::bytes).sum();
        String totalLabel = "total (" + profiles.size() + " steps)";
        int width = Math.max(totalLabel.length(), profiles.stream().mapToInt(p -> p.name().length()).max().orElse(0));
        StringBuilder sb = new StringBuilder();
        sb.append(String.format(Locale.ROOT, "  %-" + width + "s %10s %7s %9s %8s", "kernel", "time (us)", "share", "GFLOP/s", "GB/s"));
        sb.append(peak == null ? "" : String.format(Locale.ROOT, " %7s %7s", "% peak", "% BW")).append(System.lineSeparator());
        for (KernelProfile p : profiles.stream().sorted(Comparator.comparingLong(KernelProfile::elapsedNanos).reversed()).toList()) {
            row(sb, width, p.name(), p.elapsedNanos(), total == 0 ? 0 : 100.0 * p.elapsedNanos() / total, p.gflops(), p.gbPerSecond(), peak);
        }
        row(sb, width, totalLabel, total, 100.0, total == 0 ? 0 : flops / (double) total, total == 0 ? 0 : bytes / (double) total, peak);
        return sb.toString();
    }

    private static void row(StringBuilder sb, int width, String name, long nanos, double share, double gflops, double gbPerSecond, MachinePeak peak) {
        sb.append(String.format(Locale.ROOT, "  %-" + width + "s %10.1f %6.1f%% %9.3f %8.3f", name, nanos / 1e3, share, gflops, gbPerSecond));
        if (peak != null) sb.append(' ').append(percent(gflops, peak.peakGflops())).append(' ').append(percent(gbPerSecond, peak.streamGBps()));
        sb.append(System.lineSeparator());
    }

    /** {@code part} as a percentage of {@code whole}, or a dash where there is no roof to compare with. */
    private static String percent(double part, double whole) {
        return whole > 0 ? String.format(Locale.ROOT, "%6.1f%%", 100.0 * part / whole) : String.format(Locale.ROOT, "%7s", "-");
    }
}

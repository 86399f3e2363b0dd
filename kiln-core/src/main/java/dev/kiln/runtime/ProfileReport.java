package dev.kiln.runtime;

import java.util.Comparator;
import java.util.List;
import java.util.Locale;

/** A plain-text table of kernel profiles, slowest first, with totals. */
public final class ProfileReport {
    private ProfileReport() {}

    /** The table: name, time, share of the total, GFLOP/s and GB/s per step, then the totals. */
    public static String table(List<KernelProfile> profiles) {
        long total = profiles.stream().mapToLong(KernelProfile::elapsedNanos).sum();
        long flops = profiles.stream().mapToLong(KernelProfile::flops).sum();
        long bytes = profiles.stream().mapToLong(KernelProfile::bytes).sum();
        String totalLabel = "total (" + profiles.size() + " steps)";
        int width = Math.max(totalLabel.length(), profiles.stream().mapToInt(p -> p.name().length()).max().orElse(0));
        StringBuilder sb = new StringBuilder();
        sb.append(String.format(Locale.ROOT, "  %-" + width + "s %10s %7s %9s %8s%n", "kernel", "time (us)", "share", "GFLOP/s", "GB/s"));
        for (KernelProfile p : profiles.stream().sorted(Comparator.comparingLong(KernelProfile::elapsedNanos).reversed()).toList()) {
            sb.append(String.format(Locale.ROOT, "  %-" + width + "s %10.1f %6.1f%% %9.3f %8.3f%n", p.name(), p.elapsedNanos() / 1e3,
                    total == 0 ? 0 : 100.0 * p.elapsedNanos() / total, p.gflops(), p.gbPerSecond()));
        }
        sb.append(String.format(Locale.ROOT, "  %-" + width + "s %10.1f %6.1f%% %9.3f %8.3f%n", totalLabel, total / 1e3, 100.0,
                total == 0 ? 0 : flops / (double) total, total == 0 ? 0 : bytes / (double) total));
        return sb.toString();
    }
}

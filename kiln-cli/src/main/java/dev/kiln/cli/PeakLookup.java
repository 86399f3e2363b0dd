package dev.kiln.cli;

import dev.kiln.runtime.MachinePeak;
import dev.kiln.runtime.MachinePeakCache;

import java.io.PrintWriter;
import java.util.Locale;
import java.util.function.Function;

/**
 * The machine's peak for {@code kiln devices} and {@code kiln profile}: from {@link MachinePeakCache},
 * measured once on a miss, with a note on standard error while the user waits.
 */
final class PeakLookup {
    /** Where the figures come from; tests replace it so that no command measures for seconds. */
    static volatile Function<Runnable, MachinePeakCache.Lookup> source = MachinePeakCache::lookup;

    private PeakLookup() {}

    /** The figures, telling {@code err} when they have to be measured first. */
    static MachinePeakCache.Lookup lookup(PrintWriter err) {
        return source.apply(() -> {
            err.printf(Locale.ROOT, "measuring this machine's peak once (about %.1f s; kept in the kernel cache)%n",
                    MachinePeak.DEFAULT_BUDGET.toMillis() / 1e3);
            err.flush();
        });
    }

    /** The summary line, marked when it was measured by this command. */
    static String describe(MachinePeakCache.Lookup lookup) {
        return lookup.peak().summary() + (lookup.measured() ? " (measured now)" : "");
    }
}

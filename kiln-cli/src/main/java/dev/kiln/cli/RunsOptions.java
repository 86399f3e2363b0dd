package dev.kiln.cli;

import picocli.CommandLine.Option;

/** {@code --runs N} and {@code --warmup N}: how often to execute a prepared model when timing it. */
final class RunsOptions {
    /**
     * The automatic warm-up runs for at least this long (the JIT compiles a kernel after some thousand
     * calls), then until the fastest run has not become {@link #IMPROVEMENT} faster during the latter
     * half of the warm-up (compilation has settled), at most {@link #AUTO_WARMUP_MAX_NANOS} or
     * {@link #AUTO_WARMUP_MAX_RUNS} runs.
     */
    static final long AUTO_WARMUP_NANOS = 1_500_000_000L;
    static final long AUTO_WARMUP_MAX_NANOS = 20_000_000_000L;
    static final int AUTO_WARMUP_MAX_RUNS = 5000;
    static final double IMPROVEMENT = 0.2;

    @Option(names = "--runs", paramLabel = "N", defaultValue = "20", description = "Timed runs (default: ${DEFAULT-VALUE}).")
    int runs;

    @Option(names = "--warmup", paramLabel = "N",
            description = "Untimed runs first, so the kernels reach their steady state (default: at least 1.5 s, and until the fastest"
                    + " run stopped improving by 20%% for half the warm-up; at most 20 s or " + AUTO_WARMUP_MAX_RUNS + " runs).")
    Integer warmup;

    /**
     * Checks the counts.
     *
     * @throws IllegalArgumentException if {@code --runs} is below 1 or {@code --warmup} below 0
     */
    RunsOptions validate() {
        if (runs < 1) throw new IllegalArgumentException("--runs: expected at least 1 run, got " + runs);
        if (warmup != null && warmup < 0) throw new IllegalArgumentException("--warmup: expected 0 or more runs, got " + warmup);
        return this;
    }

    /** Runs {@code work} for the warm-up (the given count, or the automatic one) and returns how many runs that took. */
    int warmUp(Runnable work) {
        if (warmup != null) {
            for (int i = 0; i < warmup; i++) work.run();
            return warmup;
        }
        long start = System.nanoTime(), fastest = Long.MAX_VALUE, improvedAt = start;
        for (int n = 1; ; n++) {
            long s = System.nanoTime();
            work.run();
            long now = System.nanoTime(), last = now - s, elapsed = now - start;
            if (last < (1 - IMPROVEMENT) * fastest) improvedAt = now;
            fastest = Math.min(fastest, last);
            boolean settled = elapsed >= AUTO_WARMUP_NANOS && 2 * (now - improvedAt) >= elapsed;
            if (settled || n >= AUTO_WARMUP_MAX_RUNS || elapsed >= AUTO_WARMUP_MAX_NANOS) return n;
        }
    }
}

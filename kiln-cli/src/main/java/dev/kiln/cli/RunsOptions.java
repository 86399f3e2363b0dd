package dev.kiln.cli;

import picocli.CommandLine.Option;

/** {@code --runs N} and {@code --warmup N}: how often to execute a prepared model when timing it. */
final class RunsOptions {
    /** Bounds of the automatic warm-up: the JIT compiles a kernel after some thousand calls. */
    static final long AUTO_WARMUP_NANOS = 1_500_000_000L;
    static final int AUTO_WARMUP_MAX_RUNS = 5000;

    @Option(names = "--runs", paramLabel = "N", defaultValue = "20", description = "Timed runs (default: ${DEFAULT-VALUE}).")
    int runs;

    @Option(names = "--warmup", paramLabel = "N",
            description = "Untimed runs first, so the kernels reach their steady state (default: as many as fit in 1.5 s, at least 1,"
                    + " at most " + AUTO_WARMUP_MAX_RUNS + ").")
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
        long start = System.nanoTime();
        int n = 0;
        do {
            work.run();
            n++;
        } while (n < AUTO_WARMUP_MAX_RUNS && System.nanoTime() - start < AUTO_WARMUP_NANOS);
        return n;
    }
}

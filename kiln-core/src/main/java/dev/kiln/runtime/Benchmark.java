package dev.kiln.runtime;

import java.util.Arrays;
import java.util.Objects;

/**
 * Times a piece of work the way autotuning needs it: warm-up runs, then repetitions, reporting the
 * minimum and the median (machines are shared and noisy; the median is the figure to compare).
 */
public final class Benchmark {
    private Benchmark() {}

    /** How to time. */
    public record Config(int warmup, int repetitions, long maxNanos) {
        public Config {
            if (warmup < 0 || repetitions < 1 || maxNanos <= 0) {
                throw new IllegalArgumentException("benchmark needs warmup >= 0, repetitions >= 1 and a positive time budget, got "
                        + warmup + ", " + repetitions + ", " + maxNanos);
            }
        }

        /** 3 warm-up runs, 10 timed runs, at most 2 seconds of timed runs. */
        public static Config defaults() { return new Config(3, 10, 2_000_000_000L); }
    }

    /** The timings of the runs that happened (fewer than asked when the time budget ran out). */
    public record Result(long minNanos, long medianNanos, long maxNanos, int runs) {
        public double medianMillis() { return medianNanos / 1e6; }
    }

    /** Runs {@code work} per {@code config} and returns its timings. */
    public static Result run(Runnable work, Config config) {
        Objects.requireNonNull(work);
        for (int i = 0; i < config.warmup(); i++) work.run();
        long[] t = new long[config.repetitions()];
        int n = 0;
        long budgetStart = System.nanoTime();
        while (n < t.length) {
            long s = System.nanoTime();
            work.run();
            t[n++] = System.nanoTime() - s;
            if (System.nanoTime() - budgetStart > config.maxNanos()) break;
        }
        long[] done = Arrays.copyOf(t, n);
        Arrays.sort(done);
        long median = n % 2 == 1 ? done[n / 2] : (done[n / 2 - 1] + done[n / 2]) / 2;
        return new Result(done[0], median, done[n - 1], n);
    }
}

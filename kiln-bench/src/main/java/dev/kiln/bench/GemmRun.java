package dev.kiln.bench;

import java.util.ArrayList;
import java.util.List;

/**
 * What one GEMM peer did at one size: either timed runs (and, for the in-process peers, the product, so
 * that the peers can be checked against each other) or the reason it could not run here.
 */
sealed interface GemmRun {
    /** The peer's name in the table, e.g. {@code Kiln CPU}. */
    String peer();

    /**
     * Timed runs of one peer.
     *
     * @param peer     the peer's name
     * @param sortedMs milliseconds of each timed run, sorted ascending
     * @param product  the n x n product, row-major, or null when the peer runs out of process
     * @param detail   a note for the table (prepare time, kernel), or empty
     */
    record Timed(String peer, double[] sortedMs, float[] product, String detail) implements GemmRun {
        public Timed {
            if (sortedMs.length == 0) throw new IllegalArgumentException("Timed: no runs for " + peer);
        }

        double medianMs() {
            int n = sortedMs.length;
            return n % 2 == 1 ? sortedMs[n / 2] : (sortedMs[n / 2 - 1] + sortedMs[n / 2]) / 2;
        }

        double minMs() { return sortedMs[0]; }

        double maxMs() { return sortedMs[sortedMs.length - 1]; }

        /** GFLOP/s at the median: an n x n x n GEMM is 2 n^3 operations (an FMA counts as two). */
        double gflops(int n) { return 2.0 * n * n * n / (medianMs() * 1e6); }
    }

    /**
     * A peer that could not run here (missing runtime, device unavailable, failure), with why.
     *
     * @param peer   the peer's name
     * @param reason why, in one line
     */
    record Unavailable(String peer, String reason) implements GemmRun {}

    /**
     * Milliseconds of each timed call of {@code call}, sorted, after untimed ones, as {@code timing} says.
     */
    static double[] time(Runnable call, Timing timing) {
        long start = System.nanoTime(), warm = timing.warmupTime().toNanos();
        for (int i = 0; ; i++) {
            long spent = System.nanoTime() - start;
            // Time, not only a count, so that Java kernels are compiled before they are timed; but a call slower
            // than the whole warm-up (no JIT left to wait for) needs no more than one untimed call.
            if (i >= 1 && spent >= warm && (i >= timing.warmupCalls() || spent >= 2 * warm)) break;
            call.run();
        }
        List<Double> ms = new ArrayList<>(timing.runs());
        long until = System.nanoTime() + timing.runBudget().toNanos();
        for (int i = 0; i < timing.runs() && (i < Timing.MIN_RUNS || System.nanoTime() < until); i++) {
            long t = System.nanoTime();
            call.run();
            ms.add((System.nanoTime() - t) / 1e6);
        }
        return ms.stream().mapToDouble(Double::doubleValue).sorted().toArray();
    }

    /**
     * How one peer is timed at one size.
     *
     * @param warmupCalls untimed calls first: at least this many (unless one call outlasts twice the warm-up time)
     * @param warmupTime  and for at least this long
     * @param runs        timed calls: this many
     * @param runBudget   or fewer (but at least {@link #MIN_RUNS}) when they would take longer than this
     */
    record Timing(int warmupCalls, java.time.Duration warmupTime, int runs, java.time.Duration runBudget) {
        /** The fewest timed calls a median is taken of. */
        static final int MIN_RUNS = 3;
    }

    /** One line of a throwable for the table: its class and message, or its cause's when it only wraps. */
    static String reason(Throwable e) {
        Throwable t = e;
        while (t.getCause() != null && (t.getMessage() == null || t.getMessage().equals(t.getCause().toString()))) t = t.getCause();
        String m = t.getMessage() == null ? t.getClass().getSimpleName() : t.getClass().getSimpleName() + ": " + t.getMessage();
        return m.lines().findFirst().orElse(m);
    }
}

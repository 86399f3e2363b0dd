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
     * Milliseconds of each of {@code runs} timed calls of {@code call}, sorted, after untimed ones: at least
     * {@code warmup.calls()} and for at least {@code warmup.time()}, since a count alone can leave Java kernels
     * still interpreted when a call is long and few are made.
     */
    static double[] time(Runnable call, Warmup warmup, int runs) {
        long until = System.nanoTime() + warmup.time().toNanos();
        for (int i = 0; i < warmup.calls() || System.nanoTime() < until; i++) call.run();
        List<Double> ms = new ArrayList<>(runs);
        for (int i = 0; i < runs; i++) {
            long t = System.nanoTime();
            call.run();
            ms.add((System.nanoTime() - t) / 1e6);
        }
        return ms.stream().mapToDouble(Double::doubleValue).sorted().toArray();
    }

    /**
     * The untimed calls before the timed ones.
     *
     * @param calls at least this many
     * @param time  and for at least this long
     */
    record Warmup(int calls, java.time.Duration time) {}

    /** One line of a throwable for the table: its class and message, or its cause's when it only wraps. */
    static String reason(Throwable e) {
        Throwable t = e;
        while (t.getCause() != null && (t.getMessage() == null || t.getMessage().equals(t.getCause().toString()))) t = t.getCause();
        String m = t.getMessage() == null ? t.getClass().getSimpleName() : t.getClass().getSimpleName() + ": " + t.getMessage();
        return m.lines().findFirst().orElse(m);
    }
}

package dev.kiln.runtime;

import java.util.List;
import java.util.concurrent.ForkJoinPool;
import java.util.concurrent.ForkJoinWorkerThread;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The threads host devices run on, one per core: a kernel split in shares ({@link #forRanges}, {@link #runAll}) runs
 * them on its calling thread and on share helpers that poll for work between splits ({@link ShareRunner}); independent
 * steps of a plan run side by side on a work-stealing pool ({@link #pool}). A share may split again, on any thread,
 * without deadlock.
 */
public final class WorkerPool {
    private static final AtomicInteger NEXT = new AtomicInteger();
    private static final ForkJoinPool POOL = new ForkJoinPool(Runtime.getRuntime().availableProcessors(), pool -> {
        ForkJoinWorkerThread t = ForkJoinPool.defaultForkJoinWorkerThreadFactory.newThread(pool);
        t.setName("kiln-worker-" + NEXT.getAndIncrement());
        t.setDaemon(true);
        return t;
    }, null, false);

    private WorkerPool() {}

    /** The shared pool. */
    public static ForkJoinPool pool() { return POOL; }

    /** Number of workers: the cores, and the most threads a split runs on at once. */
    public static int size() { return POOL.getParallelism(); }

    /** A share of a range of iterations, {@code [start, end)}. */
    @FunctionalInterface
    public interface RangeTask {
        void run(long start, long end);
    }

    /** Shares per worker of work whose shares cost the same wherever they run (see {@link #balancedShares}). */
    private static final int SHARES_PER_WORKER = 4;

    /**
     * How many shares to cut {@code units} of independent work into: {@link #SHARES_PER_WORKER} a worker (at most one a
     * unit), stolen as workers free up, so a core slowed down for a while (another tenant on a shared host: one measured
     * at 88 or 150 GFLOP/s from one second to the next) takes fewer shares instead of holding back the run. Only for work
     * where a share does not repeat another's set-up (packing an operand, say) in proportion to the shares.
     */
    public static int balancedShares(long units) { return (int) Math.max(1, Math.min(units, (long) SHARES_PER_WORKER * size())); }

    /**
     * How long a share helper polls for work after its last share, and a caller waits spinning for the shares others
     * took, before parking: {@code -Dkiln.workers.spinMicros} (default 200). Longer keeps cores busy polling between
     * runs; shorter lets a split that follows a pause pay a wake-up (50 us to over 1 ms on a virtual machine).
     */
    private static final long SPIN_NANOS = Math.max(0, Long.getLong("kiln.workers.spinMicros", 200)) * 1000;
    private static final ShareRunner SHARES = new ShareRunner(size() - 1, SPIN_NANOS, "kiln-share");

    /**
     * Runs {@code task} over {@code [0, extent)} split into {@code parts} contiguous shares of equal size (the
     * last one shorter), on the calling thread and the share helpers ({@link ShareRunner}), and returns when all
     * are done; the first exception a share throws is rethrown as it is. A share may split again.
     */
    public static void forRanges(long extent, int parts, RangeTask task) {
        if (parts <= 1 || extent <= 1) {
            task.run(0, extent);
            return;
        }
        long chunk = (extent + parts - 1) / parts;
        int shares = (int) ((extent + chunk - 1) / chunk);
        SHARES.run(shares, i -> task.run(i * chunk, Math.min(extent, (i + 1) * chunk)));
    }

    /**
     * Runs {@code tasks} side by side on the calling thread and the share helpers, and returns when all are done; the
     * first exception one throws is rethrown as it is. A task may split again.
     */
    public static void runAll(List<? extends Runnable> tasks) {
        SHARES.run(tasks.size(), i -> tasks.get(i).run());
    }

    /** Starts every pool worker (the first parallel steps would otherwise pay for thread creation). */
    public static void warmUp() {
        int n = size();
        var tasks = new java.util.ArrayList<java.util.concurrent.ForkJoinTask<?>>();
        java.util.concurrent.CountDownLatch all = new java.util.concurrent.CountDownLatch(n);
        for (int i = 0; i < n; i++) {
            tasks.add(POOL.submit(() -> {
                all.countDown();
                try {
                    all.await(1, java.util.concurrent.TimeUnit.SECONDS);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }));
        }
        tasks.forEach(java.util.concurrent.ForkJoinTask::join);
    }
}

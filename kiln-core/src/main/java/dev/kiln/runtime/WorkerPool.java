package dev.kiln.runtime;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ForkJoinPool;
import java.util.concurrent.ForkJoinTask;
import java.util.concurrent.RecursiveAction;
import java.util.concurrent.ForkJoinWorkerThread;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The fixed pool of worker threads that host devices run kernels on, one per core. It is a
 * work-stealing pool, so a kernel split across workers (THREAD) can run inside an op that itself runs
 * on a worker, without deadlock.
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

    /** Number of workers. */
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
     * Runs {@code task} over {@code [0, extent)} split into {@code parts} contiguous shares of equal size (the
     * last one shorter), side by side on the pool, and returns when all are done.
     */
    public static void forRanges(long extent, int parts, RangeTask task) {
        if (parts <= 1 || extent <= 1) {
            task.run(0, extent);
            return;
        }
        long chunk = (extent + parts - 1) / parts;
        List<RecursiveAction> shares = new ArrayList<>();
        for (long s = 0; s < extent; s += chunk) {
            long start = s, end = Math.min(extent, s + chunk);
            shares.add(new RecursiveAction() {
                @Override
                protected void compute() { task.run(start, end); }
            });
        }
        invokeAll(shares);
    }

    /**
     * Runs {@code tasks} side by side on the pool and returns when all are done. Callable from a worker of the
     * pool (a kernel split inside a step that itself runs on a worker): that worker then runs a share itself.
     */
    public static void invokeAll(List<? extends ForkJoinTask<?>> tasks) {
        if (isWorker()) ForkJoinTask.invokeAll(tasks);
        else POOL.invoke(new RecursiveAction() {
            @Override
            protected void compute() { invokeAll(tasks); }
        });
    }

    /** Whether the calling thread is one of the pool's workers. */
    public static boolean isWorker() { return Thread.currentThread() instanceof ForkJoinWorkerThread w && w.getPool() == POOL; }

    /**
     * Runs {@code work} on a worker of the pool and returns when it is done; an exception it throws is rethrown
     * here as it is (the same object, its type and message unchanged).
     */
    public static void runOnWorker(Runnable work) {
        Throwable[] failure = {null};
        POOL.invoke(new RecursiveAction() {
            @Override
            protected void compute() {
                try {
                    work.run();
                } catch (Throwable t) {
                    failure[0] = t;
                }
            }
        });
        switch (failure[0]) {
            case null -> { }
            case RuntimeException e -> throw e;
            case Error e -> throw e;
            default -> throw new IllegalStateException(failure[0]); // a Runnable throws no checked exception
        }
    }

    /** Starts every worker (the first parallel run would otherwise pay for thread creation). */
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

package dev.kiln.runtime;

import java.util.concurrent.ForkJoinPool;
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

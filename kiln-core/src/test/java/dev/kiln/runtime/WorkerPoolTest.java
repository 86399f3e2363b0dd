package dev.kiln.runtime;

import dev.kiln.Tensor;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowable;

/** {@link WorkerPool}: splits in shares ({@link ShareRunner}), {@link WorkerPool#balancedShares}, and plans of threaded steps. */
class WorkerPoolTest {
    @Test
    void balancedSharesAreFourAWorkerAtMostOneAUnitAndAtLeastOne() {
        int most = 4 * WorkerPool.size();
        assertThat(WorkerPool.balancedShares(0)).isEqualTo(1);
        assertThat(WorkerPool.balancedShares(1)).isEqualTo(1);
        assertThat(WorkerPool.balancedShares(3)).isEqualTo(Math.min(3, most));
        assertThat(WorkerPool.balancedShares(most + 1)).isEqualTo(most);
        assertThat(WorkerPool.balancedShares(Long.MAX_VALUE)).isEqualTo(most);
    }

    @Test
    void everyShareRunsOnceAndTheFirstFailureComesBackAsItIsAfterAllEnded() {
        int[] runs = new int[1000];
        WorkerPool.forRanges(1000, 37, (start, end) -> { for (long i = start; i < end; i++) runs[(int) i]++; });
        assertThat(runs).containsOnly(1);
        java.util.concurrent.atomic.AtomicInteger ended = new java.util.concurrent.atomic.AtomicInteger();
        IndexOutOfBoundsException thrown = new IndexOutOfBoundsException("element 9 of 4");
        assertThat(catchThrowable(() -> WorkerPool.forRanges(8, 8, (start, end) -> {
            ended.incrementAndGet();
            if (start == 3) throw thrown;
        }))).isSameAs(thrown);
        assertThat(ended).hasValue(8);
        StackOverflowError error = new StackOverflowError("deep");
        assertThat(catchThrowable(() -> WorkerPool.runAll(java.util.List.of(() -> { }, () -> { throw error; })))).isSameAs(error);
    }

    @Test
    void sharesSplitAgainFromAnyThreadWithoutDeadlock() throws Exception {
        // nested splits on several callers at once: every inner share runs once, and every call returns
        long[] sums = new long[4];
        Thread[] callers = new Thread[4];
        for (int c = 0; c < 4; c++) {
            int caller = c;
            callers[c] = new Thread(() -> {
                for (int rep = 0; rep < 50; rep++) {
                    java.util.concurrent.atomic.AtomicLong sum = new java.util.concurrent.atomic.AtomicLong();
                    WorkerPool.forRanges(6, 6, (s0, e0) -> WorkerPool.forRanges(10, 5, (s1, e1) -> {
                        for (long i = s1; i < e1; i++) sum.addAndGet(s0 * 10 + i);
                    }));
                    sums[caller] += sum.get();
                }
            });
            callers[c].start();
        }
        for (Thread t : callers) t.join(20_000);
        for (Thread t : callers) assertThat(t.isAlive()).as("a caller still waits").isFalse();
        assertThat(sums).containsOnly(50L * (59 * 60 / 2));
    }

    @Test
    void aSplitFromAPoolWorkerRunsToo() {
        long[] sum = {0};
        WorkerPool.pool().invoke(java.util.concurrent.ForkJoinTask.adapt(() -> {
            java.util.concurrent.atomic.AtomicLong s = new java.util.concurrent.atomic.AtomicLong();
            WorkerPool.forRanges(100, 8, (a, b) -> { for (long i = a; i < b; i++) s.addAndGet(i); });
            sum[0] = s.get();
        }));
        assertThat(sum[0]).isEqualTo(99 * 100 / 2);
    }

    @Test
    void aPlanOfSeveralThreadedStepsGivesTheSameValuesFromAnyThread() throws Exception {
        // two matmuls and a threaded elementwise step: executed from the test thread and from another plain thread
        Tensor x = Tensor.randn(1, 96, 128).realize(), w = Tensor.randn(2, 128, 160).realize(), v = Tensor.randn(3, 160, 64).realize();
        try (ExecutionPlan plan = x.matmul(w).relu().matmul(v).exp().prepare();
             ExecutionPlan again = x.matmul(w).relu().matmul(v).exp().prepare()) {
            plan.execute();
            Thread t = new Thread(again::execute);
            t.start();
            t.join();
            Buffer a = plan.outputBuffer(), b = again.outputBuffer();
            for (long i = 0; i < a.count(); i++) assertThat(b.getDouble(i)).isEqualTo(a.getDouble(i));
            assertThat(Tensor.of(new float[] {1}, 1).buffer().count()).isEqualTo(1); // the pool is still usable
        }
    }
}

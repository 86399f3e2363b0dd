package dev.kiln.runtime;

import dev.kiln.Tensor;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowable;

/** {@link WorkerPool#runOnWorker}, {@link WorkerPool#balancedShares}, and plans whose steps run on a worker. */
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
    void workRunsOnAWorkerAndItsExceptionComesBackAsItIs() {
        boolean[] onWorker = {false};
        WorkerPool.runOnWorker(() -> onWorker[0] = WorkerPool.isWorker());
        assertThat(onWorker[0]).isTrue();
        assertThat(WorkerPool.isWorker()).isFalse();
        IndexOutOfBoundsException thrown = new IndexOutOfBoundsException("element 9 of 4");
        assertThat(catchThrowable(() -> WorkerPool.runOnWorker(() -> { throw thrown; }))).isSameAs(thrown);
        StackOverflowError error = new StackOverflowError("deep");
        assertThat(catchThrowable(() -> WorkerPool.runOnWorker(() -> { throw error; }))).isSameAs(error);
    }

    @Test
    void aPlanOfSeveralThreadedStepsGivesTheSameValuesFromAnyThread() throws Exception {
        // two matmuls and a threaded elementwise step: executed from a worker (one hand-off) and from a plain thread
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

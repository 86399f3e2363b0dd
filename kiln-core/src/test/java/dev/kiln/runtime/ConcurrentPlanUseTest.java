package dev.kiln.runtime;

import dev.kiln.testing.BlockingStep;
import dev.kiln.Tensor;
import dev.kiln.types.DType;
import org.junit.jupiter.api.Test;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** A second thread entering a run of one plan is detected, never computed; replicas on many threads agree bit for bit. */
class ConcurrentPlanUseTest {
    private static final ValueLayout.OfFloat F = ValueLayout.JAVA_FLOAT_UNALIGNED;

    private static float[] floats(Buffer b) {
        float[] out = new float[(int) b.count()];
        for (int i = 0; i < out.length; i++) out[i] = b.segment().getAtIndex(F, i);
        return out;
    }

    @Test
    void aSecondThreadEnteringARunInProgressGetsConcurrentUseException() throws Exception {
        BlockingStep step = new BlockingStep();
        try (ExecutionPlan plan = Tensor.prepare(step.over(Tensor.ones(4).contiguous().realize()).add(1))) {
            Thread first = Thread.ofPlatform().name("first-runner").start(plan::execute);
            assertThat(step.awaitInside()).isTrue();
            try {
                assertThatThrownBy(plan::execute).isInstanceOf(ConcurrentUseException.class).isInstanceOf(IllegalStateException.class)
                        .hasMessageContaining("ExecutionPlan[").hasMessageContaining("first-runner")
                        .hasMessageContaining("ExecutionPlan.replicate").hasMessageNotContaining("\n");
                assertThatThrownBy(() -> plan.executeWithVars(Map.of())).isInstanceOf(ConcurrentUseException.class);
                assertThatThrownBy(plan::executeProfiled).isInstanceOf(ConcurrentUseException.class);
                assertThatThrownBy(plan::close).isInstanceOf(ConcurrentUseException.class);
                assertThatThrownBy(() -> plan.setVariable(0, 1)).isInstanceOf(ConcurrentUseException.class);
            } finally {
                step.release();
                first.join(10_000);
            }
            // the first run was unaffected and the plan is free again
            assertThat(floats(plan.outputBuffer())).containsExactly(2f, 2f, 2f, 2f);
            plan.execute();
            assertThat(plan.executeProfiled()).isNotEmpty();
            assertThat(floats(plan.outputBuffer())).containsExactly(2f, 2f, 2f, 2f);
        }
    }

    @Test
    void theGuardIsReentrantForItsOwnThreadAndFreedByTheOuterExit() throws Exception {
        RunGuard guard = new RunGuard();
        assertThat(guard.enter("outer", "use X.copy()")).isTrue();
        assertThat(guard.enter("outer", "use X.copy()")).as("re-entry by the same thread").isFalse();
        guard.exit(false);
        Future<?> other = Executors.newVirtualThreadPerTaskExecutor().submit(() -> guard.enter("thing", "use X.copy()"));
        assertThatThrownBy(other::get).hasCauseInstanceOf(ConcurrentUseException.class)
                .hasRootCauseMessage("thing is already running on thread '" + Thread.currentThread().getName()
                        + "' and runs one execution at a time; use X.copy()");
        guard.exit(true);
        try (ExecutorService pool = Executors.newSingleThreadExecutor()) {
            assertThat(pool.submit(() -> guard.enter("thing", "use X.copy()")).get()).isTrue();
        }
    }

    @Test
    void twoThreadsHammeringOnePlanAreDetectedAndNeverGiveAWrongResult() throws Exception {
        Tensor x = Tensor.randn(7, 16, 64).realize();
        // a step that sees every overlap of two runs directly (the same inputs give the same outputs, so the
        // outputs alone could hide one)
        AtomicInteger inside = new AtomicInteger(), overlaps = new AtomicInteger();
        Tensor probed = Tensor.custom("probe", DType.F32, new int[] {16, 64}, (ins, out) -> {
            if (inside.incrementAndGet() > 1) overlaps.incrementAndGet();
            MemorySegment.copy(ins.getFirst(), 0, out, 0, 16 * 64 * 4L);
            for (long t = System.nanoTime(); System.nanoTime() - t < 2_000; ) Thread.onSpinWait();
            inside.decrementAndGet();
        }, x);
        Tensor y = probed.softmax(-1).mul(probed.max(new int[] {1}, true)).exp();
        try (ExecutionPlan plan = y.prepare()) {
            plan.execute();
            float[] expected = floats(plan.outputBuffer());
            AtomicInteger detected = new AtomicInteger(), wrong = new AtomicInteger(), ok = new AtomicInteger();
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
            Runnable hammer = () -> {
                for (int i = 0; i < 3000 || detected.get() == 0 && System.nanoTime() < deadline; i++) {
                    try {
                        plan.execute();
                        // the output is written once per element with the same value by any run, so a run that
                        // interleaved with another would show only through the intermediates it shares
                        if (Arrays.equals(floats(plan.outputBuffer()), expected)) ok.incrementAndGet();
                        else wrong.incrementAndGet();
                    } catch (ConcurrentUseException e) {
                        detected.incrementAndGet();
                    }
                }
            };
            Thread a = Thread.ofPlatform().start(hammer), b = Thread.ofPlatform().start(hammer);
            a.join();
            b.join();
            assertThat(detected.get()).as("concurrent entries detected").isPositive();
            assertThat(wrong.get()).as("wrong results without an exception").isZero();
            assertThat(overlaps.get()).as("runs that overlapped").isZero();
            assertThat(ok.get()).isPositive();
        }
    }

    @Test
    void replicasOnEightThreadsEqualOneThreadBitForBit() throws Exception {
        int threads = 8, runs = 200, n = 16 * 64;
        Tensor x = Tensor.zeros(16, 64).contiguous().realize();
        Tensor y = x.softmax(-1).mul(x.max(new int[] {1}, true)).tanh();
        try (ExecutionPlan plan = y.prepare()) {
            float[][] expected = new float[threads * runs][];
            for (int k = 0; k < expected.length; k++) {
                fill(x.buffer().segment(), n, k);
                plan.execute();
                expected[k] = floats(plan.outputBuffer());
            }
            List<ExecutionPlan> replicas = new ArrayList<>();
            List<Buffer> inputs = new ArrayList<>();
            for (int t = 0; t < threads; t++) {
                Buffer in = Buffer.allocateOffHeap(x.buffer().device(), DType.F32, n);
                inputs.add(in);
                replicas.add(plan.replicate(Map.of(x.buffer(), in)));
            }
            try (ExecutorService pool = Executors.newFixedThreadPool(threads)) {
                List<Future<Integer>> same = new ArrayList<>();
                for (int t = 0; t < threads; t++) {
                    int thread = t;
                    same.add(pool.submit(() -> {
                        int equal = 0;
                        for (int i = 0; i < runs; i++) {
                            int k = thread * runs + i;
                            fill(inputs.get(thread).segment(), n, k);
                            replicas.get(thread).execute();
                            if (Arrays.equals(floats(replicas.get(thread).outputBuffer()), expected[k])) equal++;
                        }
                        return equal;
                    }));
                }
                for (int t = 0; t < threads; t++) assertThat(same.get(t).get()).as("thread " + t).isEqualTo(runs);
            } finally {
                replicas.forEach(ExecutionPlan::close);
            }
        }
    }

    private static void fill(MemorySegment s, int n, int seed) {
        for (int i = 0; i < n; i++) s.setAtIndex(F, i, (float) Math.sin(seed * 7.31 + i * 1.713));
    }
}

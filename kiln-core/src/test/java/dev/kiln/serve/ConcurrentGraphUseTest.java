package dev.kiln.serve;

import dev.kiln.runtime.ConcurrentUseException;
import org.junit.jupiter.api.Test;

import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;

import static dev.kiln.serve.ServeFixtures.compiledMlp;
import static dev.kiln.serve.ServeFixtures.data;
import static dev.kiln.serve.ServeFixtures.session;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * Two threads calling one compiled graph: the second entering a run in progress gets a {@link ConcurrentUseException}
 * naming the replica API, and no run ever returns another thread's or a torn result (8 threads on replicas agreeing
 * with one thread is {@link ReplicasAndAsyncTest}).
 */
class ConcurrentGraphUseTest {
    private static final int INPUTS = 64;

    @Test
    void twoThreadsHammeringOneGraphAreDetectedAndNeverGiveAWrongResult() throws Exception {
        try (CompiledGraph c = compiledMlp(session("CPU"))) {
            float[][][] expected = new float[INPUTS][][];
            for (int k = 0; k < INPUTS; k++) {
                List<float[]> out = c.run(Map.of("x", data(8, k)));
                expected[k] = new float[][] {out.get(0), out.get(1)};
            }
            AtomicInteger detected = new AtomicInteger(), wrong = new AtomicInteger(), ok = new AtomicInteger();
            AtomicReference<String> message = new AtomicReference<>();
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
            Runnable hammer = () -> {
                for (int i = 0; i < 5000 || detected.get() == 0 && System.nanoTime() < deadline; i++) {
                    int k = (int) (Thread.currentThread().threadId() * 31 + i) % INPUTS;
                    try {
                        List<float[]> out = c.run(Map.of("x", data(8, k)));
                        if (Arrays.equals(out.get(0), expected[k][0]) && Arrays.equals(out.get(1), expected[k][1])) ok.incrementAndGet();
                        else wrong.incrementAndGet();
                    } catch (ConcurrentUseException e) {
                        detected.incrementAndGet();
                        message.set(e.getMessage());
                    }
                }
            };
            Thread a = Thread.ofPlatform().start(hammer), b = Thread.ofPlatform().start(hammer);
            a.join();
            b.join();
            assertThat(detected.get()).as("concurrent entries detected").isPositive();
            assertThat(wrong.get()).as("wrong results without an exception").isZero();
            assertThat(ok.get()).isPositive();
            assertThat(message.get()).startsWith("CompiledGraph[").contains("CompiledGraph.copy()").doesNotContain("\n");
            // the graph is usable again once the threads are done
            assertThat(c.run(Map.of("x", data(8, 3))).get(0)).containsExactly(expected[3][0]);
        }
    }
}

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

    @Test
    void committedRunsOfOneThreadAndRunsOfAnotherAreDetectedAndNeverGiveAWrongResult() throws Exception {
        try (CompiledGraph c = compiledMlp(session("CPU"))) {
            float[][][] expected = new float[INPUTS][][];
            for (int k = 0; k < INPUTS; k++) {
                List<float[]> out = c.run(Map.of("x", data(8, k)));
                expected[k] = new float[][] {out.get(0), out.get(1)};
            }
            AtomicInteger detected = new AtomicInteger(), wrong = new AtomicInteger(), ok = new AtomicInteger();
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
            Thread piped = Thread.ofPlatform().start(() -> {
                for (int i = 0; i < 300 || detected.get() == 0 && System.nanoTime() < deadline; i++) {
                    List<Map<String, float[]>> sets = new java.util.ArrayList<>();
                    for (int k = 0; k < 8; k++) sets.add(Map.of("x", data(8, (i + k) % INPUTS)));
                    try {
                        List<List<float[]>> out = c.runPipelined(sets);
                        for (int k = 0; k < 8; k++) {
                            float[][] e = expected[(i + k) % INPUTS];
                            if (Arrays.equals(out.get(k).get(0), e[0]) && Arrays.equals(out.get(k).get(1), e[1])) ok.incrementAndGet();
                            else wrong.incrementAndGet();
                        }
                    } catch (ConcurrentUseException e) {
                        detected.incrementAndGet();
                    }
                }
            });
            Thread sync = Thread.ofPlatform().start(() -> {
                for (int i = 0; i < 2000 || piped.isAlive() && System.nanoTime() < deadline; i++) {
                    int k = i % INPUTS;
                    try {
                        List<float[]> out = c.run(Map.of("x", data(8, k)));
                        if (Arrays.equals(out.get(0), expected[k][0]) && Arrays.equals(out.get(1), expected[k][1])) ok.incrementAndGet();
                        else wrong.incrementAndGet();
                    } catch (ConcurrentUseException e) {
                        detected.incrementAndGet();
                    }
                }
            });
            piped.join();
            sync.join();
            assertThat(detected.get()).as("concurrent entries detected").isPositive();
            assertThat(wrong.get()).as("wrong results without an exception").isZero();
            assertThat(ok.get()).isPositive();
        }
    }

    @Test
    void oneThreadCommittingThenCallingOrClosingIsNotConcurrentUse() {
        CompiledGraph c = compiledMlp(session("CPU"));
        float[][] expected = ServeFixtures.mlpReference(data(8, 5));
        for (int k = 0; k < 100; k++) c.commitNoWait(Map.of("x", data(8, k)));
        List<float[]> out = c.run(Map.of("x", data(8, 5))); // waits for the committed runs, which hold the guard
        assertThat(out.get(0)).containsExactly(expected[0], org.assertj.core.data.Offset.offset(1e-4f));
        for (int k = 0; k < 100; k++) c.commitNoWait(Map.of("x", data(8, k)));
        c.close(); // waits for them too
        org.assertj.core.api.Assertions.assertThatThrownBy(() -> c.run(Map.of("x", data(8, 5)))).isExactlyInstanceOf(IllegalStateException.class)
                .hasMessage("compiled graph is closed");
    }
}

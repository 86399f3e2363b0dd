package dev.kiln.serve;

import dev.kiln.types.DType;
import dev.kiln.Tensor;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;

import static dev.kiln.serve.ServeFixtures.compiledMlp;
import static dev.kiln.serve.ServeFixtures.data;
import static dev.kiln.serve.ServeFixtures.session;
import static org.assertj.core.api.Assertions.assertThat;

/** Replicas on many threads, pipelined and asynchronous runs: results equal plain sequential runs, bit for bit. */
class ReplicasAndAsyncTest {
    private static final int THREADS = 8, RUNS = 1000;

    @ParameterizedTest
    @ValueSource(strings = {"INTERP", "CPU", "CLANG"})
    void eightThreadsOnReplicasEqualOneThread(String device) throws Exception {
        try (CompiledGraph c = compiledMlp(session(device))) {
            float[][][] expected = new float[THREADS * RUNS][][];
            for (int k = 0; k < THREADS * RUNS; k++) {
                List<float[]> out = c.run(Map.of("x", data(8, k)));
                expected[k] = new float[][] {out.get(0), out.get(1)};
            }
            List<CompiledGraph> replicas = new ArrayList<>();
            for (int t = 0; t < THREADS; t++) replicas.add(c.copy());
            ExecutorService pool = Executors.newFixedThreadPool(THREADS);
            try {
                List<Future<Integer>> done = new ArrayList<>();
                for (int t = 0; t < THREADS; t++) {
                    CompiledGraph r = replicas.get(t);
                    int thread = t;
                    done.add(pool.submit(() -> {
                        int same = 0;
                        for (int i = 0; i < RUNS; i++) {
                            int k = thread * RUNS + i;
                            List<float[]> out = r.run(Map.of("x", data(8, k)));
                            if (java.util.Arrays.equals(out.get(0), expected[k][0]) && java.util.Arrays.equals(out.get(1), expected[k][1])) same++;
                        }
                        return same;
                    }));
                }
                for (int t = 0; t < THREADS; t++) assertThat(done.get(t).get()).as("thread " + t + ": runs equal to the single-threaded run").isEqualTo(RUNS);
            } finally {
                pool.shutdown();
                replicas.forEach(CompiledGraph::close);
            }
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"INTERP", "CPU", "CLANG"})
    void pipelinedRunsEqualSequentialRuns(String device) {
        try (CompiledGraph c = compiledMlp(session(device))) {
            List<Map<String, float[]>> sets = new ArrayList<>();
            for (int k = 0; k < 200; k++) sets.add(Map.of("x", data(8, 500 + k)));
            List<List<float[]>> piped = c.runPipelined(sets);
            assertThat(piped).hasSize(200);
            for (int k = 0; k < 200; k++) {
                List<float[]> seq = c.run(sets.get(k));
                assertThat(piped.get(k).get(0)).as("run " + k).containsExactly(seq.get(0));
                assertThat(piped.get(k).get(1)).as("run " + k).containsExactly(seq.get(1));
            }
            assertThat(c.runPipelined(List.of())).isEmpty();
        }
    }

    /** state' = state / 2 + x: order-dependent, so a lost, repeated, reordered or torn input changes the state. */
    private static Graph decay(int n) {
        Graph g = new Graph();
        Tensor state = g.input("state", DType.F32, n);
        Tensor x = g.input("x", DType.F32, n);
        Tensor next = state.mul(0.5f).add(x);
        return g.outputs(next, next.sum());
    }

    @ParameterizedTest
    @ValueSource(strings = {"INTERP", "CPU"})
    void aReplicaWithoutHandleValuesStartsFromZeroHandlesFedAsTheOriginal(String device) {
        int n = 64;
        Session s = session(device);
        try (CompiledGraph original = s.compile(decay(n))) {
            float[] start = new float[n];
            java.util.Arrays.fill(start, 3f);
            original.bindHandle("state", start);
            original.setHandleFeed("state", 0);
            float[] x = new float[n];
            java.util.Arrays.fill(x, 1f);
            original.run(Map.of("x", x)); // state 0.5 * 3 + 1 = 2.5
            try (CompiledGraph withValues = original.copy(true); CompiledGraph empty = original.copy(false)) {
                assertThat(empty.hasHandle("state")).isTrue();
                assertThat(empty.readHandle("state")).containsOnly(0f);
                assertThat(withValues.readHandle("state")).containsOnly(2.5f);
                empty.run(Map.of("x", x)); // fed as the original: 0.5 * 0 + 1
                assertThat(empty.readHandle("state")).containsOnly(1f);
                assertThat(original.readHandle("state")).as("the original's handle is its own").containsOnly(2.5f);
            }
            original.bindZeroHandle("state");
            assertThat(original.readHandle("state")).containsOnly(0f);
            original.run(Map.of("x", x));
            assertThat(original.readHandle("state")).containsOnly(1f);
        }
        try (CompiledGraph g = s.compile(decay(n))) {
            org.assertj.core.api.Assertions.assertThatThrownBy(() -> g.bindZeroHandle("nope"))
                    .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("bindZeroHandle: unknown input 'nope'");
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"INTERP", "CPU", "CLANG"})
    void committedRunsNeverRace(String device) {
        int n = 1024, runs = device.equals("INTERP") ? 200 : 1000;
        Session s = session(device);
        for (int slots : new int[] {1, 3}) {
            try (CompiledGraph async = s.compile(decay(n), new CompileOptions(slots)); CompiledGraph sync = s.compile(decay(n))) {
                async.bindHandle("state", new float[n]);
                async.setHandleFeed("state", 0);
                sync.bindHandle("state", new float[n]);
                sync.setHandleFeed("state", 0);
                float[] x = new float[n]; // one array, rewritten after every commit: commits must copy it before returning
                float[] lastSum = null;
                for (int k = 0; k < runs; k++) {
                    for (int i = 0; i < n; i++) x[i] = (k * 31 + i * 7) % 101 - 50;
                    async.commitNoWait(Map.of("x", x));
                    lastSum = sync.run(Map.of("x", x)).get(1);
                    if (k % 97 == 0) {
                        async.syncPending();
                        assertThat(async.readHandle("state")).as("slots " + slots + ", after run " + k).containsExactly(sync.readHandle("state"));
                    }
                }
                async.syncPending();
                async.syncPending(); // nothing pending: returns at once
                assertThat(async.readHandle("state")).as("slots " + slots).containsExactly(sync.readHandle("state"));
                MemorySegment arena = async.arena();
                float[] sum = {arena.get(ValueLayout.JAVA_FLOAT_UNALIGNED, async.runSlots(new float[][] {null, new float[n]}).offset(1))};
                float[] expected = sync.run(Map.of("x", new float[n])).get(1);
                assertThat(sum).containsExactly(expected);
                assertThat(lastSum).isNotNull();
            }
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"CPU"})
    void synchronousCallsWaitForCommittedRuns(String device) {
        try (CompiledGraph c = session(device).compile(decay(1024))) {
            c.bindHandle("state", new float[1024]);
            c.setHandleFeed("state", 0);
            float[] ones = new float[1024];
            java.util.Arrays.fill(ones, 1);
            for (int k = 0; k < 50; k++) c.commitNoWait(Map.of("x", ones));
            // no syncPending: reading the handle waits for all 50 runs; state = 2 - 2^-49, rounded to float
            assertThat(c.readHandle("state")[0]).isEqualTo((float) (2 - Math.pow(2, -49)));
            for (int k = 0; k < 50; k++) c.commitNoWait(Map.of("x", ones));
            try (CompiledGraph r = c.copy()) {
                assertThat(r.readHandle("state")).containsExactly(c.readHandle("state"));
            }
        }
    }
}

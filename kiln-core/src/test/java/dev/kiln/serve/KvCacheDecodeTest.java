package dev.kiln.serve;

import dev.kiln.models.TinyDecoder;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.util.Arrays;
import java.util.Map;

import static dev.kiln.serve.ServeFixtures.data;
import static dev.kiln.serve.ServeFixtures.session;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

/**
 * A single-head causal attention decoder run token by token, its keys and values kept in KV-cache handles
 * that the graph updates at the position variable and feeds back after every step, gives the logits of
 * recomputing the whole sequence at every step, for 64 steps.
 */
class KvCacheDecodeTest {
    private static final int T = 64, D = 16, V = 24;
    private static final float[] WQ = data(D * D, 11), WK = data(D * D, 12), WV = data(D * D, 13), WO = data(D * V, 14);

    @ParameterizedTest
    @ValueSource(strings = {"INTERP", "CPU", "CLANG"})
    void decodingWithKvHandlesEqualsRecomputingTheSequence(String device) {
        Session s = session(device);
        try (CompiledGraph step = s.compile(TinyDecoder.decodeStep(T, D, V)); CompiledGraph full = s.compile(TinyDecoder.fullSequence(T, D, V))) {
            TinyDecoder.setWeights(step, WQ, WK, WV, WO);
            TinyDecoder.setWeights(full, WQ, WK, WV, WO);
            TinyDecoder.bindCaches(step, T, D);
            float[] xs = new float[T * D];
            for (int t = 0; t < T; t++) {
                float[] token = data(D, 100 + t);
                System.arraycopy(token, 0, xs, t * D, D);
                step.setVariable("pos", t);
                float[] logits = step.run(Map.of("x", token)).get(0);
                float[] all = full.run(Map.of("xs", xs)).get(0);
                float[] expected = Arrays.copyOfRange(all, t * V, (t + 1) * V);
                for (int j = 0; j < V; j++) {
                    assertThat(logits[j]).as("step %d logit %d", t, j).isCloseTo(expected[j], within(2e-5f + 2e-5f * Math.abs(expected[j])));
                }
            }
            // the caches hold every step's key row, as the full computation's keys
            float[] kc = step.readHandle("kc");
            for (int t = 0; t < T; t++) {
                for (int j = 0; j < D; j++) {
                    double key = 0;
                    for (int i = 0; i < D; i++) key += (double) xs[t * D + i] * WK[i * D + j];
                    assertThat(kc[t * D + j]).as("key %d,%d", t, j).isCloseTo((float) key, within(1e-5f));
                }
            }
        }
    }
}

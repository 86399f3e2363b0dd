package dev.kiln.serve;

import dev.kiln.DType;
import dev.kiln.Tensor;
import dev.kiln.Variable;
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

    private static Tensor[] weights(Graph g) {
        return new Tensor[] {g.param("wq", DType.F32, D, D), g.param("wk", DType.F32, D, D), g.param("wv", DType.F32, D, D), g.param("wo", DType.F32, D, V)};
    }

    private static void setWeights(CompiledGraph c) {
        c.setParam("wq", WQ);
        c.setParam("wk", WK);
        c.setParam("wv", WV);
        c.setParam("wo", WO);
    }

    /** One step: token x at position pos; the caches get row pos; outputs logits, the new key cache, the new value cache. */
    private static Graph decodeStep() {
        Graph g = new Graph();
        Tensor x = g.input("x", DType.F32, 1, D);
        Tensor kc = g.input("kc", DType.F32, T, D);
        Tensor vc = g.input("vc", DType.F32, T, D);
        Tensor[] w = weights(g);
        Tensor pos = Tensor.variable(new Variable("pos", 0, T - 1));
        Tensor q = x.matmul(w[0]), k = x.matmul(w[1]), v = x.matmul(w[2]);
        Tensor row = Tensor.arange(T).eq(pos).reshape(T, 1);
        Tensor keys = Tensor.where(row, k, kc), values = Tensor.where(row, v, vc);
        Tensor scores = q.matmul(keys.transpose(0, 1)).mul(1 / Math.sqrt(D));
        Tensor visible = Tensor.arange(T).le(pos).reshape(1, T);
        Tensor attn = Tensor.where(visible, scores, Float.NEGATIVE_INFINITY).softmax(-1);
        return g.outputs(attn.matmul(values).matmul(w[3]), keys, values);
    }

    /** The whole sequence at once: rows past the current position are zeros and, being causal, change nothing before them. */
    private static Graph fullSequence() {
        Graph g = new Graph();
        Tensor xs = g.input("xs", DType.F32, T, D);
        Tensor[] w = weights(g);
        Tensor q = xs.matmul(w[0]), k = xs.matmul(w[1]), v = xs.matmul(w[2]);
        Tensor scores = q.matmul(k.transpose(0, 1)).mul(1 / Math.sqrt(D));
        Tensor causal = Tensor.arange(T).reshape(1, T).le(Tensor.arange(T).reshape(T, 1));
        Tensor attn = Tensor.where(causal, scores, Float.NEGATIVE_INFINITY).softmax(-1);
        return g.outputs(attn.matmul(v).matmul(w[3]));
    }

    @ParameterizedTest
    @ValueSource(strings = {"INTERP", "CPU", "CLANG"})
    void decodingWithKvHandlesEqualsRecomputingTheSequence(String device) {
        Session s = session(device);
        try (CompiledGraph step = s.compile(decodeStep()); CompiledGraph full = s.compile(fullSequence())) {
            setWeights(step);
            setWeights(full);
            step.bindHandle("kc", new float[T * D]);
            step.bindHandle("vc", new float[T * D]);
            step.setHandleFeed("kc", 1);
            step.setHandleFeed("vc", 2);
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

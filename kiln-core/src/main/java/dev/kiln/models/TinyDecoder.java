package dev.kiln.models;

import dev.kiln.types.DType;
import dev.kiln.Tensor;
import dev.kiln.types.Variable;
import dev.kiln.serve.CompiledGraph;
import dev.kiln.serve.Graph;

/**
 * A single-head causal attention decoder for up to {@code maxTokens} tokens, as two serving graphs: one
 * decode step that keeps keys and values in KV-cache inputs (bound as handles and fed back from its
 * outputs 1 and 2), and the whole sequence at once, its reference. Weights: params {@code wq}, {@code wk},
 * {@code wv} (dim x dim) and {@code wo} (dim x vocab).
 */
public final class TinyDecoder {
    private TinyDecoder() {}

    private static Tensor[] weights(Graph g, int dim, int vocab) {
        return new Tensor[] {g.param("wq", DType.F32, dim, dim), g.param("wk", DType.F32, dim, dim), g.param("wv", DType.F32, dim, dim),
                g.param("wo", DType.F32, dim, vocab)};
    }

    /**
     * One step: input {@code x} (1, dim) is the token at position variable {@code pos}; inputs {@code kc}
     * and {@code vc} (maxTokens, dim) are the caches. Outputs: the logits (1, vocab), then the caches with
     * row {@code pos} written.
     */
    public static Graph decodeStep(int maxTokens, int dim, int vocab) {
        Graph g = new Graph();
        Tensor x = g.input("x", DType.F32, 1, dim);
        Tensor kc = g.input("kc", DType.F32, maxTokens, dim);
        Tensor vc = g.input("vc", DType.F32, maxTokens, dim);
        Tensor[] w = weights(g, dim, vocab);
        Tensor pos = Tensor.variable(new Variable("pos", 0, maxTokens - 1));
        Tensor q = x.matmul(w[0]), k = x.matmul(w[1]), v = x.matmul(w[2]);
        Tensor row = Tensor.arange(maxTokens).eq(pos).reshape(maxTokens, 1);
        Tensor keys = Tensor.where(row, k, kc), values = Tensor.where(row, v, vc);
        Tensor scores = q.matmul(keys.transpose(0, 1)).mul(1 / Math.sqrt(dim));
        Tensor visible = Tensor.arange(maxTokens).le(pos).reshape(1, maxTokens);
        Tensor attn = Tensor.where(visible, scores, Float.NEGATIVE_INFINITY).softmax(-1);
        return g.outputs(attn.matmul(values).matmul(w[3]), keys, values);
    }

    /** Input {@code xs} (maxTokens, dim), output the logits of every position (maxTokens, vocab); causal, so later rows change nothing before them. */
    public static Graph fullSequence(int maxTokens, int dim, int vocab) {
        Graph g = new Graph();
        Tensor xs = g.input("xs", DType.F32, maxTokens, dim);
        Tensor[] w = weights(g, dim, vocab);
        Tensor q = xs.matmul(w[0]), k = xs.matmul(w[1]), v = xs.matmul(w[2]);
        Tensor scores = q.matmul(k.transpose(0, 1)).mul(1 / Math.sqrt(dim));
        Tensor causal = Tensor.arange(maxTokens).reshape(1, maxTokens).le(Tensor.arange(maxTokens).reshape(maxTokens, 1));
        Tensor attn = Tensor.where(causal, scores, Float.NEGATIVE_INFINITY).softmax(-1);
        return g.outputs(attn.matmul(v).matmul(w[3]));
    }

    /** Sets the four weights of either graph. */
    public static void setWeights(CompiledGraph c, float[] wq, float[] wk, float[] wv, float[] wo) {
        c.setParam("wq", wq);
        c.setParam("wk", wk);
        c.setParam("wv", wv);
        c.setParam("wo", wo);
    }

    /** Binds zeroed KV-cache handles and feeds them from the step's outputs 1 and 2 after every run. */
    public static void bindCaches(CompiledGraph step, int maxTokens, int dim) {
        step.bindZeroHandle("kc");
        step.bindZeroHandle("vc");
        step.setHandleFeed("kc", 1);
        step.setHandleFeed("vc", 2);
    }
}

package dev.kiln.models;

import dev.kiln.Tensor;

/**
 * Small models built from the Tensor API with seeded weights: an MLP and a pre-norm transformer block
 * with causal multi-head attention. The demo runs them and the benchmarks time them.
 */
public final class SmallModels {
    private SmallModels() {}

    /**
     * A realised weight of shape (out, in) scaled by 1/sqrt(in), so activations keep unit scale. Realised
     * like a loaded checkpoint: kernels read it as a buffer instead of recomputing it.
     */
    private static Tensor weight(long seed, int out, int in) {
        return Tensor.randn(seed, out, in).mul(1.0 / Math.sqrt(in)).realize();
    }

    /** 16 -> 32 (GELU) -> 32 (ReLU) -> 10, then softmax. */
    public static Tensor mlp(Tensor x) {
        Tensor h = x.linear(weight(1, 32, 16), Tensor.zeros(32)).gelu();
        h = h.linear(weight(2, 32, 32), Tensor.randn(3, 32).mul(0.1).realize()).relu();
        return h.linear(weight(4, 10, 32), null).softmax(-1);
    }

    /** One pre-norm transformer block on x of shape (batch, seq, dim). */
    public static Tensor transformerBlock(Tensor x, int heads) { return transformerBlock(x, heads, 10); }

    /** One pre-norm transformer block whose weights are drawn from seeds {@code seed..seed+3}. */
    public static Tensor transformerBlock(Tensor x, int heads, long seed) {
        int b = x.dim(0), t = x.dim(1), d = x.dim(2), hd = d / heads;
        int[] norm = {d};
        Tensor ln1 = x.layerNorm(norm, Tensor.ones(d), Tensor.zeros(d), 1e-5);
        Tensor qkv = ln1.linear(weight(seed, 3 * d, d), null); // (b, t, 3d)
        Tensor[] split = qkv.split(d, -1).toArray(Tensor[]::new);
        Tensor q = heads(split[0], b, t, heads, hd), k = heads(split[1], b, t, heads, hd), v = heads(split[2], b, t, heads, hd);
        Tensor attn = Tensor.scaledDotProductAttention(q, k, v, null, true, null); // (b, h, t, hd)
        Tensor merged = attn.permute(0, 2, 1, 3).reshape(b, t, d);
        Tensor h = x.add(merged.linear(weight(seed + 1, d, d), null));
        Tensor ln2 = h.layerNorm(norm, Tensor.ones(d), Tensor.zeros(d), 1e-5);
        Tensor mlp = ln2.linear(weight(seed + 2, 4 * d, d), null).geluTanh().linear(weight(seed + 3, d, 4 * d), null);
        return h.add(mlp);
    }

    private static Tensor heads(Tensor x, int b, int t, int heads, int hd) {
        return x.reshape(b, t, heads, hd).permute(0, 2, 1, 3);
    }
}

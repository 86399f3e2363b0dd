package dev.kiln;

import dev.kiln.types.DType;
import dev.kiln.runtime.Device;

import java.util.Arrays;

/** Scaled dot-product attention and rotary position embeddings, composed from matmul, softmax and slicing. */
final class Attention {
    private Attention() {}

    /**
     * {@code softmax(q k^T * scale + bias) v} as PyTorch 2's {@code scaled_dot_product_attention}. A bool
     * mask keeps positions where it is true; a float mask is added to the scores. {@code causal} masks
     * key {@code j > i} for query {@code i} (aligned top-left) and may be combined with {@code mask}.
     */
    static Tensor scaledDotProductAttention(Tensor q, Tensor k, Tensor v, Tensor mask, boolean causal, Double scale) {
        String op = "scaledDotProductAttention";
        if (q.ndim() < 2 || k.ndim() < 2 || v.ndim() < 2) {
            throw new IllegalArgumentException(op + ": q " + q.shape() + ", k " + k.shape() + " and v " + v.shape()
                    + " must each have at least 2 axes (..., L or S, features)");
        }
        if (!q.dtype().isFloat() || !k.dtype().isFloat() || !v.dtype().isFloat()) {
            throw new IllegalArgumentException(op + ": q, k and v must have float dtypes, got " + q.dtype() + ", " + k.dtype() + ", " + v.dtype());
        }
        if (q.dim(-1) != k.dim(-1)) {
            throw new IllegalArgumentException(op + ": q " + q.shape() + " and k " + k.shape() + " have different feature sizes "
                    + q.dim(-1) + " and " + k.dim(-1));
        }
        if (k.dim(-2) != v.dim(-2)) {
            throw new IllegalArgumentException(op + ": k " + k.shape() + " and v " + v.shape() + " have different source lengths "
                    + k.dim(-2) + " and " + v.dim(-2));
        }
        int[] batch = batchShape(op, q, k, v);
        int l = q.dim(-2), s = k.dim(-2);
        int[] scoreShape = Arrays.copyOf(batch, batch.length + 2);
        scoreShape[batch.length] = l;
        scoreShape[batch.length + 1] = s;
        if (mask != null) {
            if (!mask.dtype().isBool() && !mask.dtype().isFloat()) {
                throw new IllegalArgumentException(op + ": mask must be bool (true = attend) or float (added to the scores), got " + mask.dtype());
            }
            if (!broadcastsTo(mask.dims(), scoreShape)) {
                throw new IllegalArgumentException(op + ": mask " + mask.shape() + " is not broadcastable to the attention scores "
                        + Arrays.toString(scoreShape) + " (..., L, S)");
            }
        }
        DType out = DType.promote(DType.promote(q.dtype(), k.dtype()), v.dtype());
        DType ct = Normalization.computeType(out);
        Device dev = q.device();
        double sc = scale != null ? scale : 1 / Math.sqrt(q.dim(-1));
        Tensor scores = q.cast(ct).matmul(k.to(dev).cast(ct).mT()).mul(sc);
        if (mask != null) {
            Tensor m = mask.to(dev);
            scores = m.dtype().isBool() ? Tensor.where(m, scores, Double.NEGATIVE_INFINITY) : scores.add(m.cast(ct));
        }
        if (causal) {
            Tensor keep = Tensor.arange(s).reshape(1, s).le(Tensor.arange(l).reshape(l, 1)).to(dev);
            scores = Tensor.where(keep, scores, Double.NEGATIVE_INFINITY);
        }
        return scores.softmax(-1).matmul(v.to(dev).cast(ct)).cast(out);
    }

    /** The broadcast of the batch axes (all but the last two) of q, k and v. */
    private static int[] batchShape(String op, Tensor q, Tensor k, Tensor v) {
        int[] qb = Arrays.copyOf(q.dims(), q.ndim() - 2), kb = Arrays.copyOf(k.dims(), k.ndim() - 2), vb = Arrays.copyOf(v.dims(), v.ndim() - 2);
        int r = Math.max(qb.length, Math.max(kb.length, vb.length));
        int[] out = new int[r];
        for (int i = 0; i < r; i++) {
            int d = 1;
            for (int[] b : new int[][] {qb, kb, vb}) {
                int j = i - (r - b.length);
                int x = j < 0 ? 1 : b[j];
                if (x != 1 && d != 1 && x != d) {
                    throw new IllegalArgumentException(op + ": batch dimensions of q " + q.shape() + ", k " + k.shape() + " and v " + v.shape()
                            + " do not broadcast");
                }
                if (x != 1) d = x;
            }
            out[i] = d;
        }
        return out;
    }

    /** Whether {@code s} broadcasts to exactly {@code target} (NumPy rules). */
    static boolean broadcastsTo(int[] s, int[] target) {
        if (s.length > target.length) return false;
        for (int i = 0; i < s.length; i++) {
            int d = s[s.length - 1 - i], t = target[target.length - 1 - i];
            if (d != 1 && d != t) return false;
        }
        return true;
    }

    /**
     * {@code x * cos + rotate(x) * sin} over the last axis: {@code rotate} is NeoX/Llama's rotate_half
     * ({@code [-x2, x1]} for halves x1, x2) or, interleaved, GPT-J's rotation of pairs
     * ({@code (x0, x1) -> (-x1, x0)}). Tables of the full width are used as they are; tables of half the
     * width hold one angle per pair and are spread to the layout of the convention.
     */
    static Tensor rotaryEmbedding(Tensor x, Tensor cos, Tensor sin, boolean interleaved) {
        String op = "rotaryEmbedding";
        if (x.ndim() < 1 || x.dim(-1) % 2 != 0) {
            throw new IllegalArgumentException(op + ": x " + x.shape() + " needs a last axis of even size (..., seq, dim)");
        }
        if (!cos.shape().equals(sin.shape())) {
            throw new IllegalArgumentException(op + ": cos " + cos.shape() + " and sin " + sin.shape() + " must have the same shape");
        }
        int d = x.dim(-1), h = d / 2;
        Tensor c = cos.to(x.device()), s = sin.to(x.device());
        if (c.ndim() > 0 && c.dim(-1) == h && h != 1) {
            c = spread(c, interleaved);
            s = spread(s, interleaved);
        }
        if (!broadcastsTo(c.dims(), x.dims())) {
            throw new IllegalArgumentException(op + ": cos/sin " + cos.shape() + " do not broadcast to x " + x.shape()
                    + " (last axis must be " + d + " or " + h + ")");
        }
        int last = x.ndim() - 1;
        Tensor rotated;
        if (interleaved) {
            int[] pairs = Arrays.copyOf(x.dims(), x.ndim() + 1);
            pairs[last] = h;
            pairs[last + 1] = 2;
            Tensor p = x.reshape(pairs);
            rotated = Tensor.cat(last + 1, p.shrinkAxis(last + 1, 1, 2).neg(), p.shrinkAxis(last + 1, 0, 1)).reshape(x.dims());
        } else {
            rotated = Tensor.cat(last, x.shrinkAxis(last, h, d).neg(), x.shrinkAxis(last, 0, h));
        }
        return x.mul(c).add(rotated.mul(s));
    }

    /** A per-pair table (..., dim/2) spread to (..., dim): duplicated halves, or each angle twice in a row. */
    private static Tensor spread(Tensor t, boolean interleaved) {
        if (!interleaved) return Tensor.cat(-1, t, t);
        int[] d = t.dims();
        int[] pairs = Arrays.copyOf(d, d.length + 1);
        pairs[d.length] = 2;
        int[] flat = d.clone();
        flat[d.length - 1] *= 2;
        return t.unsqueeze(-1).expand(pairs).reshape(flat);
    }

    /**
     * Llama's tables: angle {@code pos * base^(-2i/dim)} for position {@code pos < seqLen} and pair
     * {@code i < dim/2}, with the halves duplicated (the non-interleaved layout). Computed on the host in
     * double precision and stored as f32 constants.
     */
    static Tensor.RotaryTables rotaryTables(int seqLen, int dim, double base) {
        String op = "rotaryTables";
        if (seqLen < 0) throw new IllegalArgumentException(op + ": seqLen must be >= 0, got " + seqLen);
        if (dim <= 0 || dim % 2 != 0) throw new IllegalArgumentException(op + ": dim must be positive and even, got " + dim);
        if (!(base > 0) || Double.isInfinite(base)) throw new IllegalArgumentException(op + ": base must be positive and finite, got " + base);
        int h = dim / 2;
        double[] cos = new double[seqLen * dim], sin = new double[seqLen * dim];
        for (int p = 0; p < seqLen; p++) {
            for (int i = 0; i < h; i++) {
                double angle = p * Math.pow(base, -2.0 * i / dim);
                double c = Math.cos(angle), s = Math.sin(angle);
                cos[p * dim + i] = cos[p * dim + i + h] = c;
                sin[p * dim + i] = sin[p * dim + i + h] = s;
            }
        }
        return new Tensor.RotaryTables(Tensor.of(DType.F32, cos, seqLen, dim), Tensor.of(DType.F32, sin, seqLen, dim));
    }
}

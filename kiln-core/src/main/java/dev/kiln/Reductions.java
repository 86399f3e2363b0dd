package dev.kiln;

import dev.kiln.types.DType;
import dev.kiln.types.Variable;

import java.util.Arrays;

/**
 * Reductions beyond a single REDUCE node: mean and variance (divided by a count that may be symbolic),
 * logsumexp, arg extremes (the first or the last of equal values), hardmax, and cumulative sums and
 * products (exclusive, or running from the end).
 */
final class Reductions {
    private Reductions() {}

    /** ONNX Hardmax: 1 at the first maximum along {@code axis}, 0 elsewhere, in x's dtype. */
    static Tensor hardmax(Tensor x, int axis) {
        int a = x.axis(axis, "hardmax");
        if (x.dim(a) == 0) return x;
        Tensor first = x.argmax(a, true);
        return first.eq(ElementIndexing.positions(x.dim(a), x.ndim(), a, x.device())).cast(x.dtype());
    }

    /** Argmax or argmin along an axis as i64, taking the last of equal extremes when {@code last}. */
    static Tensor argExtreme(Tensor x, int axis, boolean keepdim, boolean max, boolean last) {
        String op = max ? "argmax" : "argmin";
        int a = x.axis(axis, op);
        if (!last) return max ? x.argmax(a, keepdim) : x.argmin(a, keepdim);
        if (x.dim(a) == 0) throw new IllegalArgumentException(op + ": axis " + axis + " of shape " + x.shape() + " is empty");
        Tensor f = x.flip(a);
        return (max ? f.argmax(a, keepdim) : f.argmin(a, keepdim)).rsub((long) x.dim(a) - 1);
    }

    /**
     * ONNX CumSum: the running sum along {@code axis} in x's dtype; {@code exclusive} leaves the current
     * element out, {@code reverse} sums from the end.
     */
    static Tensor cumsum(Tensor x, int axis, boolean exclusive, boolean reverse) {
        int a = x.axis(axis, "cumsum");
        if (x.dtype().isBool()) throw new IllegalArgumentException("cumsum: needs a numeric tensor, got " + x.dtype());
        Tensor y = reverse ? x.flip(a) : x;
        Tensor c = y.cumsum(a).cast(x.dtype());
        if (exclusive && x.dim(a) > 0) {
            int[][] pads = new int[x.ndim()][2];
            pads[a] = new int[] {1, -1};
            c = c.pad(pads);
        }
        return reverse ? c.flip(a) : c;
    }

    static Tensor mean(Tensor t, int[] axes, boolean keepdim) {
        Tensor x = t.toFloat();
        Object count = countOver(t, axes, "mean", x.dtype(), 0); // checks the axes first, in the caller's terms
        return x.sum(axes, keepdim).div(count);
    }

    /**
     * The number of elements over {@code axes} minus {@code correction} (at least 0): a Java number, or a
     * 0-d tensor of {@code dtype} when an axis is symbolic (its size is known only when the plan runs).
     */
    private static Object countOver(Tensor t, int[] axes, String op, DType dtype, double correction) {
        long n = 1;
        Tensor symbolic = null;
        for (int a : t.axes(axes, op)) {
            Variable v = t.shape().variable(a);
            if (v == null) n *= t.dim(a);
            else symbolic = symbolic == null ? Tensor.variable(v) : symbolic.mul(Tensor.variable(v));
        }
        if (symbolic == null) return Math.max(0, n - correction);
        return symbolic.cast(dtype).mul((double) n).sub(correction).maximum(0.0).to(t.device());
    }

    static Tensor var(Tensor t, int[] axes, boolean keepdim, double correction) {
        Tensor x = t.toFloat();
        Object count = countOver(t, axes, "var", x.dtype(), correction);
        Tensor d = x.sub(x.mean(axes, true));
        return d.square().sum(axes, keepdim).div(count);
    }

    static Tensor logsumexp(Tensor t, int[] axes, boolean keepdim) {
        int[] checked = t.axes(axes, "logsumexp"); // before the max it is built from, which would name itself
        Tensor x = t.toFloat();
        Tensor m = x.max(axes, true);
        m = Tensor.where(m.isinf(), m.zerosLike(), m);
        Tensor r = x.sub(m).exp().sum(axes, true).log().add(m);
        return keepdim ? r : r.dropAxes(checked);
    }

    static Tensor argExtreme(Tensor t, int axis, boolean keepdim, boolean max) {
        int a = t.axis(axis, max ? "argmax" : "argmin");
        int n = t.dim(a);
        if (n == 0) throw new IllegalArgumentException((max ? "argmax" : "argmin") + ": axis " + axis + " of shape " + t.shape() + " is empty");
        Tensor m = max ? t.max(new int[] {a}, true) : t.min(new int[] {a}, true);
        Tensor hit = t.eq(m);
        if (t.dtype().isFloat()) hit = hit.logicalOr(t.isnan());
        int[] s = new int[t.ndim()];
        Arrays.fill(s, 1);
        s[a] = n;
        // the first hit has the largest (n - index)
        Tensor rev = Tensor.arange(n, 0, -1).cast(DType.I64).reshape(s);
        Tensor idx = Tensor.where(hit, rev, rev.zerosLike()).max(new int[] {a}, keepdim).rsub((long) n);
        return idx.cast(DType.I64);
    }

    static Tensor cumulative(Tensor t, int axis, boolean sum) {
        int a = t.axis(axis, sum ? "cumsum" : "cumprod");
        int n = t.dim(a);
        Tensor x = t.transpose(a, -1).unsqueeze(-2); // (..., 1, n): element j
        Tensor rows = Tensor.arange(n).reshape(n, 1), cols = Tensor.arange(n).reshape(1, n);
        Tensor mask = cols.le(rows); // (n, n): output i takes j <= i
        Tensor xe = x.expand(Tensor.broadcastShape("cumsum", x.shape(), mask.shape()).toArray());
        Tensor picked = Tensor.where(mask, xe, sum ? xe.zerosLike() : xe.onesLike());
        Tensor r = sum ? picked.sum(new int[] {-1}, false) : picked.prod(new int[] {-1}, false);
        return r.transpose(a, -1);
    }
}

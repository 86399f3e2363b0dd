package dev.kiln;

/**
 * Reductions along one axis beyond the plain ones: arg extremes that pick the last of equal values,
 * hardmax, and cumulative sums that are exclusive or run from the end.
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
}

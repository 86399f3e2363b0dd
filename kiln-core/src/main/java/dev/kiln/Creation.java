package dev.kiln;

import dev.kiln.types.DType;

/** Tensors made from parameters rather than inputs: shifted identities shaped like a tensor and arithmetic ranges. */
final class Creation {
    private Creation() {}

    /** ONNX EyeLike: ones on diagonal {@code k} of a 2-D tensor shaped like x, in {@code dtype} (x's when null). */
    static Tensor eyeLike(Tensor x, int k, DType dtype) {
        if (x.ndim() != 2) throw new IllegalArgumentException("eyeLike: input must be 2-D, got " + x.shape());
        int r = x.dim(0), c = x.dim(1);
        Tensor diag = Tensor.arange(c).reshape(1, c).sub(Tensor.arange(r).reshape(r, 1)).eq(k);
        return diag.cast(dtype == null ? x.dtype() : dtype).to(x.device());
    }

    /** ONNX Range: {@code start + i*delta} for {@code i < max(ceil((limit - start) / delta), 0)}, in {@code dtype}. */
    static Tensor range(Number start, Number limit, Number delta, DType dtype) {
        String op = "range";
        if (dtype.isBool() || dtype.isPacked()) throw new IllegalArgumentException(op + ": dtype must be numeric, got " + dtype);
        if (dtype.isFloat()) {
            double s = start.doubleValue(), l = limit.doubleValue(), d = delta.doubleValue();
            if (d == 0 || !Double.isFinite(d)) throw new IllegalArgumentException(op + ": delta must be finite and non-zero, got " + delta);
            int n = (int) Math.max(0, Math.ceil((l - s) / d));
            double[] v = new double[n];
            for (int i = 0; i < n; i++) v[i] = s + i * d;
            return Tensor.of(dtype, v, n);
        }
        long s = start.longValue(), l = limit.longValue(), d = delta.longValue();
        if (d == 0) throw new IllegalArgumentException(op + ": delta must not be 0");
        long n = Math.max(0, d > 0 ? Math.ceilDiv(l - s, d) : Math.ceilDiv(s - l, -d));
        if (n > Integer.MAX_VALUE) throw new IllegalArgumentException(op + ": " + n + " elements from " + start + " to " + limit + " by " + delta + " are too many");
        long[] v = new long[(int) n];
        for (int i = 0; i < n; i++) v[i] = s + i * d;
        return Tensor.of(dtype, v, (int) n);
    }
}

package dev.kiln;

import dev.kiln.types.DType;

/** Elementwise activations with parameters: hard sigmoid, shrink, thresholded ReLU and the signed infinity test. */
final class Activations {
    private Activations() {}

    /** {@code max(0, min(1, alpha * x + beta))}. */
    static Tensor hardSigmoid(Tensor x, double alpha, double beta) { return x.toFloat().mul(alpha).add(beta).clamp(0.0, 1.0); }

    /** ONNX Shrink: {@code x + bias} below {@code -lambd}, {@code x - bias} above {@code lambd}, else 0; x's dtype. */
    static Tensor shrink(Tensor x, double lambd, double bias) {
        if (x.dtype().isBool()) throw new IllegalArgumentException("shrink: needs a numeric tensor, got " + x.dtype());
        Tensor xf = x.dtype().isFloat() ? x : x.cast(DType.F64);
        Tensor y = Tensor.where(xf.lt(-lambd), xf.add(bias), Tensor.where(xf.gt(lambd), xf.sub(bias), xf.zerosLike()));
        return y.cast(x.dtype());
    }

    /** {@code x > alpha ? x : 0}. */
    static Tensor thresholdedRelu(Tensor x, double alpha) { return Tensor.where(x.gt(alpha), x, x.zerosLike()); }

    /** ONNX IsInf: true at +inf (if {@code detectPositive}) and -inf (if {@code detectNegative}). */
    static Tensor isinf(Tensor x, boolean detectPositive, boolean detectNegative) {
        Tensor no = x.fullLike(0).cast(DType.BOOL);
        if (!x.dtype().isFloat()) return no;
        Tensor pos = detectPositive ? x.eq(Double.POSITIVE_INFINITY) : no, neg = detectNegative ? x.eq(Double.NEGATIVE_INFINITY) : no;
        return pos.logicalOr(neg);
    }
}

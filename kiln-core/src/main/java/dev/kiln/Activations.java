package dev.kiln;

import dev.kiln.types.DType;

import java.util.Arrays;

/**
 * Activation functions composed from elementwise ops: PReLU, the ELU family, GELU (exact and tanh), softplus,
 * softmax and log-softmax, hard sigmoid, shrink and thresholded ReLU.
 */
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


    static Tensor prelu(Tensor t, Tensor weight) {
        Tensor w = weight;
        if (w.ndim() == 1 && t.ndim() >= 2 && w.numel() > 1) {
            int[] s = new int[t.ndim()];
            Arrays.fill(s, 1);
            s[1] = (int) w.numel();
            w = w.reshape(s);
        }
        if (!broadcastsTo(w, t)) {
            throw new IllegalArgumentException("prelu: slope " + weight.shape() + " must broadcast to input " + t.shape()
                    + (w.ndim() != weight.ndim() ? " (a 1-D slope is taken per channel, as " + w.shape() + ")" : ""));
        }
        return Tensor.where(t.gt(0), t, t.mul(w));
    }

    static Tensor elu(Tensor t, double alpha) {
        Tensor x = t.toFloat();
        return Tensor.where(x.gt(0), x, x.expm1().mul(alpha));
    }

    static Tensor selu(Tensor t) {
        double alpha = 1.6732632423543772848170429916717, scale = 1.0507009873554804934193349852946;
        return t.elu(alpha).mul(scale);
    }

    static Tensor celu(Tensor t, double alpha) {
        Tensor x = t.toFloat();
        return x.relu().add(x.div(alpha).expm1().mul(alpha).minimum(0));
    }

    static Tensor gelu(Tensor t) {
        Tensor x = t.toFloat();
        return x.mul(0.5).mul(x.mul(1 / Math.sqrt(2)).erf().add(1.0));
    }

    static Tensor geluTanh(Tensor t) {
        Tensor x = t.toFloat();
        Tensor inner = x.add(x.mul(x).mul(x).mul(0.044715)).mul(Math.sqrt(2 / Math.PI));
        return x.mul(0.5).mul(inner.tanh().add(1.0));
    }

    static Tensor softplus(Tensor t, double beta, double threshold) {
        Tensor x = t.toFloat(), bx = x.mul(beta);
        // log1p(exp(-|bx|)) + max(bx, 0) does not overflow
        Tensor sp = bx.abs().neg().exp().log1p().add(bx.relu()).div(beta);
        return Tensor.where(bx.gt(threshold), x, sp);
    }

    private static boolean broadcastsTo(Tensor from, Tensor to) {
        try {
            return Tensor.broadcastShape("prelu", to.shape(), from.shape()).equals(to.shape());
        } catch (IllegalArgumentException e) {
            return false;
        }
    }

    static Tensor softmax(Tensor t, int axis) {
        t.axis(axis, "softmax"); // checked here so that a bad axis names softmax, not the max it is built from
        Tensor x = t.toFloat();
        Tensor e = x.sub(x.max(new int[] {axis}, true)).exp();
        return e.div(e.sum(new int[] {axis}, true));
    }

    static Tensor logSoftmax(Tensor t, int axis) {
        t.axis(axis, "logSoftmax");
        Tensor x = t.toFloat();
        Tensor s = x.sub(x.max(new int[] {axis}, true));
        return s.sub(s.exp().sum(new int[] {axis}, true).log());
    }
}

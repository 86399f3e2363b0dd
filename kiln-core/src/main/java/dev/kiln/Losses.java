package dev.kiln;

import dev.kiln.types.DType;
import dev.kiln.types.Shape;

import java.util.Arrays;

/** The negative log-likelihood and softmax cross-entropy losses, with class weights, an ignored index and reductions. */
final class Losses {
    private Losses() {}

    /**
     * ONNX NegativeLogLikelihoodLoss: input (N, C, d...) of log-probabilities, target (N, d...) of class
     * indices; {@code loss = -input[n, target, d...] * weight[target]}, zero where the target equals
     * {@code ignoreIndex}. {@code reduction} {@code none} keeps (N, d...), {@code sum} adds, {@code mean}
     * divides the sum by the total weight of the counted targets.
     */
    static Tensor nllLoss(Tensor input, Tensor target, Tensor weight, String reduction, Integer ignoreIndex) {
        return nll("nllLoss", input, target, weight, reduction, ignoreIndex);
    }

    /** ONNX SoftmaxCrossEntropyLoss: {@link #nllLoss} of {@code logSoftmax(scores, 1)}. */
    static Tensor softmaxCrossEntropyLoss(Tensor scores, Tensor labels, Tensor weight, String reduction, Integer ignoreIndex) {
        if (scores.ndim() < 2) throw new IllegalArgumentException("softmaxCrossEntropyLoss: scores must be (N, C, d...), got " + scores.shape());
        DType dt = scores.dtype().isFloat() ? scores.dtype() : DType.F32;
        Tensor logp = scores.cast(Normalization.computeType(dt)).logSoftmax(1);
        return nll("softmaxCrossEntropyLoss", logp, labels, weight, reduction, ignoreIndex).cast(dt);
    }

    private static Tensor nll(String op, Tensor input, Tensor target, Tensor weight, String reduction, Integer ignoreIndex) {
        if (input.ndim() < 2) throw new IllegalArgumentException(op + ": input must be (N, C, d...), got " + input.shape());
        int c = input.dim(1);
        int[] expect = new int[input.ndim() - 1];
        for (int i = 0, j = 0; i < input.ndim(); i++) if (i != 1) expect[j++] = input.dim(i);
        if (!Arrays.equals(target.dims(), expect)) {
            throw new IllegalArgumentException(op + ": target " + target.shape() + " must have shape " + Shape.of(expect) + " for input " + input.shape());
        }
        Tensor t = ElementIndexing.indexOf(op, target);
        if (weight != null && (weight.ndim() != 1 || weight.dim(0) != c)) {
            throw new IllegalArgumentException(op + ": weight " + weight.shape() + " must be 1-D of the " + c + " classes of input " + input.shape());
        }
        if (reduction == null || !(reduction.equals("none") || reduction.equals("sum") || reduction.equals("mean"))) {
            throw new IllegalArgumentException(op + ": unknown reduction " + (reduction == null ? "null" : "'" + reduction + "'") + "; valid are 'none', 'sum', 'mean'");
        }
        if (!input.dtype().isFloat()) throw new IllegalArgumentException(op + ": input must be a float tensor, got " + input.dtype());
        DType dt = input.dtype(), ct = Normalization.computeType(dt);
        Tensor hit = t.to(input.device()).unsqueeze(1).eq(ElementIndexing.positions(c, input.ndim(), 1, input.device())); // (N, C, d...)
        if (ignoreIndex != null) hit = hit.logicalAnd(t.ne((long) ignoreIndex).unsqueeze(1));
        Tensor x = input.cast(ct);
        Tensor picked = Tensor.where(hit, x, Tensor.scalar(-0.0, ct)).sum(new int[] {1}, false);
        Tensor w;
        if (weight == null) w = hit.any(new int[] {1}, false).cast(ct);
        else {
            int[] ws = new int[input.ndim()];
            Arrays.fill(ws, 1);
            ws[1] = c;
            w = Tensor.where(hit, weight.to(input.device()).cast(ct).reshape(ws), Tensor.scalar(0.0, ct)).sum(new int[] {1}, false);
        }
        Tensor loss = picked.mul(w).neg();
        Tensor reduced = switch (reduction) {
            case "none" -> loss;
            case "sum" -> loss.sum();
            default -> loss.sum().div(w.sum());
        };
        return reduced.cast(dt);
    }
}

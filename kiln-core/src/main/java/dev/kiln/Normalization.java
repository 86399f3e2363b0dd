package dev.kiln;

import dev.kiln.types.DType;

import java.util.Arrays;

/**
 * Normalisation layers (batch, layer, group, instance, RMS) and the embedding lookup, composed from
 * broadcasting arithmetic and reductions. Half-precision inputs are normalised in f32 and the result
 * cast back, as PyTorch's kernels accumulate statistics in f32.
 */
final class Normalization {
    private Normalization() {}

    /** Inference batch norm: {@code (x - mean) / sqrt(var + eps) * weight + bias} per channel (axis 1). */
    static Tensor batchNorm(Tensor x, Tensor runningMean, Tensor runningVar, Tensor weight, Tensor bias, double eps) {
        String op = "batchNorm";
        int c = channels(op, x, 2);
        if (runningMean == null || runningVar == null) {
            throw new IllegalArgumentException(op + ": runningMean and runningVar are required (use batchNormTraining for batch statistics)");
        }
        checkPerChannel(op, "runningMean", runningMean, x, c);
        checkPerChannel(op, "runningVar", runningVar, x, c);
        checkPerChannel(op, "weight", weight, x, c);
        checkPerChannel(op, "bias", bias, x, c);
        DType out = resultType(x, runningMean, runningVar, weight, bias);
        DType ct = computeType(out);
        Tensor mean = perChannel(x, runningMean, ct), var = perChannel(x, runningVar, ct);
        Tensor y = x.cast(ct).sub(mean).mul(var.add(eps).rsqrt());
        return affine(y, perChannel(x, weight, ct), perChannel(x, bias, ct)).cast(out);
    }

    /** Training-mode batch norm: statistics of the batch over every axis but 1, biased variance. */
    static Tensor batchNormTraining(Tensor x, Tensor weight, Tensor bias, double eps) {
        String op = "batchNormTraining";
        int c = channels(op, x, 2);
        checkPerChannel(op, "weight", weight, x, c);
        checkPerChannel(op, "bias", bias, x, c);
        int[] axes = new int[x.ndim() - 1];
        for (int i = 0, j = 0; i < x.ndim(); i++) if (i != 1) axes[j++] = i;
        return normalized(x, axes, eps, weight, bias, true);
    }

    /** Normalisation over the trailing {@code normalizedShape} axes, with elementwise affine parameters of that shape. */
    static Tensor layerNorm(Tensor x, int[] normalizedShape, Tensor weight, Tensor bias, double eps) {
        String op = "layerNorm";
        int[] axes = trailingAxes(op, x, normalizedShape);
        checkShape(op, "weight", weight, normalizedShape);
        checkShape(op, "bias", bias, normalizedShape);
        return normalized(x, axes, eps, weight, bias, false);
    }

    /** Channels (axis 1) split into {@code groups}; each (sample, group) is normalised, then a per-channel affine map. */
    static Tensor groupNorm(Tensor x, int groups, Tensor weight, Tensor bias, double eps) {
        String op = "groupNorm";
        int c = channels(op, x, 2);
        if (groups <= 0 || c % groups != 0) {
            throw new IllegalArgumentException(op + ": " + groups + " groups do not divide the " + c + " channels of input " + x.shape());
        }
        checkPerChannel(op, "weight", weight, x, c);
        checkPerChannel(op, "bias", bias, x, c);
        DType out = resultType(x, weight, bias);
        DType ct = computeType(out);
        int perGroup = c / groups;
        for (int i = 2; i < x.ndim(); i++) perGroup *= x.dim(i);
        // (N, C, *) -> (N, G, C/G * prod(*)): each row of the last axis is one group's values
        Tensor g = x.cast(ct).reshape(x.dim(0), groups, perGroup);
        Tensor y = standardize(g, new int[] {2}, eps).reshape(x.dims());
        return affine(y, perChannel(x, weight, ct), perChannel(x, bias, ct)).cast(out);
    }

    /** Each (sample, channel) normalised over the spatial axes 2.., then a per-channel affine map. */
    static Tensor instanceNorm(Tensor x, Tensor weight, Tensor bias, double eps) {
        String op = "instanceNorm";
        int c = channels(op, x, 3);
        checkPerChannel(op, "weight", weight, x, c);
        checkPerChannel(op, "bias", bias, x, c);
        int[] axes = new int[x.ndim() - 2];
        for (int i = 0; i < axes.length; i++) axes[i] = i + 2;
        return normalized(x, axes, eps, weight, bias, true);
    }

    /** {@code x / sqrt(mean(x^2) + eps) * weight} over the trailing {@code normalizedShape} axes. */
    static Tensor rmsNorm(Tensor x, int[] normalizedShape, Tensor weight, double eps) {
        String op = "rmsNorm";
        int[] axes = trailingAxes(op, x, normalizedShape);
        checkShape(op, "weight", weight, normalizedShape);
        DType out = resultType(x, weight);
        DType ct = computeType(out);
        Tensor xf = x.cast(ct);
        Tensor y = xf.mul(xf.square().mean(axes, true).add(eps).rsqrt());
        if (weight != null) y = y.mul(on(x, weight, ct));
        return y.cast(out);
    }

    /**
     * Rows of {@code weight} (num, dim) picked by integer {@code indices}: output shape
     * {@code indices.shape + [dim]}. Built from a one-hot mask (index == row) so no gather is needed; an
     * index outside {@code [0, num)} fails the run ({@link Indexing#checked}).
     */
    static Tensor embedding(Tensor indices, Tensor weight) {
        String op = "embedding";
        if (weight.ndim() != 2) {
            throw new IllegalArgumentException(op + ": weight must be 2-D (numEmbeddings, dim), got " + weight.shape());
        }
        if (indices.dtype().isFloat() || indices.dtype().isBool()) {
            throw new IllegalArgumentException(op + ": indices must have an integer dtype, got " + indices.dtype() + " " + indices.shape());
        }
        int[] out = Arrays.copyOf(indices.dims(), indices.ndim() + 1);
        out[indices.ndim()] = weight.dim(1);
        // rows of the weight: a take along axis 0 with one index per row, broadcast over the columns
        Tensor ids = Indexing.checked(indices.cast(DType.I64), op, weight, 0, false);
        Tensor rows = Indexing.take(weight.to(indices.device()), 0, ids.reshape(dev.kiln.types.Shape.dimension("embedding indices " + indices.shape(), 0, indices.numel()), 1));
        return rows.reshape(out);
    }

    // -----------------------------------------------------------------------------------------------------

    /**
     * x standardised over {@code axes}, then the optional affine map: per channel (axis 1) or, if not
     * {@code channelwise}, elementwise over the trailing axes.
     */
    private static Tensor normalized(Tensor x, int[] axes, double eps, Tensor weight, Tensor bias, boolean channelwise) {
        DType out = resultType(x, weight, bias);
        DType ct = computeType(out);
        Tensor y = standardize(x.cast(ct), axes, eps);
        Tensor w = channelwise ? perChannel(x, weight, ct) : on(x, weight, ct), b = channelwise ? perChannel(x, bias, ct) : on(x, bias, ct);
        return affine(y, w, b).cast(out);
    }

    /** {@code (x - mean) / sqrt(biased var + eps)} over {@code axes}. */
    private static Tensor standardize(Tensor x, int[] axes, double eps) {
        Tensor d = x.sub(x.mean(axes, true));
        return d.mul(d.square().mean(axes, true).add(eps).rsqrt());
    }

    private static Tensor affine(Tensor y, Tensor w, Tensor b) {
        if (w != null) y = y.mul(w);
        if (b != null) y = y.add(b);
        return y;
    }

    /** The number of channels (axis 1), after checking that x has at least {@code minRank} axes. */
    private static int channels(String op, Tensor x, int minRank) {
        if (x.ndim() < minRank) {
            String layout = minRank == 2 ? "(N, C, ...)" : "(N, C, spatial...)";
            throw new IllegalArgumentException(op + ": input " + x.shape() + " must have at least " + minRank + " axes " + layout);
        }
        return x.dim(1);
    }

    private static void checkPerChannel(String op, String name, Tensor t, Tensor x, int c) {
        if (t != null && (t.ndim() != 1 || t.dim(0) != c)) {
            throw new IllegalArgumentException(op + ": " + name + " " + t.shape() + " must be 1-D with one value for each of the "
                    + c + " channels of input " + x.shape());
        }
    }

    private static void checkShape(String op, String name, Tensor t, int[] normalizedShape) {
        if (t != null && !Arrays.equals(t.dims(), normalizedShape)) {
            throw new IllegalArgumentException(op + ": " + name + " " + t.shape() + " must have the normalized shape "
                    + Arrays.toString(normalizedShape));
        }
    }

    /** The axes covered by {@code normalizedShape}, which must equal x's trailing dimensions. */
    private static int[] trailingAxes(String op, Tensor x, int[] normalizedShape) {
        int k = normalizedShape.length;
        if (k == 0) throw new IllegalArgumentException(op + ": normalizedShape must name at least one axis, got []");
        int[] d = x.dims();
        if (k > d.length || !Arrays.equals(Arrays.copyOfRange(d, d.length - k, d.length), normalizedShape)) {
            throw new IllegalArgumentException(op + ": normalizedShape " + Arrays.toString(normalizedShape)
                    + " does not match the trailing dimensions of input " + x.shape());
        }
        int[] axes = new int[k];
        for (int i = 0; i < k; i++) axes[i] = d.length - k + i;
        return axes;
    }

    /** A per-channel parameter as {@code dt}, reshaped to (1, C, 1, ...) so it broadcasts against x; null stays null. */
    private static Tensor perChannel(Tensor x, Tensor t, DType dt) {
        return t == null ? null : on(x, t, dt).reshape(channelShape(x));
    }

    private static int[] channelShape(Tensor x) {
        int[] s = new int[x.ndim()];
        Arrays.fill(s, 1);
        s[1] = x.dim(1);
        return s;
    }

    /** A parameter on x's device as {@code dt}; null stays null. */
    private static Tensor on(Tensor x, Tensor t, DType dt) { return t == null ? null : t.to(x.device()).cast(dt); }

    /** The float dtype of the result: x's (f32 for integer x) promoted with the float parameters. */
    static DType resultType(Tensor x, Tensor... params) {
        DType dt = x.dtype().isFloat() ? x.dtype() : DType.F32;
        for (Tensor p : params) if (p != null && p.dtype().isFloat()) dt = DType.promote(dt, p.dtype());
        return dt;
    }

    /** Half precision computes in f32; f32 and f64 compute as they are. */
    static DType computeType(DType dt) { return dt == DType.F16 || dt == DType.BF16 ? DType.F32 : dt; }

    /**
     * ONNX LRN over the channels (axis 1) of (N, C, ...): {@code x / (bias + alpha/size * sum x^2)^beta},
     * the sum over channels {@code [c - (size-1)/2, c + ceil((size-1)/2)]}.
     */
    static Tensor lrn(Tensor x, int size, double alpha, double beta, double bias) {
        String op = "lrn";
        if (x.ndim() < 3) throw new IllegalArgumentException(op + ": input must be (N, C, spatial...) with at least 3 axes, got " + x.shape());
        if (size <= 0) throw new IllegalArgumentException(op + ": size must be > 0, got " + size);
        DType out = x.dtype().isFloat() ? x.dtype() : DType.F32;
        Tensor xf = x.cast(Normalization.computeType(out));
        int c = x.dim(1), before = (size - 1) / 2, after = size - 1 - before;
        int[][] pads = new int[x.ndim()][2];
        pads[1] = new int[] {before, after};
        Tensor sq = xf.square().pad(pads);
        Tensor sum = null;
        for (int j = 0; j < size; j++) {
            Tensor s = sq.shrinkAxis(1, j, j + c);
            sum = sum == null ? s : sum.add(s);
        }
        return xf.div(sum.mul(alpha / size).add(bias).pow(beta)).cast(out);
    }

    /** ONNX LpNormalization: x divided by its L1 ({@code p = 1}) or L2 ({@code p = 2}) norm along {@code axis}. */
    static Tensor lpNormalization(Tensor x, int axis, int p) {
        String op = "lpNormalization";
        int a = x.axis(axis, op);
        if (p != 1 && p != 2) throw new IllegalArgumentException(op + ": p must be 1 or 2, got " + p);
        Tensor xf = x.toFloat();
        Tensor norm = p == 1 ? xf.abs().sum(new int[] {a}, true) : xf.square().sum(new int[] {a}, true).sqrt();
        return xf.div(norm);
    }

    /** ONNX MeanVarianceNormalization: {@code (x - mean) / (sqrt(biased variance) + 1e-9)} over {@code axes}. */
    static Tensor meanVarianceNormalization(Tensor x, int[] axes) {
        if (axes.length == 0) throw new IllegalArgumentException("meanVarianceNormalization: axes must not be empty for input " + x.shape());
        Tensor xf = x.toFloat();
        Tensor d = xf.sub(xf.mean(axes, true));
        return d.div(d.square().mean(axes, true).sqrt().add(1e-9));
    }
}

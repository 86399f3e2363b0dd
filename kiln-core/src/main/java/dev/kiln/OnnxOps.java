package dev.kiln;

import dev.kiln.types.Shape;
import dev.kiln.types.DType;
import dev.kiln.runtime.Device;

import java.util.Arrays;

/**
 * General operators that ONNX models need and the rest of the Tensor API lacks, with ONNX semantics
 * (opset 13 to 18) available through their parameters: element gathers and scatters with reductions,
 * one-hot with values, hardmax, arg extremes picking the last index, exclusive and reverse cumulative
 * sums, block rearrangements, sequence reversal, LRN and other normalisations, the NLL and softmax
 * cross-entropy losses, linear quantisation, the determinant, max unpooling, window functions and ranges.
 *
 * <p>Like {@link Indexing}, indexed reads and writes compare index tensors with positions and reduce
 * masked values, so indices stay lazy: an out-of-range index selects nothing (a read gives zero, a
 * write does not happen) instead of being checked.
 */
final class OnnxOps {
    private OnnxOps() {}

    /** The reductions of {@link #scatterElements} and {@link #scatterND}. */
    private static final String REDUCTIONS = "'none', 'add', 'mul', 'max', 'min'";

    // =====================================================================================================
    // gathers

    /** ONNX GatherElements: {@code torch.gather} with negative indices counted from the end of the axis. */
    static Tensor gatherElements(Tensor x, int axis, Tensor indices) {
        String op = "gatherElements";
        int a = x.axis(axis, op);
        Tensor idx = indexOf(op, indices);
        sameRank(op, indices, x);
        for (int d = 0; d < x.ndim(); d++) {
            if (d != a && indices.dim(d) > x.dim(d)) {
                throw new IllegalArgumentException(op + ": indices " + indices.shape() + " are larger than input " + x.shape() + " at axis " + d
                        + " (" + indices.dim(d) + " > " + x.dim(d) + ", gather axis " + axis + ")");
            }
        }
        return Indexing.gather(x, a, wrap(idx, x.dim(a)));
    }

    /**
     * ONNX GatherND: the last axis of {@code indices} (size k) holds coordinates into the k axes after the
     * first {@code batchDims} of x; result shape {@code indices.shape[:-1] + x.shape[batchDims + k:]}.
     */
    static Tensor gatherND(Tensor x, Tensor indices, int batchDims) {
        String op = "gatherND";
        Tensor idx = indexOf(op, indices);
        int b = batchDims, q = indices.ndim(), r = x.ndim();
        if (q < 1) throw new IllegalArgumentException(op + ": indices must have at least one axis, got shape " + indices.shape());
        int k = indices.dim(-1);
        if (b < 0 || b >= Math.min(q, r)) {
            throw new IllegalArgumentException(op + ": batchDims " + b + " must be in [0, " + Math.min(q, r) + ") for input " + x.shape()
                    + " and indices " + indices.shape());
        }
        if (k < 1 || b + k > r) {
            throw new IllegalArgumentException(op + ": indices " + indices.shape() + " address " + k + " axes after " + b + " batch axes, input "
                    + x.shape() + " has " + r);
        }
        for (int d = 0; d < b; d++) {
            if (x.dim(d) != indices.dim(d)) {
                throw new IllegalArgumentException(op + ": batch axis " + d + " differs between input " + x.shape() + " and indices " + indices.shape());
            }
        }
        int[] xd = x.dims();
        int[] batch = Arrays.copyOfRange(xd, 0, b), addressed = Arrays.copyOfRange(xd, b, b + k), rest = Arrays.copyOfRange(xd, b + k, r);
        int p = prod(addressed), rr = prod(rest), qq = prod(Arrays.copyOfRange(indices.dims(), b, q - 1));
        Tensor lin = linearIndex(idx, addressed); // indices.shape[:-1], -1 where a coordinate is out of range
        Tensor src = x.reshape(Convolution.concat(batch, new int[] {p, rr}));
        Tensor out = Indexing.take(src, b, lin.reshape(Convolution.concat(batch, new int[] {qq, 1})));
        return out.reshape(Convolution.concat(Arrays.copyOfRange(indices.dims(), 0, q - 1), rest));
    }

    /**
     * The row-major linear position of the coordinates on the last axis of {@code idx} in a block of shape
     * {@code dims}, negative coordinates wrapped; -1 where one is out of range.
     */
    private static Tensor linearIndex(Tensor idx, int[] dims) {
        int k = dims.length;
        Tensor lin = null, valid = null;
        for (int j = 0; j < k; j++) {
            Tensor c = wrap(idx.shrinkAxis(idx.ndim() - 1, j, j + 1).squeeze(-1), dims[j]);
            Tensor ok = c.ge(0L).logicalAnd(c.lt((long) dims[j]));
            lin = lin == null ? c : lin.mul((long) dims[j]).add(c);
            valid = valid == null ? ok : valid.logicalAnd(ok);
        }
        return Tensor.where(valid, lin, -1L);
    }

    // =====================================================================================================
    // scatters

    /**
     * ONNX ScatterElements: {@code updates} (the indices' shape) written into a copy of x along
     * {@code axis}, negative indices wrapped; {@code reduction} combines the written element with x
     * ({@code none}: replace, the last of duplicate writes in C order wins).
     */
    static Tensor scatterElements(Tensor x, int axis, Tensor indices, Tensor updates, String reduction) {
        String op = "scatterElements";
        int a = x.axis(axis, op);
        Tensor idx = indexOf(op, indices);
        sameRank(op, indices, x);
        checkReduction(op, reduction);
        if (!updates.shape().equals(indices.shape())) {
            throw new IllegalArgumentException(op + ": updates " + updates.shape() + " must have the shape of indices " + indices.shape());
        }
        for (int d = 0; d < x.ndim(); d++) {
            if (d != a && indices.dim(d) > x.dim(d)) {
                throw new IllegalArgumentException(op + ": indices " + indices.shape() + " are larger than input " + x.shape() + " at axis " + d
                        + " (" + indices.dim(d) + " > " + x.dim(d) + ", scatter axis " + axis + ")");
            }
        }
        int n = x.dim(a), r = x.ndim();
        // the part of x the indices reach: their extent in the other axes, all of the scatter axis
        Tensor part = x;
        for (int d = 0; d < r; d++) if (d != a) part = part.shrinkAxis(d, 0, indices.dim(d));
        // hit[.., p, q, ..]: entry q (along a + 1) writes position p (along a)
        Tensor hit = wrap(idx, n).to(x.device()).unsqueeze(a).eq(positions(n, r + 1, a, x.device()));
        Written w = reduceWrites(hit, updates.to(x.device()).cast(x.dtype()).unsqueeze(a), a + 1, reduction);
        Tensor merged = combine(part, w, reduction);
        int[][] pads = new int[r][2];
        for (int d = 0; d < r; d++) pads[d][1] = x.dim(d) - part.dim(d);
        return Tensor.where(w.any.pad(pads), merged.pad(pads), x);
    }

    /**
     * ONNX ScatterND: the last axis of {@code indices} (size k) addresses slices of x's first k axes,
     * replaced by (or combined with, per {@code reduction}) the matching slices of {@code updates}, of
     * shape {@code indices.shape[:-1] + x.shape[k:]}.
     */
    static Tensor scatterND(Tensor x, Tensor indices, Tensor updates, String reduction) {
        String op = "scatterND";
        Tensor idx = indexOf(op, indices);
        checkReduction(op, reduction);
        if (indices.ndim() < 1) throw new IllegalArgumentException(op + ": indices must have at least one axis, got shape " + indices.shape());
        int k = indices.dim(-1), r = x.ndim();
        if (k < 1 || k > r) throw new IllegalArgumentException(op + ": indices " + indices.shape() + " address " + k + " axes, input " + x.shape() + " has " + r);
        int[] lead = Arrays.copyOfRange(indices.dims(), 0, indices.ndim() - 1), rest = Arrays.copyOfRange(x.dims(), k, r);
        int[] expected = Convolution.concat(lead, rest);
        if (!Arrays.equals(updates.dims(), expected)) {
            throw new IllegalArgumentException(op + ": updates " + updates.shape() + " must have shape " + Shape.of(expected) + " for input "
                    + x.shape() + " and indices " + indices.shape());
        }
        int p = prod(Arrays.copyOfRange(x.dims(), 0, k)), rr = prod(rest), q = prod(lead);
        Tensor lin = linearIndex(idx, Arrays.copyOfRange(x.dims(), 0, k)).reshape(1, q, 1);
        Tensor hit = lin.to(x.device()).eq(positions(p, 3, 0, x.device())); // (p, q, 1)
        Written w = reduceWrites(hit, updates.to(x.device()).cast(x.dtype()).reshape(1, q, rr), 1, reduction);
        Tensor flat = x.reshape(p, rr);
        return Tensor.where(w.any, combine(flat, w, reduction), flat).reshape(x.dims());
    }

    /** What a scatter writes: {@code values} reduced over the updates that hit an element, {@code any} where there is one. */
    private record Written(Tensor values, Tensor any) {}

    /**
     * The updates that hit each element reduced over the update axis {@code q}: the last (C order) for
     * {@code none}, else the sum, product, maximum or minimum; {@code any} has {@code values}' shape.
     */
    private static Written reduceWrites(Tensor hit, Tensor updates, int q, String reduction) {
        DType dt = updates.dtype();
        int[] qa = {q};
        Shape s = Tensor.broadcastShape("scatter", hit.shape(), updates.shape());
        Tensor h = hit.broadcastTo(s.toArray()), u = updates.broadcastTo(s.toArray());
        Tensor any = h.any(qa, false);
        Tensor values = switch (reduction) {
            case "none" -> {
                Tensor order = positions(s.dim(q), s.rank(), q, h.device());
                Tensor last = Tensor.where(h, order, -1L).max(qa, true);
                yield masked(h.logicalAnd(order.eq(last)), u, dt.isFloat() ? -0.0 : 0, dt).sum(qa, false);
            }
            case "add" -> masked(h, u, dt.isFloat() ? -0.0 : 0, dt).sum(qa, false);
            case "mul" -> masked(h, u, 1, dt).prod(qa, false);
            case "max" -> masked(h, u, lowest(dt), dt).max(qa, false);
            default -> masked(h, u, highest(dt), dt).min(qa, false);
        };
        return new Written(values.cast(dt), any);
    }

    private static Tensor combine(Tensor x, Written w, String reduction) {
        Tensor v = w.values;
        Tensor y = switch (reduction) {
            case "none" -> v;
            case "add" -> x.add(v);
            case "mul" -> x.mul(v);
            case "max" -> x.maximum(v);
            default -> x.minimum(v);
        };
        return y.cast(x.dtype());
    }

    private static Tensor masked(Tensor mask, Tensor values, Number other, DType dt) {
        return Tensor.where(mask, values, Tensor.scalar(other, dt).to(values.device()));
    }

    private static void checkReduction(String op, String reduction) {
        if (reduction == null || !REDUCTIONS.contains("'" + reduction + "'")) {
            throw new IllegalArgumentException(op + ": unknown reduction " + (reduction == null ? "null" : "'" + reduction + "'") + "; valid are " + REDUCTIONS);
        }
    }

    // =====================================================================================================
    // one-hot, hardmax, arg extremes, cumulative sums

    /**
     * ONNX OneHot: a new axis {@code axis} (in {@code [-r-1, r]}) of size {@code depth} holding
     * {@code values[1]} at the index and {@code values[0]} elsewhere, in values' dtype. Indices in
     * {@code [-depth, depth)} count (negative ones from the end); float indices are truncated.
     */
    static Tensor oneHot(Tensor indices, int depth, int axis, Tensor values) {
        String op = "oneHot";
        if (indices.dtype().isBool()) throw new IllegalArgumentException(op + ": indices must be numeric, got " + indices.dtype());
        if (depth <= 0) throw new IllegalArgumentException(op + ": depth must be > 0, got " + depth);
        if (values.numel() != 2) throw new IllegalArgumentException(op + ": values must hold [off, on], got shape " + values.shape());
        int a = Tensor.normAxis(axis, indices.ndim() + 1, op, indices.shape());
        Tensor idx = wrap(indices.cast(DType.I64), depth);
        Tensor hit = idx.unsqueeze(a).eq(positions(depth, indices.ndim() + 1, a, indices.device()));
        Tensor v = values.to(indices.device()).reshape(2);
        return Tensor.where(hit, v.shrinkAxis(0, 1, 2).reshape(), v.shrinkAxis(0, 0, 1).reshape());
    }

    /** ONNX Hardmax: 1 at the first maximum along {@code axis}, 0 elsewhere, in x's dtype. */
    static Tensor hardmax(Tensor x, int axis) {
        int a = x.axis(axis, "hardmax");
        if (x.dim(a) == 0) return x;
        Tensor first = x.argmax(a, true);
        return first.eq(positions(x.dim(a), x.ndim(), a, x.device())).cast(x.dtype());
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

    // =====================================================================================================
    // elementwise activations of ONNX

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

    // =====================================================================================================
    // rearrangements

    /** ONNX DepthToSpace of (N, C, H, W): mode {@code "DCR"} (depth-column-row) or {@code "CRD"}. */
    static Tensor depthToSpace(Tensor x, int blockSize, String mode) {
        String op = "depthToSpace";
        int b = blockSize;
        check4d(op, x, b);
        int n = x.dim(0), c = x.dim(1), h = x.dim(2), w = x.dim(3);
        if (c % (b * b) != 0) {
            throw new IllegalArgumentException(op + ": channels " + c + " of input " + x.shape() + " are not divisible by blockSize^2 = " + b * b);
        }
        int oc = c / (b * b);
        Tensor y = switch (mode == null ? "" : mode) {
            case "DCR" -> x.reshape(n, b, b, oc, h, w).permute(0, 3, 4, 1, 5, 2);
            case "CRD" -> x.reshape(n, oc, b, b, h, w).permute(0, 1, 4, 2, 5, 3);
            default -> throw new IllegalArgumentException(op + ": unknown mode " + (mode == null ? "null" : "'" + mode + "'") + "; valid are 'DCR', 'CRD'");
        };
        return y.reshape(n, oc, h * b, w * b);
    }

    /** ONNX SpaceToDepth of (N, C, H, W): each b-by-b block becomes b*b channels, block row major. */
    static Tensor spaceToDepth(Tensor x, int blockSize) {
        String op = "spaceToDepth";
        int b = blockSize;
        check4d(op, x, b);
        int n = x.dim(0), c = x.dim(1), h = x.dim(2), w = x.dim(3);
        if (h % b != 0 || w % b != 0) {
            throw new IllegalArgumentException(op + ": spatial size " + h + "x" + w + " of input " + x.shape() + " is not divisible by blockSize " + b);
        }
        return x.reshape(n, c, h / b, b, w / b, b).permute(0, 3, 5, 1, 2, 4).reshape(n, c * b * b, h / b, w / b);
    }

    private static void check4d(String op, Tensor x, int b) {
        if (x.ndim() != 4) throw new IllegalArgumentException(op + ": input must be 4-D (N, C, H, W), got " + x.shape());
        if (b <= 0) throw new IllegalArgumentException(op + ": blockSize must be > 0, got " + b);
    }

    /**
     * ONNX ReverseSequence: for each batch entry b, the first {@code sequenceLens[b]} steps along
     * {@code timeAxis} reversed, the rest kept.
     */
    static Tensor reverseSequence(Tensor x, Tensor sequenceLens, int batchAxis, int timeAxis) {
        String op = "reverseSequence";
        if (x.ndim() < 2) throw new IllegalArgumentException(op + ": input must have at least 2 axes, got " + x.shape());
        int ba = x.axis(batchAxis, op), ta = x.axis(timeAxis, op);
        if (ba == ta) throw new IllegalArgumentException(op + ": batchAxis " + batchAxis + " and timeAxis " + timeAxis + " name the same axis of " + x.shape());
        Tensor lens = indexOf(op, sequenceLens);
        if (sequenceLens.ndim() != 1 || sequenceLens.dim(0) != x.dim(ba)) {
            throw new IllegalArgumentException(op + ": sequenceLens " + sequenceLens.shape() + " must be 1-D of the batch size " + x.dim(ba)
                    + " (input " + x.shape() + ", batch axis " + batchAxis + ")");
        }
        int[] ls = new int[x.ndim()];
        Arrays.fill(ls, 1);
        ls[ba] = x.dim(ba);
        Tensor len = lens.to(x.device()).reshape(ls);
        Tensor t = positions(x.dim(ta), x.ndim(), ta, x.device());
        Tensor src = Tensor.where(t.lt(len), len.sub(1L).sub(t), t);
        return Indexing.take(x, ta, src);
    }

    // =====================================================================================================
    // normalisation

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

    // =====================================================================================================
    // losses

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
        Tensor t = indexOf(op, target);
        if (weight != null && (weight.ndim() != 1 || weight.dim(0) != c)) {
            throw new IllegalArgumentException(op + ": weight " + weight.shape() + " must be 1-D of the " + c + " classes of input " + input.shape());
        }
        if (reduction == null || !(reduction.equals("none") || reduction.equals("sum") || reduction.equals("mean"))) {
            throw new IllegalArgumentException(op + ": unknown reduction " + (reduction == null ? "null" : "'" + reduction + "'") + "; valid are 'none', 'sum', 'mean'");
        }
        if (!input.dtype().isFloat()) throw new IllegalArgumentException(op + ": input must be a float tensor, got " + input.dtype());
        DType dt = input.dtype(), ct = Normalization.computeType(dt);
        Tensor hit = t.to(input.device()).unsqueeze(1).eq(positions(c, input.ndim(), 1, input.device())); // (N, C, d...)
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

    // =====================================================================================================
    // quantisation

    /**
     * ONNX QuantizeLinear: {@code saturate(round_half_even(x / scale) + zeroPoint)} in zeroPoint's dtype
     * (u8 when it is null). A 1-D scale (and zero point) applies along {@code axis}, a scalar to all.
     */
    static Tensor quantizeLinear(Tensor x, Tensor scale, Tensor zeroPoint, int axis) {
        String op = "quantizeLinear";
        DType q = zeroPoint == null ? DType.U8 : zeroPoint.dtype();
        if (!q.isInt()) throw new IllegalArgumentException(op + ": zeroPoint must have an integer dtype, got " + q);
        if (!scale.dtype().isFloat()) throw new IllegalArgumentException(op + ": scale must be a float tensor, got " + scale.dtype());
        DType ct = DType.promote(Normalization.computeType(scale.dtype()), DType.F32);
        Tensor s = perAxis(op, "scale", x, scale, axis).cast(ct);
        Tensor y = x.cast(ct).div(s).round();
        if (zeroPoint != null) y = y.add(perAxis(op, "zeroPoint", x, zeroPoint, axis).cast(ct));
        return y.clamp((double) q.minInt(), (double) q.maxInt()).cast(q);
    }

    /** ONNX DequantizeLinear: {@code (x - zeroPoint) * scale} in scale's dtype; per-axis as {@link #quantizeLinear}. */
    static Tensor dequantizeLinear(Tensor x, Tensor scale, Tensor zeroPoint, int axis) {
        String op = "dequantizeLinear";
        if (!x.dtype().isInt()) throw new IllegalArgumentException(op + ": input must have an integer dtype, got " + x.dtype());
        if (!scale.dtype().isFloat()) throw new IllegalArgumentException(op + ": scale must be a float tensor, got " + scale.dtype());
        if (zeroPoint != null && zeroPoint.dtype() != x.dtype()) {
            throw new IllegalArgumentException(op + ": zeroPoint " + zeroPoint.dtype() + " must have the input's dtype " + x.dtype());
        }
        Tensor d = x.cast(DType.I64);
        if (zeroPoint != null) d = d.sub(perAxis(op, "zeroPoint", x, zeroPoint, axis).cast(DType.I64));
        Tensor s = perAxis(op, "scale", x, scale, axis);
        return d.cast(s.dtype()).mul(s);
    }

    /**
     * ONNX DynamicQuantizeLinear of a float tensor: u8 quantisation over the range of x extended to
     * include 0, {@code scale = (max - min) / 255}, {@code zeroPoint = round(clip(-min / scale, 0, 255))}.
     */
    static Tensor.Quantized dynamicQuantizeLinear(Tensor x) {
        if (!x.dtype().isFloat()) throw new IllegalArgumentException("dynamicQuantizeLinear: input must be a float tensor, got " + x.dtype());
        Tensor xf = x.cast(DType.F32);
        Tensor lo = xf.min().minimum(0.0), hi = xf.max().maximum(0.0);
        Tensor scale = hi.sub(lo).div(255.0);
        Tensor zp = lo.neg().div(scale).clamp(0.0, 255.0).round();
        Tensor y = xf.div(scale).round().add(zp).clamp(0.0, 255.0).cast(DType.U8);
        return new Tensor.Quantized(y, scale, zp.cast(DType.U8));
    }

    /** A scale or zero point of x: a scalar as it is, a 1-D one of size {@code x.dim(axis)} shaped to broadcast along axis. */
    private static Tensor perAxis(String op, String name, Tensor x, Tensor p, int axis) {
        Tensor t = p.to(x.device());
        if (t.numel() == 1 && t.ndim() <= 1) return t.reshape();
        int a = x.axis(axis, op);
        if (t.ndim() != 1 || t.dim(0) != x.dim(a)) {
            throw new IllegalArgumentException(op + ": " + name + " " + p.shape() + " must be a scalar or 1-D of size " + x.dim(a) + " (axis " + axis
                    + " of input " + x.shape() + ")");
        }
        int[] s = new int[x.ndim()];
        Arrays.fill(s, 1);
        s[a] = x.dim(a);
        return t.reshape(s);
    }

    // =====================================================================================================
    // determinant, unpooling

    /**
     * Determinants of the square matrices on the last two axes, by Gaussian elimination with partial
     * pivoting unrolled over the (static) size; the graph grows with the square of the size.
     */
    static Tensor det(Tensor x) {
        String op = "det";
        if (x.ndim() < 2 || x.dim(-1) != x.dim(-2)) throw new IllegalArgumentException(op + ": needs square matrices on the last two axes, got " + x.shape());
        DType out = x.dtype().isFloat() ? x.dtype() : DType.F32;
        DType ct = Normalization.computeType(out);
        int m = x.dim(-1), r = x.ndim();
        int[] batch = Arrays.copyOfRange(x.dims(), 0, r - 2);
        if (m == 0) return Tensor.ones(ct, batch).to(x.device()).cast(out);
        Tensor a = x.cast(ct);
        Tensor rows = Tensor.arange(m).cast(DType.I64).reshape(m, 1).to(x.device()); // (m, 1)
        Tensor sign = Tensor.scalar(1.0, ct).to(x.device());
        for (int k = 0; k < m; k++) {
            // pivot: the row at or below k with the largest magnitude in column k
            Tensor col = a.shrinkAxis(r - 1, k, k + 1); // (..., m, 1)
            Tensor cand = Tensor.where(rows.ge((long) k), col.abs(), Tensor.scalar(-1.0, ct));
            Tensor p = cand.argmax(r - 2, true); // (..., 1, 1)
            // swap rows k and p: row i takes row src(i)
            Tensor src = Tensor.where(rows.eq((long) k), p, Tensor.where(rows.eq(p), Tensor.scalar(k, DType.I64), rows)); // (..., m, 1)
            Tensor sel = src.eq(rows.reshape(1, m)); // (..., m, m): [i, j] row i takes row j
            a = Tensor.where(sel.unsqueeze(-1), a.unsqueeze(-3), Tensor.scalar(-0.0, ct)).sum(new int[] {-2}, false);
            sign = Tensor.where(p.ne((long) k), sign.neg(), sign);
            Tensor pivotRow = a.shrinkAxis(r - 2, k, k + 1); // (..., 1, m)
            Tensor pivot = pivotRow.shrinkAxis(r - 1, k, k + 1); // (..., 1, 1)
            Tensor colK = a.shrinkAxis(r - 1, k, k + 1);
            Tensor factor = Tensor.where(rows.gt((long) k).logicalAnd(pivot.ne(0.0)), colK.div(pivot), Tensor.scalar(0.0, ct));
            a = a.sub(factor.mul(pivotRow));
        }
        Tensor diag = Tensor.where(rows.eq(rows.reshape(1, m)), a, Tensor.scalar(0.0, ct)).sum(new int[] {-1}, false);
        return diag.prod(new int[] {-1}, false).mul(sign.reshape(batch.length == 0 ? new int[0] : batch)).cast(out);
    }

    /**
     * ONNX MaxUnpool: the values of x (N, C, spatial...) placed at {@code indices} (positions in the
     * flattened (N, C, spatial...) output, as MaxPool's Indices output gives them) of a zero tensor of
     * {@code outputShape}. An index is read inside its own (n, c) plane (minus the plane's offset), which
     * is ONNX's flat placement whenever the output planes have the pooled input's size or N*C = 1 (the
     * other case scatters across planes and is not supported). Several values at one position
     * (overlapping pooling windows repeat an element) give that value once.
     */
    static Tensor maxUnpool(Tensor x, Tensor indices, int[] outputShape) {
        String op = "maxUnpool";
        Tensor idx = indexOf(op, indices);
        if (x.ndim() < 3) throw new IllegalArgumentException(op + ": input must be (N, C, spatial...), got " + x.shape());
        if (!indices.shape().equals(x.shape())) throw new IllegalArgumentException(op + ": indices " + indices.shape() + " must have the input's shape " + x.shape());
        if (outputShape.length != x.ndim() || outputShape[0] != x.dim(0) || outputShape[1] != x.dim(1)) {
            throw new IllegalArgumentException(op + ": outputShape " + Arrays.toString(outputShape) + " must be (N, C, spatial...) of input " + x.shape());
        }
        int n = x.dim(0), c = x.dim(1);
        int sin = prod(Arrays.copyOfRange(x.dims(), 2, x.ndim())), sout = prod(Arrays.copyOfRange(outputShape, 2, outputShape.length));
        Tensor plane = positions(n, 3, 0, x.device()).mul((long) c).add(positions(c, 3, 1, x.device())).mul((long) sout); // (n, c, 1)
        Tensor local = idx.to(x.device()).reshape(n, c, sin).sub(plane);
        Tensor hit = local.unsqueeze(2).eq(positions(sout, 4, 2, x.device())); // (n, c, sout, sin)
        DType dt = x.dtype();
        Tensor vals = masked(hit, x.reshape(n, c, 1, sin), lowest(dt), dt).max(new int[] {3}, false);
        return Tensor.where(hit.any(new int[] {3}, false), vals, Tensor.scalar(0, dt)).cast(dt).reshape(outputShape);
    }

    // =====================================================================================================
    // n-gram counting

    /**
     * ONNX TfIdfVectorizer of integer sequences x (C) or (N, C): for every n-gram of the pool (lengths
     * {@code minGram..maxGram}, items spaced by {@code skip + 1} for each skip up to {@code maxSkip}),
     * its count in each sequence, written to output position {@code ngramIndexes[k]} as f32: the count
     * ({@code TF}), the weight where the count is positive ({@code IDF}) or count times weight
     * ({@code TFIDF}); weights default to 1.
     */
    static Tensor tfIdfVectorizer(Tensor x, int minGram, int maxGram, int maxSkip, String mode, long[] pool, int[] ngramCounts, int[] ngramIndexes,
                                  double[] weights) {
        String op = "tfIdfVectorizer";
        if (!x.dtype().isInt() || (x.ndim() != 1 && x.ndim() != 2)) {
            throw new IllegalArgumentException(op + ": input must be 1-D or 2-D integers, got " + x.dtype() + x.shape());
        }
        if (!"TF".equals(mode) && !"IDF".equals(mode) && !"TFIDF".equals(mode)) {
            throw new IllegalArgumentException(op + ": unknown mode " + (mode == null ? "null" : "'" + mode + "'") + "; valid are 'TF', 'IDF', 'TFIDF'");
        }
        if (minGram < 1 || maxGram < minGram || maxSkip < 0 || ngramCounts.length < maxGram) {
            throw new IllegalArgumentException(op + ": gram lengths " + minGram + ".." + maxGram + " (max skip " + maxSkip + ") need 1 <= min <= max <= "
                    + ngramCounts.length + " pool levels");
        }
        // pool entries of level n (length n) start at ngramCounts[n - 1]; each level runs to the next start
        int entries = 0;
        int[] levelEnd = new int[ngramCounts.length];
        for (int n = 1; n <= ngramCounts.length; n++) {
            levelEnd[n - 1] = n < ngramCounts.length ? ngramCounts[n] : pool.length;
            int items = levelEnd[n - 1] - ngramCounts[n - 1];
            if (items < 0 || items % n != 0) {
                throw new IllegalArgumentException(op + ": pool level " + n + " holds " + items + " items, not a multiple of " + n + " (ngram_counts "
                        + Arrays.toString(ngramCounts) + ", pool size " + pool.length + ")");
            }
            entries += items / n;
        }
        if (ngramIndexes.length != entries || (weights != null && weights.length != entries)) {
            throw new IllegalArgumentException(op + ": " + entries + " pool n-grams need as many ngram_indexes (got " + ngramIndexes.length + ") and weights (got "
                    + (weights == null ? "none" : weights.length) + ")");
        }
        int outSize = Arrays.stream(ngramIndexes).max().orElse(-1) + 1;
        boolean batched = x.ndim() == 2;
        Tensor rows = (batched ? x : x.unsqueeze(0)).cast(DType.I64);
        int nRows = rows.dim(0), c = rows.dim(1);
        Tensor total = Tensor.zeros(DType.F32, nRows, outSize).to(x.device());
        int first = 0;
        for (int n = 1; n <= ngramCounts.length; n++) {
            int k = (levelEnd[n - 1] - ngramCounts[n - 1]) / n, base = first;
            first += k;
            if (n < minGram || n > maxGram || k == 0) continue;
            long[][] cols = new long[n][k];
            for (int e = 0; e < k; e++) for (int j = 0; j < n; j++) cols[j][e] = pool[ngramCounts[n - 1] + e * n + j];
            Tensor counts = null; // (rows, k)
            for (int skip = 0; skip <= (n == 1 ? 0 : maxSkip); skip++) {
                int len = c - (n - 1) * (skip + 1);
                if (len <= 0) continue;
                Tensor match = null; // (rows, len, k)
                for (int j = 0; j < n; j++) {
                    int at = j * (skip + 1);
                    Tensor m = rows.shrinkAxis(1, at, at + len).unsqueeze(-1).eq(Tensor.of(cols[j], k).to(x.device()));
                    match = match == null ? m : match.logicalAnd(m);
                }
                Tensor cnt = match.sum(new int[] {1}, false);
                counts = counts == null ? cnt : counts.add(cnt);
            }
            if (counts == null) continue;
            double[] place = new double[k * outSize];
            for (int e = 0; e < k; e++) place[e * outSize + ngramIndexes[base + e]] = 1;
            Tensor value = counts.cast(DType.F32);
            if (!mode.equals("TF")) {
                double[] w = new double[k];
                for (int e = 0; e < k; e++) w[e] = weights == null ? 1 : weights[base + e];
                Tensor wt = Tensor.of(DType.F32, w, k).to(x.device());
                value = mode.equals("IDF") ? Tensor.where(counts.gt(0L), wt, 0.0) : value.mul(wt);
            }
            total = total.add(value.matmul(Tensor.of(DType.F32, place, k, outSize).to(x.device())));
        }
        return batched ? total : total.reshape(outSize);
    }

    // =====================================================================================================
    // creation: eye-like, ranges, windows

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

    /** The window functions of ONNX (opset 17): cosine sums {@code a0 - a1 cos(2 pi n/N) + a2 cos(4 pi n/N)}. */
    enum Window {
        HANN(0.5, 0.5, 0), HAMMING(25.0 / 46, 21.0 / 46, 0), BLACKMAN(0.42, 0.5, 0.08);

        final double a0, a1, a2;

        Window(double a0, double a1, double a2) {
            this.a0 = a0;
            this.a1 = a1;
            this.a2 = a2;
        }
    }

    /** A window of {@code size} points; N is {@code size} if {@code periodic}, else {@code size - 1}. */
    static Tensor window(String op, Window w, int size, boolean periodic, DType dtype) {
        if (size < 0) throw new IllegalArgumentException(op + ": size must be >= 0, got " + size);
        if (dtype.isBool() || dtype.isPacked()) throw new IllegalArgumentException(op + ": dtype must be numeric, got " + dtype);
        double n = periodic ? size : size - 1;
        double[] v = new double[size];
        for (int i = 0; i < size; i++) v[i] = w.a0 - w.a1 * Math.cos(2 * Math.PI * i / n) + w.a2 * Math.cos(4 * Math.PI * i / n);
        return Tensor.of(dtype, v, size);
    }

    // =====================================================================================================
    // helpers

    private static Tensor indexOf(String op, Tensor index) {
        if (!index.dtype().isInt()) throw new IllegalArgumentException(op + ": indices must have an integer dtype, got " + index.dtype());
        return index.cast(DType.I64);
    }

    private static void sameRank(String op, Tensor indices, Tensor x) {
        if (indices.ndim() != x.ndim()) {
            throw new IllegalArgumentException(op + ": indices " + indices.shape() + " have rank " + indices.ndim() + ", input " + x.shape()
                    + " has rank " + x.ndim() + "; they must match");
        }
    }

    /** Negative indices counted from the end of an axis of size n. */
    private static Tensor wrap(Tensor idx, int n) { return Tensor.where(idx.lt(0L), idx.add((long) n), idx); }

    /** {@code 0..n-1} as i64 along {@code axis} of a rank-{@code rank} tensor on {@code device}, size 1 elsewhere. */
    static Tensor positions(int n, int rank, int axis, Device device) {
        int[] s = new int[rank];
        Arrays.fill(s, 1);
        s[axis] = n;
        return Tensor.arange(n).cast(DType.I64).reshape(s).to(device);
    }

    static int prod(int[] dims) {
        int p = 1;
        for (int d : dims) p *= d;
        return p;
    }

    private static Number lowest(DType dt) { return dt.isFloat() ? (Number) Double.NEGATIVE_INFINITY : (Number) dt.minInt(); }

    private static Number highest(DType dt) { return dt.isFloat() ? (Number) Double.POSITIVE_INFINITY : (Number) dt.maxInt(); }
}

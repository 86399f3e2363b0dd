package dev.kiln;

import dev.kiln.runtime.Device;
import dev.kiln.types.DType;
import dev.kiln.types.Shape;

import java.util.Arrays;

/**
 * Element-wise gathers and scatters (of single elements and of N-D slices, with reductions), one-hot
 * encoding, per-sequence reversal and max unpooling, plus the index helpers the other families share.
 *
 * <p>Like {@link Indexing}, indexed reads and writes compare index tensors with positions and reduce
 * masked values, so indices stay lazy, each with a check ({@link Indexing#checked}) that fails the run on an
 * index out of range. Negative indices count from the end of the axis.
 */
final class ElementIndexing {
    private ElementIndexing() {}

    /** The reductions of {@link #scatterElements} and {@link #scatterND}. */
    private static final String REDUCTIONS = "'none', 'add', 'mul', 'max', 'min'";

    /** ONNX GatherElements: {@code torch.gather} with negative indices counted from the end of the axis. */
    static Tensor gatherElements(Tensor x, int axis, Tensor indices) {
        String op = "gatherElements";
        int a = x.axis(axis, op);
        indexOf(op, indices); // refuses a non-integer dtype in this operation's words
        sameRank(op, indices, x);
        fitsOutsideAxis(op, "gather", x, indices, a, axis);
        return Indexing.gather(op, x, a, indices, true);
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
        Tensor lin = linearIndex(op, idx, x, b, k); // indices.shape[:-1], -1 where a coordinate is out of range
        Tensor src = x.reshape(Convolution.concat(batch, new int[] {p, rr}));
        Tensor out = Indexing.take(src, b, lin.reshape(Convolution.concat(batch, new int[] {qq, 1})));
        return out.reshape(Convolution.concat(Arrays.copyOfRange(indices.dims(), 0, q - 1), rest));
    }

    /**
     * The row-major linear position of the coordinates on the last axis of {@code idx} in the block of axes
     * {@code first .. first + k - 1} of {@code x} (the data of {@code op}), each checked and negative ones wrapped;
     * -1 where one is out of range (a run that meets one fails: the -1 only keeps the compiled code from reading
     * anything while it finishes).
     */
    private static Tensor linearIndex(String op, Tensor idx, Tensor x, int first, int k) {
        int[] dims = Arrays.copyOfRange(x.dims(), first, first + k);
        Tensor lin = null, valid = null;
        for (int j = 0; j < k; j++) {
            Tensor c = Indexing.wrapNegative(Indexing.checked(idx.shrinkAxis(idx.ndim() - 1, j, j + 1).squeeze(-1), op, x, first + j, true), x, first + j);
            Tensor ok = c.ge(0L).logicalAnd(c.lt((long) dims[j]));
            lin = lin == null ? c : lin.mul((long) dims[j]).add(c);
            valid = valid == null ? ok : valid.logicalAnd(ok);
        }
        return Tensor.where(valid, lin, -1L);
    }

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
        fitsOutsideAxis(op, "scatter", x, indices, a, axis);
        int n = x.dim(a), r = x.ndim();
        // the part of x the indices reach: their extent in the other axes, all of the scatter axis
        Tensor part = x;
        for (int d = 0; d < r; d++) if (d != a) part = part.shrinkAxis(d, 0, indices.dim(d));
        // hit[.., p, q, ..]: entry q (along a + 1) writes position p (along a)
        Tensor hit = Indexing.wrapNegative(Indexing.checked(idx, op, x, a, true), x, a).to(x.device()).unsqueeze(a).eq(positions(n, r + 1, a, x.device()));
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
        Tensor lin = linearIndex(op, idx, x, 0, k).reshape(1, q, 1);
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

    private static void checkReduction(String op, String reduction) {
        if (reduction == null || !REDUCTIONS.contains("'" + reduction + "'")) {
            throw new IllegalArgumentException(op + ": unknown reduction " + (reduction == null ? "null" : "'" + reduction + "'") + "; valid are " + REDUCTIONS);
        }
    }

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

    static Tensor indexOf(String op, Tensor index) {
        if (!index.dtype().isInt()) throw new IllegalArgumentException(op + ": indices must have an integer dtype, got " + index.dtype());
        return index.cast(DType.I64);
    }

    /** Indices of x's rank may be no larger than x outside the gather or scatter axis {@code a}. */
    private static void fitsOutsideAxis(String op, String kind, Tensor x, Tensor indices, int a, int axis) {
        for (int d = 0; d < x.ndim(); d++) {
            if (d != a && indices.dim(d) > x.dim(d)) {
                throw new IllegalArgumentException(op + ": indices " + indices.shape() + " are larger than input " + x.shape() + " at axis " + d
                        + " (" + indices.dim(d) + " > " + x.dim(d) + ", " + kind + " axis " + axis + ")");
            }
        }
    }

    static void sameRank(String op, Tensor indices, Tensor x) {
        if (indices.ndim() != x.ndim()) {
            throw new IllegalArgumentException(op + ": indices " + indices.shape() + " have rank " + indices.ndim() + ", input " + x.shape()
                    + " has rank " + x.ndim() + "; they must match");
        }
    }

    /** Negative indices counted from the end of an axis of size n. */
    static Tensor wrap(Tensor idx, int n) { return Tensor.where(idx.lt(0L), idx.add((long) n), idx); }

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

    static Tensor masked(Tensor mask, Tensor values, Number other, DType dt) {
        return Tensor.where(mask, values, Tensor.scalar(other, dt).to(values.device()));
    }

    static Number lowest(DType dt) { return dt.isFloat() ? (Number) Double.NEGATIVE_INFINITY : (Number) dt.minInt(); }

    static Number highest(DType dt) { return dt.isFloat() ? (Number) Double.POSITIVE_INFINITY : (Number) dt.maxInt(); }
}

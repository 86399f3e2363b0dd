package dev.kiln;

import dev.kiln.ir.IndexCheck;
import dev.kiln.ir.Op;
import dev.kiln.ir.UOp;
import dev.kiln.types.Shape;
import dev.kiln.types.Variable;
import dev.kiln.types.DType;
import java.util.Arrays;

/**
 * Gather, scatter, index select, one-hot, sort and top-k, composed from comparisons with
 * {@link Tensor#arange} and masked sums: an index tensor, given a new axis, is compared with the
 * positions of the axis it indexes, which gives a one-hot mask; {@code where(mask, values, 0)} summed
 * over the new axis then picks the indexed values. {@code where} (not a multiply) keeps NaN and
 * infinities of unselected elements out of the result, and the zero is -0.0 for floats, so the one
 * selected value comes through bit for bit (x + -0.0 == x, also for x = -0.0).
 *
 * <p>Indices are lazy tensors, so they cannot be checked against the axis size when the op is built: each
 * index tensor gets an explicit {@link Op#CHECK} instead ({@link #checked}), and a run that meets an index out
 * of range fails with a {@link dev.kiln.runtime.IndexOutOfRangeException} naming the operation, the index and
 * the valid range, on every device. (Below the check, an index out of range would select nothing: a gathered
 * element zero, a scattered one not written; the check is what keeps that from passing as a result.)
 */
final class Indexing {
    private Indexing() {}

    // =====================================================================================================
    // gather and friends

    /** {@code torch.gather}: {@code out[i][j] = x[index[i][j]][j]} for axis 0, and likewise for other axes. */
    static Tensor gather(Tensor x, int axis, Tensor index) { return gather("gather", x, axis, index, false); }

    /**
     * {@link #gather} as operation {@code op}, with negative indices counting from the end of the axis when
     * {@code negativeWraps} (ONNX's GatherElements).
     */
    static Tensor gather(String op, Tensor x, int axis, Tensor index, boolean negativeWraps) {
        int a = x.axis(axis, op);
        Tensor idx = indexOf(op, index);
        sameRank(op, "index", index, "input", x);
        for (int d = 0; d < x.ndim(); d++) {
            if (d != a && index.dim(d) > x.dim(d)) {
                throw new IllegalArgumentException(op + ": index " + index.shape() + " is larger than input " + x.shape() + " at axis " + d
                        + " (" + index.dim(d) + " > " + x.dim(d) + ", gather axis " + axis + ")");
            }
        }
        idx = checked(idx, op, x, a, negativeWraps);
        if (negativeWraps) idx = wrapNegative(idx, x, a);
        Tensor src = x;
        for (int d = 0; d < x.ndim(); d++) if (d != a) src = src.shrinkAxis(d, 0, index.dim(d));
        return take(src, a, idx);
    }

    /** NumPy's {@code take_along_axis}: like gather, but the other axes broadcast and negative indices wrap. */
    static Tensor takeAlongAxis(Tensor x, Tensor indices, int axis) {
        int a = x.axis(axis, "takeAlongAxis");
        Tensor idx = indexOf("takeAlongAxis", indices);
        sameRank("takeAlongAxis", "indices", indices, "input", x);
        for (int d = 0; d < x.ndim(); d++) {
            int di = indices.dim(d), dx = x.dim(d);
            if (d != a && di != dx && di != 1 && dx != 1) {
                throw new IllegalArgumentException("takeAlongAxis: indices " + indices.shape() + " do not broadcast with input " + x.shape()
                        + " at axis " + d + " (" + di + " vs " + dx + ", take axis " + axis + ")");
            }
        }
        return take(x, a, wrapNegative(checked(idx, "takeAlongAxis", x, a, true), x, a));
    }

    /** {@code torch.index_select} with Python-style wrapping of negative indices. */
    static Tensor indexSelect(Tensor x, int axis, Tensor index) {
        int a = x.axis(axis, "indexSelect");
        Tensor idx = indexOf("indexSelect", index);
        if (index.ndim() != 1) throw new IllegalArgumentException("indexSelect: index must be 1-D, got shape " + index.shape());
        int[] s = new int[x.ndim()];
        Arrays.fill(s, 1);
        s[a] = index.dim(0);
        return take(x, a, wrapNegative(checked(idx, "indexSelect", x, a, true), x, a).reshape(s));
    }

    /** {@code torch.nn.functional.one_hot}: a new last axis of {@code numClasses}, i64. */
    static Tensor oneHot(Tensor x, int numClasses) {
        Tensor idx = indexOf("oneHot", x);
        if (numClasses <= 0) {
            throw new IllegalArgumentException("oneHot: numClasses must be > 0 (it cannot be inferred from lazy indices), got " + numClasses);
        }
        return checked(idx, "oneHot", x.ndim(), numClasses, false).unsqueeze(-1).eq(Tensor.arange(numClasses).cast(DType.I64)).cast(DType.I64);
    }

    /**
     * {@code out[.., i, ..] = x[.., idx[.., i, ..], ..]} along axis {@code a}; the other axes of {@code x}
     * and {@code idx} (same rank) broadcast.
     */
    static Tensor take(Tensor x, int a, Tensor idx) {
        // hit: (.., m, n, ..), idx position i at a, x position at a + 1
        Tensor hit = idx.unsqueeze(a + 1).eq(arangeAt(x.dim(a), x.ndim() + 1, a + 1));
        return pick(hit, x.unsqueeze(a), a + 1, x.dtype());
    }

    // =====================================================================================================
    // scatter

    /** {@code torch.scatter} with a source tensor; of several writes to one element the last (C order of index) wins. */
    static Tensor scatter(Tensor self, int axis, Tensor index, Tensor src) {
        Target t = target("scatter", self, axis, index, src);
        int a = t.axis, m = index.dim(a);
        // of the hits of one element (they differ only along the index axis) keep the last
        Tensor q = arangeAt(m, self.ndim() + 1, a + 1);
        Tensor lastQ = Tensor.where(t.hit, q, -1L).max(new int[] {a + 1}, true);
        Tensor values = pick(q.eq(lastQ), t.src.unsqueeze(a), a + 1, self.dtype());
        Tensor written = t.hit.any(new int[] {a + 1}, false);
        return Tensor.where(t.toSelf(written), t.toSelf(values), self);
    }

    /** {@code torch.scatter} with a scalar value. */
    static Tensor scatter(Tensor self, int axis, Tensor index, Number value) {
        Target t = target("scatter", self, axis, index, null);
        return self.maskedFill(t.toSelf(t.hit.any(new int[] {t.axis + 1}, false)), value);
    }

    /** {@code torch.scatter_add}: every source element named by an index entry is added, duplicates accumulate. */
    static Tensor scatterAdd(Tensor self, int axis, Tensor index, Tensor src) {
        Target t = target("scatterAdd", self, axis, index, src);
        Tensor sums = pick(t.hit, t.src.unsqueeze(t.axis), t.axis + 1, self.dtype());
        // outside the index's extent self is kept as it is (adding a padded +0 would turn -0.0 into 0.0)
        Tensor inside = t.toSelf(sums.onesLike().cast(DType.BOOL));
        return Tensor.where(inside, self.add(t.toSelf(sums)), self);
    }

    /**
     * What a scatter writes: {@code hit} has the index's shape with the target axis size inserted at
     * {@code axis} ({@code hit[.., p, q, ..]}: index entry q names position p), {@code src} is the source
     * cut to the index's shape and converted to self's dtype.
     */
    private record Target(int axis, Tensor hit, Tensor src, Shape self) {
        /** A tensor over the index's extent (target axis full) padded with zeros to self's shape. */
        Tensor toSelf(Tensor t) {
            int[][] pads = new int[self.rank()][2];
            for (int d = 0; d < pads.length; d++) pads[d][1] = self.dim(d) - t.dim(d);
            return t.pad(pads);
        }
    }

    private static Target target(String op, Tensor self, int axis, Tensor index, Tensor src) {
        int a = self.axis(axis, op);
        Tensor idx = checked(indexOf(op, index), op, self, a, false);
        sameRank(op, "index", index, "input", self);
        for (int d = 0; d < self.ndim(); d++) {
            if (d != a && index.dim(d) > self.dim(d)) {
                throw new IllegalArgumentException(op + ": index " + index.shape() + " is larger than input " + self.shape() + " at axis " + d
                        + " (" + index.dim(d) + " > " + self.dim(d) + ", scatter axis " + axis + ")");
            }
        }
        Tensor s = null;
        if (src != null) {
            sameRank(op, "src", src, "index", index);
            s = src.cast(self.dtype());
            for (int d = 0; d < index.ndim(); d++) {
                if (src.dim(d) < index.dim(d)) {
                    throw new IllegalArgumentException(op + ": src " + src.shape() + " is smaller than index " + index.shape() + " at axis " + d
                            + " (" + src.dim(d) + " < " + index.dim(d) + ")");
                }
                s = s.shrinkAxis(d, 0, index.dim(d));
            }
        }
        Tensor hit = idx.unsqueeze(a).eq(arangeAt(self.dim(a), self.ndim() + 1, a));
        return new Target(a, hit, s, self.shape());
    }

    // =====================================================================================================
    // sorting

    /**
     * A stable sort along {@code axis}, of which the first {@code count} positions are computed. NaN
     * sorts as the largest value. The rank of element i is the number of elements that come before it;
     * output position r then takes the element of rank r.
     */
    static Tensor.Sorted sort(String op, Tensor x, int axis, boolean descending, int count) {
        int a = x.axis(axis, op);
        int n = x.dim(a), r = x.ndim();
        Tensor xi = x.unsqueeze(a + 1), xj = x.unsqueeze(a); // (.., n_i, 1, ..) and (.., 1, n_j, ..)
        Tensor jBeforeI = arangeAt(n, r + 1, a + 1).lt(arangeAt(n, r + 1, a));
        Tensor before = (descending ? less(xi, xj) : less(xj, xi)).logicalOr(same(xj, xi).logicalAnd(jBeforeI));
        Tensor rank = before.sum(new int[] {a + 1}, false); // i64, x's shape
        Tensor sel = rank.unsqueeze(a).eq(arangeAt(count, r + 1, a)); // (.., count, n_i, ..)
        Tensor values = pick(sel, x.unsqueeze(a), a + 1, x.dtype());
        Tensor indices = pick(sel, arangeAt(n, r + 1, a + 1), a + 1, DType.I64);
        return new Tensor.Sorted(values, indices);
    }

    /** {@code torch.topk}: the k largest (or smallest) along {@code axis}, in sorted order. */
    static Tensor.Sorted topk(Tensor x, int k, int axis, boolean largest) {
        int a = x.axis(axis, "topk");
        if (k < 0 || k > x.dim(a)) {
            throw new IllegalArgumentException("topk: k " + k + " out of range for axis " + axis + " of shape " + x.shape() + " (size " + x.dim(a) + ")");
        }
        return sort("topk", x, a, largest, k);
    }

    /** {@code p < q} with NaN above every number. */
    private static Tensor less(Tensor p, Tensor q) {
        Tensor lt = p.lt(q);
        return p.dtype().isFloat() ? lt.logicalOr(q.isnan().logicalAnd(p.isnan().logicalNot())) : lt;
    }

    /** {@code p == q} with NaN equal to NaN. */
    private static Tensor same(Tensor p, Tensor q) {
        Tensor eq = p.eq(q);
        return p.dtype().isFloat() ? eq.logicalOr(p.isnan().logicalAnd(q.isnan())) : eq;
    }

    // =====================================================================================================
    // helpers

    /** The operation that index checks built inside {@link Tensor#withOpName} name (an importer's node). */
    static final ScopedValue<String> OP_NAME = ScopedValue.newInstance();

    /**
     * {@code idx} (integer indices into axis {@code axis} of {@code data}) with an {@link Op#CHECK}: a run that meets
     * an index outside {@code [-n, n-1]} ({@code negativeWraps}) or {@code [0, n-1]} fails, naming {@code op} (or the
     * enclosing {@link Tensor#withOpName}'s name), where {@code n} is the axis's size, on a symbolic axis its size in
     * that run. Empty indices need none.
     */
    static Tensor checked(Tensor idx, String op, Tensor data, int axis, boolean negativeWraps) {
        Variable v = data.shape().variable(axis);
        return checked(idx, op, axis, v != null ? UOp.variable(v) : UOp.index(data.dim(axis)), negativeWraps);
    }

    /** {@link #checked(Tensor, String, Tensor, int, boolean)} against a fixed size. */
    static Tensor checked(Tensor idx, String op, int axis, int size, boolean negativeWraps) {
        return checked(idx, op, axis, UOp.index(size), negativeWraps);
    }

    private static Tensor checked(Tensor idx, String op, int axis, UOp size, boolean negativeWraps) {
        if (idx.numel() == 0) return idx;
        String name = OP_NAME.isBound() ? OP_NAME.get() : op;
        Shape s = idx.shape();
        UOp n = size;
        if (s.rank() > 0) {
            int[] ones = new int[s.rank()];
            Arrays.fill(ones, 1);
            n = UOp.of(Op.EXPAND, DType.I64, s, UOp.of(Op.RESHAPE, DType.I64, Shape.of(ones), size));
        }
        return idx.make(UOp.of(Op.CHECK, idx.dtype(), IndexCheck.of(name, axis, negativeWraps), idx.node(), n));
    }

    /** The index converted to i64 after checking it has an integer dtype. */
    private static Tensor indexOf(String op, Tensor index) {
        if (!index.dtype().isInt()) throw new IllegalArgumentException(op + ": index must have an integer dtype, got " + index.dtype());
        return index.cast(DType.I64);
    }

    private static void sameRank(String op, String name, Tensor t, String otherName, Tensor other) {
        if (t.ndim() != other.ndim()) {
            throw new IllegalArgumentException(op + ": " + name + " " + t.shape() + " has rank " + t.ndim() + ", " + otherName + " "
                    + other.shape() + " has rank " + other.ndim() + "; they must match");
        }
    }

    /** Negative indices counted from the end of an axis of size n. */
    /**
     * Negative indices (i64) counted from the end of axis {@code axis} of {@code data}: on a symbolic axis from its size
     * in the run, not its largest.
     */
    static Tensor wrapNegative(Tensor idx, Tensor data, int axis) {
        Variable v = data.shape().variable(axis);
        Object n = v != null ? idx.make(UOp.variable(v)) : (Object) (long) data.dim(axis);
        return Tensor.where(idx.lt(0L), idx.add(n), idx);
    }

    /** {@code 0..n-1} as i64 along axis {@code axis} of a rank-{@code rank} tensor, size 1 elsewhere. */
    private static Tensor arangeAt(int n, int rank, int axis) {
        int[] s = new int[rank];
        Arrays.fill(s, 1);
        s[axis] = n;
        return Tensor.arange(n).cast(DType.I64).reshape(s);
    }

    /** The values where {@code mask} holds, summed over {@code axis}; with a one-hot mask, the selected value. */
    private static Tensor pick(Tensor mask, Tensor values, int axis, DType dtype) {
        Tensor zero = Tensor.scalar(dtype.isFloat() ? -0.0 : 0, dtype);
        return Tensor.where(mask, values.cast(dtype), zero).sum(new int[] {axis}, false).cast(dtype);
    }
}

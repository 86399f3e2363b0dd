package dev.kiln;

import dev.kiln.ir.Op;
import dev.kiln.ir.UOp;
import dev.kiln.types.DType;
import dev.kiln.types.Shape;
import dev.kiln.types.Variable;

import java.util.Arrays;

/**
 * Axis normalisation and NumPy broadcasting (symbolic axes included), and the conversion of operands: Java
 * scalars to 0-d tensors of the right dtype, and pairs of tensors broadcast and promoted to one dtype.
 */
final class Broadcasting {
    private Broadcasting() {}

    static int normAxis(int axis, int rank, String op, Shape shape) {
        int a = axis < 0 ? axis + rank : axis;
        if (a < 0 || a >= rank) {
            throw new IllegalArgumentException(op + ": axis " + axis + " out of range for shape " + shape + " (rank " + rank + ")");
        }
        return a;
    }

    /** Distinct normalised axes; an empty list means all axes. */
    static int[] axes(Tensor t, int[] axes, String op) {
        if (axes.length == 0) {
            int[] all = new int[t.ndim()];
            for (int i = 0; i < all.length; i++) all[i] = i;
            return all;
        }
        int[] out = new int[axes.length];
        for (int i = 0; i < axes.length; i++) {
            out[i] = t.axis(axes[i], op);
            for (int j = 0; j < i; j++) {
                if (out[j] == out[i]) throw new IllegalArgumentException(op + ": axis " + axes[i] + " given twice in " + Arrays.toString(axes));
            }
        }
        Arrays.sort(out);
        return out;
    }

    /**
     * The NumPy broadcast of two shapes. A symbolic axis stays symbolic; a fixed axis of the same size
     * as a symbolic one takes its variable (a table laid out for the maximum, read up to the size), and
     * two different variables on one axis do not broadcast.
     */
    static Shape broadcastShape(String op, Shape a, Shape b) {
        int r = Math.max(a.rank(), b.rank());
        Object[] out = new Object[r];
        for (int i = 0; i < r; i++) {
            int ia = i - (r - a.rank()), ib = i - (r - b.rank());
            int da = ia < 0 ? 1 : a.dim(ia), db = ib < 0 ? 1 : b.dim(ib);
            Variable va = ia < 0 ? null : a.variable(ia), vb = ib < 0 ? null : b.variable(ib);
            if (da != db && da != 1 && db != 1) {
                throw new IllegalArgumentException(op + ": shapes " + a + " and " + b + " cannot broadcast (axis " + (i - r)
                        + ": " + da + " vs " + db + ")");
            }
            if (da == db && va != null && vb != null && !va.equals(vb)) {
                throw new IllegalArgumentException(op + ": shapes " + a + " and " + b + " cannot broadcast (axis " + (i - r)
                        + ": symbolic sizes " + va.name() + " and " + vb.name() + ")");
            }
            Variable v = da == 1 && db != 1 ? vb : db == 1 && da != 1 ? va : va != null ? va : vb;
            out[i] = v != null ? v : (Object) (da == 1 ? db : da);
        }
        return Shape.symbolic(out);
    }

    static Tensor broadcastTo(Tensor self, int... target) {
        Shape t = Shape.of(target);
        for (int i = 0; i < self.ndim(); i++) {
            int j = t.rank() - self.ndim() + i;
            if (self.shape().variable(i) != null && j >= 0 && t.dim(j) == self.dim(i)) t = t.withVariable(j, self.shape().variable(i));
        }
        return self.broadcastTo(t, "broadcastTo");
    }

    /** {@code self} broadcast to {@code t}; a fixed axis of {@code self} may become symbolic, a symbolic one stays. */
    static Tensor broadcastTo(Tensor self, Shape t, String op) {
        Shape s = self.shape();
        if (s.equals(t)) return self;
        Shape b = Tensor.broadcastShape(op, s, t);
        if (!b.equals(t)) throw new IllegalArgumentException(op + ": shape " + s + " cannot broadcast to " + t);
        Shape padded = Shape.of(t.rank() == s.rank() ? s.toArray() : ones(t.rank() - s.rank(), s.toArray()));
        for (int i = 0; i < s.rank(); i++) {
            int j = t.rank() - s.rank() + i;
            Variable v = s.variable(i) != null ? s.variable(i) : s.dim(i) != 1 ? t.variable(j) : null;
            if (v != null) padded = padded.withVariable(j, v);
        }
        Tensor x = self.reshapeTo(padded);
        return x.shape().equals(t) ? x : self.make(UOp.of(Op.EXPAND, self.dtype(), t, x.node()));
    }

    /** {@code dims} after {@code lead} leading ones. */
    private static int[] ones(int lead, int[] dims) {
        int[] out = new int[lead + dims.length];
        Arrays.fill(out, 0, lead, 1);
        System.arraycopy(dims, 0, out, lead, dims.length);
        return out;
    }

    /** A 0-d tensor for a Java scalar operand ({@link Number} or {@link Boolean}) of {@code t}. */
    static Tensor scalarLike(Tensor t, Object v, String op) {
        if (v instanceof Boolean bo) return Tensor.full(bo ? 1 : 0, t.dtype().isBool() ? DType.BOOL : t.dtype()).to(t.device());
        if (!(v instanceof Number num)) {
            throw new IllegalArgumentException(op + ": operand must be a Tensor, Number or Boolean, got " + (v == null ? "null" : v.getClass().getSimpleName()));
        }
        DType dt = t.dtype();
        if ((num instanceof Double || num instanceof Float) && !dt.isFloat()) dt = DType.F32;
        else if (dt.isBool()) dt = DType.I32;
        return Tensor.full(num, dt).to(t.device());
    }

    /** Broadcasts and promotes two operands; the result holds the two converted tensors. */
    static Tensor[] align(String op, Tensor a, Tensor b, DType dtype) {
        Shape s = Tensor.broadcastShape(op, a.shape(), b.shape());
        Tensor x = a.cast(dtype).broadcastTo(s, op), y = b.to(a.device()).cast(dtype).broadcastTo(s, op);
        return new Tensor[] {x, y};
    }
}

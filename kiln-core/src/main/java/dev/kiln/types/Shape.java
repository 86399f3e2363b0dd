package dev.kiln.types;

import java.util.Arrays;

/**
 * An immutable tensor shape. Rank 0 is a scalar. Dimensions may be 0.
 *
 * <h2>Symbolic dimensions</h2>
 * A dimension may be symbolic: its size is a {@link Variable} known only when a plan runs (a sequence
 * length, a batch size). {@link #dim(int)} is then the variable's maximum, and every buffer is laid out
 * for the maximum (so memory is planned once and strides never change); kernels loop only over the
 * variable's current value along that axis, and never read the rows past it. Two shapes are equal when
 * their sizes and their variables are.
 */
public final class Shape {
    /**
     * The most elements a shape may have, {@code 2^60 - 1}: its bytes in the widest dtype (8 bytes) must fit a
     * long, so {@link #numel()}, {@link #strides()} and every byte size computed from a shape are exact. No
     * buffer that large can exist, so nothing that could run is refused.
     */
    public static final long MAX_NUMEL = Long.MAX_VALUE / 8;

    /** The scalar shape (rank 0). */
    public static final Shape SCALAR = new Shape(new int[0], null);

    private final int[] dims;
    /** Per axis the variable of a symbolic dimension, or null; the array itself is null when no axis is symbolic. */
    private final Variable[] vars;
    private final int hash;

    private Shape(int[] dims, Variable[] vars) {
        this.dims = dims;
        this.vars = vars;
        this.hash = 31 * Arrays.hashCode(dims) + Arrays.hashCode(vars);
    }

    /** A shape of the given dimensions; each must be {@code >= 0}. */
    public static Shape of(int... dims) {
        check(dims);
        return dims.length == 0 ? SCALAR : new Shape(dims.clone(), null);
    }

    /**
     * A shape whose dimensions are each an {@link Integer} (a fixed size) or a {@link Variable} (a
     * symbolic size, at most the variable's maximum), e.g. {@code Shape.symbolic(seq, 64)}.
     *
     * @throws IllegalArgumentException if a dimension is neither, or a variable's range is not within
     *     {@code [0, Integer.MAX_VALUE]}
     */
    public static Shape symbolic(Object... dims) {
        int[] d = new int[dims.length];
        Variable[] v = new Variable[dims.length];
        for (int i = 0; i < dims.length; i++) {
            switch (dims[i]) {
                case Integer n -> d[i] = n;
                case Variable var -> {
                    checkVariable(var, i);
                    d[i] = (int) var.max();
                    v[i] = var;
                }
                case null, default -> throw new IllegalArgumentException("shape dimension " + i + " must be an Integer or a Variable, got "
                        + (dims[i] == null ? "null" : dims[i].getClass().getSimpleName() + " " + dims[i]));
            }
        }
        check(d);
        return make(d, v);
    }

    private static Shape make(int[] dims, Variable[] vars) {
        boolean any = false;
        for (Variable v : vars) any |= v != null;
        return dims.length == 0 ? SCALAR : new Shape(dims, any ? vars : null);
    }

    private static void check(int[] dims) {
        long n = 1;
        boolean over = false;
        for (int i = 0; i < dims.length; i++) {
            if (dims[i] < 0) {
                throw new IllegalArgumentException("shape " + Arrays.toString(dims) + " has negative dimension "
                        + dims[i] + " at axis " + i);
            }
            // checked here, once per shape, so that no element count, stride or byte size computed from a shape
            // overflows later; zero-sized axes are left out, as strides multiply the sizes of the others
            if (dims[i] == 0) continue;
            if (n > MAX_NUMEL / dims[i]) over = true;
            else n *= dims[i];
        }
        if (over) {
            java.math.BigInteger count = java.math.BigInteger.ONE;
            for (int d : dims) if (d != 0) count = count.multiply(java.math.BigInteger.valueOf(d));
            throw new IllegalArgumentException("shape " + Arrays.toString(dims) + " is too large: its axes span " + count + " elements, more than"
                    + " any buffer can hold (at most 2^60 - 1, so that its bytes fit a long)");
        }
    }

    /**
     * Checks that a dimension computed from others ({@code size}, as a long so that it cannot have wrapped) fits an
     * int, and returns it.
     *
     * @param what the operation and operands, for the message (e.g. {@code "pad of [2, 2] by [[0, 9]]"})
     * @throws IllegalArgumentException naming {@code what}, the axis and the size
     */
    public static int dimension(String what, int axis, long size) {
        if (size < 0 || size > Integer.MAX_VALUE) {
            throw new IllegalArgumentException(what + " gives axis " + axis + " the size " + size + ", outside [0, " + Integer.MAX_VALUE + "]");
        }
        return (int) size;
    }

    private static void checkVariable(Variable v, int axis) {
        if (v.min() < 0 || v.max() > Integer.MAX_VALUE) {
            throw new IllegalArgumentException("symbolic dimension " + axis + ": variable '" + v.name() + "' has range ["
                    + v.min() + ", " + v.max() + "]; a size must lie in [0, " + Integer.MAX_VALUE + "]");
        }
    }

    public int rank() { return dims.length; }

    /**
     * The size of {@code axis}: for a symbolic dimension, its maximum.
     *
     * @throws IndexOutOfBoundsException if {@code axis} is not in {@code [0, rank)}, naming the shape
     */
    public int dim(int axis) { return dims[checkAxis(axis)]; }

    /**
     * The variable of a symbolic dimension, or null if {@code axis} has a fixed size.
     *
     * @throws IndexOutOfBoundsException if {@code axis} is not in {@code [0, rank)}, naming the shape
     */
    public Variable variable(int axis) {
        checkAxis(axis);
        return vars == null ? null : vars[axis];
    }

    // the array's own check would say "Index 5 out of bounds for length 2", naming neither the shape nor what an index is
    private int checkAxis(int axis) {
        if (axis < 0 || axis >= dims.length) {
            throw new IndexOutOfBoundsException("axis " + axis + " out of range for shape " + this + " (rank " + dims.length + ")");
        }
        return axis;
    }

    /** Whether any dimension is symbolic. */
    public boolean isSymbolic() { return vars != null; }

    /** A copy of the dimensions (maximum sizes for symbolic ones). */
    public int[] toArray() { return dims.clone(); }

    /** This shape with every dimension fixed at its maximum. */
    public Shape maxShape() { return vars == null ? this : of(dims); }

    /** Number of elements (1 for a scalar); with symbolic dimensions, at their maximum. */
    public long numel() {
        long n = 1;
        for (int d : dims) n *= d; // exact: check() bounds the product of the nonzero sizes by MAX_NUMEL
        return n;
    }

    /** Row-major (C order) strides in elements, for the maximum sizes. */
    public long[] strides() {
        long[] s = new long[dims.length];
        long acc = 1;
        for (int i = dims.length - 1; i >= 0; i--) {
            s[i] = acc;
            acc *= dims[i]; // exact: check() bounds the product of the nonzero sizes by MAX_NUMEL
        }
        return s;
    }

    /** This shape with {@code axis} replaced by the fixed size {@code size}. */
    public Shape with(int axis, int size) {
        int[] d = dims.clone();
        d[axis] = size;
        check(d);
        Variable[] v = vars == null ? new Variable[d.length] : vars.clone();
        v[axis] = null;
        return make(d, v);
    }

    /**
     * This shape with {@code axis} made symbolic: its size becomes {@code v}, whose maximum must equal
     * the axis's size (null makes the axis fixed again).
     */
    public Shape withVariable(int axis, Variable v) {
        Variable[] vs = vars == null ? new Variable[dims.length] : vars.clone();
        if (v != null) {
            checkVariable(v, axis);
            if (v.max() != dims[axis]) {
                throw new IllegalArgumentException("shape " + this + ": axis " + axis + " has size " + dims[axis]
                        + ", but variable '" + v.name() + "' has maximum " + v.max());
            }
        }
        vs[axis] = v;
        return make(dims.clone(), vs);
    }

    /** This shape's axes in the order {@code perm} (axis {@code i} of the result is axis {@code perm[i]}). */
    public Shape permute(int... perm) {
        int[] d = new int[perm.length];
        Variable[] v = new Variable[perm.length];
        for (int i = 0; i < perm.length; i++) {
            d[i] = dims[perm[i]];
            v[i] = variable(perm[i]);
        }
        return make(d, v);
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof Shape s && Arrays.equals(dims, s.dims) && Arrays.equals(vars, s.vars);
    }

    @Override
    public int hashCode() { return hash; }

    /** {@code [2, 3]}; a symbolic dimension prints as its variable and maximum, {@code [seq<=256, 64]}. */
    @Override
    public String toString() {
        if (vars == null) return Arrays.toString(dims);
        StringBuilder sb = new StringBuilder("[");
        for (int i = 0; i < dims.length; i++) {
            if (i > 0) sb.append(", ");
            if (vars[i] != null) sb.append(vars[i].name()).append("<=").append(dims[i]);
            else sb.append(dims[i]);
        }
        return sb.append(']').toString();
    }

    /**
     * The shape {@code dims} (same number of elements) with this shape's symbolic axes carried over: a
     * reshape keeps a symbolic axis where an axis of the same size starts at the same element offset
     * (the product of the sizes before it is the same), which leaves the layout of every active row as it
     * was.
     *
     * @throws IllegalArgumentException if a symbolic axis would be merged with or split into others
     */
    public Shape reshaped(int... dims) {
        Shape out = of(dims);
        if (vars == null) return out;
        for (int k = 0; k < this.dims.length; k++) {
            if (vars[k] == null) continue;
            int m = matchingAxis(this, k, out);
            if (m < 0) {
                throw new IllegalArgumentException("reshape from " + this + " to " + Arrays.toString(dims) + " would merge or split the symbolic axis "
                        + k + " (" + vars[k].name() + "); keep it as an axis of its own");
            }
            out = out.withVariable(m, vars[k]);
        }
        return out;
    }

    /** The axis of {@code to} with the size of {@code from}'s axis {@code k} and the same product of sizes before it, or -1. */
    public static int matchingAxis(Shape from, int k, Shape to) {
        long before = 1;
        for (int i = 0; i < k; i++) before *= from.dims[i];
        long at = 1;
        for (int m = 0; m < to.dims.length; m++) {
            if (at == before && to.dims[m] == from.dims[k] && (to.dims[m] != 1 || from.vars != null && from.vars[k] != null)) return m;
            at *= to.dims[m];
        }
        return -1;
    }
}

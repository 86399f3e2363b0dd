package dev.kiln;

import java.util.Arrays;

/**
 * An immutable tensor shape. Rank 0 is a scalar. Dimensions may be 0.
 */
public final class Shape {
    /** The scalar shape (rank 0). */
    public static final Shape SCALAR = new Shape(new int[0]);

    private final int[] dims;
    private final int hash;

    private Shape(int[] dims) {
        this.dims = dims;
        this.hash = Arrays.hashCode(dims);
    }

    /** A shape of the given dimensions; each must be {@code >= 0}. */
    public static Shape of(int... dims) {
        for (int i = 0; i < dims.length; i++) {
            if (dims[i] < 0) {
                throw new IllegalArgumentException("shape " + Arrays.toString(dims) + " has negative dimension "
                        + dims[i] + " at axis " + i);
            }
        }
        return dims.length == 0 ? SCALAR : new Shape(dims.clone());
    }

    public int rank() { return dims.length; }

    public int dim(int axis) { return dims[axis]; }

    /** A copy of the dimensions. */
    public int[] toArray() { return dims.clone(); }

    /** Number of elements (1 for a scalar). */
    public long numel() {
        long n = 1;
        for (int d : dims) n = Math.multiplyExact(n, d);
        return n;
    }

    /** Row-major (C order) strides in elements. */
    public long[] strides() {
        long[] s = new long[dims.length];
        long acc = 1;
        for (int i = dims.length - 1; i >= 0; i--) {
            s[i] = acc;
            acc *= dims[i];
        }
        return s;
    }

    /** This shape with {@code axis} replaced by {@code size}. */
    public Shape with(int axis, int size) {
        int[] d = dims.clone();
        d[axis] = size;
        return of(d);
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof Shape s && Arrays.equals(dims, s.dims);
    }

    @Override
    public int hashCode() { return hash; }

    @Override
    public String toString() { return Arrays.toString(dims); }
}

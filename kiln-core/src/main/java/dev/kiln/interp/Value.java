package dev.kiln.interp;

import dev.kiln.types.DType;
import dev.kiln.types.Shape;
import dev.kiln.runtime.Buffer;
import dev.kiln.ir.Elements;

import java.lang.foreign.MemorySegment;

/**
 * A dense, C-ordered array of values as the interpreter holds it: integers and bools as normalised
 * {@code long}s, floats as {@code double}s already rounded to their dtype. Exactly one of the two arrays
 * is set.
 */
final class Value {
    /** The most elements a value holds: the largest Java array every VM allocates. */
    static final int MAX_ELEMENTS = Integer.MAX_VALUE - 8;
    final DType dtype;
    final Shape shape;
    final long[] ints;
    final double[] floats;

    private Value(DType dtype, Shape shape, long[] ints, double[] floats) {
        this.dtype = dtype;
        this.shape = shape;
        this.ints = ints;
        this.floats = floats;
    }

    static Value allocate(DType dtype, Shape shape) {
        if (dtype.isPacked()) {
            throw new IllegalArgumentException("packed dtype " + dtype + " cannot be computed on; dequantise it first");
        }
        long numel = shape.numel();
        // the interpreter holds every element as a long or a double, 8 bytes, whatever the dtype
        String what = "INTERP value of shape " + shape + " x " + dtype;
        dev.kiln.runtime.MemoryBudget.check(numel * 8, what);
        // one Java array holds a value: past the VM's array limit the JVM throws OutOfMemoryError, not a typed error
        if (numel > MAX_ELEMENTS) {
            throw new IllegalArgumentException("INTERP holds at most " + MAX_ELEMENTS + " elements in one value; " + dtype + " " + shape
                    + " has " + numel);
        }
        int n = (int) numel;
        try {
            return dtype.isFloat() ? new Value(dtype, shape, null, new double[n]) : new Value(dtype, shape, new long[n], null);
        } catch (OutOfMemoryError e) {
            throw dev.kiln.runtime.MemoryBudget.refused(numel * 8, what, e); // one array that did not fit
        }
    }

    int size() { return ints != null ? ints.length : floats.length; }

    /** The same data seen with another shape of equal element count. */
    Value reshaped(Shape s) { return new Value(dtype, s, ints, floats); }

    /** Copies element {@code from} of {@code src} (same dtype) into element {@code to} of this value. */
    /** Every element set to {@code src}'s single one. */
    void fill(Value src) {
        if (ints != null) java.util.Arrays.fill(ints, src.ints[0]);
        else java.util.Arrays.fill(floats, src.floats[0]);
    }

    void copyFrom(Value src, int from, int to) {
        if (ints != null) ints[to] = src.ints[from];
        else floats[to] = src.floats[from];
    }

    // ---------------------------------------------------------------- memory

    /** Reads {@code shape.numel()} elements of {@code dtype} from a segment. */
    static Value read(DType dtype, Shape shape, MemorySegment seg) {
        Value v = allocate(dtype, shape);
        if (dtype.isFloat()) Elements.getDoubles(seg, dtype, v.floats, v.size());
        else Elements.getLongs(seg, dtype, v.ints, v.size());
        return v;
    }

    static Value read(Buffer b, Shape shape) { return read(b.dtype(), shape, b.segment()); }

    /** Writes every element into a segment. */
    void write(MemorySegment seg) {
        if (dtype.isFloat()) Elements.setDoubles(seg, dtype, floats, size());
        else Elements.setLongs(seg, dtype, ints, size());
    }
}

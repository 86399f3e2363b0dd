package dev.kiln.serve;

import dev.kiln.types.DType;

import java.util.List;

/**
 * Where {@link ExecutableGraph#runSlots} leaves the outputs in {@link ExecutableGraph#arena()}: per output,
 * its byte offset and its length in elements (values of {@link #dtype(int)}, native byte order). The
 * offsets are fixed for the life of the compiled graph, so one instance is returned by every call.
 */
public final class OutputSlots {
    private final long[] offsets;
    private final long[] lengths;
    private final DType[] dtypes;

    OutputSlots(long[] offsets, long[] lengths, List<DType> dtypes) {
        this.offsets = offsets.clone();
        this.lengths = lengths.clone();
        this.dtypes = dtypes.toArray(DType[]::new);
    }

    /** Number of outputs. */
    public int count() { return offsets.length; }

    /** Byte offset of output {@code i} in the arena. */
    public long offset(int i) { return offsets[check(i)]; }

    /** Number of elements of output {@code i}. */
    public long length(int i) { return lengths[check(i)]; }

    /** Element type of output {@code i}. */
    public DType dtype(int i) { return dtypes[check(i)]; }

    private int check(int i) {
        if (i < 0 || i >= offsets.length) throw new IndexOutOfBoundsException("output " + i + " of a graph with " + offsets.length + " outputs");
        return i;
    }
}

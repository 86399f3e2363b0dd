package dev.kiln.runtime;

import dev.kiln.ir.BufferRef;
import dev.kiln.types.DType;

import java.lang.foreign.MemorySegment;
import java.util.Objects;

/**
 * Realised tensor data on a device: {@code count} elements of {@code dtype}, densely packed in C
 * order in {@code segment}. Equality is identity: two buffers are the same only if they are the same
 * storage.
 */
public final class Buffer implements BufferRef {
    private final String device;
    private final DType dtype;
    private final long count;
    private final MemorySegment segment;

    public Buffer(String device, DType dtype, long count, MemorySegment segment) {
        this.device = Objects.requireNonNull(device);
        this.dtype = Objects.requireNonNull(dtype);
        this.count = count;
        this.segment = Objects.requireNonNull(segment);
        long need = dtype.byteSize(count);
        if (segment.byteSize() < need) {
            throw new IllegalArgumentException("buffer of " + count + " x " + dtype + " needs " + need
                    + " bytes, segment has " + segment.byteSize());
        }
    }

    /** A zero-filled buffer on the Java heap (the storage of the INTERP device). */
    public static Buffer allocateHeap(String device, DType dtype, long count) {
        long bytes = dtype.byteSize(count);
        if (bytes > Integer.MAX_VALUE - 8) {
            throw new IllegalArgumentException("heap buffer of " + bytes + " bytes exceeds the 2 GiB heap array limit");
        }
        // long[] backing keeps every element naturally aligned up to 8 bytes.
        return new Buffer(device, dtype, count, MemorySegment.ofArray(new long[(int) ((bytes + 7) / 8)]));
    }

    /**
     * A zero-filled off-heap buffer, 64-byte aligned, owned by the garbage collector through this
     * {@code Buffer} (an automatic arena): the storage of the host devices' tensors.
     */
    public static Buffer allocateOffHeap(String device, DType dtype, long count) {
        MemorySegment s = java.lang.foreign.Arena.ofAuto().allocate(Math.max(1, dtype.byteSize(count)), 64);
        return new Buffer(device, dtype, count, s);
    }

    public String device() { return device; }

    public DType dtype() { return dtype; }

    /** Number of elements. */
    public long count() { return count; }

    /** The storage; its first {@code dtype.byteSize(count)} bytes hold the data. */
    public MemorySegment segment() { return segment; }

    @Override
    public String toString() { return "Buffer[" + device + ", " + count + " x " + dtype + "]"; }
}

package dev.kiln.runtime;

import dev.kiln.ir.Alu;
import dev.kiln.ir.BufferRef;
import dev.kiln.ir.Elements;
import dev.kiln.ir.UOp;
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
    private final boolean hostMemory;
    private final boolean immutable;

    public Buffer(String device, DType dtype, long count, MemorySegment segment) {
        this(device, dtype, count, segment, true, false);
    }

    private Buffer(String device, DType dtype, long count, MemorySegment segment, boolean hostMemory, boolean immutable) {
        this.device = Objects.requireNonNull(device);
        this.dtype = Objects.requireNonNull(dtype);
        this.count = count;
        this.segment = Objects.requireNonNull(segment);
        this.hostMemory = hostMemory;
        this.immutable = immutable;
        if (!hostMemory) return; // an address in device memory: nothing here to measure
        long need = dtype.byteSize(count);
        if (segment.byteSize() < need) {
            throw new IllegalArgumentException("buffer of " + count + " x " + dtype + " needs " + need
                    + " bytes, segment has " + segment.byteSize());
        }
    }

    /**
     * The storage a BUFFER node names. Tensor graphs hold runtime buffers only (the IR sees them as
     * {@link BufferRef}s), so this is the one place the runtime turns the IR's reference back into its storage.
     *
     * @throws IllegalStateException if {@code node} is not a BUFFER node
     */
    public static Buffer of(UOp node) { return (Buffer) node.bufferArg(); }

    /** A zero-filled buffer on the Java heap (the storage of the INTERP device). */
    /**
     * A zero-filled buffer on the Java heap (the storage of the INTERP device).
     *
     * @throws MemoryBudgetException    if its bytes exceed the {@link MemoryBudget} or the heap cannot hold them
     * @throws IllegalArgumentException if they exceed the 2 GiB limit of a Java array
     */
    public static Buffer allocateHeap(String device, DType dtype, long count) {
        long bytes = dtype.byteSize(count);
        String what = "buffer of " + count + " x " + dtype + " on " + device;
        MemoryBudget.check(bytes, what);
        if (bytes > Integer.MAX_VALUE - 8) {
            throw new IllegalArgumentException("heap buffer of " + bytes + " bytes exceeds the 2 GiB heap array limit");
        }
        long[] words;
        try {
            words = new long[(int) ((bytes + 7) / 8)]; // long[] backing keeps every element naturally aligned up to 8 bytes
        } catch (OutOfMemoryError e) {
            throw MemoryBudget.refused(bytes, what, e); // one array that did not fit: nothing else was disturbed
        }
        return new Buffer(device, dtype, count, MemorySegment.ofArray(words));
    }

    /**
     * A zero-filled off-heap buffer, 64-byte aligned, owned by the garbage collector through this
     * {@code Buffer} (an automatic arena): the storage of the host devices' tensors.
     *
     * @throws MemoryBudgetException if its bytes exceed the {@link MemoryBudget}, or the JVM cannot reserve them
     */
    public static Buffer allocateOffHeap(String device, DType dtype, long count) {
        long bytes = Math.max(1, dtype.byteSize(count));
        String what = "buffer of " + count + " x " + dtype + " on " + device;
        MemoryBudget.check(bytes, what);
        MemorySegment s;
        try {
            s = java.lang.foreign.Arena.ofAuto().allocate(bytes, 64);
        } catch (OutOfMemoryError e) {
            throw MemoryBudget.refused(bytes, what, e); // the JVM's off-heap reservation failed: nothing was allocated
        }
        return new Buffer(device, dtype, count, s);
    }

    /**
     * A buffer in the memory of a device that Java cannot address ({@link DeviceMemory}): {@code address} is an
     * address-only segment. Its elements are read through {@link #toHost()}.
     */
    public static Buffer inDeviceMemory(String device, DType dtype, long count, MemorySegment address) {
        return new Buffer(device, dtype, count, address, false, false);
    }

    /**
     * This buffer's memory as a constant: a buffer whose contents never change again. The caller promises it
     * (nothing writes the memory through another reference any more); Kiln then refuses writes through the
     * returned buffer ({@link #segment()} is read-only in host memory) and a prepared plan may keep data derived
     * from it, such as a GEMM's packed weights, for as long as the plan lives.
     */
    public Buffer asImmutable() {
        if (immutable) return this;
        return new Buffer(device, dtype, count, hostMemory ? segment.asReadOnly() : segment, hostMemory, true);
    }

    /** Whether this buffer's contents are constant ({@link #asImmutable()}). */
    public boolean isImmutable() { return immutable; }

    /** Whether the data is in host memory, readable through {@link #segment()} and the element accessors. */
    public boolean isHostMemory() { return hostMemory; }

    /**
     * This buffer's data in host memory: this buffer itself when it is there, else a copy made now (after the
     * device's queued work), owned by the garbage collector.
     */
    public Buffer toHost() {
        if (hostMemory) return this;
        Buffer host = allocateOffHeap(device, dtype, count);
        DeviceMemory memory = DeviceRegistry.get(device).deviceMemory()
                .orElseThrow(() -> new IllegalStateException(this + " is in device memory, but its device says it has none"));
        memory.copyToHost(segment, host.segment, dtype.byteSize(count));
        return host;
    }

    private MemorySegment hostSegment() {
        if (!hostMemory) {
            throw new IllegalStateException(this + " is in the device's own memory: read it through toHost()");
        }
        return segment;
    }

    public String device() { return device; }

    public DType dtype() { return dtype; }

    /** Number of elements. */
    public long count() { return count; }

    /**
     * The storage; its first {@code dtype.byteSize(count)} bytes hold the data. For a buffer in device memory
     * ({@link #isHostMemory()} false) it is the address only, of length 0.
     */
    public MemorySegment segment() { return segment; }

    /**
     * Element {@code i} as a double: a float as it is stored, an integer or bool converted (u64 read as
     * unsigned, so values above 2^53 round).
     *
     * @throws IndexOutOfBoundsException if {@code i} is not in {@code [0, count)}
     * @throws IllegalArgumentException  for a packed (quantised block) dtype
     */
    public double getDouble(long i) { return Elements.getAsDouble(hostSegment(), dtype, index(i)); }

    /**
     * Element {@code i} of an integer or bool buffer: signed types sign-extended, unsigned ones zero-extended
     * (u64 as raw bits), bool as 0 or 1.
     *
     * @throws IndexOutOfBoundsException if {@code i} is not in {@code [0, count)}
     * @throws IllegalArgumentException  if the dtype is not an integer or bool
     */
    public long getLong(long i) { return Elements.getLong(hostSegment(), dtype, index(i)); }

    /**
     * Stores {@code v} at element {@code i} of a float buffer, rounded to its dtype (ties to even).
     *
     * @throws IndexOutOfBoundsException if {@code i} is not in {@code [0, count)}
     * @throws IllegalArgumentException  if the dtype is not a float
     */
    public void setDouble(long i, double v) { Elements.setDouble(hostSegment(), dtype, index(i), v); }

    /**
     * Stores {@code v} at element {@code i} of an integer or bool buffer, wrapped to its width and signedness
     * (any non-zero value is a true bool).
     *
     * @throws IndexOutOfBoundsException if {@code i} is not in {@code [0, count)}
     * @throws IllegalArgumentException  if the dtype is not an integer or bool
     */
    public void setLong(long i, long v) {
        Elements.setLong(hostSegment(), dtype, index(i), Alu.wrap(dtype, v));
    }

    // Objects.checkIndex would say "Index 9 out of bounds for length 4", naming neither the buffer nor what was indexed
    private long index(long i) {
        if (i < 0 || i >= count) throw new IndexOutOfBoundsException(this + ": element " + i + " out of range [0, " + count + ")");
        return i;
    }

    @Override
    public String toString() { return "Buffer[" + device + ", " + count + " x " + dtype + "]"; }
}

package dev.kiln.runtime;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

/**
 * The memory of a device that Java cannot address directly (a GPU's), as a {@link Device} whose tensors live
 * there supplies it ({@link Device#deviceMemory()}). Such memory is handed around as address-only segments
 * of length 0: the runtime passes them to the device's kernels and copies, and host code that tries to read
 * or write one fails with an {@link IndexOutOfBoundsException} instead of touching memory it cannot reach.
 *
 * <p>Work on the device (kernels, copies within it) may still be running when a call returns; the device
 * keeps it in order, and {@link #synchronize()} waits for it. Copies to and from host memory return once the
 * host side may be reused or read.
 */
public interface DeviceMemory {
    /** {@code bytes} of zero-filled device memory, freed when {@code owner} closes (or, for an automatic arena, when unreachable). */
    MemorySegment allocate(Arena owner, long bytes);

    /** The address {@code offset} bytes into {@code block} (address-only, like the block). */
    default MemorySegment at(MemorySegment block, long offset) { return MemorySegment.ofAddress(block.address() + offset); }

    /** Copies {@code bytes} from host memory into device memory, after the device's earlier work. */
    void copyFromHost(MemorySegment host, MemorySegment device, long bytes);

    /** Copies {@code bytes} of device memory into host memory once the device's earlier work is done. */
    void copyToHost(MemorySegment device, MemorySegment host, long bytes);

    /** Copies {@code bytes} between two places of this device's memory, in order with its other work. */
    void copyWithin(MemorySegment from, MemorySegment to, long bytes);

    /**
     * Waits until the device has finished all work queued so far.
     *
     * @throws IndexOutOfBoundsException if a kernel found an index out of range (the access was skipped)
     */
    void synchronize();

    /**
     * Records the device work that {@code work} queues, without running it, as a replayable unit (a CUDA
     * graph); the caller owns the result. Work that cannot be recorded (a copy from host memory) fails the
     * recording with an exception and leaves nothing queued.
     *
     * @throws UnsupportedOperationException if this device cannot record work
     */
    default RecordedWork record(Runnable work) {
        throw new UnsupportedOperationException("this device cannot record work for replay");
    }

    /** Whether {@link #record} is supported. */
    default boolean canRecord() { return false; }

    /** Device work recorded once ({@link DeviceMemory#record}) and replayed as one launch. */
    interface RecordedWork extends AutoCloseable {
        /** Queues the recorded work again, in order with the device's other work. */
        void replay();

        @Override
        void close();
    }
}

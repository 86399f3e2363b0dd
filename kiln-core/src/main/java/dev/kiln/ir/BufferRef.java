package dev.kiln.ir;

import dev.kiln.types.DType;

/**
 * What the IR knows of a realised buffer (the arg of {@link Op#BUFFER}): where it lives, its dtype and
 * its element count. The storage itself belongs to the runtime, which implements this interface; the IR
 * and the scheduler never touch the bytes. Equality is identity, as for the storage.
 */
public interface BufferRef {
    /** The device that holds the storage, e.g. {@code "CPU"}. */
    String device();

    DType dtype();

    /** Number of elements. */
    long count();
}

package dev.kiln.llm.gguf;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.util.AbstractList;
import java.util.RandomAccess;

/**
 * An immutable GGUF metadata array of fixed-size values (integers, floats, booleans), kept as the file's own bytes on
 * the heap and converted on access with the same Java mapping as scalar values: integers to {@link Long} (unsigned ones
 * zero-extended, UINT64 as raw bits), floats to {@link Double}, booleans to {@link Boolean}. A vocabulary's 150,000
 * scores or token types thus take 600 kB, not 150,000 boxed objects, and never more memory than the file's bytes.
 */
final class PackedList extends AbstractList<Object> implements RandomAccess {
    private static final ValueLayout.OfShort I16 = ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    private static final ValueLayout.OfInt I32 = ValueLayout.JAVA_INT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    private static final ValueLayout.OfLong I64 = ValueLayout.JAVA_LONG_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    private static final ValueLayout.OfFloat F32 = ValueLayout.JAVA_FLOAT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    private static final ValueLayout.OfDouble F64 = ValueLayout.JAVA_DOUBLE_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

    private final ValueType type;
    private final MemorySegment bytes;
    private final int size;

    /** {@code bytes} holds {@code bytes.length / type.minBytes} values of {@code type}, which is fixed-size; booleans are 0 or 1. */
    PackedList(ValueType type, byte[] bytes) {
        this.type = type;
        this.bytes = MemorySegment.ofArray(bytes);
        this.size = bytes.length / type.minBytes;
    }

    ValueType type() { return type; }

    @Override
    public int size() { return size; }

    @Override
    public Object get(int index) {
        java.util.Objects.checkIndex(index, size);
        long at = (long) index * type.minBytes;
        return switch (type) {
            case FLOAT32 -> (double) bytes.get(F32, at);
            case FLOAT64 -> bytes.get(F64, at);
            case BOOL -> bytes.get(ValueLayout.JAVA_BYTE, at) != 0;
            default -> longAt(at);
        };
    }

    private long longAt(long at) {
        return switch (type) {
            case UINT8 -> bytes.get(ValueLayout.JAVA_BYTE, at) & 0xFFL;
            case INT8 -> bytes.get(ValueLayout.JAVA_BYTE, at);
            case UINT16 -> bytes.get(I16, at) & 0xFFFFL;
            case INT16 -> bytes.get(I16, at);
            case UINT32 -> bytes.get(I32, at) & 0xFFFF_FFFFL;
            case INT32 -> bytes.get(I32, at);
            case UINT64, INT64 -> bytes.get(I64, at);
            default -> throw new IllegalStateException(type + " is not an integer type");
        };
    }

    /** The values of an integer array. */
    long[] toLongArray() {
        long[] out = new long[size];
        for (int i = 0; i < size; i++) out[i] = longAt((long) i * type.minBytes);
        return out;
    }

    /** The values of a FLOAT32 array, exactly. */
    float[] toFloatArray() {
        float[] out = new float[size];
        MemorySegment.copy(bytes, F32, 0, out, 0, size);
        return out;
    }
}

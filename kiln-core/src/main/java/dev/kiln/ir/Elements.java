package dev.kiln.ir;

import dev.kiln.types.DType;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/**
 * Reads and writes single elements of dense buffers in native byte order, in the interpreter's value
 * convention: integers and bools as normalised {@code long}s, floats as {@code double}s.
 */
public final class Elements {
    private Elements() {}

    private static final ValueLayout.OfShort I16 = ValueLayout.JAVA_SHORT_UNALIGNED;
    private static final ValueLayout.OfInt I32 = ValueLayout.JAVA_INT_UNALIGNED;
    private static final ValueLayout.OfLong I64 = ValueLayout.JAVA_LONG_UNALIGNED;
    private static final ValueLayout.OfFloat F32 = ValueLayout.JAVA_FLOAT_UNALIGNED;
    private static final ValueLayout.OfDouble F64 = ValueLayout.JAVA_DOUBLE_UNALIGNED;

    /** Element {@code i} of an integer or bool buffer. */
    public static long getLong(MemorySegment seg, DType dtype, long i) {
        return switch (dtype) {
            case BOOL -> seg.get(ValueLayout.JAVA_BYTE, i) != 0 ? 1 : 0;
            case I8 -> seg.get(ValueLayout.JAVA_BYTE, i);
            case U8 -> seg.get(ValueLayout.JAVA_BYTE, i) & 0xFFL;
            case I16 -> seg.getAtIndex(I16, i);
            case U16 -> seg.getAtIndex(I16, i) & 0xFFFFL;
            case I32 -> seg.getAtIndex(I32, i);
            case U32 -> seg.getAtIndex(I32, i) & 0xFFFF_FFFFL;
            case I64, U64 -> seg.getAtIndex(I64, i);
            default -> throw new IllegalArgumentException(dtype + " is not an integer or bool dtype");
        };
    }

    /** Element {@code i} of a float buffer. */
    public static double getDouble(MemorySegment seg, DType dtype, long i) {
        return switch (dtype) {
            case F16, BF16 -> Alu.floatFromBits(dtype, seg.getAtIndex(I16, i));
            case F32 -> seg.getAtIndex(F32, i);
            case F64 -> seg.getAtIndex(F64, i);
            default -> throw new IllegalArgumentException(dtype + " is not a float dtype");
        };
    }

    /** Element {@code i} of any non-packed buffer, converted to a double (u64 read as unsigned). */
    public static double getAsDouble(MemorySegment seg, DType dtype, long i) {
        if (dtype.isFloat()) return getDouble(seg, dtype, i);
        long v = getLong(seg, dtype, i);
        return dtype == DType.U64 ? Alu.castIntToFloat(dtype, DType.F64, v) : v;
    }

    /** Stores an integer or bool element (already normalised to {@code dtype}). */
    public static void setLong(MemorySegment seg, DType dtype, long i, long v) {
        switch (dtype) {
            case BOOL, I8, U8 -> seg.set(ValueLayout.JAVA_BYTE, i, (byte) v);
            case I16, U16 -> seg.setAtIndex(I16, i, (short) v);
            case I32, U32 -> seg.setAtIndex(I32, i, (int) v);
            case I64, U64 -> seg.setAtIndex(I64, i, v);
            default -> throw new IllegalArgumentException(dtype + " is not an integer or bool dtype");
        }
    }

    /** Stores a float element, rounding it to {@code dtype}. */
    public static void setDouble(MemorySegment seg, DType dtype, long i, double v) {
        switch (dtype) {
            case F16, BF16 -> seg.setAtIndex(I16, i, (short) Alu.floatBits(dtype, v));
            case F32 -> seg.setAtIndex(F32, i, (float) v);
            case F64 -> seg.setAtIndex(F64, i, v);
            default -> throw new IllegalArgumentException(dtype + " is not a float dtype");
        }
    }

    /** Elements staged per bulk copy by the array methods below. */
    private static final int CHUNK = 4096;

    /**
     * Elements {@code [0, n)} of a float buffer into {@code out}, as {@link #getDouble} reads each: in bulk for f32 and
     * f64 (whole models' weights pass through here; element by element took a fifth of a ResNet-50 prepare).
     */
    public static void getDoubles(MemorySegment seg, DType dtype, double[] out, int n) {
        switch (dtype) {
            case F64 -> MemorySegment.copy(seg, F64, 0, out, 0, n);
            case F32 -> {
                float[] chunk = new float[Math.min(n, CHUNK)];
                for (int at = 0; at < n; at += CHUNK) {
                    int len = Math.min(CHUNK, n - at);
                    MemorySegment.copy(seg, F32, 4L * at, chunk, 0, len);
                    for (int k = 0; k < len; k++) out[at + k] = chunk[k];
                }
            }
            default -> {
                for (int i = 0; i < n; i++) out[i] = getDouble(seg, dtype, i);
            }
        }
    }

    /** Elements {@code [0, n)} of any non-packed buffer as floats ({@link #getAsDouble}, rounded); f32 in bulk. */
    public static void getAsFloats(MemorySegment seg, DType dtype, float[] out, int n) {
        if (dtype == DType.F32) MemorySegment.copy(seg, F32, 0, out, 0, n);
        else for (int i = 0; i < n; i++) out[i] = (float) getAsDouble(seg, dtype, i);
    }

    /** {@code values[0, n)} rounded to {@code dtype} into a float buffer, as {@link #setDouble} stores each; in bulk for f32 and f64. */
    public static void setDoubles(MemorySegment seg, DType dtype, double[] values, int n) {
        switch (dtype) {
            case F64 -> MemorySegment.copy(values, 0, seg, F64, 0, n);
            case F32 -> {
                float[] chunk = new float[Math.min(n, CHUNK)];
                for (int at = 0; at < n; at += CHUNK) {
                    int len = Math.min(CHUNK, n - at);
                    for (int k = 0; k < len; k++) chunk[k] = (float) values[at + k];
                    MemorySegment.copy(chunk, 0, seg, F32, 4L * at, len);
                }
            }
            default -> {
                for (int i = 0; i < n; i++) setDouble(seg, dtype, i, values[i]);
            }
        }
    }

    /** Elements {@code [0, n)} of an integer or bool buffer into {@code out}, as {@link #getLong} reads each; in bulk for i64. */
    public static void getLongs(MemorySegment seg, DType dtype, long[] out, int n) {
        if (dtype == DType.I64 || dtype == DType.U64) MemorySegment.copy(seg, I64, 0, out, 0, n);
        else for (int i = 0; i < n; i++) out[i] = getLong(seg, dtype, i);
    }

    /** {@code values[0, n)} into an integer or bool buffer, as {@link #setLong} stores each; in bulk for i64. */
    public static void setLongs(MemorySegment seg, DType dtype, long[] values, int n) {
        if (dtype == DType.I64 || dtype == DType.U64) MemorySegment.copy(values, 0, seg, I64, 0, n);
        else for (int i = 0; i < n; i++) setLong(seg, dtype, i, values[i]);
    }
}

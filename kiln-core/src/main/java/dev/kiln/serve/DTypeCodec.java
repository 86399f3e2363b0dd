package dev.kiln.serve;

import dev.kiln.types.DType;
import dev.kiln.ir.Alu;
import dev.kiln.ir.Elements;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;

/**
 * The one place where the serving API converts between bytes and values: typed bytes (as
 * {@link CompiledGraph#runTyped} and {@link CompiledGraph#setParamTyped} take them) to and from device
 * buffers, {@code float[]} to and from buffers of any dtype, and the packed block formats.
 *
 * <p>Typed bytes are little-endian (the order of GGUF and NumPy files); device buffers are in native
 * order. The packed formats follow GGML's block layout, {@link DType#QUANT_BLOCK} = 32 values per block,
 * each block starting with its scale {@code d} as f16:
 * <ul>
 *   <li>{@link DType#Q8_0}: {@code d}, then 32 signed bytes {@code q}; value {@code j} is {@code q[j] * d}.</li>
 *   <li>{@link DType#Q4_0}: {@code d}, then 16 bytes of nibbles; byte {@code j} holds value {@code j} in its
 *       low nibble and value {@code j + 16} in its high nibble; a nibble {@code q} means {@code (q - 8) * d}.</li>
 * </ul>
 * f16 and bf16 use the same conversions as kernels ({@link Alu#floatBits}, {@link Alu#floatFromBits}):
 * round to nearest even, NaN stays NaN.
 */
public final class DTypeCodec {
    private DTypeCodec() {}

    private static final ValueLayout.OfShort LE_SHORT = ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    private static final ValueLayout.OfInt LE_INT = ValueLayout.JAVA_INT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    private static final ValueLayout.OfLong LE_LONG = ValueLayout.JAVA_LONG_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    private static final ValueLayout.OfFloat F32 = ValueLayout.JAVA_FLOAT_UNALIGNED;

    // ---------------------------------------------------------------- scalars

    /** The value of f16 bits. */
    public static float f16ToFloat(short bits) { return (float) Alu.floatFromBits(DType.F16, bits & 0xFFFF); }

    /** {@code v} rounded to f16 (nearest even), as bits. */
    public static short floatToF16(float v) { return (short) Alu.floatBits(DType.F16, v); }

    /** The value of bf16 bits. */
    public static float bf16ToFloat(short bits) { return (float) Alu.floatFromBits(DType.BF16, bits & 0xFFFF); }

    /** {@code v} rounded to bf16 (nearest even), as bits. */
    public static short floatToBf16(float v) { return (short) Alu.floatBits(DType.BF16, v); }

    // ---------------------------------------------------------------- whole arrays

    /**
     * The number of values {@code bytes} bytes of {@code dtype} hold.
     *
     * @throws IllegalArgumentException if the length is not a whole number of elements (or blocks)
     */
    public static long count(DType dtype, long bytes) {
        long unit = dtype.itemSize();
        if (bytes % unit != 0) {
            throw new IllegalArgumentException(bytes + " bytes are not a whole number of " + dtype
                    + (dtype.isPacked() ? " blocks (" + unit + " bytes each)" : " elements (" + unit + " bytes each)"));
        }
        return dtype.isPacked() ? bytes / unit * DType.QUANT_BLOCK : bytes / unit;
    }

    /**
     * Little-endian bytes of {@code dtype} decoded to floats: packed blocks dequantised, integers converted
     * (rounded to the nearest float where they do not fit), bools as 0 or 1.
     */
    public static float[] toFloats(byte[] bytes, DType dtype) {
        MemorySegment src = MemorySegment.ofArray(bytes);
        long n = count(dtype, bytes.length);
        float[] out = new float[Math.toIntExact(n)];
        if (dtype.isPacked()) {
            dequantize(src, dtype, out);
        } else {
            for (int i = 0; i < out.length; i++) out[i] = (float) typedAsDouble(src, dtype, i);
        }
        return out;
    }

    /**
     * {@code values} encoded as little-endian bytes of {@code dtype}, converted as a cast to it: floats
     * rounded to nearest even, integers truncated toward zero and wrapped (NaN to 0), bools nonzero; packed
     * formats quantised as GGML's reference quantiser does (Q8_0: {@code d = max|x| / 127},
     * {@code q = round(x / d)}; Q4_0: {@code d = m / -8} for the value {@code m} of largest magnitude,
     * {@code q = min(15, trunc(x / d + 8.5))}).
     *
     * @throws IllegalArgumentException if a packed dtype is asked for and the length is not a multiple of 32
     */
    public static byte[] fromFloats(float[] values, DType dtype) {
        if (dtype.isPacked() && values.length % DType.QUANT_BLOCK != 0) {
            throw new IllegalArgumentException(dtype + " packs blocks of " + DType.QUANT_BLOCK + " values; " + values.length + " values given");
        }
        byte[] out = new byte[Math.toIntExact(dtype.byteSize(values.length))];
        MemorySegment dst = MemorySegment.ofArray(out);
        if (dtype.isPacked()) {
            quantize(values, dtype, dst);
        } else {
            for (int i = 0; i < values.length; i++) putTyped(dst, dtype, i, values[i]);
        }
        return out;
    }

    // ---------------------------------------------------------------- device buffers (package-private)

    /** {@code src} written into a native-order buffer of {@code dtype}, converted as a cast. */
    static void writeFloats(float[] src, MemorySegment dst, DType dtype) {
        if (dtype == DType.F32) {
            for (int i = 0; i < src.length; i++) dst.setAtIndex(F32, i, src[i]); // no per-call heap wrapper
            return;
        }
        for (int i = 0; i < src.length; i++) {
            if (dtype.isFloat()) Elements.setDouble(dst, dtype, i, src[i]);
            else Elements.setLong(dst, dtype, i, Alu.castFloatToInt(dtype, src[i]));
        }
    }

    /** A native-order buffer of {@code dtype} read into {@code dst} as floats. */
    static void readFloats(MemorySegment src, DType dtype, float[] dst) {
        if (dtype == DType.F32) {
            for (int i = 0; i < dst.length; i++) dst[i] = src.getAtIndex(F32, i);
            return;
        }
        for (int i = 0; i < dst.length; i++) dst[i] = (float) Elements.getAsDouble(src, dtype, i);
    }

    /**
     * {@code count} values of typed little-endian bytes of {@code given} stored into a native-order buffer
     * of {@code declared}: a byte-exact copy when the dtypes agree, dequantisation (then rounding to
     * {@code declared}) when {@code given} is packed and {@code declared} a float dtype.
     */
    static void typedToBuffer(MemorySegment src, DType given, MemorySegment dst, DType declared, long count) {
        if (given == declared) {
            copyElements(src, ByteOrder.LITTLE_ENDIAN, dst, ByteOrder.nativeOrder(), declared, count);
            return;
        }
        if (!given.isPacked() || !declared.isFloat()) {
            throw new IllegalArgumentException("no conversion from " + given + " to " + declared);
        }
        float[] values = new float[Math.toIntExact(count)];
        dequantize(src, given, values);
        for (int i = 0; i < values.length; i++) Elements.setDouble(dst, declared, i, values[i]);
    }

    /** {@code count} values of a native-order buffer of {@code dtype} as little-endian bytes. */
    static byte[] bufferToTyped(MemorySegment src, DType dtype, long count) {
        byte[] out = new byte[Math.toIntExact(dtype.byteSize(count))];
        copyElements(src, ByteOrder.nativeOrder(), MemorySegment.ofArray(out), ByteOrder.LITTLE_ENDIAN, dtype, count);
        return out;
    }

    private static void copyElements(MemorySegment src, ByteOrder from, MemorySegment dst, ByteOrder to, DType dtype, long count) {
        long bytes = dtype.byteSize(count);
        int item = dtype.isPacked() ? 1 : dtype.itemSize();
        if (from == to || item == 1) {
            MemorySegment.copy(src, 0, dst, 0, bytes); // packed blocks keep their own (little-endian) layout
            return;
        }
        ValueLayout layout = switch (item) {
            case 2 -> ValueLayout.JAVA_SHORT_UNALIGNED;
            case 4 -> ValueLayout.JAVA_INT_UNALIGNED;
            default -> ValueLayout.JAVA_LONG_UNALIGNED;
        };
        MemorySegment.copy(src, layout.withOrder(from), 0, dst, layout.withOrder(to), 0, count);
    }

    // ---------------------------------------------------------------- elements of typed (little-endian) bytes

    private static double typedAsDouble(MemorySegment s, DType dtype, long i) {
        return switch (dtype) {
            case BOOL -> s.get(ValueLayout.JAVA_BYTE, i) != 0 ? 1 : 0;
            case I8 -> s.get(ValueLayout.JAVA_BYTE, i);
            case U8 -> s.get(ValueLayout.JAVA_BYTE, i) & 0xFF;
            case I16 -> s.getAtIndex(LE_SHORT, i);
            case U16 -> s.getAtIndex(LE_SHORT, i) & 0xFFFF;
            case I32 -> s.getAtIndex(LE_INT, i);
            case U32 -> s.getAtIndex(LE_INT, i) & 0xFFFF_FFFFL;
            case I64 -> s.getAtIndex(LE_LONG, i);
            case U64 -> Alu.castIntToFloat(DType.U64, DType.F64, s.getAtIndex(LE_LONG, i));
            case F16, BF16 -> Alu.floatFromBits(dtype, s.getAtIndex(LE_SHORT, i) & 0xFFFF);
            case F32 -> Float.intBitsToFloat(s.getAtIndex(LE_INT, i));
            case F64 -> Double.longBitsToDouble(s.getAtIndex(LE_LONG, i));
            case Q8_0, Q4_0 -> throw new AssertionError("packed " + dtype + " is decoded by blocks");
        };
    }

    private static void putTyped(MemorySegment s, DType dtype, long i, float v) {
        long bits = dtype.isFloat() ? Alu.floatBits(dtype, v) : Alu.castFloatToInt(dtype, v);
        switch (dtype.itemSize()) {
            case 1 -> s.set(ValueLayout.JAVA_BYTE, i, (byte) bits);
            case 2 -> s.setAtIndex(LE_SHORT, i, (short) bits);
            case 4 -> s.setAtIndex(LE_INT, i, (int) bits);
            default -> s.setAtIndex(LE_LONG, i, bits);
        }
    }

    // ---------------------------------------------------------------- packed blocks

    private static void dequantize(MemorySegment src, DType dtype, float[] out) {
        int blocks = out.length / DType.QUANT_BLOCK;
        long size = dtype.itemSize();
        for (int b = 0; b < blocks; b++) {
            long at = b * size;
            float d = f16ToFloat(src.get(LE_SHORT, at));
            int base = b * DType.QUANT_BLOCK;
            if (dtype == DType.Q8_0) {
                for (int j = 0; j < DType.QUANT_BLOCK; j++) out[base + j] = src.get(ValueLayout.JAVA_BYTE, at + 2 + j) * d;
            } else {
                for (int j = 0; j < DType.QUANT_BLOCK / 2; j++) {
                    int q = src.get(ValueLayout.JAVA_BYTE, at + 2 + j) & 0xFF;
                    out[base + j] = ((q & 0x0F) - 8) * d;
                    out[base + j + DType.QUANT_BLOCK / 2] = ((q >>> 4) - 8) * d;
                }
            }
        }
    }

    private static void quantize(float[] x, DType dtype, MemorySegment dst) {
        int blocks = x.length / DType.QUANT_BLOCK;
        long size = dtype.itemSize();
        for (int b = 0; b < blocks; b++) {
            long at = b * size;
            int base = b * DType.QUANT_BLOCK;
            if (dtype == DType.Q8_0) {
                float amax = 0;
                for (int j = 0; j < DType.QUANT_BLOCK; j++) amax = Math.max(amax, Math.abs(x[base + j]));
                float d = amax / 127;
                float id = d != 0 ? 1 / d : 0;
                dst.set(LE_SHORT, at, floatToF16(d));
                for (int j = 0; j < DType.QUANT_BLOCK; j++) dst.set(ValueLayout.JAVA_BYTE, at + 2 + j, (byte) roundHalfAway(x[base + j] * id));
            } else {
                float amax = 0, max = 0;
                for (int j = 0; j < DType.QUANT_BLOCK; j++) {
                    float v = x[base + j];
                    if (amax < Math.abs(v)) {
                        amax = Math.abs(v);
                        max = v;
                    }
                }
                float d = max / -8;
                float id = d != 0 ? 1 / d : 0;
                dst.set(LE_SHORT, at, floatToF16(d));
                for (int j = 0; j < DType.QUANT_BLOCK / 2; j++) {
                    int lo = Math.min(15, (int) (x[base + j] * id + 8.5f));
                    int hi = Math.min(15, (int) (x[base + j + DType.QUANT_BLOCK / 2] * id + 8.5f));
                    dst.set(ValueLayout.JAVA_BYTE, at + 2 + j, (byte) (lo | (hi << 4)));
                }
            }
        }
    }

    /** C's {@code roundf}: halves away from zero. */
    private static int roundHalfAway(float v) {
        return (int) Math.copySign(Math.floor(Math.abs((double) v) + 0.5), v);
    }
}

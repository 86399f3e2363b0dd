package dev.kiln.llm.gguf;

import java.lang.foreign.MemorySegment;
import java.util.Objects;
import java.util.Optional;

/**
 * The element types of GGUF tensors, with ggml's type ids ({@code enum ggml_type} in {@code ggml.h}) and block
 * geometry: a row of {@code n} values takes {@code n / blockSize() * bytesPerBlock()} bytes, and {@code n} must be a
 * multiple of {@link #blockSize()}.
 *
 * <p>Every type ggml defines is listed, so that a file using one is read (its layout checked, its metadata available)
 * and only its data is refused: {@link #isSupported()} says whether Kiln can dequantise it. The supported ones are the
 * float types and the block quantisations published models use: Q8_0, Q4_0, Q4_1 and the K-quants Q4_K, Q5_K, Q6_K
 * (Q4_K_M files mix Q4_K and Q6_K). Ids that ggml retired (4, 5, 31 to 33, 36 to 38) are unknown.
 */
public enum GgmlType {
    F32(0, 1, 4, true),
    F16(1, 1, 2, true),
    /** 32 values: f16 scale d, 16 bytes of 4-bit values q; x = d * (q - 8). */
    Q4_0(2, 32, 18, true),
    /** 32 values: f16 scale d, f16 minimum m, 16 bytes of 4-bit values q; x = d * q + m. */
    Q4_1(3, 32, 20, true),
    Q5_0(6, 32, 22, false),
    Q5_1(7, 32, 24, false),
    /** 32 values: f16 scale d, 32 signed bytes q; x = d * q. */
    Q8_0(8, 32, 34, true),
    Q8_1(9, 32, 36, false),
    Q2_K(10, 256, 84, false),
    Q3_K(11, 256, 110, false),
    /** 256 values in 8 sub-blocks of 32: f16 d and dmin, 12 bytes of packed 6-bit scales and mins, 128 bytes of 4-bit values. */
    Q4_K(12, 256, 144, true),
    /** As {@link #Q4_K}, with a fifth bit per value in 32 more bytes (qh). */
    Q5_K(13, 256, 176, true),
    /** 256 values in 16 sub-blocks of 16: 128 bytes of low 4 bits, 64 bytes of high 2 bits, 16 signed 8-bit scales, f16 d. */
    Q6_K(14, 256, 210, true),
    Q8_K(15, 256, 292, false),
    IQ2_XXS(16, 256, 66, false),
    IQ2_XS(17, 256, 74, false),
    IQ3_XXS(18, 256, 98, false),
    IQ1_S(19, 256, 50, false),
    IQ4_NL(20, 32, 18, false),
    IQ3_S(21, 256, 110, false),
    IQ2_S(22, 256, 82, false),
    IQ4_XS(23, 256, 136, false),
    I8(24, 1, 1, false),
    I16(25, 1, 2, false),
    I32(26, 1, 4, false),
    I64(27, 1, 8, false),
    F64(28, 1, 8, false),
    IQ1_M(29, 256, 56, false),
    BF16(30, 1, 2, true),
    TQ1_0(34, 256, 54, false),
    TQ2_0(35, 256, 66, false),
    MXFP4(39, 32, 17, false),
    NVFP4(40, 64, 36, false),
    Q1_0(41, 128, 18, false);

    private static final GgmlType[] BY_ID = new GgmlType[64];

    static {
        for (GgmlType t : values()) BY_ID[t.id] = t;
    }

    private final int id;
    private final int blockSize;
    private final int bytesPerBlock;
    private final boolean supported;

    GgmlType(int id, int blockSize, int bytesPerBlock, boolean supported) {
        this.id = id;
        this.blockSize = blockSize;
        this.bytesPerBlock = bytesPerBlock;
        this.supported = supported;
    }

    /** The type with ggml id {@code id}, or empty for an id ggml does not define (or retired). */
    public static Optional<GgmlType> byId(long id) {
        return id >= 0 && id < BY_ID.length ? Optional.ofNullable(BY_ID[(int) id]) : Optional.empty();
    }

    /** ggml's id of the type, as stored in a GGUF tensor info. */
    public int id() { return id; }

    /** Values per block (1 for the plain element types). */
    public int blockSize() { return blockSize; }

    /** Bytes per block (the element size for the plain element types). */
    public int bytesPerBlock() { return bytesPerBlock; }

    /** Whether Kiln dequantises this type; the data of the others is refused with a {@link dev.kiln.llm.ModelFileException}. */
    public boolean isSupported() { return supported; }

    /** Whether the type packs values in blocks with scales (everything but the plain element types). */
    public boolean isQuantized() { return blockSize > 1; }

    /**
     * Bytes of a row of {@code n} values.
     *
     * @throws IllegalArgumentException if {@code n} is negative, not a multiple of {@link #blockSize()}, or so large
     *                                  that the size overflows a long
     */
    public long rowBytes(long n) {
        if (n < 0 || n % blockSize != 0) {
            throw new IllegalArgumentException(n + " values of " + this + ": expected a non-negative multiple of its block size " + blockSize);
        }
        try {
            return Math.multiplyExact(n / blockSize, (long) bytesPerBlock);
        } catch (ArithmeticException e) {
            throw new IllegalArgumentException(n + " values of " + this + " take more than 2^63 - 1 bytes");
        }
    }

    /**
     * Dequantises {@code count} values stored in this type at the start of {@code src} into {@code dst[dstOffset..]},
     * bit for bit as ggml's reference {@code dequantize_row_*} does (f32 products of the f16 scales). The quantised
     * kernels are tested against this.
     *
     * @throws IllegalArgumentException  if {@code count} is not a multiple of the block size, or {@code src} is shorter
     *                                   than {@link #rowBytes rowBytes(count)}
     * @throws UnsupportedOperationException if the type is not {@linkplain #isSupported() supported}
     * @throws IndexOutOfBoundsException if {@code dst} has fewer than {@code count} elements from {@code dstOffset}
     */
    public void dequantize(MemorySegment src, float[] dst, int dstOffset, int count) {
        Objects.requireNonNull(src);
        Objects.checkFromIndexSize(dstOffset, count, dst.length);
        long bytes = rowBytes(count);
        if (src.byteSize() < bytes) {
            throw new IllegalArgumentException(count + " values of " + this + " take " + bytes + " bytes, the segment has " + src.byteSize());
        }
        if (!supported) throw new UnsupportedOperationException(this + " tensors cannot be dequantised by Kiln");
        Dequantize.row(this, src, dst, dstOffset, count);
    }
}

package dev.kiln.llm.gguf;

/**
 * Dequantisation of ggml's 32-value blocks Q8_0, Q4_0 and Q4_1, exactly as {@code dequantize_row_q8_0} and its
 * siblings in ggml-quants.c: the f16 scale is widened to f32 and each value is one f32 product (plus one f32 sum for
 * Q4_1's minimum), so the results are bit for bit ggml's. Blocks are read from a byte array holding whole blocks;
 * the inner loops are straight-line over 16 or 32 values, which C2 vectorises.
 */
final class LegacyQuants {
    static final int QK = 32;

    private LegacyQuants() {}

    /** An f16 stored little-endian at {@code b[at]}, widened exactly to f32. */
    static float f16(byte[] b, int at) {
        return Float.float16ToFloat((short) ((b[at] & 0xFF) | (b[at + 1] << 8)));
    }

    /** block_q8_0: f16 d, then 32 signed bytes q; x = q * d. */
    static void q8_0(byte[] src, int srcOffset, float[] dst, int dstOffset, int blocks) {
        for (int blk = 0; blk < blocks; blk++) {
            int s = srcOffset + blk * GgmlType.Q8_0.bytesPerBlock(), o = dstOffset + blk * QK;
            float d = f16(src, s);
            for (int j = 0; j < QK; j++) dst[o + j] = src[s + 2 + j] * d;
        }
    }

    /** block_q4_0: f16 d, then 16 bytes; byte j holds value j in its low nibble and value j + 16 in its high one; x = (q - 8) * d. */
    static void q4_0(byte[] src, int srcOffset, float[] dst, int dstOffset, int blocks) {
        for (int blk = 0; blk < blocks; blk++) {
            int s = srcOffset + blk * GgmlType.Q4_0.bytesPerBlock(), o = dstOffset + blk * QK;
            float d = f16(src, s);
            for (int j = 0; j < QK / 2; j++) {
                int q = src[s + 2 + j];
                dst[o + j] = ((q & 0x0F) - 8) * d;
                dst[o + j + QK / 2] = (((q >> 4) & 0x0F) - 8) * d;
            }
        }
    }

    /** block_q4_1: f16 d, f16 m, then 16 bytes of nibbles as in Q4_0; x = q * d + m (the product rounded first, as ggml does). */
    static void q4_1(byte[] src, int srcOffset, float[] dst, int dstOffset, int blocks) {
        for (int blk = 0; blk < blocks; blk++) {
            int s = srcOffset + blk * GgmlType.Q4_1.bytesPerBlock(), o = dstOffset + blk * QK;
            float d = f16(src, s), m = f16(src, s + 2);
            for (int j = 0; j < QK / 2; j++) {
                int q = src[s + 4 + j];
                dst[o + j] = (q & 0x0F) * d + m;
                dst[o + j + QK / 2] = ((q >> 4) & 0x0F) * d + m;
            }
        }
    }
}

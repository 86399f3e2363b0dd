package dev.kiln.llm.gguf;

import static dev.kiln.llm.gguf.LegacyQuants.f16;

/**
 * Dequantisation of ggml's K-quants (super-blocks of {@value #QK_K} values) Q4_K, Q5_K and Q6_K, exactly as
 * {@code dequantize_row_q4_K}, {@code _q5_K} and {@code _q6_K} in ggml-quants.c. Each sub-block's scale is one f32
 * product of the f16 super-block scale and the sub-block's integer scale, and each value one more product (minus one
 * product of the minimum for Q4_K and Q5_K), in ggml's order, so the results are bit for bit ggml's.
 */
final class KQuants {
    static final int QK_K = 256;

    private KQuants() {}

    /**
     * The 6-bit scale of sub-block {@code j} (0..7) of the 12 packed bytes at {@code b[at]} ({@code get_scale_min_k4}):
     * bytes 0-3 hold scales 0-3 in their low 6 bits, bytes 8-11 the low 4 bits of scales 4-7, and the top 2 bits of
     * bytes 0-3 the high 2 bits of scales 4-7.
     */
    static int scale(byte[] b, int at, int j) {
        return j < 4 ? b[at + j] & 0x3F : (b[at + j + 4] & 0x0F) | ((b[at + j - 4] & 0xC0) >> 2);
    }

    /** The 6-bit minimum of sub-block {@code j}: as {@link #scale}, from bytes 4-7, the high nibbles of 8-11 and the top bits of 4-7. */
    static int min(byte[] b, int at, int j) {
        return j < 4 ? b[at + j + 4] & 0x3F : ((b[at + j + 4] >> 4) & 0x0F) | ((b[at + j] & 0xC0) >> 2);
    }

    /**
     * block_q4_K: f16 d, f16 dmin, 12 bytes of scales and mins, 128 bytes qs. Sub-blocks 2i and 2i + 1 (32 values each)
     * are the low and high nibbles of qs[32i..32i+31]; x = (d * scale) * q - (dmin * min).
     */
    static void q4_K(byte[] src, int srcOffset, float[] dst, int dstOffset, int blocks) {
        for (int blk = 0; blk < blocks; blk++) {
            int s = srcOffset + blk * GgmlType.Q4_K.bytesPerBlock(), o = dstOffset + blk * QK_K;
            float d = f16(src, s), dmin = f16(src, s + 2);
            int scales = s + 4, qs = s + 16;
            for (int i = 0; i < 4; i++) {
                float d1 = d * scale(src, scales, 2 * i), m1 = dmin * min(src, scales, 2 * i);
                float d2 = d * scale(src, scales, 2 * i + 1), m2 = dmin * min(src, scales, 2 * i + 1);
                int q = qs + 32 * i, y = o + 64 * i;
                for (int l = 0; l < 32; l++) {
                    dst[y + l] = d1 * (src[q + l] & 0x0F) - m1;
                    dst[y + 32 + l] = d2 * ((src[q + l] >> 4) & 0x0F) - m2;
                }
            }
        }
    }

    /**
     * block_q5_K: f16 d, f16 dmin, 12 bytes of scales and mins, 32 bytes qh, 128 bytes qs. As Q4_K, plus a fifth
     * (value 16) bit: bit k of qh[l] belongs to value l of sub-block k.
     */
    static void q5_K(byte[] src, int srcOffset, float[] dst, int dstOffset, int blocks) {
        for (int blk = 0; blk < blocks; blk++) {
            int s = srcOffset + blk * GgmlType.Q5_K.bytesPerBlock(), o = dstOffset + blk * QK_K;
            float d = f16(src, s), dmin = f16(src, s + 2);
            int scales = s + 4, qh = s + 16, qs = s + 48;
            for (int i = 0; i < 4; i++) {
                float d1 = d * scale(src, scales, 2 * i), m1 = dmin * min(src, scales, 2 * i);
                float d2 = d * scale(src, scales, 2 * i + 1), m2 = dmin * min(src, scales, 2 * i + 1);
                int q = qs + 32 * i, y = o + 64 * i, lowBit = 2 * i, highBit = 2 * i + 1;
                for (int l = 0; l < 32; l++) {
                    int h = src[qh + l];
                    dst[y + l] = d1 * ((src[q + l] & 0x0F) | (((h >> lowBit) & 1) << 4)) - m1;
                    dst[y + 32 + l] = d2 * (((src[q + l] >> 4) & 0x0F) | (((h >> highBit) & 1) << 4)) - m2;
                }
            }
        }
    }

    /**
     * block_q6_K: 128 bytes ql (low 4 bits), 64 bytes qh (high 2 bits), 16 signed scales, f16 d. Each half of 128
     * values reads 64 bytes of ql and 32 of qh: value l + 32k (k = 0..3, l = 0..31) takes the low (k = 0, 1) or high
     * (k = 2, 3) nibble of ql[l + 32 (k % 2)] and bits 2k, 2k + 1 of qh[l]; x = (d * scale[value / 16]) * (q - 32).
     */
    static void q6_K(byte[] src, int srcOffset, float[] dst, int dstOffset, int blocks) {
        float[] ds = new float[QK_K / 16];
        for (int blk = 0; blk < blocks; blk++) {
            int s = srcOffset + blk * GgmlType.Q6_K.bytesPerBlock(), o = dstOffset + blk * QK_K;
            float d = f16(src, s + 208);
            for (int i = 0; i < ds.length; i++) ds[i] = d * src[s + 192 + i];
            for (int half = 0; half < 2; half++) {
                int ql = s + 64 * half, qh = s + 128 + 32 * half, y = o + 128 * half, sub = 8 * half;
                for (int l = 0; l < 32; l++) {
                    int h = src[qh + l], is = sub + l / 16;
                    int q1 = ((src[ql + l] & 0x0F) | ((h & 3) << 4)) - 32;
                    int q2 = ((src[ql + 32 + l] & 0x0F) | (((h >> 2) & 3) << 4)) - 32;
                    int q3 = (((src[ql + l] >> 4) & 0x0F) | (((h >> 4) & 3) << 4)) - 32;
                    int q4 = (((src[ql + 32 + l] >> 4) & 0x0F) | (((h >> 6) & 3) << 4)) - 32;
                    dst[y + l] = ds[is] * q1;
                    dst[y + 32 + l] = ds[is + 2] * q2;
                    dst[y + 64 + l] = ds[is + 4] * q3;
                    dst[y + 96 + l] = ds[is + 6] * q4;
                }
            }
        }
    }
}

package dev.kiln.llm.gguf;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;

/**
 * Converts values of any supported {@link GgmlType} to f32, a row (or any whole number of blocks) at a time. The
 * float types convert element by element (f16 and bf16 widen exactly); the block types copy their bytes into a
 * scratch array first, so that the block loops of {@link LegacyQuants} and {@link KQuants} run over a plain array.
 * Callers have checked the counts and sizes.
 */
final class Dequantize {
    static final ValueLayout.OfFloat F32_LE = ValueLayout.JAVA_FLOAT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    static final ValueLayout.OfShort I16_LE = ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

    private Dequantize() {}

    /** {@code count} values of {@code type} at the start of {@code src} into {@code dst[dstOffset..]}. */
    static void row(GgmlType type, MemorySegment src, float[] dst, int dstOffset, int count) {
        switch (type) {
            case F32 -> MemorySegment.copy(src, F32_LE, 0, dst, dstOffset, count);
            case F16 -> {
                for (int i = 0; i < count; i++) dst[dstOffset + i] = Float.float16ToFloat(src.get(I16_LE, 2L * i));
            }
            // bf16 is the top half of an f32
            case BF16 -> {
                for (int i = 0; i < count; i++) dst[dstOffset + i] = Float.intBitsToFloat(src.get(I16_LE, 2L * i) << 16);
            }
            default -> blocks(type, src, dst, dstOffset, count);
        }
    }

    private static void blocks(GgmlType type, MemorySegment src, float[] dst, int dstOffset, int count) {
        int blocks = count / type.blockSize();
        // count <= Integer.MAX_VALUE values take fewer bytes than that in every block type (at most 34 bytes per 32 values
        // for Q8_0), but Q8_0 rows above 2^31 * 32 / 34 values would not fit one array: copy a bounded chunk at a time
        int chunk = Math.max(1, Math.min(blocks, (1 << 20) / type.bytesPerBlock()));
        byte[] scratch = new byte[chunk * type.bytesPerBlock()];
        for (int first = 0; first < blocks; first += chunk) {
            int n = Math.min(chunk, blocks - first);
            MemorySegment.copy(src, ValueLayout.JAVA_BYTE, (long) first * type.bytesPerBlock(), scratch, 0, n * type.bytesPerBlock());
            int out = dstOffset + first * type.blockSize();
            switch (type) {
                case Q8_0 -> LegacyQuants.q8_0(scratch, 0, dst, out, n);
                case Q4_0 -> LegacyQuants.q4_0(scratch, 0, dst, out, n);
                case Q4_1 -> LegacyQuants.q4_1(scratch, 0, dst, out, n);
                case Q4_K -> KQuants.q4_K(scratch, 0, dst, out, n);
                case Q5_K -> KQuants.q5_K(scratch, 0, dst, out, n);
                case Q6_K -> KQuants.q6_K(scratch, 0, dst, out, n);
                default -> throw new UnsupportedOperationException(type + " tensors cannot be dequantised by Kiln");
            }
        }
    }
}

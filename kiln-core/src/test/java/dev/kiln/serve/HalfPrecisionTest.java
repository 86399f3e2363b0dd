package dev.kiln.serve;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.io.InputStream;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;
import java.util.function.IntFunction;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * f16 and bf16 conversions of {@link DTypeCodec} (the kernels' own) are exact for all 65,536 bit patterns:
 * against NumPy (digests in {@code serve/half_reference.json}, made by {@code tools/golden/gen_serve_half.py})
 * and against decoders written here from the format definitions.
 */
class HalfPrecisionTest {
    private static final int CANON_NAN = 0x7FC00000;
    private static JsonNode ref;

    @BeforeAll
    static void load() throws IOException {
        try (InputStream in = HalfPrecisionTest.class.getResourceAsStream("/serve/half_reference.json")) {
            ref = new ObjectMapper().readTree(in);
        }
    }

    private static String sha256(ByteBuffer b) {
        try {
            return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(b.array()));
        } catch (NoSuchAlgorithmException e) {
            throw new AssertionError(e);
        }
    }

    private static int canonBits(float f) { return Float.isNaN(f) ? CANON_NAN : Float.floatToRawIntBits(f); }

    /** f16 by its definition: sign, 5 exponent bits (bias 15), 10 fraction bits. */
    private static float f16ByDefinition(int p) {
        int sign = (p >> 15) & 1, exp = (p >> 10) & 0x1F, frac = p & 0x3FF;
        double mag = exp == 0 ? Math.scalb((double) frac, -24)
                : exp == 31 ? (frac == 0 ? Double.POSITIVE_INFINITY : Double.NaN)
                : Math.scalb((double) (1024 + frac), exp - 25);
        return (float) (sign == 1 ? -mag : mag);
    }

    /** bf16 by its definition: sign, 8 exponent bits (bias 127), 7 fraction bits. */
    private static float bf16ByDefinition(int p) {
        int sign = (p >> 15) & 1, exp = (p >> 7) & 0xFF, frac = p & 0x7F;
        double mag = exp == 0 ? Math.scalb((double) frac, -133)
                : exp == 255 ? (frac == 0 ? Double.POSITIVE_INFINITY : Double.NaN)
                : Math.scalb((double) (128 + frac), exp - 134);
        return (float) (sign == 1 ? -mag : mag);
    }

    @Test
    void decodingEveryPatternMatchesTheDefinitionAndNumPy() {
        ByteBuffer f16 = ByteBuffer.allocate(65536 * 4).order(ByteOrder.LITTLE_ENDIAN);
        ByteBuffer bf16 = ByteBuffer.allocate(65536 * 4).order(ByteOrder.LITTLE_ENDIAN);
        for (int p = 0; p < 65536; p++) {
            float a = DTypeCodec.f16ToFloat((short) p), b = DTypeCodec.bf16ToFloat((short) p);
            assertThat(canonBits(a)).as("f16 pattern %04x", p).isEqualTo(canonBits(f16ByDefinition(p)));
            assertThat(canonBits(b)).as("bf16 pattern %04x", p).isEqualTo(canonBits(bf16ByDefinition(p)));
            f16.putInt(canonBits(a));
            bf16.putInt(canonBits(b));
        }
        assertThat(sha256(f16)).isEqualTo(ref.get("f16_decode").asText());
        assertThat(sha256(bf16)).isEqualTo(ref.get("bf16_decode").asText());
        ref.get("spots").get("f16_decode").properties().forEach(e ->
                assertThat(DTypeCodec.f16ToFloat((short) Integer.parseInt(e.getKey()))).isEqualTo((float) e.getValue().asDouble()));
    }

    @Test
    void everyPatternRoundTrips() {
        for (int p = 0; p < 65536; p++) {
            float f = DTypeCodec.f16ToFloat((short) p), b = DTypeCodec.bf16ToFloat((short) p);
            if (Float.isNaN(f)) assertThat(Float.isNaN(DTypeCodec.f16ToFloat(DTypeCodec.floatToF16(f)))).as("f16 NaN %04x", p).isTrue();
            else assertThat(DTypeCodec.floatToF16(f) & 0xFFFF).as("f16 pattern %04x", p).isEqualTo(p);
            if (Float.isNaN(b)) assertThat(Float.isNaN(DTypeCodec.bf16ToFloat(DTypeCodec.floatToBf16(b)))).as("bf16 NaN %04x", p).isTrue();
            else assertThat(DTypeCodec.floatToBf16(b) & 0xFFFF).as("bf16 pattern %04x", p).isEqualTo(p);
        }
    }

    /** Probes as the generator makes them: each value, the midpoint to its successor and the midpoint's neighbours. */
    private static float[] probes(IntFunction<Float> decode) {
        float[] out = new float[4 * 65536];
        int n = 0;
        for (int p = 0; p < 65536; p++) {
            float v = decode.apply(p), w = decode.apply((p + 1) & 0xFFFF);
            if (!Float.isFinite(v) || !Float.isFinite(w) || (p & 0x7FFF) == 0x7FFF) continue;
            float mid = (float) (((double) v + w) / 2);
            out[n++] = v;
            out[n++] = mid;
            out[n++] = Math.nextAfter(mid, v);
            out[n++] = Math.nextAfter(mid, w);
        }
        return java.util.Arrays.copyOf(out, n);
    }

    @Test
    void roundingToNearestEvenMatchesNumPyAtEveryTie() {
        float[] p16 = probes(p -> DTypeCodec.f16ToFloat((short) (int) p));
        float[] pb = probes(p -> DTypeCodec.bf16ToFloat((short) (int) p));
        assertThat(p16).hasSize(ref.get("f16_encode").get("probes").asInt());
        assertThat(pb).hasSize(ref.get("bf16_encode").get("probes").asInt());
        ByteBuffer e16 = ByteBuffer.allocate(p16.length * 2).order(ByteOrder.LITTLE_ENDIAN);
        for (float v : p16) e16.putShort(DTypeCodec.floatToF16(v));
        ByteBuffer eb = ByteBuffer.allocate(pb.length * 2).order(ByteOrder.LITTLE_ENDIAN);
        for (float v : pb) eb.putShort(DTypeCodec.floatToBf16(v));
        assertThat(sha256(e16)).isEqualTo(ref.get("f16_encode").get("digest").asText());
        assertThat(sha256(eb)).isEqualTo(ref.get("bf16_encode").get("digest").asText());
        ref.get("spots").get("f16_encode").properties().forEach(e ->
                assertThat(DTypeCodec.floatToF16((float) Double.parseDouble(e.getKey())) & 0xFFFF).as(e.getKey()).isEqualTo(e.getValue().asInt()));
    }
}

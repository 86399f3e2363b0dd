package dev.kiln.serve;

import dev.kiln.types.DType;
import dev.kiln.Tensor;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.List;
import java.util.Map;

import static dev.kiln.serve.ServeFixtures.data;
import static dev.kiln.serve.ServeFixtures.session;
import static org.assertj.core.api.Assertions.assertThat;

/** Typed runs and parameters: bytes of every dtype round-trip exactly; packed weights dequantise as GGML does. */
class TypedIoTest {
    private static final List<DType> DTYPES = List.of(DType.F16, DType.BF16, DType.I8, DType.I32, DType.I64, DType.F64, DType.F32, DType.U8);
    private static final int N = 40;

    /** N values of {@code dtype} as little-endian bytes, spanning the dtype's range (not only what a float holds). */
    private static byte[] bytesOf(DType dtype, int seed) {
        ByteBuffer b = ByteBuffer.allocate((int) dtype.byteSize(N)).order(ByteOrder.LITTLE_ENDIAN);
        for (int i = 0; i < N; i++) {
            long k = (long) seed * 7919 + i * 104729L;
            switch (dtype) {
                case I8, U8 -> b.put((byte) (k * 37));
                case I32 -> b.putInt((int) (k * 2654435761L));
                case I64 -> b.putLong(i % 5 == 0 ? Long.MAX_VALUE - k : k * 0x9E3779B97F4A7C15L);
                case F16 -> b.putShort(DTypeCodec.floatToF16((i - 20) / 8f + seed));
                case BF16 -> b.putShort(DTypeCodec.floatToBf16((i - 20) / 8f + seed));
                case F32 -> b.putFloat((float) Math.sin(k));
                case F64 -> b.putDouble(Math.sin(k) * 1e-3 + 1.0 / 3);
                default -> throw new AssertionError(dtype);
            }
        }
        return b.array();
    }

    @ParameterizedTest
    @ValueSource(strings = {"INTERP", "CPU", "CLANG"})
    void everyDtypeRoundTripsThroughInputsParamsAndOutputs(String device) {
        Session s = session(device);
        for (DType dt : DTYPES) {
            Graph g = new Graph();
            Tensor x = g.input("x", dt, N);
            Tensor p = g.param("p", dt, N);
            g.outputs(x, p, x.add(p));
            try (CompiledGraph c = s.compile(g)) {
                byte[] pb = bytesOf(dt, 2), xb = bytesOf(dt, 1);
                c.setParamTyped("p", pb, dt);
                List<TypedValues> out = c.runTyped(Map.of("x", new TypedValues(dt, xb)));
                assertThat(out).extracting(TypedValues::dtype).containsOnly(dt);
                assertThat(out.get(0).bytes()).as(dt + " input").isEqualTo(xb);
                assertThat(out.get(1).bytes()).as(dt + " param").isEqualTo(pb);
                // the sum in dt: the exact sum (all test values add exactly in double) converted to dt
                float[] xs = DTypeCodec.toFloats(xb, dt), ps = DTypeCodec.toFloats(pb, dt);
                if (dt.isFloat()) {
                    float[] sum = new float[N];
                    for (int i = 0; i < N; i++) sum[i] = (float) ((double) xs[i] + ps[i]);
                    if (dt != DType.F64) assertThat(out.get(2).toFloats()).as(dt + " sum").containsExactly(DTypeCodec.toFloats(DTypeCodec.fromFloats(sum, dt), dt));
                } else {
                    ByteBuffer xl = ByteBuffer.wrap(xb).order(ByteOrder.LITTLE_ENDIAN), pl = ByteBuffer.wrap(pb).order(ByteOrder.LITTLE_ENDIAN);
                    ByteBuffer ol = ByteBuffer.wrap(out.get(2).bytes()).order(ByteOrder.LITTLE_ENDIAN);
                    for (int i = 0; i < N; i++) {
                        long expected = switch (dt) {
                            case I8 -> (byte) (xl.get(i) + pl.get(i));
                            case U8 -> (xl.get(i) + pl.get(i)) & 0xFF;
                            case I32 -> xl.getInt(i * 4) + pl.getInt(i * 4);
                            default -> xl.getLong(i * 8) + pl.getLong(i * 8);
                        };
                        long got = switch (dt) {
                            case I8 -> ol.get(i);
                            case U8 -> ol.get(i) & 0xFF;
                            case I32 -> ol.getInt(i * 4);
                            default -> ol.getLong(i * 8);
                        };
                        assertThat(got).as(dt + " sum element " + i + " wraps").isEqualTo(expected);
                    }
                }
                // a segment gives the same bytes as an array
                c.setParamTyped("p", java.lang.foreign.MemorySegment.ofArray(xb), dt);
                assertThat(c.runTyped(Map.of("x", new TypedValues(dt, xb))).get(1).bytes()).isEqualTo(xb);
            }
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"INTERP", "CPU", "CLANG"})
    void floatRunsCastToTheDeclaredDtype(String device) {
        Graph g = new Graph();
        Tensor h = g.input("h", DType.F16, 4);
        Tensor i = g.input("i", DType.I32, 4);
        g.outputs(h, i);
        try (CompiledGraph c = session(device).compile(g)) {
            List<float[]> out = c.run(Map.of("h", new float[] {1.0004883f, 65519f, 65520f, -0f}, "i", new float[] {2.9f, -2.9f, Float.NaN, 1e3f}));
            assertThat(out.get(0)).containsExactly(1f, 65504f, Float.POSITIVE_INFINITY, -0f);
            assertThat(out.get(1)).containsExactly(2, -2, 0, 1000);
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"INTERP", "CPU", "CLANG"})
    void packedWeightsDequantiseIntoFloatParams(String device) {
        Graph g = new Graph();
        Tensor w = g.param("w", DType.F32, 2, 64);
        Tensor h = g.param("h", DType.F16, 2, 64);
        Tensor x = g.input("x", DType.F32, 64);
        g.outputs(w, h, w.matmul(x));
        float[] values = data(128, 42);
        try (CompiledGraph c = session(device).compile(g)) {
            for (DType q : List.of(DType.Q8_0, DType.Q4_0)) {
                byte[] packed = DTypeCodec.fromFloats(values, q);
                assertThat(packed).hasSize(4 * q.itemSize());
                c.setParamTyped("w", packed, q);
                c.setParamTyped("h", packed, q);
                List<float[]> out = c.run(Map.of("x", data(64, 1)));
                float[] deq = DTypeCodec.toFloats(packed, q);
                assertThat(out.get(0)).as(q + " into f32").containsExactly(deq);
                float[] deqHalf = DTypeCodec.toFloats(DTypeCodec.fromFloats(deq, DType.F16), DType.F16);
                assertThat(out.get(1)).as(q + " into f16").containsExactly(deqHalf);
                for (int b = 0; b < 4; b++) { // the quantisation error is within half a step of the block's scale
                    float amax = 0;
                    for (int j = 0; j < 32; j++) amax = Math.max(amax, Math.abs(values[b * 32 + j]));
                    float step = q == DType.Q8_0 ? amax / 127 : amax / 8;
                    for (int j = 0; j < 32; j++) {
                        int k = b * 32 + j;
                        assertThat(Math.abs(deq[k] - values[k])).as(q + " value " + k).isLessThanOrEqualTo(step * (q == DType.Q8_0 ? 0.51f : 1.01f));
                    }
                }
            }
        }
    }

    @Test
    void blockLayoutsAreGgmls() {
        // Q8_0: f16 scale 0.5 (0x3800), q[j] = j - 16
        ByteBuffer q8 = ByteBuffer.allocate(34).order(ByteOrder.LITTLE_ENDIAN).putShort((short) 0x3800);
        for (int j = 0; j < 32; j++) q8.put((byte) (j - 16));
        float[] v8 = DTypeCodec.toFloats(q8.array(), DType.Q8_0);
        for (int j = 0; j < 32; j++) assertThat(v8[j]).isEqualTo((j - 16) * 0.5f);
        // Q4_0: f16 scale 0.25 (0x3400); byte j: value j in the low nibble (j), value j + 16 in the high nibble (15 - j)
        ByteBuffer q4 = ByteBuffer.allocate(18).order(ByteOrder.LITTLE_ENDIAN).putShort((short) 0x3400);
        for (int j = 0; j < 16; j++) q4.put((byte) (j | ((15 - j) << 4)));
        float[] v4 = DTypeCodec.toFloats(q4.array(), DType.Q4_0);
        for (int j = 0; j < 16; j++) {
            assertThat(v4[j]).isEqualTo((j - 8) * 0.25f);
            assertThat(v4[j + 16]).isEqualTo((15 - j - 8) * 0.25f);
        }
        // quantising GGML's way: Q8_0 maps the largest magnitude to +-127, Q4_0 maps the largest-magnitude value to -8
        float[] ramp = new float[32];
        for (int j = 0; j < 32; j++) ramp[j] = j - 16; // -16 .. 15
        byte[] r8 = DTypeCodec.fromFloats(ramp, DType.Q8_0);
        assertThat(DTypeCodec.f16ToFloat(ByteBuffer.wrap(r8).order(ByteOrder.LITTLE_ENDIAN).getShort(0))).isEqualTo(DTypeCodec.f16ToFloat(DTypeCodec.floatToF16(16f / 127)));
        assertThat(r8[2]).isEqualTo((byte) -127);
        assertThat(r8[2 + 16]).isEqualTo((byte) 0);
        byte[] r4 = DTypeCodec.fromFloats(ramp, DType.Q4_0);
        assertThat(DTypeCodec.f16ToFloat(ByteBuffer.wrap(r4).order(ByteOrder.LITTLE_ENDIAN).getShort(0))).isEqualTo(2f); // -16 / -8
        assertThat(r4[2] & 0x0F).as("-16 -> nibble 0").isEqualTo(0);
        assertThat((r4[2 + 15] >> 4) & 0x0F).as("15 -> 15/2 + 8.5 = 16 -> clamped 15").isEqualTo(15);
        // an all-zero block has scale 0 / -8 = -0 in GGML too: every value is a zero
        for (float v : DTypeCodec.toFloats(DTypeCodec.fromFloats(new float[32], DType.Q4_0), DType.Q4_0)) assertThat(v == 0).isTrue();
    }
}

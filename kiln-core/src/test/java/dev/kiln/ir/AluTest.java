package dev.kiln.ir;

import dev.kiln.types.DType;
import org.junit.jupiter.api.Test;

import java.math.BigInteger;
import java.util.Random;

import static org.assertj.core.api.Assertions.assertThat;

class AluTest {

    // ---------------------------------------------------------------- f16 and bf16

    @Test
    void f16RoundingOfFloatsMatchesTheJdk() {
        Random rnd = new Random(1);
        for (int k = 0; k < 200_000; k++) {
            float x = k < 100_000 ? Float.intBitsToFloat(rnd.nextInt()) : (float) (rnd.nextGaussian() * 1000);
            double expect = Float.float16ToFloat(Float.floatToFloat16(x));
            assertThat(Alu.round(DType.F16, x)).as("bits %08x", Float.floatToRawIntBits(x)).isEqualTo(Double.valueOf(expect));
        }
        for (float x : new float[] {0f, -0f, 65504f, 65520f, 65519.996f, 5.9604645e-8f, 2.980232e-8f, Float.NaN, Float.POSITIVE_INFINITY}) {
            assertThat(Alu.round(DType.F16, x)).isEqualTo(Double.valueOf(Float.float16ToFloat(Float.floatToFloat16(x))));
        }
    }

    @Test
    void everyBf16BitPatternSurvivesARoundTrip() {
        for (int b = 0; b < 1 << 16; b++) {
            float f = Alu.bf16ToFloat((short) b);
            short back = Alu.floatToBf16(f);
            if (Float.isNaN(f)) assertThat(Float.isNaN(Alu.bf16ToFloat(back))).as("bits %04x", b).isTrue();
            else assertThat(back & 0xFFFF).as("bits %04x", b).isEqualTo(b);
            assertThat(Alu.round(DType.BF16, f)).isEqualTo((double) f, org.assertj.core.api.Assertions.within(0.0));
        }
    }

    @Test
    void bf16RoundsTiesToEven() {
        float ulp = 0x1p-7f; // of bf16 in [1, 2)
        assertThat(Alu.round(DType.BF16, 1 + ulp / 2)).isEqualTo(1.0); // tie, 1.0 is even
        assertThat(Alu.round(DType.BF16, 1 + 3 * ulp / 2)).isEqualTo(1 + 2.0 * ulp); // tie, 1 + 2 ulp is even
        assertThat(Alu.round(DType.BF16, -(1 + ulp / 2))).isEqualTo(-1.0);
        assertThat(Alu.round(DType.BF16, Math.nextUp(1 + ulp / 2))).isEqualTo(1.0 + ulp);
        assertThat(Alu.round(DType.BF16, Math.nextDown(1 + 3 * ulp / 2))).isEqualTo(1.0 + ulp);
        assertThat(Alu.round(DType.BF16, 3.3961776e38f)).isEqualTo(Double.POSITIVE_INFINITY); // max + half ulp
        assertThat(Alu.round(DType.BF16, Math.nextDown(3.3961776e38f))).isEqualTo((double) 3.3895314e38f);
    }

    @Test
    void doublesRoundOnceToHalfPrecision() {
        // (float) first would land exactly on the tie and then round to even; the true value lies above it
        assertThat(Alu.round(DType.F16, 1 + 0x1p-11 + 0x1p-40)).isEqualTo(1 + 0x1p-10);
        assertThat(Alu.round(DType.BF16, 1 + 0x1p-8 + 0x1p-40)).isEqualTo(1 + 0x1p-7);
        assertThat(Alu.round(DType.BF16, -(1 + 0x1p-8 + 0x1p-40))).isEqualTo(-(1 + 0x1p-7));
        assertThat(Alu.floatBits(DType.F16, 1 + 0x1p-11 + 0x1p-40)).isEqualTo(Float.floatToFloat16(1 + 0x1p-10f) & 0xFFFFL);
        Random rnd = new Random(2);
        for (DType dt : new DType[] {DType.F16, DType.BF16}) {
            for (int k = 0; k < 100_000; k++) {
                // values near the midpoint of two neighbours, where double rounding goes wrong
                int bits = rnd.nextInt(dt == DType.F16 ? 0x7BFF : 0x7F7F); // both neighbours finite
                double a = Alu.floatFromBits(dt, bits), b = Alu.floatFromBits(dt, bits + 1);
                double v = (a + b) / 2 + (rnd.nextInt(3) - 1) * Math.ulp((a + b) / 2) * (1 + rnd.nextInt(1 << 20));
                if (rnd.nextBoolean()) v = -v;
                assertThat(Alu.round(dt, v)).as("%s of %s", dt, v).isEqualTo(Double.valueOf(referenceRound(dt, v)));
            }
        }
    }

    @Test
    void largeIntegersRoundOnceToHalfPrecision() {
        long v = (1L << 60) + (1L << 52) + 1; // just above the bf16 tie between 2^60 and 2^60 + 2^53
        assertThat(Alu.castIntToFloat(DType.I64, DType.BF16, v)).isEqualTo(0x1p60 + 0x1p53);
        assertThat(Alu.castIntToFloat(DType.I64, DType.BF16, -v)).isEqualTo(-(0x1p60 + 0x1p53));
        assertThat(Alu.castIntToFloat(DType.U64, DType.BF16, Long.MIN_VALUE | (1L << 55) | 1)).isEqualTo(0x1p63 + 0x1p56);
        assertThat(Alu.castIntToFloat(DType.U64, DType.BF16, Long.MIN_VALUE | (1L << 55))).isEqualTo(0x1p63); // tie to even
        assertThat(Alu.castIntToFloat(DType.I64, DType.BF16, Long.MIN_VALUE)).isEqualTo(-0x1p63);
        assertThat(Alu.castIntToFloat(DType.I32, DType.F16, 65519)).isEqualTo(65504.0);
        assertThat(Alu.castIntToFloat(DType.I32, DType.F16, 65520)).isEqualTo(Double.POSITIVE_INFINITY);
        Random rnd = new Random(3);
        for (int k = 0; k < 100_000; k++) {
            long x = rnd.nextLong() >> rnd.nextInt(64);
            assertThat(Alu.castIntToFloat(DType.I64, DType.BF16, x)).as("%d", x).isEqualTo(referenceRound(DType.BF16, x));
            assertThat(Alu.castIntToFloat(DType.I64, DType.F32, x)).isEqualTo((double) (float) x);
            assertThat(Alu.castIntToFloat(DType.U64, DType.F64, x)).isEqualTo(new BigInteger(Long.toUnsignedString(x)).doubleValue());
        }
    }

    /** Round to nearest even by comparison with the exact midpoint of the two neighbouring values. */
    private static double referenceRound(DType dt, double v) {
        if (Double.isNaN(v)) return v;
        int maxBits = dt == DType.F16 ? 0x7BFF : 0x7F7F;
        double a = Math.abs(v);
        int lo = 0, hi = maxBits; // largest bits whose value is <= a
        while (lo < hi) {
            int mid = (lo + hi + 1) >>> 1;
            if (Alu.floatFromBits(dt, mid) <= a) lo = mid;
            else hi = mid - 1;
        }
        double below = Alu.floatFromBits(dt, lo);
        double above = lo == maxBits ? below + Math.ulp((float) below) * (dt == DType.F16 ? 8192 : 65536) : Alu.floatFromBits(dt, lo + 1);
        double mid = (below + above) / 2;
        double r = a < mid ? below : a > mid ? above : (lo & 1) == 0 ? below : above;
        if (lo == maxBits && r == above) r = Double.POSITIVE_INFINITY;
        return Math.copySign(r, v);
    }

    @Test
    void referenceRoundIsSane() {
        assertThat(referenceRound(DType.F16, 65504)).isEqualTo(65504);
        assertThat(referenceRound(DType.F16, 65519.99)).isEqualTo(65504);
        assertThat(referenceRound(DType.F16, 65520)).isEqualTo(Double.POSITIVE_INFINITY);
        assertThat(referenceRound(DType.BF16, 1 + 0x1p-8)).isEqualTo(1);
    }

    // ---------------------------------------------------------------- integers

    @Test
    void integerArithmeticWraps() {
        assertThat(Alu.binary(Op.ADD, DType.I8, 127, 1)).isEqualTo(-128);
        assertThat(Alu.binary(Op.ADD, DType.U8, 255, 1)).isZero();
        assertThat(Alu.binary(Op.MUL, DType.I32, 65536, 65536)).isZero();
        assertThat(Alu.binary(Op.MUL, DType.I16, 300, 300)).isEqualTo((short) 90000);
        assertThat(Alu.binary(Op.ADD, DType.I64, Long.MAX_VALUE, 1)).isEqualTo(Long.MIN_VALUE);
        assertThat(Alu.unary(Op.NEG, DType.I8, -128)).isEqualTo(-128);
        assertThat(Alu.unary(Op.NEG, DType.U32, 1)).isEqualTo(0xFFFF_FFFFL);
        assertThat(Alu.wrap(DType.U16, -1)).isEqualTo(0xFFFF);
        assertThat(Alu.wrap(DType.BOOL, 42)).isEqualTo(1);
    }

    @Test
    void divisionByZeroIsZero() {
        for (Op op : new Op[] {Op.DIV, Op.MOD, Op.FLOORDIV, Op.FLOORMOD}) {
            for (DType dt : new DType[] {DType.I8, DType.I32, DType.I64, DType.U32, DType.U64}) {
                assertThat(Alu.binary(op, dt, 7, 0)).as("%s %s", op, dt).isZero();
            }
        }
        assertThat(Alu.binary(Op.DIV, DType.F32, 1.0, 0.0)).isEqualTo(Double.POSITIVE_INFINITY);
    }

    @Test
    void truncatingAndFlooringDivision() {
        assertThat(Alu.binary(Op.DIV, DType.I32, -7, 2)).isEqualTo(-3);
        assertThat(Alu.binary(Op.MOD, DType.I32, -7, 2)).isEqualTo(-1);
        assertThat(Alu.binary(Op.FLOORDIV, DType.I32, -7, 2)).isEqualTo(-4);
        assertThat(Alu.binary(Op.FLOORMOD, DType.I32, -7, 2)).isEqualTo(1);
        assertThat(Alu.binary(Op.FLOORMOD, DType.I32, 7, -2)).isEqualTo(-1);
        assertThat(Alu.binary(Op.DIV, DType.I32, Integer.MIN_VALUE, -1)).isEqualTo(Integer.MIN_VALUE); // wraps
        assertThat(Alu.binary(Op.FLOORMOD, DType.F32, -7.5, 2)).isEqualTo(0.5);
        assertThat(Alu.binary(Op.MOD, DType.F32, -7.5, 2)).isEqualTo(-1.5);
    }

    @Test
    void shiftsByTheWidthOrMore() {
        assertThat(Alu.binary(Op.SHL, DType.I32, 1, 31)).isEqualTo(Integer.MIN_VALUE);
        assertThat(Alu.binary(Op.SHL, DType.I32, 1, 32)).isZero();
        assertThat(Alu.binary(Op.SHL, DType.I8, 1, 7)).isEqualTo(-128);
        assertThat(Alu.binary(Op.SHL, DType.I8, 1, 8)).isZero();
        assertThat(Alu.binary(Op.SHL, DType.I64, 1, 64)).isZero();
        assertThat(Alu.binary(Op.SHR, DType.I32, -8, 40)).isEqualTo(-1);
        assertThat(Alu.binary(Op.SHR, DType.I32, 8, 40)).isZero();
        assertThat(Alu.binary(Op.SHR, DType.U32, 0xFFFF_FFFFL, 32)).isZero();
        assertThat(Alu.binary(Op.SHR, DType.U32, 0xFFFF_FFFFL, 31)).isEqualTo(1);
        assertThat(Alu.binary(Op.SHR, DType.U64, -1, 63)).isEqualTo(1);
        assertThat(Alu.binary(Op.SHR, DType.I64, -1, 63)).isEqualTo(-1);
        assertThat(Alu.binary(Op.SHL, DType.I32, 1, -1)).isZero();
    }

    @Test
    void u64ComparesAndDividesUnsigned() {
        long max = -1; // 2^64 - 1
        assertThat(Alu.binary(Op.CMPLT, DType.U64, 1, max)).isEqualTo(1);
        assertThat(Alu.binary(Op.CMPLT, DType.U64, max, 1)).isZero();
        assertThat(Alu.binary(Op.CMPLT, DType.I64, max, 1)).isEqualTo(1);
        assertThat(Alu.binary(Op.MAX, DType.U64, max, 1)).isEqualTo(max);
        assertThat(Alu.binary(Op.DIV, DType.U64, max, 2)).isEqualTo(Long.MAX_VALUE);
        assertThat(Alu.binary(Op.MOD, DType.U64, max, 10)).isEqualTo(5); // 18446744073709551615 % 10
        assertThat(Alu.binary(Op.FLOORDIV, DType.U64, Long.MIN_VALUE, 3)).isEqualTo(Long.divideUnsigned(Long.MIN_VALUE, 3));
        assertThat(Alu.binary(Op.CMPLT, DType.U32, 0xFFFF_FFFFL, 0)).isZero();
    }

    // ---------------------------------------------------------------- casts

    @Test
    void floatToIntCasts() {
        for (DType dt : new DType[] {DType.I8, DType.U8, DType.I32, DType.U32, DType.I64, DType.U64}) {
            assertThat(Alu.castFloatToInt(dt, Double.NaN)).as(dt.toString()).isZero();
        }
        assertThat(Alu.castFloatToInt(DType.BOOL, Double.NaN)).isEqualTo(1);
        assertThat(Alu.castFloatToInt(DType.BOOL, -0.0)).isZero();
        assertThat(Alu.castFloatToInt(DType.I32, -1.7)).isEqualTo(-1);
        assertThat(Alu.castFloatToInt(DType.I32, 2.9)).isEqualTo(2);
        assertThat(Alu.castFloatToInt(DType.I8, 300.0)).isEqualTo(44); // truncates, then wraps
        assertThat(Alu.castFloatToInt(DType.U64, 0x1p63)).isEqualTo(Long.MIN_VALUE);
        assertThat(Alu.castFloatToInt(DType.U64, 0x1.8p63)).isEqualTo(0xC000_0000_0000_0000L);
        assertThat(Alu.castFloatToInt(DType.I64, 1e300)).isEqualTo(Long.MAX_VALUE);
    }

    @Test
    void intToFloatCasts() {
        assertThat(Alu.castIntToFloat(DType.U64, DType.F32, -1)).isEqualTo(0x1p64);
        assertThat(Alu.castIntToFloat(DType.U64, DType.F64, -1)).isEqualTo(0x1p64);
        assertThat(Alu.castIntToFloat(DType.I64, DType.F32, (1L << 24) + 1)).isEqualTo(0x1p24);
        assertThat(Alu.castIntToFloat(DType.I64, DType.F64, (1L << 53) + 1)).isEqualTo(0x1p53);
        assertThat(Alu.castIntToFloat(DType.I32, DType.F16, 2049)).isEqualTo(2048.0);
        assertThat(Alu.castIntToFloat(DType.I32, DType.F16, 2051)).isEqualTo(2052.0);
        assertThat(Alu.castIntToFloat(DType.BOOL, DType.F32, 1)).isEqualTo(1.0);
    }

    @Test
    void bitcastsRoundTrip() {
        assertThat(Alu.floatBits(DType.F32, 1.0)).isEqualTo(0x3F80_0000L);
        assertThat(Alu.floatBits(DType.BF16, 1.0)).isEqualTo(0x3F80L);
        assertThat(Alu.floatBits(DType.F16, -2.0)).isEqualTo(0xC000L);
        assertThat(Alu.floatFromBits(DType.F16, 0x7C00)).isEqualTo(Double.POSITIVE_INFINITY);
        assertThat(Alu.floatFromBits(DType.F64, Double.doubleToRawLongBits(-0.0))).isEqualTo(-0.0);
    }
}

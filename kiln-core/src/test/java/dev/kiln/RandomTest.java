package dev.kiln;

import dev.kiln.types.DType;
import dev.kiln.ir.Alu;
import org.junit.jupiter.api.Test;

import java.util.Arrays;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class RandomTest {
    private static final int N = 100_000;

    // ---------------------------------------------------------------- Threefry known answers

    /** Words (w0, w1) as one u64 with word 0 in the low 32 bits, as Alu.threefry2x32 takes them. */
    private static long words(long w0, long w1) { return (w1 << 32) | (w0 & 0xFFFF_FFFFL); }

    @Test
    void threefryMatchesRandom123KnownAnswers() {
        // kat_vectors of Random123: threefry2x32 20 rounds, ctr, key -> out
        assertThat(Alu.threefry2x32(words(0, 0), words(0, 0))).isEqualTo(words(0x6b200159L, 0x99ba4efeL));
        assertThat(Alu.threefry2x32(words(0xffffffffL, 0xffffffffL), words(0xffffffffL, 0xffffffffL)))
                .isEqualTo(words(0x1cb996fcL, 0xbb002be7L));
        assertThat(Alu.threefry2x32(words(0x243f6a88L, 0x85a308d3L), words(0x13198a2eL, 0x03707344L)))
                .isEqualTo(words(0xc4923a9cL, 0x483df7a0L));
    }

    @Test
    void randomWordsAreThreefryOfIndexAndSeed() {
        long seed = 0x1234_5678_9abc_def0L;
        double[] got = Tensor.rand(seed, DType.F64, 3, 5).toDoubleArray();
        for (int i = 0; i < got.length; i++) {
            assertThat(got[i]).isEqualTo((Alu.threefry2x32(i, seed) >>> 11) * 0x1p-53);
        }
    }

    // ---------------------------------------------------------------- determinism

    @Test
    void sameSeedAndShapeGiveSameNumbers() {
        assertThat(Tensor.rand(7, 4, 5).toFloatArray()).containsExactly(Tensor.rand(7, 4, 5).toFloatArray());
        assertThat(Tensor.randn(7, 33).toFloatArray()).containsExactly(Tensor.randn(7, 33).toFloatArray());
        assertThat(Tensor.randint(7, -3, 9, 2, 8).toIntArray()).containsExactly(Tensor.randint(7, -3, 9, 2, 8).toIntArray());
        assertThat(Tensor.bernoulli(7, 0.5, 40).toBooleanArray()).containsExactly(Tensor.bernoulli(7, 0.5, 40).toBooleanArray());
    }

    @Test
    void differentSeedsGiveDifferentNumbers() {
        float[] a = Tensor.rand(1, 64).toFloatArray(), b = Tensor.rand(2, 64).toFloatArray();
        int same = 0;
        for (int i = 0; i < a.length; i++) if (a[i] == b[i]) same++;
        assertThat(same).isLessThan(2);
        assertThat(Tensor.randn(1, 16).toFloatArray()).isNotEqualTo(Tensor.randn(2, 16).toFloatArray());
    }

    @Test
    void streamDependsOnlyOnSeedAndFlatIndex() {
        float[] flat = Tensor.rand(3, 24).toFloatArray();
        assertThat(Tensor.rand(3, 2, 3, 4).toFloatArray()).containsExactly(flat);
        assertThat(Tensor.rand(3, 10).toFloatArray()).containsExactly(Arrays.copyOf(flat, 10));
        assertThat(Tensor.randn(3, 5).toFloatArray()).containsExactly(Arrays.copyOf(Tensor.randn(3, 50).toFloatArray(), 5));
    }

    @Test
    void negativeSeedsAreValid() {
        assertThat(Tensor.rand(-1, 8).toFloatArray()).isNotEqualTo(Tensor.rand(1, 8).toFloatArray());
    }

    @Test
    void shapesAndDtypes() {
        assertThat(Tensor.rand(0, 2, 3).dims()).containsExactly(2, 3);
        assertThat(Tensor.rand(0).dims()).isEmpty();
        assertThat(Tensor.rand(0).toFloatArray()).hasSize(1);
        assertThat(Tensor.rand(0, 0, 4).toFloatArray()).isEmpty();
        assertThat(Tensor.rand(0, 2).dtype()).isEqualTo(DType.F32);
        assertThat(Tensor.rand(0, DType.BF16, 2).dtype()).isEqualTo(DType.BF16);
        assertThat(Tensor.randn(0, 2).dtype()).isEqualTo(DType.F32);
        assertThat(Tensor.randint(0, 0, 5, 2).dtype()).isEqualTo(DType.I32);
        assertThat(Tensor.randint(0, 0, 5, DType.U8, 2).dtype()).isEqualTo(DType.U8);
        assertThat(Tensor.bernoulli(0, 0.5, 2).dtype()).isEqualTo(DType.BOOL);
        assertThat(Tensor.bernoulli(0, Tensor.full(0.5, DType.F32, 3, 2)).dims()).containsExactly(3, 2);
    }

    // ---------------------------------------------------------------- ranges

    @Test
    void randLiesInUnitIntervalForEveryFloatDtype() {
        for (DType dt : new DType[] {DType.F16, DType.BF16, DType.F32, DType.F64}) {
            int p = switch (dt) {
                case F16 -> 11;
                case BF16 -> 8;
                case F32 -> 24;
                default -> 53;
            };
            for (double v : Tensor.rand(11, dt, 4096).toDoubleArray()) {
                assertThat(v).as(dt.toString()).isGreaterThanOrEqualTo(0).isLessThan(1);
                assertThat(Math.scalb(v, p)).as(dt + " grid").isEqualTo(Math.rint(Math.scalb(v, p)));
            }
        }
    }

    @Test
    void uniformAndRandintStayInRange() {
        for (float v : Tensor.uniform(5, -2.5, 4.0, 10_000).toFloatArray()) assertThat(v).isBetween(-2.5f, Math.nextDown(4.0f));
        // a range so narrow that low + (high - low) * u rounds to high for many u
        for (float v : Tensor.uniform(5, 1.0, Math.nextUp(1.0f), 1000).toFloatArray()) assertThat(v).isEqualTo(1.0f);
        long[] r = Tensor.randint(5, -7, 3, 10_000).toLongArray();
        assertThat(Arrays.stream(r).min().orElseThrow()).isEqualTo(-7);
        assertThat(Arrays.stream(r).max().orElseThrow()).isEqualTo(2);
        for (long v : Tensor.randint(5, 0, 256, DType.U8, 1000).toLongArray()) assertThat(v).isBetween(0L, 255L);
        for (long v : Tensor.randint(5, Integer.MIN_VALUE, Integer.MAX_VALUE, 1000).toLongArray()) {
            assertThat(v).isBetween((long) Integer.MIN_VALUE, Integer.MAX_VALUE - 1L);
        }
        assertThat(Tensor.randint(5, 41, 42, 10).toIntArray()).containsOnly(41);
    }

    @Test
    void randintIsTheHighHalfOfWordTimesRange() {
        long seed = 99, low = Long.MIN_VALUE, high = Long.MAX_VALUE;
        long[] got = Tensor.randint(seed, low, high, DType.I64, 50).toLongArray();
        for (int i = 0; i < got.length; i++) {
            long expect = Math.unsignedMultiplyHigh(Alu.threefry2x32(i, seed), high - low) + low;
            assertThat(got[i]).isEqualTo(expect);
        }
    }

    @Test
    void bernoulliExtremes() {
        assertThat(Tensor.bernoulli(1, 0.0, 1000).toBooleanArray()).doesNotContain(true);
        assertThat(Tensor.bernoulli(1, 1.0, 1000).toBooleanArray()).doesNotContain(false);
        Tensor p = Tensor.of(new float[] {0, 1, -0.5f, 1.5f}, 4);
        assertThat(Tensor.bernoulli(1, p).toBooleanArray()).containsExactly(false, true, false, true);
    }

    // ---------------------------------------------------------------- statistics (fixed seeds, generous bounds)

    private static double mean(double[] v) { return Arrays.stream(v).average().orElseThrow(); }

    private static double variance(double[] v) {
        double m = mean(v);
        return Arrays.stream(v).map(x -> (x - m) * (x - m)).sum() / (v.length - 1);
    }

    @Test
    void randHasUniformMomentsAndPassesChiSquare() {
        double[] v = Tensor.rand(2024, N).toDoubleArray();
        assertThat(mean(v)).isCloseTo(0.5, org.assertj.core.data.Offset.offset(0.01));
        assertThat(variance(v)).isCloseTo(1.0 / 12, org.assertj.core.data.Offset.offset(0.005));
        int[] bins = new int[10];
        for (double x : v) bins[(int) (x * 10)]++;
        double expected = N / 10.0, chi2 = 0;
        for (int b : bins) chi2 += (b - expected) * (b - expected) / expected;
        // 9 degrees of freedom: P(chi2 > 27.9) = 0.001
        assertThat(chi2).isLessThan(27.9);
    }

    @Test
    void uniformMoments() {
        double[] v = Tensor.uniform(17, -3, 5, N).toDoubleArray();
        assertThat(mean(v)).isCloseTo(1.0, org.assertj.core.data.Offset.offset(0.05));
        assertThat(variance(v)).isCloseTo(64.0 / 12, org.assertj.core.data.Offset.offset(0.1));
    }

    @Test
    void randnHasStandardNormalMoments() {
        double[] v = Tensor.randn(31337, N).toDoubleArray();
        assertThat(mean(v)).isCloseTo(0, org.assertj.core.data.Offset.offset(0.02));
        assertThat(variance(v)).isCloseTo(1, org.assertj.core.data.Offset.offset(0.03));
        long within1 = Arrays.stream(v).filter(x -> Math.abs(x) < 1).count();
        assertThat(within1 / (double) N).isCloseTo(0.6827, org.assertj.core.data.Offset.offset(0.01));
        assertThat(Arrays.stream(v).allMatch(Double::isFinite)).isTrue();
    }

    @Test
    void randnInF64HasStandardNormalMomentsAndF64Precision() {
        double[] v = Tensor.randn(31337, DType.F64, N).toDoubleArray();
        assertThat(mean(v)).isCloseTo(0, org.assertj.core.data.Offset.offset(0.02));
        assertThat(variance(v)).isCloseTo(1, org.assertj.core.data.Offset.offset(0.03));
        // computed in f64: most values are not f32 values (an f32 Box-Muller cast up would make them all so)
        long notF32 = Arrays.stream(v).filter(x -> (double) (float) x != x).count();
        assertThat(notF32).isGreaterThan(N * 9L / 10);
        assertThat(Tensor.randn(31337, DType.F32, 40).toFloatArray()).containsExactly(Tensor.randn(31337, 40).toFloatArray());
        assertThatThrownBy(() -> Tensor.randn(1, DType.F16, 2)).isInstanceOf(IllegalArgumentException.class).hasMessageContaining("f32 or f64");
    }

    @Test
    void normalShiftsAndScales() {
        double[] v = Tensor.normal(8, 10, 2, N).toDoubleArray();
        assertThat(mean(v)).isCloseTo(10, org.assertj.core.data.Offset.offset(0.05));
        assertThat(variance(v)).isCloseTo(4, org.assertj.core.data.Offset.offset(0.15));
        assertThat(Tensor.normal(8, 3, 0, 5).toFloatArray()).containsOnly(3f);
    }

    @Test
    void randintIsUniformOverItsRange() {
        long[] v = Tensor.randint(77, -5, 5, N).toLongArray();
        int[] counts = new int[10];
        for (long x : v) counts[(int) (x + 5)]++;
        double expected = N / 10.0, chi2 = 0;
        for (int c : counts) chi2 += (c - expected) * (c - expected) / expected;
        assertThat(chi2).isLessThan(27.9);
    }

    @Test
    void bernoulliFrequencyMatchesP() {
        boolean[] b = Tensor.bernoulli(4, 0.3, N).toBooleanArray();
        int ones = 0;
        for (boolean x : b) if (x) ones++;
        assertThat(ones / (double) N).isCloseTo(0.3, org.assertj.core.data.Offset.offset(0.01));
        boolean[] t = Tensor.bernoulli(4, Tensor.full(0.8, DType.F32, N)).toBooleanArray();
        ones = 0;
        for (boolean x : t) if (x) ones++;
        assertThat(ones / (double) N).isCloseTo(0.8, org.assertj.core.data.Offset.offset(0.01));
    }

    // ---------------------------------------------------------------- errors

    @Test
    void negativeShapeIsRejected() {
        assertThatThrownBy(() -> Tensor.rand(0, 2, -3)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("rand").hasMessageContaining("-3").hasMessageContaining("[2, -3]");
        assertThatThrownBy(() -> Tensor.randn(0, -1)).isInstanceOf(IllegalArgumentException.class).hasMessageContaining("randn");
        assertThatThrownBy(() -> Tensor.randint(0, 0, 4, -1)).isInstanceOf(IllegalArgumentException.class).hasMessageContaining("randint");
        assertThatThrownBy(() -> Tensor.bernoulli(0, 0.5, -1)).isInstanceOf(IllegalArgumentException.class).hasMessageContaining("bernoulli");
    }

    @Test
    void badRangesAreRejected() {
        assertThatThrownBy(() -> Tensor.randint(0, 5, 5, 3)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("randint").hasMessageContaining("low 5, high 5");
        assertThatThrownBy(() -> Tensor.randint(0, 5, 2, 3)).isInstanceOf(IllegalArgumentException.class).hasMessageContaining("high 2");
        assertThatThrownBy(() -> Tensor.randint(0, 0, 1L << 40, 3)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("i32").hasMessageContaining(String.valueOf(1L << 40));
        assertThatThrownBy(() -> Tensor.randint(0, -1, 3, DType.U8, 3)).isInstanceOf(IllegalArgumentException.class).hasMessageContaining("u8");
        assertThatThrownBy(() -> Tensor.randint(0, 0, 3, DType.F32, 3)).isInstanceOf(IllegalArgumentException.class).hasMessageContaining("f32");
        assertThatThrownBy(() -> Tensor.uniform(0, 2, 1, 3)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("uniform").hasMessageContaining("low 2.0, high 1.0");
        assertThatThrownBy(() -> Tensor.uniform(0, 0, Double.POSITIVE_INFINITY, 3)).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> Tensor.normal(0, 0, -1, 3)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("normal").hasMessageContaining("std -1.0");
        assertThatThrownBy(() -> Tensor.rand(0, DType.I32, 3)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("rand").hasMessageContaining("i32");
    }

    @Test
    void scalarProbabilityOutsideUnitIntervalIsRejected() {
        for (double p : new double[] {-0.1, 1.5, Double.NaN}) {
            assertThatThrownBy(() -> Tensor.bernoulli(0, p, 3)).isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("bernoulli").hasMessageContaining(String.valueOf(p));
        }
    }
}

package dev.kiln.cpu;

/**
 * Static methods a generated kernel class may need, each emitted only when used: copies of
 * {@link dev.kiln.ir.Alu}'s definitions (rounding to f16 and bf16, float floor division, log2, threefry,
 * conversions of u64 and rounding to odd) and the check of a variable's range.
 */
enum JavaHelper {
    F16("f16"), BF16("bf16"), BF16_BITS("bf16Bits"), BF16_TO_FLOAT("bf16ToFloat"), FLOOR_DIV("floorDiv"), FLOOR_MOD("floorMod"), LOG2("log2"), TRUNC("trunc"),
    F2U64("f2u64"), U64_TO_DOUBLE("u64ToDouble"), U64_TO_FLOAT("u64ToFloat"), ROUND_ODD("toFloatRoundOdd"), S64_ODD("s64ToDoubleOdd"), U64_ODD("u64ToDoubleOdd"), THREEFRY("threefry"), CHECK_VAR("checkVar"), EXP2F("exp2f"), EXP2V("exp2fLanes"),
    CHECK_INDEX("checkIndex"), CHECK_INDEX_IF("checkIndexIf"), INDEX_CHECK_FAILED("indexCheckFailed");

    /**
     * How a generated kernel's failed index check begins its message; {@link CpuKernel} reads the site and the
     * index back from it (generated classes use JDK types only, so the exception cannot be Kiln's own).
     */
    static final String INDEX_CHECK_FAILED_PREFIX = "kiln index check ";

    /** The method's name. */
    final String method;

    JavaHelper(String method) { this.method = method; }

    /** The method's source, indented as a member of the generated class. */
    String source() {
        return switch (this) {
            case EXP2F -> """
                        /**
                         * (float) Math.pow(2, x), bit for bit, about 2.5 times faster. In the normal range
                         * 2^x = 2^n * 2^f with n = rint(x) and f = x - n in [-1/2, 1/2] (exact), 2^f by its Taylor
                         * polynomial of degree 11: relative error below 2^-46, Math.pow's below 2^-52 (1 ulp), so
                         * both round to the same float unless the value lies within 2^-40 of a rounding midpoint
                         * between two floats, where Math.pow decides. Subnormal results (x in [-150, -126)) lie on a
                         * grid 2^-149 apart: within 2^-20 of one of its midpoints Math.pow decides (Math.pow for all of
                         * them: an exp of 4096 subnormal results took 49 us, 26 us so). Checked for every float by
                         * Exp2Verifier.
                         */
                        private static float exp2f(float x) {
                            if (!(x >= -150f && x < 128f)) {
                                // below half the smallest subnormal, 2^x rounds to +0 (a masked logit's exp); from 128 up it
                                // overflows; NaN goes to Math.pow
                                if (x < -150f) return 0f;
                                if (x >= 128f) return Float.POSITIVE_INFINITY;
                                return (float) Math.pow(2, x);
                            }
                            double n = Math.rint(x), f = x - n;
                            double p = 1 + f * (0.6931471805599453 + f * (0.24022650695910072 + f * (0.05550410866482158
                                    + f * (0.009618129107628477 + f * (0.0013333558146428443 + f * (1.540353039338161E-4
                                    + f * (1.5252733804059841E-5 + f * (1.321548679014431E-6 + f * (1.01780860092397E-7
                                    + f * (7.054911620801123E-9 + f * 4.4455382718708116E-10))))))))));
                            double d = p * Double.longBitsToDouble((long) (n + 1023) << 52);
                            if (x < -126f) {
                                // d in steps of the smallest subnormal: its error is below 2^-23 of a step
                                double steps = d * 0x1p149;
                                if (Math.abs(steps - Math.floor(steps) - 0.5) < 0x1p-20) return (float) Math.pow(2, x);
                                return (float) d;
                            }
                            long dropped = Double.doubleToRawLongBits(d) & 0x1FFFFFFFL; // the 29 bits rounding to float drops
                            if (Math.abs(dropped - 0x10000000L) < 4096) return (float) Math.pow(2, x);
                            return (float) d;
                        }
                    """;
            case EXP2V -> """
                        /** {@code out[i] = exp2f(in[i])} for the lanes i set in {@code slow} (out of range, or near a midpoint). */
                        private static void exp2fLanes(float[] in, float[] out, long slow) {
                            for (int i = 0; i < out.length; i++) if ((slow >>> i & 1) != 0) out[i] = exp2f(in[i]);
                        }
                    """;
            case F16 -> """
                        /** Rounds to the nearest f16 value (ties to even). */
                        private static float f16(float f) { return Float.float16ToFloat(Float.floatToFloat16(f)); }
                    """;
            case BF16 -> """
                        /** Rounds to the nearest bf16 value (ties to even). */
                        private static float bf16(float f) { return bf16ToFloat(bf16Bits(f)); }
                    """;
            case BF16_BITS -> """
                        /** bf16 bits of a float, rounded to nearest even; NaN stays NaN. */
                        private static short bf16Bits(float f) {
                            int bits = Float.floatToRawIntBits(f);
                            if (Float.isNaN(f)) return (short) ((bits >>> 16) | 0x40);
                            return (short) ((bits + 0x7FFF + ((bits >>> 16) & 1)) >>> 16);
                        }
                    """;
            case BF16_TO_FLOAT -> """
                        private static float bf16ToFloat(int bits) { return Float.intBitsToFloat((bits & 0xFFFF) << 16); }
                    """;
            case FLOOR_DIV -> """
                        /** Float floor division as Alu (NumPy's divmod): exact quotients stay exact, inf // x is NaN. */
                        private static double floorDiv(double a, double b) {
                            if (b == 0) return a / b;
                            double mod = a % b;
                            double div = (a - mod) / b;
                            if (mod != 0 && (b < 0) != (mod < 0)) div -= 1;
                            if (div == 0) return Math.copySign(0.0, a / b);
                            double floor = Math.floor(div);
                            return div - floor > 0.5 ? floor + 1 : floor;
                        }
                    """;
            case FLOOR_MOD -> """
                        /** Float remainder with the divisor's sign; a zero result takes the divisor's sign too. */
                        private static double floorMod(double a, double b) {
                            double r = a % b;
                            if (r != 0 && (r < 0) != (b < 0)) r += b;
                            return r == 0 ? Math.copySign(0.0, b) : r;
                        }
                    """;
            case LOG2 -> """
                        private static final double LN2 = Math.log(2);

                        private static double log2(double x) {
                            double r = Math.log(x) / LN2;
                            double n = Math.rint(r);
                            // exact for powers of two, which the division above can miss by an ulp
                            return n == r || Math.abs(n - r) > 1e-9 || Math.scalb(1.0, (int) n) != x ? r : n;
                        }
                    """;
            case TRUNC -> """
                        private static double trunc(double x) { return x < 0 ? Math.ceil(x) : Math.floor(x); }
                    """;
            case F2U64 -> """
                        /** Float to u64: NaN is 0, truncation toward zero, values from 2^63 up keep their top bit. */
                        private static long f2u64(double v) { return v >= 0x1p63 ? (long) (v - 0x1p63) ^ Long.MIN_VALUE : (long) v; }
                    """;
            case U64_TO_DOUBLE -> """
                        /** u64 bits to double, rounding once (above 2^63: halve keeping the sticky bit). */
                        private static double u64ToDouble(long v) { return v < 0 ? 2.0 * ((v >>> 1) | (v & 1)) : (double) v; }
                    """;
            case ROUND_ODD -> """
                        /** double to float rounding to odd: exact values stay, inexact ones get an odd last bit (Alu). */
                        private static float toFloatRoundOdd(double v) {
                            float f = (float) v;
                            if (f == v || !Float.isFinite(f) || (Float.floatToRawIntBits(f) & 1) != 0) return f;
                            return Math.nextAfter(f, v);
                        }
                    """;
            case S64_ODD -> """
                        /** A signed long as a double rounded to odd (the sticky bit survives). */
                        private static double s64ToDoubleOdd(long v) {
                            boolean negative = v < 0;
                            double odd = u64ToDoubleOdd(negative ? -v : v);
                            return negative ? -odd : odd;
                        }
                    """;
            case U64_ODD -> """
                        /** An unsigned 64-bit magnitude as a double rounded to odd (the sticky bit survives). */
                        private static double u64ToDoubleOdd(long m) {
                            int drop = Math.max(0, 64 - Long.numberOfLeadingZeros(m) - 53);
                            long kept = m >>> drop;
                            if ((m & ((1L << drop) - 1)) != 0) kept |= 1;
                            return Math.scalb((double) kept, drop);
                        }
                    """;
            case U64_TO_FLOAT -> """
                        /** u64 bits to float, rounding once (above 2^63: halve keeping the sticky bit). */
                        private static float u64ToFloat(long v) { return v < 0 ? 2f * (float) ((v >>> 1) | (v & 1)) : (float) v; }
                    """;
            case THREEFRY -> """
                        private static final int[] ROTATIONS = {13, 15, 26, 6, 17, 29, 16, 24};

                        /** Threefry-2x32, 20 rounds; the low 32 bits of counter and key are word 0. */
                        private static long threefry(long counter, long key) {
                            int k0 = (int) key, k1 = (int) (key >>> 32);
                            int[] ks = {k0, k1, 0x1BD11BDA ^ k0 ^ k1};
                            int x0 = (int) counter + ks[0], x1 = (int) (counter >>> 32) + ks[1];
                            for (int round = 0; round < 20; round++) {
                                x0 += x1;
                                x1 = Integer.rotateLeft(x1, ROTATIONS[round % 8]);
                                x1 ^= x0;
                                if (round % 4 == 3) {
                                    int s = round / 4 + 1;
                                    x0 += ks[s % 3];
                                    x1 += ks[(s + 1) % 3] + s;
                                }
                            }
                            return (x0 & 0xFFFF_FFFFL) | ((long) x1 << 32);
                        }
                    """;
            case CHECK_INDEX -> """
                        /** An index from data into an axis of n elements ([-n, n) if negative ones wrap, else [0, n)); check {@code site}. */
                        private static long checkIndex(long i, long n, boolean wraps, int site) {
                            if (i < (wraps ? -n : 0) || i >= n) throw indexCheckFailed(i, n, wraps, site);
                            return i;
                        }
                    """;
            case CHECK_INDEX_IF -> """
                        /** {@code checkIndex} where {@code gate} holds (a padded region's indices are never used). */
                        private static long checkIndexIf(boolean gate, long i, long n, boolean wraps, int site) {
                            if (gate && (i < (wraps ? -n : 0) || i >= n)) throw indexCheckFailed(i, n, wraps, site);
                            return i;
                        }
                    """;
            case INDEX_CHECK_FAILED -> """
                        /** Out of line, so the checks stay small enough to inline. */
                        private static IndexOutOfBoundsException indexCheckFailed(long i, long n, boolean wraps, int site) {
                            return new IndexOutOfBoundsException("%s" + site + ": index " + i + " is outside [" + (wraps ? -n : 0) + ", " + (n - 1) + "]");
                        }
                    """.formatted(INDEX_CHECK_FAILED_PREFIX);
            case CHECK_VAR -> """
                        private static long checkVar(long value, long min, long max, String name) {
                            if (value < min || value > max) {
                                throw new IllegalArgumentException("variable '" + name + "' bound to " + value + ", outside its range [" + min + ", " + max + "]");
                            }
                            return value;
                        }
                    """;
        };
    }
}

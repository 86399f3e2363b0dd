package dev.kiln.ir;

import dev.kiln.types.DType;

/**
 * The scalar semantics of every elementwise op, in one place: the INTERP device evaluates with it
 * and the simplifier folds constants with it, so the two can never disagree.
 *
 * <p>Integers and booleans are carried as {@code long}, normalised to their dtype's width (signed
 * types sign-extended, unsigned types zero-extended, u64 as raw bits, bool as 0/1). Floats are carried
 * as {@code double}, rounded to their dtype after every operation. Integer division or remainder by
 * zero yields 0; shifts by the type's width or more yield 0 (or -1 for a negative signed value shifted
 * right), as in NumPy.
 */
public final class Alu {
    private Alu() {}

    private static final double LN2 = Math.log(2);

    // ---------------------------------------------------------------- normalisation

    /** Wraps an integer to the width and signedness of {@code dtype}; bool becomes 0 or 1. */
    public static long wrap(DType dtype, long v) {
        return switch (dtype) {
            case BOOL -> v != 0 ? 1 : 0;
            case I8 -> (byte) v;
            case U8 -> v & 0xFFL;
            case I16 -> (short) v;
            case U16 -> v & 0xFFFFL;
            case I32 -> (int) v;
            case U32 -> v & 0xFFFF_FFFFL;
            case I64, U64 -> v;
            default -> throw new IllegalArgumentException(dtype + " is not an integer dtype");
        };
    }

    /** Rounds a double to the nearest value of a float dtype (ties to even). */
    public static double round(DType dtype, double v) {
        return switch (dtype) {
            case F64 -> v;
            case F32 -> (float) v;
            case F16, BF16 -> floatFromBits(dtype, floatBits(dtype, v));
            default -> throw new IllegalArgumentException(dtype + " is not a float dtype");
        };
    }

    /**
     * {@code v} as a float rounded to odd: exact if it fits, else whichever neighbour has an odd last
     * bit. Rounding that once more to a format with at least two bits less precision (f16, bf16) gives
     * the correctly rounded result, where rounding to nearest twice can miss a tie by the first step.
     */
    static float toFloatRoundOdd(double v) {
        float f = (float) v;
        if (f == v || !Float.isFinite(f) || (Float.floatToRawIntBits(f) & 1) != 0) return f;
        return Math.nextAfter(f, v);
    }

    /** An unsigned 64-bit magnitude as a double rounded to odd (see {@link #toFloatRoundOdd}). */
    private static double unsignedToDoubleRoundOdd(long m) {
        int drop = Math.max(0, 64 - Long.numberOfLeadingZeros(m) - 53);
        long kept = m >>> drop;
        if ((m & ((1L << drop) - 1)) != 0) kept |= 1; // the dropped bits survive as the sticky last bit
        return Math.scalb((double) kept, drop);
    }

    /** bf16 bits of a float, rounded to nearest even; NaN stays NaN. */
    public static short floatToBf16(float f) {
        int bits = Float.floatToRawIntBits(f);
        if (Float.isNaN(f)) return (short) ((bits >>> 16) | 0x40);
        int rounding = 0x7FFF + ((bits >>> 16) & 1);
        return (short) ((bits + rounding) >>> 16);
    }

    public static float bf16ToFloat(short bits) {
        return Float.intBitsToFloat((bits & 0xFFFF) << 16);
    }

    /** A constant's canonical argument: a {@link Long} for bool/integers, a {@link Double} for floats. */
    static Object normalizeConst(DType dtype, Number value) {
        if (dtype.isPacked()) throw new IllegalArgumentException("no constants of packed dtype " + dtype);
        if (dtype.isFloat()) return round(dtype, value.doubleValue());
        if (value instanceof Double || value instanceof Float) return castFloatToInt(dtype, value.doubleValue());
        return wrap(dtype, value.longValue());
    }

    // ---------------------------------------------------------------- casts

    /** Converts an integer or bool value of {@code from} to a float value of {@code to}. */
    public static double castIntToFloat(DType from, DType to, long v) {
        if (to == DType.F16 || to == DType.BF16) { // round to odd first, so that the final rounding is the only one
            boolean negative = from != DType.U64 && v < 0;
            double odd = unsignedToDoubleRoundOdd(negative ? -v : v);
            return round(to, negative ? -odd : odd);
        }
        if (from == DType.U64 && v < 0) { // above 2^63: halve, keeping the sticky bit, to round once
            long half = (v >>> 1) | (v & 1);
            return to == DType.F32 ? 2f * (float) half : round(to, 2.0 * half);
        }
        if (to == DType.F32) return (float) v; // direct long->float rounds once
        return round(to, (double) v);
    }

    /** Converts a float to an integer or bool dtype: NaN is 0, the rest truncates and wraps. */
    public static long castFloatToInt(DType to, double v) {
        if (to == DType.BOOL) return v != 0 || Double.isNaN(v) ? 1 : 0;
        if (Double.isNaN(v)) return 0;
        double t = v < 0 ? Math.ceil(v) : Math.floor(v);
        if (to == DType.U64 && t >= 0x1p63) return (long) (t - 0x1p63) ^ Long.MIN_VALUE;
        return wrap(to, (long) t);
    }

    /**
     * Converts a value of {@code from} (its long form {@code i} for bool/integers, its double form
     * {@code f} for floats) to an integer or bool of {@code to}.
     */
    public static long castToLong(DType from, DType to, long i, double f) {
        return from.isFloat() ? castFloatToInt(to, f) : wrap(to, i);
    }

    /** Converts a value of {@code from} (see {@link #castToLong}) to a float of {@code to}. */
    public static double castToDouble(DType from, DType to, long i, double f) {
        return from.isFloat() ? round(to, f) : castIntToFloat(from, to, i);
    }

    /** The bits of a value of {@code from} (see {@link #castToLong}), for a bitcast. */
    public static long bitsOf(DType from, long i, double f) {
        return from.isFloat() ? floatBits(from, f) : i;
    }

    /** Bits of a value rounded to a float dtype (zero-extended to a long). */
    public static long floatBits(DType dtype, double v) {
        return switch (dtype) {
            case F64 -> Double.doubleToRawLongBits(v);
            case F32 -> Float.floatToRawIntBits((float) v) & 0xFFFF_FFFFL;
            case F16 -> Float.floatToFloat16(toFloatRoundOdd(v)) & 0xFFFFL;
            case BF16 -> floatToBf16(toFloatRoundOdd(v)) & 0xFFFFL;
            default -> throw new IllegalArgumentException(dtype + " is not a float dtype");
        };
    }

    /** The float value of raw bits of a float dtype. */
    public static double floatFromBits(DType dtype, long bits) {
        return switch (dtype) {
            case F64 -> Double.longBitsToDouble(bits);
            case F32 -> Float.intBitsToFloat((int) bits);
            case F16 -> Float.float16ToFloat((short) bits);
            case BF16 -> bf16ToFloat((short) bits);
            default -> throw new IllegalArgumentException(dtype + " is not a float dtype");
        };
    }

    // ---------------------------------------------------------------- floats

    /** A unary op on a float value of {@code dtype}. */
    public static double unary(Op op, DType dtype, double x) {
        double r = switch (op) {
            case EXP2 -> Math.pow(2, x);
            case LOG2 -> log2(x);
            case SIN -> Math.sin(x);
            case SQRT -> Math.sqrt(x);
            case RECIP -> 1.0 / x;
            case NEG -> -x;
            case TRUNC -> x < 0 ? Math.ceil(x) : Math.floor(x);
            default -> throw new IllegalArgumentException(op + " is not a float unary op");
        };
        return round(dtype, r);
    }

    private static double log2(double x) {
        double r = Math.log(x) / LN2;
        double n = Math.rint(r);
        // exact for powers of two, which the division above can miss by an ulp
        return n == r || Math.abs(n - r) > 1e-9 || Math.scalb(1.0, (int) n) != x ? r : n;
    }

    /** A binary op on float values of {@code dtype}; comparisons return 1.0 or 0.0. */
    public static double binary(Op op, DType dtype, double a, double b) {
        double r = switch (op) {
            case ADD -> a + b;
            case MUL -> a * b;
            case DIV -> a / b;
            case MOD -> a % b;
            case FLOORDIV -> floorDiv(a, b);
            case FLOORMOD -> floorMod(a, b);
            case MAX -> Math.max(a, b);
            case CMPLT -> a < b ? 1 : 0;
            case CMPNE -> a != b ? 1 : 0;
            case CMPEQ -> a == b ? 1 : 0;
            default -> throw new IllegalArgumentException(op + " is not defined on " + dtype);
        };
        return op.isComparison() ? r : round(dtype, r);
    }

    /**
     * Python's float {@code //} (NumPy's npy_divmod): the quotient of the exact remainder, so that
     * {@code inf // 1} is NaN, {@code -5 // inf} is -1 and {@code 1 // 0.1} is 9; division by zero
     * gives {@code a / b}.
     */
    private static double floorDiv(double a, double b) {
        if (b == 0) return a / b;
        double mod = a % b;
        double div = (a - mod) / b;
        if (mod != 0 && (b < 0) != (mod < 0)) div -= 1;
        if (div == 0) return Math.copySign(0.0, a / b);
        double floor = Math.floor(div);
        return div - floor > 0.5 ? floor + 1 : floor;
    }

    private static double floorMod(double a, double b) {
        double r = a % b;
        if (r != 0 && (r < 0) != (b < 0)) r += b;
        return r == 0 ? Math.copySign(0.0, b) : r;
    }

    // ---------------------------------------------------------------- integers and bools

    /** A unary op on an integer or bool value of {@code dtype}. */
    public static long unary(Op op, DType dtype, long x) {
        return switch (op) {
            case NEG -> wrap(dtype, -x);
            case TRUNC -> x;
            default -> throw new IllegalArgumentException(op + " is not defined on " + dtype + "; cast to a float first");
        };
    }

    /** A binary op on integer or bool values of {@code dtype}; comparisons return 1 or 0. */
    public static long binary(Op op, DType dtype, long a, long b) {
        boolean u = dtype.isUnsigned() || dtype.isBool();
        long r = switch (op) {
            case ADD -> a + b;
            case MUL -> a * b;
            case DIV -> b == 0 ? 0 : u ? Long.divideUnsigned(a, b) : a / b;
            case MOD -> b == 0 ? 0 : u ? Long.remainderUnsigned(a, b) : a % b;
            case FLOORDIV -> b == 0 ? 0 : u ? Long.divideUnsigned(a, b) : Math.floorDiv(a, b);
            case FLOORMOD -> b == 0 ? 0 : u ? Long.remainderUnsigned(a, b) : Math.floorMod(a, b);
            case MAX -> (u ? Long.compareUnsigned(a, b) : Long.compare(a, b)) >= 0 ? a : b;
            case CMPLT -> (u ? Long.compareUnsigned(a, b) : Long.compare(a, b)) < 0 ? 1 : 0;
            case CMPNE -> a != b ? 1 : 0;
            case CMPEQ -> a == b ? 1 : 0;
            case AND -> a & b;
            case OR -> a | b;
            case XOR -> a ^ b;
            case SHL -> b < 0 || b >= dtype.bits() ? 0 : a << b;
            case SHR -> b < 0 || b >= dtype.bits() ? (!u && a < 0 ? -1 : 0) : u ? a >>> b : a >> b;
            case THREEFRY -> threefry2x32(a, b);
            default -> throw new IllegalArgumentException(op + " is not defined on " + dtype);
        };
        return op.isComparison() ? r : wrap(dtype, r);
    }

    private static final int[] ROTATIONS = {13, 15, 26, 6, 17, 29, 16, 24};

    /**
     * Threefry-2x32 with 20 rounds (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3").
     * The low 32 bits of counter and key are word 0, the high 32 bits word 1.
     */
    public static long threefry2x32(long counter, long key) {
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
}

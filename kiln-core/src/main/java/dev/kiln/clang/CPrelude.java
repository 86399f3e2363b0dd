package dev.kiln.clang;

import dev.kiln.types.DType;

/**
 * The C text every kernel translation unit starts with: headers, checks that the compiler computes as
 * the kernels assume, and the helpers that give C the semantics of {@link dev.kiln.ir.Alu} (ports of
 * Alu's and Java's own definitions, line for line where Java defines the result bit for bit).
 */
public final class CPrelude {
    private CPrelude() {}

    /** Lane counts {@code kiln_every_other_*} exists for. */
    static final int[] EVERY_OTHER_LANES = {4, 8, 16};

    /**
     * The helpers that give a C-family language Alu's semantics, shared by the C and CUDA preludes. They
     * need a header that defines the fixed-width integer types, {@code bool}, {@code NAN}, {@code INFINITY},
     * {@code UINT64_C}, {@code INT64_MAX}, {@code INT64_MIN} and {@code KILN_FN} (how a helper is declared),
     * and a compiler that has GCC's builtins (GCC, Clang and nvcc do).
     */
    static final String HELPERS = integerHelpers() + floatHelpers();

    static final String TEXT = header() + HELPERS + laneHelpers();

    /**
     * The fixed-width integer types from the compiler's predefined macros (gcc, clang and nvcc all define
     * them), so no system header is parsed; shared by the C and CUDA preludes.
     */
    public static final String FIXED_WIDTH_TYPES = """
                typedef __INT8_TYPE__ int8_t;
                typedef __INT16_TYPE__ int16_t;
                typedef __INT32_TYPE__ int32_t;
                typedef __INT64_TYPE__ int64_t;
                typedef __UINT8_TYPE__ uint8_t;
                typedef __UINT16_TYPE__ uint16_t;
                typedef __UINT32_TYPE__ uint32_t;
                typedef __UINT64_TYPE__ uint64_t;
                """;

    private static String header() {
        return """
                /* Kiln C kernels: the semantics of dev.kiln.ir.Alu in C11 (generated; do not edit). */
                /* No system headers: parsing <math.h> would cost more than compiling a batch of small kernels.
                   The compiler's predefined macros give the fixed-width types, its builtins the library functions. */
                """ + FIXED_WIDTH_TYPES + """
                #define INT64_C(c) __INT64_C(c)
                #define UINT64_C(c) __UINT64_C(c)
                #define INT32_MIN (-__INT32_MAX__ - 1)
                #define INT64_MAX __INT64_MAX__
                #define INT64_MIN (-__INT64_MAX__ - 1)
                #define bool _Bool
                #define true 1
                #define false 0
                #define NAN __builtin_nanf("")
                #define INFINITY __builtin_inff()

                #if !defined(__FLT_EVAL_METHOD__) || __FLT_EVAL_METHOD__ != 0
                #error "Kiln kernels need float arithmetic evaluated in float (FLT_EVAL_METHOD 0, e.g. SSE on x86-64)"
                #endif
                #ifdef __FAST_MATH__
                #error "Kiln kernels must not be compiled with -ffast-math: NaN, infinity and signed zero must behave as in Java"
                #endif
                /* two's complement wrap on conversion and arithmetic right shifts, as GCC and Clang define them */
                _Static_assert(sizeof(int) == 4 && (int8_t) 200 == -56 && (int32_t) 4294967295u == -1 && (-8 >> 1) == -4,
                               "Kiln kernels need 32-bit int, wrapping conversions and arithmetic right shifts");

                #define KILN_EXPORT __attribute__((visibility("default")))
                #define KILN_FN static inline

                /* whether 0 <= i < n; if not, the first such index is reported in status (the caller throws) */
                static inline bool kiln_in_range(int64_t i, int64_t n, int64_t* status, int64_t param) {
                    if (__builtin_expect((uint64_t) i < (uint64_t) n, 1)) return true;
                    if (status[0] == 0) {
                        status[0] = 1;
                        status[1] = param;
                        status[2] = i;
                    }
                    return false;
                }
                /* an index from data checked against an axis of n elements ([-n, n) where negative indices wrap, else [0, n)):
                   out of range, the first failure is reported in status (2, check, index) and the index goes on unchanged
                   (every read it reaches is gated or clamped) */
                static inline int64_t kiln_check_index(int64_t i, int64_t n, bool wraps, int64_t* status, int64_t check) {
                    if (__builtin_expect(i >= (wraps ? -n : 0) && i < n, 1)) return i;
                    if (status[0] == 0) {
                        status[0] = 2;
                        status[1] = check;
                        status[2] = i;
                    }
                    return i;
                }
                /* the same where gate holds (a padded region's indices are never used) */
                static inline int64_t kiln_check_index_if(bool gate, int64_t i, int64_t n, bool wraps, int64_t* status, int64_t check) {
                    return gate ? kiln_check_index(i, n, wraps, status, check) : i;
                }
                /* iterations of the next loop are independent: vectorise without runtime alias checks */
                #if defined(__clang__)
                #define KILN_INDEPENDENT _Pragma("clang loop vectorize(assume_safety)")
                #elif defined(__GNUC__)
                #define KILN_INDEPENDENT _Pragma("GCC ivdep")
                #else
                #define KILN_INDEPENDENT
                #endif

                """;
    }

    /**
     * Helpers for the lanes of vectorised loops, which only a host C compiler sees (the CUDA prelude has {@link #HELPERS}
     * alone): {@code kiln_every_other_T x N(dst, src)} sets {@code dst[k] = src[2k]} for {@code k < N} with two overlapping
     * vector loads ({@code src[0..N-1]}, {@code src[N-1..2N-2]}: never past the last element read) and one permute;
     * GCC vectorises no loop with a stride-2 load of exactly its vector's lanes, since its own loads would read one
     * element past the last lane's. Without {@code __builtin_shufflevector}, an element at a time.
     */
    private static String laneHelpers() {
        StringBuilder s = new StringBuilder("""
                /* every other element into the lanes of a vectorised loop (see CPrelude) */
                #if defined(__has_builtin)
                #if __has_builtin(__builtin_shufflevector)
                #define KILN_SHUFFLE_VECTOR 1
                #endif
                #endif
                #ifdef KILN_SHUFFLE_VECTOR
                #define KILN_EVERY_OTHER(name, T, N, ...) KILN_FN void name(T* dst, const T* src) { \\
                    typedef T kiln_v __attribute__((vector_size(N * sizeof(T)))); \\
                    kiln_v lo, hi; __builtin_memcpy(&lo, src, sizeof lo); __builtin_memcpy(&hi, src + N - 1, sizeof hi); \\
                    kiln_v r = __builtin_shufflevector(lo, hi, __VA_ARGS__); __builtin_memcpy(dst, &r, sizeof r); }
                #else
                #define KILN_EVERY_OTHER(name, T, N, ...) KILN_FN void name(T* dst, const T* src) { \\
                    for (int k = 0; k < N; k++) dst[k] = src[2 * k]; }
                #endif
                """);
        for (String type : new String[] {"float", "double"}) {
            for (int n : EVERY_OTHER_LANES) {
                StringBuilder lanes = new StringBuilder();
                for (int k = 0; k < n; k++) lanes.append(", ").append(2 * k < n ? 2 * k : 2 * k + 1); // lo's, then hi's (from n)
                s.append("KILN_EVERY_OTHER(").append(everyOther(type.equals("float") ? DType.F32 : DType.F64, n)).append(", ").append(type)
                        .append(", ").append(n).append(lanes).append(")\n");
            }
        }
        return s.toString();
    }

    /** The name of the helper that fetches every other element of {@code dt} into {@code lanes} lanes. */
    static String everyOther(DType dt, int lanes) { return "kiln_every_other_" + (dt == DType.F64 ? "f64" : "f32") + "x" + lanes; }

    /** Signed division, remainder, floor division and floor modulo: 0 for a zero divisor, no overflow for -1. */
    private static String integerHelpers() {
        StringBuilder s = new StringBuilder("/* signed integer division as Alu: x / 0 == 0, MIN / -1 wraps to MIN */\n");
        for (int bits : new int[] {8, 16, 32, 64}) {
            String t = "int" + bits + "_t", w = bits == 64 ? "uint64_t" : "uint32_t", n = "i" + bits;
            s.append("KILN_FN ").append(t).append(" kiln_div_").append(n).append("(").append(t).append(" a, ").append(t)
                    .append(" b) { return b == 0 ? 0 : b == -1 ? (").append(t).append(") (0 - (").append(w).append(") a) : (")
                    .append(t).append(") (a / b); }\n");
            s.append("KILN_FN ").append(t).append(" kiln_mod_").append(n).append("(").append(t).append(" a, ").append(t)
                    .append(" b) { return b == 0 || b == -1 ? 0 : (").append(t).append(") (a % b); }\n");
            s.append("KILN_FN ").append(t).append(" kiln_floordiv_").append(n).append("(").append(t).append(" a, ").append(t)
                    .append(" b) {\n    if (b == 0) return 0;\n    if (b == -1) return (").append(t).append(") (0 - (").append(w)
                    .append(") a);\n    ").append(t).append(" q = (").append(t).append(") (a / b);\n")
                    .append("    return a % b != 0 && (a < 0) != (b < 0) ? (").append(t).append(") (q - 1) : q;\n}\n");
            s.append("KILN_FN ").append(t).append(" kiln_floormod_").append(n).append("(").append(t).append(" a, ").append(t)
                    .append(" b) {\n    if (b == 0 || b == -1) return 0;\n    ").append(t).append(" r = (").append(t).append(") (a % b);\n")
                    .append("    return r != 0 && (r < 0) != (b < 0) ? (").append(t).append(") (r + b) : r;\n}\n");
        }
        return s.append('\n').toString();
    }

    private static String floatHelpers() {
        return """
                KILN_FN uint32_t kiln_f32_bits(float f) { uint32_t b; __builtin_memcpy(&b, &f, 4); return b; }
                KILN_FN float kiln_f32_from_bits(uint32_t b) { float f; __builtin_memcpy(&f, &b, 4); return f; }
                KILN_FN uint64_t kiln_f64_bits(double d) { uint64_t b; __builtin_memcpy(&b, &d, 8); return b; }
                KILN_FN double kiln_f64_from_bits(uint64_t b) { double d; __builtin_memcpy(&d, &b, 8); return d; }

                /* Java's Float.float16ToFloat */
                KILN_FN float kiln_f16_to_f32(uint16_t h) {
                    uint32_t sign = h & 0x8000u, signif = h & 0x03ffu;
                    int exp = (int) ((h & 0x7c00u) >> 10) - 15;
                    float s = sign != 0 ? -1.0f : 1.0f;
                    if (exp == -15) return s * (0x1p-24f * (float) signif);
                    if (exp == 16) return signif == 0 ? s * INFINITY : kiln_f32_from_bits((sign << 16) | 0x7f800000u | (signif << 13));
                    return kiln_f32_from_bits((sign << 16) | ((uint32_t) (exp + 127) << 23) | (signif << 13));
                }

                /* Java's Float.floatToFloat16: round to nearest even, NaN significand bits kept */
                KILN_FN uint16_t kiln_f32_to_f16(float f) {
                    uint32_t doppel = kiln_f32_bits(f);
                    uint32_t sign = (doppel & 0x80000000u) >> 16;
                    if (f != f) {
                        return (uint16_t) (sign | 0x7c00u | (doppel & 0x007fe000u) >> 13 | (doppel & 0x00001ff0u) >> 4 | (doppel & 0x0000000fu));
                    }
                    float a = __builtin_fabsf(f);
                    if (a >= 0x1.ffcp15f + 0x0.002p15f) return (uint16_t) (sign | 0x7c00u);
                    if (a <= 0x1.0p-24f * 0.5f) return (uint16_t) sign;
                    int exp = (int) ((doppel >> 23) & 0xffu) - 127;
                    int expdelta = 0;
                    uint32_t msb = 0;
                    if (exp < -14) {
                        expdelta = -14 - exp;
                        exp = -15;
                        msb = 0x00800000u;
                    }
                    uint32_t signif = (doppel & 0x007fffffu) | msb;
                    uint32_t bits = signif >> (13 + expdelta);
                    uint32_t lsb = signif & (1u << (13 + expdelta));
                    uint32_t round = signif & (1u << (12 + expdelta));
                    uint32_t sticky = signif & ((1u << (12 + expdelta)) - 1u);
                    if (round != 0 && (lsb | sticky) != 0) bits++;
                    return (uint16_t) (sign | (((uint32_t) (exp + 15) << 10) + bits));
                }

                KILN_FN float kiln_round_f16(float f) { return kiln_f16_to_f32(kiln_f32_to_f16(f)); }

                /* Alu.floatToBf16: round to nearest even; NaN stays NaN */
                KILN_FN uint16_t kiln_f32_to_bf16(float f) {
                    uint32_t bits = kiln_f32_bits(f);
                    if (f != f) return (uint16_t) ((bits >> 16) | 0x40u);
                    return (uint16_t) ((bits + 0x7fffu + ((bits >> 16) & 1u)) >> 16);
                }

                KILN_FN float kiln_bf16_to_f32(uint16_t b) { return kiln_f32_from_bits((uint32_t) b << 16); }

                KILN_FN float kiln_round_bf16(float f) { return kiln_bf16_to_f32(kiln_f32_to_bf16(f)); }

                /* Alu.toFloatRoundOdd: exact values stay, inexact ones get an odd last bit */
                KILN_FN float kiln_round_odd(double v) {
                    float f = (float) v;
                    if ((double) f == v || !__builtin_isfinite(f) || (kiln_f32_bits(f) & 1u) != 0) return f;
                    return v > (double) f ? __builtin_nextafterf(f, INFINITY) : __builtin_nextafterf(f, -INFINITY);
                }

                /* an unsigned 64-bit magnitude as a double rounded to odd (the sticky bit survives) */
                KILN_FN double kiln_u64_odd(uint64_t m) {
                    int drop = m == 0 ? 0 : 64 - __builtin_clzll(m) - 53;
                    if (drop < 0) drop = 0;
                    uint64_t kept = m >> drop;
                    if ((m & ((UINT64_C(1) << drop) - 1)) != 0) kept |= 1;
                    return __builtin_ldexp((double) kept, drop);
                }

                KILN_FN double kiln_s64_odd(int64_t v) { return v < 0 ? -kiln_u64_odd(0 - (uint64_t) v) : kiln_u64_odd((uint64_t) v); }

                /* Java's (long) v: NaN is 0, truncation toward zero, saturation */
                KILN_FN int64_t kiln_f2i64(double v) {
                    if (v != v) return 0;
                    if (v >= 0x1p63) return INT64_MAX;
                    if (v <= -0x1p63) return INT64_MIN;
                    return (int64_t) v;
                }

                /* Alu's float to u64: from 2^63 up the top bit is kept */
                KILN_FN uint64_t kiln_f2u64(double v) {
                    return v >= 0x1p63 ? (uint64_t) kiln_f2i64(v - 0x1p63) ^ (UINT64_C(1) << 63) : (uint64_t) kiln_f2i64(v);
                }

                /* Alu's float floor division (NumPy's divmod): exact quotients stay exact, inf // x is NaN */
                KILN_FN double kiln_floordiv(double a, double b) {
                    if (b == 0) return a / b;
                    double mod = __builtin_fmod(a, b);
                    double div = (a - mod) / b;
                    if (mod != 0 && (b < 0) != (mod < 0)) div -= 1;
                    if (div == 0) return __builtin_copysign(0.0, a / b);
                    double fl = __builtin_floor(div);
                    return div - fl > 0.5 ? fl + 1 : fl;
                }

                /* float remainder with the divisor's sign; a zero result takes the divisor's sign too */
                KILN_FN double kiln_floormod(double a, double b) {
                    double r = __builtin_fmod(a, b);
                    if (r != 0 && (r < 0) != (b < 0)) r += b;
                    return r == 0 ? __builtin_copysign(0.0, b) : r;
                }

                /* Alu.log2: log(x) / log(2), exact for powers of two */
                KILN_FN double kiln_log2(double x) {
                    double r = __builtin_log(x) / 0x1.62e42fefa39efp-1;
                    double n = __builtin_rint(r);
                    if (r != r) return r;
                    return n == r || __builtin_fabs(n - r) > 1e-9 || __builtin_ldexp(1.0, (int) n) != x ? r : n;
                }

                /* the C library's functions (Alu's exp2 is Math.pow(2, x); glibc's exp2 agrees more often than its pow) */
                KILN_FN double kiln_exp2(double x) { return __builtin_exp2(x); }

                /* Alu's exp2 of an f32, without a call, so loops over it vectorise: 2^x in double, rounded once to float.
                   x = n + f with |f| <= 1/2; 2^f by the Taylor series of e^(f ln 2) to degree 13 (truncation below 1e-17,
                   evaluation a few double ulps), so the float rounding differs from the C library's only where 2^x lies
                   within ~1e-16 of a float rounding boundary (none in 1.4e9 sampled floats); 2^n by two exponent-field
                   scales, so subnormal and infinite results come out as the library's. */
                KILN_FN float kiln_exp2f(float xf) {
                    double x = xf;
                    double xc = x < -1100.0 ? -1100.0 : x > 1100.0 ? 1100.0 : x;
                    double n = __builtin_rint(xc);
                    double t = (xc - n) * 0x1.62e42fefa39efp-1;
                    double p = 1.0 / 6227020800.0;
                    p = p * t + 1.0 / 479001600.0; p = p * t + 1.0 / 39916800.0; p = p * t + 1.0 / 3628800.0;
                    p = p * t + 1.0 / 362880.0; p = p * t + 1.0 / 40320.0; p = p * t + 1.0 / 5040.0; p = p * t + 1.0 / 720.0;
                    p = p * t + 1.0 / 120.0; p = p * t + 1.0 / 24.0; p = p * t + 1.0 / 6.0; p = p * t + 0.5;
                    p = p * t + 1.0; p = p * t + 1.0;
                    int64_t ni = (int64_t) n, h = ni >> 1;
                    uint64_t ab = (uint64_t) (h + 1023) << 52, bb = (uint64_t) (ni - h + 1023) << 52;
                    double a, b;
                    __builtin_memcpy(&a, &ab, 8);
                    __builtin_memcpy(&b, &bb, 8);
                    float r = (float) (p * a * b);
                    return xf != xf ? xf : r;
                }
                KILN_FN double kiln_sin(double x) { return __builtin_sin(x); }
                KILN_FN double kiln_sqrt(double x) { return __builtin_sqrt(x); }
                KILN_FN double kiln_trunc(double x) { return __builtin_trunc(x); }
                KILN_FN double kiln_fmod(double a, double b) { return __builtin_fmod(a, b); }
                KILN_FN float kiln_fmodf(float a, float b) { return __builtin_fmodf(a, b); }

                /* Java's Math.max and Math.min: NaN wins, +0 > -0 */
                KILN_FN float kiln_max_f32(float a, float b) { return a != a ? a : a == 0 && b == 0 && __builtin_signbit(a) ? b : a >= b ? a : b; }
                KILN_FN double kiln_max_f64(double a, double b) { return a != a ? a : a == 0 && b == 0 && __builtin_signbit(a) ? b : a >= b ? a : b; }
                KILN_FN float kiln_min_f32(float a, float b) { return a != a ? a : a == 0 && b == 0 && __builtin_signbit(b) ? b : a <= b ? a : b; }
                KILN_FN double kiln_min_f64(double a, double b) { return a != a ? a : a == 0 && b == 0 && __builtin_signbit(b) ? b : a <= b ? a : b; }
                /* the same in the lanes of a vectorised loop: selects only, each a vector compare and blend (the forms above,
                   if-converted, took half as long again in a max pooling); a NaN b fails the first compare and is the
                   answer, and equal values are +-0 or the same bits, whose AND (max) or OR (min) is the answer */
                KILN_FN float kiln_vmax_f32(float a, float b) {
                    float m = a > b ? a : b;
                    m = a == b ? kiln_f32_from_bits(kiln_f32_bits(a) & kiln_f32_bits(b)) : m;
                    return a != a ? a : m;
                }
                KILN_FN double kiln_vmax_f64(double a, double b) {
                    double m = a > b ? a : b;
                    m = a == b ? kiln_f64_from_bits(kiln_f64_bits(a) & kiln_f64_bits(b)) : m;
                    return a != a ? a : m;
                }
                KILN_FN float kiln_vmin_f32(float a, float b) {
                    float m = a < b ? a : b;
                    m = a == b ? kiln_f32_from_bits(kiln_f32_bits(a) | kiln_f32_bits(b)) : m;
                    return a != a ? a : m;
                }
                KILN_FN double kiln_vmin_f64(double a, double b) {
                    double m = a < b ? a : b;
                    m = a == b ? kiln_f64_from_bits(kiln_f64_bits(a) | kiln_f64_bits(b)) : m;
                    return a != a ? a : m;
                }

                /* Alu.threefry2x32: Threefry-2x32, 20 rounds; the low 32 bits of counter and key are word 0 */
                KILN_FN uint64_t kiln_threefry(uint64_t counter, uint64_t key) {
                    static const int rotations[8] = {13, 15, 26, 6, 17, 29, 16, 24};
                    uint32_t k0 = (uint32_t) key, k1 = (uint32_t) (key >> 32);
                    uint32_t ks[3] = {k0, k1, 0x1BD11BDAu ^ k0 ^ k1};
                    uint32_t x0 = (uint32_t) counter + ks[0], x1 = (uint32_t) (counter >> 32) + ks[1];
                    for (int round = 0; round < 20; round++) {
                        int r = rotations[round % 8];
                        x0 += x1;
                        x1 = (x1 << r) | (x1 >> (32 - r));
                        x1 ^= x0;
                        if (round % 4 == 3) {
                            int s = round / 4 + 1;
                            x0 += ks[s % 3];
                            x1 += ks[(s + 1) % 3] + (uint32_t) s;
                        }
                    }
                    return (uint64_t) x0 | ((uint64_t) x1 << 32);
                }
                """;
    }
}

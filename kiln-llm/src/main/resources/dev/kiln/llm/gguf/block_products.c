/*
 * Kiln: products with block-quantised matrices on the CLANG device (NativeBlockProducts).
 *
 * out[r * n + j] = sum_i x[r * k + i] * w_j[i] for rows r in [0, rows) of x (f32) and rows j in [from, to) of w, whose
 * rows are ggml blocks (Q8_0: f16 d, 32 signed bytes; Q4_0: f16 d, 16 bytes holding value i in the low nibble of byte i
 * and value i + 16 in its high nibble, each less 8). Every product is f32 with f32 accumulation: a block's 32 products
 * are summed, scaled by d and added to the row's sum (the terms of the Vector API path, reassociated). Four rows of w
 * go together so that each vector of x is loaded once for the four.
 *
 * Compiled with -ffp-contract=off and without -ffast-math: the multiply-adds below are explicit intrinsics; the portable
 * path sums each block in eight lanes so that it needs no reassociation from the compiler.
 */
#include <stdint.h>
#include <string.h>
#if defined(__AVX512F__) || (defined(__AVX2__) && defined(__FMA__) && defined(__F16C__))
#include <immintrin.h>
#endif

#define EXPORT __attribute__((visibility("default")))
/*
 * Four rows of w are 4 * rb contiguous bytes; while a dot4 reads them, it prefetches the next four rows, 4 * BYTES bytes
 * a block (every line of [p, p + 4 * BYTES) is in [p, p + 64 * ceil(4 * BYTES / 64))). Without it a core kept too few
 * lines in flight to stream from memory: the products' many operations a block fill the out-of-order window (an Intel
 * Xeon with AVX-512, the 16 ffn_gate products of Llama-3.2-1B at decode: 9.0 -> 15.9 GB/s on two cores). A prefetch never
 * faults, so the last group's, past the rows, is harmless.
 */
#define PREFETCH_GROUP(p, BYTES)                                                                                          \
    do {                                                                                                                  \
        for (int l = 0; l < 4 * (BYTES); l += 64) __builtin_prefetch((const void *) ((p) + l), 0, 3);                     \
    } while (0)

static inline float half_at(const uint8_t *p) {
    uint16_t h;
    memcpy(&h, p, 2);
#if defined(__F16C__)
    return _cvtsh_ss(h);
#else
    uint32_t sign = (uint32_t) (h & 0x8000u) << 16, e = (h >> 10) & 0x1fu, m = h & 0x3ffu, bits;
    if (e == 0x1f) bits = sign | 0x7f800000u | (m << 13);
    else if (e != 0) bits = sign | ((e + 112) << 23) | (m << 13);
    else if (m == 0) bits = sign;
    else { /* subnormal: normalise */
        uint32_t be = 113;
        while (!(m & 0x400u)) { m <<= 1; be--; }
        bits = sign | (be << 23) | ((m & 0x3ffu) << 13);
    }
    float f;
    memcpy(&f, &bits, 4);
    return f;
#endif
}

#if defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)
/* The eight lanes' sum (the AVX2 products, f32 and int8, and AVX-512 hosts' int8 products). */
static inline float sum8(__m256 v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}
#endif

/* Four rows' dot products as four one-row ones (the portable paths). */
#define DOT4_BY_ROWS(NAME, DOT1, XT)                                                                                      \
    static void NAME(const uint8_t *w, int64_t rb, int64_t blocks, const XT *x, float *o) {                              \
        for (int i = 0; i < 4; i++) o[i] = DOT1(w + i * rb, blocks, x);                                                   \
    }

#if defined(__AVX512F__)

static inline __m512 q8_16(const uint8_t *p) { return _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128((const __m128i *) p))); }

/* A Q8_0 block's 32 products with x, in 16 lanes. */
static inline __m512 q8_block(const uint8_t *w, const float *x) {
    return _mm512_fmadd_ps(q8_16(w + 18), _mm512_loadu_ps(x + 16), _mm512_mul_ps(q8_16(w + 2), _mm512_loadu_ps(x)));
}

/*
 * Q4_0: the 16 bytes zero-extended to 16 lanes; low nibbles less 8 meet x[0..16), high nibbles less 8 x[16..32). A
 * nibble becomes its float through a permute of the 16 values -8..7 (which reads only an index's low four bits, so the
 * low nibble needs no mask): one operation where a subtraction and a conversion took two.
 */
static inline __m512 q4_block(const uint8_t *w, const float *x) {
    const __m512 values = _mm512_setr_ps(-8, -7, -6, -5, -4, -3, -2, -1, 0, 1, 2, 3, 4, 5, 6, 7);
    __m512i raw = _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *) (w + 2)));
    __m512 lo = _mm512_permutexvar_ps(raw, values), hi = _mm512_permutexvar_ps(_mm512_srli_epi32(raw, 4), values);
    return _mm512_fmadd_ps(hi, _mm512_loadu_ps(x + 16), _mm512_mul_ps(lo, _mm512_loadu_ps(x)));
}

typedef __m512 vsum;
#define VZERO() _mm512_setzero_ps()
#define VSCALED_ADD(block, d, acc) _mm512_fmadd_ps(block, _mm512_set1_ps(d), acc)
#define VTOTAL(v) _mm512_reduce_add_ps(v)
#define HAVE_VECTORS 1

/*
 * Four rows of w by four rows of x (a batched decode step's rows): sixteen sums in registers. Each block of a w row is
 * widened and scaled once for the four x rows (the values d * q, where a dot product scales the block's sum), and each
 * vector of x is loaded once for the four w rows: four times the products of dot4 for about the same operations.
 */
#define TILE_ROW(r, xp)                                                                                                   \
    do {                                                                                                                  \
        __m512 v_ = _mm512_loadu_ps(xp);                                                                                  \
        c##r##0 = _mm512_fmadd_ps(l0, v_, c##r##0); c##r##1 = _mm512_fmadd_ps(l1, v_, c##r##1);                           \
        c##r##2 = _mm512_fmadd_ps(l2, v_, c##r##2); c##r##3 = _mm512_fmadd_ps(l3, v_, c##r##3);                           \
        v_ = _mm512_loadu_ps((xp) + 16);                                                                                  \
        c##r##0 = _mm512_fmadd_ps(h0, v_, c##r##0); c##r##1 = _mm512_fmadd_ps(h1, v_, c##r##1);                           \
        c##r##2 = _mm512_fmadd_ps(h2, v_, c##r##2); c##r##3 = _mm512_fmadd_ps(h3, v_, c##r##3);                           \
    } while (0)
#define TILE_STORE(r)                                                                                                     \
    do {                                                                                                                  \
        out[r * n] = _mm512_reduce_add_ps(c##r##0); out[r * n + 1] = _mm512_reduce_add_ps(c##r##1);                       \
        out[r * n + 2] = _mm512_reduce_add_ps(c##r##2); out[r * n + 3] = _mm512_reduce_add_ps(c##r##3);                   \
    } while (0)
#define TILE4X4(NAME, VALUES, BYTES)                                                                                      \
    static void NAME(const uint8_t *w, int64_t rb, int64_t blocks, const float *x, int64_t k, float *out, int64_t n) {   \
        const uint8_t *w0 = w, *w1 = w + rb, *w2 = w + 2 * rb, *w3 = w + 3 * rb, *ahead = w + 4 * rb;                   \
        __m512 c00 = _mm512_setzero_ps(), c01 = c00, c02 = c00, c03 = c00, c10 = c00, c11 = c00, c12 = c00, c13 = c00;   \
        __m512 c20 = c00, c21 = c00, c22 = c00, c23 = c00, c30 = c00, c31 = c00, c32 = c00, c33 = c00;                   \
        for (int64_t b = 0; b < blocks; b++, x += 32, w0 += BYTES, w1 += BYTES, w2 += BYTES, w3 += BYTES, ahead += 4 * BYTES) { \
            PREFETCH_GROUP(ahead, BYTES);                                                                                 \
            __m512 l0, h0, l1, h1, l2, h2, l3, h3;                                                                        \
            VALUES(w0, l0, h0);                                                                                           \
            VALUES(w1, l1, h1);                                                                                           \
            VALUES(w2, l2, h2);                                                                                           \
            VALUES(w3, l3, h3);                                                                                           \
            TILE_ROW(0, x);                                                                                               \
            TILE_ROW(1, x + k);                                                                                           \
            TILE_ROW(2, x + 2 * k);                                                                                       \
            TILE_ROW(3, x + 3 * k);                                                                                       \
        }                                                                                                                 \
        TILE_STORE(0);                                                                                                    \
        TILE_STORE(1);                                                                                                    \
        TILE_STORE(2);                                                                                                    \
        TILE_STORE(3);                                                                                                    \
    }

/* A Q8_0 block's 32 values times its scale, as two vectors of 16. */
#define Q8_VALUES(p, lo, hi)                                                                                              \
    do {                                                                                                                  \
        __m512 d_ = _mm512_set1_ps(half_at(p));                                                                           \
        lo = _mm512_mul_ps(q8_16((p) + 2), d_);                                                                           \
        hi = _mm512_mul_ps(q8_16((p) + 18), d_);                                                                          \
    } while (0)

/* The same for Q4_0 (see q4_block). */
#define Q4_VALUES(p, lo, hi)                                                                                              \
    do {                                                                                                                  \
        const __m512 values_ = _mm512_setr_ps(-8, -7, -6, -5, -4, -3, -2, -1, 0, 1, 2, 3, 4, 5, 6, 7);                    \
        __m512 d_ = _mm512_set1_ps(half_at(p));                                                                           \
        __m512i raw_ = _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *) ((p) + 2)));                                \
        lo = _mm512_mul_ps(_mm512_permutexvar_ps(raw_, values_), d_);                                                     \
        hi = _mm512_mul_ps(_mm512_permutexvar_ps(_mm512_srli_epi32(raw_, 4), values_), d_);                               \
    } while (0)

TILE4X4(q8_0_tile, Q8_VALUES, 34)
TILE4X4(q4_0_tile, Q4_VALUES, 18)
#define HAVE_TILE 1

#elif defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)

static inline __m256 q8_8(const uint8_t *p) { return _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i *) p))); }

static inline __m256 q8_block(const uint8_t *w, const float *x) {
    __m256 s = _mm256_mul_ps(q8_8(w + 2), _mm256_loadu_ps(x));
    s = _mm256_fmadd_ps(q8_8(w + 10), _mm256_loadu_ps(x + 8), s);
    s = _mm256_fmadd_ps(q8_8(w + 18), _mm256_loadu_ps(x + 16), s);
    return _mm256_fmadd_ps(q8_8(w + 26), _mm256_loadu_ps(x + 24), s);
}

static inline __m256 q4_block(const uint8_t *w, const float *x) {
    __m128i raw = _mm_loadu_si128((const __m128i *) (w + 2));
    __m256i eight = _mm256_set1_epi32(8), fifteen = _mm256_set1_epi32(15);
    __m256i r0 = _mm256_cvtepu8_epi32(raw), r1 = _mm256_cvtepu8_epi32(_mm_srli_si128(raw, 8));
    __m256 s = _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_sub_epi32(_mm256_and_si256(r0, fifteen), eight)), _mm256_loadu_ps(x));
    s = _mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_sub_epi32(_mm256_and_si256(r1, fifteen), eight)), _mm256_loadu_ps(x + 8), s);
    s = _mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_sub_epi32(_mm256_srli_epi32(r0, 4), eight)), _mm256_loadu_ps(x + 16), s);
    return _mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_sub_epi32(_mm256_srli_epi32(r1, 4), eight)), _mm256_loadu_ps(x + 24), s);
}

typedef __m256 vsum;
#define VZERO() _mm256_setzero_ps()
#define VSCALED_ADD(block, d, acc) _mm256_fmadd_ps(block, _mm256_set1_ps(d), acc)
#define VTOTAL(v) sum8(v)
#define HAVE_VECTORS 1

#else /* portable C: each block summed in eight lanes */

static float q8_0_dot1(const uint8_t *w, int64_t blocks, const float *x) {
    float total = 0;
    for (int64_t b = 0; b < blocks; b++, x += 32, w += 34) {
        float lane[8] = {0};
        for (int i = 0; i < 32; i++) lane[i & 7] += (float) (int8_t) w[2 + i] * x[i];
        float s = ((lane[0] + lane[1]) + (lane[2] + lane[3])) + ((lane[4] + lane[5]) + (lane[6] + lane[7]));
        total += s * half_at(w);
    }
    return total;
}

static float q4_0_dot1(const uint8_t *w, int64_t blocks, const float *x) {
    float total = 0;
    for (int64_t b = 0; b < blocks; b++, x += 32, w += 18) {
        float lane[8] = {0};
        for (int i = 0; i < 16; i++) {
            lane[i & 7] += (float) ((w[2 + i] & 15) - 8) * x[i];
            lane[i & 7] += (float) ((w[2 + i] >> 4) - 8) * x[16 + i];
        }
        float s = ((lane[0] + lane[1]) + (lane[2] + lane[3])) + ((lane[4] + lane[5]) + (lane[6] + lane[7]));
        total += s * half_at(w);
    }
    return total;
}

DOT4_BY_ROWS(q8_0_dot4, q8_0_dot1, float)

DOT4_BY_ROWS(q4_0_dot4, q4_0_dot1, float)

#endif

#ifdef HAVE_VECTORS
/*
 * One row of w with x (dot1), and four rows of w with x (dot4): each block's products summed in lanes, scaled by the
 * block's d and added to the row's sum; a dot4 prefetches the next four rows as it goes (PREFETCH_GROUP).
 */
#define DOT4(NAME, BLOCK, BYTES)                                                                                         \
    static void NAME(const uint8_t *w, int64_t rb, int64_t blocks, const float *x, float *o) {                           \
        const uint8_t *w0 = w, *w1 = w + rb, *w2 = w + 2 * rb, *w3 = w + 3 * rb, *ahead = w + 4 * rb;                   \
        vsum a0 = VZERO(), a1 = a0, a2 = a0, a3 = a0;                                                                     \
        for (int64_t b = 0; b < blocks; b++, x += 32, w0 += BYTES, w1 += BYTES, w2 += BYTES, w3 += BYTES, ahead += 4 * BYTES) { \
            PREFETCH_GROUP(ahead, BYTES);                                                                                 \
            a0 = VSCALED_ADD(BLOCK(w0, x), half_at(w0), a0);                                                              \
            a1 = VSCALED_ADD(BLOCK(w1, x), half_at(w1), a1);                                                              \
            a2 = VSCALED_ADD(BLOCK(w2, x), half_at(w2), a2);                                                              \
            a3 = VSCALED_ADD(BLOCK(w3, x), half_at(w3), a3);                                                              \
        }                                                                                                                 \
        o[0] = VTOTAL(a0); o[1] = VTOTAL(a1); o[2] = VTOTAL(a2); o[3] = VTOTAL(a3);                                       \
    }
#define DOT1(NAME, BLOCK, BYTES)                                                                                         \
    static float NAME(const uint8_t *w, int64_t blocks, const float *x) {                                                \
        vsum a = VZERO();                                                                                                 \
        for (int64_t b = 0; b < blocks; b++, x += 32, w += BYTES) a = VSCALED_ADD(BLOCK(w, x), half_at(w), a);           \
        return VTOTAL(a);                                                                                                 \
    }
DOT4(q8_0_dot4, q8_block, 34)
DOT1(q8_0_dot1, q8_block, 34)
DOT4(q4_0_dot4, q4_block, 18)
DOT1(q4_0_dot1, q4_block, 18)
#endif

#ifdef HAVE_TILE
#define Q8_0_TILE q8_0_tile
#define Q4_0_TILE q4_0_tile
#else /* four rows of x at a time as four dot4s */
#define Q8_0_TILE NULL
#define Q4_0_TILE NULL
#endif

/*
 * x quantised to Q8_0 blocks by the caller (NativeBlockProducts.quantizeQ8_0: d = max|x| / 127 rounded to f16, q = x *
 * 127 / max|x| rounded to nearest, in [-127, 127]), as llama.cpp multiplies its Q8_0 and Q4_0 weights: each block's 32
 * products of bytes summed exactly in int32, the sum scaled by d_w * d_x in f32. With AVX-VNNI (or AVX-512 VNNI) one
 * instruction multiplies and sums 32 byte pairs into eight int32 lanes; it takes unsigned bytes on one side, so the
 * weights go as |w| and x as x * sign(w) (exact for every byte of w, -128 included: x is never -128).
 */
#if defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)

static inline __m256i dot_i8(__m256i w, __m256i x) {
    __m256i aw = _mm256_abs_epi8(w), sx = _mm256_sign_epi8(x, w);
#if defined(__AVXVNNI__)
    return _mm256_dpbusd_avx_epi32(_mm256_setzero_si256(), aw, sx);
#elif defined(__AVX512VNNI__) && defined(__AVX512VL__)
    return _mm256_dpbusd_epi32(_mm256_setzero_si256(), aw, sx);
#else
    return _mm256_madd_epi16(_mm256_maddubs_epi16(aw, sx), _mm256_set1_epi16(1)); /* |pair sum| <= 2 * 128 * 127 */
#endif
}

static inline __m256i q8_bytes(const uint8_t *w) { return _mm256_loadu_si256((const __m256i *) (w + 2)); }

static inline __m256i q4_bytes(const uint8_t *w) {
    __m128i raw = _mm_loadu_si128((const __m128i *) (w + 2)), low = _mm_set1_epi8(15);
    __m256i v = _mm256_set_m128i(_mm_and_si128(_mm_srli_epi16(raw, 4), low), _mm_and_si128(raw, low));
    return _mm256_sub_epi8(v, _mm256_set1_epi8(8));
}

#define DOT4_Q8X(NAME, BYTES_OF, BYTES)                                                                                   \
    static void NAME(const uint8_t *w, int64_t rb, int64_t blocks, const uint8_t *x, float *o) {                         \
        const uint8_t *w0 = w, *w1 = w + rb, *w2 = w + 2 * rb, *w3 = w + 3 * rb, *ahead = w + 4 * rb;                   \
        __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;                                                       \
        for (int64_t b = 0; b < blocks; b++, x += 34, w0 += BYTES, w1 += BYTES, w2 += BYTES, w3 += BYTES, ahead += 4 * BYTES) { \
            PREFETCH_GROUP(ahead, BYTES);                                                                                 \
            __m256i xv = _mm256_loadu_si256((const __m256i *) (x + 2));                                                  \
            float dx = half_at(x);                                                                                        \
            a0 = _mm256_fmadd_ps(_mm256_cvtepi32_ps(dot_i8(BYTES_OF(w0), xv)), _mm256_set1_ps(half_at(w0) * dx), a0);     \
            a1 = _mm256_fmadd_ps(_mm256_cvtepi32_ps(dot_i8(BYTES_OF(w1), xv)), _mm256_set1_ps(half_at(w1) * dx), a1);     \
            a2 = _mm256_fmadd_ps(_mm256_cvtepi32_ps(dot_i8(BYTES_OF(w2), xv)), _mm256_set1_ps(half_at(w2) * dx), a2);     \
            a3 = _mm256_fmadd_ps(_mm256_cvtepi32_ps(dot_i8(BYTES_OF(w3), xv)), _mm256_set1_ps(half_at(w3) * dx), a3);     \
        }                                                                                                                 \
        o[0] = sum8(a0); o[1] = sum8(a1); o[2] = sum8(a2); o[3] = sum8(a3);                                           \
    }
#define DOT1_Q8X(NAME, BYTES_OF, BYTES)                                                                                   \
    static float NAME(const uint8_t *w, int64_t blocks, const uint8_t *x) {                                              \
        __m256 a = _mm256_setzero_ps();                                                                                   \
        for (int64_t b = 0; b < blocks; b++, x += 34, w += BYTES)                                                         \
            a = _mm256_fmadd_ps(_mm256_cvtepi32_ps(dot_i8(BYTES_OF(w), _mm256_loadu_si256((const __m256i *) (x + 2)))),  \
                                _mm256_set1_ps(half_at(w) * half_at(x)), a);                                              \
        return sum8(a);                                                                                                  \
    }
DOT4_Q8X(q8_0_q8_dot4, q8_bytes, 34)
DOT1_Q8X(q8_0_q8_dot1, q8_bytes, 34)
DOT4_Q8X(q4_0_q8_dot4, q4_bytes, 18)
DOT1_Q8X(q4_0_q8_dot1, q4_bytes, 18)

#else /* portable C: exact int sums per block */

static float q8_0_q8_dot1(const uint8_t *w, int64_t blocks, const uint8_t *x) {
    float total = 0;
    for (int64_t b = 0; b < blocks; b++, x += 34, w += 34) {
        int32_t sum = 0;
        for (int i = 0; i < 32; i++) sum += (int32_t) (int8_t) w[2 + i] * (int8_t) x[2 + i];
        total += (float) sum * (half_at(w) * half_at(x));
    }
    return total;
}

static float q4_0_q8_dot1(const uint8_t *w, int64_t blocks, const uint8_t *x) {
    float total = 0;
    for (int64_t b = 0; b < blocks; b++, x += 34, w += 18) {
        int32_t sum = 0;
        for (int i = 0; i < 16; i++) sum += ((w[2 + i] & 15) - 8) * (int8_t) x[2 + i] + ((w[2 + i] >> 4) - 8) * (int8_t) x[18 + i];
        total += (float) sum * (half_at(w) * half_at(x));
    }
    return total;
}

DOT4_BY_ROWS(q8_0_q8_dot4, q8_0_q8_dot1, uint8_t)

DOT4_BY_ROWS(q4_0_q8_dot4, q4_0_q8_dot1, uint8_t)

#endif

/*
 * Rows [from, to) of w against the first `rows` rows of x (XT elements, x_row of them a row), into out (rows, n): four
 * rows of w a pass, four rows of x at a time through the tile where there is one, the rest row by row.
 */
#define PRODUCTS(NAME, XT)                                                                                                \
    static void NAME(void (*tile)(const uint8_t *, int64_t, int64_t, const XT *, int64_t, float *, int64_t),             \
                     void (*dot4)(const uint8_t *, int64_t, int64_t, const XT *, float *),                                \
                     float (*dot1)(const uint8_t *, int64_t, const XT *), const uint8_t *w, int64_t rb, int64_t k,        \
                     const XT *x, int64_t x_row, int64_t rows, float *out, int64_t n, int64_t from, int64_t to) {         \
        int64_t blocks = k / 32, j = from;                                                                                \
        float o[4];                                                                                                       \
        for (; j + 4 <= to; j += 4) {                                                                                     \
            int64_t r = 0;                                                                                                \
            if (tile)                                                                                                     \
                for (; r + 4 <= rows; r += 4) tile(w + j * rb, rb, blocks, x + r * x_row, x_row, out + r * n + j, n);     \
            for (; r < rows; r++) {                                                                                       \
                dot4(w + j * rb, rb, blocks, x + r * x_row, o);                                                           \
                memcpy(out + r * n + j, o, sizeof o);                                                                     \
            }                                                                                                             \
        }                                                                                                                 \
        for (; j < to; j++)                                                                                               \
            for (int64_t r = 0; r < rows; r++) out[r * n + j] = dot1(w + j * rb, blocks, x + r * x_row);                  \
    }
PRODUCTS(products_q8x, uint8_t)

/* Rows [from, to) of w (Q8_0) with the first `rows` rows of x quantised to Q8_0 (k / 32 blocks of 34 bytes a row). */
EXPORT void kiln_q8_0_q8_products(const uint8_t *w, int64_t rb, int64_t k, const uint8_t *xq, int64_t rows, float *out, int64_t n,
                                  int64_t from, int64_t to) {
    products_q8x(NULL, q8_0_q8_dot4, q8_0_q8_dot1, w, rb, k, xq, k / 32 * 34, rows, out, n, from, to);
}

/* The same for Q4_0 weights. */
EXPORT void kiln_q4_0_q8_products(const uint8_t *w, int64_t rb, int64_t k, const uint8_t *xq, int64_t rows, float *out, int64_t n,
                                  int64_t from, int64_t to) {
    products_q8x(NULL, q4_0_q8_dot4, q4_0_q8_dot1, w, rb, k, xq, k / 32 * 34, rows, out, n, from, to);
}

PRODUCTS(products, float)

/* Rows [from, to) of w (Q8_0, rb bytes a row, k values) with the first `rows` rows of x, into out (rows, n). */
EXPORT void kiln_q8_0_products(const uint8_t *w, int64_t rb, int64_t k, const float *x, int64_t rows, float *out, int64_t n,
                               int64_t from, int64_t to) {
    products(Q8_0_TILE, q8_0_dot4, q8_0_dot1, w, rb, k, x, k, rows, out, n, from, to);
}

/* The same for Q4_0. */
EXPORT void kiln_q4_0_products(const uint8_t *w, int64_t rb, int64_t k, const float *x, int64_t rows, float *out, int64_t n,
                               int64_t from, int64_t to) {
    products(Q4_0_TILE, q4_0_dot4, q4_0_dot1, w, rb, k, x, k, rows, out, n, from, to);
}

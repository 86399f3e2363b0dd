/*
 * Kiln: products with block-quantised matrices on the CLANG device (NativeBlockProducts).
 *
 * out[r * n + j] = sum_i x[r * k + i] * w_j[i] for rows r in [0, rows) of x (f32) and rows j in [from, to) of w, whose
 * rows are ggml blocks (Q8_0: f16 d, 32 signed bytes; Q4_0: f16 d, 16 bytes holding value i in the low nibble of byte i
 * and value i + 16 in its high nibble, each less 8). Every product is f32 with f32 accumulation: a block's 32 products
 * are summed, scaled by d and added to the row's sum (the terms of the Vector API path, reassociated); with AVX-512, the
 * block's values are scaled and multiplied into the row's lanes, as the tiles of several rows of x sum them. Four rows
 * of w go together so that each vector of x is loaded once for the four.
 *
 * Batch invariance: a row of x gets the same bits alone (decode) as among other rows (a batched step), as long as the
 * rows stay below the GEMM (NativeBlockProducts.MAX_ROWS); with x quantised and AVX-512 VNNI, the dot products sum in
 * the int8 GEMM's order, so that any number of rows does.
 *
 * Compiled with -ffp-contract=off and without -ffast-math: the multiply-adds below are explicit intrinsics; the portable
 * path sums each block in eight lanes so that it needs no reassociation from the compiler.
 *
 * Many rows of x (prefill) go through a GEMM at the end of this file instead: w dequantised into packed panels once per
 * pass, met by register tiles of x's rows (kiln_q8_0_gemm, kiln_q4_0_gemm).
 *
 * With x quantised and VNNI, NativeBlockProducts reads w interleaved by 16 rows instead (kiln_*_interleave16, then the
 * *_i16 products and GEMMs): see "Weights interleaved by 16 rows" below.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
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

/* A Q8_0 block's 32 values times its scale, as two vectors of 16. */
#define Q8_VALUES(p, lo, hi)                                                                                              \
    do {                                                                                                                  \
        __m512 d_ = _mm512_set1_ps(half_at(p));                                                                           \
        lo = _mm512_mul_ps(q8_16((p) + 2), d_);                                                                           \
        hi = _mm512_mul_ps(q8_16((p) + 18), d_);                                                                          \
    } while (0)

/*
 * The same for Q4_0: the 16 bytes zero-extended to 16 lanes, each nibble its value through a permute of the 16 values
 * -8..7 times the block's scale (the permute reads only an index's low four bits, so the low nibble needs no mask); low
 * nibbles meet x[0..16), high ones x[16..32). Scaling the 16 values once gives the products d * (q - 8) a scaling of
 * each nibble gives, in one multiply where that took two.
 */
#define Q4_VALUES(p, lo, hi)                                                                                              \
    do {                                                                                                                  \
        __m512 scaled_ = _mm512_mul_ps(_mm512_setr_ps(-8, -7, -6, -5, -4, -3, -2, -1, 0, 1, 2, 3, 4, 5, 6, 7), _mm512_set1_ps(half_at(p))); \
        __m512i raw_ = _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *) ((p) + 2)));                                \
        lo = _mm512_permutexvar_ps(raw_, scaled_);                                                                        \
        hi = _mm512_permutexvar_ps(_mm512_srli_epi32(raw_, 4), scaled_);                                                  \
    } while (0)

/*
 * A block of one row of w with a row of x, as the tiles below sum it (so that a row of x gets the same bits alone as in
 * a batched step: batch invariance): the block's values, scaled, multiplied and added to the row's 16 lanes, low half
 * then high half.
 */
#define BLOCK_STEP(VALUES, wp, xp, acc)                                                                                   \
    do {                                                                                                                  \
        __m512 lo_, hi_;                                                                                                  \
        VALUES(wp, lo_, hi_);                                                                                             \
        acc = _mm512_fmadd_ps(hi_, _mm512_loadu_ps((xp) + 16), _mm512_fmadd_ps(lo_, _mm512_loadu_ps(xp), acc));          \
    } while (0)
typedef __m512 vsum;
#define VZERO() _mm512_setzero_ps()
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
#define TILE4XR(NAME, VALUES, BYTES, R)                                                                                   \
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
            if (R > 1) TILE_ROW(1, x + k);                                                                                \
            if (R > 2) TILE_ROW(2, x + 2 * k);                                                                            \
            if (R > 3) TILE_ROW(3, x + 3 * k);                                                                            \
        }                                                                                                                 \
        TILE_STORE(0);                                                                                                    \
        if (R > 1) TILE_STORE(1);                                                                                         \
        if (R > 2) TILE_STORE(2);                                                                                         \
        if (R > 3) TILE_STORE(3);                                                                                         \
    }

/*
 * Also for two and three rows of x (a batched step of two or three sequences, a prompt's last rows): each block of w is
 * widened once for them, where one row at a time widened it once a row. An Intel Xeon, a batched decode step of the
 * Llama-3.2-1B-shaped Q8_0 model: two rows cost more than four before.
 */
TILE4XR(q8_0_tile, Q8_VALUES, 34, 4)
TILE4XR(q8_0_tile3, Q8_VALUES, 34, 3)
TILE4XR(q8_0_tile2, Q8_VALUES, 34, 2)
TILE4XR(q4_0_tile, Q4_VALUES, 18, 4)
TILE4XR(q4_0_tile3, Q4_VALUES, 18, 3)
TILE4XR(q4_0_tile2, Q4_VALUES, 18, 2)
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

/* A block of one row of w with x: its products summed in lanes, scaled by its d and added to the row's lanes. */
#define BLOCK_STEP(BLOCK, wp, xp, acc) acc = _mm256_fmadd_ps(BLOCK(wp, xp), _mm256_set1_ps(half_at(wp)), acc)
typedef __m256 vsum;
#define VZERO() _mm256_setzero_ps()
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
 * One row of w with x (dot1), and four rows of w with x (dot4), block by block (BLOCK_STEP of the vector path); a dot4
 * prefetches the next four rows as it goes (PREFETCH_GROUP).
 */
#define DOT4(NAME, BLOCK, BYTES)                                                                                         \
    static void NAME(const uint8_t *w, int64_t rb, int64_t blocks, const float *x, float *o) {                           \
        const uint8_t *w0 = w, *w1 = w + rb, *w2 = w + 2 * rb, *w3 = w + 3 * rb, *ahead = w + 4 * rb;                   \
        vsum a0 = VZERO(), a1 = a0, a2 = a0, a3 = a0;                                                                     \
        for (int64_t b = 0; b < blocks; b++, x += 32, w0 += BYTES, w1 += BYTES, w2 += BYTES, w3 += BYTES, ahead += 4 * BYTES) { \
            PREFETCH_GROUP(ahead, BYTES);                                                                                 \
            BLOCK_STEP(BLOCK, w0, x, a0);                                                                                 \
            BLOCK_STEP(BLOCK, w1, x, a1);                                                                                 \
            BLOCK_STEP(BLOCK, w2, x, a2);                                                                                 \
            BLOCK_STEP(BLOCK, w3, x, a3);                                                                                 \
        }                                                                                                                 \
        o[0] = VTOTAL(a0); o[1] = VTOTAL(a1); o[2] = VTOTAL(a2); o[3] = VTOTAL(a3);                                       \
    }
#define DOT1(NAME, BLOCK, BYTES)                                                                                         \
    static float NAME(const uint8_t *w, int64_t blocks, const float *x) {                                                \
        vsum a = VZERO();                                                                                                 \
        for (int64_t b = 0; b < blocks; b++, x += 32, w += BYTES) BLOCK_STEP(BLOCK, w, x, a);                             \
        return VTOTAL(a);                                                                                                 \
    }
#if defined(__AVX512F__)
DOT4(q8_0_dot4, Q8_VALUES, 34)
DOT1(q8_0_dot1, Q8_VALUES, 34)
DOT4(q4_0_dot4, Q4_VALUES, 18)
DOT1(q4_0_dot1, Q4_VALUES, 18)
#else
DOT4(q8_0_dot4, q8_block, 34)
DOT1(q8_0_dot1, q8_block, 34)
DOT4(q4_0_dot4, q4_block, 18)
DOT1(q4_0_dot1, q4_block, 18)
#endif
#endif

#ifdef HAVE_TILE
#define Q8_0_TILES q8_0_tile, q8_0_tile3, q8_0_tile2
#define Q4_0_TILES q4_0_tile, q4_0_tile3, q4_0_tile2
#else /* four rows of x at a time as four dot4s */
#define Q8_0_TILES NULL, NULL, NULL
#define Q4_0_TILES NULL, NULL, NULL
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
#if !(defined(__AVX512VNNI__) && defined(__AVX512F__)) /* with VNNI: kiln_q8_0_q8_products below */
DOT4_Q8X(q8_0_q8_dot4, q8_bytes, 34)
DOT1_Q8X(q8_0_q8_dot1, q8_bytes, 34)
DOT4_Q8X(q4_0_q8_dot4, q4_bytes, 18)
DOT1_Q8X(q4_0_q8_dot1, q4_bytes, 18)
#endif

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
 * rows of w a pass, four rows of x at a time through the tile where there is one, then three or two through theirs,
 * the rest row by row.
 */
#define PRODUCTS(NAME, XT)                                                                                                \
    static void NAME(void (*tile)(const uint8_t *, int64_t, int64_t, const XT *, int64_t, float *, int64_t),             \
                     void (*tile3)(const uint8_t *, int64_t, int64_t, const XT *, int64_t, float *, int64_t),            \
                     void (*tile2)(const uint8_t *, int64_t, int64_t, const XT *, int64_t, float *, int64_t),            \
                     void (*dot4)(const uint8_t *, int64_t, int64_t, const XT *, float *),                                \
                     float (*dot1)(const uint8_t *, int64_t, const XT *), const uint8_t *w, int64_t rb, int64_t k,        \
                     const XT *x, int64_t x_row, int64_t rows, float *out, int64_t n, int64_t from, int64_t to) {         \
        int64_t blocks = k / 32, j = from;                                                                                \
        float o[4];                                                                                                       \
        for (; j + 4 <= to; j += 4) {                                                                                     \
            int64_t r = 0;                                                                                                \
            if (tile)                                                                                                     \
                for (; r + 4 <= rows; r += 4) tile(w + j * rb, rb, blocks, x + r * x_row, x_row, out + r * n + j, n);     \
            if (tile3 && rows - r == 3) {                                                                                 \
                tile3(w + j * rb, rb, blocks, x + r * x_row, x_row, out + r * n + j, n);                                  \
                r += 3;                                                                                                   \
            } else if (tile2 && rows - r == 2) {                                                                          \
                tile2(w + j * rb, rb, blocks, x + r * x_row, x_row, out + r * n + j, n);                                  \
                r += 2;                                                                                                   \
            }                                                                                                             \
            for (; r < rows; r++) {                                                                                       \
                dot4(w + j * rb, rb, blocks, x + r * x_row, o);                                                           \
                memcpy(out + r * n + j, o, sizeof o);                                                                     \
            }                                                                                                             \
        }                                                                                                                 \
        for (; j < to; j++)                                                                                               \
            for (int64_t r = 0; r < rows; r++) out[r * n + j] = dot1(w + j * rb, blocks, x + r * x_row);                  \
    }
#if !(defined(__AVX512VNNI__) && defined(__AVX512F__)) /* with VNNI: at the end, in the int8 GEMM's order */
PRODUCTS(products_q8x_by_rows, uint8_t)

/* Rows [from, to) of w (Q4_0 when q4, else Q8_0) against the first `rows` rows of x quantised, into out (rows, n). */
static void products_q8x(int q4, const uint8_t *w, int64_t rb, int64_t k, const uint8_t *x, int64_t rows, float *out, int64_t n,
                         int64_t from, int64_t to) {
    products_q8x_by_rows(NULL, NULL, NULL, q4 ? q4_0_q8_dot4 : q8_0_q8_dot4, q4 ? q4_0_q8_dot1 : q8_0_q8_dot1, w, rb, k, x, k / 32 * 34, rows,
                         out, n, from, to);
}
#endif

PRODUCTS(products, float)

/* Rows [from, to) of w (Q8_0, rb bytes a row, k values) with the first `rows` rows of x, into out (rows, n). */
EXPORT void kiln_q8_0_products(const uint8_t *w, int64_t rb, int64_t k, const float *x, int64_t rows, float *out, int64_t n,
                               int64_t from, int64_t to) {
    products(Q8_0_TILES, q8_0_dot4, q8_0_dot1, w, rb, k, x, k, rows, out, n, from, to);
}

/* The same for Q4_0. */
EXPORT void kiln_q4_0_products(const uint8_t *w, int64_t rb, int64_t k, const float *x, int64_t rows, float *out, int64_t n,
                               int64_t from, int64_t to) {
    products(Q4_0_TILES, q4_0_dot4, q4_0_dot1, w, rb, k, x, k, rows, out, n, from, to);
}

/*
 * Many rows of x (prefill): a GEMM over dequantised panels of w. For a panel of GEMM_NR rows of w, their values over the
 * whole of k are dequantised once into `bp` (k x GEMM_NR floats, a row of w a column: the values a multiply-add meets
 * side by side), then every tile of GEMM_MR rows of x (packed beforehand by kiln_gemm_pack_rows: k x GEMM_MR floats, a
 * row of x a column) meets it in GEMM_MR x 2 vector registers over all of k, and the tile is stored once. The panel
 * (k x 32 or 64 floats, 256 KB at k = 2048) stays in L2 while the tiles stream through it.
 */
#if defined(__AVX512F__)
typedef __m512 vfloat;
#define GEMM_VW 16
#define GEMM_MR 12
#define GV_ZERO() _mm512_setzero_ps()
#define GV_LOAD(p) _mm512_loadu_ps(p)
#define GV_STORE(p, v) _mm512_storeu_ps(p, v)
#define GV_SET1(f) _mm512_set1_ps(f)
#define GV_FMA(a, b, c) _mm512_fmadd_ps(a, b, c)
#define GV_ADD(a, b) _mm512_add_ps(a, b)
#elif defined(__AVX2__) && defined(__FMA__)
typedef __m256 vfloat;
#define GEMM_VW 8
#define GEMM_MR 6
#define GV_ZERO() _mm256_setzero_ps()
#define GV_LOAD(p) _mm256_loadu_ps(p)
#define GV_STORE(p, v) _mm256_storeu_ps(p, v)
#define GV_SET1(f) _mm256_set1_ps(f)
#define GV_FMA(a, b, c) _mm256_fmadd_ps(a, b, c)
#define GV_ADD(a, b) _mm256_add_ps(a, b)
#else
typedef float vfloat __attribute__((vector_size(16)));
#define GEMM_VW 4
#define GEMM_MR 4
static inline vfloat gv_load(const float *p) { vfloat v; memcpy(&v, p, sizeof v); return v; }
static inline void gv_store(float *p, vfloat v) { memcpy(p, &v, sizeof v); }
#define GV_ZERO() ((vfloat) {0, 0, 0, 0})
#define GV_LOAD(p) gv_load(p)
#define GV_STORE(p, v) gv_store(p, v)
#define GV_SET1(f) ((vfloat) {0, 0, 0, 0} + (f))
#define GV_FMA(a, b, c) ((a) * (b) + (c))
#define GV_ADD(a, b) ((a) + (b))
#endif
#define GEMM_NR (2 * GEMM_VW)

/*
 * One tile: out rows [0, m) and columns [0, nr) (ldc apart) = ap (k x GEMM_MR) times bp (k x GEMM_NR), added to what
 * out holds when `add`.
 */
static void gemm_tile(const float *ap, const float *bp, int64_t k, float *out, int64_t ldc, int64_t m, int64_t nr, int add) {
    vfloat c0[GEMM_MR], c1[GEMM_MR];
#pragma GCC unroll 16
    for (int i = 0; i < GEMM_MR; i++) c0[i] = c1[i] = GV_ZERO();
    for (int64_t p = 0; p < k; p++, ap += GEMM_MR, bp += GEMM_NR) {
        vfloat b0 = GV_LOAD(bp), b1 = GV_LOAD(bp + GEMM_VW);
#pragma GCC unroll 16
        for (int i = 0; i < GEMM_MR; i++) {
            vfloat a = GV_SET1(ap[i]);
            c0[i] = GV_FMA(a, b0, c0[i]);
            c1[i] = GV_FMA(a, b1, c1[i]);
        }
    }
    if (nr == GEMM_NR) {
#pragma GCC unroll 16
        for (int i = 0; i < GEMM_MR; i++) {
            if (i < m) {
                float *o = out + i * ldc;
                GV_STORE(o, add ? GV_ADD(GV_LOAD(o), c0[i]) : c0[i]);
                GV_STORE(o + GEMM_VW, add ? GV_ADD(GV_LOAD(o + GEMM_VW), c1[i]) : c1[i]);
            }
        }
    } else {
        float row[GEMM_NR];
        for (int i = 0; i < m; i++) {
            GV_STORE(row, c0[i]);
            GV_STORE(row + GEMM_VW, c1[i]);
            float *o = out + i * ldc;
            for (int64_t j = 0; j < nr; j++) o[j] = add ? o[j] + row[j] : row[j];
        }
    }
}

/*
 * Rows [j0, j0 + nr) of w, values [k0, k0 + kc) of each (kc a multiple of 32), dequantised into bp (kc x GEMM_NR,
 * zeros past nr): Q8_0 (q4 = 0) or Q4_0. Each value is one f32 product of its integer and the block's scale, as ggml
 * dequantises.
 */
#if defined(__AVX512F__)
/*
 * A 16 x 16 transpose in registers: stage d swaps bit d of the row index with bit d of the column index, by one
 * two-source permute per row (r[i] takes the columns with bit d set from r[i + d], and r[i + d] the others from r[i]).
 */
static inline void transpose16(__m512 r[16]) {
#pragma GCC unroll 4
    for (int d = 8; d >= 1; d >>= 1) {
        int lo[16], hi[16];
        for (int j = 0; j < 16; j++) {
            lo[j] = (j & d) ? 16 + j - d : j;
            hi[j] = (j & d) ? 16 + j : j + d;
        }
        __m512i il = _mm512_loadu_si512(lo), ih = _mm512_loadu_si512(hi);
#pragma GCC unroll 16
        for (int i = 0; i < 16; i++) {
            if (i & d) continue;
            __m512 a = r[i], b = r[i + d];
            r[i] = _mm512_permutex2var_ps(a, il, b);
            r[i + d] = _mm512_permutex2var_ps(a, ih, b);
        }
    }
}

/* gemm_panel's values, 16 rows of w at a time: each block's 32 values a row widened, then turned into columns. */
static void gemm_panel(int q4, const uint8_t *w, int64_t rb, int64_t k0, int64_t kc, int64_t j0, int64_t nr, float *bp) {
    int bytes = q4 ? 18 : 34;
    for (int c0 = 0; c0 < GEMM_NR; c0 += 16) {
        for (int64_t p = 0; p < kc; p += 32) {
            __m512 lo[16], hi[16];
#pragma GCC unroll 16
            for (int i = 0; i < 16; i++) {
                if (c0 + i >= nr) {
                    lo[i] = hi[i] = _mm512_setzero_ps();
                    continue;
                }
                const uint8_t *b = w + (j0 + c0 + i) * rb + (k0 + p) / 32 * bytes;
                if (q4) Q4_VALUES(b, lo[i], hi[i]);
                else Q8_VALUES(b, lo[i], hi[i]);
            }
            transpose16(lo);
            transpose16(hi);
#pragma GCC unroll 16
            for (int t = 0; t < 16; t++) {
                _mm512_storeu_ps(bp + (p + t) * GEMM_NR + c0, lo[t]);
                _mm512_storeu_ps(bp + (p + 16 + t) * GEMM_NR + c0, hi[t]);
            }
        }
    }
}
#else
static void gemm_panel(int q4, const uint8_t *w, int64_t rb, int64_t k0, int64_t kc, int64_t j0, int64_t nr, float *bp) {
    int bytes = q4 ? 18 : 34;
    for (int c = 0; c < GEMM_NR; c++) {
        if (c >= nr) {
            for (int64_t p = 0; p < kc; p++) bp[p * GEMM_NR + c] = 0;
            continue;
        }
        const uint8_t *b = w + (j0 + c) * rb + k0 / 32 * bytes;
        for (int64_t p = 0; p < kc; p += 32, b += bytes) {
            float d = half_at(b), v[32];
            if (q4) {
                for (int t = 0; t < 16; t++) {
                    v[t] = (float) ((b[2 + t] & 15) - 8) * d;
                    v[t + 16] = (float) ((b[2 + t] >> 4) - 8) * d;
                }
            } else {
                for (int t = 0; t < 32; t++) v[t] = (float) (int8_t) b[2 + t] * d;
            }
            for (int t = 0; t < 32; t++) bp[(p + t) * GEMM_NR + c] = v[t];
        }
    }
}
#endif

/* Rows of x packed for the tiles: tile t's k x GEMM_MR floats from ap + t * k * GEMM_MR, zeros past the last row. */
EXPORT void kiln_gemm_pack_rows(const float *x, int64_t rows, int64_t k, float *ap) {
    int64_t tiles = (rows + GEMM_MR - 1) / GEMM_MR;
    for (int64_t t = 0; t < tiles; t++) {
        float *dst = ap + t * k * GEMM_MR;
        for (int i = 0; i < GEMM_MR; i++) {
            int64_t r = t * GEMM_MR + i;
            if (r < rows) for (int64_t p = 0; p < k; p++) dst[p * GEMM_MR + i] = x[r * k + p];
            else for (int64_t p = 0; p < k; p++) dst[p * GEMM_MR + i] = 0;
        }
    }
}

/* Cache blocking: GEMM_KC values of k a pass, GEMM_NC rows of w dequantised a pass, GEMM_MC_TILES tiles of x a block. */
#define GEMM_KC 256
#define GEMM_NC 512
#define GEMM_MC_TILES 8

/* Bytes of the packed rows (kiln_gemm_pack_rows) and of a caller's scratch for kiln_*_gemm. */
EXPORT int64_t kiln_gemm_packed_bytes(int64_t rows, int64_t k) { return (rows + GEMM_MR - 1) / GEMM_MR * GEMM_MR * k * 4; }

EXPORT int64_t kiln_gemm_scratch_bytes(void) { return (int64_t) GEMM_KC * GEMM_NC * 4; }

/* Rows of w per panel: the ranges [from, to) the callers split n into are best multiples of it. */
EXPORT int64_t kiln_gemm_panel_rows(void) { return GEMM_NR; }

/*
 * The loops around the tile, BLIS's: per GEMM_NC rows of w and GEMM_KC values of k, those values of those rows are
 * dequantised once into panels (GEMM_KC x GEMM_NR floats each, 32 KB with AVX-512: L1) and met by every tile of x, a
 * block of GEMM_MC_TILES tiles (96 x 256 floats with AVX-512: L2) at a time across all the panels; the sums of a pass
 * are added to the previous passes' in out.
 */
static void gemm(int q4, const uint8_t *w, int64_t rb, int64_t k, const float *ap, int64_t rows, float *out, int64_t n, int64_t from,
                 int64_t to, float *bp) {
    int64_t tiles = (rows + GEMM_MR - 1) / GEMM_MR;
    for (int64_t jc = from; jc < to; jc += GEMM_NC) {
        int64_t nc = to - jc < GEMM_NC ? to - jc : GEMM_NC;
        for (int64_t pc = 0; pc < k; pc += GEMM_KC) {
            int64_t kc = k - pc < GEMM_KC ? k - pc : GEMM_KC;
            for (int64_t jr = 0; jr < nc; jr += GEMM_NR) gemm_panel(q4, w, rb, pc, kc, jc + jr, nc - jr < GEMM_NR ? nc - jr : GEMM_NR, bp + jr * kc);
            for (int64_t ic = 0; ic < tiles; ic += GEMM_MC_TILES) {
                int64_t last = ic + GEMM_MC_TILES < tiles ? ic + GEMM_MC_TILES : tiles;
                for (int64_t jr = 0; jr < nc; jr += GEMM_NR) {
                    for (int64_t t = ic; t < last; t++) {
                        int64_t m = rows - t * GEMM_MR < GEMM_MR ? rows - t * GEMM_MR : GEMM_MR;
                        gemm_tile(ap + t * k * GEMM_MR + pc * GEMM_MR, bp + jr * kc, kc, out + t * GEMM_MR * n + jc + jr, n, m,
                                  nc - jr < GEMM_NR ? nc - jr : GEMM_NR, pc > 0);
                    }
                }
            }
        }
    }
}

/*
 * Rows [from, to) of w (Q8_0, rb bytes a row, k values) with `rows` rows of x packed by kiln_gemm_pack_rows, into out
 * (rows, n); bp: kiln_gemm_scratch_floats() floats of scratch, the caller's (one per thread).
 */
EXPORT void kiln_q8_0_gemm(const uint8_t *w, int64_t rb, int64_t k, const float *ap, int64_t rows, float *out, int64_t n, int64_t from,
                           int64_t to, float *bp) {
    gemm(0, w, rb, k, ap, rows, out, n, from, to, bp);
}

/* The same for Q4_0. */
EXPORT void kiln_q4_0_gemm(const uint8_t *w, int64_t rb, int64_t k, const float *ap, int64_t rows, float *out, int64_t n, int64_t from,
                           int64_t to, float *bp) {
    gemm(1, w, rb, k, ap, rows, out, n, from, to, bp);
}

/*
 * The same GEMM with x quantised to Q8_0 (NativeBlockProducts.withQuantizedActivations, llama.cpp's products): per block
 * of 32 values, the exact integer sum of the products of w's and x's integers, times both scales, summed in f32. With
 * AVX-512 VNNI, vpdpbusd multiplies four bytes of x (as unsigned: q + 128) by four of w (signed) into each 32-bit lane; a
 * lane is a row of w, so a block's sums for GEMM_Q8_NR rows of w take 8 steps, and 128 times the sum of w's integers
 * (kept with the panel) is taken off. Elsewhere the same layout is summed in plain C, the integer part as exactly.
 *
 * x packed (kiln_q8_gemm_pack_rows), per tile of GEMM_Q8_MR rows and block: the bytes q + 128 as [8][GEMM_Q8_MR][4],
 * then (after every tile) the scales [tiles][blocks][GEMM_Q8_MR]. A panel: per block, w's bytes [8][GEMM_Q8_NR][4], and
 * per block the rows' scales and 128 times their integers' sums.
 */
#define GEMM_Q8_MR 4
#define GEMM_Q8_NR 32
#define GEMM_Q8_KB 8 /* blocks a pass */

EXPORT int64_t kiln_q8_gemm_packed_bytes(int64_t rows, int64_t k) {
    int64_t units = (rows + GEMM_Q8_MR - 1) / GEMM_Q8_MR * (k / 32) * GEMM_Q8_MR;
    return units * 32 + units * 4;
}

EXPORT int64_t kiln_q8_gemm_scratch_bytes(void) { return (int64_t) (GEMM_NC / GEMM_Q8_NR) * GEMM_Q8_KB * GEMM_Q8_NR * (32 + 4 + 4); }

EXPORT int64_t kiln_q8_gemm_panel_rows(void) { return GEMM_Q8_NR; }

/* Whether the int8 GEMM runs in vector registers here (AVX-512 VNNI); elsewhere in plain C, exact but slow. */
EXPORT int64_t kiln_q8_gemm_vectorised(void) {
#if defined(__AVX512VNNI__) && defined(__AVX512F__)
    return 1;
#else
    return 0;
#endif
}

/* f as f16 bits, rounded to nearest even (Java's Float.floatToFloat16): the scale a Q8_0 block of x stores. */
static inline uint16_t f16_bits(float f) {
#if defined(__F16C__)
    return _cvtss_sh(f, _MM_FROUND_TO_NEAREST_INT);
#else
    uint32_t bits;
    memcpy(&bits, &f, 4);
    uint32_t sign = bits & 0x80000000u, a = bits & 0x7fffffffu;
    uint16_t h;
    if (a >= 0x7f800000u) h = (uint16_t) (a > 0x7f800000u ? 0x7e00u : 0x7c00u);            /* NaN, infinity */
    else if (a >= 0x477ff000u) h = 0x7c00u;                                                /* rounds past 65504 */
    else if (a >= 0x38800000u) {                                                           /* normal */
        uint32_t m = a + 0xfffu + ((a >> 13) & 1u);
        h = (uint16_t) ((m - 0x38000000u) >> 13);
    } else {                                                                               /* subnormal or zero */
        int shift = 126 - (int) (a >> 23);
        if (shift > 24) h = 0;
        else {
            uint32_t m = (a & 0x7fffffu) | 0x800000u, r = m >> shift, rem = m & ((1u << shift) - 1), half = 1u << (shift - 1);
            h = (uint16_t) (r + (rem > half || (rem == half && (r & 1u))));
        }
    }
    return (uint16_t) (h | (sign >> 16));
#endif
}

/*
 * 32 floats of x as a Q8_0 block with NativeBlockProducts.quantizeQ8_0's bits: its 32 integers into q, its scale's f16
 * bits returned. d = max|x| / 127 rounded to f16, q = rint(x * (127 / max|x|)) with ties to even, every q 0 where d
 * rounds to 0 (its products are 0 anyway, and 127 / max|x| could overflow), a NaN in the block makes max NaN and every q 0.
 */
static inline uint16_t q8_0_block(const float *v, int8_t *q) {
    float max;
#if defined(__AVX512F__)
    __m512 lo = _mm512_loadu_ps(v), hi = _mm512_loadu_ps(v + 16);
    max = _mm512_reduce_max_ps(_mm512_max_ps(_mm512_abs_ps(lo), _mm512_abs_ps(hi)));
    if (_mm512_cmp_ps_mask(lo, lo, _CMP_UNORD_Q) | _mm512_cmp_ps_mask(hi, hi, _CMP_UNORD_Q)) max = NAN;
    uint16_t d = f16_bits(max / 127.0f);
    __m512 inverse = _mm512_set1_ps((d & 0x7fffu) == 0 ? 0 : 127.0f / max);
    const int nearest = _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC;
    /* a NaN product converts to 0x80000000, whose low byte is Java's (byte) of NaN: 0 */
    _mm_storeu_si128((__m128i *) q, _mm512_cvtepi32_epi8(_mm512_cvtps_epi32(_mm512_roundscale_ps(_mm512_mul_ps(lo, inverse), nearest))));
    _mm_storeu_si128((__m128i *) (q + 16), _mm512_cvtepi32_epi8(_mm512_cvtps_epi32(_mm512_roundscale_ps(_mm512_mul_ps(hi, inverse), nearest))));
#else
    max = 0;
    for (int i = 0; i < 32; i++) {
        float a = fabsf(v[i]);
        if (a != a) max = a;
        else if (max == max && a > max) max = a;
    }
    uint16_t d = f16_bits(max / 127.0f);
    float inverse = (d & 0x7fffu) == 0 ? 0 : 127.0f / max;
    for (int i = 0; i < 32; i++) {
        float r = rintf(v[i] * inverse);
        q[i] = r == r ? (int8_t) (int) r : 0;
    }
#endif
    return d;
}

/*
 * blocks * 32 floats of x as Q8_0 blocks (an f16 scale, 32 int8) in out (q8_0_block's). Vectorised where AVX-512 runs
 * (decode quantises x before each product: Java's loop took 7.5 us for 2,048 floats, 29 us for 8,192, about 0.8 ms of
 * a Llama-3.2-1B token).
 */
EXPORT void kiln_q8_0_quantize(const float *x, int64_t blocks, uint8_t *out) {
    for (int64_t b = 0; b < blocks; b++) {
        uint16_t d = q8_0_block(x + 32 * b, (int8_t *) (out + 34 * b + 2));
        memcpy(out + 34 * b, &d, 2);
    }
}

/*
 * The first `rows` rows of x (f32, k values each) quantised to Q8_0 (q8_0_block: NativeBlockProducts.quantizeQ8_0's bits)
 * and packed for the tiles, q + 128 a byte; zeros (bytes 128, scales 0) past the last row.
 */
EXPORT void kiln_q8_gemm_pack_rows(const float *x, int64_t rows, int64_t k, uint8_t *packed) {
    int64_t blocks = k / 32, tiles = (rows + GEMM_Q8_MR - 1) / GEMM_Q8_MR;
    float *scales = (float *) (packed + tiles * blocks * 32 * GEMM_Q8_MR);
    for (int64_t t = 0; t < tiles; t++)
        for (int m = 0; m < GEMM_Q8_MR; m++) {
            int64_t r = t * GEMM_Q8_MR + m;
            for (int64_t b = 0; b < blocks; b++) {
                uint8_t q[32];
                float d = 0;
                if (r < rows) {
                    uint8_t h[2];
                    uint16_t bits = q8_0_block(x + r * k + b * 32, (int8_t *) q);
                    for (int i = 0; i < 32; i++) q[i] ^= 0x80; /* the tiles' unsigned bytes: q + 128 */
                    memcpy(h, &bits, 2);
                    d = half_at(h);
                } else {
                    memset(q, 128, 32);
                }
                scales[(t * blocks + b) * GEMM_Q8_MR + m] = d;
                for (int g = 0; g < 8; g++) memcpy(packed + ((t * blocks + b) * 8 + g) * GEMM_Q8_MR * 4 + m * 4, q + 4 * g, 4);
            }
        }
}

/*
 * Weights interleaved by 16 rows, for the products with x quantised where AVX-512 VNNI runs them (NativeBlockProducts
 * interleaves a model's Q8_0 and Q4_0 matrices once, on first use). Each 16 rows from row 0 (the rows past the last
 * multiple of 16 stay as they are) hold, block by block, the 16 rows' f16 scales, then the block's bytes as vectors of
 * sixteen 4-byte lanes: lane r of vector i is row r's bytes [4i, 4i + 4) (Q4_0: 4 vectors, Q8_0: 8). As many bytes as
 * the rows had, but one stream of w instead of sixteen, and each vpdpbusd sums four products of every row into the
 * row's own lane: the dot products need no lane reductions or gathers of scales, and the GEMM's panel is these vectors
 * as they are (Q8_0) or split into nibbles (Q4_0). The sums are the same as with the rows plain, bit for bit.
 */
/* Bytes of a group's block before its vectors: the 16 rows' f16 scales. */
#define I16_SCALES 32
/* Entries of x's block sums and scales (rows x blocks) products_i16 keeps on the stack; more go to the heap. */
#define I16_X_STACK 4096
/*
 * How far ahead of its block i16_rows prefetches w: about 4.5 KB (streaming Llama-3.2-1B's ffn_gate on two cores of an
 * Intel Xeon, Q4_0: 8 blocks, 2.3 KB ahead, 19.4-22.3 GB/s; 16 blocks 23.0-27.2; Q8_0 alike within the noise at 4.4 and 8.7 KB).
 */
#ifndef I16_PREFETCH_BYTES
#define I16_PREFETCH_BYTES 4608
#endif

/* Block b of row j of w, plain or (il) interleaved up to row n16: its scale, and its 32 integers (Q4_0's less 8) into v. */
static float block_values(int q4, int il, const uint8_t *w, int64_t rb, int64_t n16, int64_t j, int64_t b, int8_t v[32]) {
    int bytes = q4 ? 18 : 34;
    uint8_t raw[32];
    float d;
    if (il && j < n16) {
        const uint8_t *g = w + (j & ~(int64_t) 15) * rb + b * 16 * bytes;
        int lane = (int) (j & 15);
        d = half_at(g + 2 * lane);
        for (int i = 0; i < (bytes - 2) / 4; i++) memcpy(raw + 4 * i, g + I16_SCALES + 64 * i + 4 * lane, 4);
    } else {
        const uint8_t *blk = w + j * rb + b * bytes;
        d = half_at(blk);
        memcpy(raw, blk + 2, bytes - 2);
    }
    if (q4) {
        for (int t = 0; t < 16; t++) {
            v[t] = (int8_t) ((raw[t] & 15) - 8);
            v[t + 16] = (int8_t) ((raw[t] >> 4) - 8);
        }
    } else {
        memcpy(v, raw, 32);
    }
    return d;
}

/* Groups [g0, g1) of 16 rows of w (Q8_0 or Q4_0, k values a row) interleaved into the same places of out. */
static void interleave16(int q4, const uint8_t *w, int64_t rb, int64_t k, int64_t g0, int64_t g1, uint8_t *out) {
    int bytes = q4 ? 18 : 34, words = (bytes - 2) / 4;
    for (int64_t g = g0; g < g1; g++)
        for (int64_t b = 0; b < k / 32; b++) {
            const uint8_t *src = w + 16 * g * rb + b * bytes;
            uint8_t *dst = out + 16 * g * rb + b * 16 * bytes;
            for (int r = 0; r < 16; r++) {
                memcpy(dst + 2 * r, src + r * rb, 2);
                for (int i = 0; i < words; i++) memcpy(dst + I16_SCALES + 64 * i + 4 * r, src + r * rb + 2 + 4 * i, 4);
            }
        }
}

/* Rows [16 from, 16 to) of w (Q8_0, rb bytes a row, k values) interleaved into out (as many bytes as w). */
EXPORT void kiln_q8_0_interleave16(const uint8_t *w, int64_t rb, int64_t k, int64_t from, int64_t to, uint8_t *out) {
    interleave16(0, w, rb, k, from, to, out);
}

/* The same for Q4_0. */
EXPORT void kiln_q4_0_interleave16(const uint8_t *w, int64_t rb, int64_t k, int64_t from, int64_t to, uint8_t *out) {
    interleave16(1, w, rb, k, from, to, out);
}

/*
 * GCC 12 vectorises a sum of 32 products of signed bytes wrongly where the target has VNNI (a constant trip count of
 * 32 gave 77539 for 13795, at -O2 with -march=native, icelake-server or sapphirerapids), so such scalar sums stay scalar.
 */
#if defined(__GNUC__) && !defined(__clang__)
#define SCALAR_SUMS __attribute__((optimize("no-tree-vectorize")))
#else
#define SCALAR_SUMS
#endif

/*
 * Row j of w (plain or interleaved, as block_values reads it) with one row of x quantised, summed as gemm_q8 sums a
 * column: per block the exact integer sum times d_w * d_x (a fused multiply-add where the GEMM uses VNNI), in passes
 * of GEMM_Q8_KB blocks.
 */
SCALAR_SUMS static float row_dot(int q4, int il, const uint8_t *w, int64_t rb, int64_t n16, int64_t j, int64_t blocks, const uint8_t *x) {
    float total = 0;
    for (int64_t pb = 0; pb < blocks; pb += GEMM_Q8_KB) {
        int64_t last = blocks - pb < GEMM_Q8_KB ? blocks : pb + GEMM_Q8_KB;
        float pass = 0;
        for (int64_t b = pb; b < last; b++) {
            int8_t v[32];
            float d = block_values(q4, il, w, rb, n16, j, b, v);
            const uint8_t *xb = x + b * 34;
            int32_t sum = 0;
            for (int i = 0; i < 32; i++) sum += v[i] * (int8_t) xb[2 + i];
#if defined(__AVX512VNNI__) && defined(__AVX512F__)
            pass = fmaf((float) sum, d * half_at(xb), pass);
#else
            pass += (float) sum * (d * half_at(xb));
#endif
        }
        total = pb == 0 ? pass : total + pass;
    }
    return total;
}

#if defined(__AVX512VNNI__) && defined(__AVX512F__)
/*
 * gemm_q8_panel's panel, 16 rows of w at a time: each row's 32 integers of a block (Q4_0's nibbles less 8) as eight
 * 32-bit groups in a register, the 16 rows turned into 8 columns of groups by transpose16, the sums of the integers by
 * vpdpbusd against ones.
 */
static void gemm_q8_panel(int q4, int il, const uint8_t *w, int64_t rb, int64_t n16, int64_t b0, int64_t nb, int64_t j0, int64_t nr,
                          int8_t *bq, float *bd, int32_t *bs) {
    int bytes = q4 ? 18 : 34;
    const __m512i ones = _mm512_set1_epi8(1), low = _mm512_set1_epi8(15), eight = _mm512_set1_epi8(8);
    for (int64_t b = 0; b < nb; b++) {
        for (int c0 = 0; c0 < GEMM_Q8_NR; c0 += 16) {
            if (il && (j0 + c0) % 16 == 0 && c0 + 16 <= nr && j0 + c0 + 16 <= n16) { /* an interleaved group: its vectors are the columns */
                const uint8_t *g = w + (j0 + c0) * rb + (b0 + b) * 16 * bytes;
                _mm512_storeu_ps(bd + b * GEMM_Q8_NR + c0, _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *) g)));
                __m512i sums = _mm512_setzero_si512();
#pragma GCC unroll 8
                for (int i = 0; i < (bytes - 2) / 4; i++) {
                    __m512i q = _mm512_loadu_si512(g + I16_SCALES + 64 * i);
                    if (q4) {
                        __m512i lo = _mm512_sub_epi8(_mm512_and_si512(q, low), eight), hi = _mm512_sub_epi8(_mm512_and_si512(_mm512_srli_epi16(q, 4), low), eight);
                        _mm512_storeu_si512(bq + ((b * 8 + i) * GEMM_Q8_NR + c0) * 4, lo);
                        _mm512_storeu_si512(bq + ((b * 8 + 4 + i) * GEMM_Q8_NR + c0) * 4, hi);
                        sums = _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(sums, ones, lo), ones, hi);
                    } else {
                        _mm512_storeu_si512(bq + ((b * 8 + i) * GEMM_Q8_NR + c0) * 4, q);
                        sums = _mm512_dpbusd_epi32(sums, ones, q);
                    }
                }
                _mm512_storeu_si512(bs + b * GEMM_Q8_NR + c0, _mm512_slli_epi32(sums, 7));
                continue;
            }
            __m512 r[16];
#pragma GCC unroll 16
            for (int i = 0; i < 16; i++) {
                if (c0 + i >= nr) {
                    r[i] = _mm512_setzero_ps();
                    bd[b * GEMM_Q8_NR + c0 + i] = 0;
                    continue;
                }
                const uint8_t *blk = w + (j0 + c0 + i) * rb + (b0 + b) * bytes;
                __m256i v;
                if (q4) {
                    __m128i raw = _mm_loadu_si128((const __m128i *) (blk + 2)), low = _mm_set1_epi8(15), eight = _mm_set1_epi8(8);
                    v = _mm256_set_m128i(_mm_sub_epi8(_mm_and_si128(_mm_srli_epi16(raw, 4), low), eight), _mm_sub_epi8(_mm_and_si128(raw, low), eight));
                } else {
                    v = _mm256_loadu_si256((const __m256i *) (blk + 2));
                }
                r[i] = _mm512_castsi512_ps(_mm512_zextsi256_si512(v));
                bd[b * GEMM_Q8_NR + c0 + i] = half_at(blk);
            }
            transpose16(r);
            __m512i sums = _mm512_setzero_si512();
#pragma GCC unroll 8
            for (int g = 0; g < 8; g++) {
                __m512i col = _mm512_castps_si512(r[g]);
                _mm512_storeu_si512(bq + ((b * 8 + g) * GEMM_Q8_NR + c0) * 4, col);
                sums = _mm512_dpbusd_epi32(sums, ones, col);
            }
            _mm512_storeu_si512(bs + b * GEMM_Q8_NR + c0, _mm512_slli_epi32(sums, 7));
        }
    }
}
#else
/* Rows [j0, j0 + nr) of w (Q8_0 or Q4_0; il: interleaved up to row n16), blocks [b0, b0 + nb), as a panel (zeros past nr). */
static void gemm_q8_panel(int q4, int il, const uint8_t *w, int64_t rb, int64_t n16, int64_t b0, int64_t nb, int64_t j0, int64_t nr,
                          int8_t *bq, float *bd, int32_t *bs) {
    for (int64_t b = 0; b < nb; b++) {
        for (int c = 0; c < GEMM_Q8_NR; c++) {
            int8_t v[32] = {0};
            float d = c < nr ? block_values(q4, il, w, rb, n16, j0 + c, b0 + b, v) : 0;
            int32_t s = 0;
            for (int t = 0; t < 32; t++) s += v[t];
            for (int g = 0; g < 8; g++) memcpy(bq + ((b * 8 + g) * GEMM_Q8_NR + c) * 4, v + 4 * g, 4);
            bd[b * GEMM_Q8_NR + c] = d;
            bs[b * GEMM_Q8_NR + c] = 128 * s;
        }
    }
}
#endif

/* One tile: out rows [0, m), columns [0, nr) (ldc apart) = the nb blocks' sums of ap's rows with the panel's, added when `add`. */
static void gemm_q8_tile(const uint8_t *apq, const float *apd, const int8_t *bq, const float *bd, const int32_t *bs, int64_t nb, float *out,
                         int64_t ldc, int64_t m, int64_t nr, int add) {
    float row[GEMM_Q8_NR];
#if defined(__AVX512VNNI__) && defined(__AVX512F__)
    __m512 f0[GEMM_Q8_MR], f1[GEMM_Q8_MR];
#pragma GCC unroll 8
    for (int i = 0; i < GEMM_Q8_MR; i++) f0[i] = f1[i] = _mm512_setzero_ps();
    for (int64_t b = 0; b < nb; b++) {
        /* the sums start at minus 128 times w's, so that x + 128 leaves the products of x */
        __m512i c0 = _mm512_sub_epi32(_mm512_setzero_si512(), _mm512_loadu_si512(bs + b * GEMM_Q8_NR));
        __m512i c1 = _mm512_sub_epi32(_mm512_setzero_si512(), _mm512_loadu_si512(bs + b * GEMM_Q8_NR + 16));
        __m512i s0[GEMM_Q8_MR], s1[GEMM_Q8_MR];
#pragma GCC unroll 8
        for (int i = 0; i < GEMM_Q8_MR; i++) {
            s0[i] = c0;
            s1[i] = c1;
        }
#pragma GCC unroll 8
        for (int g = 0; g < 8; g++) {
            __m512i w0 = _mm512_loadu_si512(bq + (b * 8 + g) * GEMM_Q8_NR * 4), w1 = _mm512_loadu_si512(bq + (b * 8 + g) * GEMM_Q8_NR * 4 + 64);
            const uint8_t *xa = apq + (b * 8 + g) * GEMM_Q8_MR * 4;
#pragma GCC unroll 8
            for (int i = 0; i < GEMM_Q8_MR; i++) {
                int32_t x4;
                memcpy(&x4, xa + 4 * i, 4);
                __m512i xb = _mm512_set1_epi32(x4);
                s0[i] = _mm512_dpbusd_epi32(s0[i], xb, w0);
                s1[i] = _mm512_dpbusd_epi32(s1[i], xb, w1);
            }
        }
        __m512 d0 = _mm512_loadu_ps(bd + b * GEMM_Q8_NR), d1 = _mm512_loadu_ps(bd + b * GEMM_Q8_NR + 16);
#pragma GCC unroll 8
        for (int i = 0; i < GEMM_Q8_MR; i++) {
            __m512 dx = _mm512_set1_ps(apd[b * GEMM_Q8_MR + i]);
            f0[i] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(s0[i]), _mm512_mul_ps(d0, dx), f0[i]);
            f1[i] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(s1[i]), _mm512_mul_ps(d1, dx), f1[i]);
        }
    }
    for (int i = 0; i < m; i++) {
        _mm512_storeu_ps(row, f0[i]);
        _mm512_storeu_ps(row + 16, f1[i]);
        float *o = out + i * ldc;
        for (int64_t j = 0; j < nr; j++) o[j] = add ? o[j] + row[j] : row[j];
    }
#else
    for (int i = 0; i < m; i++) {
        for (int c = 0; c < GEMM_Q8_NR; c++) row[c] = 0;
        for (int64_t b = 0; b < nb; b++) {
            float dx = apd[b * GEMM_Q8_MR + i];
            for (int c = 0; c < GEMM_Q8_NR; c++) {
                int32_t s = 0;
                for (int g = 0; g < 8; g++)
                    for (int j = 0; j < 4; j++)
                        s += (int32_t) apq[(b * 8 + g) * GEMM_Q8_MR * 4 + i * 4 + j] * bq[((b * 8 + g) * GEMM_Q8_NR + c) * 4 + j];
                row[c] += (float) (s - bs[b * GEMM_Q8_NR + c]) * (bd[b * GEMM_Q8_NR + c] * dx);
            }
        }
        float *o = out + i * ldc;
        for (int64_t j = 0; j < nr; j++) o[j] = add ? o[j] + row[j] : row[j];
    }
#endif
}

/* The loops of gemm() over panels of GEMM_Q8_NR rows of w and passes of GEMM_Q8_KB blocks. */
static void gemm_q8(int q4, int il, const uint8_t *w, int64_t rb, int64_t k, const uint8_t *packed, int64_t rows, float *out, int64_t n,
                    int64_t from, int64_t to, uint8_t *scratch) {
    int64_t n16 = n / 16 * 16, blocks = k / 32, tiles = (rows + GEMM_Q8_MR - 1) / GEMM_Q8_MR, panels = GEMM_NC / GEMM_Q8_NR;
    const float *scales = (const float *) (packed + tiles * blocks * 32 * GEMM_Q8_MR);
    int8_t *bq = (int8_t *) scratch;
    float *bd = (float *) (scratch + panels * GEMM_Q8_KB * GEMM_Q8_NR * 32);
    int32_t *bs = (int32_t *) (bd + panels * GEMM_Q8_KB * GEMM_Q8_NR);
    for (int64_t jc = from; jc < to; jc += GEMM_NC) {
        int64_t nc = to - jc < GEMM_NC ? to - jc : GEMM_NC;
        for (int64_t pb = 0; pb < blocks; pb += GEMM_Q8_KB) {
            int64_t nb = blocks - pb < GEMM_Q8_KB ? blocks - pb : GEMM_Q8_KB;
            for (int64_t jr = 0; jr < nc; jr += GEMM_Q8_NR) {
                int64_t p = jr / GEMM_Q8_NR;
                gemm_q8_panel(q4, il, w, rb, n16, pb, nb, jc + jr, nc - jr < GEMM_Q8_NR ? nc - jr : GEMM_Q8_NR, bq + p * GEMM_Q8_KB * GEMM_Q8_NR * 32,
                              bd + p * GEMM_Q8_KB * GEMM_Q8_NR, bs + p * GEMM_Q8_KB * GEMM_Q8_NR);
            }
            for (int64_t ic = 0; ic < tiles; ic += GEMM_MC_TILES) {
                int64_t last = ic + GEMM_MC_TILES < tiles ? ic + GEMM_MC_TILES : tiles;
                for (int64_t jr = 0; jr < nc; jr += GEMM_Q8_NR) {
                    int64_t p = jr / GEMM_Q8_NR;
                    for (int64_t t = ic; t < last; t++) {
                        int64_t m = rows - t * GEMM_Q8_MR < GEMM_Q8_MR ? rows - t * GEMM_Q8_MR : GEMM_Q8_MR;
                        gemm_q8_tile(packed + (t * blocks + pb) * 32 * GEMM_Q8_MR, scales + (t * blocks + pb) * GEMM_Q8_MR,
                                     bq + p * GEMM_Q8_KB * GEMM_Q8_NR * 32, bd + p * GEMM_Q8_KB * GEMM_Q8_NR, bs + p * GEMM_Q8_KB * GEMM_Q8_NR, nb,
                                     out + t * GEMM_Q8_MR * n + jc + jr, n, m, nc - jr < GEMM_Q8_NR ? nc - jr : GEMM_Q8_NR, pb > 0);
                    }
                }
            }
        }
    }
}

/* Rows [from, to) of w (Q8_0) with x quantised and packed (kiln_q8_gemm_pack_rows), into out; scratch: kiln_q8_gemm_scratch_bytes(). */
EXPORT void kiln_q8_0_q8_gemm(const uint8_t *w, int64_t rb, int64_t k, const uint8_t *packed, int64_t rows, float *out, int64_t n,
                              int64_t from, int64_t to, uint8_t *scratch) {
    gemm_q8(0, 0, w, rb, k, packed, rows, out, n, from, to, scratch);
}

/* The same for Q4_0. */
EXPORT void kiln_q4_0_q8_gemm(const uint8_t *w, int64_t rb, int64_t k, const uint8_t *packed, int64_t rows, float *out, int64_t n,
                              int64_t from, int64_t to, uint8_t *scratch) {
    gemm_q8(1, 0, w, rb, k, packed, rows, out, n, from, to, scratch);
}

/* kiln_q8_0_q8_gemm with w interleaved by 16 rows (kiln_q8_0_interleave16). */
EXPORT void kiln_q8_0_q8_gemm_i16(const uint8_t *w, int64_t rb, int64_t k, const uint8_t *packed, int64_t rows, float *out, int64_t n,
                                  int64_t from, int64_t to, uint8_t *scratch) {
    gemm_q8(0, 1, w, rb, k, packed, rows, out, n, from, to, scratch);
}

/* The same for Q4_0. */
EXPORT void kiln_q4_0_q8_gemm_i16(const uint8_t *w, int64_t rb, int64_t k, const uint8_t *packed, int64_t rows, float *out, int64_t n,
                                  int64_t from, int64_t to, uint8_t *scratch) {
    gemm_q8(1, 1, w, rb, k, packed, rows, out, n, from, to, scratch);
}

#if defined(__AVX512VNNI__) && defined(__AVX512F__)
/*
 * The dot products of a few rows of x quantised (decode), each output computed exactly as gemm_q8 computes it for many
 * rows: per block the exact integer sum, converted and multiplied by d_w * d_x in one fused multiply-add to a sum that
 * starts at zero every GEMM_Q8_KB blocks, those passes' sums added in order. So a sequence's logits, and its greedy
 * tokens, are the same whether it decodes alone (these dot products) or among the slots of a batched step (the GEMM):
 * batch invariance, as the server's test of 8 concurrent clients asks.
 *
 * Sixteen rows of w at a time, so that a block's sums land one a lane, as the GEMM's do: two rows a 512-bit vector (w
 * as unsigned, Q8_0's bytes + 128 and Q4_0's nibbles, against x's signed bytes), the eight vectors' lanes summed to one
 * lane a row by three stages of two-source permutes, then x's sum times 128 (or 8) taken off, exactly.
 */

/* Stage `s` of the lane sums: lanes of a and b to add so that each row keeps half as many (see reduce16). */
static const int32_t Q8X_STAGES[3][2][16] = {
    /* stage 0: [row 0: 8 lanes | row 1: 8] and the same of rows 2, 3 -> [row 0: 4 | row 1: 4 | row 2: 4 | row 3: 4] */
    {{0, 1, 2, 3, 8, 9, 10, 11, 16, 17, 18, 19, 24, 25, 26, 27}, {4, 5, 6, 7, 12, 13, 14, 15, 20, 21, 22, 23, 28, 29, 30, 31}},
    /* stage 1: four lanes a row -> two */
    {{0, 1, 4, 5, 8, 9, 12, 13, 16, 17, 20, 21, 24, 25, 28, 29}, {2, 3, 6, 7, 10, 11, 14, 15, 18, 19, 22, 23, 26, 27, 30, 31}},
    /* stage 2: two lanes a row -> one */
    {{0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30}, {1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31}},
};

static inline __m512i q8x_stage(__m512i a, __m512i b, int s) {
    __m512i lo = _mm512_loadu_si512(Q8X_STAGES[s][0]), hi = _mm512_loadu_si512(Q8X_STAGES[s][1]);
    return _mm512_add_epi32(_mm512_permutex2var_epi32(a, lo, b), _mm512_permutex2var_epi32(a, hi, b));
}

/* Four vectors of four rows' partial sums, four lanes a row, to one vector of the sixteen rows' sums. */
static inline __m512i reduce16x4(__m512i v0, __m512i v1, __m512i v2, __m512i v3) {
    return q8x_stage(q8x_stage(v0, v1, 1), q8x_stage(v2, v3, 1), 2);
}

/*
 * The GEMM's sums of one row of x with sixteen rows of w (rb bytes apart), into o[0..16). Q8_0: two rows a vector (eight
 * lanes each), w's bytes + 128 against x's; Q4_0: four rows a vector, the low nibbles against x[0, 16) and the high
 * ones against x[16, 32) summed into the same four lanes of each row.
 */
static void q8x_dot16(int q4, const uint8_t *w, int64_t rb, int64_t blocks, const uint8_t *x, float *o) {
    const int bytes = q4 ? 18 : 34;
    const __m512i rows = _mm512_mullo_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15), _mm512_set1_epi32((int) rb));
    const __m512i flip = _mm512_set1_epi8((char) 0x80), low = _mm512_set1_epi8(15), ones = _mm512_set1_epi8(1);
    __m512 total = _mm512_setzero_ps();
    for (int64_t pb = 0; pb < blocks; pb += GEMM_Q8_KB) {
        int64_t last = blocks - pb < GEMM_Q8_KB ? blocks : pb + GEMM_Q8_KB;
        __m512 pass = _mm512_setzero_ps();
        for (int64_t b = pb; b < last; b++) {
            const uint8_t *xb = x + b * 34, *wb = w + b * bytes + 2, *ahead = w + 16 * rb + b * 16 * bytes;
            for (int l = 0; l < 16 * bytes; l += 64) __builtin_prefetch((const void *) (ahead + l), 0, 3);
            __m256i xv = _mm256_loadu_si256((const __m256i *) (xb + 2));
            int32_t xsum = _mm512_reduce_add_epi32(_mm512_dpbusd_epi32(_mm512_setzero_si512(), ones, _mm512_zextsi256_si512(xv)));
            __m512i v[4];
            if (q4) {
                __m512i xlo = _mm512_broadcast_i32x4(_mm256_castsi256_si128(xv)), xhi = _mm512_broadcast_i32x4(_mm256_extracti128_si256(xv, 1));
#pragma GCC unroll 4
                for (int p = 0; p < 4; p++) {
                    const uint8_t *w0 = wb + 4 * p * rb;
                    __m512i q = _mm512_castsi128_si512(_mm_loadu_si128((const __m128i *) w0));
                    q = _mm512_inserti32x4(q, _mm_loadu_si128((const __m128i *) (w0 + rb)), 1);
                    q = _mm512_inserti32x4(q, _mm_loadu_si128((const __m128i *) (w0 + 2 * rb)), 2);
                    q = _mm512_inserti32x4(q, _mm_loadu_si128((const __m128i *) (w0 + 3 * rb)), 3);
                    v[p] = _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(_mm512_setzero_si512(), _mm512_and_si512(q, low), xlo),
                                               _mm512_and_si512(_mm512_srli_epi16(q, 4), low), xhi);
                }
            } else {
                __m512i xx = _mm512_inserti64x4(_mm512_castsi256_si512(xv), xv, 1);
#pragma GCC unroll 4
                for (int p = 0; p < 4; p++) {
                    __m512i pair[2];
                    for (int h = 0; h < 2; h++) {
                        const uint8_t *w0 = wb + (4 * p + 2 * h) * rb;
                        __m512i u = _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_loadu_si256((const __m256i *) w0)),
                                                       _mm256_loadu_si256((const __m256i *) (w0 + rb)), 1);
                        pair[h] = _mm512_dpbusd_epi32(_mm512_setzero_si512(), _mm512_xor_si512(u, flip), xx);
                    }
                    v[p] = q8x_stage(pair[0], pair[1], 0);
                }
            }
            __m512i sums = _mm512_sub_epi32(reduce16x4(v[0], v[1], v[2], v[3]), _mm512_set1_epi32(xsum * (q4 ? 8 : 128)));
            __m512 dw = _mm512_cvtph_ps(_mm512_cvtepi32_epi16(_mm512_i32gather_epi32(rows, (const void *) (wb - 2), 1)));
            pass = _mm512_fmadd_ps(_mm512_cvtepi32_ps(sums), _mm512_mul_ps(dw, _mm512_set1_ps(half_at(xb))), pass);
        }
        total = pb == 0 ? pass : _mm512_add_ps(total, pass);
    }
    _mm512_storeu_ps(o, total);
}

/*
 * Q8_0, the same sums for four rows of w: four blocks' a pass of the lanes (rows 0-3 of block b, of b + 1, b + 2,
 * b + 3), each block's four lanes added in turn. Slower than sixteen rows from cache, but streaming one row of x
 * against w from memory it kept more of the bandwidth (an Intel Xeon, Llama-3.2-1B's ffn_gate on two cores: 20.0-24.9
 * against 19.3-21.2 GB/s over four alternations).
 */
static void q8_0_dot4g(const uint8_t *w, int64_t rb, int64_t blocks, const uint8_t *x, float *o) {
    const int r = (int) rb;
    const __m512i rows = _mm512_setr_epi32(0, r, 2 * r, 3 * r, 34, r + 34, 2 * r + 34, 3 * r + 34, 68, r + 68, 2 * r + 68, 3 * r + 68,
                                           102, r + 102, 2 * r + 102, 3 * r + 102);
    const __m512i flip = _mm512_set1_epi8((char) 0x80), ones = _mm512_set1_epi8(1);
    __m128 total = _mm_setzero_ps();
    for (int64_t pb = 0; pb < blocks; pb += GEMM_Q8_KB) {
        int64_t last = blocks - pb < GEMM_Q8_KB ? blocks : pb + GEMM_Q8_KB;
        __m128 pass = _mm_setzero_ps();
        for (int64_t b = pb; b < last; b += 4) {
            int m = last - b < 4 ? (int) (last - b) : 4;
            const uint8_t *xb = x + b * 34, *wb = w + b * 34 + 2, *ahead = w + 4 * rb + b * 4 * 34;
            for (int l = 0; l < 16 * 34; l += 64) __builtin_prefetch((const void *) (ahead + l), 0, 3);
            __m512i v[8];
            int32_t s[4];
            float dxs[4];
#pragma GCC unroll 4
            for (int q = 0; q < 4; q++) {
                if (q >= m) {
                    v[2 * q] = v[2 * q + 1] = _mm512_setzero_si512();
                    s[q] = 0;
                    dxs[q] = 0;
                    continue;
                }
                __m256i xq = _mm256_loadu_si256((const __m256i *) (xb + 34 * q + 2));
                s[q] = _mm512_reduce_add_epi32(_mm512_dpbusd_epi32(_mm512_setzero_si512(), ones, _mm512_zextsi256_si512(xq)));
                dxs[q] = half_at(xb + 34 * q);
                __m512i xx = _mm512_inserti64x4(_mm512_castsi256_si512(xq), xq, 1);
                for (int h = 0; h < 2; h++) {
                    const uint8_t *w0 = wb + 34 * q + 2 * h * rb;
                    __m512i u = _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_loadu_si256((const __m256i *) w0)),
                                                   _mm256_loadu_si256((const __m256i *) (w0 + rb)), 1);
                    v[2 * q + h] = _mm512_dpbusd_epi32(_mm512_setzero_si512(), _mm512_xor_si512(u, flip), xx);
                }
            }
            __m512i corr = _mm512_setr_epi32(s[0] * 128, s[0] * 128, s[0] * 128, s[0] * 128, s[1] * 128, s[1] * 128, s[1] * 128, s[1] * 128,
                                             s[2] * 128, s[2] * 128, s[2] * 128, s[2] * 128, s[3] * 128, s[3] * 128, s[3] * 128, s[3] * 128);
            __m512i sums = _mm512_sub_epi32(q8x_stage(q8x_stage(q8x_stage(v[0], v[1], 0), q8x_stage(v[2], v[3], 0), 1),
                                                      q8x_stage(q8x_stage(v[4], v[5], 0), q8x_stage(v[6], v[7], 0), 1), 2), corr);
            __mmask16 live = (__mmask16) ((1u << (4 * m)) - 1);
            __m512 dw = _mm512_cvtph_ps(_mm512_cvtepi32_epi16(_mm512_mask_i32gather_epi32(_mm512_setzero_si512(), live, rows, (const void *) (wb - 2), 1)));
            __m512 dx = _mm512_setr_ps(dxs[0], dxs[0], dxs[0], dxs[0], dxs[1], dxs[1], dxs[1], dxs[1], dxs[2], dxs[2], dxs[2], dxs[2], dxs[3], dxs[3], dxs[3], dxs[3]);
            __m512 p = _mm512_cvtepi32_ps(sums), d = _mm512_mul_ps(dw, dx);
            pass = _mm_fmadd_ps(_mm512_castps512_ps128(p), _mm512_castps512_ps128(d), pass);
            if (m > 1) pass = _mm_fmadd_ps(_mm512_extractf32x4_ps(p, 1), _mm512_extractf32x4_ps(d, 1), pass);
            if (m > 2) pass = _mm_fmadd_ps(_mm512_extractf32x4_ps(p, 2), _mm512_extractf32x4_ps(d, 2), pass);
            if (m > 3) pass = _mm_fmadd_ps(_mm512_extractf32x4_ps(p, 3), _mm512_extractf32x4_ps(d, 3), pass);
        }
        total = pb == 0 ? pass : _mm_add_ps(total, pass);
    }
    _mm_storeu_ps(o, total);
}

/* The same for one row of w. */
static float q8x_dot1(int q4, const uint8_t *w, int64_t blocks, const uint8_t *x) {
    float total = 0;
    for (int64_t pb = 0; pb < blocks; pb += GEMM_Q8_KB) {
        int64_t last = blocks - pb < GEMM_Q8_KB ? blocks : pb + GEMM_Q8_KB;
        float pass = 0;
        for (int64_t b = pb; b < last; b++) {
            const uint8_t *xb = x + b * 34, *wb = w + b * (q4 ? 18 : 34);
            int32_t sum = 0;
            for (int i = 0; i < 32; i++) {
                int wi = q4 ? (i < 16 ? (wb[2 + i] & 15) : (wb[2 + i - 16] >> 4)) - 8 : (int8_t) wb[2 + i];
                sum += wi * (int8_t) xb[2 + i];
            }
            pass = fmaf((float) sum, half_at(wb) * half_at(xb), pass);
        }
        total = pb == 0 ? pass : total + pass;
    }
    return total;
}

/* Rows [from, to) of w against the first `rows` rows of x quantised (x_row bytes a row), into out (rows, n). */
static void products_q8x(int q4, const uint8_t *w, int64_t rb, int64_t k, const uint8_t *x, int64_t rows, float *out, int64_t n,
                         int64_t from, int64_t to) {
    int64_t blocks = k / 32, x_row = blocks * 34, j = from;
    if (!q4 && rows == 1) /* decode's one row: four streams of w, as many as the memory keeps busy best here */
        for (; j + 4 <= to; j += 4) q8_0_dot4g(w + j * rb, rb, blocks, x, out + j);
    for (; j + 16 <= to; j += 16)
        for (int64_t r = 0; r < rows; r++) q8x_dot16(q4, w + j * rb, rb, blocks, x + r * x_row, out + r * n + j);
    for (; j < to; j++)
        for (int64_t r = 0; r < rows; r++) out[r * n + j] = q8x_dot1(q4, w + j * rb, blocks, x + r * x_row);
}

#endif

#if defined(__AVX512VNNI__) && defined(__AVX512F__)
/*
 * R rows of x quantised (x_row bytes apart) with an interleaved group of 16 rows of w (g), into o[0..16) of each row (ldo
 * apart), the sums of gemm_q8 bit for bit: per block a row's exact integer sums one a lane, less 8 or 128 times x's
 * block sum, fused-multiply-added by d_w * d_x into a pass of GEMM_Q8_KB blocks, the passes added in order. w's vectors
 * are loaded (Q4_0's split into nibbles) once for the R rows, and each row's block sums and scales come from xs and xd
 * (rows x blocks, made once per call): a batched step's rows, or a short prompt's, stay dot products instead of the
 * GEMM's tiles (which pack panels per pass and convert every block's sums per tile). Up to 8 rows a pass (8 rows of x,
 * 8,192 x 2,048 from memory, two threads: Q4_0 12.5-13.3 -> 15.6-15.9 GB/s, Q8_0 18.9-20.2 -> 25.1-25.5 against two
 * passes of four), each row in its own accumulators: the same sums in the same order for any R.
 */
static inline __attribute__((always_inline)) void i16_rows(int q4, const uint8_t *g, int64_t blocks, const uint8_t *x, int64_t x_row,
                                                           const int32_t *xs, const float *xd, float *o, int64_t ldo, const int R) {
    const int bytes = q4 ? 18 : 34, step = 16 * bytes;
    const __m512i flip = _mm512_set1_epi8((char) 0x80), low = _mm512_set1_epi8(15);
    __m512 total[8], pass[8];
    for (int64_t pb = 0; pb < blocks; pb += GEMM_Q8_KB) {
        int64_t last = blocks - pb < GEMM_Q8_KB ? blocks : pb + GEMM_Q8_KB;
#pragma GCC unroll 8
        for (int r = 0; r < R; r++) pass[r] = _mm512_setzero_ps();
        for (int64_t b = pb; b < last; b++) {
            const uint8_t *wb = g + b * step;
            for (int l = 0; l < step; l += 64) __builtin_prefetch((const void *) (wb + I16_PREFETCH_BYTES + l), 0, 3);
            __m512i wv[8]; /* vector j against x's 4-byte group j */
            if (q4) {
#pragma GCC unroll 4
                for (int i = 0; i < 4; i++) {
                    __m512i q = _mm512_loadu_si512(wb + I16_SCALES + 64 * i);
                    wv[i] = _mm512_and_si512(q, low);
                    wv[4 + i] = _mm512_and_si512(_mm512_srli_epi16(q, 4), low);
                }
            } else {
#pragma GCC unroll 8
                for (int i = 0; i < 8; i++) wv[i] = _mm512_xor_si512(_mm512_loadu_si512(wb + I16_SCALES + 64 * i), flip);
            }
            __m512 dw = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *) wb));
#pragma GCC unroll 8
            for (int r = 0; r < R; r++) {
                int32_t x4[8];
                memcpy(x4, x + r * x_row + b * 34 + 2, 32);
                __m512i a0 = _mm512_setzero_si512(), a1 = _mm512_setzero_si512();
#pragma GCC unroll 4
                for (int i = 0; i < 4; i++) {
                    a0 = _mm512_dpbusd_epi32(a0, wv[i], _mm512_set1_epi32(x4[i]));
                    a1 = _mm512_dpbusd_epi32(a1, wv[4 + i], _mm512_set1_epi32(x4[4 + i]));
                }
                __m512i sums = _mm512_sub_epi32(_mm512_add_epi32(a0, a1), _mm512_set1_epi32(xs[r * blocks + b] * (q4 ? 8 : 128)));
                pass[r] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(sums), _mm512_mul_ps(dw, _mm512_set1_ps(xd[r * blocks + b])), pass[r]);
            }
        }
#pragma GCC unroll 8
        for (int r = 0; r < R; r++) total[r] = pb == 0 ? pass[r] : _mm512_add_ps(total[r], pass[r]);
    }
#pragma GCC unroll 8
    for (int r = 0; r < R; r++) _mm512_storeu_ps(o + r * ldo, total[r]);
}
#endif

/* Rows [from, to) of w interleaved by 16 rows (kiln_*_interleave16) against the first `rows` rows of x quantised, into out (rows, n). */
static void products_i16(int q4, const uint8_t *w, int64_t rb, int64_t k, const uint8_t *x, int64_t rows, float *out, int64_t n, int64_t from,
                         int64_t to) {
    int64_t blocks = k / 32, x_row = blocks * 34, n16 = n / 16 * 16, j = from;
#if defined(__AVX512VNNI__) && defined(__AVX512F__)
    int64_t entries = rows * blocks;
    int32_t xs_stack[I16_X_STACK];
    float xd_stack[I16_X_STACK];
    int32_t *xs = entries <= I16_X_STACK ? xs_stack : malloc(entries * sizeof *xs);
    float *xd = entries <= I16_X_STACK ? xd_stack : malloc(entries * sizeof *xd);
    if (xs && xd) { /* each row's block sums of x and scales, once for every group (else all rows one by one, below) */
        const __m512i ones = _mm512_set1_epi8(1);
        for (int64_t e = 0; e < entries; e++) {
            const uint8_t *xb = x + e / blocks * x_row + e % blocks * 34;
            xs[e] = _mm512_reduce_add_epi32(_mm512_dpbusd_epi32(_mm512_setzero_si512(), ones, _mm512_zextsi256_si512(_mm256_loadu_si256((const __m256i *) (xb + 2)))));
            xd[e] = half_at(xb);
        }
        while (j < to) {
            if (j % 16 != 0 || j + 16 > to || j + 16 > n16) { /* a row outside the range's whole groups */
                for (int64_t r = 0; r < rows; r++) out[r * n + j] = row_dot(q4, 1, w, rb, n16, j, blocks, x + r * x_row);
                j++;
                continue;
            }
            int64_t r = 0;
            for (; r + 8 <= rows; r += 8) i16_rows(q4, w + j * rb, blocks, x + r * x_row, x_row, xs + r * blocks, xd + r * blocks, out + r * n + j, n, 8);
            for (; r + 4 <= rows; r += 4) i16_rows(q4, w + j * rb, blocks, x + r * x_row, x_row, xs + r * blocks, xd + r * blocks, out + r * n + j, n, 4);
            switch (rows - r) { /* R a constant in each, so that i16_rows keeps its rows in registers */
                case 3: i16_rows(q4, w + j * rb, blocks, x + r * x_row, x_row, xs + r * blocks, xd + r * blocks, out + r * n + j, n, 3); break;
                case 2: i16_rows(q4, w + j * rb, blocks, x + r * x_row, x_row, xs + r * blocks, xd + r * blocks, out + r * n + j, n, 2); break;
                case 1: i16_rows(q4, w + j * rb, blocks, x + r * x_row, x_row, xs + r * blocks, xd + r * blocks, out + r * n + j, n, 1); break;
                default: break;
            }
            j += 16;
        }
    }
    if (xs != xs_stack) free(xs);
    if (xd != xd_stack) free(xd);
#endif
    for (; j < to; j++)
        for (int64_t r = 0; r < rows; r++) out[r * n + j] = row_dot(q4, 1, w, rb, n16, j, blocks, x + r * x_row);
}

/* kiln_q8_0_q8_products with w interleaved by 16 rows (kiln_q8_0_interleave16). */
EXPORT void kiln_q8_0_q8_products_i16(const uint8_t *w, int64_t rb, int64_t k, const uint8_t *xq, int64_t rows, float *out, int64_t n,
                                      int64_t from, int64_t to) {
    products_i16(0, w, rb, k, xq, rows, out, n, from, to);
}

/* The same for Q4_0. */
EXPORT void kiln_q4_0_q8_products_i16(const uint8_t *w, int64_t rb, int64_t k, const uint8_t *xq, int64_t rows, float *out, int64_t n,
                                      int64_t from, int64_t to) {
    products_i16(1, w, rb, k, xq, rows, out, n, from, to);
}

/* Rows [from, to) of w (Q8_0) with the first `rows` rows of x quantised to Q8_0 (k / 32 blocks of 34 bytes a row). */
EXPORT void kiln_q8_0_q8_products(const uint8_t *w, int64_t rb, int64_t k, const uint8_t *xq, int64_t rows, float *out, int64_t n,
                                  int64_t from, int64_t to) {
    products_q8x(0, w, rb, k, xq, rows, out, n, from, to);
}

/* The same for Q4_0 weights. */
EXPORT void kiln_q4_0_q8_products(const uint8_t *w, int64_t rb, int64_t k, const uint8_t *xq, int64_t rows, float *out, int64_t n,
                                  int64_t from, int64_t to) {
    products_q8x(1, w, rb, k, xq, rows, out, n, from, to);
}

/* ---------------------------------------------------------------- attention of a few rows (decode) */

/*
 * Causal grouped-query attention of rows of q over one layer's caches, as LlamaGraph writes it with tensors: for row r at
 * position pos[r] and query head h (key/value head h / (heads / kv_heads)), the scores q . k_j * scale of the keys
 * j <= pos[r] (and pos[r] - j < window when window > 0; rows of the caches from length on are never read), their
 * softmax, and the sum of the values it weighs. Every key and value row is read once for the heads that share it, in
 * order: the graph's batched GEMMs read a head's 256 bytes of each row 2 KB apart and, for a few rows of q, cost
 * 5-10x the caches' bytes. Sums are in a fixed order that does not depend on the other rows (a row's bits are the same
 * alone or in a batch): a key's score in 16 lanes, then lanes pairwise; the softmax's sum 16 lanes of keys from the
 * first, then pairwise; each value lane over the keys in order. exp is a polynomial within 2 ulp for the scores less
 * their maximum (0 below -87.3, where e^x is under the smallest normal float).
 *
 * q and out are (rows, heads, hd) f32; the caches (context, kv_heads * hd), f32 or (f16 set) f16. Units [from, to) are
 * (row, key/value head) pairs, row-major, for the workers.
 */
#pragma GCC diagnostic ignored "-Wpsabi" /* 64-byte vectors passed between inline functions, where AVX-512 is not enabled */
typedef float att16 __attribute__((vector_size(64)));
typedef int32_t att16i __attribute__((vector_size(64)));
typedef uint32_t att16u __attribute__((vector_size(64)));

static inline att16 att_load(const float *p) {
    att16 v;
    memcpy(&v, p, sizeof v);
    return v;
}

static inline void att_store(float *p, att16 v) { memcpy(p, &v, sizeof v); }

/* a where b is set (every bit of a lane), else c */
static inline att16 att_select(att16i b, att16 a, att16 c) {
    att16i ai, ci, r;
    memcpy(&ai, &a, sizeof a);
    memcpy(&ci, &c, sizeof c);
    r = (ai & b) | (ci & ~b);
    att16 out;
    memcpy(&out, &r, sizeof out);
    return out;
}

static inline float att_sum(att16 v) {
    typedef float f8 __attribute__((vector_size(32)));
    typedef float f4 __attribute__((vector_size(16)));
    f8 a = __builtin_shufflevector(v, v, 0, 1, 2, 3, 4, 5, 6, 7) + __builtin_shufflevector(v, v, 8, 9, 10, 11, 12, 13, 14, 15);
    f4 b = __builtin_shufflevector(a, a, 0, 1, 2, 3) + __builtin_shufflevector(a, a, 4, 5, 6, 7);
    return (b[0] + b[2]) + (b[1] + b[3]);
}

/* e^x in each lane, for x <= 0 (Cephes' range reduction and polynomial) */
static inline att16 att_exp(att16 x) {
    const att16 floor_ = {-87.33f, -87.33f, -87.33f, -87.33f, -87.33f, -87.33f, -87.33f, -87.33f,
                          -87.33f, -87.33f, -87.33f, -87.33f, -87.33f, -87.33f, -87.33f, -87.33f};
    att16i keep = x >= floor_;
    x = att_select(keep, x, floor_);
    att16 t = x * 1.44269504088896341f + 0.5f;
    att16i ti = __builtin_convertvector(t, att16i);
    ti += (att16i) (__builtin_convertvector(ti, att16) > t); /* truncation rounded a negative t up: floor */
    att16 n = __builtin_convertvector(ti, att16);
    att16 r = x - n * 0.693359375f;
    r = r - n * -2.12194440e-4f;
    att16 p = r * 1.9875691500e-4f + 1.3981999507e-3f;
    p = p * r + 8.3334519073e-3f;
    p = p * r + 4.1665795894e-2f;
    p = p * r + 1.6666665459e-1f;
    p = p * r + 5.0000001201e-1f;
    p = p * (r * r) + r + 1.0f;
    att16u bits = (att16u) (ti + 127) << 23;
    att16 scale;
    memcpy(&scale, &bits, sizeof scale);
    const att16 zero = {0};
    return att_select(keep, p * scale, zero);
}

/*
 * A head's rows of a cache are hd values 2 KB apart (kv_heads * hd of them a row): too far apart for the hardware's
 * prefetchers, so the loops over keys fetch the row ATT_AHEAD rows on themselves (a layer at 530 positions, one thread,
 * the caches in L2: 173 -> 160 us; a decode step reads them from memory).
 */
#define ATT_AHEAD 8

static inline void att_prefetch(const void *cache, int64_t f16, int64_t j, int64_t kvdim, int64_t g, int64_t hd) {
    const char *p = (const char *) cache + (f16 ? 2 : 4) * (j * kvdim + g * hd);
    for (int64_t l = 0; l < (f16 ? 2 : 4) * hd; l += 64) __builtin_prefetch(p + l, 0, 3);
}

/* row j of a cache (hd values of key/value head g) as floats: in place when f32, else converted into buf */
static inline const float *att_row(const void *cache, int64_t f16, int64_t j, int64_t kvdim, int64_t g, int64_t hd, float *buf) {
    if (!f16) return (const float *) cache + j * kvdim + g * hd;
    const uint8_t *h = (const uint8_t *) cache + 2 * (j * kvdim + g * hd);
    for (int64_t d = 0; d < hd; d++) buf[d] = half_at(h + 2 * d);
    return buf;
}

/* the sums of the lanes of a, b, c and d in lanes 0 to 3 (each as att_sum orders it: halves, then quarters, ...) */
static inline att16 att_sum4(att16 a, att16 b, att16 c, att16 d) {
    att16 x0 = __builtin_shufflevector(a, b, 0, 1, 2, 3, 4, 5, 6, 7, 16, 17, 18, 19, 20, 21, 22, 23)
             + __builtin_shufflevector(a, b, 8, 9, 10, 11, 12, 13, 14, 15, 24, 25, 26, 27, 28, 29, 30, 31);
    att16 x1 = __builtin_shufflevector(c, d, 0, 1, 2, 3, 4, 5, 6, 7, 16, 17, 18, 19, 20, 21, 22, 23)
             + __builtin_shufflevector(c, d, 8, 9, 10, 11, 12, 13, 14, 15, 24, 25, 26, 27, 28, 29, 30, 31);
    att16 y = __builtin_shufflevector(x0, x1, 0, 1, 2, 3, 8, 9, 10, 11, 16, 17, 18, 19, 24, 25, 26, 27)
            + __builtin_shufflevector(x0, x1, 4, 5, 6, 7, 12, 13, 14, 15, 20, 21, 22, 23, 28, 29, 30, 31);
    att16 z = __builtin_shufflevector(y, y, 0, 1, 4, 5, 8, 9, 12, 13, 0, 1, 4, 5, 8, 9, 12, 13)
            + __builtin_shufflevector(y, y, 2, 3, 6, 7, 10, 11, 14, 15, 2, 3, 6, 7, 10, 11, 14, 15);
    return __builtin_shufflevector(z, z, 0, 2, 4, 6, 0, 2, 4, 6, 0, 2, 4, 6, 0, 2, 4, 6)
         + __builtin_shufflevector(z, z, 1, 3, 5, 7, 1, 3, 5, 7, 1, 3, 5, 7, 1, 3, 5, 7);
}

/* the dot products of q0..q3 with k (hd values each) into s[0..3]: per head 16 lanes of d, then the lanes pairwise */
static inline void att_dot4(const float *q0, const float *q1, const float *q2, const float *q3, const float *k, int64_t hd, float *s) {
    att16 a0 = {0}, a1 = {0}, a2 = {0}, a3 = {0};
    int64_t d = 0;
    for (; d + 16 <= hd; d += 16) {
        att16 kv = att_load(k + d);
        a0 += att_load(q0 + d) * kv;
        a1 += att_load(q1 + d) * kv;
        a2 += att_load(q2 + d) * kv;
        a3 += att_load(q3 + d) * kv;
    }
    att16 r = att_sum4(a0, a1, a2, a3);
    s[0] = r[0], s[1] = r[1], s[2] = r[2], s[3] = r[3];
    for (; d < hd; d++) s[0] += q0[d] * k[d], s[1] += q1[d] * k[d], s[2] += q2[d] * k[d], s[3] += q3[d] * k[d];
}

/* the four heads' dot products with key j, scaled, as their scores (sb: a head's every cap floats) and their maxima */
static inline void att_keep(const float *v, float scale, float *sb, int64_t cap, int64_t j, float *mx) {
    for (int64_t i = 0; i < 4; i++) {
        float x = v[i] * scale;
        sb[i * cap + j] = x;
        mx[i] = x > mx[i] ? x : mx[i];
    }
}

EXPORT void kiln_attention(const float *q, int64_t heads, int64_t kv_heads, int64_t hd, const void *kc, const void *vc, int64_t f16,
                           const int64_t *pos, int64_t length, int64_t window, float scale, float *out, int64_t from, int64_t to) {
    int64_t group = heads / kv_heads, kvdim = kv_heads * hd, cap = (length + 31) / 16 * 16, blocks = (group + 3) / 4;
    /* scores of every head of the group (4 a block, the last padded with heads of q = 0), rows of f16 caches, a zero q */
    float *s = malloc(sizeof(float) * (size_t) (4 * blocks * cap + 3 * hd + 32));
    if (s == NULL) abort();
    float *buf = s + 4 * blocks * cap, *zero = buf + 2 * hd;
    for (int64_t d = 0; d < hd; d++) zero[d] = 0.0f;
    for (int64_t u = from; u < to; u++) {
        int64_t r = u / kv_heads, g = u % kv_heads, p = pos[r];
        int64_t hi = p < length - 1 ? p : length - 1, lo = window > 0 && p - window + 1 > 0 ? p - window + 1 : 0;
        const float *qr = q + (r * heads + g * group) * hd;
        float *o = out + (r * heads + g * group) * hd;
        if (p < 0 || hi < lo) { /* no visible key: the graph's softmax of nothing but -inf */
            for (int64_t i = 0; i < group * hd; i++) o[i] = NAN;
            continue;
        }
        int64_t count = hi - lo + 1;
        for (int64_t b = 0; b < blocks; b++) {
            const float *qs[4];
            for (int64_t i = 0; i < 4; i++) qs[i] = 4 * b + i < group ? qr + (4 * b + i) * hd : zero;
            float *sb = s + 4 * b * cap, mx[4] = {-INFINITY, -INFINITY, -INFINITY, -INFINITY};
            if (hd == 64 && !f16) { /* the common head size: the four heads' q in registers across the keys */
                att16 q[4][4];
                for (int64_t i = 0; i < 4; i++) for (int64_t c = 0; c < 4; c++) q[i][c] = att_load(qs[i] + 16 * c);
                for (int64_t j = 0; j < count; j++) {
                    if (j + ATT_AHEAD < count) att_prefetch(kc, f16, lo + j + ATT_AHEAD, kvdim, g, hd);
                    const float *k = (const float *) kc + (lo + j) * kvdim + g * hd;
                    att16 k0 = att_load(k), k1 = att_load(k + 16), k2 = att_load(k + 32), k3 = att_load(k + 48), a[4];
                    for (int64_t i = 0; i < 4; i++) a[i] = q[i][0] * k0 + q[i][1] * k1 + q[i][2] * k2 + q[i][3] * k3;
                    att16 v = att_sum4(a[0], a[1], a[2], a[3]);
                    att_keep((const float[4]) {v[0], v[1], v[2], v[3]}, scale, sb, cap, j, mx);
                }
            } else {
                for (int64_t j = 0; j < count; j++) {
                    float v[4];
                    if (j + ATT_AHEAD < count) att_prefetch(kc, f16, lo + j + ATT_AHEAD, kvdim, g, hd);
                    att_dot4(qs[0], qs[1], qs[2], qs[3], att_row(kc, f16, lo + j, kvdim, g, hd, buf), hd, v);
                    att_keep(v, scale, sb, cap, j, mx);
                }
            }
            for (int64_t i = 0; i < 4; i++) { /* the softmax: e^(x - max) in place, their sum, then each divided by it */
                float *e = sb + i * cap;
                att16 sums = {0};
                int64_t j = 0;
                for (; j + 16 <= count; j += 16) {
                    att16 x = att_exp(att_load(e + j) - mx[i]);
                    att_store(e + j, x);
                    sums += x;
                }
                float tail[16] = {0};
                for (int64_t t = 0; j + t < count; t++) tail[t] = e[j + t] - mx[i];
                att16 x = att_exp(att_load(tail));
                att_store(tail, x);
                for (int64_t t = 0; j + t < count; t++) e[j + t] = tail[t];
                for (int64_t t = count - j; t < 16; t++) tail[t] = 0.0f;
                sums += att_load(tail);
                float total = att_sum(sums);
                for (j = 0; j + 16 <= count; j += 16) att_store(e + j, att_load(e + j) / total);
                for (; j < count; j++) e[j] = e[j] / total;
            }
            /* the values they weigh, 64 lanes of d at a time in registers (4 heads x 4 vectors), the keys in order */
            int64_t d = 0;
            for (; d + 64 <= hd; d += 64) {
                /* sixteen named accumulators: as an array indexed in a loop, GCC kept them on the stack */
                att16 a00 = {0}, a01 = {0}, a02 = {0}, a03 = {0}, a10 = {0}, a11 = {0}, a12 = {0}, a13 = {0};
                att16 a20 = {0}, a21 = {0}, a22 = {0}, a23 = {0}, a30 = {0}, a31 = {0}, a32 = {0}, a33 = {0};
                const float *w0 = sb, *w1 = sb + cap, *w2 = sb + 2 * cap, *w3 = sb + 3 * cap;
                for (int64_t j = 0; j < count; j++) {
                    if (j + ATT_AHEAD < count) att_prefetch(vc, f16, lo + j + ATT_AHEAD, kvdim, g, hd);
                    const float *v = att_row(vc, f16, lo + j, kvdim, g, hd, buf + hd) + d;
                    att16 v0 = att_load(v), v1 = att_load(v + 16), v2 = att_load(v + 32), v3 = att_load(v + 48);
                    float x0 = w0[j], x1 = w1[j], x2 = w2[j], x3 = w3[j];
                    a00 += v0 * x0, a01 += v1 * x0, a02 += v2 * x0, a03 += v3 * x0;
                    a10 += v0 * x1, a11 += v1 * x1, a12 += v2 * x1, a13 += v3 * x1;
                    a20 += v0 * x2, a21 += v1 * x2, a22 += v2 * x2, a23 += v3 * x2;
                    a30 += v0 * x3, a31 += v1 * x3, a32 += v2 * x3, a33 += v3 * x3;
                }
                att16 acc[4][4] = {{a00, a01, a02, a03}, {a10, a11, a12, a13}, {a20, a21, a22, a23}, {a30, a31, a32, a33}};
                for (int64_t i = 0; i < 4 && 4 * b + i < group; i++) {
                    for (int64_t c = 0; c < 4; c++) att_store(o + (4 * b + i) * hd + d + 16 * c, acc[i][c]);
                }
            }
            for (; d < hd; d++) { /* a head size not a multiple of 64: the rest lane by lane, in the same order */
                float acc[4] = {0};
                for (int64_t j = 0; j < count; j++) {
                    float v = att_row(vc, f16, lo + j, kvdim, g, hd, buf + hd)[d];
                    for (int64_t i = 0; i < 4; i++) acc[i] += v * sb[i * cap + j];
                }
                for (int64_t i = 0; i < 4 && 4 * b + i < group; i++) o[(4 * b + i) * hd + d] = acc[i];
            }
        }
    }
    free(s);
}

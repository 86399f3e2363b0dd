/*
 * Throughput of the decode products in kiln-llm's block_products.c (the dot products of a few rows of x with every row
 * of w), outside the JVM. Random weights (Q4_0 or Q8_0, n rows of k) in enough copies that a pass over them all streams
 * from memory, as a decode step does over a model's layers; each thread takes its share of every copy's rows, as
 * QuantizedMatmul splits them. Prints the median and best of 9 passes in GB/s of weight bytes read, and the worst error
 * of 200 outputs against double sums (q8: against the f32 x, the quantisation's own error included).
 *   gcc -O2 -march=native -ffp-contract=off -o /tmp/block_decode tools/bench/block_decode_bench.c -lpthread -lm
 *   /tmp/block_decode f32|q8 q4|q8 ROWS N K THREADS   (e.g. q8 q4 1 8192 2048 2: Llama-3.2-1B's ffn_gate at decode)
 * -DBLOCK_PRODUCTS='"path/block_products.c"' measures another version of the source (an A/B of two builds); with CACHED
 * set in the environment, one copy only: the kernel's speed from cache (for a w that fits), without memory's limit
 * (CACHED=N: N products a pass, for a pass long enough to time). With I16 set (q8 only), w is interleaved by 16 rows
 * first and the products read it so (kiln_*_q8_products_i16); it prints how many outputs differ from the plain rows' bits.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#ifndef BLOCK_PRODUCTS
#define BLOCK_PRODUCTS "../../kiln-llm/src/main/resources/dev/kiln/llm/gguf/block_products.c"
#endif
#include BLOCK_PRODUCTS

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

static int q8x, q4, i16, threads, copies, reps = 1, passes = 9;
static int64_t rows, n, k, rb;
static uint8_t *w;
static float *x, *out;
static uint8_t *xq;
static pthread_barrier_t barrier;

static void *worker(void *p) {
    int t = (int) (intptr_t) p;
    int64_t per = (n + threads - 1) / threads;
    if (i16) per = (per + 15) / 16 * 16; /* ranges start at groups */
    int64_t from = t * per < n ? t * per : n, to = (t + 1) * per < n ? (t + 1) * per : n;
    for (int pass = 0; pass < passes + 1; pass++) { /* pass 0 warms up */
        pthread_barrier_wait(&barrier);
        for (int c = 0; c < copies * reps; c++) {
            const uint8_t *wc = w + c % copies * n * rb;
            if (i16) (q4 ? kiln_q4_0_q8_products_i16 : kiln_q8_0_q8_products_i16)(wc, rb, k, xq, rows, out, n, from, to);
            else if (q8x) (q4 ? kiln_q4_0_q8_products : kiln_q8_0_q8_products)(wc, rb, k, xq, rows, out, n, from, to);
            else (q4 ? kiln_q4_0_products : kiln_q8_0_products)(wc, rb, k, x, rows, out, n, from, to);
        }
        pthread_barrier_wait(&barrier);
    }
    return 0;
}

static int compare(const void *a, const void *b) {
    double d = *(const double *) a - *(const double *) b;
    return (d > 0) - (d < 0);
}

/* Value i of a block (Q4_0 or Q8_0) as a float, scale applied. */
static double weight(const uint8_t *blk, int i) {
    int q = q4 ? (i < 16 ? (blk[2 + i] & 15) : (blk[2 + i - 16] >> 4)) - 8 : (int8_t) blk[2 + i];
    return (double) q * half_at(blk);
}

int main(int argc, char **argv) {
    if (argc != 7) {
        fprintf(stderr, "usage: block_decode f32|q8 q4|q8 ROWS N K THREADS\n");
        return 2;
    }
    q8x = argv[1][0] == 'q';
    q4 = argv[2][1] == '4';
    i16 = q8x && getenv("I16") != NULL;
    rows = atoll(argv[3]), n = atoll(argv[4]), k = atoll(argv[5]), threads = atoi(argv[6]);
    if (threads < 1 || threads > 64 || k % 32 || rows < 1) return 2;
    int bb = q4 ? 18 : 34;
    rb = k / 32 * bb;
    copies = getenv("CACHED") ? 1 : (int) ((768LL << 20) / (n * rb) + 1);
    if (getenv("CACHED") && atoi(getenv("CACHED")) > 1) reps = atoi(getenv("CACHED"));
    w = malloc(copies * n * rb);
    srand(1);
    for (int64_t j = 0; j < copies * n * (k / 32); j++) {
        uint16_t h = 0x2000 + rand() % 0x400; /* scales around 2^-7 */
        memcpy(w + j * bb, &h, 2);
        for (int t = 0; t < bb - 2; t++) w[j * bb + 2 + t] = (uint8_t) (q4 ? rand() : rand() % 255 - 127);
    }
    x = malloc(rows * k * 4), out = malloc(rows * n * 4), xq = malloc(rows * k / 32 * 34);
    for (int64_t i = 0; i < rows * k; i++) x[i] = rand() / (float) RAND_MAX - 0.5f;
    for (int64_t b = 0; b < rows * k / 32; b++) { /* as NativeBlockProducts.quantizeQ8_0 */
        float max = 0;
        for (int i = 0; i < 32; i++) max = fmaxf(max, fabsf(x[b * 32 + i]));
        float inverse = max == 0 ? 0 : 127.0f / max;
        uint16_t h = _cvtss_sh(max / 127.0f, 0);
        memcpy(xq + b * 34, &h, 2);
        for (int i = 0; i < 32; i++) xq[b * 34 + 2 + i] = (uint8_t) (int8_t) rintf(x[b * 32 + i] * inverse);
    }
    float *plain = NULL;
    if (i16) { /* the last copy's plain products, then every copy interleaved in place (through a copy of its groups) */
        plain = malloc(rows * n * 4);
        (q4 ? kiln_q4_0_q8_products : kiln_q8_0_q8_products)(w + (copies - 1) * n * rb, rb, k, xq, rows, plain, n, 0, n);
        uint8_t *tmp = malloc(n * rb);
        for (int c = 0; c < copies; c++) {
            memcpy(tmp, w + c * n * rb, n * rb);
            (q4 ? kiln_q4_0_interleave16 : kiln_q8_0_interleave16)(tmp, rb, k, 0, n / 16, w + c * n * rb);
        }
        free(tmp);
    }
    pthread_barrier_init(&barrier, 0, threads + 1);
    pthread_t th[64];
    for (int t = 0; t < threads; t++) pthread_create(&th[t], 0, worker, (void *) (intptr_t) t);
    double gbs[16];
    for (int pass = 0; pass < passes + 1; pass++) {
        pthread_barrier_wait(&barrier);
        double s = now();
        pthread_barrier_wait(&barrier);
        if (pass > 0) gbs[pass - 1] = (double) copies * reps * n * rb / (now() - s) / 1e9;
    }
    for (int t = 0; t < threads; t++) pthread_join(th[t], 0);
    qsort(gbs, passes, sizeof gbs[0], compare);
    if (i16) {
        int64_t differ = 0;
        for (int64_t i = 0; i < rows * n; i++) if (memcmp(&out[i], &plain[i], 4)) { if (getenv("I16") [0] == 'v') printf("%lld: %g %g\n", (long long) i, out[i], plain[i]); differ++; }
        printf("interleaved: %lld of %lld outputs differ from the plain rows' bits\n", (long long) differ, (long long) (rows * n));
        for (int c = 0; c < copies; c++) { /* back to plain rows for the error check below */
            uint8_t *tmp = malloc(n * rb);
            memcpy(tmp, w + c * n * rb, n * rb);
            for (int64_t j = 0; j < n / 16 * 16; j++)
                for (int64_t b = 0; b < k / 32; b++) {
                    const uint8_t *g = tmp + (j / 16 * 16) * rb + b * 16 * bb;
                    memcpy(w + c * n * rb + j * rb + b * bb, g + 2 * (j % 16), 2);
                    for (int i = 0; i < (bb - 2) / 4; i++) memcpy(w + c * n * rb + j * rb + b * bb + 2 + 4 * i, g + 32 + 64 * i + 4 * (j % 16), 4);
                }
            free(tmp);
        }
    }
    const uint8_t *last = w + (copies - 1) * n * rb; /* out holds the last copy's products */
    double worst = 0;
    for (int c = 0; c < 200; c++) {
        int64_t r = rand() % rows, j = rand() % n;
        double sum = 0, mag = 0;
        for (int64_t i = 0; i < k; i++) {
            double p = weight(last + j * rb + i / 32 * bb, i % 32) * x[r * k + i];
            sum += p;
            mag += fabs(p);
        }
        double e = fabs(out[r * n + j] - sum) / mag;
        if (e > worst) worst = e;
    }
    printf("%s x %s w rows %lld n %lld k %lld threads %d: median %.2f GB/s, best %.2f GB/s (%.3f ms a matrix), worst relative error %.2g\n",
           q8x ? "q8" : "f32", q4 ? "q4" : "q8", (long long) rows, (long long) n, (long long) k, threads, gbs[passes / 2], gbs[passes - 1],
           n * rb / gbs[passes / 2] / 1e6, worst);
    return 0;
}

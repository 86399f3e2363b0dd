/*
 * A decode step's products in C, as Kiln's CLANG device runs them with x quantised (kiln_*_q8_products_i16 over weights
 * interleaved by 16 rows), in Llama-3.2-1B's order and shapes: 16 layers of q+k+v (3,072 x 2,048), o (2,048 x 2,048),
 * gate+up (16,384 x 2,048) and down (2,048 x 8,192), then the tied output matrix (128,256 x 2,048). Each matrix its own
 * allocation; each split into 8 shares of whole groups claimed from a counter by 2 threads (as WorkerPool splits them),
 * with a spinning barrier between matrices (a product needs the one before). Random bytes stand in for the weights: the
 * products' speed does not depend on the values. Prints the time a token, the rate of weight bytes read, and each kind
 * of matrix's share: the bound a Kiln decode step's products can reach here, to set beside the whole step
 * (LlmPeerBench) and llama.cpp's in the same minute.
 *   gcc -O2 -march=native -ffp-contract=off -o /tmp/decode_sequence tools/bench/decode_sequence_bench.c -lpthread -lm
 *   /tmp/decode_sequence q4|q8 [TOKENS]      (THREADS and SHARES in the environment change 2 and 8)
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#ifndef BLOCK_PRODUCTS
#define BLOCK_PRODUCTS "../../kiln-llm/src/main/resources/dev/kiln/llm/gguf/block_products.c"
#endif
#include BLOCK_PRODUCTS

#define MATRICES (16 * 4 + 1)

static uint8_t *w[MATRICES];
static int64_t rows_of[MATRICES], k_of[MATRICES];
static uint8_t *xq;
static float *out;
static int q4, threads = 2, shares = 8, tokens = 30;
static atomic_int arrived, phase;
static atomic_long *claims; /* per token and matrix: the next share */
static double kind_seconds[5];

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

static int kind(int m) { return m == MATRICES - 1 ? 4 : m % 4; }

static void barrier(int *sense) {
    *sense = !*sense;
    if (atomic_fetch_add(&arrived, 1) == threads - 1) {
        atomic_store(&arrived, 0);
        atomic_store(&phase, *sense);
    } else {
        while (atomic_load(&phase) != *sense) __builtin_ia32_pause();
    }
}

static void *worker(void *arg) {
    int t = (int) (intptr_t) arg, sense = 0;
    double last = now();
    for (int token = 0; token < tokens; token++)
        for (int m = 0; m < MATRICES; m++) {
            int64_t n = rows_of[m], k = k_of[m], rb = k / 32 * (q4 ? 18 : 34), groups = n / 16, per = (groups + shares - 1) / shares;
            for (long s; (s = atomic_fetch_add(&claims[(int64_t) token * MATRICES + m], 1)) < shares;) {
                int64_t from = s * per * 16, to = (s + 1) * per * 16 < n ? (s + 1) * per * 16 : n;
                if (from < to) (q4 ? kiln_q4_0_q8_products_i16 : kiln_q8_0_q8_products_i16)(w[m], rb, k, xq, 1, out, n, from, to);
            }
            barrier(&sense);
            if (t == 0) {
                double q = now();
                kind_seconds[kind(m)] += q - last;
                last = q;
            }
        }
    return 0;
}

int main(int argc, char **argv) {
    if (argc < 2 || argc > 3 || (strcmp(argv[1], "q4") && strcmp(argv[1], "q8"))) {
        fprintf(stderr, "usage: decode_sequence q4|q8 [TOKENS]\n");
        return 2;
    }
    q4 = !strcmp(argv[1], "q4");
    if (argc == 3) tokens = atoi(argv[2]);
    if (getenv("THREADS")) threads = atoi(getenv("THREADS"));
    if (getenv("SHARES")) shares = atoi(getenv("SHARES"));
    if (tokens < 1 || threads < 1 || threads > 64 || shares < 1) return 2;
    int64_t shapes[4][2] = {{3072, 2048}, {2048, 2048}, {16384, 2048}, {2048, 8192}};
    for (int l = 0; l < 16; l++)
        for (int i = 0; i < 4; i++) {
            rows_of[4 * l + i] = shapes[i][0];
            k_of[4 * l + i] = shapes[i][1];
        }
    rows_of[MATRICES - 1] = 128256;
    k_of[MATRICES - 1] = 2048;
    int bb = q4 ? 18 : 34;
    double bytes = 0, kind_bytes[5] = {0};
    srand(1);
    for (int m = 0; m < MATRICES; m++) {
        size_t size = (size_t) rows_of[m] * (k_of[m] / 32 * bb);
        bytes += size;
        kind_bytes[kind(m)] += size;
        w[m] = aligned_alloc(64, (size + 63) / 64 * 64);
        for (size_t j = 0; j < size; j++) w[m][j] = (uint8_t) (q4 ? rand() : rand() % 255 - 127);
        /* an interleaved group's block starts with its 16 rows' f16 scales: keep them normal numbers (around 2^-7) */
        for (size_t g = 0; g < size / (16 * (size_t) bb); g++)
            for (int r = 0; r < 16; r++) {
                uint16_t h = 0x2000 + rand() % 0x400;
                memcpy(w[m] + g * 16 * bb + 2 * r, &h, 2);
            }
    }
    xq = malloc(8192 / 32 * 34);
    for (int b = 0; b < 8192 / 32; b++) {
        uint16_t h = 0x2000;
        memcpy(xq + b * 34, &h, 2);
        for (int i = 0; i < 32; i++) xq[b * 34 + 2 + i] = (uint8_t) (rand() % 255 - 127);
    }
    out = malloc(128256 * sizeof *out);
    claims = malloc(sizeof *claims * (size_t) tokens * MATRICES);
    const char *names[5] = {"q+k+v", "o", "gate+up", "down", "output"};
    for (int pass = 0; pass < 5; pass++) {
        for (int64_t i = 0; i < (int64_t) tokens * MATRICES; i++) atomic_store(&claims[i], 0);
        memset(kind_seconds, 0, sizeof kind_seconds);
        atomic_store(&arrived, 0);
        atomic_store(&phase, 0);
        pthread_t th[64];
        double start = now();
        for (int t = 0; t < threads; t++) pthread_create(&th[t], 0, worker, (void *) (intptr_t) t);
        for (int t = 0; t < threads; t++) pthread_join(th[t], 0);
        double token = (now() - start) / tokens;
        printf("%s, %d threads, %d shares: %.2f ms a token (%.1f tokens/s), %.1f GB/s of %.0f MB;", argv[1], threads, shares, token * 1e3, 1 / token,
               bytes / token / 1e9, bytes / 1e6);
        for (int i = 0; i < 5; i++) printf(" %s %.2f ms (%.1f GB/s)", names[i], kind_seconds[i] / tokens * 1e3, kind_bytes[i] / (kind_seconds[i] / tokens) / 1e9);
        printf("\n");
    }
    return 0;
}

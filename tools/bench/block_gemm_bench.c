/*
 * Throughput of the prefill GEMMs in kiln-llm's block_products.c (the CLANG device's native products), outside the JVM:
 * random Q8_0 weights (n rows of k), `rows` rows of x, the products split over `threads` threads by panels as
 * QuantizedMatmul splits them; best of 7, and a check of 200 outputs against double sums.
 *   gcc -O2 -march=native -ffp-contract=off -o /tmp/block_gemm tools/bench/block_gemm_bench.c -lpthread -lm
 *   /tmp/block_gemm f32|q8 ROWS N K THREADS        (e.g. q8 512 8192 2048 2: Llama-3.2-1B's ffn_gate at a 512-token prefill)
 * Beside it, tools/bench/fma_peak.c measures the f32 FMA peak of the same cores.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include "../../kiln-llm/src/main/resources/dev/kiln/llm/gguf/block_products.c"

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

typedef struct {
    int q8;
    const uint8_t *w;
    int64_t rb, k;
    void *packed;
    int64_t rows;
    float *out;
    int64_t n, from, to;
    void *scratch;
} job;

static void *run(void *p) {
    job *j = p;
    if (j->q8) kiln_q8_0_q8_gemm(j->w, j->rb, j->k, j->packed, j->rows, j->out, j->n, j->from, j->to, j->scratch);
    else kiln_q8_0_gemm(j->w, j->rb, j->k, j->packed, j->rows, j->out, j->n, j->from, j->to, j->scratch);
    return 0;
}

int main(int argc, char **argv) {
    if (argc != 6) {
        fprintf(stderr, "usage: block_gemm f32|q8 ROWS N K THREADS\n");
        return 2;
    }
    int q8 = argv[1][0] == 'q';
    int64_t rows = atoll(argv[2]), n = atoll(argv[3]), k = atoll(argv[4]), rb = k / 32 * 34;
    int threads = atoi(argv[5]);
    if (threads < 1 || threads > 64 || k % 32) return 2;
    uint8_t *w = malloc(n * rb);
    srand(1);
    for (int64_t j = 0; j < n * (k / 32); j++) {
        uint16_t h = 0x2000 + rand() % 0x400; /* scales around 2^-7 */
        memcpy(w + j * 34, &h, 2);
        for (int t = 0; t < 32; t++) w[j * 34 + 2 + t] = (uint8_t) (rand() % 255 - 127);
    }
    float *x = malloc(rows * k * 4), *out = malloc(rows * n * 4);
    for (int64_t i = 0; i < rows * k; i++) x[i] = rand() / (float) RAND_MAX - 0.5f;
    int64_t packedBytes = q8 ? kiln_q8_gemm_packed_bytes(rows, k) : kiln_gemm_packed_bytes(rows, k);
    int64_t scratchBytes = q8 ? kiln_q8_gemm_scratch_bytes() : kiln_gemm_scratch_bytes();
    int64_t panel = q8 ? kiln_q8_gemm_panel_rows() : kiln_gemm_panel_rows();
    void *packed = aligned_alloc(64, (packedBytes + 63) / 64 * 64), *scratch[64];
    for (int t = 0; t < threads; t++) scratch[t] = aligned_alloc(64, (scratchBytes + 63) / 64 * 64);
    double best = 1e9;
    for (int rep = 0; rep < 7; rep++) {
        double s = now();
        if (q8) kiln_q8_gemm_pack_rows(x, rows, k, packed);
        else kiln_gemm_pack_rows(x, rows, k, packed);
        pthread_t th[64];
        job js[64];
        int64_t per = ((n + panel - 1) / panel + threads - 1) / threads * panel;
        for (int t = 0; t < threads; t++) {
            int64_t from = t * per < n ? t * per : n, to = (t + 1) * per < n ? (t + 1) * per : n;
            js[t] = (job) {q8, w, rb, k, packed, rows, out, n, from, to, scratch[t]};
            pthread_create(&th[t], 0, run, &js[t]);
        }
        for (int t = 0; t < threads; t++) pthread_join(th[t], 0);
        double e = now() - s;
        if (e < best) best = e;
    }
    double worst = 0; /* relative to the sum of |products|; q8: against the f32 x (the quantisation's own error included) */
    for (int c = 0; c < 200; c++) {
        int64_t r = rand() % rows, j = rand() % n;
        double sum = 0, mag = 0;
        for (int64_t i = 0; i < k; i++) {
            const uint8_t *blk = w + j * rb + i / 32 * 34;
            double p = (double) ((float) (int8_t) blk[2 + i % 32] * half_at(blk)) * x[r * k + i];
            sum += p;
            mag += p < 0 ? -p : p;
        }
        double e = (out[r * n + j] - sum) / mag;
        if (e < 0) e = -e;
        if (e > worst) worst = e;
    }
    printf("%s rows %lld n %lld k %lld threads %d: %.2f ms, %.1f G%s/s, worst relative error %.2g\n", q8 ? "q8" : "f32", (long long) rows,
           (long long) n, (long long) k, threads, best * 1e3, 2.0 * rows * n * k / best / 1e9, q8 ? "OP" : "FLOP", worst);
    return 0;
}

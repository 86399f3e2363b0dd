/* The f32 FMA peak of this machine: 24 independent 512-bit FMA chains per thread, 1 and 2 threads (AVX-512 hosts).
 *   gcc -O2 -march=native -o /tmp/fma_peak tools/bench/fma_peak.c -lpthread && /tmp/fma_peak */
#include <immintrin.h>
#include <stdio.h>
#include <time.h>
#include <pthread.h>
static double now() { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + t.tv_nsec * 1e-9; }
static void *run(void *p) {
    __m512 a[24]; __m512 b = _mm512_set1_ps(1.0001f), c = _mm512_set1_ps(0.999f);
    for (int i = 0; i < 24; i++) a[i] = _mm512_set1_ps(i);
    for (long it = 0; it < 50000000; it++) {
#pragma GCC unroll 24
        for (int i = 0; i < 24; i++) a[i] = _mm512_fmadd_ps(a[i], b, c);
    }
    float s = 0; for (int i = 0; i < 24; i++) s += a[i][0]; *(float *) p = s; return 0;
}
int main() { for (int th = 1; th <= 2; th++) { pthread_t t[2]; float r[2]; double s = now();
  for (int i = 0; i < th; i++) pthread_create(&t[i], 0, run, &r[i]); for (int i = 0; i < th; i++) pthread_join(t[i], 0);
  double e = now() - s; printf("%d threads: %.1f GFLOP/s\n", th, th * 50000000.0 * 24 * 32 / e / 1e9); } }

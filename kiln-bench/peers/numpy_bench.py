"""NumPy figures for BENCHMARKS.md, run beside Kiln's JMH benchmarks on the same machine.

Usage: python3 kiln-bench/peers/numpy_bench.py [--n 1024] [--add 16777216] [--reps 10]
Prints the median of the timed repetitions (after warm-up), as Kiln's benchmarks report medians.
"""
import argparse
import statistics
import time

import numpy as np


def median_seconds(fn, reps):
    fn()
    fn()
    times = []
    for _ in range(reps):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--n", type=int, default=1024)
    p.add_argument("--add", type=int, default=16 * 1024 * 1024)
    p.add_argument("--reps", type=int, default=10)
    a = p.parse_args()
    rng = np.random.default_rng(0)
    x = rng.random((a.n, a.n), dtype=np.float32)
    y = rng.random((a.n, a.n), dtype=np.float32)
    s = median_seconds(lambda: x @ y, a.reps)
    print(f"numpy {np.__version__} matmul f32 {a.n}^3: median {s * 1e3:.2f} ms, {2 * a.n ** 3 / s / 1e9:.1f} GFLOP/s")
    u = rng.random(a.add, dtype=np.float32)
    v = rng.random(a.add, dtype=np.float32)
    out = np.empty_like(u)
    s = median_seconds(lambda: np.add(u, v, out=out), a.reps)
    print(f"numpy add f32 {a.add}: median {s * 1e3:.2f} ms, {3 * 4 * a.add / s / 1e9:.1f} GB/s (2 reads + 1 write)")
    table = rng.standard_normal((32000, 512), dtype=np.float32)
    for tokens in (16, 256):
        ids = (np.arange(tokens, dtype=np.int64) * 7919) % 32000
        rows = np.empty((tokens, 512), dtype=np.float32)
        s = median_seconds(lambda: np.take(table, ids, axis=0, out=rows), a.reps * 10)
        print(f"numpy take (embedding lookup) {tokens} x 512 of 32000 x 512 f32: median {s * 1e6:.1f} us")
    z = (rng.random(1 << 20, dtype=np.float32) * 40 - 20).astype(np.float32)
    e = np.empty_like(z)
    s = median_seconds(lambda: np.exp(z, out=e), a.reps * 10)
    print(f"numpy exp f32 1048576: median {s * 1e6:.1f} us")


if __name__ == "__main__":
    main()

"""Golden cases for seeded random numbers (Tensor.rand, uniform, randn, normal, randint, bernoulli).

Threefry-2x32 (20 rounds) is reimplemented here from Salmon et al. 2011 and checked against the
Random123 known-answer vectors, so the Java graph is compared with an independent generator.
Element i of stream s is threefry(counter = s * 2^48 + i, key = seed); word 0 is the low 32 bits.
"""
import math

import numpy as np

from golden import Cases

M32 = 0xFFFFFFFF
ROT = [13, 15, 26, 6, 17, 29, 16, 24]
STREAM = 1 << 48


def rotl(x, r):
    return ((x << r) | (x >> (32 - r))) & M32


def threefry(counter, key):
    k0, k1 = key & M32, (key >> 32) & M32
    ks = [k0, k1, 0x1BD11BDA ^ k0 ^ k1]
    x0, x1 = (counter + ks[0]) & M32, ((counter >> 32) + ks[1]) & M32
    for r in range(20):
        x0 = (x0 + x1) & M32
        x1 = rotl(x1, ROT[r % 8]) ^ x0
        if r % 4 == 3:
            s = r // 4 + 1
            x0 = (x0 + ks[s % 3]) & M32
            x1 = (x1 + ks[(s + 1) % 3] + s) & M32
    return x0 | (x1 << 32)


def w(lo, hi):
    return lo | (hi << 32)


assert threefry(0, 0) == w(0x6b200159, 0x99ba4efe)
assert threefry(w(M32, M32), w(M32, M32)) == w(0x1cb996fc, 0xbb002be7)
assert threefry(w(0x243f6a88, 0x85a308d3), w(0x13198a2e, 0x03707344)) == w(0xc4923a9c, 0x483df7a0)


def words(seed, shape, stream=0):
    n = int(np.prod(shape)) if shape else 1
    key = seed & ((1 << 64) - 1)
    return [threefry(stream * STREAM + i, key) for i in range(n)]


PREC = {"f16": 11, "bf16": 8, "f32": 24, "f64": 53}


def unit(seed, shape, dtype="f32", stream=0):
    p = PREC[dtype]
    return np.array([(x >> (64 - p)) * 2.0 ** -p for x in words(seed, shape, stream)]).reshape(shape)


c = Cases("random")

for seed, shape in [(0, [8]), (42, [3, 4]), (-7, [2, 3, 2]), (123456789, []), (5, [0, 3])]:
    c.add(f"rand_{seed}_{len(shape)}d", "rand", [], np.float32(unit(seed, shape)), seed=seed, shape=shape)
for dt, npdt in [("f16", np.float16), ("bf16", np.float32), ("f64", np.float64)]:
    out = unit(9, [5, 4], dt).astype(npdt)
    c.add(f"rand_{dt}", "rand", [], {"dtype": dt, "shape": [5, 4], "data": [float(v) for v in out.reshape(-1)]},
          seed=9, shape=[5, 4], dtype=dt)

for seed, lo, hi, shape in [(1, -2.0, 3.0, [4, 5]), (2, 10.0, 10.5, [16]), (3, -1e3, 1e3, [2, 2, 2])]:
    u = unit(seed, shape)
    c.add(f"uniform_{seed}", "uniform", [], np.float32(lo + (hi - lo) * u), seed=seed, low=lo, high=hi, shape=shape)


def randn(seed, shape):
    u1, u2 = unit(seed, shape, stream=0), unit(seed, shape, stream=1)
    return np.sqrt(-2 * np.log(1 - u1)) * np.cos(2 * math.pi * u2)


for seed, shape in [(0, [10]), (77, [4, 6]), (-3, [])]:
    c.add(f"randn_{seed}", "randn", [], np.float32(randn(seed, shape)), seed=seed, shape=shape)
for seed, mean, std, shape in [(4, 1.5, 0.25, [3, 7]), (5, -10.0, 3.0, [12])]:
    c.add(f"normal_{seed}", "normal", [], np.float32(mean + std * randn(seed, shape)), seed=seed, mean=mean, std=std, shape=shape)


def randint(seed, low, high, shape):
    r = high - low
    return [low + ((x * r) >> 64) for x in words(seed, shape)]


for seed, lo, hi, shape, dt, npdt in [(0, 0, 10, [20], None, np.int32), (1, -100, 100, [3, 5], None, np.int32),
                                       (2, -(1 << 31), (1 << 31) - 1, [8], None, np.int32),
                                       (3, 0, 256, [4, 4], "u8", np.uint8),
                                       (4, -(1 << 63), (1 << 63) - 1, [6], "i64", np.int64),
                                       (5, 7, 8, [5], "i16", np.int16)]:
    out = np.array(randint(seed, lo, hi, shape), dtype=npdt).reshape(shape)
    args = dict(seed=seed, low=lo, high=hi, shape=shape)
    if dt:
        args["dtype"] = dt
    c.add(f"randint_{seed}", "randint", [], out, **args)

for seed, p, shape in [(0, 0.5, [16]), (1, 0.1, [4, 8]), (2, 0.0, [5]), (3, 1.0, [5])]:
    u = unit(seed, shape, "f64")
    c.add(f"bernoulli_{seed}", "bernoulli", [], u < p, seed=seed, p=p, shape=shape)

rng = np.random.default_rng(0)
p32 = rng.random((3, 5)).astype(np.float32)
p32[0, :3] = [0, 1, 0.5]
c.add("bernoulli_tensor_f32", "bernoulli_tensor", [p32], unit(6, [3, 5]) < p32, seed=6)
p64 = rng.random(12)
c.add("bernoulli_tensor_f64", "bernoulli_tensor", [p64], unit(7, [12], "f64") < p64, seed=7)

c.write()

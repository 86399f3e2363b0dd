"""Golden cases for elementwise Tensor ops: arithmetic, math functions, rounding, comparisons, logic,
where/maskedFill, bitwise ops, broadcastTo, integer wraparound and dtype promotion.

Expected values come from NumPy evaluated in float64 on the (float32) inputs and rounded once to the
output dtype, so they are the correctly rounded results. Non-contiguous inputs: see CoreGolden.java
("tr": stored transposed, "st": stored with junk rows between the real ones).
"""
import math

import numpy as np

from golden import Cases, array, rng

c = Cases("elementwise")
r = rng(11)
f32, f64, i32 = np.float32, np.float64, np.int32
nan, inf = np.nan, np.inf

# every special value against every other (8 x 8 pairs through broadcasting)
SPECIAL = np.array([nan, inf, -inf, -0.0, 0.0, 1.0, -1.5, 2.5], f32)
SA, SB = SPECIAL.reshape(8, 1), SPECIAL.reshape(1, 8)


def tr(x):
    """x stored with its last two axes swapped; the Java side transposes it back into a view."""
    return np.ascontiguousarray(np.swapaxes(x, -1, -2))


def st(x):
    """x stored with a junk row after every row of axis 0; the Java side reads rows 0, 2, 4, ..."""
    full = np.full((2 * x.shape[0] - 1,) + x.shape[1:], 77, x.dtype)
    full[::2] = x
    return full


def f64op(fn, *xs, out=f32):
    """fn evaluated in float64 on the inputs, rounded once to `out`."""
    with np.errstate(all="ignore"):
        return np.asarray(fn(*[np.asarray(x, f64) for x in xs])).astype(out)


def randn(*shape):
    return r.standard_normal(shape).astype(f32)


def uniform(lo, hi, *shape):
    return r.uniform(lo, hi, shape).astype(f32)


# ------------------------------------------------------------------ binary float arithmetic

BINARY = {
    "add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.divide,
    "maximum": np.maximum, "minimum": np.minimum,
}
for op, fn in BINARY.items():
    a, b = randn(3, 4), randn(4)
    c.add(f"{op}_bcast_row", op, [a, b], f64op(fn, a, b))
    a, b = randn(2, 1, 3), randn(4, 1)
    c.add(f"{op}_bcast_both", op, [a, b], f64op(fn, a, b))
    c.add(f"{op}_special", op, [SA, SB], f64op(fn, SA, SB))
    a, b = randn(3, 4), randn(3, 4)
    c.add(f"{op}_transposed", op, [tr(a), b], f64op(fn, a, b), tr=[0])
    c.add(f"{op}_strided", op, [a, st(b)], f64op(fn, a, b), st=[1])
    a, b = np.zeros((0, 3), f32), randn(3)
    c.add(f"{op}_size0", op, [a, b], np.zeros((0, 3), f32))
    a, b = randn(1, 3), randn(4, 1)
    c.add(f"{op}_size1", op, [a, b], f64op(fn, a, b))
    a = randn(2, 3)
    c.add(f"{op}_scalar", op, [a], f64op(lambda x: fn(x, 2.5), a), scalar=2.5)
    a = np.float32(1.75).reshape(())
    c.add(f"{op}_0d", op, [a, SPECIAL], f64op(fn, a, SPECIAL))

# integer operands
ia, ib = np.array([[7, -7, 0, 5], [-3, 100, 9, -1]], i32), np.array([2, 3, -4, 1], i32)
c.add("add_i32", "add", [ia, ib], ia + ib)
c.add("sub_i32", "sub", [ia, ib], ia - ib)
c.add("mul_i32", "mul", [ia, ib], ia * ib)
c.add("maximum_i32", "maximum", [ia, ib], np.maximum(ia, ib))
c.add("minimum_i32", "minimum", [ia, ib], np.minimum(ia, ib))
c.add("add_i32_long_scalar", "add", [ia], ia + 3, scalar=3)
c.add("mul_i32_double_scalar", "mul", [ia], (ia * 0.5).astype(f32), scalar=0.5)  # fractional scalar -> f32
c.add("div_i32", "div", [ia, ib], f64op(np.divide, ia, ib))  # int / int -> f32
c.add("div_i32_by_zero", "div", [np.array([1, -1, 0], i32), np.array([0, 0, 0], i32)], np.array([inf, -inf, nan], f32))
c.add("div_i32_scalar", "div", [ia], f64op(lambda x: x / 4, ia), scalar=4)
c.add("maximum_u8_i8", "maximum", [np.array([200, 0, 5], np.uint8), np.array([-1, -128, 7], np.int8)],
      np.array([200, 0, 7], np.int16))
c.add("minimum_i32_scalar", "minimum", [ia], np.minimum(ia, 1), scalar=1)

# integer wraparound and dtype promotion
i8a, i8b = np.array([100, -100, 127, -128], np.int8), np.array([100, -100, 1, -1], np.int8)
c.add("add_i8_wrap", "add", [i8a, i8b], (i8a.astype(np.int64) + i8b).astype(np.int8))
c.add("mul_i8_wrap", "mul", [i8a, i8b], (i8a.astype(np.int64) * i8b).astype(np.int8))
u8a, u8b = np.array([200, 3, 255, 0], np.uint8), np.array([100, 5, 1, 1], np.uint8)
c.add("add_u8_wrap", "add", [u8a, u8b], ((u8a.astype(np.int64) + u8b) % 256).astype(np.uint8))
c.add("sub_u8_wrap", "sub", [u8a, u8b], ((u8a.astype(np.int64) - u8b) % 256).astype(np.uint8))
c.add("mul_u8_wrap", "mul", [u8a, u8b], ((u8a.astype(np.int64) * u8b) % 256).astype(np.uint8))
c.add("add_u8_scalar", "add", [u8a], ((u8a.astype(np.int64) + 7) % 256).astype(np.uint8), scalar=7)
c.add("add_i8_u8_promotes_i16", "add", [i8a, u8a], i8a.astype(np.int16) + u8a.astype(np.int16))
hb = np.array([0.5, -2.0, 1000.0, 3.25], np.float16)
c.add("add_i32_f16_promotes_f16", "add", [np.array([1, 2, -3, 4], i32), hb],
      (np.array([1, 2, -3, 4], f64) + hb.astype(f64)).astype(np.float16))
c.add("add_f16", "add", [hb, hb[::-1].copy()], (hb.astype(f64) + hb[::-1]).astype(np.float16))
c.add("mul_f16_scalar", "mul", [hb], (hb.astype(f64) * 3).astype(np.float16), scalar=3)
bo = np.array([True, False, True])
c.add("add_bool_int_scalar", "add", [bo], bo.astype(i32) + 2, scalar=2)  # Kiln's default integer dtype is i32
c.add("add_bool_bool", "add", [bo, np.array([True, True, False])], np.array([True, True, True]))  # as torch: logical or
c.add("add_i32_f32", "add", [np.array([1, 2], i32), np.array([0.5, 0.25], f32)], np.array([1.5, 2.25], f32))
c.add("add_f32_f64", "add", [np.array([0.1], f32), np.array([0.2], f64)], np.array([0.1], f32).astype(f64) + 0.2)
c.add("mul_i64", "mul", [np.array([1 << 40, -3], np.int64), np.array([1 << 20, 5], np.int64)],
      np.array([(1 << 60), -15], np.int64))
c.add("add_i32_wrap", "add", [np.array([2**31 - 1], i32), np.array([1], i32)], np.array([-2**31], i32))

# rsub: other - this
a, b = randn(3, 4), randn(4)
c.add("rsub_bcast", "rsub", [a, b], f64op(lambda x, y: y - x, a, b))
c.add("rsub_scalar", "rsub", [a], f64op(lambda x: 2.0 - x, a), scalar=2.0)
c.add("rsub_special", "rsub", [SA, SB], f64op(lambda x, y: y - x, SA, SB))
c.add("rsub_u8_wrap", "rsub", [u8a], ((10 - u8a.astype(np.int64)) % 256).astype(np.uint8), scalar=10)
c.add("rsub_transposed", "rsub", [tr(a.T.copy())], f64op(lambda x: 1.0 - x, a.T), tr=[0], scalar=1.0)

# ------------------------------------------------------------------ division flavours

fa = np.array([7, -7, 7, -7, 7.5, -7.5, 0, 3], f32)
fb = np.array([2, 2, -2, -2, 2, 2, 5, 0.5], f32)
za = np.array([1, -1, 0], f32)
zb = np.array([0, 0, 0], f32)
with np.errstate(all="ignore"):
    c.add("floorDiv_signs", "floorDiv", [fa, fb], np.floor_divide(fa, fb))
    c.add("floorDiv_by_zero", "floorDiv", [za, zb], np.floor_divide(za, zb))
    fd = np.array([1.0, -1.0, 0.7, 1e300], f64), np.array([0.1, 0.1, 0.1, 3.0], f64)
    c.add("floorDiv_f64_exact_quotient", "floorDiv", list(fd), np.floor_divide(*fd))  # 1 // 0.1 is 9 (floor(1 / 0.1) would be 10)
    c.add("mod_f64", "mod", list(fd), np.remainder(*fd))
    c.add("floorDiv_inf", "floorDiv", [np.array([inf, -5, 5, nan, 3], f32), np.array([1, inf, inf, 2, nan], f32)],
          np.floor_divide(np.array([inf, -5, 5, nan, 3], f32), np.array([1, inf, inf, 2, nan], f32)))
    a, b = randn(3, 4) * 10, uniform(0.5, 3, 4) * np.where(r.random(4) < 0.5, -1, 1).astype(f32)
    c.add("floorDiv_bcast", "floorDiv", [a, b], np.floor_divide(a.astype(f64), b).astype(f32))
    c.add("floorDiv_transposed", "floorDiv", [a, b.reshape(4, 1)], np.floor_divide(a.T.astype(f64), b.reshape(4, 1)).astype(f32), tr=[0])
    ia2, ib2 = np.array([7, -7, 7, -7, 0, 9], i32), np.array([2, 2, -2, -2, 3, 1], i32)
    c.add("floorDiv_i32", "floorDiv", [ia2, ib2], ia2 // ib2)
    c.add("floorDiv_i32_scalar", "floorDiv", [ia2], ia2 // 4, scalar=4)
    c.add("floorDiv_i32_by_zero", "floorDiv", [ia2, np.zeros(6, i32)], np.zeros(6, i32))  # NumPy: integer x // 0 is 0
    c.add("floorDiv_u8", "floorDiv", [u8a, np.array([7, 2, 16, 3], np.uint8)], u8a // np.array([7, 2, 16, 3], np.uint8))

    c.add("truncDiv_signs", "truncDiv", [fa, fb], np.trunc(fa.astype(f64) / fb).astype(f32))
    c.add("truncDiv_by_zero", "truncDiv", [za, zb], np.array([inf, -inf, nan], f32))
    c.add("truncDiv_i32", "truncDiv", [ia2, ib2], np.trunc(ia2 / ib2).astype(i32))
    c.add("truncDiv_i32_scalar", "truncDiv", [ia2], np.trunc(ia2 / -4).astype(i32), scalar=-4)
    c.add("truncDiv_i32_double_scalar", "truncDiv", [ia2], np.trunc(ia2 / 2.5).astype(f32), scalar=2.5)
    c.add("truncDiv_bcast", "truncDiv", [a, b], np.trunc(a.astype(f64) / b).astype(f32))

    c.add("mod_signs", "mod", [fa, fb], np.remainder(fa, fb))
    c.add("mod_special", "mod", [np.array([5, -5, 5, -5, inf, 3, nan, 1], f32), np.array([inf, inf, -inf, -inf, 2, nan, 2, 0], f32)],
          np.remainder(np.array([5, -5, 5, -5, inf, 3, nan, 1], f32), np.array([inf, inf, -inf, -inf, 2, nan, 2, 0], f32)))
    c.add("mod_bcast", "mod", [a, b], np.remainder(a.astype(f64), b).astype(f32))
    c.add("mod_i32", "mod", [ia2, ib2], np.remainder(ia2, ib2))
    c.add("mod_i32_scalar", "mod", [ia2], np.remainder(ia2, -3), scalar=-3)
    c.add("mod_i32_by_zero", "mod", [ia2, np.zeros(6, i32)], np.zeros(6, i32))  # NumPy: integer x % 0 is 0
    c.add("mod_f32_scalar", "mod", [a], np.remainder(a.astype(f64), 1.5).astype(f32), scalar=1.5)

    c.add("fmod_signs", "fmod", [fa, fb], np.fmod(fa, fb))
    c.add("fmod_special", "fmod", [np.array([5, -5, inf, 3, nan, 1, -0.0], f32), np.array([inf, inf, 2, nan, 2, 0, 3], f32)],
          np.fmod(np.array([5, -5, inf, 3, nan, 1, -0.0], f32), np.array([inf, inf, 2, nan, 2, 0, 3], f32)))
    c.add("fmod_bcast", "fmod", [a, b], np.fmod(a.astype(f64), b).astype(f32))
    c.add("fmod_i32", "fmod", [ia2, ib2], np.fmod(ia2, ib2))
    c.add("fmod_i32_scalar", "fmod", [ia2], np.fmod(ia2, -3), scalar=-3)
    c.add("fmod_transposed", "fmod", [tr(a)], np.fmod(a.astype(f64), 2.0).astype(f32), tr=[0], scalar=2.0)

# ------------------------------------------------------------------ unary arithmetic

c.add("neg_special", "neg", [SPECIAL], -SPECIAL)
x = randn(2, 3)
c.add("neg_transposed", "neg", [tr(x)], -x, tr=[0])
c.add("neg_i8_wrap", "neg", [np.array([-128, 127, 0, -5], np.int8)], np.array([-128, -127, 0, 5], np.int8))
c.add("neg_u8_wrap", "neg", [np.array([1, 0, 255], np.uint8)], np.array([255, 0, 1], np.uint8))
c.add("neg_f16", "neg", [hb], -hb)

with np.errstate(all="ignore"):
    c.add("reciprocal_special", "reciprocal", [SPECIAL], (1 / SPECIAL.astype(f64)).astype(f32))
    c.add("reciprocal_i32", "reciprocal", [np.array([1, 2, -4, 0], i32)], np.array([1, 0.5, -0.25, inf], f32))
x = randn(3, 2)
c.add("reciprocal_strided", "reciprocal", [st(x)], f64op(lambda v: 1 / v, x), st=[0])

c.add("square_special", "square", [SPECIAL], f64op(np.square, SPECIAL))
c.add("square_i32_wrap", "square", [np.array([3, -4, 70000], i32)], (np.array([3, -4, 70000], np.int64) ** 2).astype(i32))
c.add("square_transposed", "square", [tr(x)], f64op(np.square, x), tr=[0])

# ------------------------------------------------------------------ pow

pb = np.array([-2, -2, -2, 0, 0, 0, -0.0, -0.0, -0.0, 2, 1.5, -1.5, nan, nan, inf, -inf, -inf, 0.5, -8, 1, 4, -1, -1, -2], f32)
pe = np.array([3, 2, -1, 0, 2, -1, -1, -2, 0.5, 0.5, 2.5, 2.5, 0, 1, -1, 3, -2, inf, 1 / 3, nan, -0.5, inf, -inf, inf], f32)
c.add("pow_special", "pow", [pb, pe], f64op(np.power, pb, pe))
x, e = uniform(0.1, 4, 3, 4), uniform(-3, 3, 3, 4)
c.add("pow_random", "pow", [x, e], f64op(np.power, x, e))
x = randn(3, 4)
c.add("pow_scalar_int", "pow", [x], f64op(lambda v: v ** 3, x), scalar=3)
c.add("pow_scalar_half", "pow", [np.abs(x)], f64op(np.sqrt, np.abs(x)), scalar=0.5)
c.add("pow_negative_base_int_exponent", "pow", [np.array([-3, -2, -0.5, -1], f32), np.array([[2], [3], [-2]], f32)],
      f64op(np.power, np.array([-3, -2, -0.5, -1], f32), np.array([[2], [3], [-2]], f32)))
pi_, pe_ = np.array([2, 3, -3, 0, 5, -1, 7], i32), np.array([10, 3, 3, 0, 0, 7, 2], i32)
c.add("pow_i32", "pow", [pi_, pe_], pi_ ** pe_)
c.add("pow_i32_scalar", "pow", [pi_], pi_ ** 2, scalar=2)
c.add("pow_transposed", "pow", [tr(x), np.abs(x)], f64op(np.power, x, np.abs(x)), tr=[0])

# ------------------------------------------------------------------ lerp and clamp

s, e, w = randn(3, 4), randn(3, 4), uniform(0, 1, 3, 4)
c.add("lerp_scalar_weight", "lerp", [s, e], f64op(lambda a, b: a + 0.25 * (b - a), s, e), weight=0.25)
c.add("lerp_tensor_weight", "lerp", [s, e, w], f64op(lambda a, b, t: a + t * (b - a), s, e, w))
c.add("lerp_bcast", "lerp", [s, e[0], w[:, :1].copy()], f64op(lambda a, b, t: a + t * (b - a), s, e[0], w[:, :1]))
c.add("lerp_scalar_end", "lerp", [s], f64op(lambda a: a + 0.5 * (2 - a), s), end=2.0, weight=0.5)
c.add("lerp_transposed", "lerp", [tr(s), e], f64op(lambda a, b: a + 0.75 * (b - a), s, e), tr=[0], weight=0.75)

cl = np.array([nan, inf, -inf, -0.0, 0.2, -0.7, 0.5, 3], f32)
c.add("clamp_both", "clamp", [cl], np.clip(cl, -0.5, 0.5), min=-0.5, max=0.5)
c.add("clamp_min_only", "clamp", [cl], np.maximum(cl, 0.0).astype(f32), min=0.0)
c.add("clamp_max_only", "clamp", [cl], np.minimum(cl, 0.0).astype(f32), max=0.0)
lo, hi = uniform(-1, 0, 3, 1), uniform(0, 1, 4)
x = randn(3, 4)
c.add("clamp_tensor_bounds", "clamp", [x, lo, hi], np.minimum(np.maximum(x, lo), hi))
c.add("clamp_i32", "clamp", [ia], np.clip(ia, -2, 6), min=-2, max=6)
c.add("clamp_i32_double_bound", "clamp", [ia], np.clip(ia, -2.5, 6.5).astype(f32), min=-2.5, max=6.5)
c.add("clamp_transposed", "clamp", [tr(x)], np.clip(x, -0.3, 0.3), tr=[0], min=-0.3, max=0.3)

# ------------------------------------------------------------------ math functions


def verf(v):
    return np.vectorize(lambda t: math.erf(t) if not math.isnan(t) else nan)(v)


# op: (fn, random-domain inputs, specials)
MATH = {
    "exp": (np.exp, uniform(-10, 10, 3, 4), [nan, inf, -inf, -0.0, 0.0, 1, -1, 88, -104]),
    "exp2": (np.exp2, uniform(-20, 20, 3, 4), [nan, inf, -inf, -0.0, 0.0, 1, -1, 127, -149, 0.5]),
    "log": (np.log, uniform(0.01, 100, 3, 4), [nan, inf, -inf, -0.0, 0.0, 1, -1, 1e-30, 3e38]),
    "log2": (np.log2, uniform(0.01, 100, 3, 4), [nan, inf, -inf, -0.0, 0.0, 1, -1, 8, 0.125, 1e-30]),
    "log10": (np.log10, uniform(0.01, 100, 3, 4), [nan, inf, -inf, -0.0, 0.0, 1, -1, 1000, 1e-30]),
    "log1p": (np.log1p, uniform(-0.9, 10, 3, 4), [nan, inf, -inf, -0.0, 0.0, -1, -2, 1e-7, -1e-7, 1e-3, 1e30, 3e38]),
    "expm1": (np.expm1, uniform(-5, 5, 3, 4), [nan, inf, -inf, -0.0, 0.0, 1e-7, -1e-7, 1e-3, 88, 100, -100]),
    "sqrt": (np.sqrt, uniform(0, 100, 3, 4), [nan, inf, -inf, -0.0, 0.0, 1, -1, 2, 1e-30]),
    "rsqrt": (lambda v: 1 / np.sqrt(v), uniform(0.01, 100, 3, 4), [nan, inf, -inf, -0.0, 0.0, 1, -1, 4, 1e-30]),
    "sin": (np.sin, uniform(-10, 10, 3, 4), [nan, inf, -inf, -0.0, 0.0, math.pi, -math.pi / 2, 100]),
    "cos": (np.cos, uniform(-10, 10, 3, 4), [nan, inf, -inf, -0.0, 0.0, math.pi, -math.pi / 2, 20]),
    "tan": (np.tan, uniform(-1.4, 1.4, 3, 4), [nan, inf, -inf, -0.0, 0.0, 1, -1, 0.785398]),
    "asin": (np.arcsin, uniform(-1, 1, 3, 4), [nan, inf, -inf, -0.0, 0.0, 1, -1, 1.5, -1.5, 0.999, -0.5]),
    "acos": (np.arccos, uniform(-1, 1, 3, 4), [nan, inf, -inf, -0.0, 0.0, 1, -1, 1.5, 0.999, -0.999]),
    "atan": (np.arctan, uniform(-10, 10, 3, 4), [nan, inf, -inf, -0.0, 0.0, 1, -1, 0.4142, 2.4142, 1e10, -1e-10]),
    "sinh": (np.sinh, uniform(-5, 5, 3, 4), [nan, inf, -inf, -0.0, 0.0, 1, -1, 80, -80]),
    "cosh": (np.cosh, uniform(-5, 5, 3, 4), [nan, inf, -inf, -0.0, 0.0, 1, -1, 80, -80]),
    "tanh": (np.tanh, uniform(-5, 5, 3, 4), [nan, inf, -inf, -0.0, 0.0, 1, -1, 20, -20, 100, -100]),
    "asinh": (np.arcsinh, uniform(-10, 10, 3, 4), [nan, inf, -inf, -0.0, 0.0, 1, -1, 1e4, -1e4]),
    "acosh": (np.arccosh, uniform(1, 10, 3, 4), [nan, inf, -inf, -0.0, 0.0, 1, -1, 0.5, 1e4]),
    "atanh": (np.arctanh, uniform(-0.95, 0.95, 3, 4), [nan, inf, -inf, -0.0, 0.0, 1, -1, 0.5, -0.5, 2]),
    "erf": (verf, uniform(-3, 3, 3, 4), [nan, inf, -inf, -0.0, 0.0, 1, -1, 5, -5, 0.1]),
}
# Tolerances: the f32 compositions lose a little near cancellations, all inside the defaults except
# where noted per case below.
for op, (fn, dom, sp) in MATH.items():
    sp = np.array(sp, f32)
    c.add(f"{op}_random", op, [dom], f64op(fn, dom))
    c.add(f"{op}_special", op, [sp], f64op(fn, sp))
    c.add(f"{op}_transposed", op, [tr(dom)], f64op(fn, dom), tr=[0])
ints = np.array([1, 2, 3], i32)
for op in ["exp", "log", "sqrt", "sin", "cos", "atan", "erf", "log2", "exp2", "tanh"]:
    c.add(f"{op}_i32", op, [ints], f64op(MATH[op][0], ints))  # integer inputs compute in f32
c.add("exp_size0", "exp", [np.zeros((2, 0), f32)], np.zeros((2, 0), f32))
c.add("sqrt_f16", "sqrt", [np.array([4, 2, 0.25, 100], np.float16)], np.sqrt(np.array([4, 2, 0.25, 100], f64)).astype(np.float16))
c.add("exp_0d", "exp", [np.array(0.5, f32)], f64op(np.exp, np.array(0.5, f32)))

# ------------------------------------------------------------------ rounding and sign

RD = np.array([-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 0.49999997, -0.49999997, 2.4, -2.6, 1e20, -1e20, 8388609,
               nan, inf, -inf, -0.0, 0.0], f32)
c.add("trunc_special", "trunc", [RD], np.trunc(RD))
c.add("floor_special", "floor", [RD], np.floor(RD))
c.add("ceil_special", "ceil", [RD], np.ceil(RD))
c.add("round_half_even", "round", [RD], np.round(RD))  # NumPy rounds half to even
x = uniform(-10, 10, 3, 4)
for op, fn in [("trunc", np.trunc), ("floor", np.floor), ("ceil", np.ceil), ("round", np.round)]:
    c.add(f"{op}_transposed", op, [tr(x)], fn(x), tr=[0])
    c.add(f"{op}_i32", op, [ia], ia)  # integers are already whole
c.add("round_f16", "round", [np.array([0.5, 1.5, 2.5, -3.5, 1.25], np.float16)], np.round(np.array([0.5, 1.5, 2.5, -3.5, 1.25], np.float16)))

c.add("abs_special", "abs", [SPECIAL], np.abs(SPECIAL))
c.add("abs_i8", "abs", [np.array([-128, -5, 0, 7], np.int8)], np.array([-128, 5, 0, 7], np.int8))  # -128 wraps, as torch
c.add("abs_u8", "abs", [u8a], u8a)
c.add("abs_transposed", "abs", [tr(x)], np.abs(x), tr=[0])
c.add("abs_f16", "abs", [hb], np.abs(hb))

c.add("sign_special", "sign", [SPECIAL], np.sign(SPECIAL))  # Kiln documents NaN -> NaN (NumPy), not torch's 0
c.add("sign_i32", "sign", [ia], np.sign(ia))
c.add("sign_i8", "sign", [np.array([-128, 0, 3], np.int8)], np.array([-1, 0, 1], np.int8))
c.add("sign_transposed", "sign", [tr(x)], np.sign(x), tr=[0])

SP2 = np.array([[nan, inf, -inf], [-0.0, 1.0, -3e38]], f32)
for op, fn in [("isnan", np.isnan), ("isinf", np.isinf), ("isfinite", np.isfinite)]:
    c.add(f"{op}_special", op, [SP2], fn(SP2))
    c.add(f"{op}_i32", op, [ia], fn(ia))
    c.add(f"{op}_transposed", op, [tr(SP2)], fn(SP2), tr=[0])

# ------------------------------------------------------------------ comparisons

CMP = {"lt": np.less, "gt": np.greater, "le": np.less_equal, "ge": np.greater_equal, "eq": np.equal, "ne": np.not_equal}
for op, fn in CMP.items():
    c.add(f"{op}_special", op, [SA, SB], fn(SA, SB))
    a, b = randn(3, 4), randn(4)
    b[1] = a[0, 1]  # an exact tie
    c.add(f"{op}_bcast", op, [a, b], fn(a, b))
    c.add(f"{op}_transposed", op, [tr(a), b], fn(a, b), tr=[0])
    c.add(f"{op}_i32_scalar", op, [ia], fn(ia, 5), scalar=5)
    c.add(f"{op}_i32_double_scalar", op, [ia], fn(ia, 6.5), scalar=6.5)
    c.add(f"{op}_u8_i8", op, [np.array([200, 0, 5, 128], np.uint8), np.array([-1, 0, 7, -128], np.int8)],
          fn(np.array([200, 0, 5, 128], np.int16), np.array([-1, 0, 7, -128], np.int16)))
    c.add(f"{op}_size0", op, [np.zeros((0, 2), f32), np.zeros(2, f32)], np.zeros((0, 2), bool))
c.add("eq_bool", "eq", [bo, np.array([True, True, False])], np.array([True, False, False]))

# ------------------------------------------------------------------ logic

LA = np.array([[nan, 0.0, -0.0, 2.0], [0.0, 1.0, inf, -1.0]], f32)
LB = np.array([1.0, 0.0, 5.0, -0.0], f32)
c.add("logicalNot_float", "logicalNot", [LA], np.logical_not(LA))
c.add("logicalNot_i32", "logicalNot", [ia], np.logical_not(ia))
c.add("logicalNot_bool", "logicalNot", [bo], ~bo)
c.add("logicalNot_transposed", "logicalNot", [tr(LA)], np.logical_not(LA), tr=[0])
for op, fn in [("logicalAnd", np.logical_and), ("logicalOr", np.logical_or), ("logicalXor", np.logical_xor)]:
    c.add(f"{op}_float_bcast", op, [LA, LB], fn(LA, LB))
    c.add(f"{op}_i32", op, [ia, ib], fn(ia, ib))
    c.add(f"{op}_bool", op, [np.array([True, True, False, False]), np.array([True, False, True, False])],
          fn(np.array([True, True, False, False]), np.array([True, False, True, False])))
    c.add(f"{op}_bool_scalar", op, [bo], fn(bo, True), scalar=True)
    c.add(f"{op}_transposed", op, [tr(LA), LB], fn(LA, LB), tr=[0])

# ------------------------------------------------------------------ where and maskedFill

cond = r.random((3, 1)) < 0.5
cond[0, 0], cond[1, 0] = True, False
a, b = randn(1, 4), randn(3, 4)
c.add("where_bcast", "where", [cond, a, b], np.where(cond, a, b))
fcond = np.array([[0.0, nan, -0.0, 2.0]], f32)
c.add("where_float_cond", "where", [fcond, a, b], np.where(fcond != 0, a, b))
c.add("where_b_scalar", "where", [cond, b], np.where(cond, b, f32(-1.5)), b_scalar=-1.5)
c.add("where_a_scalar", "where", [cond, b], np.where(cond, f32(2.5), b), a_scalar=2.5)
c.add("where_scalars_int", "where", [cond], np.where(cond, 1, 2).astype(i32), a_scalar=1, b_scalar=2)
c.add("where_scalars_bool", "where", [cond], np.where(cond, True, False), a_scalar=True, b_scalar=False)  # as torch: bool
c.add("where_bool_tensor_bool_scalar", "where", [cond, np.array([True, False, True, False])],
      np.where(cond, np.array([True, False, True, False]), False), b_scalar=False)
c.add("where_scalars_mixed", "where", [cond], np.where(cond, 1, 2.5).astype(f32), a_scalar=1, b_scalar=2.5)
c.add("where_promote_i32_f32", "where", [cond, np.array([[1], [2], [3]], i32), b],
      np.where(cond, np.array([[1], [2], [3]], f32), b))
c.add("where_i32", "where", [np.array([True, False, True, False]), ia[0], ib], np.where([True, False, True, False], ia[0], ib))
c.add("where_transposed", "where", [cond, tr(b)], np.where(cond, b, f32(0)), tr=[1], b_scalar=0.0)
c.add("where_size0", "where", [np.zeros((0, 1), bool), np.zeros((0, 3), f32), randn(3)], np.zeros((0, 3), f32))

x = randn(3, 4)
mask = r.random((3, 4)) < 0.4
c.add("maskedFill_basic", "maskedFill", [x, mask], np.where(mask, f32(-9), x), value=-9.0)
c.add("maskedFill_bcast_mask", "maskedFill", [x, np.array([True, False, False, True])], np.where([True, False, False, True], f32(-inf), x),
      value=-inf)
c.add("maskedFill_i32", "maskedFill", [ia, np.array([[True], [False]])], np.where([[True], [False]], 42, ia).astype(i32), value=42)
c.add("maskedFill_i32_fractional", "maskedFill", [ia, np.array([[True], [False]])], np.where([[True], [False]], 2, ia).astype(i32),
      value=2.75)  # the value takes the tensor's dtype: 2.75 truncates to 2 (as torch)
c.add("maskedFill_nan", "maskedFill", [x, mask], np.where(mask, f32(nan), x), value=nan)
c.add("maskedFill_transposed", "maskedFill", [tr(x), mask], np.where(mask, f32(1), x), tr=[0], value=1.0)

# ------------------------------------------------------------------ bitwise

bi = np.array([[0, -1, 5, 12], [-128, 127, 0x55, -0x56]], i32)
bj = np.array([3, 0x0F, -2, 10], i32)
bu, bv = np.array([0xF0, 0x0F, 0xAA, 255], np.uint8), np.array([0x3C, 0xFF, 0x55, 0], np.uint8)
bb1, bb2 = np.array([True, True, False, False]), np.array([True, False, True, False])
for op, fn in [("bitwiseAnd", np.bitwise_and), ("bitwiseOr", np.bitwise_or), ("bitwiseXor", np.bitwise_xor)]:
    c.add(f"{op}_i32", op, [bi, bj], fn(bi, bj))
    c.add(f"{op}_u8", op, [bu, bv], fn(bu, bv))
    c.add(f"{op}_bool", op, [bb1, bb2], fn(bb1, bb2))
    c.add(f"{op}_i32_scalar", op, [bi], fn(bi, 6), scalar=6)
    c.add(f"{op}_i8_u8", op, [np.array([-1, 5], np.int8), np.array([0x81, 3], np.uint8)],
          fn(np.array([-1, 5], np.int16), np.array([0x81, 3], np.int16)))
    c.add(f"{op}_transposed", op, [tr(bi), bj[:2].reshape(2, 1).copy()], fn(bi, bj[:2].reshape(2, 1)), tr=[0])
c.add("bitwiseNot_i32", "bitwiseNot", [bi], np.bitwise_not(bi))
c.add("bitwiseNot_u8", "bitwiseNot", [bu], np.bitwise_not(bu))
c.add("bitwiseNot_i8", "bitwiseNot", [np.array([0, -1, 127, -128], np.int8)], np.bitwise_not(np.array([0, -1, 127, -128], np.int8)))
c.add("bitwiseNot_bool", "bitwiseNot", [bb1], ~bb1)
c.add("bitwiseNot_i64", "bitwiseNot", [np.array([0, 1 << 40], np.int64)], np.bitwise_not(np.array([0, 1 << 40], np.int64)))


def shift(vals, bits, dtype, left):
    """Shifts with NumPy's defined semantics: a shift by the bit width or more gives 0 (-1 for negative >>)."""
    w = np.dtype(dtype).itemsize * 8
    out = []
    for v, s in zip(np.broadcast_to(vals, np.broadcast(vals, bits).shape).ravel(),
                    np.broadcast_to(bits, np.broadcast(vals, bits).shape).ravel()):
        v, s = int(v), int(s)
        if left:
            res = (v << s) if s < w else 0
        else:
            res = (v >> s) if s < w else (-1 if v < 0 else 0)
        out.append(res % (1 << w))
    arr = np.array(out, np.uint64).astype(np.dtype(dtype).str.replace("i", "u"))
    return arr.view(dtype).reshape(np.broadcast(vals, bits).shape)


s8 = np.array([1, -1, 3, -128, 64, 1, -7], np.int8)
k8 = np.array([7, 1, 2, 3, 1, 8, 9], np.int8)
c.add("shl_i8", "shl", [s8, k8], shift(s8, k8, np.int8, True))
c.add("shr_i8", "shr", [s8, k8], shift(s8, k8, np.int8, False))
u8s = np.array([1, 255, 200, 128, 3, 255], np.uint8)
u8k = np.array([7, 1, 3, 7, 8, 9], np.uint8)
c.add("shl_u8", "shl", [u8s, u8k], shift(u8s, u8k, np.uint8, True))
c.add("shr_u8", "shr", [u8s, u8k], shift(u8s, u8k, np.uint8, False))  # logical for unsigned
s32 = np.array([[1, -1, 12345, -2**31], [7, -100, 2**30, 5]], i32)
c.add("shl_i32_scalar", "shl", [s32], shift(s32, np.array(3), i32, True), scalar=3)
c.add("shr_i32_scalar", "shr", [s32], shift(s32, np.array(3), i32, False), scalar=3)
k32 = np.array([0, 31, 32, 4], i32)
c.add("shl_i32_bcast", "shl", [s32, k32], shift(s32, k32, i32, True))
c.add("shr_i32_bcast", "shr", [s32, k32], shift(s32, k32, i32, False))
u32s = np.array([0x80000000, 0xFFFFFFFF, 6], np.uint32)
c.add("shr_u32", "shr", [u32s], shift(u32s, np.array(4), np.uint32, False), scalar=4)
c.add("shl_u32", "shl", [u32s], shift(u32s, np.array(1), np.uint32, True), scalar=1)
c.add("shr_transposed", "shr", [tr(s32)], shift(s32, np.array(2), i32, False), tr=[0], scalar=2)

# ------------------------------------------------------------------ broadcastTo

x = randn(3, 1)
c.add("broadcastTo_new_axes", "broadcastTo", [x], np.broadcast_to(x, (2, 3, 4)).copy(), shape=[2, 3, 4])
c.add("broadcastTo_same", "broadcastTo", [x], x, shape=[3, 1])
c.add("broadcastTo_0d", "broadcastTo", [np.array(2.5, f32)], np.full((2, 2), 2.5, f32), shape=[2, 2])
c.add("broadcastTo_size0", "broadcastTo", [np.zeros((0, 1), f32)], np.zeros((0, 3), f32), shape=[0, 3])
c.add("broadcastTo_i32", "broadcastTo", [ib], np.broadcast_to(ib, (3, 4)).copy(), shape=[3, 4])
y = randn(1, 3)
c.add("broadcastTo_transposed", "broadcastTo", [tr(y)], np.broadcast_to(y, (2, 4, 3)).copy(), tr=[0], shape=[2, 4, 3])

c.write()

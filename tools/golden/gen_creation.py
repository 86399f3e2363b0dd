"""Golden cases for tensor creation and dtype conversion: full, zeros, ones, scalar, arange, linspace,
eye, of (Java arrays of several types), fromSegment, fullLike/zerosLike/onesLike, cast and bitcast.

Expected values come from NumPy. Conversions have exactly one right answer, so cast and bitcast cases
compare exactly (rtol = atol = 0) instead of with the loose f16/bf16 defaults, which would hide a
rounding-mode error.
"""
import numpy as np

from golden import Cases, array, rng

c = Cases("creation")
np.seterr(over="ignore", invalid="ignore")  # overflow to inf in casts is part of what is tested
r = rng(5)
f16, f32, f64 = np.float16, np.float32, np.float64
i8, u8, i16, i32, u32, i64, u64 = np.int8, np.uint8, np.int16, np.int32, np.uint32, np.int64, np.uint64
nan, inf = np.nan, np.inf
EXACT = dict(rtol=0.0, atol=0.0)


def bf16(x):
    """float32 values rounded to bfloat16 (round to nearest, ties to even; NaN stays NaN), as float32."""
    x = np.asarray(x, f32)
    b = x.view(np.uint32).astype(np.uint64)
    rounded = ((b + 0x7FFF + ((b >> 16) & 1)) >> 16) & 0xFFFF
    out = (rounded << 16).astype(np.uint32).view(f32)
    return np.where(np.isnan(x), f32(nan), out).astype(f32)


def tr(x):
    """x stored with its last two axes swapped; the Java side transposes it back into a view."""
    return np.ascontiguousarray(np.swapaxes(x, -1, -2))


# ------------------------------------------------------------------ full, zeros, ones, scalar

c.add("full_f32", "full", [], np.full((2, 3), 2.5, f32), value=2.5, dtype="f32", shape=[2, 3])
c.add("full_i32", "full", [], np.full((3,), 7, i32), value=7, dtype="i32", shape=[3])
c.add("full_i32_fractional", "full", [], np.full((2,), 2, i32), value=2.7, dtype="i32", shape=[2])  # truncates, as torch
c.add("full_i32_negative_fractional", "full", [], np.full((2,), -2, i32), value=-2.7, dtype="i32", shape=[2])
c.add("full_u8_wraps", "full", [], np.full((2,), 255, u8), value=-1, dtype="u8", shape=[2])
c.add("full_bool", "full", [], np.full((2, 2), True), value=1, dtype="bool", shape=[2, 2])
c.add("full_nan", "full", [], np.full((2,), nan, f32), value=nan, dtype="f32", shape=[2])
c.add("full_f16_overflow", "full", [], np.full((2,), inf, f16), value=70000.0, dtype="f16", shape=[2])
c.add("full_f16_rounds", "full", [], np.full((1,), 0.1, f16), **EXACT, value=0.1, dtype="f16", shape=[1])
c.add("full_bf16_rounds", "full", [], array(bf16(np.full((3,), 3.14159265, f32)), "bf16"), **EXACT,
      value=3.14159265, dtype="bf16", shape=[3])
c.add("full_f64", "full", [], np.full((2,), 0.1, f64), value=0.1, dtype="f64", shape=[2])
c.add("full_i64_big", "full", [], np.full((1,), 1 << 40, i64), value=1 << 40, dtype="i64", shape=[1])
c.add("full_0d", "full", [], np.array(-3.0, f32), value=-3.0, dtype="f32", shape=[])
c.add("full_size0", "full", [], np.zeros((0, 3), f32), value=1.0, dtype="f32", shape=[0, 3])

c.add("zeros_f32", "zeros", [], np.zeros((2, 3), f32), shape=[2, 3])
c.add("zeros_i64", "zeros", [], np.zeros((4,), i64), shape=[4], dtype="i64")
c.add("zeros_bool", "zeros", [], np.zeros((2, 1), bool), shape=[2, 1], dtype="bool")
c.add("zeros_size0", "zeros", [], np.zeros((2, 0), f32), shape=[2, 0])
c.add("zeros_0d", "zeros", [], np.zeros((), f32), shape=[])
c.add("ones_f32", "ones", [], np.ones((3, 2), f32), shape=[3, 2])
c.add("ones_u8", "ones", [], np.ones((3,), u8), shape=[3], dtype="u8")
c.add("ones_f16", "ones", [], np.ones((2, 2), f16), shape=[2, 2], dtype="f16")
c.add("ones_bool", "ones", [], np.ones((3,), bool), shape=[3], dtype="bool")
c.add("ones_0d", "ones", [], np.ones((), f32), shape=[])

c.add("scalar_f32", "scalar", [], np.array(0.1, f32), value=0.1)
c.add("scalar_i64", "scalar", [], np.array(-7, i64), value=-7, dtype="i64")
c.add("scalar_f16", "scalar", [], np.array(1.5, f16), value=1.5, dtype="f16")

# ------------------------------------------------------------------ ranges and identity

c.add("arange_end", "arange", [], np.arange(5, dtype=i32), end=5)
c.add("arange_empty", "arange", [], np.arange(0, dtype=i32), end=0)
c.add("arange_step", "arange", [], np.arange(2, 11, 3, dtype=i32), start=2, end=11, step=3)
c.add("arange_negative_step", "arange", [], np.arange(10, 0, -3, dtype=i32), start=10, end=0, step=-3)
c.add("arange_negative_start", "arange", [], np.arange(-3, 3, 2, dtype=i32), start=-3, end=3, step=2)
c.add("arange_start_eq_end", "arange", [], np.arange(5, 5, 1, dtype=i32), start=5, end=5, step=1)
c.add("arange_wrong_direction", "arange", [], np.arange(5, 0, 1, dtype=i32), start=5, end=0, step=1)

for name, (s, e, st) in {"tenths": (0.0, 1.0, 0.1), "negative_step": (1.0, -1.0, -0.25), "offset": (0.5, 3.2, 0.7),
                         "empty": (1.0, 1.0, 0.5), "one": (0.0, 0.5, 1.0)}.items():
    c.add(f"arange_float_{name}", "arange_float", [], np.arange(s, e, st, dtype=f64).astype(f32), start=s, end=e, step=st)

for name, (s, e, n) in {"unit": (0.0, 1.0, 5), "single": (-1.0, 1.0, 1), "empty": (2.0, 3.0, 0),
                        "descending": (1.0, -1.0, 4), "sevenths": (0.0, 10.0, 7), "two": (3.0, 5.0, 2)}.items():
    c.add(f"linspace_{name}", "linspace", [], np.linspace(s, e, n, dtype=f64).astype(f32), start=s, end=e, steps=n)

c.add("eye_square", "eye", [], np.eye(3, dtype=f32), n=3)
c.add("eye_wide", "eye", [], np.eye(2, 4, dtype=f32), n=2, m=4)
c.add("eye_tall", "eye", [], np.eye(4, 2, dtype=f32), n=4, m=2)
c.add("eye_one", "eye", [], np.eye(1, dtype=f32), n=1)
c.add("eye_empty", "eye", [], np.eye(0, 3, dtype=f32), n=0, m=3)

# ------------------------------------------------------------------ of (Java arrays)

x = r.standard_normal((2, 3)).astype(f32)
c.add("of_float", "of", [x], x, kind="float")
c.add("of_float_1d", "of", [x.ravel()], x.ravel(), kind="float")
xd = np.array([[0.1, -1e300], [np.pi, nan]], f64)
c.add("of_double", "of", [xd], xd, kind="double")
xi = np.array([[1, -2, 2**31 - 1], [-2**31, 0, 5]], i32)
c.add("of_int", "of", [xi], xi, kind="int")
xl = np.array([1 << 62, -(1 << 62), 3], i64)
c.add("of_long", "of", [xl], xl, kind="long")
xb = np.array([[True, False], [False, True], [True, True]])
c.add("of_boolean", "of", [xb], xb, kind="boolean")
c.add("of_float_size0", "of", [np.zeros((0, 2), f32)], np.zeros((0, 2), f32), kind="float")

vd = np.array([300.7, -1.5, 127.9, -129.2, 0.0, -0.0], f64)
for dt in [i8, u8, i32, i64]:
    c.add(f"of_dtype_double_{np.dtype(dt).name}", "of", [vd], np.trunc(vd).astype(i64).astype(dt), kind="dtype_double",
          dtype=array(np.zeros(0, dt))["dtype"])  # integers truncate toward zero, then wrap
c.add("of_dtype_double_bool", "of", [np.array([0.0, -0.0, 0.5, nan, -2.0], f64)], np.array([False, False, True, True, True]),
      kind="dtype_double", dtype="bool")
vh = np.array([0.1, 1e-7, 65504, 70000, -2.5, nan, -inf], f64)
c.add("of_dtype_double_f16", "of", [vh], vh.astype(f16), **EXACT, kind="dtype_double", dtype="f16")
c.add("of_dtype_double_bf16", "of", [vh], array(bf16(vh.astype(f32)), "bf16"), **EXACT, kind="dtype_double", dtype="bf16")
c.add("of_dtype_double_f32", "of", [vd], vd.astype(f32), **EXACT, kind="dtype_double", dtype="f32")

vl = np.array([300, -1, 16777217, -40000, 0, 1 << 40], i64)
for dt in [u8, i8, i16, u32, u64]:
    c.add(f"of_dtype_long_{np.dtype(dt).name}", "of", [vl], vl.astype(dt), kind="dtype_long",
          dtype=array(np.zeros(0, dt))["dtype"])  # integers wrap
c.add("of_dtype_long_f32", "of", [vl], vl.astype(f32), **EXACT, kind="dtype_long", dtype="f32")
c.add("of_dtype_long_f64", "of", [vl], vl.astype(f64), **EXACT, kind="dtype_long", dtype="f64")
c.add("of_dtype_long_bool", "of", [vl], vl != 0, kind="dtype_long", dtype="bool")
c.add("of_dtype_long_f16", "of", [vl[:3].reshape(3, 1)], vl[:3].reshape(3, 1).astype(f16), **EXACT, kind="dtype_long", dtype="f16")

# ------------------------------------------------------------------ fromSegment (native byte order)

c.add("fromSegment_same", "fromSegment", [x], x.reshape(3, 2), dtype="f32", shape=[3, 2])
c.add("fromSegment_prefix", "fromSegment", [x], x.ravel()[:4].reshape(2, 2), dtype="f32", shape=[2, 2])
c.add("fromSegment_reinterpret_f32_i32", "fromSegment", [x], x.ravel().view(i32), dtype="i32", shape=[6])
c.add("fromSegment_i64_as_i32", "fromSegment", [xl], xl.view(i32).reshape(3, 2), dtype="i32", shape=[3, 2])
c.add("fromSegment_u8", "fromSegment", [np.arange(10, dtype=u8)], np.arange(10, dtype=u8)[:6].reshape(2, 3), dtype="u8", shape=[2, 3])
c.add("fromSegment_f16", "fromSegment", [np.array([1.5, -2, 0.1], f16)], np.array([1.5, -2, 0.1], f16), dtype="f16", shape=[3])
c.add("fromSegment_empty", "fromSegment", [x], np.zeros((0,), f32), dtype="f32", shape=[0])
c.add("fromSegment_0d", "fromSegment", [x], np.array(x.ravel()[0]), dtype="f32", shape=[])

# ------------------------------------------------------------------ fullLike, zerosLike, onesLike

xt = r.standard_normal((3, 2)).astype(f32)
c.add("fullLike_f32", "fullLike", [x], np.full_like(x, 1.5), value=1.5)
c.add("fullLike_i32_fractional", "fullLike", [xi], np.full_like(xi, 2), value=2.5)  # the value takes the tensor's dtype
c.add("fullLike_bool", "fullLike", [xb], np.full_like(xb, True), value=1)
c.add("fullLike_i8", "fullLike", [np.zeros(3, i8)], np.full(3, -3, i8), value=-3)
c.add("fullLike_f16_inf", "fullLike", [np.zeros(2, f16)], np.full(2, -inf, f16), value=-inf)
c.add("fullLike_transposed", "fullLike", [tr(xt)], np.full((3, 2), 4.0, f32), tr=[0], value=4.0)
c.add("fullLike_size0", "fullLike", [np.zeros((0, 4), f32)], np.zeros((0, 4), f32), value=9.0)
c.add("zerosLike_f32", "zerosLike", [x], np.zeros_like(x))
c.add("zerosLike_i64", "zerosLike", [xl], np.zeros_like(xl))
c.add("zerosLike_bool", "zerosLike", [xb], np.zeros_like(xb))
c.add("zerosLike_transposed", "zerosLike", [tr(xt)], np.zeros((3, 2), f32), tr=[0])
c.add("zerosLike_0d", "zerosLike", [np.array(5, i32)], np.array(0, i32))
c.add("onesLike_f16", "onesLike", [np.zeros((2, 2), f16)], np.ones((2, 2), f16))
c.add("onesLike_u8", "onesLike", [np.arange(4, dtype=u8)], np.ones(4, u8))
c.add("onesLike_bool", "onesLike", [xb], np.ones_like(xb))
c.add("onesLike_transposed", "onesLike", [tr(xt)], np.ones((3, 2), f32), tr=[0])

# ------------------------------------------------------------------ cast


def cast(name, x, to, expected, **kw):
    exact = EXACT if np.asarray(expected).dtype.kind == "f" or isinstance(expected, dict) else {}
    c.add(f"cast_{name}", "cast", [x], expected, **exact, dtype=to, **kw)


fv = np.array([-2.7, -0.5, -0.0, 0.0, 0.5, 1.0, 2.7, 100.9, -100.9], f32)
cast("f32_i32_truncates", fv, "i32", np.trunc(fv).astype(i32))
cast("f32_i64", fv * 1e6, "i64", np.trunc((fv * 1e6).astype(f64)).astype(i64))
cast("f32_i8", fv, "i8", np.trunc(fv).astype(i8))
cast("f32_u8", np.abs(fv) * 2, "u8", np.trunc(np.abs(fv) * 2).astype(u8))
cast("f32_bool", np.array([nan, 0.0, -0.0, 0.5, -inf, 1e-30], f32), "bool", np.array([True, False, False, True, True, True]))
cast("f16_i32", np.array([1.5, -1.5, 65504, -0.0], f16), "i32", np.array([1, -1, 65504, 0], i32))
iv = np.array([-129, -128, -1, 0, 1, 127, 128, 255, 256, 70000], i32)
cast("i32_bool", iv, "bool", iv != 0)
cast("i32_i8_wraps", iv, "i8", iv.astype(i8))
cast("i32_u8_wraps", iv, "u8", iv.astype(u8))
cast("i32_u32", iv, "u32", iv.astype(u32))
cast("i32_i64", iv, "i64", iv.astype(i64))
cast("i32_f32", iv, "f32", iv.astype(f32))
cast("i32_f16", iv, "f16", iv.astype(f16))
cast("u8_i8", np.array([0, 127, 128, 200, 255], u8), "i8", np.array([0, 127, 128, 200, 255], u8).astype(i8))
cast("i8_u8", np.array([0, 127, -128, -56, -1], i8), "u8", np.array([0, 127, -128, -56, -1], i8).astype(u8))
cast("i8_i32", np.array([0, 127, -128, -1], i8), "i32", np.array([0, 127, -128, -1], i32))
cast("u8_f32", np.array([0, 255, 128], u8), "f32", np.array([0, 255, 128], f32))
lv = np.array([16777217, -16777217, (1 << 53) + 1, 1 << 62, -(1 << 40) - 1, 3], i64)
cast("i64_f32_rounds", lv, "f32", lv.astype(f32))
cast("i64_f64_rounds", lv, "f64", lv.astype(f64))
cast("i64_i32_wraps", lv, "i32", lv.astype(i32))
cast("u32_f32", np.array([0xFFFFFFFF, 0x80000001, 7], u32), "f32", np.array([0xFFFFFFFF, 0x80000001, 7], u32).astype(f32))
cast("u32_i32", np.array([0xFFFFFFFF, 0x80000000, 7], u32), "i32", np.array([0xFFFFFFFF, 0x80000000, 7], u32).astype(i32))
uv = np.array([0xFFFFFFFFFFFFFFFF, 1 << 63, (1 << 63) + (1 << 40), 5], u64)
cast("u64_f32", uv, "f32", uv.astype(f32))
cast("u64_f64", uv, "f64", uv.astype(f64))
bv = np.array([True, False, True])
cast("bool_f32", bv, "f32", bv.astype(f32))
cast("bool_i32", bv, "i32", bv.astype(i32))
cast("bool_u8", bv, "u8", bv.astype(u8))
hv = np.array([0.1, 1 / 3, 1e-7, 6e-8, 2.9e-8, 65504, 65519, 65520, 70000, -70000, nan, inf, -inf, -0.0, 2049, 2051], f32)
cast("f32_f16_rounds", hv, "f16", hv.astype(f16))  # NumPy rounds to nearest even, with subnormals and overflow to inf
cast("f32_bf16_rounds", np.array([1.00390625, 1.01171875, 1.0078125 + 2**-10, 3.14159265, -2.71828, 3.4e38, 1e-40, nan, inf, -0.0,
                                  65537, 256.5, 257.5], f32), "bf16",
     array(bf16(np.array([1.00390625, 1.01171875, 1.0078125 + 2**-10, 3.14159265, -2.71828, 3.4e38, 1e-40, nan, inf, -0.0,
                          65537, 256.5, 257.5], f32)), "bf16"))
cast("f16_f32", np.array([0.1, 65504, 6e-8, nan, -inf], f16), "f32", np.array([0.1, 65504, 6e-8, nan, -inf], f16).astype(f32))
bfv = bf16(np.array([0.1, 3.0e38, -7.5, 1e-30], f32))
cast("bf16_f32", array(bfv, "bf16"), "f32", bfv)
cast("bf16_f16", array(bfv, "bf16"), "f16", bfv.astype(f16))
cast("f16_bf16", np.array([0.1, 1000.5, -3.0], f16), "bf16", array(bf16(np.array([0.1, 1000.5, -3.0], f16).astype(f32)), "bf16"))
dv = np.array([0.1, 1 / 3, 1e-50, 1e300, -1e300, nan, 16777217.0, 1.0000000596046448], f64)
cast("f64_f32_rounds", dv, "f32", dv.astype(f32))
cast("f32_f64", fv, "f64", fv.astype(f64))
cast("same_dtype", fv, "f32", fv)
xt2 = r.uniform(-10, 10, (2, 3)).astype(f32)
cast("transposed", tr(xt2), "i32", np.trunc(xt2).astype(i32), tr=[0])
cast("size0", np.zeros((0, 2), f32), "i64", np.zeros((0, 2), i64))

# ------------------------------------------------------------------ bitcast

bf = np.array([1.0, -0.0, nan, inf, -2.5, 1e-45], f32)
c.add("bitcast_f32_i32", "bitcast", [bf], bf.view(i32), dtype="i32")
bi = np.array([0x3F800000, -2147483648, 0x7F800000, 0x40490FDB, 1], i32)
c.add("bitcast_i32_f32", "bitcast", [bi], bi.view(f32), **EXACT, dtype="f32")
hf = np.array([1.0, -2.0, 65504, 6e-8, -0.0, inf], f16)
c.add("bitcast_f16_i16", "bitcast", [hf], hf.view(i16), dtype="i16")
hi = np.array([0x3C00, -0x4000, 0x7BFF, 1, -32768, 0x7C00], i16)
c.add("bitcast_i16_f16", "bitcast", [hi], hi.view(f16), **EXACT, dtype="f16")
ui = np.array([0, 0xFFFFFFFF, 0x80000000, 12345], u32)
c.add("bitcast_u32_i32", "bitcast", [ui], ui.view(i32), dtype="i32")
si = np.array([0, -1, -2147483648, 12345], i32)
c.add("bitcast_i32_u32", "bitcast", [si], si.view(u32), dtype="u32")
c.add("bitcast_u8_i8", "bitcast", [np.array([0, 128, 255], u8)], np.array([0, -128, -1], i8), dtype="i8")
dd = np.array([1.0, -0.0, 0.1], f64)
c.add("bitcast_f64_i64", "bitcast", [dd], dd.view(i64), dtype="i64")
bbf = bf16(np.array([1.0, -3.5, 0.1], f32))
c.add("bitcast_bf16_i16", "bitcast", [array(bbf, "bf16")], (bbf.view(np.uint32) >> 16).astype(np.uint16).view(i16), dtype="i16")
c.add("bitcast_same", "bitcast", [bf], bf, dtype="f32")
c.add("bitcast_transposed", "bitcast", [tr(bi[:4].reshape(2, 2))], bi[:4].reshape(2, 2).view(f32), **EXACT, tr=[0], dtype="f32")

c.write()

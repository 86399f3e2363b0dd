"""Golden cases for reductions: sum, prod, max, min, mean, var, std, any, all, logsumexp, argmax,
argmin, cumsum and cumprod.

Expected values come from NumPy, float sums in float64 rounded once to the output dtype. Result dtypes
follow Kiln's documented rules (those of torch): integer and bool sums and products give i64 (u64 for
unsigned inputs), means of integers give f32, f16 sums accumulate in f32 and return f16, argmax/argmin
give i64. Args: "axes" (absent: the no-argument all-axes form), "keepdim"; non-contiguous inputs as in
CoreGolden.java.
"""
import numpy as np

from golden import Cases, rng

c = Cases("reductions")
r = rng(31)
f16, f32, f64 = np.float16, np.float32, np.float64
i32, i64, u8, u64 = np.int32, np.int64, np.uint8, np.uint64
nan, inf = np.nan, np.inf
np.seterr(all="ignore")  # NaN results of empty means and single-element variances are expected

X = r.standard_normal((2, 3, 4)).astype(f32)
XI = r.integers(-50, 50, (2, 3, 4)).astype(i32)
NANS = np.array([[1.0, nan, 3.0], [inf, -inf, 2.0], [-0.0, 0.0, -5.0], [inf, 1.0, 2.0]], f32)


def tr(x):
    """x stored with its last two axes swapped; the Java side transposes it back into a view."""
    return np.ascontiguousarray(np.swapaxes(x, -1, -2))


def ax(axes):
    return None if axes == [] else tuple(axes)


AXES = [([], False), ([0], False), ([1], True), ([-1], False), ([0, 2], False), ([-3, -1], True), ([2, 0, 1], False),
        ([], True)]


def reduce_cases(op, fn, x, tag, out=None, **kw):
    """The op over several axis choices of x; fn(x, axis, keepdims) gives the float64/int expectation."""
    for axes, keep in AXES:
        if axes and max(a if a >= 0 else a + x.ndim for a in axes) >= x.ndim:
            continue
        exp = np.asarray(fn(x, ax(axes), keep))
        exp = exp.astype(out or x.dtype)
        name = f"{op}_{tag}_{'all' if not axes else '_'.join(str(a) for a in axes)}{'_keep' if keep else ''}"
        c.add(name, op, [x], exp, axes=axes, keepdim=keep, **kw)


def f64sum(x, axis, keep):
    return np.sum(x.astype(f64), axis=axis, keepdims=keep)


# ------------------------------------------------------------------ sum and prod

reduce_cases("sum", f64sum, X, "f32")
reduce_cases("sum", lambda x, a, k: np.sum(x, axis=a, keepdims=k, dtype=i64), XI, "i32", out=i64)  # like torch
c.add("sum_noargs", "sum", [X], np.array(np.sum(X.astype(f64)), f32))
c.add("sum_special", "sum", [NANS], np.sum(NANS.astype(f64), axis=1).astype(f32), axes=[1], keepdim=False)
c.add("sum_transposed", "sum", [tr(X)], np.sum(X.astype(f64), axis=1).astype(f32), tr=[0], axes=[1], keepdim=False)
c.add("sum_size0_axis", "sum", [np.zeros((2, 0), f32)], np.zeros(2, f32), axes=[1], keepdim=False)
c.add("sum_size0_all", "sum", [np.zeros((0,), f32)], np.array(0, f32), axes=[], keepdim=False)
c.add("sum_size0_other_axis", "sum", [np.zeros((0, 3), f32)], np.zeros((0,), f32), axes=[1], keepdim=False)
c.add("sum_size1_axis", "sum", [X[:, :1, :].copy()], X[:, 0, :], axes=[1], keepdim=False)
c.add("sum_0d", "sum", [np.array(2.5, f32)], np.array(2.5, f32), axes=[], keepdim=False)
c.add("sum_u8", "sum", [np.array([200, 100, 255], u8)], np.array(555, u64), axes=[0], keepdim=False)  # unsigned sums in u64
c.add("sum_bool", "sum", [np.array([[True, False, True], [True, True, True]])], np.array([2, 3], i64), axes=[1], keepdim=False)
c.add("sum_i32_overflows_i32", "sum", [np.array([2**31 - 1, 2**31 - 1], i32)], np.array(2**32 - 2, i64), axes=[0], keepdim=False)
h = (r.standard_normal((2, 8)) * 100).astype(f16)
c.add("sum_f16", "sum", [h], np.sum(h.astype(f32), axis=1).astype(f16), axes=[1], keepdim=False)  # f32 accumulation
c.add("sum_f16_large", "sum", [np.full(40, 2000, f16)], np.array(80000, f32).astype(f16), axes=[0], keepdim=False)  # inf in f16

P = r.uniform(0.5, 1.5, (2, 3, 4)).astype(f32)
reduce_cases("prod", lambda x, a, k: np.prod(x.astype(f64), axis=a, keepdims=k), P, "f32")
reduce_cases("prod", lambda x, a, k: np.prod(x, axis=a, keepdims=k, dtype=i64),
             r.integers(-4, 5, (2, 3, 4)).astype(i32), "i32", out=i64)
c.add("prod_noargs", "prod", [P[0]], np.array(np.prod(P[0].astype(f64)), f32))
c.add("prod_special", "prod", [NANS], np.prod(NANS.astype(f64), axis=1).astype(f32), axes=[1], keepdim=False)
c.add("prod_size0_axis", "prod", [np.zeros((2, 0), f32)], np.ones(2, f32), axes=[1], keepdim=False)
c.add("prod_transposed", "prod", [tr(P)], np.prod(P.astype(f64), axis=2).astype(f32), tr=[0], axes=[2], keepdim=False)

# ------------------------------------------------------------------ max and min

for op, fn in [("max", np.max), ("min", np.min)]:
    reduce_cases(op, lambda x, a, k: fn(x, axis=a, keepdims=k), X, "f32")
    reduce_cases(op, lambda x, a, k: fn(x, axis=a, keepdims=k), XI, "i32")
    c.add(f"{op}_noargs", op, [X], np.array(fn(X), f32))
    c.add(f"{op}_special", op, [NANS], fn(NANS, axis=1), axes=[1], keepdim=False)  # NaN propagates
    c.add(f"{op}_special_axis0", op, [NANS], fn(NANS, axis=0), axes=[0], keepdim=False)
    c.add(f"{op}_u8", op, [np.array([[3, 250], [200, 7]], u8)], fn(np.array([[3, 250], [200, 7]], u8), axis=0), axes=[0], keepdim=False)
    c.add(f"{op}_bool", op, [np.array([[True, False], [False, False]])], fn(np.array([[True, False], [False, False]]), axis=1),
          axes=[1], keepdim=False)
    c.add(f"{op}_transposed", op, [tr(X)], fn(X, axis=1), tr=[0], axes=[1], keepdim=False)
    c.add(f"{op}_size0_other_axis", op, [np.zeros((0, 3), f32)], np.zeros((0,), f32), axes=[1], keepdim=False)
    c.add(f"{op}_f16", op, [h], fn(h, axis=1), axes=[1], keepdim=False)

# ------------------------------------------------------------------ mean, var, std

reduce_cases("mean", lambda x, a, k: np.mean(x.astype(f64), axis=a, keepdims=k), X, "f32")
reduce_cases("mean", lambda x, a, k: np.mean(x.astype(f64), axis=a, keepdims=k), XI, "i32", out=f32)  # integers give f32
c.add("mean_special", "mean", [NANS], np.mean(NANS.astype(f64), axis=1).astype(f32), axes=[1], keepdim=False)
c.add("mean_size0", "mean", [np.zeros((2, 0), f32)], np.full(2, nan, f32), axes=[1], keepdim=False)  # 0 / 0
c.add("mean_transposed", "mean", [tr(X)], np.mean(X.astype(f64), axis=2, keepdims=True).astype(f32), tr=[0], axes=[2],
      keepdim=True)
c.add("mean_noargs", "mean", [X], np.array(np.mean(X.astype(f64)), f32))
c.add("mean_f16", "mean", [h], np.mean(h.astype(f64), axis=1).astype(f16), axes=[1], keepdim=False)

V = (r.standard_normal((2, 3, 4)) * 3 + 5).astype(f32)
for op, fn in [("var", np.var), ("std", np.std)]:
    for corr in [0, 1]:
        reduce_cases(op, lambda x, a, k: fn(x.astype(f64), axis=a, keepdims=k, ddof=corr), V, f"f32_c{corr}", correction=corr)
    c.add(f"{op}_default", op, [V], fn(V.astype(f64), axis=(1,), ddof=1).astype(f32), axes=[1])  # the int... form: correction 1
    c.add(f"{op}_default_all", op, [V], np.array(fn(V.astype(f64), ddof=1), f32))
    c.add(f"{op}_i32", op, [XI], fn(XI.astype(f64), axis=2, ddof=1).astype(f32), axes=[2], keepdim=False, correction=1)
    c.add(f"{op}_single_element_c1", op, [V[:, :1, :].copy()], np.full((2, 4), nan, f32), axes=[1], keepdim=False,
          correction=1)  # N - 1 = 0: NaN, as torch
    c.add(f"{op}_correction_half", op, [V], fn(V.astype(f64), axis=2, ddof=0.5).astype(f32), axes=[2], keepdim=False, correction=0.5)
    c.add(f"{op}_transposed", op, [tr(V)], fn(V.astype(f64), axis=1, ddof=1).astype(f32), tr=[0], axes=[1], keepdim=False,
          correction=1)
    c.add(f"{op}_special", op, [NANS], fn(NANS.astype(f64), axis=1, ddof=1).astype(f32), axes=[1], keepdim=False, correction=1)

# ------------------------------------------------------------------ any and all

B = r.random((2, 3, 4)) < 0.3
B[0, 0, :] = False
B[1, 2, :] = True
for op, fn in [("any", np.any), ("all", np.all)]:
    reduce_cases(op, lambda x, a, k: fn(x, axis=a, keepdims=k), B, "bool")
    FZ = np.array([[0.0, -0.0, nan], [0.0, 0.0, 0.0], [1.0, 2.0, -inf]], f32)
    c.add(f"{op}_float", op, [FZ], fn(FZ != 0, axis=1), axes=[1], keepdim=False)  # NaN counts as true
    c.add(f"{op}_i32", op, [XI], fn(XI != 0, axis=0), axes=[0], keepdim=False)
    c.add(f"{op}_size0", op, [np.zeros((2, 0), bool)], fn(np.zeros((2, 0), bool), axis=1), axes=[1], keepdim=False)
    c.add(f"{op}_noargs", op, [B], np.array(fn(B)))
    c.add(f"{op}_transposed", op, [tr(B)], fn(B, axis=2), tr=[0], axes=[2], keepdim=False)

# ------------------------------------------------------------------ logsumexp

reduce_cases("logsumexp", lambda x, a, k: np.logaddexp.reduce(x.astype(f64), axis=a if a is not None else tuple(range(x.ndim)),
                                                              keepdims=k), X * 5, "f32")
LSE = np.array([[1e4, 1e4, -1e4], [-inf, -inf, -inf], [inf, 1.0, 2.0], [nan, 1.0, 2.0], [-88.0, -100.0, -inf], [-1e30, 1e30, 0.0]],
               f32)
c.add("logsumexp_special", "logsumexp", [LSE], np.logaddexp.reduce(LSE.astype(f64), axis=1).astype(f32), axes=[1], keepdim=False)
c.add("logsumexp_size0", "logsumexp", [np.zeros((2, 0), f32)], np.full(2, -inf, f32), axes=[1], keepdim=False)
c.add("logsumexp_transposed", "logsumexp", [tr(X)], np.logaddexp.reduce(X.astype(f64), axis=1).astype(f32), tr=[0], axes=[1],
      keepdim=False)
c.add("logsumexp_noargs", "logsumexp", [X], np.array(np.logaddexp.reduce(X.astype(f64).ravel()), f32))
c.add("logsumexp_i32", "logsumexp", [XI[0]], np.logaddexp.reduce(XI[0].astype(f64), axis=1).astype(f32), axes=[1], keepdim=False)

# ------------------------------------------------------------------ argmax and argmin

T = np.array([[1.0, 3.0, 3.0, -2.0], [5.0, 5.0, 5.0, 5.0], [-1.0, nan, 7.0, nan], [-inf, -inf, 0.0, -inf]], f32)
for op, fn in [("argmax", np.argmax), ("argmin", np.argmin)]:
    for axis in [0, 1, -1, -2]:
        c.add(f"{op}_ties_nan_axis{axis}", op, [T], fn(T, axis=axis).astype(i64), axis=axis, keepdim=False)  # first index wins
    c.add(f"{op}_keepdim", op, [X], fn(X, axis=1, keepdims=True).astype(i64), axis=1, keepdim=True)
    c.add(f"{op}_3d_axis2", op, [X], fn(X, axis=2).astype(i64), axis=2, keepdim=False)
    c.add(f"{op}_flat", op, [X], np.array(fn(X), i64))  # no axis: over the flattened tensor
    c.add(f"{op}_flat_ties", op, [T[1:2].copy()], np.array(fn(T[1:2]), i64))
    c.add(f"{op}_i32", op, [XI], fn(XI, axis=0).astype(i64), axis=0, keepdim=False)
    c.add(f"{op}_u8", op, [np.array([3, 250, 200, 250, 3], u8)], np.array(fn(np.array([3, 250, 200, 250, 3], u8)), i64), axis=0,
          keepdim=False)
    c.add(f"{op}_transposed", op, [tr(X)], fn(X, axis=1).astype(i64), tr=[0], axis=1, keepdim=False)
    c.add(f"{op}_size1", op, [X[:, :1, :].copy()], np.zeros((2, 4), i64), axis=1, keepdim=False)

# ------------------------------------------------------------------ cumsum and cumprod

C = r.standard_normal((3, 4)).astype(f32)
CS = np.array([[1.0, nan, 2.0, 3.0], [inf, 1.0, -inf, 2.0], [0.5, 0.0, 4.0, -0.0]], f32)
for op, fn in [("cumsum", np.cumsum), ("cumprod", np.cumprod)]:
    for axis in [0, 1, -1]:
        c.add(f"{op}_axis{axis}", op, [C], fn(C.astype(f64), axis=axis).astype(f32), axis=axis)
    c.add(f"{op}_3d_axis1", op, [X], fn(X.astype(f64), axis=1).astype(f32), axis=1)
    c.add(f"{op}_special", op, [CS], fn(CS.astype(f64), axis=1).astype(f32), axis=1)
    c.add(f"{op}_i32", op, [XI[0] % 7], fn(XI[0] % 7, axis=1, dtype=i64), axis=1)  # integers accumulate in i64, like torch
    c.add(f"{op}_bool", op, [B[0]], fn(B[0], axis=1, dtype=i64), axis=1)
    c.add(f"{op}_transposed", op, [tr(C)], fn(C.astype(f64), axis=1).astype(f32), tr=[0], axis=1)
    c.add(f"{op}_size0", op, [np.zeros((2, 0), f32)], np.zeros((2, 0), f32), axis=1)
    c.add(f"{op}_1d", op, [C[0].copy()], fn(C[0].astype(f64)).astype(f32), axis=0)

c.write()

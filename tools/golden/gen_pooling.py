"""Golden cases for max, average, power-average and global pooling (torch.nn.functional)."""
import numpy as np
import torch
import torch.nn.functional as F

from golden import Cases, rng

c = Cases("pooling")
r = rng(12)


def randn(*shape):
    return r.standard_normal(shape).astype(np.float32)


def t(a):
    return torch.from_numpy(np.ascontiguousarray(a))


def listed(v):
    return list(v) if isinstance(v, tuple) else v


def pool_case(name, op, out, x, pre=None, **args):
    rec = {k: listed(v) for k, v in args.items()}
    stored = x
    if pre == "transpose":
        stored = np.ascontiguousarray(np.swapaxes(x, -1, -2))
        rec["pre"] = "transpose"
    c.add(name, op, [stored], [out], **rec)


def max_case(name, op, fn, x, kernel, stride=None, padding=0, dilation=1, ceil_mode=False, pre=None, short=False):
    out = fn(t(x), kernel, stride, padding, dilation, ceil_mode).numpy()
    if short:  # the (int... kernel) overload: stride = kernel, no padding
        pool_case(name, op, out, x, pre, kernel=kernel)
    else:
        pool_case(name, op, out, x, pre, kernel=kernel, stride=stride, padding=padding, dilation=dilation, ceilMode=ceil_mode)


def avg_case(name, op, fn, x, kernel, stride=None, padding=0, ceil_mode=False, count_include_pad=True, pre=None, short=False):
    out = fn(t(x), kernel, stride, padding, ceil_mode, count_include_pad).numpy()
    if short:
        pool_case(name, op, out, x, pre, kernel=kernel)
    else:
        pool_case(name, op, out, x, pre, kernel=kernel, stride=stride, padding=padding, ceilMode=ceil_mode, countIncludePad=count_include_pad)


# ---------------------------------------------------------------- max pooling
max_case("max_pool1d_basic", "max_pool1d", F.max_pool1d, randn(2, 3, 10), (2,), short=True)
max_case("max_pool1d_params", "max_pool1d", F.max_pool1d, randn(2, 2, 9), (3,), (2,), (1,), (2,))
max_case("max_pool1d_ceil", "max_pool1d", F.max_pool1d, randn(2, 2, 8), (3,), (2,), (1,), ceil_mode=True)
max_case("max_pool1d_ceil_dropped", "max_pool1d", F.max_pool1d, randn(1, 2, 5), (2,), (2,), (1,), ceil_mode=True)  # last window would start in padding
max_case("max_pool1d_stride_gt_kernel", "max_pool1d", F.max_pool1d, randn(1, 2, 10), (2,), (3,), ceil_mode=True)
max_case("max_pool1d_unbatched", "max_pool1d", F.max_pool1d, randn(3, 7), (3,), (1,), (1,))
xs = np.array([[[1.0, np.nan, -2.0, 3.0, np.inf, -np.inf, -np.inf, 0.0, -0.0]]], dtype=np.float32)
max_case("max_pool1d_special", "max_pool1d", F.max_pool1d, xs, (2,), (2,), (1,))
max_case("max_pool2d_basic", "max_pool2d", F.max_pool2d, randn(2, 3, 6, 6), (2, 2), short=True)
max_case("max_pool2d_nonsquare", "max_pool2d", F.max_pool2d, randn(2, 2, 7, 9), (3, 2), (2, 3), (1, 1))
max_case("max_pool2d_dilation", "max_pool2d", F.max_pool2d, randn(1, 2, 9, 8), (3, 2), (1, 2), (1, 0), (2, 3))
max_case("max_pool2d_ceil", "max_pool2d", F.max_pool2d, randn(2, 2, 7, 6), (3, 3), (2, 2), (1, 0), ceil_mode=True)
max_case("max_pool2d_overlap_pad", "max_pool2d", F.max_pool2d, randn(2, 3, 5, 5), (3, 3), (1, 1), (1, 1))
max_case("max_pool2d_kernel1", "max_pool2d", F.max_pool2d, randn(1, 2, 3, 4), (1, 1), (2, 1))
max_case("max_pool2d_transposed_input", "max_pool2d", F.max_pool2d, randn(2, 2, 6, 5), (2, 3), (2, 1), (1, 1), pre="transpose")
max_case("max_pool2d_unbatched", "max_pool2d", F.max_pool2d, randn(2, 5, 5), (2, 2), (1, 2), ceil_mode=True)
# integers and f16: max is exact, so computed in f32 and converted back
xi = r.integers(-100, 100, (2, 2, 5, 5)).astype(np.int32)
c.add("max_pool2d_i32", "max_pool2d", [xi], [F.max_pool2d(t(xi.astype(np.float32)), 3, 2, 1).numpy().astype(np.int32)],
      kernel=[3, 3], stride=[2, 2], padding=[1, 1], dilation=[1, 1], ceilMode=False)
xh = randn(1, 2, 4, 6).astype(np.float16)
c.add("max_pool2d_f16", "max_pool2d", [xh], [F.max_pool2d(t(xh.astype(np.float32)), (2, 3)).numpy().astype(np.float16)], kernel=[2, 3])
max_case("max_pool3d_basic", "max_pool3d", F.max_pool3d, randn(2, 2, 4, 4, 4), (2, 2, 2), short=True)
max_case("max_pool3d_params", "max_pool3d", F.max_pool3d, randn(1, 2, 5, 6, 5), (3, 2, 2), (2, 1, 2), (1, 0, 1), (1, 2, 1), ceil_mode=True)
max_case("max_pool3d_unbatched", "max_pool3d", F.max_pool3d, randn(2, 3, 4, 3), (2, 2, 1), (1, 2, 1))

# ---------------------------------------------------------------- average pooling
avg_case("avg_pool1d_basic", "avg_pool1d", F.avg_pool1d, randn(2, 3, 10), (3,), short=True)
avg_case("avg_pool1d_pad", "avg_pool1d", F.avg_pool1d, randn(2, 2, 9), (3,), (2,), (1,))
avg_case("avg_pool1d_pad_exclude", "avg_pool1d", F.avg_pool1d, randn(2, 2, 9), (3,), (2,), (1,), count_include_pad=False)
avg_case("avg_pool1d_ceil", "avg_pool1d", F.avg_pool1d, randn(2, 2, 8), (3,), (2,), (1,), ceil_mode=True)
avg_case("avg_pool1d_ceil_exclude", "avg_pool1d", F.avg_pool1d, randn(2, 2, 8), (4,), (3,), (2,), ceil_mode=True, count_include_pad=False)
avg_case("avg_pool1d_unbatched", "avg_pool1d", F.avg_pool1d, randn(3, 7), (2,), (1,), (1,))
avg_case("avg_pool2d_basic", "avg_pool2d", F.avg_pool2d, randn(2, 3, 6, 6), (2, 2), short=True)
avg_case("avg_pool2d_nonsquare", "avg_pool2d", F.avg_pool2d, randn(2, 2, 7, 9), (3, 2), (2, 3), (1, 1))
avg_case("avg_pool2d_exclude", "avg_pool2d", F.avg_pool2d, randn(2, 2, 7, 9), (3, 2), (2, 3), (1, 1), count_include_pad=False)
avg_case("avg_pool2d_ceil", "avg_pool2d", F.avg_pool2d, randn(2, 2, 7, 6), (3, 3), (2, 2), (1, 0), ceil_mode=True)
avg_case("avg_pool2d_ceil_exclude", "avg_pool2d", F.avg_pool2d, randn(2, 2, 7, 6), (3, 4), (2, 3), (1, 2), ceil_mode=True, count_include_pad=False)
avg_case("avg_pool2d_transposed_input", "avg_pool2d", F.avg_pool2d, randn(2, 2, 6, 5), (2, 3), (2, 1), (1, 1), pre="transpose")
xi = r.integers(-100, 100, (1, 2, 4, 4)).astype(np.int32)
c.add("avg_pool2d_i32", "avg_pool2d", [xi], [F.avg_pool2d(t(xi.astype(np.float32)), 2).numpy()], kernel=[2, 2])
avg_case("avg_pool3d_basic", "avg_pool3d", F.avg_pool3d, randn(2, 2, 4, 4, 4), (2, 2, 2), short=True)
avg_case("avg_pool3d_params", "avg_pool3d", F.avg_pool3d, randn(1, 2, 5, 6, 5), (3, 2, 2), (2, 1, 2), (1, 0, 1), ceil_mode=True, count_include_pad=False)
avg_case("avg_pool3d_include", "avg_pool3d", F.avg_pool3d, randn(1, 2, 4, 5, 3), (2, 3, 2), (2, 2, 1), (1, 1, 1), ceil_mode=True)


# ---------------------------------------------------------------- power-average pooling
def lp_case(name, op, fn, x, p, kernel, stride=None, ceil_mode=False, **extra):
    out = fn(t(x), p, kernel, stride, ceil_mode).numpy()
    c.add(name, op, [x], [out], p=p, kernel=listed(kernel), stride=listed(stride), ceilMode=ceil_mode, **extra)


lp_case("lp_pool1d_p2", "lp_pool1d", F.lp_pool1d, randn(2, 3, 10), 2.0, 3)
lp_case("lp_pool1d_p3_positive", "lp_pool1d", F.lp_pool1d, np.abs(randn(2, 2, 9)), 3.0, 2, 3)
lp_case("lp_pool1d_ceil", "lp_pool1d", F.lp_pool1d, randn(2, 2, 8), 2.0, 3, 2, ceil_mode=True)
lp_case("lp_pool1d_p1_5", "lp_pool1d", F.lp_pool1d, np.abs(randn(1, 2, 7)), 1.5, 2, 1)
# odd power of negative values: a negative window sum has a NaN cube root, as in torch
lp_case("lp_pool1d_p3_negative", "lp_pool1d", F.lp_pool1d, randn(1, 2, 6), 3.0, 2)
lp_case("lp_pool2d_p2", "lp_pool2d", F.lp_pool2d, randn(2, 3, 6, 6), 2.0, (2, 2))
lp_case("lp_pool2d_params", "lp_pool2d", F.lp_pool2d, np.abs(randn(2, 2, 7, 8)), 3.0, (3, 2), (2, 3))
lp_case("lp_pool2d_ceil", "lp_pool2d", F.lp_pool2d, randn(1, 2, 7, 5), 2.0, (2, 2), (2, 2), ceil_mode=True)

# ---------------------------------------------------------------- global pooling
for name, x in [("2d", randn(2, 3, 4, 5)), ("1d", randn(2, 3, 6)), ("3d", randn(1, 2, 3, 2, 4)), ("size1", randn(2, 4, 1, 1))]:
    dims = tuple(range(2, x.ndim))
    c.add("global_avg_pool_" + name, "global_avg_pool", [x], [t(x).mean(dim=dims, keepdim=True).numpy()])
    c.add("global_max_pool_" + name, "global_max_pool", [x], [t(x).amax(dim=dims, keepdim=True).numpy()])
xi = r.integers(-50, 50, (2, 2, 3, 3)).astype(np.int32)
c.add("global_avg_pool_i32", "global_avg_pool", [xi], [xi.astype(np.float64).mean(axis=(2, 3), keepdims=True).astype(np.float32)])
c.add("global_max_pool_i32", "global_max_pool", [xi], [xi.max(axis=(2, 3), keepdims=True)])
xn = randn(1, 2, 3, 3)
xn[0, 1, 1, 2] = np.nan
c.add("global_max_pool_nan", "global_max_pool", [xn], [t(xn).amax(dim=(2, 3), keepdim=True).numpy()])

c.write()

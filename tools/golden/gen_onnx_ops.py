"""Golden cases for the ONNX-driven operators (dev.kiln.OnnxOps and friends).

Expected values come from NumPy ports, written here, of the semantics in the ONNX operator specification
(opsets 13 to 18), mostly as plain loops over output elements so that they share nothing with Kiln's
mask-and-reduce formulation; PyTorch checks a few where it has the same operator. Run with
/usr/bin/python3 (NumPy 1.24 and PyTorch 1.13).

Args: "pre": "transpose" swaps the last two axes of input 0 before the op (a non-contiguous input).
"""
import itertools
import math

import numpy as np
import torch

from golden import _NAMES, Cases, rng

c = Cases("onnxOps")  # the coverage test finds the class <Group>GoldenTest, so the group name is camel case
r = rng(11)
NAN, INF = float("nan"), float("inf")


def pre(x, args):
    return np.swapaxes(x, -1, -2) if args.get("pre") == "transpose" else x


def short(dtype):
    return _NAMES[np.dtype(dtype)]


def f32(*shape):
    return r.standard_normal(shape).astype(np.float32)


def ints(lo, hi, shape, dtype=np.int64):
    return r.integers(lo, hi, shape).astype(dtype)


# ---------------------------------------------------------------------------------------------------
# gathers


def gather_elements(name, x, axis, indices, **args):
    xx = pre(x, args)
    ax = axis % xx.ndim
    out = np.empty(indices.shape, xx.dtype)
    for pos in np.ndindex(indices.shape):
        i = int(indices[pos])
        if i < 0:
            i += xx.shape[ax]
        src = list(pos)
        src[ax] = i
        out[pos] = xx[tuple(src)]
    c.add(name, "onnx_gather_elements", [x, indices], [out], axis=axis, **args)


gather_elements("gather_elements_axis0", f32(3, 4), 0, ints(0, 3, (2, 4)))
gather_elements("gather_elements_axis1_negative_indices", f32(3, 3), 1, ints(-3, 3, (3, 2)))
gather_elements("gather_elements_3d_neg_axis_smaller", f32(3, 4, 5), -1, ints(-5, 5, (2, 3, 7), np.int32))
gather_elements("gather_elements_int_values", ints(-50, 50, (4, 3), np.int32), 0, ints(-4, 4, (4, 3)))
gather_elements("gather_elements_transposed", f32(4, 3), 1, ints(-4, 4, (3, 4)), pre="transpose")
gather_elements("gather_elements_size1", f32(1, 5), 1, ints(0, 5, (1, 1)))


def gather_nd(name, x, indices, batch_dims=0):
    b = batch_dims
    k = indices.shape[-1]
    out_shape = indices.shape[:-1] + x.shape[b + k:]
    out = np.empty(out_shape, x.dtype)
    for pos in np.ndindex(indices.shape[:-1]):
        coord = [int(v) for v in indices[pos]]
        coord = [v + x.shape[b + j] if v < 0 else v for j, v in enumerate(coord)]
        out[pos] = x[tuple(pos[:b]) + tuple(coord)]
    c.add(name, "onnx_gather_nd", [x, indices], [out], batch_dims=batch_dims)


gather_nd("gather_nd_full_coords", ints(0, 100, (2, 2), np.int32), np.array([[0, 0], [1, 1]]))
gather_nd("gather_nd_slices", f32(2, 3, 2), np.array([[1], [0]]))
gather_nd("gather_nd_nested_indices", f32(2, 2, 2), np.array([[[0, 1]], [[1, 0]]]))
gather_nd("gather_nd_batch_dims1", f32(2, 3, 4), np.array([[1], [2]]), batch_dims=1)
gather_nd("gather_nd_batch_dims1_coords", f32(2, 3, 4), np.array([[[1, 3], [0, -1]], [[2, 0], [-3, 2]]]), batch_dims=1)
gather_nd("gather_nd_negative", f32(3, 4), np.array([[-1, -2], [0, 3], [2, -4]], np.int32))


# ---------------------------------------------------------------------------------------------------
# scatters

COMBINE = {"add": lambda a, b: a + b, "mul": lambda a, b: a * b, "max": max, "min": min}


def scatter_elements(name, x, axis, indices, updates, reduction="none", **args):
    xx = pre(x, args)
    out = xx.copy()
    ax = axis % xx.ndim
    for pos in np.ndindex(indices.shape):  # C order: of duplicate 'none' writes the last wins
        i = int(indices[pos])
        if i < 0:
            i += xx.shape[ax]
        dst = list(pos)
        dst[ax] = i
        dst = tuple(dst)
        u = updates[pos]
        out[dst] = u if reduction == "none" else COMBINE[reduction](out[dst], u)
    c.add(name, "onnx_scatter_elements", [x, indices, updates], [out], axis=axis, reduction=reduction, **args)


scatter_elements("scatter_elements_axis0", f32(3, 3), 0, np.array([[1, 0, 2], [0, 2, 1]]), f32(2, 3))
scatter_elements("scatter_elements_axis1_negative", f32(1, 5), 1, np.array([[1, -2]]), f32(1, 2))
scatter_elements("scatter_elements_duplicates_last_wins", f32(2, 4), 1, np.array([[1, 1, 3], [0, 0, 0]]), f32(2, 3))
scatter_elements("scatter_elements_add_duplicates", f32(1, 5), 1, np.array([[1, 1]]), np.array([[1.5, 2.25]], np.float32), "add")
scatter_elements("scatter_elements_mul", f32(3, 4), 0, np.array([[2, 1, 2, 0], [2, 0, 0, 0]]), f32(2, 4), "mul")
scatter_elements("scatter_elements_max_int", ints(-9, 9, (4, 3), np.int32), 0, ints(0, 4, (5, 2)), ints(-9, 9, (5, 2), np.int32), "max")
scatter_elements("scatter_elements_min_3d", f32(2, 3, 4), -1, ints(-4, 4, (2, 2, 3)), f32(2, 2, 3), "min")
scatter_elements("scatter_elements_transposed", f32(4, 3), 0, np.array([[2, 0, 1, 1]]), f32(1, 4), pre="transpose")


def scatter_nd(name, x, indices, updates, reduction="none"):
    out = x.copy()
    for pos in np.ndindex(indices.shape[:-1]):
        coord = tuple(int(v) + (x.shape[j] if int(v) < 0 else 0) for j, v in enumerate(indices[pos]))
        u = updates[pos]
        out[coord] = u if reduction == "none" else np.vectorize(COMBINE[reduction])(out[coord], u)
    c.add(name, "onnx_scatter_nd", [x, indices, updates], [out], reduction=reduction)


scatter_nd("scatter_nd_elements", np.arange(1, 9, dtype=np.float32), np.array([[4], [3], [1], [7]]), np.array([9, 10, 11, 12], np.float32))
scatter_nd("scatter_nd_slices", f32(4, 4, 4), np.array([[0], [2]]), f32(2, 4, 4))
scatter_nd("scatter_nd_add_duplicates", f32(4, 3), np.array([[0], [0], [-1]]), f32(3, 3), "add")
scatter_nd("scatter_nd_mul", f32(2, 3, 2), np.array([[0, 1], [1, 2], [0, 1]]), f32(3, 2), "mul")
scatter_nd("scatter_nd_max_int", ints(-9, 9, (3, 3), np.int32), np.array([[[0, 0], [2, 1]], [[0, 0], [1, 1]]]), ints(-9, 9, (2, 2), np.int32), "max")
scatter_nd("scatter_nd_min", f32(3, 2), np.array([[1], [1]]), f32(2, 2), "min")


# ---------------------------------------------------------------------------------------------------
# one-hot, hardmax, arg extremes, cumulative sums


def one_hot(name, indices, depth, axis, values):
    idx = np.asarray(indices).astype(np.int64)  # float indices truncate
    rank = idx.ndim
    ax = axis % (rank + 1)
    out_shape = list(idx.shape)
    out_shape.insert(ax, depth)
    out = np.full(out_shape, values[0], values.dtype)
    for pos in np.ndindex(idx.shape):
        i = int(idx[pos])
        if i < 0:
            i += depth
        if 0 <= i < depth:
            dst = list(pos)
            dst.insert(ax, i)
            out[tuple(dst)] = values[1]
    c.add(name, "onnx_one_hot", [indices, values], [out], depth=depth, axis=axis)


one_hot("one_hot_last_axis", np.array([0, 7, 8]), 10, -1, np.array([1, 3], np.float32))
one_hot("one_hot_axis1", np.array([[1, 9], [2, 4]], np.float32), 10, 1, np.array([1, 3], np.float32))
one_hot("one_hot_negative_indices", np.array([0, -7, -8]), 10, -1, np.array([0, 1], np.int32))
one_hot("one_hot_axis0_out_of_range", np.array([[3, 12], [-1, -11]], np.int32), 4, 0, np.array([-1, 5], np.int64))
one_hot("one_hot_negative_axis", np.array([[1.7, 0.2]], np.float32), 3, -2, np.array([0.5, 2.5], np.float32))


def hardmax(name, x, axis, **args):
    xx = pre(x, args)
    ax = axis % xx.ndim
    first = np.argmax(xx, axis=ax)  # NumPy's argmax takes the first of equal maxima
    out = (np.expand_dims(first, ax) == np.arange(xx.shape[ax]).reshape([-1 if d == ax else 1 for d in range(xx.ndim)])).astype(xx.dtype)
    c.add(name, "onnx_hardmax", [x], [out], axis=axis, **args)


hardmax("hardmax_last", f32(3, 4), -1)
hardmax("hardmax_axis0_ties", np.array([[1, 2, 2], [2, 2, 0]], np.float32), 0)
hardmax("hardmax_ties_first", np.array([[2, 2, 2, 2], [1, 3, 3, 0]], np.float32), 1)
hardmax("hardmax_3d_int", ints(0, 3, (2, 3, 4), np.int32), 1)
hardmax("hardmax_transposed", f32(3, 5), 1, pre="transpose")


def arg_last(name, op, x, axis, keepdim):
    f = np.flip(x, axis)
    i = (np.argmax(f, axis) if op == "max" else np.argmin(f, axis))
    out = (x.shape[axis] - 1 - i).astype(np.int64)
    if keepdim:
        out = np.expand_dims(out, axis)
    c.add(name, "onnx_arg" + op + "_last", [x], [out], axis=axis, keepdim=keepdim)


arg_last("argmax_last_ties", "max", np.array([[2, 2, 1], [3, 0, 3]], np.float32), 1, True)
arg_last("argmax_last_axis0", "max", ints(0, 3, (4, 5), np.int32), 0, False)
arg_last("argmin_last_ties", "min", np.array([[2, 1, 1], [0, 0, 3]], np.float32), -1, False)
arg_last("argmin_last_3d", "min", ints(0, 3, (2, 3, 4), np.int32), 1, True)


def cumsum(name, x, axis, exclusive, reverse):
    y = np.flip(x, axis) if reverse else x
    s = np.cumsum(y, axis=axis, dtype=x.dtype)
    if exclusive and s.shape[axis] > 0:
        s = np.concatenate([np.zeros_like(np.take(s, [0], axis)), np.take(s, range(s.shape[axis] - 1), axis)], axis)
    if reverse:
        s = np.flip(s, axis)
    c.add(name, "onnx_cumsum", [x], [np.ascontiguousarray(s)], axis=axis, exclusive=exclusive, reverse=reverse)


cumsum("cumsum_exclusive", np.arange(1, 6, dtype=np.float32), 0, True, False)
cumsum("cumsum_reverse", np.arange(1, 6, dtype=np.float32), 0, False, True)
cumsum("cumsum_reverse_exclusive", f32(2, 5), -1, True, True)
cumsum("cumsum_int32_axis0", ints(-9, 9, (4, 3), np.int32), 0, False, False)
cumsum("cumsum_int64_reverse_exclusive", ints(-9, 9, (3, 4)), 0, True, True)


# ---------------------------------------------------------------------------------------------------
# elementwise

SPECIAL = np.array([-INF, -3.5, -1.0, -0.5, -0.0, 0.0, 0.25, 0.5, 1.0, 2.5, 4.0, INF, NAN], np.float32)


def hard_sigmoid(name, x, alpha, beta):
    out = np.maximum(0, np.minimum(1, alpha * x.astype(np.float64) + beta)).astype(np.float32)
    c.add(name, "onnx_hard_sigmoid", [x], [out], alpha=alpha, beta=beta)


hard_sigmoid("hard_sigmoid_default", SPECIAL, 0.2, 0.5)
hard_sigmoid("hard_sigmoid_params", f32(3, 4) * 4, 0.5, 0.6)


def shrink(name, x, lambd, bias):
    xd = x.astype(np.float64)
    out = np.where(xd < -lambd, xd + bias, np.where(xd > lambd, xd - bias, 0)).astype(x.dtype)
    c.add(name, "onnx_shrink", [x], [out], lambd=lambd, bias=bias)


shrink("shrink_hard", SPECIAL, 1.5, 0.0)
shrink("shrink_soft", f32(3, 4) * 3, 1.5, 1.5)
shrink("shrink_int", np.arange(-5, 6, dtype=np.int32), 2.0, 1.0)


def thresholded_relu(name, x, alpha):
    c.add(name, "onnx_thresholded_relu", [x], [np.where(x > alpha, x, 0).astype(x.dtype)], alpha=alpha)


thresholded_relu("thresholded_relu_default", SPECIAL, 1.0)
thresholded_relu("thresholded_relu_alpha", f32(3, 4) * 3, 2.0)


def isinf(name, x, pos, neg):
    out = (np.isposinf(x) & pos) | (np.isneginf(x) & neg)
    c.add(name, "onnx_isinf", [x], [out], detect_positive=pos, detect_negative=neg)


isinf("isinf_both", SPECIAL, True, True)
isinf("isinf_positive_only", SPECIAL, True, False)
isinf("isinf_negative_only", SPECIAL.astype(np.float64), False, True)


# ---------------------------------------------------------------------------------------------------
# rearrangements


def depth_to_space(name, x, b, mode):
    n, ch, h, w = x.shape
    out = np.empty((n, ch // (b * b), h * b, w * b), x.dtype)
    for (i, oc, y, xx) in np.ndindex(out.shape):
        by, bx = y % b, xx % b
        src_c = (by * b + bx) * (ch // (b * b)) + oc if mode == "DCR" else oc * b * b + by * b + bx
        out[i, oc, y, xx] = x[i, src_c, y // b, xx // b]
    c.add(name, "onnx_depth_to_space", [x], [out], block_size=b, mode=mode)


depth_to_space("depth_to_space_dcr", f32(1, 8, 2, 3), 2, "DCR")
depth_to_space("depth_to_space_crd", f32(2, 8, 2, 2), 2, "CRD")
depth_to_space("depth_to_space_dcr_b3_int", ints(0, 99, (1, 9, 1, 2), np.int32), 3, "DCR")


def space_to_depth(name, x, b):
    n, ch, h, w = x.shape
    out = np.empty((n, ch * b * b, h // b, w // b), x.dtype)
    for (i, oc, y, xx) in np.ndindex(out.shape):
        blk, cc = divmod(oc, ch)
        by, bx = divmod(blk, b)
        out[i, oc, y, xx] = x[i, cc, y * b + by, xx * b + bx]
    c.add(name, "onnx_space_to_depth", [x], [out], block_size=b)


space_to_depth("space_to_depth_b2", f32(1, 2, 4, 6), 2)
space_to_depth("space_to_depth_b3", f32(2, 1, 3, 3), 3)


def reverse_sequence(name, x, lens, batch_axis, time_axis):
    out = x.copy()
    for b in range(x.shape[batch_axis]):
        for t in range(int(lens[b])):
            src = [slice(None)] * x.ndim
            dst = [slice(None)] * x.ndim
            src[batch_axis] = dst[batch_axis] = b
            src[time_axis] = int(lens[b]) - 1 - t
            dst[time_axis] = t
            out[tuple(dst)] = x[tuple(src)]
    c.add(name, "onnx_reverse_sequence", [x, lens], [out], batch_axis=batch_axis, time_axis=time_axis)


reverse_sequence("reverse_sequence_time_major", f32(4, 4), np.array([4, 3, 2, 1]), 1, 0)
reverse_sequence("reverse_sequence_batch_major", f32(4, 4), np.array([1, 2, 3, 4]), 0, 1)
reverse_sequence("reverse_sequence_3d_int", ints(0, 99, (3, 2, 2), np.int32), np.array([3, 0], np.int32), 1, 0)


# ---------------------------------------------------------------------------------------------------
# normalisation


def lrn(name, x, size, alpha=1e-4, beta=0.75, bias=1.0):
    ch = x.shape[1]
    sq = np.zeros_like(x, dtype=np.float64)
    for cc in range(ch):
        lo = max(0, cc - (size - 1) // 2)
        hi = min(ch - 1, cc + math.ceil((size - 1) / 2))
        sq[:, cc] = (x[:, lo:hi + 1].astype(np.float64) ** 2).sum(axis=1)
    out = (x / (bias + alpha / size * sq) ** beta).astype(x.dtype)
    c.add(name, "onnx_lrn", [x], [out], size=size, alpha=alpha, beta=beta, bias=bias)


lrn("lrn_default", f32(2, 5, 3, 3), 3)
lrn("lrn_even_size_params", f32(1, 6, 2, 2) * 3, 4, alpha=0.02, beta=0.5, bias=2.0)
lrn("lrn_3d", f32(2, 4, 5), 5, alpha=0.1)


def lp_normalization(name, x, axis, p):
    xd = x.astype(np.float64)
    norm = np.abs(xd).sum(axis=axis, keepdims=True) if p == 1 else np.sqrt((xd ** 2).sum(axis=axis, keepdims=True))
    c.add(name, "onnx_lp_normalization", [x], [(xd / norm).astype(np.float32)], axis=axis, p=p)


lp_normalization("lp_normalization_l2_last", f32(3, 4), -1, 2)
lp_normalization("lp_normalization_l1_axis0", f32(3, 4), 0, 1)


def mvn(name, x, axes):
    xd = x.astype(np.float64)
    mean = xd.mean(axis=tuple(axes), keepdims=True)
    std = np.sqrt(((xd - mean) ** 2).mean(axis=tuple(axes), keepdims=True))
    c.add(name, "onnx_mvn", [x], [((xd - mean) / (std + 1e-9)).astype(np.float32)], axes=axes)


mvn("mvn_default_axes", f32(3, 3, 3, 1), [0, 2, 3])
mvn("mvn_last_axis", f32(2, 5), [-1])


# ---------------------------------------------------------------------------------------------------
# losses


def nll_ref(x, target, weight, reduction, ii):
    loss = np.zeros(target.shape, np.float64)
    wsum = np.zeros(target.shape, np.float64)
    C = x.shape[1]
    for pos in np.ndindex(target.shape):
        t = int(target[pos])
        if (ii is not None and t == ii) or not 0 <= t < C:
            continue
        w = 1.0 if weight is None else float(weight[t])
        loss[pos] = -float(x[(pos[0], t) + pos[1:]]) * w
        wsum[pos] = w
    if reduction == "none":
        return loss.astype(x.dtype)
    if reduction == "sum":
        return np.array(loss.sum(), x.dtype)
    return np.array(loss.sum() / wsum.sum(), x.dtype)


def nll(name, x, target, weight, reduction, ii=None):
    inputs = [x, target] + ([weight] if weight is not None else [])
    args = {"reduction": reduction, "weight": weight is not None}
    if ii is not None:
        args["ignore_index"] = ii
    c.add(name, "onnx_nll_loss", inputs, [nll_ref(x, target, weight, reduction, ii)], **args)


nll("nll_nc_mean", f32(3, 5), ints(0, 5, (3,)), None, "mean")
nll("nll_nc_weight_sum", f32(3, 5), ints(0, 5, (3,)), np.abs(f32(5)), "sum")
nll("nll_ncd1d2_none_ii", f32(2, 3, 2, 2), np.array([[[0, 2], [1, 1]], [[2, 0], [1, 2]]]), None, "none", ii=1)
nll("nll_ncd1_weight_mean_negative_ii", f32(3, 5, 2), np.array([[0, -1], [4, 2], [-1, 3]]), np.abs(f32(5)), "mean", ii=-1)
nll("nll_ncd1d2d3_int32_target", f32(2, 3, 2, 1, 2), ints(0, 3, (2, 2, 1, 2), np.int32), np.abs(f32(3)), "mean")


def log_softmax(x, axis):
    xd = x.astype(np.float64)
    m = xd.max(axis=axis, keepdims=True)
    return xd - m - np.log(np.exp(xd - m).sum(axis=axis, keepdims=True))


def sce(name, x, labels, weight, reduction, ii=None):
    inputs = [x, labels] + ([weight] if weight is not None else [])
    args = {"reduction": reduction, "weight": weight is not None}
    if ii is not None:
        args["ignore_index"] = ii
    out = nll_ref(log_softmax(x, 1), labels, weight, reduction, ii).astype(x.dtype)
    c.add(name, "onnx_softmax_cross_entropy_loss", inputs, [out], **args)


sce("sce_mean", f32(3, 5), ints(0, 5, (3,)), None, "mean")
sce("sce_none_weights", f32(3, 5) * 3, ints(0, 5, (3,)), np.abs(f32(5)), "none")
sce("sce_mean_weight_ii_3d", f32(3, 5, 2), np.array([[0, 2], [2, 4], [1, 2]]), np.abs(f32(5)), "mean", ii=2)
sce("sce_sum_4d_ii", f32(2, 3, 2, 2), np.array([[[0, 2], [1, 1]], [[2, 0], [0, 2]]]), None, "sum", ii=0)


# ---------------------------------------------------------------------------------------------------
# quantisation


def quantize(name, x, scale, zp, axis=1):
    q = np.dtype(np.uint8) if zp is None else zp.dtype
    info = np.iinfo(q)
    s, z = scale, (np.zeros((), np.float32) if zp is None else zp)
    if s.ndim == 1 and s.size > 1:
        shape = [1] * x.ndim
        shape[axis] = s.size
        s = s.reshape(shape)
        z = z.reshape(shape)
    y = np.rint(x.astype(np.float32) / s.astype(np.float32)) + z.astype(np.float32)  # rint rounds half to even
    out = np.clip(y, info.min, info.max).astype(q)
    inputs = [x, scale] + ([zp] if zp is not None else [])
    c.add(name, "onnx_quantize_linear", inputs, [out], axis=axis, zero_point=zp is not None)


quantize("quantize_u8_ties_saturate", np.array([0, 2, 3, 1000, -254, -1000, 5, 7, -3, 1, -1], np.float32), np.array(2, np.float32), np.array(128, np.uint8))
quantize("quantize_i8", f32(3, 4) * 50, np.array(0.5, np.float32), np.array(-3, np.int8))
quantize("quantize_default_zero_point", np.abs(f32(2, 3)) * 10, np.array(0.1, np.float32), None)
quantize("quantize_per_axis", f32(1, 3, 3, 2) * 100, np.array([1, 2, 4], np.float32), np.array([9, 0, 120], np.uint8), axis=1)
quantize("quantize_int32_input", np.arange(-6, 6, dtype=np.int32).reshape(3, 4), np.array([2, 3, 4, 5], np.float32), np.array([0, 1, -1, 0], np.int8), axis=-1)


def dequantize(name, x, scale, zp, axis=1):
    s, z = scale, (np.zeros((), x.dtype) if zp is None else zp)
    if s.ndim == 1 and s.size > 1:
        shape = [1] * x.ndim
        shape[axis] = s.size
        s = s.reshape(shape)
        z = z.reshape(shape)
    out = ((x.astype(np.int64) - z.astype(np.int64)).astype(np.float32) * s).astype(np.float32)
    inputs = [x, scale] + ([zp] if zp is not None else [])
    c.add(name, "onnx_dequantize_linear", inputs, [out], axis=axis, zero_point=zp is not None)


dequantize("dequantize_u8", np.array([0, 3, 128, 255], np.uint8), np.array(2, np.float32), np.array(128, np.uint8))
dequantize("dequantize_per_axis_i8", ints(-128, 128, (1, 3, 2, 2), np.int8), np.array([1, 0.5, 0.25], np.float32), np.array([0, -2, 7], np.int8))
dequantize("dequantize_int32_no_zero_point", ints(-100000, 100000, (5,), np.int32), np.array(0.01, np.float32), None)


def dynamic_quantize(name, x):
    maxx = np.float32(np.maximum(0, np.max(x)))
    minx = np.float32(np.minimum(0, np.min(x)))
    scale = np.float32((maxx - minx) / np.float32(255))
    zp = np.round(np.clip(np.float32(0) - minx / scale, 0, 255)).astype(np.uint8)
    y = np.clip(np.round(x / scale) + zp, 0, 255).astype(np.uint8)
    c.add(name, "onnx_dynamic_quantize_linear", [x], [y, np.array(scale, np.float32), np.array(zp, np.uint8)])


dynamic_quantize("dynamic_quantize_mixed", np.array([0, 2, -3, -2.5, 1.34, 0.5], np.float32))
dynamic_quantize("dynamic_quantize_positive", np.array([1, 2.1, 1.3, 2.5, 3.34, 4.0, 1.5, 2.6, 3.9, 4.0, 3.0, 2.345], np.float32).reshape(3, 4))
dynamic_quantize("dynamic_quantize_negative", -np.abs(f32(2, 5)))


# ---------------------------------------------------------------------------------------------------
# determinant, unpooling


def det(name, x, rtol=None, atol=None):
    out = np.linalg.det(x.astype(np.float64)).astype(np.float32)
    c.add(name, "onnx_det", [x], [out], rtol=rtol, atol=atol)


det("det_2x2", np.array([[1, 2], [3, 4]], np.float32))
det("det_batch_3x3", f32(2, 3, 3))
det("det_needs_pivot", np.array([[0, 2, 1], [1, 0, 3], [2, 1, 0]], np.float32))
det("det_singular", np.array([[1, 2, 3], [2, 4, 6], [1, 0, 1]], np.float32), atol=1e-5)
det("det_5x5_batch2x1", f32(2, 1, 5, 5))
det("det_1x1", f32(3, 1, 1))


def max_unpool(name, x_in, kernel, stride, out_spatial):
    # MaxPool with Indices (row-major storage), then MaxUnpool; the pooled values and indices are the inputs
    n, ch, h, w = x_in.shape
    oh, ow = (h - kernel) // stride + 1, (w - kernel) // stride + 1
    vals = np.empty((n, ch, oh, ow), x_in.dtype)
    idx = np.empty((n, ch, oh, ow), np.int64)
    for (i, cc, y, xx) in np.ndindex(vals.shape):
        win = x_in[i, cc, y * stride:y * stride + kernel, xx * stride:xx * stride + kernel]
        a = np.unravel_index(np.argmax(win), win.shape)
        vals[i, cc, y, xx] = win[a]
        idx[i, cc, y, xx] = ((i * ch + cc) * h + y * stride + a[0]) * w + xx * stride + a[1]
    out_shape = [n, ch] + out_spatial
    out = np.zeros(out_shape, x_in.dtype).reshape(-1)
    out[idx.reshape(-1)] = vals.reshape(-1)
    c.add(name, "onnx_max_unpool", [vals, idx], [out.reshape(out_shape)], output_shape=out_shape)


max_unpool("max_unpool_2x2", f32(2, 2, 4, 4), 2, 2, [4, 4])
max_unpool("max_unpool_overlapping_bigger_output", f32(1, 1, 4, 5), 3, 1, [5, 6])


# ---------------------------------------------------------------------------------------------------
# creation


def eye_like(name, x, k, dtype):
    out = np.eye(x.shape[0], x.shape[1], k=k, dtype=dtype or x.dtype)
    c.add(name, "onnx_eye_like", [x], [out], k=k, **({"dtype": short(dtype)} if dtype else {}))


eye_like("eye_like_default", np.zeros((3, 4), np.float32), 0, None)
eye_like("eye_like_k_positive_int", np.zeros((4, 4), np.int32), 1, None)
eye_like("eye_like_k_negative_dtype", np.zeros((4, 3), np.float32), -2, np.int64)


def range_(name, start, limit, delta, dtype):
    n = max(math.ceil((limit - start) / delta), 0)
    out = np.array([start + i * delta for i in range(n)], dtype)
    c.add(name, "onnx_range", [], [out], start=start, limit=limit, delta=delta, dtype=short(dtype))


range_("range_float_positive", 1.0, 5.0, 0.5, np.float32)
range_("range_int_negative_delta", 10, 6, -3, np.int32)
range_("range_int64_empty", 5, 1, 2, np.int64)
range_("range_f64", -1.5, 2.0, 0.75, np.float64)


def window(name, kind, size, periodic, dtype):
    nn = size if periodic else size - 1
    i = np.arange(size, dtype=np.float64)
    a0, a1, a2 = {"hann": (0.5, 0.5, 0), "hamming": (25 / 46, 21 / 46, 0), "blackman": (0.42, 0.5, 0.08)}[kind]
    out = (a0 - a1 * np.cos(2 * np.pi * i / nn) + a2 * np.cos(4 * np.pi * i / nn)).astype(dtype)
    c.add(name, "onnx_" + kind + "_window", [], [out], size=size, periodic=periodic, dtype=short(dtype))


window("hann_periodic", "hann", 10, True, np.float32)
window("hann_symmetric_f64", "hann", 7, False, np.float64)
window("hamming_periodic", "hamming", 10, True, np.float32)
window("hamming_symmetric", "hamming", 10, False, np.float32)
window("blackman_periodic", "blackman", 10, True, np.float32)
window("blackman_symmetric", "blackman", 5, False, np.float32)


# ---------------------------------------------------------------------------------------------------
# Resize: a port of the ONNX reference's per-point algorithm (the k nearest integer neighbours of the
# source coordinate, ratio in (0, 1], edge padding, coefficients renormalised with exclude_outside),
# checked against the 19 resize cases of the ONNX conformance data while it was written.


def _coeffs(mode, ratio, a, nearest_mode):
    if mode == "nearest":
        if nearest_mode == "round_prefer_floor":
            return [ratio <= 0.5, ratio > 0.5]
        if nearest_mode == "round_prefer_ceil":
            return [ratio < 0.5, ratio >= 0.5]
        if nearest_mode == "floor":
            return [1.0, 0.0] if ratio < 1 else [0.0, 1.0]
        return [0.0, 1.0]  # ceil
    if mode == "linear":
        return [1 - ratio, ratio]
    s = ratio
    return [((a * (s + 1) - 5 * a) * (s + 1) + 8 * a) * (s + 1) - 4 * a,
            ((a + 2) * s - (a + 3)) * s * s + 1,
            ((a + 2) * (1 - s) - (a + 3)) * (1 - s) * (1 - s) + 1,
            ((a * (2 - s) - 5 * a) * (2 - s) + 8 * a) * (2 - s) - 4 * a]


def _source(transform, j, n, m, scale, start, end):
    mi = m
    m = n * scale  # the reference's resized length: in * scale, not the (integral) output size
    if transform == "half_pixel":
        return (j + 0.5) / scale - 0.5
    if transform == "half_pixel_symmetric":
        adj = mi / (scale * n)
        return n / 2 * (1 - adj) + (j + 0.5) / scale - 0.5
    if transform == "pytorch_half_pixel":
        return (j + 0.5) / scale - 0.5 if m > 1 else 0.0
    if transform == "align_corners":
        return 0.0 if m == 1 else j * (n - 1) / (m - 1)
    if transform == "asymmetric":
        return j / scale
    if transform == "tf_half_pixel_for_nn":
        return (j + 0.5) / scale
    return start * (n - 1) + j * (end - start) * (n - 1) / (m - 1) if m > 1 else 0.5 * (start + end) * (n - 1)


def axis_taps(transform, mode, j, n, m, scale, start, end, a, nearest_mode, exclude_outside):
    """(positions, weights) of output index j, or None when it lies outside (tf_crop_and_resize)."""
    x = _source(transform, j, n, m, scale, start, end)
    if transform == "tf_crop_and_resize" and (x < 0 or x > n - 1):
        return None
    lo = math.floor(x)
    ratio = x - lo
    if ratio == 0:  # as the reference: ratio in (0, 1], the pixel left of x preferred
        ratio = 1.0
    cf = np.array(_coeffs(mode, ratio, a, nearest_mode), np.float64)
    k = len(cf)
    # the k integers nearest to x (ties to the lower), as the reference's neighbour search
    cand = range(math.floor(x) - k, math.floor(x) + k + 2)
    idx = sorted(sorted(cand, key=lambda i: (abs(x - i), i))[:k])
    if exclude_outside:
        cf = np.array([0.0 if (i < 0 or i >= n) else v for i, v in zip(idx, cf)])
        cf = cf / cf.sum()
    return [min(max(i, 0), n - 1) for i in idx], cf


def resize_ref(x, sizes, scales, roi, mode, transform, nearest_mode="round_prefer_floor", a=-0.75, exclude_outside=False, extrapolation=0.0):
    r = x.ndim
    out = np.zeros(sizes, np.float64)
    per_axis = []
    for ax in range(r):
        n, m = x.shape[ax], sizes[ax]
        scale = scales[ax] if scales is not None else m / n if n else 1.0
        start, end = (roi[ax], roi[ax + r]) if roi is not None else (0.0, 1.0)
        per_axis.append([axis_taps(transform, mode, j, n, m, scale, start, end, a, nearest_mode, exclude_outside) for j in range(m)])
    xd = x.astype(np.float64)
    for pos in np.ndindex(*sizes):
        taps = [per_axis[ax][j] for ax, j in enumerate(pos)]
        if any(t is None for t in taps):
            out[pos] = extrapolation
            continue
        total = 0.0
        for combo in itertools.product(*[range(len(t[0])) for t in taps]):
            w = 1.0
            src = []
            for t, k in zip(taps, combo):
                w *= t[1][k]
                src.append(t[0][k])
            if w != 0:
                total += w * xd[tuple(src)]
        out[pos] = total
    return out.astype(x.dtype)


def resize(name, x, sizes, scales, mode, transform, nearest_mode="round_prefer_floor", a=-0.75, exclude_outside=False, roi=None,
           extrapolation=0.0, rtol=None, atol=None):
    out = resize_ref(x, sizes, scales, roi, mode, transform, nearest_mode, a, exclude_outside, extrapolation)
    args = {"sizes": list(sizes), "mode": mode, "transform": transform, "nearest_mode": nearest_mode, "cubic_coeff_a": a,
            "exclude_outside": exclude_outside, "extrapolation_value": extrapolation}
    if scales is not None:
        args["scales"] = [float(v) for v in scales]
    if roi is not None:
        args["roi"] = [float(v) for v in roi]
    c.add(name, "onnx_resize", [x], [out], rtol=rtol, atol=atol, **args)


def sc(*v):
    return [float(np.float32(s)) for s in v]  # ONNX scales are f32


img = np.arange(1, 17, dtype=np.float32).reshape(1, 1, 4, 4)
resize("resize_nearest_up_sizes", f32(1, 2, 2, 3), [1, 2, 5, 7], None, "nearest", "half_pixel")
resize("resize_nearest_down_scales", f32(1, 1, 2, 4), [1, 1, 1, 2], sc(1, 1, 0.6, 0.6), "nearest", "asymmetric")
resize("resize_nearest_ceil_half_pixel_int", ints(0, 99, (1, 1, 4, 4), np.int32), [1, 1, 8, 8], None, "nearest", "half_pixel", "ceil")
resize("resize_nearest_floor_align_corners", img, [1, 1, 8, 8], None, "nearest", "align_corners", "floor")
resize("resize_nearest_prefer_ceil_asymmetric", img, [1, 1, 7, 8], None, "nearest", "asymmetric", "round_prefer_ceil")
resize("resize_nearest_tf_half_pixel_for_nn", f32(2, 3, 5), [2, 3, 3], None, "nearest", "tf_half_pixel_for_nn")
resize("resize_linear_up", f32(1, 1, 2, 2), [1, 1, 4, 4], sc(1, 1, 2, 2), "linear", "half_pixel")
resize("resize_linear_down", f32(1, 2, 2, 4), [1, 2, 1, 2], sc(1, 1, 0.6, 0.6), "linear", "half_pixel")
resize("resize_linear_align_corners_scales", f32(1, 1, 2, 4), [1, 1, 1, 2], sc(1, 1, 0.6, 0.6), "linear", "align_corners")
resize("resize_linear_pytorch_half_pixel", f32(1, 1, 4, 4), [1, 1, 3, 1], None, "linear", "pytorch_half_pixel")
resize("resize_linear_asymmetric_2d", f32(3, 4), [5, 6], None, "linear", "asymmetric")
resize("resize_linear_half_pixel_symmetric", f32(1, 1, 2, 4), [1, 1, 5, 6], sc(1, 1, 2.94, 1.56), "linear", "half_pixel_symmetric")
resize("resize_cubic_up", img, [1, 1, 8, 8], sc(1, 1, 2, 2), "cubic", "half_pixel")
resize("resize_cubic_down_exclude_outside", img, [1, 1, 3, 3], sc(1, 1, 0.8, 0.8), "cubic", "half_pixel", a=-0.5, exclude_outside=True)
resize("resize_cubic_align_corners", f32(1, 2, 4, 4), [1, 2, 3, 3], sc(1, 1, 0.8, 0.8), "cubic", "align_corners")
resize("resize_cubic_asymmetric_sizes", f32(1, 1, 4, 4), [1, 1, 9, 10], None, "cubic", "asymmetric")
resize("resize_linear_tf_crop_and_resize_extrapolation", img, [1, 1, 3, 3], None, "linear", "tf_crop_and_resize",
       roi=[0, 0, 0.4, 0.6, 1, 1, 1.2, 1.7], extrapolation=10.0)
resize("resize_nearest_tf_crop_and_resize", img, [1, 1, 3, 3], None, "nearest", "tf_crop_and_resize", roi=[0, 0, 0.4, 0.6, 1, 1, 0.6, 0.8])
resize("resize_identity", f32(1, 2, 3, 3), [1, 2, 3, 3], None, "linear", "half_pixel")


def grid_sample(name, x, grid, mode, padding, align):
    out = torch.nn.functional.grid_sample(torch.from_numpy(x), torch.from_numpy(grid), mode=mode, padding_mode=padding,
                                          align_corners=align).numpy()
    c.add(name, "onnx_grid_sample", [x, grid], [out], mode=mode, padding_mode=padding, align_corners=align)


def grid(n, h, w, spread=1.2):
    return (r.uniform(-spread, spread, (n, h, w, 2))).astype(np.float32)


grid_sample("grid_sample_bilinear_zeros", f32(1, 1, 3, 2), grid(1, 2, 4), "bilinear", "zeros", False)
grid_sample("grid_sample_bilinear_border_align", f32(2, 2, 3, 4), grid(2, 3, 2), "bilinear", "border", True)
grid_sample("grid_sample_bilinear_reflection", f32(1, 2, 4, 3), grid(1, 3, 3, 2.5), "bilinear", "reflection", False)
grid_sample("grid_sample_bilinear_reflection_align", f32(1, 1, 3, 3), grid(1, 2, 3, 2.5), "bilinear", "reflection", True)
grid_sample("grid_sample_nearest_zeros", f32(2, 1, 3, 4), grid(2, 2, 3), "nearest", "zeros", False)
grid_sample("grid_sample_nearest_border_align", f32(1, 2, 3, 3), grid(1, 3, 3, 1.5), "nearest", "border", True)
grid_sample("grid_sample_bicubic_zeros", f32(1, 1, 4, 4), grid(1, 3, 3), "bicubic", "zeros", False)
grid_sample("grid_sample_bicubic_border", f32(1, 2, 3, 4), grid(1, 2, 3, 1.5), "bicubic", "border", False)
grid_sample("grid_sample_bicubic_reflection_align", f32(1, 1, 4, 3), grid(1, 2, 2, 2.0), "bicubic", "reflection", True)


# ---------------------------------------------------------------------------------------------------
# RNN, GRU, LSTM: the ONNX equations as a per-step, per-batch-entry loop in float64 (checked against
# the 11 recurrent cases of the ONNX conformance data while it was written)


def _sigmoid(x):
    return 1 / (1 + np.exp(-x))


ACT = {
    "relu": lambda x, a, b: np.maximum(x, 0), "tanh": lambda x, a, b: np.tanh(x), "sigmoid": lambda x, a, b: _sigmoid(x),
    "affine": lambda x, a, b: a * x + b, "leakyrelu": lambda x, a, b: np.where(x >= 0, x, a * x),
    "thresholdedrelu": lambda x, a, b: np.where(x > a, x, 0), "scaledtanh": lambda x, a, b: a * np.tanh(b * x),
    "hardsigmoid": lambda x, a, b: np.clip(a * x + b, 0, 1), "elu": lambda x, a, b: np.where(x >= 0, x, a * (np.exp(x) - 1)),
    "softsign": lambda x, a, b: x / (1 + np.abs(x)), "softplus": lambda x, a, b: np.log1p(np.exp(x)),
}
DEFAULTS = {"rnn": ["Tanh"], "gru": ["Sigmoid", "Tanh"], "lstm": ["Sigmoid", "Tanh", "Tanh"]}
GATES = {"rnn": 1, "gru": 3, "lstm": 4}
ALPHA_DEFAULT = {"leakyrelu": 0.01, "hardsigmoid": 0.2}
BETA_DEFAULT = {"affine": 0.0, "hardsigmoid": 0.5}


def _functions(cell, dirs, names, alpha, beta):
    names = names or DEFAULTS[cell] * dirs
    fs, ai, bi = [], 0, 0
    for n in names:
        k = n.lower()
        a = ALPHA_DEFAULT.get(k, 1.0)
        b = BETA_DEFAULT.get(k, 1.0)
        if k in ("affine", "leakyrelu", "thresholdedrelu", "scaledtanh", "hardsigmoid", "elu") and alpha is not None and ai < len(alpha):
            a = alpha[ai]
            ai += 1
        if k in ("affine", "scaledtanh", "hardsigmoid") and beta is not None and bi < len(beta):
            b = beta[bi]
            bi += 1
        fs.append(lambda x, f=ACT[k], a=a, b=b: f(x, a, b))
    return fs


def recurrent(cell, x, w, r, b=None, lens=None, h0=None, c0=None, p=None, direction="forward", activations=None, alpha=None, beta=None,
              clip=None, linear_before_reset=False, input_forget=False, layout=0):
    """ONNX RNN / GRU / LSTM as a plain per-step, per-batch-entry loop in float64."""
    x = x.astype(np.float64)
    if layout == 1:
        x = x.transpose(1, 0, 2)
        h0 = None if h0 is None else h0.transpose(1, 0, 2)
        c0 = None if c0 is None else c0.transpose(1, 0, 2)
    T, B, _ = x.shape
    dirs = 2 if direction == "bidirectional" else 1
    H = r.shape[-1]
    G = GATES[cell]
    fs = _functions(cell, dirs, activations, alpha, beta)
    per = len(DEFAULTS[cell])
    cl = (lambda v: np.clip(v, -clip, clip)) if clip is not None else (lambda v: v)
    Y = np.zeros((T, dirs, B, H))
    YH = np.zeros((dirs, B, H))
    YC = np.zeros((dirs, B, H))
    for d in range(dirs):
        f = fs[d * per:(d + 1) * per]
        W, R = w[d].astype(np.float64), r[d].astype(np.float64)
        Wb = np.zeros(G * H) if b is None else b[d][:G * H].astype(np.float64)
        Rb = np.zeros(G * H) if b is None else b[d][G * H:].astype(np.float64)
        P = np.zeros(3 * H) if p is None else p[d].astype(np.float64)
        rev = direction == "reverse" or d == 1
        for n in range(B):
            L = T if lens is None else int(lens[n])
            h = np.zeros(H) if h0 is None else h0[d, n].astype(np.float64)
            cc = np.zeros(H) if c0 is None else c0[d, n].astype(np.float64)
            for s in range(L):
                t = L - 1 - s if rev else s
                xt = x[t, n]
                if cell == "rnn":
                    h = f[0](cl(W @ xt + R @ h + Wb + Rb))
                elif cell == "gru":
                    g = lambda M, k, v: M[k * H:(k + 1) * H] @ v
                    z = f[0](cl(g(W, 0, xt) + g(R, 0, h) + Wb[:H] + Rb[:H]))
                    rr = f[0](cl(g(W, 1, xt) + g(R, 1, h) + Wb[H:2 * H] + Rb[H:2 * H]))
                    if linear_before_reset:
                        hh = f[1](cl(g(W, 2, xt) + rr * (g(R, 2, h) + Rb[2 * H:]) + Wb[2 * H:]))
                    else:
                        hh = f[1](cl(g(W, 2, xt) + g(R, 2, rr * h) + Rb[2 * H:] + Wb[2 * H:]))
                    h = (1 - z) * hh + z * h
                else:
                    a = W @ xt + R @ h + Wb + Rb
                    i = f[0](cl(a[:H] + P[:H] * cc))
                    fg = 1 - i if input_forget else f[0](cl(a[2 * H:3 * H] + P[2 * H:] * cc))
                    ct = f[1](cl(a[3 * H:]))
                    cc = fg * cc + i * ct
                    o = f[0](cl(a[H:2 * H] + P[H:2 * H] * cc))
                    h = o * f[2](cc)
                Y[t, d, n] = h
            YH[d, n] = h
            YC[d, n] = cc
    if layout == 1:
        Y = Y.transpose(2, 0, 1, 3)
        YH = YH.transpose(1, 0, 2)
        YC = YC.transpose(1, 0, 2)
    dt = np.float32
    return Y.astype(dt), YH.astype(dt), YC.astype(dt)


def rec(name, cell, x, w, r, b=None, lens=None, h0=None, c0=None, p=None, rtol=None, atol=None, **attrs):
    ys = recurrent(cell, x, w, r, b, lens, h0, c0, p, **attrs)
    named = [("x", x), ("w", w), ("r", r), ("b", b), ("lens", lens), ("h0", h0), ("c0", c0), ("p", p)]
    present = [k for k, v in named if v is not None]
    outs = list(ys) if cell == "lstm" else list(ys[:2])
    c.add(name, "onnx_" + cell, [v for k, v in named if v is not None], outs, rtol=rtol, atol=atol, present=present, **attrs)


def wts(dirs, rows, cols, scale=0.5):
    return (r.standard_normal((dirs, rows, cols)) * scale).astype(np.float32)


H = 3
rec("rnn_forward_default", "rnn", f32(4, 2, 3), wts(1, H, 3), wts(1, H, H))
rec("rnn_reverse_lens_bias_h0", "rnn", f32(4, 3, 2), wts(1, H, 2), wts(1, H, H), b=wts(1, 1, 2 * H)[:, 0], lens=np.array([4, 2, 0], np.int32),
    h0=f32(1, 3, H), direction="reverse")
rec("rnn_bidirectional_activations", "rnn", f32(3, 2, 2), wts(2, H, 2), wts(2, H, H), b=wts(2, 1, 2 * H)[:, 0], direction="bidirectional",
    activations=["LeakyRelu", "HardSigmoid"], alpha=[0.1, 0.3], beta=[0.4])
rec("rnn_layout1_clip", "rnn", f32(2, 3, 2) * 3, wts(1, H, 2, 1.5), wts(1, H, H), h0=f32(2, 1, H), layout=1, clip=0.8)
rec("gru_forward_default", "gru", f32(3, 2, 2), wts(1, 3 * H, 2), wts(1, 3 * H, H))
rec("gru_linear_before_reset_bias_h0", "gru", f32(3, 2, 3), wts(1, 3 * H, 3), wts(1, 3 * H, H), b=wts(1, 1, 6 * H)[:, 0], h0=f32(1, 2, H),
    linear_before_reset=True)
rec("gru_bidirectional_lens", "gru", f32(4, 3, 2), wts(2, 3 * H, 2), wts(2, 3 * H, H), b=wts(2, 1, 6 * H)[:, 0], lens=np.array([2, 4, 1]),
    direction="bidirectional")
rec("gru_reverse_layout1_activations", "gru", f32(2, 3, 2), wts(1, 3 * H, 2), wts(1, 3 * H, H), direction="reverse", layout=1,
    activations=["HardSigmoid", "Softsign"])
rec("lstm_forward_default", "lstm", f32(3, 2, 2), wts(1, 4 * H, 2), wts(1, 4 * H, H))
rec("lstm_peepholes_initial_states", "lstm", f32(3, 2, 3), wts(1, 4 * H, 3), wts(1, 4 * H, H), b=wts(1, 1, 8 * H)[:, 0], h0=f32(1, 2, H),
    c0=f32(1, 2, H), p=wts(1, 1, 3 * H)[:, 0])
rec("lstm_bidirectional_lens_clip", "lstm", f32(4, 2, 2) * 2, wts(2, 4 * H, 2, 1.0), wts(2, 4 * H, H), lens=np.array([3, 4]),
    direction="bidirectional", clip=1.0)
rec("lstm_reverse_input_forget_layout1", "lstm", f32(2, 3, 2), wts(1, 4 * H, 2), wts(1, 4 * H, H), b=wts(1, 1, 8 * H)[:, 0],
    direction="reverse", input_forget=True, layout=1, activations=["Sigmoid", "Tanh", "Relu"])


# ---------------------------------------------------------------------------------------------------
# DFT and STFT through numpy.fft; the mel filter bank as a port of ONNX's reference (all three checked
# against the ONNX conformance data while they were written)


def to_complex(x):
    return x[..., 0].astype(np.complex128) + (1j * x[..., 1] if x.shape[-1] == 2 else 0)


def from_complex(z, dtype):
    return np.stack([z.real, z.imag], -1).astype(dtype)


def dft_ref(x, axis, inverse, onesided, length):
    z = to_complex(x)
    ax = axis if axis >= 0 else axis + x.ndim  # an axis of x; z lacks only the trailing one
    n = length or z.shape[ax]
    y = np.fft.ifft(z, n=n, axis=ax) if inverse else np.fft.fft(z, n=n, axis=ax)
    if onesided:
        y = np.take(y, range(n // 2 + 1), axis=ax)
    return from_complex(y, x.dtype)


def stft_ref(signal, step, window, length, onesided):
    z = to_complex(signal)
    L = length if length is not None else len(window)
    w = np.ones(L) if window is None else window.astype(np.float64)
    frames = (z.shape[1] - L) // step + 1
    out = np.stack([np.fft.fft(z[:, f * step:f * step + L] * w, axis=1) for f in range(frames)], 1)
    if onesided:
        out = out[:, :, :L // 2 + 1]
    return from_complex(out, signal.dtype)


def mel_weight_matrix(num_mel_bins, dft_length, sample_rate, lower_edge_hertz, upper_edge_hertz):
    bins = np.arange(0, num_mel_bins + 2)
    low_mel = 2595 * np.log10(1 + lower_edge_hertz / 700)
    high_mel = 2595 * np.log10(1 + upper_edge_hertz / 700)
    step = (high_mel - low_mel) / bins.shape[0]
    hz = 700 * (np.power(10, (bins * step + low_mel) / 2595) - 1)
    points = (((dft_length + 1) * hz) // sample_rate).astype(int)
    out = np.zeros((dft_length // 2 + 1, num_mel_bins))
    for i in range(num_mel_bins):
        lo, ce, hi = points[i], points[i + 1], points[i + 2]
        if ce == lo:
            out[ce, i] = 1
        else:
            for j in range(lo, ce + 1):
                out[j, i] = (j - lo) / (ce - lo)
        if hi > ce:
            for j in range(ce, hi):
                out[j, i] = (hi - j) / (hi - ce)
    return out


def dft(name, x, axis, inverse=False, onesided=False, length=None, rtol=None, atol=None):
    args = {"axis": axis, "inverse": inverse, "onesided": onesided}
    if length is not None:
        args["dft_length"] = length
    c.add(name, "onnx_dft", [x], [dft_ref(x, axis, inverse, onesided, length)], rtol=rtol, atol=atol, **args)


# sums of n terms of magnitude ~1 cancel to near zero, so the absolute error scales with n * eps(f32)
dft("dft_real_axis1", np.arange(100, dtype=np.float32).reshape(1, 10, 10, 1) / 10, 1, atol=1e-4)
dft("dft_real_onesided_last_signal_axis", f32(2, 3, 8, 1), -2, onesided=True, atol=1e-5)
dft("dft_complex_inverse", f32(1, 6, 2, 2), 1, inverse=True, atol=1e-5)
dft("dft_complex_forward_axis2", f32(2, 3, 5, 2), 2, atol=1e-5)
dft("dft_zero_padded_length", f32(2, 5, 1), 1, length=8, atol=1e-5)
dft("dft_truncated_length_f64", r.standard_normal((3, 7, 2)), 1, length=4)


def stft(name, signal, step, window, length, onesided=True):
    args = {"frame_step": step, "onesided": onesided, "window": window is not None}
    if length is not None:
        args["frame_length"] = length
    inputs = [signal] + ([window] if window is not None else [])
    c.add(name, "onnx_stft", inputs, [stft_ref(signal, step, window, length, onesided)], atol=1e-5, **args)


hann = (0.5 - 0.5 * np.cos(2 * np.pi * np.arange(8) / 8)).astype(np.float32)
stft("stft_rectangular", f32(1, 32, 1), 4, None, 8)
stft("stft_hann_window_batch2", f32(2, 30, 1), 5, hann, None)
stft("stft_complex_two_sided", f32(1, 20, 2), 6, hann, 8, onesided=False)


def mel(name, bins, length, rate, lo, hi, dtype=np.float32):
    out = mel_weight_matrix(bins, length, rate, lo, hi).astype(dtype)
    c.add(name, "onnx_mel_weight_matrix", [], [out], num_mel_bins=bins, dft_length=length, sample_rate=rate, lower_edge_hertz=lo,
          upper_edge_hertz=hi, dtype=short(dtype))


mel("mel_weight_matrix_onnx_example", 8, 16, 8192, 0.0, 4096.0)
mel("mel_weight_matrix_speech_f64", 10, 64, 16000, 20.0, 7600.0, np.float64)


# ---------------------------------------------------------------------------------------------------
# pooling with ONNX's geometry: a loop over windows (checked against the 25 max and average pooling
# cases of the ONNX conformance data while it was written)


def pool_ref(x, kind, kernel, strides=None, pads=None, dilations=None, ceil=False, count_include_pad=False, p=2.0, storage_order=0):
    """ONNX pooling as a loop over windows; returns values (and, for 'max', the flat indices of the first maxima)."""
    m = len(kernel)
    sp = x.shape[2:]
    s = strides or [1] * m
    d = dilations or [1] * m
    pd = pads or [0] * (2 * m)
    out = []
    for i in range(m):
        eff = d[i] * (kernel[i] - 1) + 1
        span = sp[i] + pd[i] + pd[m + i]
        o = ((span - eff + (s[i] - 1 if ceil else 0)) // s[i]) + 1
        if ceil and (o - 1) * s[i] >= sp[i] + pd[i]:
            o -= 1
        out.append(o)
    vals = np.zeros(x.shape[:2] + tuple(out), np.float64 if kind != "max" else x.dtype)
    idx = np.zeros(x.shape[:2] + tuple(out), np.int64)
    for n, ch in itertools.product(range(x.shape[0]), range(x.shape[1])):
        for o in itertools.product(*[range(v) for v in out]):
            best, best_i, total, count = None, -1, 0.0, 0
            for k in itertools.product(*[range(v) for v in kernel]):
                coord = [o[i] * s[i] - pd[i] + k[i] * d[i] for i in range(m)]
                inside = all(0 <= coord[i] < sp[i] for i in range(m))
                in_pad = all(-pd[i] <= coord[i] < sp[i] + pd[m + i] for i in range(m))
                if count_include_pad and in_pad or inside:
                    count += 1
                if not inside:
                    continue
                v = x[(n, ch) + tuple(coord)]
                if kind == "max":
                    if best is None or v > best:
                        best = v
                        if storage_order == 0:
                            flat = int(np.ravel_multi_index(coord, sp))
                        else:
                            flat = int(np.ravel_multi_index(coord[::-1], sp[::-1]))
                        best_i = (n * x.shape[1] + ch) * int(np.prod(sp)) + flat
                elif kind == "avg":
                    total += float(v)
                else:
                    total += abs(float(v)) ** p
            if kind == "max":
                vals[(n, ch) + o] = best
                idx[(n, ch) + o] = best_i
            elif kind == "avg":
                vals[(n, ch) + o] = total / count
            else:
                vals[(n, ch) + o] = total ** (1 / p)
    if kind == "max":
        return vals, idx
    return vals.astype(x.dtype if x.dtype.kind == "f" else np.float32)


def pool(name, x, kind, kernel, strides=None, pads=None, dilations=None, ceil=False, count_include_pad=False, p=2.0, storage_order=0,
         indices=False):
    res = pool_ref(x, kind, kernel, strides, pads, dilations, ceil, count_include_pad, p, storage_order)
    args = {"kernel": kernel, "ceil_mode": ceil}
    for k, v in (("strides", strides), ("pads", pads), ("dilations", dilations)):
        if v is not None:
            args[k] = v
    if kind == "max":
        op, outs = ("onnx_max_pool_with_indices", list(res)) if indices else ("onnx_max_pool", [res[0]])
        if indices:
            args["storage_order"] = storage_order
    elif kind == "avg":
        op, outs = "onnx_avg_pool", [res]
        args["count_include_pad"] = count_include_pad
    else:
        op, outs = "onnx_lp_pool", [res]
        args["p"] = p
    c.add(name, op, [x], outs, **args)


pool("max_pool_asymmetric_pads", f32(1, 2, 5, 5), "max", [3, 3], [2, 2], [0, 1, 2, 1])
pool("max_pool_pads_larger_than_half_kernel", f32(1, 1, 4, 4), "max", [3, 3], None, [2, 2, 2, 2])
pool("max_pool_dilations_ceil", f32(2, 1, 7, 6), "max", [2, 3], [2, 2], None, [2, 1], ceil=True)
pool("max_pool_1d_int8", ints(-100, 100, (1, 3, 9), np.int8), "max", [3], [2], [1, 2])
pool("max_pool_3d", f32(1, 1, 4, 4, 3), "max", [2, 2, 2], [1, 2, 1], [0, 0, 1, 1, 1, 0])
pool("max_pool_indices_row_major_ties", ints(0, 3, (2, 2, 4, 5), np.int32).astype(np.float32), "max", [2, 3], [2, 1], [1, 0, 0, 1],
     indices=True)
pool("max_pool_indices_column_major", f32(1, 2, 5, 5), "max", [2, 2], [2, 2], indices=True, storage_order=1)
pool("max_pool_indices_3d_ceil", f32(1, 1, 3, 4, 5), "max", [2, 2, 2], [2, 2, 2], ceil=True, indices=True)
pool("avg_pool_asymmetric_pads_exclude", f32(1, 2, 5, 5), "avg", [3, 3], [2, 2], [0, 1, 2, 1])
pool("avg_pool_asymmetric_pads_include", f32(1, 2, 5, 5), "avg", [3, 3], [2, 2], [0, 1, 2, 1], count_include_pad=True)
pool("avg_pool_ceil_pads_include", f32(1, 1, 6, 6), "avg", [3, 3], [2, 2], [1, 1, 1, 1], ceil=True, count_include_pad=True)
pool("avg_pool_1d_dilations_int", ints(-9, 9, (2, 2, 8), np.int32), "avg", [3], [1], [2, 0], [2])
pool("avg_pool_3d_same_upper", f32(1, 1, 3, 4, 4), "avg", [2, 2, 2], None, [0, 0, 0, 1, 1, 1])
pool("lp_pool_p2_pads", f32(1, 2, 4, 5), "lp", [2, 2], [1, 2], [1, 0, 0, 1], p=2.0)
pool("lp_pool_p3_1d", f32(1, 1, 7), "lp", [3], [2], p=3.0)


# ---------------------------------------------------------------------------------------------------
# RoiAlign: ONNX Runtime's sampling as a loop (checked against the 2 conformance cases while written)


def _bilinear(h, w, y, x):
    """ONNX Runtime's RoiAlign taps: ((y, x, weight) x 4), all zero when the point is outside."""
    if y < -1.0 or y > h or x < -1.0 or x > w:
        return []
    y, x = max(y, 0.0), max(x, 0.0)
    yl, xl = int(y), int(x)
    if yl >= h - 1:
        yh = yl = h - 1
        y = float(yl)
    else:
        yh = yl + 1
    if xl >= w - 1:
        xh = xl = w - 1
        x = float(xl)
    else:
        xh = xl + 1
    ly, lx = y - yl, x - xl
    hy, hx = 1 - ly, 1 - lx
    return [(yl, xl, hy * hx), (yl, xh, hy * lx), (yh, xl, ly * hx), (yh, xh, ly * lx)]


def roi_align_ref(x, rois, batch, mode="avg", oh=1, ow=1, sr=0, scale=1.0, transform="half_pixel"):
    R = rois.shape[0]
    _, C, H, W = x.shape
    out = np.zeros((R, C, oh, ow))
    off = 0.5 if transform == "half_pixel" else 0.0
    for r in range(R):
        img = x[int(batch[r])].astype(np.float64)
        x1, y1, x2, y2 = [float(v) * scale - off for v in rois[r]]
        rw, rh = x2 - x1, y2 - y1
        if transform == "output_half_pixel":
            rw, rh = max(rw, 1.0), max(rh, 1.0)
        bh, bw = rh / oh, rw / ow
        gh = sr if sr > 0 else math.ceil(rh / oh)
        gw = sr if sr > 0 else math.ceil(rw / ow)
        for ph in range(oh):
            for pw in range(ow):
                acc = np.zeros(C)
                best = None
                for iy in range(gh):
                    yy = y1 + ph * bh + (iy + 0.5) * bh / gh
                    for ix in range(gw):
                        xx = x1 + pw * bw + (ix + 0.5) * bw / gw
                        taps = _bilinear(H, W, yy, xx)
                        terms = [wt * img[:, a, b] for a, b, wt in taps] or [np.zeros(C)] * 4
                        if mode == "avg":
                            acc += sum(terms)
                        else:
                            v = np.max(np.stack(terms), axis=0)
                            best = v if best is None else np.maximum(best, v)
                out[r, :, ph, pw] = acc / max(gh * gw, 1) if mode == "avg" else best
    return out.astype(x.dtype)


def roi_align(name, x, rois, batch, mode, oh, ow, sr, scale, transform):
    out = roi_align_ref(x, rois, batch, mode, oh, ow, sr, scale, transform)
    c.add(name, "onnx_roi_align", [x, rois, batch], [out], mode=mode, output_height=oh, output_width=ow, sampling_ratio=sr,
          spatial_scale=scale, transform=transform)


boxes = np.array([[0, 0, 5, 5], [1.5, 0.5, 4.2, 6.3], [-2, 3, 9, 12], [5.5, 6.5, 6, 7]], np.float32)
roi_align("roi_align_avg_half_pixel", f32(2, 2, 8, 7), boxes, np.array([0, 1, 1, 0]), "avg", 3, 2, 2, 1.0, "half_pixel")
roi_align("roi_align_avg_output_half_pixel_scale", f32(1, 3, 6, 6), boxes * 2, np.array([0, 0, 0, 0], np.int32), "avg", 2, 2, 3, 0.5,
          "output_half_pixel")
roi_align("roi_align_max", f32(2, 1, 7, 8), boxes, np.array([1, 0, 1, 1]), "max", 2, 3, 2, 1.0, "half_pixel")


# ---------------------------------------------------------------------------------------------------
# TfIdfVectorizer: n-gram counting as a loop (checked against the 6 conformance cases while written)


def tfidf_ref(x, min_gram, max_gram, max_skip, mode, pool, counts, indexes, weights=None):
    levels = []
    for n in range(1, len(counts) + 1):
        end = counts[n] if n < len(counts) else len(pool)
        levels.append([tuple(pool[i:i + n]) for i in range(counts[n - 1], end, n)])
    flat = [g for lv in levels for g in lv]
    rows = x.reshape(1, -1) if x.ndim == 1 else x
    out = np.zeros((rows.shape[0], max(indexes) + 1), np.float32)
    for r, seq in enumerate(rows):
        seq = [int(v) for v in seq]
        cnt = np.zeros(len(flat))
        for k, g in enumerate(flat):
            n = len(g)
            if not min_gram <= n <= max_gram:
                continue
            for skip in range(0, (max_skip if n > 1 else 0) + 1):
                step = skip + 1
                for s in range(len(seq) - (n - 1) * step):
                    if tuple(seq[s + j * step] for j in range(n)) == g:
                        cnt[k] += 1
        for k in range(len(flat)):
            w = 1.0 if weights is None else weights[k]
            v = cnt[k] if mode == "TF" else (w if cnt[k] > 0 else 0.0) if mode == "IDF" else cnt[k] * w
            out[r, indexes[k]] += v
    return out if x.ndim == 2 else out[0]


def tfidf(name, x, min_gram, max_gram, max_skip, mode, pool, counts, indexes, weights=None):
    out = tfidf_ref(x, min_gram, max_gram, max_skip, mode, pool, counts, indexes, weights)
    args = dict(min_gram=min_gram, max_gram=max_gram, max_skip=max_skip, mode=mode, pool=pool, ngram_counts=counts, ngram_indexes=indexes)
    if weights is not None:
        args["weights"] = weights
    c.add(name, "onnx_tfidf_vectorizer", [x], [out], **args)


POOL = [2, 3, 5, 4, 5, 6, 7, 8, 6, 7]
SEQ = np.array([1, 1, 3, 3, 3, 7, 8, 6, 7, 5, 6, 8])
tfidf("tfidf_tf_uni_and_bigrams_skip5", SEQ, 1, 2, 5, "TF", POOL, [0, 4], list(range(7)))
tfidf("tfidf_tf_batch_bigrams_skip0_i32", SEQ.reshape(2, 6).astype(np.int32), 2, 2, 0, "TF", POOL, [0, 4], list(range(7)))
tfidf("tfidf_idf_weights_permuted_indexes", SEQ.reshape(2, 6), 1, 2, 2, "IDF", POOL, [0, 4], [6, 0, 5, 1, 4, 2, 3],
      [0.5, 1.5, 2.0, 2.5, 3.0, 0.25, 4.0])
tfidf("tfidf_tfidf_trigrams", np.array([[1, 2, 3, 1, 2, 3, 1, 9], [3, 1, 2, 2, 3, 1, 1, 2]]), 2, 3, 1, "TFIDF", [1, 2, 3, 1, 2, 3, 1, 3, 1, 2],
      [0, 0, 4], [0, 1, 2, 3], [1.0, 2.0, 0.5, 3.0])
tfidf("tfidf_idf_no_weights_empty_level", SEQ, 2, 2, 0, "IDF", [5, 6, 7, 8, 6, 7], [0, 0], [0, 1, 2])


# ---------------------------------------------------------------------------------------------------
# half precision, empty axes and non-contiguous inputs across the families above

F16 = np.float16
gather_elements("gather_elements_f16", f32(3, 4).astype(F16), 1, ints(-4, 4, (3, 2)))
gather_elements("gather_elements_empty_indices", f32(3, 4), 0, np.zeros((0, 4), np.int64))
gather_nd("gather_nd_empty_indices", f32(3, 4), np.zeros((0, 2), np.int64))
scatter_elements("scatter_elements_empty_indices", f32(2, 3), 1, np.zeros((2, 0), np.int64), np.zeros((2, 0), np.float32), "add")
scatter_elements("scatter_elements_f16_max", f32(3, 3).astype(F16), 1, np.array([[0, 0], [2, 1], [1, 1]]), f32(3, 2).astype(F16), "max")
one_hot("one_hot_empty_indices", np.zeros((0, 2), np.int64), 3, -1, np.array([0, 1], np.float32))
hardmax("hardmax_f16", f32(2, 5).astype(F16), -1)
cumsum("cumsum_empty_axis", np.zeros((0, 3), np.float32), 0, True, False)
cumsum("cumsum_f16", (f32(6) * 4).astype(F16), 0, False, False)
lrn("lrn_f16", f32(1, 4, 2, 2).astype(F16), 3)
resize("resize_linear_f16", f32(1, 1, 3, 3).astype(F16), [1, 1, 5, 4], None, "linear", "half_pixel")
resize("resize_nearest_empty_batch", np.zeros((0, 2, 2, 2), np.float32), [0, 2, 4, 3], None, "nearest", "asymmetric", "floor")
quantize("quantize_f16_input", (f32(2, 3) * 20).astype(F16), np.array(0.5, np.float32), np.array(10, np.uint8))
sce("sce_f16", f32(3, 4).astype(F16), ints(0, 4, (3,)), None, "mean")


def det_t(name, x):
    out = np.linalg.det(np.swapaxes(x, -1, -2).astype(np.float64)).astype(np.float32)
    c.add(name, "onnx_det", [x], [out], pre="transpose")


det_t("det_transposed_input", f32(2, 4, 4))

c.write()

"""Golden cases for normalisation layers and the embedding lookup (group "norms").

Expectations come from PyTorch 1.13 in float64 (rms_norm, which 1.13 lacks, from NumPy), computed
from the same rounded inputs and cast to the output dtype. Half-precision cases compute in f32 on the
reference side too (PyTorch's CPU norms do not take f16) and round the result to f16.

Arg "t": indices of inputs stored with their last two axes swapped; the Java side swaps them back,
so the op sees a non-contiguous view.
"""
import numpy as np
import torch
import torch.nn.functional as F

from golden import Cases, rng

R = rng(11)
c = Cases("norms")


def randn(*shape, dtype=np.float32):
    return R.standard_normal(shape).astype(dtype)


def t64(a):
    return torch.from_numpy(np.asarray(a, dtype=np.float64))


def out(y, dtype):
    return y.numpy().astype(dtype)


def T(a):
    return np.ascontiguousarray(np.swapaxes(a, -1, -2))


def optional(x, *params):
    """Inputs list: x then the non-None params; flags say which were given."""
    return [x] + [p for p in params if p is not None]


# ---------------------------------------------------------------- batch_norm (inference)
def batch_norm(name, shape, weight=True, bias=True, eps=1e-5, dtype=np.float32, t=False):
    C = shape[1]
    x = randn(*shape, dtype=dtype) * 2 + 0.5
    mean = randn(C, dtype=dtype)
    var = (R.random(C) * 2 + 0.1).astype(dtype)
    w = randn(C, dtype=dtype) if weight else None
    b = randn(C, dtype=dtype) if bias else None
    y = F.batch_norm(t64(x), t64(mean), t64(var), None if w is None else t64(w), None if b is None else t64(b),
                     training=False, eps=eps)
    inputs = [T(x) if t else x, mean, var] + [p for p in (w, b) if p is not None]
    c.add(name, "batch_norm", inputs, out(y, dtype), eps=eps, weight=weight, bias=bias, t=[0] if t else [])


batch_norm("bn_3d", (2, 3, 4))
batch_norm("bn_4d_no_affine", (2, 3, 2, 2), weight=False, bias=False, eps=1e-3)
batch_norm("bn_2d_weight_only", (4, 3), bias=False)
batch_norm("bn_bias_only", (2, 2, 3), weight=False)
batch_norm("bn_one_channel", (3, 1, 5))
batch_norm("bn_f16", (2, 3, 4), dtype=np.float16)
batch_norm("bn_transposed", (2, 3, 4), t=True)


# ---------------------------------------------------------------- batch_norm (training statistics)
def batch_norm_training(name, shape, weight=True, bias=True, eps=1e-5, t=False):
    C = shape[1]
    x = randn(*shape) * 3 - 1
    w = randn(C) if weight else None
    b = randn(C) if bias else None
    y = F.batch_norm(t64(x), None, None, None if w is None else t64(w), None if b is None else t64(b),
                     training=True, eps=eps)
    inputs = [T(x) if t else x] + [p for p in (w, b) if p is not None]
    c.add(name, "batch_norm_training", inputs, out(y, np.float32), eps=eps, weight=weight, bias=bias, t=[0] if t else [])


batch_norm_training("bnt_2d", (4, 3))
batch_norm_training("bnt_3d", (2, 3, 4))
batch_norm_training("bnt_4d_no_affine", (2, 2, 2, 3), weight=False, bias=False)
batch_norm_training("bnt_single_sample", (1, 2, 5), eps=1e-3)
batch_norm_training("bnt_bias_only", (3, 2, 2), weight=False)
batch_norm_training("bnt_transposed", (2, 3, 4), t=True)


# ---------------------------------------------------------------- layer_norm
def layer_norm(name, shape, ns, weight=True, bias=True, eps=1e-5, dtype=np.float32, t=False):
    x = randn(*shape, dtype=dtype) * 2 + 1
    w = randn(*ns, dtype=dtype) if weight else None
    b = randn(*ns, dtype=dtype) if bias else None
    y = F.layer_norm(t64(x), ns, None if w is None else t64(w), None if b is None else t64(b), eps=eps)
    inputs = [T(x) if t else x] + [p for p in (w, b) if p is not None]
    c.add(name, "layer_norm", inputs, out(y, dtype), normalized_shape=list(ns), eps=eps, weight=weight, bias=bias,
          t=[0] if t else [])


layer_norm("ln_last", (2, 3, 4), [4])
layer_norm("ln_last_two", (2, 3, 4), [3, 4])
layer_norm("ln_no_affine", (3, 5), [5], weight=False, bias=False)
layer_norm("ln_weight_only", (2, 6), [6], bias=False, eps=1e-2)
layer_norm("ln_1d", (5,), [5])
layer_norm("ln_size1_axis", (3, 1), [1])
layer_norm("ln_all_axes", (2, 3), [2, 3])
layer_norm("ln_f16", (2, 8), [8], dtype=np.float16)
layer_norm("ln_f64", (2, 5), [5], dtype=np.float64)
layer_norm("ln_transposed", (2, 3, 4), [4], t=True)


# ---------------------------------------------------------------- group_norm
def group_norm(name, shape, groups, affine=True, eps=1e-5, dtype=np.float32, t=False):
    C = shape[1]
    x = randn(*shape, dtype=dtype) + 0.3
    w = randn(C, dtype=dtype) if affine else None
    b = randn(C, dtype=dtype) if affine else None
    y = F.group_norm(t64(x), groups, None if w is None else t64(w), None if b is None else t64(b), eps=eps)
    inputs = [T(x) if t else x] + [p for p in (w, b) if p is not None]
    c.add(name, "group_norm", inputs, out(y, dtype), groups=groups, eps=eps, weight=affine, bias=affine, t=[0] if t else [])


group_norm("gn_two_groups", (2, 4, 3), 2)
group_norm("gn_one_group", (2, 4, 3), 1)
group_norm("gn_group_per_channel", (2, 4, 3), 4)
group_norm("gn_4d_no_affine", (2, 6, 2, 2), 3, affine=False)
group_norm("gn_2d_input", (3, 4), 2)
group_norm("gn_f16", (1, 4, 5), 2, dtype=np.float16)
group_norm("gn_transposed", (2, 4, 2, 3), 2, t=True)


# ---------------------------------------------------------------- instance_norm
def instance_norm(name, shape, affine=True, eps=1e-5, t=False):
    C = shape[1]
    x = randn(*shape) * 2
    w = randn(C) if affine else None
    b = randn(C) if affine else None
    y = F.instance_norm(t64(x), weight=None if w is None else t64(w), bias=None if b is None else t64(b), eps=eps)
    inputs = [T(x) if t else x] + [p for p in (w, b) if p is not None]
    c.add(name, "instance_norm", inputs, out(y, np.float32), eps=eps, weight=affine, bias=affine, t=[0] if t else [])


instance_norm("in_1d", (2, 3, 5))
instance_norm("in_2d_no_affine", (2, 2, 3, 3), affine=False)
instance_norm("in_3d", (1, 2, 2, 2, 2), eps=1e-3)
instance_norm("in_transposed", (2, 3, 2, 4), t=True)


# ---------------------------------------------------------------- rms_norm (NumPy: torch 1.13 has none)
def rms_norm(name, shape, ns, weight=True, eps=1e-6, dtype=np.float32, t=False):
    x = randn(*shape, dtype=dtype) * 2
    w = randn(*ns, dtype=dtype) if weight else None
    axes = tuple(range(len(shape) - len(ns), len(shape)))
    x64 = x.astype(np.float64)
    y = x64 / np.sqrt(np.mean(x64 * x64, axis=axes, keepdims=True) + eps)
    if w is not None:
        y = y * w.astype(np.float64)
    inputs = [T(x) if t else x] + ([w] if w is not None else [])
    c.add(name, "rms_norm", inputs, y.astype(dtype), normalized_shape=list(ns), eps=eps, weight=weight, t=[0] if t else [])


rms_norm("rms_last", (2, 3, 4), [4])
rms_norm("rms_no_weight", (3, 5), [5], weight=False)
rms_norm("rms_last_two", (2, 3, 4), [3, 4], eps=1e-2)
rms_norm("rms_1d", (6,), [6])
rms_norm("rms_f16", (2, 8), [8], dtype=np.float16)
rms_norm("rms_transposed", (2, 4, 3), [3], t=True)


# ---------------------------------------------------------------- embedding
def embedding(name, idx, num, dim, wdtype=np.float32, t=False):
    idx = np.asarray(idx)
    if np.issubdtype(wdtype, np.floating):
        w = randn(num, dim, dtype=wdtype)
    else:
        w = R.integers(-50, 50, size=(num, dim)).astype(wdtype)
    y = F.embedding(torch.from_numpy(idx.astype(np.int64)), torch.from_numpy(w.astype(np.float64))).numpy().astype(wdtype)
    c.add(name, "embedding", [idx, T(w) if t else w], y, t=[1] if t else [])


embedding("emb_1d", np.array([0, 5, 2, 2, 1], dtype=np.int64), 6, 3)
embedding("emb_2d_i32", np.array([[1, 0, 3], [3, 3, 2]], dtype=np.int32), 4, 5)
embedding("emb_scalar_index", np.array(2, dtype=np.int64), 3, 4)
embedding("emb_empty", np.zeros((0,), dtype=np.int64), 3, 2)
embedding("emb_f16", np.array([[0, 1], [2, 0]], dtype=np.int64), 3, 4, wdtype=np.float16)
embedding("emb_i32_weight", np.array([4, 0, 1], dtype=np.int64), 5, 2, wdtype=np.int32)
embedding("emb_transposed_weight", np.array([1, 2, 0, 2], dtype=np.int64), 3, 4, t=True)

c.write()

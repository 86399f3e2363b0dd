"""Golden cases for attention, rotary embeddings and interpolation (group "attention").

scaled_dot_product_attention: PyTorch 1.13 has no F.scaled_dot_product_attention, so the expectation
is PyTorch 2's definition written out in NumPy float64 (softmax(q k^T * scale + bias) v, bool masks
keep true positions, causal = tril aligned top-left). Rotary embeddings are written out in NumPy
(rotate_half for GPT-NeoX/Llama, rotate_every_two for GPT-J). Interpolation comes from PyTorch's
F.interpolate; half and integer inputs, which its CPU kernels reject, go through f32 and are rounded.

Arg "t": indices of inputs stored with their last two axes swapped; the Java side swaps them back,
so the op sees a non-contiguous view.
"""
import numpy as np
import torch
import torch.nn.functional as F

from golden import Cases, rng

R = rng(23)
c = Cases("attention")


def randn(*shape, dtype=np.float32):
    return R.standard_normal(shape).astype(dtype)


def T(a):
    return np.ascontiguousarray(np.swapaxes(a, -1, -2))


# ---------------------------------------------------------------- scaled_dot_product_attention
def sdpa_ref(q, k, v, mask=None, causal=False, scale=None):
    q, k, v = (a.astype(np.float64) for a in (q, k, v))
    L, S = q.shape[-2], k.shape[-2]
    scale = 1 / np.sqrt(q.shape[-1]) if scale is None else scale
    s = q @ np.swapaxes(k, -1, -2) * scale
    if mask is not None:
        s = np.where(mask, s, -np.inf) if mask.dtype == np.bool_ else s + mask.astype(np.float64)
    if causal:
        s = np.where(np.tril(np.ones((L, S), dtype=bool)), s, -np.inf)
    s = s - s.max(axis=-1, keepdims=True)
    e = np.exp(s)
    return (e / e.sum(axis=-1, keepdims=True)) @ v


def bool_mask(shape):
    m = R.random(shape) < 0.6
    m[..., 0] = True  # every query keeps one key: no all-masked rows
    return m


def sdpa(name, qs, ks, vs, mask=None, causal=False, scale=None, dtype=np.float32, t=()):
    q, k, v = randn(*qs, dtype=dtype), randn(*ks, dtype=dtype), randn(*vs, dtype=dtype)
    y = sdpa_ref(q, k, v, mask, causal, scale).astype(dtype)
    inputs = [q, k, v] + ([mask] if mask is not None else [])
    inputs = [T(a) if i in t else a for i, a in enumerate(inputs)]
    args = dict(mask=mask is not None, causal=causal, t=list(t))
    if scale is not None:
        args["scale"] = scale
    c.add(name, "scaled_dot_product_attention", inputs, y, **args)


sdpa("sdpa_2d", (3, 4), (5, 4), (5, 6))
sdpa("sdpa_batched", (2, 3, 4), (2, 5, 4), (2, 5, 2))
sdpa("sdpa_multi_head", (2, 2, 3, 8), (2, 2, 4, 8), (2, 2, 4, 8))
sdpa("sdpa_single_query", (2, 1, 4), (2, 6, 4), (2, 6, 3))
sdpa("sdpa_bool_mask", (2, 3, 4), (2, 5, 4), (2, 5, 4), mask=bool_mask((3, 5)))
sdpa("sdpa_key_padding_mask", (2, 2, 3, 4), (2, 2, 4, 4), (2, 2, 4, 4), mask=bool_mask((2, 1, 1, 4)))
sdpa("sdpa_additive_mask", (2, 2, 3, 4), (2, 2, 5, 4), (2, 2, 5, 4), mask=randn(2, 1, 3, 5) * 2)
sdpa("sdpa_additive_mask_inf", (3, 4), (4, 4), (4, 2),
     mask=np.array([[0, -np.inf, 0, 1], [0.5, 0, -np.inf, -np.inf], [0, 0, 0, -2]], dtype=np.float32))
sdpa("sdpa_causal", (2, 4, 4), (2, 4, 4), (2, 4, 3), causal=True)
sdpa("sdpa_causal_wide", (1, 2, 3, 4), (1, 2, 5, 4), (1, 2, 5, 4), causal=True)
sdpa("sdpa_causal_tall", (5, 4), (3, 4), (3, 2), causal=True)
sdpa("sdpa_causal_and_mask", (2, 4, 4), (2, 4, 4), (2, 4, 4), mask=bool_mask((2, 1, 4)), causal=True)
sdpa("sdpa_scale", (2, 3, 4), (2, 5, 4), (2, 5, 4), scale=0.25)
sdpa("sdpa_broadcast_batch", (2, 2, 3, 4), (1, 2, 5, 4), (2, 1, 5, 3))
sdpa("sdpa_transposed_k", (2, 3, 4), (2, 5, 4), (2, 5, 4), t=(1,))
sdpa("sdpa_f16", (2, 3, 8), (2, 4, 8), (2, 4, 8), dtype=np.float16)


# ---------------------------------------------------------------- rotary embeddings
def tables(seq, dim, base):
    inv = base ** (-np.arange(0, dim, 2, dtype=np.float64) / dim)
    freqs = np.outer(np.arange(seq, dtype=np.float64), inv)
    return np.cos(freqs), np.sin(freqs)  # (seq, dim/2): one angle per pair


def rotate_half(x):
    h = x.shape[-1] // 2
    return np.concatenate([-x[..., h:], x[..., :h]], axis=-1)


def rotate_every_two(x):
    return np.stack([-x[..., 1::2], x[..., ::2]], axis=-1).reshape(x.shape)


def rotary(name, xs, seq_axis, interleaved, half=False, dtype=np.float32, tdtype=np.float32, t=False, base=10000.0):
    seq, dim = xs[seq_axis], xs[-1]
    ch, sh = tables(seq, dim, base)
    if interleaved:
        cf, sf = np.repeat(ch, 2, axis=-1), np.repeat(sh, 2, axis=-1)
    else:
        cf, sf = np.concatenate([ch, ch], -1), np.concatenate([sh, sh], -1)
    cos, sin = (ch, sh) if half else (cf, sf)
    # tables broadcast over the axes after seq (e.g. heads in a (batch, seq, heads, dim) layout)
    extra = len(xs) - 1 - (seq_axis % len(xs)) - 1
    bshape = (seq,) + (1,) * extra
    cos, sin = cos.reshape(bshape + (-1,)).astype(tdtype), sin.reshape(bshape + (-1,)).astype(tdtype)
    cf, sf = cf.reshape(bshape + (-1,)).astype(tdtype), sf.reshape(bshape + (-1,)).astype(tdtype)
    x = randn(*xs, dtype=dtype)
    x64 = x.astype(np.float64)
    rot = rotate_every_two(x64) if interleaved else rotate_half(x64)
    y = x64 * cf.astype(np.float64) + rot * sf.astype(np.float64)
    out_dtype = np.result_type(dtype, tdtype)
    c.add(name, "rotary_embedding", [T(x) if t else x, cos, sin], y.astype(out_dtype), interleaved=interleaved,
          t=[0] if t else [])


rotary("rope_neox", (1, 2, 4, 8), -2, False)
rotary("rope_gptj", (2, 3, 6), -2, True)
rotary("rope_neox_half_table", (2, 4, 8), -2, False, half=True)
rotary("rope_gptj_half_table", (1, 3, 6), -2, True, half=True)
rotary("rope_seq_before_heads", (2, 4, 2, 8), 1, False)
rotary("rope_gptj_seq_before_heads", (1, 3, 2, 4), 1, True, base=500.0)
rotary("rope_dim2", (3, 2), -2, False)
rotary("rope_f16", (2, 3, 4), -2, False, dtype=np.float16, tdtype=np.float16)
rotary("rope_transposed", (2, 5, 4), -2, False, t=True)


def rotary_tables(name, seq, dim, base):
    ch, sh = tables(seq, dim, base)
    c.add(name, "rotary_tables", [], [np.concatenate([ch, ch], -1).astype(np.float32),
                                      np.concatenate([sh, sh], -1).astype(np.float32)],
          seq_len=seq, dim=dim, base=base)


rotary_tables("tables_llama", 6, 8, 10000.0)
rotary_tables("tables_small_base", 5, 4, 500.0)
rotary_tables("tables_dim2", 3, 2, 10000.0)
rotary_tables("tables_long", 40, 4, 10000.0)
rotary_tables("tables_empty", 0, 4, 10000.0)


# ---------------------------------------------------------------- interpolate
def interpolate(name, shape, size, mode, align=False, dtype=np.float32, t=False):
    if np.issubdtype(dtype, np.integer):
        x = R.integers(-20, 20, size=shape).astype(dtype)
    else:
        x = randn(*shape, dtype=dtype)
    kw = {} if mode == "nearest" else {"align_corners": align}
    tmode = mode if mode == "nearest" else {3: "linear", 4: "bilinear", 5: "trilinear"}[len(shape)]
    y = F.interpolate(torch.from_numpy(x.astype(np.float32)), size=tuple(size), mode=tmode, **kw).numpy()
    out_dtype = dtype if mode == "nearest" or np.issubdtype(dtype, np.floating) else np.float32
    c.add(name, "interpolate_" + mode, [T(x) if t else x], y.astype(out_dtype), size=list(size), align_corners=align,
          t=[0] if t else [])


interpolate("nearest_1d_up", (1, 2, 3), [7], "nearest")
interpolate("nearest_1d_down", (2, 1, 7), [3], "nearest")
interpolate("nearest_1d_float_rounding", (1, 1, 26), [22], "nearest")  # f32 scale picks 12 for dst 11, not 13
interpolate("nearest_1d_to_one", (1, 1, 5), [1], "nearest")
interpolate("nearest_2d", (1, 2, 3, 4), [5, 3], "nearest")
interpolate("nearest_2d_same_size", (1, 1, 3, 2), [3, 2], "nearest")
interpolate("nearest_3d", (1, 1, 2, 3, 2), [3, 2, 4], "nearest")
interpolate("nearest_i32", (1, 2, 4), [6], "nearest", dtype=np.int32)
interpolate("nearest_f16", (1, 1, 2, 3), [4, 5], "nearest", dtype=np.float16)
interpolate("nearest_transposed", (1, 2, 4, 3), [3, 5], "nearest", t=True)

for align in (False, True):
    tag = "align" if align else "half_pixel"
    interpolate(f"linear_1d_up_{tag}", (1, 2, 4), [7], "linear", align)
    interpolate(f"linear_1d_down_{tag}", (2, 1, 9), [4], "linear", align)
    interpolate(f"linear_1d_to_one_{tag}", (1, 1, 4), [1], "linear", align)
    interpolate(f"linear_1d_from_one_{tag}", (1, 1, 1), [3], "linear", align)
    interpolate(f"linear_2d_up_{tag}", (1, 2, 3, 4), [5, 6], "linear", align)
    interpolate(f"linear_2d_mixed_{tag}", (1, 1, 6, 3), [4, 5], "linear", align)
    interpolate(f"linear_3d_{tag}", (1, 1, 2, 3, 2), [3, 4, 3], "linear", align)
interpolate("linear_2d_same_size", (1, 1, 3, 4), [3, 4], "linear", True)
interpolate("linear_i32_input", (1, 1, 4), [6], "linear", dtype=np.int32)
interpolate("linear_f16", (1, 1, 3, 3), [5, 4], "linear", dtype=np.float16)
interpolate("linear_transposed", (1, 2, 3, 4), [4, 2], "linear", t=True)

c.write()

"""Golden cases for convolution and transposed convolution (torch.nn.functional; NumPy for the
n-dimensional ops torch lacks)."""
import itertools

import numpy as np
import torch
import torch.nn.functional as F

from golden import Cases, rng

c = Cases("conv")
r = rng(11)


def randn(*shape):
    return r.standard_normal(shape).astype(np.float32)


def t(a):
    return torch.from_numpy(np.ascontiguousarray(a))


def conv_case(name, op, fn, x, w, b=None, pre=None, **args):
    """fn is torch's function; args are passed to it and recorded (torch names -> Kiln names)."""
    targs = {k: v for k, v in args.items()}
    out = fn(t(x), t(w), None if b is None else t(b), **targs).numpy()
    rec = {("outputPadding" if k == "output_padding" else k): (list(v) if isinstance(v, tuple) else v) for k, v in args.items()}
    inputs = [x, w] + ([] if b is None else [b])
    if pre == "transpose":
        inputs[0] = np.ascontiguousarray(np.swapaxes(x, -1, -2))
        rec["pre"] = "transpose"
    c.add(name, op, inputs, [out], **rec)


# ---------------------------------------------------------------- conv1d
conv_case("conv1d_basic", "conv1d", F.conv1d, randn(2, 3, 10), randn(4, 3, 3), randn(4))
conv_case("conv1d_nobias", "conv1d", F.conv1d, randn(2, 3, 7), randn(2, 3, 2))
conv_case("conv1d_stride_pad", "conv1d", F.conv1d, randn(2, 2, 9), randn(3, 2, 3), randn(3), stride=(2,), padding=(1,))
conv_case("conv1d_dilation", "conv1d", F.conv1d, randn(1, 2, 10), randn(2, 2, 3), randn(2), stride=(3,), padding=(2,), dilation=(2,))
conv_case("conv1d_groups", "conv1d", F.conv1d, randn(2, 4, 8), randn(6, 2, 3), randn(6), padding=(1,), groups=2)
conv_case("conv1d_depthwise", "conv1d", F.conv1d, randn(2, 3, 8), randn(3, 1, 4), randn(3), stride=(2,), groups=3)
conv_case("conv1d_stride_gt_kernel", "conv1d", F.conv1d, randn(1, 1, 10), randn(2, 1, 1), None, stride=(4,))
conv_case("conv1d_kernel_eq_input", "conv1d", F.conv1d, randn(2, 2, 5), randn(3, 2, 5), randn(3))
conv_case("conv1d_len1", "conv1d", F.conv1d, randn(2, 3, 1), randn(2, 3, 1), randn(2))
conv_case("conv1d_batch0", "conv1d", F.conv1d, randn(0, 2, 6), randn(3, 2, 3), randn(3), padding=(1,))
conv_case("conv1d_f64", "conv1d", F.conv1d, randn(2, 2, 6).astype(np.float64), randn(3, 2, 3).astype(np.float64),
          randn(3).astype(np.float64), stride=(2,), padding=(1,))

# ---------------------------------------------------------------- conv2d
conv_case("conv2d_basic", "conv2d", F.conv2d, randn(2, 3, 6, 6), randn(4, 3, 3, 3), randn(4))
conv_case("conv2d_nonsquare", "conv2d", F.conv2d, randn(2, 2, 7, 5), randn(3, 2, 3, 2), randn(3), stride=(2, 1), padding=(1, 0))
conv_case("conv2d_dilation", "conv2d", F.conv2d, randn(1, 2, 9, 8), randn(2, 2, 3, 2), None, stride=(1, 2), padding=(2, 1), dilation=(2, 3))
conv_case("conv2d_groups", "conv2d", F.conv2d, randn(2, 4, 5, 5), randn(4, 2, 2, 2), randn(4), stride=(1, 1), padding=(1, 1), groups=2)
conv_case("conv2d_depthwise", "conv2d", F.conv2d, randn(2, 4, 6, 6), randn(8, 1, 3, 3), randn(8), stride=(2, 2), padding=(1, 1), groups=4)
conv_case("conv2d_stride_gt_kernel", "conv2d", F.conv2d, randn(1, 2, 9, 9), randn(2, 2, 2, 2), randn(2), stride=(4, 3))
conv_case("conv2d_1x1", "conv2d", F.conv2d, randn(2, 4, 3, 3), randn(2, 4, 1, 1), randn(2))
conv_case("conv2d_transposed_input", "conv2d", F.conv2d, randn(2, 2, 5, 6), randn(3, 2, 2, 3), randn(3), pre="transpose", padding=(1, 1))
# integers: exact, computed in float64 and cast back
xi = r.integers(-5, 6, (2, 2, 5, 5)).astype(np.int32)
wi = r.integers(-3, 4, (3, 2, 2, 2)).astype(np.int32)
c.add("conv2d_i32", "conv2d", [xi, wi],
      [F.conv2d(t(xi.astype(np.float64)), t(wi.astype(np.float64)), stride=1, padding=1).numpy().astype(np.int32)], stride=[1, 1], padding=[1, 1])
# f16: positive data; Kiln rounds each product to f16 before the f32 sum, so allow a few f16 ulps
xh = r.uniform(0, 1, (1, 2, 5, 5)).astype(np.float16)
wh = r.uniform(0, 1, (2, 2, 3, 3)).astype(np.float16)
c.add("conv2d_f16", "conv2d", [xh, wh], [F.conv2d(t(xh.astype(np.float32)), t(wh.astype(np.float32))).numpy().astype(np.float16)], rtol=3e-3)

# ---------------------------------------------------------------- conv3d
conv_case("conv3d_basic", "conv3d", F.conv3d, randn(2, 2, 4, 4, 4), randn(3, 2, 2, 2, 2), randn(3))
conv_case("conv3d_params", "conv3d", F.conv3d, randn(1, 2, 5, 6, 4), randn(4, 1, 3, 2, 2), randn(4),
          stride=(2, 1, 2), padding=(1, 0, 1), dilation=(1, 2, 1), groups=2)
conv_case("conv3d_depthwise", "conv3d", F.conv3d, randn(2, 3, 3, 4, 4), randn(3, 1, 1, 2, 3), None, stride=(1, 2, 1), groups=3)


# ---------------------------------------------------------------- general n-d conv (NumPy reference, 4 spatial axes)
def np_conv(x, w, b, stride, padding, dilation, groups):
    nsp = x.ndim - 2
    x = np.pad(x.astype(np.float64), [(0, 0), (0, 0)] + [(p, p) for p in padding])
    n, cin = x.shape[:2]
    f, cg = w.shape[:2]
    k = w.shape[2:]
    outs = [(x.shape[2 + i] - dilation[i] * (k[i] - 1) - 1) // stride[i] + 1 for i in range(nsp)]
    y = np.zeros((n, f) + tuple(outs))
    fg = f // groups
    for o in itertools.product(*[range(v) for v in outs]):
        for kk in itertools.product(*[range(v) for v in k]):
            idx = tuple(o[i] * stride[i] + kk[i] * dilation[i] for i in range(nsp))
            xv = x[(slice(None), slice(None)) + idx]  # (n, cin)
            for g in range(groups):
                y[(slice(None), slice(g * fg, (g + 1) * fg)) + o] += xv[:, g * cg:(g + 1) * cg] @ w[(slice(g * fg, (g + 1) * fg), slice(None)) + kk].T
    if b is not None:
        y += b.reshape((1, f) + (1,) * nsp)
    return y.astype(np.float32)


x4, w4, b4 = randn(2, 2, 3, 4, 3, 3), randn(4, 1, 2, 2, 1, 2), randn(4)
c.add("conv_4d", "conv", [x4, w4, b4], [np_conv(x4, w4, b4, (1, 2, 1, 1), (0, 1, 0, 1), (1, 1, 1, 2), 2)],
      stride=[1, 2, 1, 1], padding=[0, 1, 0, 1], dilation=[1, 1, 1, 2], groups=2)
x1, w1 = randn(2, 3, 8), randn(2, 3, 3)
c.add("conv_1d_nobias", "conv", [x1, w1], [np_conv(x1, w1, None, (2,), (1,), (1,), 1)], stride=[2], padding=[1])
x2, w2, b2 = randn(1, 2, 5, 6), randn(2, 2, 2, 3), randn(2)
c.add("conv_2d_scalar_params", "conv", [x2, w2, b2], [np_conv(x2, w2, b2, (2, 2), (1, 1), (1, 1), 1)], stride=[2], padding=[1])

# ---------------------------------------------------------------- transposed convolution
conv_case("conv_transpose1d_basic", "conv_transpose1d", F.conv_transpose1d, randn(2, 3, 5), randn(3, 2, 3), randn(2))
conv_case("conv_transpose1d_stride", "conv_transpose1d", F.conv_transpose1d, randn(2, 2, 4), randn(2, 3, 3), randn(3),
          stride=(2,), padding=(1,), output_padding=(1,))
conv_case("conv_transpose1d_dilation", "conv_transpose1d", F.conv_transpose1d, randn(1, 2, 5), randn(2, 2, 2), None,
          stride=(3,), padding=(2,), output_padding=(2,), dilation=(2,))
conv_case("conv_transpose1d_groups", "conv_transpose1d", F.conv_transpose1d, randn(2, 4, 4), randn(4, 3, 2), randn(6),
          stride=(2,), groups=2)
conv_case("conv_transpose1d_big_padding", "conv_transpose1d", F.conv_transpose1d, randn(1, 1, 3), randn(1, 2, 2), randn(2),
          stride=(3,), padding=(2,), output_padding=(2,))
conv_case("conv_transpose2d_basic", "conv_transpose2d", F.conv_transpose2d, randn(2, 2, 3, 4), randn(2, 3, 3, 3), randn(3))
conv_case("conv_transpose2d_params", "conv_transpose2d", F.conv_transpose2d, randn(2, 3, 3, 4), randn(3, 2, 3, 2), randn(2),
          stride=(2, 3), padding=(1, 0), output_padding=(1, 2), dilation=(1, 2))
conv_case("conv_transpose2d_depthwise", "conv_transpose2d", F.conv_transpose2d, randn(2, 4, 3, 3), randn(4, 1, 2, 2), randn(4),
          stride=(2, 2), padding=(1, 1), groups=4)
conv_case("conv_transpose2d_transposed_input", "conv_transpose2d", F.conv_transpose2d, randn(1, 2, 3, 4), randn(2, 2, 2, 2), None,
          pre="transpose", stride=(2, 1))
conv_case("conv_transpose3d_basic", "conv_transpose3d", F.conv_transpose3d, randn(1, 2, 2, 3, 2), randn(2, 2, 2, 2, 2), randn(2))
conv_case("conv_transpose3d_params", "conv_transpose3d", F.conv_transpose3d, randn(2, 2, 2, 3, 3), randn(2, 1, 2, 3, 2), randn(2),
          stride=(2, 1, 2), padding=(0, 1, 1), output_padding=(1, 0, 1), groups=2)


def np_conv_transpose(x, w, b, stride, padding, output_padding, dilation, groups):
    """Scatter form: every input element adds its weighted kernel into the full output, which is then cropped."""
    nsp = x.ndim - 2
    n, cin = x.shape[:2]
    cg, fg = cin // groups, w.shape[1]
    k = w.shape[2:]
    full = [(x.shape[2 + i] - 1) * stride[i] + dilation[i] * (k[i] - 1) + 1 + output_padding[i] for i in range(nsp)]
    y = np.zeros((n, fg * groups) + tuple(full))
    for i in itertools.product(*[range(v) for v in x.shape[2:]]):
        for kk in itertools.product(*[range(v) for v in k]):
            o = tuple(i[a] * stride[a] + kk[a] * dilation[a] for a in range(nsp))
            for g in range(groups):
                xv = x[(slice(None), slice(g * cg, (g + 1) * cg)) + i].astype(np.float64)  # (n, cg)
                y[(slice(None), slice(g * fg, (g + 1) * fg)) + o] += xv @ w[(slice(g * cg, (g + 1) * cg), slice(None)) + kk]
    crop = tuple(slice(padding[a], full[a] - padding[a] + 0) for a in range(nsp))
    y = y[(slice(None), slice(None)) + crop]
    if b is not None:
        y += b.reshape((1, -1) + (1,) * nsp)
    return y.astype(np.float32)


x4, w4, b4 = randn(1, 2, 2, 3, 2, 2), randn(2, 2, 2, 1, 2, 2), randn(4)
c.add("conv_transpose_4d", "conv_transpose", [x4, w4, b4],
      [np_conv_transpose(x4, w4, b4, (2, 1, 1, 2), (1, 0, 0, 0), (1, 0, 0, 1), (1, 1, 2, 1), 2)],
      stride=[2, 1, 1, 2], padding=[1, 0, 0, 0], outputPadding=[1, 0, 0, 1], dilation=[1, 1, 2, 1], groups=2)
x2, w2 = randn(2, 3, 3, 3), randn(3, 2, 2, 3)
c.add("conv_transpose_2d_nobias", "conv_transpose", [x2, w2],
      [np_conv_transpose(x2, w2, None, (2, 2), (0, 1), (0, 0), (1, 1), 1)], stride=[2], padding=[0, 1])

c.write()

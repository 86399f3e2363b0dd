"""Golden cases for activation functions and softmax / logSoftmax.

Reference: torch.nn.functional (PyTorch, run with /usr/bin/python3) evaluated in float64 on the float32
inputs and rounded once to float32, so the expectation is the correctly rounded value; integer
results (relu of an int tensor) from NumPy.
"""
import numpy as np
import torch
import torch.nn.functional as F

from golden import Cases, rng

c = Cases("activations")
r = rng(23)
f16, f32, f64, i32 = np.float16, np.float32, np.float64, np.int32
nan, inf = np.nan, np.inf

SPECIAL = np.array([nan, inf, -inf, -0.0, 0.0, 1e-3, -1e-3, 0.5, -0.5, 2.0, -2.0, 3.0, -3.0, 6.5, 19.0, 25.0, -25.0, 100.0, -100.0], f32)
X = (r.standard_normal((3, 4)) * 3).astype(f32)
BIG = np.array([[1e4, -1e4, 50.0, -50.0], [1e30, -1e30, 88.0, -88.0]], f32)


def tr(x):
    """x stored with its last two axes swapped; the Java side transposes it back into a view."""
    return np.ascontiguousarray(np.swapaxes(x, -1, -2))


def torch_ref(fn, *xs, out=f32):
    """fn on float64 torch tensors of the inputs, rounded once to `out`."""
    with torch.no_grad():
        y = fn(*[torch.from_numpy(np.asarray(x, f64)) for x in xs])
    return y.numpy().astype(out)


UNARY = {
    "relu": (F.relu, {}),
    "relu6": (F.relu6, {}),
    "leakyRelu": (lambda t: F.leaky_relu(t, 0.1), {"slope": 0.1}),
    "elu": (lambda t: F.elu(t, 1.0), {"alpha": 1.0}),
    "selu": (F.selu, {}),
    "celu": (lambda t: F.celu(t, 1.0), {"alpha": 1.0}),
    "gelu": (F.gelu, {}),
    "geluTanh": (lambda t: F.gelu(t, approximate="tanh"), {}),
    "sigmoid": (torch.sigmoid, {}),
    "logSigmoid": (F.logsigmoid, {}),
    "silu": (F.silu, {}),
    "mish": (F.mish, {}),
    "softplus": (F.softplus, {}),
    "softsign": (F.softsign, {}),
    "hardsigmoid": (F.hardsigmoid, {}),
    "hardswish": (F.hardswish, {}),
    "hardtanh": (F.hardtanh, {"min": -1.0, "max": 1.0}),
}
for op, (fn, args) in UNARY.items():
    c.add(f"{op}_random", op, [X], torch_ref(fn, X), **args)
    c.add(f"{op}_special", op, [SPECIAL], torch_ref(fn, SPECIAL), **args)
    c.add(f"{op}_large", op, [BIG], torch_ref(fn, BIG), **args)
    c.add(f"{op}_transposed", op, [tr(X)], torch_ref(fn, X), tr=[0], **args)
    c.add(f"{op}_size0", op, [np.zeros((0, 3), f32)], np.zeros((0, 3), f32), **args)

# other parameters
c.add("leakyRelu_slope", "leakyRelu", [SPECIAL], torch_ref(lambda t: F.leaky_relu(t, 0.01), SPECIAL), slope=0.01)
c.add("leakyRelu_negative_slope", "leakyRelu", [X], torch_ref(lambda t: F.leaky_relu(t, -0.5), X), slope=-0.5)
c.add("elu_alpha", "elu", [SPECIAL], torch_ref(lambda t: F.elu(t, 0.3), SPECIAL), alpha=0.3)
c.add("celu_alpha", "celu", [SPECIAL], torch_ref(lambda t: F.celu(t, 0.5), SPECIAL), alpha=0.5)
c.add("celu_alpha_large", "celu", [X], torch_ref(lambda t: F.celu(t, 2.5), X), alpha=2.5)
for beta, thr in [(2.0, 5.0), (0.5, 20.0), (1.0, 1.0)]:
    c.add(f"softplus_beta{beta}_threshold{thr}", "softplus", [SPECIAL], torch_ref(lambda t: F.softplus(t, beta, thr), SPECIAL),
          beta=beta, threshold=thr)
c.add("hardtanh_range", "hardtanh", [SPECIAL], torch_ref(lambda t: F.hardtanh(t, -2.0, 7.0), SPECIAL), min=-2.0, max=7.0)

# integer and f16 inputs
ix = np.array([-3, -1, 0, 2, 9], i32)
c.add("relu_i32", "relu", [ix], np.maximum(ix, 0))
c.add("relu6_i32", "relu6", [ix], np.clip(ix, 0, 6))
c.add("sigmoid_i32", "sigmoid", [ix], torch_ref(torch.sigmoid, ix))  # integer inputs compute in f32
c.add("gelu_i32", "gelu", [ix], torch_ref(F.gelu, ix))
hx = np.array([-3.5, -0.25, 0.0, 0.75, 2.0, 7.0], f16)
c.add("relu_f16", "relu", [hx], np.maximum(hx, f16(0)))
c.add("hardtanh_f16", "hardtanh", [hx], np.clip(hx, f16(-1), f16(1)), min=-1.0, max=1.0)
c.add("hardsigmoid_f16", "hardsigmoid", [hx], torch_ref(F.hardsigmoid, hx, out=f16))

# prelu: the weight broadcasts along axis 1 (channels)
x3 = r.standard_normal((2, 3, 4)).astype(f32)
w3 = np.array([0.25, -0.5, 2.0], f32)
c.add("prelu_channels", "prelu", [x3, w3], torch_ref(F.prelu, x3, w3))
c.add("prelu_single_weight", "prelu", [X, np.array([0.2], f32)], torch_ref(F.prelu, X, np.array([0.2], f32)))
c.add("prelu_1d", "prelu", [SPECIAL, np.array([0.3], f32)], torch_ref(F.prelu, SPECIAL, np.array([0.3], f32)))
w4 = np.array([0.1, 0.2, 0.3], f32)
c.add("prelu_transposed", "prelu", [tr(X.T.copy()), w4], torch_ref(F.prelu, X.T, w4), tr=[0])
c.add("prelu_4d", "prelu", [x3.reshape(1, 3, 2, 4), w3], torch_ref(F.prelu, x3.reshape(1, 3, 2, 4), w3))

# ------------------------------------------------------------------ softmax and logSoftmax

x234 = (r.standard_normal((2, 3, 4)) * 2).astype(f32)
MASKED = np.array([[-inf, 0.0, 1.0, -inf], [3.0, -inf, -inf, -inf], [1e4, -1e4, 1e4, 0.0]], f32)
EDGE = np.array([[-inf, -inf, -inf], [inf, 1.0, 2.0], [nan, 1.0, 2.0], [-0.0, 0.0, 0.0]], f32)
for op, fn in [("softmax", torch.softmax), ("logSoftmax", torch.log_softmax)]:
    for axis in [0, 1, 2, -1, -2]:
        c.add(f"{op}_axis{axis}", op, [x234], torch_ref(lambda t: fn(t, axis), x234), axis=axis)
    c.add(f"{op}_large", op, [BIG], torch_ref(lambda t: fn(t, -1), BIG), axis=-1)
    c.add(f"{op}_large_axis0", op, [BIG], torch_ref(lambda t: fn(t, 0), BIG), axis=0)
    c.add(f"{op}_masked", op, [MASKED], torch_ref(lambda t: fn(t, 1), MASKED), axis=1)
    c.add(f"{op}_edge", op, [EDGE], torch_ref(lambda t: fn(t, 1), EDGE), axis=1)
    c.add(f"{op}_size1_axis", op, [x234[:, :1, :].copy()], torch_ref(lambda t: fn(t, 1), x234[:, :1, :]), axis=1)
    c.add(f"{op}_transposed", op, [tr(X)], torch_ref(lambda t: fn(t, 1), X), tr=[0], axis=1)
    c.add(f"{op}_1d", op, [X[0].copy()], torch_ref(lambda t: fn(t, 0), X[0]), axis=0)
    c.add(f"{op}_i32", op, [ix], torch_ref(lambda t: fn(t, 0), ix), axis=0)  # integer inputs compute in f32
    c.add(f"{op}_size0", op, [np.zeros((0, 3), f32)], np.zeros((0, 3), f32), axis=1)

c.write()

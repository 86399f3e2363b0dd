"""Golden cases for the mixture-of-experts layers: mixtureOfExperts (SwiGLU experts) and mixtureOfExpertsMlp.

The reference is written out step by step in float64 with PyTorch (run with /usr/bin/python3): router
logits x @ router, softmax over experts, the k most probable experts per token with ties going to the lower
expert index (a stable sort), optional renormalisation of the k probabilities, and the dense sum over the
chosen experts of w * down(silu(gate(x)) * up(x)) (or down(act(up(x))) for the plain MLP experts).

Routing is a discrete choice, so every random case is checked to have no near tie between the k-th and the
(k+1)-th probability (a gap of at least 1e-4; f32 routing cannot then disagree with the f64 reference).
Exact ties are built on purpose in the tie cases from small multiples of 1/4, whose logits are exact in any
summation order, with duplicated router columns.

Args: "k", "renormalize", "activation" (mlp only), "pre": "transpose" (input 0 is stored transposed, a
non-contiguous x).
"""
import numpy as np
import torch

from golden import Cases, rng

c = Cases("moe")
r = rng(11)
ACT = {
    "relu": torch.relu,
    "silu": torch.nn.functional.silu,
    "gelu_tanh": lambda v: torch.nn.functional.gelu(v, approximate="tanh"),
}


def route(x2, router, k, renormalize):
    """Top-k indices (stable: lower index first on ties) and weights, from float64 probabilities."""
    probs = torch.softmax(torch.from_numpy(x2.astype(np.float64)) @ torch.from_numpy(router.astype(np.float64)), -1).numpy()
    order = np.argsort(-probs, axis=-1, kind="stable")
    idx = order[:, :k]
    w = np.take_along_axis(probs, idx, -1)
    if renormalize:
        w = w / w.sum(-1, keepdims=True)
    return probs, idx, w


def gap_ok(probs, k):
    if k == probs.shape[-1]:
        return True
    s = -np.sort(-probs, axis=-1)
    gap = s[:, k - 1] - s[:, k]
    return bool(np.all((gap == 0) | (gap >= 1e-4)))


def moe_ref(x, router, gate, up, down, k, renormalize, act=None):
    d = x.shape[-1]
    x2 = x.reshape(-1, d)
    _, idx, w = route(x2, router, k, renormalize)
    xt = torch.from_numpy(x2.astype(np.float64))
    out = torch.zeros_like(xt)
    for t in range(x2.shape[0]):
        for s in range(k):
            e = int(idx[t, s])
            u = torch.from_numpy(up[e].astype(np.float64)) @ xt[t]
            if act is None:
                h = torch.nn.functional.silu(torch.from_numpy(gate[e].astype(np.float64)) @ xt[t]) * u
            else:
                h = ACT[act](u)
            out[t] += float(w[t, s]) * (torch.from_numpy(down[e].astype(np.float64)) @ h)
    return out.numpy().reshape(x.shape).astype(x.dtype)


def weights(e, d, ff, dtype=np.float32):
    gate = (r.standard_normal((e, ff, d)) / np.sqrt(d)).astype(dtype)
    up = (r.standard_normal((e, ff, d)) / np.sqrt(d)).astype(dtype)
    down = (r.standard_normal((e, d, ff)) / np.sqrt(ff)).astype(dtype)
    return gate, up, down


def routed_input(shape, e, k, dtype=np.float32):
    """x and router with no near tie at the k-th choice."""
    d = shape[-1]
    while True:
        x = r.standard_normal(shape).astype(dtype)
        router = r.standard_normal((d, e)).astype(dtype)
        probs, _, _ = route(x.reshape(-1, d).astype(np.float64), router, k, True)
        if gap_ok(probs, k):
            return x, router


def store(x, args):
    return np.ascontiguousarray(np.swapaxes(x, -1, -2)) if args.get("pre") == "transpose" else x


def swiglu(name, shape, e, ff, k, renormalize=True, dtype=np.float32, **args):
    x, router = routed_input(shape, e, k, dtype)
    gate, up, down = weights(e, shape[-1], ff, dtype)
    out = moe_ref(x, router, gate, up, down, k, renormalize)
    c.add(name, "mixture_of_experts", [store(x, args), router, gate, up, down], [out], k=k, renormalize=renormalize, **args)


def mlp(name, shape, e, ff, k, act, renormalize=True):
    x, router = routed_input(shape, e, k)
    _, up, down = weights(e, shape[-1], ff)
    out = moe_ref(x, router, None, up, down, k, renormalize, act)
    c.add(name, "mixture_of_experts_mlp", [x, router, up, down], [out], k=k, renormalize=renormalize, activation=act)


swiglu("moe_k2_renorm", (5, 8), 4, 8, 2)
swiglu("moe_k2_no_renorm", (5, 8), 4, 8, 2, renormalize=False)
swiglu("moe_k1_renorm", (6, 8), 4, 6, 1)
swiglu("moe_k1_no_renorm", (6, 8), 4, 6, 1, renormalize=False)
swiglu("moe_k_equals_experts", (4, 6), 3, 10, 3)
swiglu("moe_one_expert", (3, 5), 1, 7, 1)
swiglu("moe_batch_dims", (2, 3, 8), 5, 6, 2)
swiglu("moe_single_token", (1, 8), 6, 6, 2)
swiglu("moe_transposed_input", (7, 8), 4, 8, 2, pre="transpose")
# longer rows than a vector register, with a tail; more experts than routed ones
swiglu("moe_wide", (6, 20), 3, 10, 2)
swiglu("moe_no_tokens", (0, 8), 4, 6, 2)
swiglu("moe_f16", (5, 8), 4, 8, 2, dtype=np.float16)


def ties(name, k, x, router, ff, renormalize=True):
    e = router.shape[1]
    gate, up, down = weights(e, x.shape[-1], ff)
    probs, _, _ = route(x, router, k, renormalize)
    assert gap_ok(probs, k)
    out = moe_ref(x, router, gate, up, down, k, renormalize)
    c.add(name, "mixture_of_experts", [x, router, gate, up, down], [out], k=k, renormalize=renormalize)


def quarters(shape):
    return (r.integers(-4, 5, shape) / 4).astype(np.float32)


# experts 1 and 3 always tie (identical router columns), as do 0, 2 and 4 in the second case: the lower index wins
xq = quarters((6, 4))
rq = quarters((4, 4))
rq[:, 3] = rq[:, 1]
ties("moe_ties_k1", 1, xq, rq, 8)
ties("moe_ties_k2", 2, xq, rq, 8, renormalize=False)
xq = quarters((5, 4))
rq = quarters((4, 5))
rq[:, 2] = rq[:, 0]
rq[:, 4] = rq[:, 0]
ties("moe_ties_three_way_k2", 2, xq, rq, 8)
# a zero router: every expert ties for every token, so experts 0..k-1 are chosen
ties("moe_all_tied_k2", 2, quarters((3, 4)), np.zeros((4, 4), np.float32), 8)

mlp("moe_mlp_relu", (5, 8), 4, 8, 2, "relu")
mlp("moe_mlp_silu_k1", (5, 8), 4, 8, 1, "silu", renormalize=False)
mlp("moe_mlp_gelu_tanh", (2, 3, 8), 5, 6, 2, "gelu_tanh")

c.write()

"""Golden cases for matmul, einsum and linear.

Expected values come from NumPy (matmul / einsum) in float64, rounded once to the result dtype;
integer products are exact. Non-contiguous inputs as in CoreGolden.java.
"""
import numpy as np

from golden import Cases, rng

c = Cases("linalg")
r = rng(59)
f16, f32, f64, i32 = np.float16, np.float32, np.float64, np.int32


def randn(*shape):
    return r.standard_normal(shape).astype(f32)


def tr(x):
    """x stored with its last two axes swapped; the Java side transposes it back into a view."""
    return np.ascontiguousarray(np.swapaxes(x, -1, -2))


def st(x):
    """x stored with a junk row after every row of axis 0; the Java side reads rows 0, 2, 4, ..."""
    full = np.full((2 * x.shape[0] - 1,) + x.shape[1:], 77, x.dtype)
    full[::2] = x
    return full


def mm(a, b, out=f32):
    with np.errstate(invalid="ignore"):  # inf * 0 in matmul_special
        return np.matmul(np.asarray(a, f64), np.asarray(b, f64)).astype(out)


# ------------------------------------------------------------------ matmul

A, B = randn(3, 4), randn(4, 5)
c.add("matmul_2d", "matmul", [A, B], mm(A, B))
A3 = randn(2, 3, 4)
c.add("matmul_batched", "matmul", [A3, B], mm(A3, B))
B3 = randn(2, 4, 5)
c.add("matmul_batched_both", "matmul", [A3, B3], mm(A3, B3))
A4, B4 = randn(2, 1, 3, 4), randn(3, 4, 2)
c.add("matmul_batch_broadcast", "matmul", [A4, B4], mm(A4, B4))
v4 = randn(4)
c.add("matmul_vec_mat", "matmul", [v4, B], mm(v4, B))
c.add("matmul_mat_vec", "matmul", [A, v4], mm(A, v4))
c.add("matmul_vec_vec", "matmul", [v4, v4[::-1].copy()], mm(v4, v4[::-1]))
c.add("matmul_vec_batched", "matmul", [v4, B3], mm(v4, B3))
c.add("matmul_batched_vec", "matmul", [A3, v4], mm(A3, v4))
c.add("matmul_transposed_a", "matmul", [tr(A), B], mm(A, B), tr=[0])
c.add("matmul_transposed_both", "matmul", [tr(A), tr(B)], mm(A, B), tr=[0, 1])
c.add("matmul_transposed_batched", "matmul", [A3, tr(B3)], mm(A3, B3), tr=[1])
c.add("matmul_strided", "matmul", [st(A), B], mm(A, B), st=[0])
c.add("matmul_k0", "matmul", [np.zeros((3, 0), f32), np.zeros((0, 2), f32)], np.zeros((3, 2), f32))
c.add("matmul_m0", "matmul", [np.zeros((0, 4), f32), B], np.zeros((0, 5), f32))
c.add("matmul_1x1", "matmul", [A[:1, :1].copy(), B[:1, :1].copy()], mm(A[:1, :1], B[:1, :1]))
IA, IB = r.integers(-9, 10, (3, 4)).astype(i32), r.integers(-9, 10, (4, 2)).astype(i32)
c.add("matmul_i32", "matmul", [IA, IB], IA @ IB)
c.add("matmul_i64", "matmul", [IA.astype(np.int64) * 1000003, IB.astype(np.int64)], (IA.astype(np.int64) * 1000003) @ IB)
c.add("matmul_i32_f32", "matmul", [IA, B[:, :3].copy()], mm(IA, B[:, :3]))
HA = (r.integers(-8, 9, (2, 8)) / 4).astype(f16)
HB = (r.integers(-8, 9, (8, 3)) / 4).astype(f16)
c.add("matmul_f16", "matmul", [HA, HB], mm(HA, HB, f16))  # quarter-integers: every product and sum is exact
c.add("matmul_special", "matmul", [np.array([[np.inf, 1.0], [np.nan, 0.0], [1.0, 2.0]], f32), np.array([[1.0, 0.0], [2.0, -1.0]], f32)],
      mm(np.array([[np.inf, 1.0], [np.nan, 0.0], [1.0, 2.0]], f32), np.array([[1.0, 0.0], [2.0, -1.0]], f32)))

# ------------------------------------------------------------------ einsum

M, N = randn(3, 3), randn(3, 5)
u, w = randn(3), randn(4)
EIN = [
    ("matrix_product", "ij,jk->ik", [A, B]),
    ("batch_matmul", "bij,bjk->bik", [A3, B3]),
    ("transpose", "ij->ji", [A]),
    ("trace", "ii->", [M]),
    ("diagonal", "ii->i", [M]),
    ("outer", "i,j->ij", [u, w]),
    ("implicit", "ij,jk", [A, B]),
    ("implicit_transpose", "ba", [A]),
    ("three_operands", "ij,jk,kl->il", [A, B, randn(5, 2)]),
    ("sum_all", "ij->", [A]),
    ("sum_axis", "ij->j", [A]),
    ("dot", "i,i->", [w, v4]),
    ("elementwise", "ij,ij->ij", [A, A * 2]),
    ("bilinear", "i,ij,j->", [u, N, randn(5)]),
    ("permute_3d", "abc->cab", [A3]),
    ("batch_diagonal", "bii->bi", [randn(2, 3, 3)]),
    ("contract_two", "bij,bij->b", [A3, A3 + 1]),
    ("spaces", "ij, jk -> ik", [A, B]),
    ("broadcast_size1", "ij,jk->ik", [A[:, :1].copy(), B[:1].copy()]),
]
for name, eq, ops in EIN:
    c.add(f"einsum_{name}", "einsum", ops, np.asarray(np.einsum(eq.replace(" ", ""), *[o.astype(f64) for o in ops])).astype(f32),
          equation=eq)
c.add("einsum_transposed", "einsum", [tr(A), B], np.einsum("ij,jk->ik", A.astype(f64), B).astype(f32), tr=[0], equation="ij,jk->ik")
c.add("einsum_i32", "einsum", [IA, IB], np.einsum("ij,jk->ik", IA, IB), equation="ij,jk->ik")

# ------------------------------------------------------------------ linear

W, bias = randn(5, 4), randn(5)
for name, x in [("2d", A), ("1d", v4), ("3d", A3)]:
    c.add(f"linear_{name}_bias", "linear", [x, W, bias], (x.astype(f64) @ W.T.astype(f64) + bias).astype(f32))
    c.add(f"linear_{name}_no_bias", "linear", [x, W], mm(x, W.T))
c.add("linear_transposed_weight", "linear", [A, tr(W)], mm(A, W.T), tr=[1])
c.add("linear_transposed_input", "linear", [tr(A), W, bias], (A.astype(f64) @ W.T.astype(f64) + bias).astype(f32), tr=[0])
c.add("linear_out1", "linear", [A, W[:1].copy(), bias[:1].copy()], (A.astype(f64) @ W[:1].T.astype(f64) + bias[:1]).astype(f32))

c.write()

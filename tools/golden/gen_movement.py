"""Golden cases for movement ops: reshape, permute, transpose, mT, expand, squeeze, unsqueeze, flatten,
flip, slice, pad (each mode), cat, stack, split, chunk, repeat, tile, triu and tril.

Expected values come from NumPy indexing and np.pad / np.tile / np.triu. Slice bounds are passed as the
Java ints Kiln takes (Integer.MAX_VALUE / MIN_VALUE for open bounds); Python slicing clamps such
bounds the same way, so the same ints give the expectation. Non-contiguous inputs as in CoreGolden.java.
"""
import numpy as np

from golden import Cases, rng

c = Cases("movement")
r = rng(47)
f32, i32 = np.float32, np.int32
IMAX, IMIN = 2**31 - 1, -2**31

X = np.arange(24, dtype=f32).reshape(2, 3, 4) + r.standard_normal((2, 3, 4)).astype(f32) / 8
M = r.standard_normal((3, 4)).astype(f32)
XI = np.arange(12, dtype=i32).reshape(3, 4) - 5


def tr(x):
    """x stored with its last two axes swapped; the Java side transposes it back into a view."""
    return np.ascontiguousarray(np.swapaxes(x, -1, -2))


def st(x):
    """x stored with a junk row after every row of axis 0; the Java side reads rows 0, 2, 4, ..."""
    full = np.full((2 * x.shape[0] - 1,) + x.shape[1:], 77, x.dtype)
    full[::2] = x
    return full


# ------------------------------------------------------------------ reshape and axis reordering

c.add("reshape_infer", "reshape", [X], X.reshape(4, -1), shape=[4, -1])
c.add("reshape_flat", "reshape", [X], X.reshape(-1), shape=[-1])
c.add("reshape_more_axes", "reshape", [X], X.reshape(2, 2, 3, 2), shape=[2, 2, 3, 2])
c.add("reshape_0d_to_2d", "reshape", [np.array(3.5, f32)], np.full((1, 1), 3.5, f32), shape=[1, 1])
c.add("reshape_to_0d", "reshape", [np.array([[3.5]], f32)], np.array(3.5, f32), shape=[])
c.add("reshape_size0", "reshape", [np.zeros((0, 3), f32)], np.zeros((3, 0, 5), f32), shape=[3, 0, 5])
c.add("reshape_transposed", "reshape", [tr(M)], M.reshape(2, 6), tr=[0], shape=[2, 6])  # a view must be read in logical order
c.add("reshape_strided", "reshape", [st(M)], M.reshape(-1), st=[0], shape=[-1])
c.add("reshape_i32", "reshape", [XI], XI.reshape(2, 6), shape=[2, 6])

c.add("permute_3d", "permute", [X], X.transpose(2, 0, 1), order=[2, 0, 1])
c.add("permute_negative", "permute", [X], X.transpose(1, 2, 0), order=[-2, -1, 0])
c.add("permute_identity", "permute", [X], X, order=[0, 1, 2])
c.add("permute_transposed", "permute", [tr(X)], X.transpose(1, 0, 2), tr=[0], order=[1, 0, 2])
c.add("permute_size0", "permute", [np.zeros((2, 0, 3), f32)], np.zeros((3, 2, 0), f32), order=[2, 0, 1])
c.add("transpose_01", "transpose", [X], X.swapaxes(0, 1), a=0, b=1)
c.add("transpose_negative", "transpose", [X], X.swapaxes(-1, 0), a=-1, b=0)
c.add("transpose_same", "transpose", [X], X, a=1, b=1)
c.add("transpose_i32", "transpose", [XI], XI.T, a=0, b=1)
c.add("mT_2d", "mT", [M], M.T)
c.add("mT_3d", "mT", [X], X.swapaxes(-1, -2))
c.add("mT_twice", "mT", [tr(M)], M.T, tr=[0])

# ------------------------------------------------------------------ expand, squeeze, unsqueeze, flatten

E = r.standard_normal((3, 1)).astype(f32)
c.add("expand_basic", "expand", [E], np.broadcast_to(E, (3, 4)).copy(), shape=[3, 4])
c.add("expand_keep", "expand", [E], np.broadcast_to(E, (3, 5)).copy(), shape=[-1, 5])
c.add("expand_new_axes", "expand", [E], np.broadcast_to(E, (2, 3, 4)).copy(), shape=[2, -1, 4])
c.add("expand_0d", "expand", [np.array(1.5, f32)], np.full((2, 3), 1.5, f32), shape=[2, 3])
c.add("expand_size0", "expand", [E], np.zeros((3, 0), f32), shape=[3, 0])
c.add("expand_transposed", "expand", [tr(E.T.copy())], np.broadcast_to(E.T, (4, 3)).copy(), tr=[0], shape=[4, 3])

S = r.standard_normal((1, 3, 1, 2)).astype(f32)
c.add("squeeze_all", "squeeze", [S], S.squeeze())
c.add("squeeze_axis", "squeeze", [S], S.squeeze(0), axes=[0])
c.add("squeeze_negative_axes", "squeeze", [S], S.squeeze((0, -2)), axes=[0, -2])
c.add("squeeze_to_0d", "squeeze", [np.array([[2.0]], f32)], np.array(2.0, f32))
c.add("squeeze_nothing", "squeeze", [M], M)
c.add("unsqueeze_0", "unsqueeze", [M], M[None], axis=0)
c.add("unsqueeze_end", "unsqueeze", [M], M[:, :, None], axis=2)
c.add("unsqueeze_minus1", "unsqueeze", [M], M[:, :, None], axis=-1)
c.add("unsqueeze_minus2", "unsqueeze", [M], M[:, None, :], axis=-2)
c.add("unsqueeze_minus3", "unsqueeze", [M], M[None], axis=-3)
c.add("unsqueeze_0d", "unsqueeze", [np.array(7, i32)], np.array([7], i32), axis=0)
c.add("unsqueeze_transposed", "unsqueeze", [tr(M)], M[:, None, :], tr=[0], axis=1)
c.add("flatten_all", "flatten", [X], X.reshape(-1))
c.add("flatten_range", "flatten", [X], X.reshape(2, 12), start=1, end=-1)
c.add("flatten_first_two", "flatten", [X], X.reshape(6, 4), start=0, end=1)
c.add("flatten_single_axis", "flatten", [X], X, start=1, end=1)
c.add("flatten_0d", "flatten", [np.array(4.0, f32)], np.array([4.0], f32))
c.add("flatten_0d_range", "flatten", [np.array(4.0, f32)], np.array([4.0], f32), start=0, end=-1)
c.add("flatten_transposed", "flatten", [tr(X)], X.reshape(-1), tr=[0])

# ------------------------------------------------------------------ flip and slice

c.add("flip_last", "flip", [X], X[..., ::-1].copy(), axes=[-1])
c.add("flip_two", "flip", [X], X[::-1, :, ::-1].copy(), axes=[0, 2])
c.add("flip_all", "flip", [X], X[::-1, ::-1, ::-1].copy(), axes=[0, 1, 2])
c.add("flip_none", "flip", [X], X, axes=[])
c.add("flip_transposed", "flip", [tr(M)], M[::-1].copy(), tr=[0], axes=[0])
c.add("flip_i32", "flip", [XI], XI[:, ::-1].copy(), axes=[1])

V = np.arange(10, dtype=f32) + 0.5
SLICES = [
    ("basic", 2, 7, 1), ("step2", 1, 9, 2), ("step3_uneven", 0, 10, 3), ("negative_start", -3, IMAX, 1),
    ("negative_end", 0, -2, 1), ("clip_high", 5, 100, 1), ("clip_low", -100, 3, 1), ("empty", 6, 2, 1),
    ("open", IMIN, IMAX, 1), ("reverse_all", IMAX, IMIN, -1), ("reverse_step2", IMAX, IMIN, -2),
    ("reverse_range", 7, 2, -1), ("reverse_range_step3", 8, 0, -3), ("reverse_negative", -2, -8, -2),
    ("reverse_empty", 2, 7, -1), ("reverse_clip", 100, -100, -1), ("reverse_to_start", 5, IMIN, -1),
    ("reverse_start_below", -20, IMIN, -1), ("step_larger_than_axis", 1, IMAX, 20), ("reverse_step_large", IMAX, IMIN, -20),
]
for name, s, e, step in SLICES:
    c.add(f"slice_{name}", "slice", [V], V[slice(s, e, step)].copy(), axis=0, start=s, end=e, step=step)
c.add("slice_axis1", "slice", [X], X[:, 1:3].copy(), axis=1, start=1, end=3, step=1)
c.add("slice_axis_negative", "slice", [X], X[..., ::-2].copy(), axis=-1, start=IMAX, end=IMIN, step=-2)
c.add("slice_transposed", "slice", [tr(M)], M[:, 3:0:-1].copy(), tr=[0], axis=1, start=3, end=0, step=-1)
c.add("slice_size0_axis", "slice", [np.zeros((2, 0), f32)], np.zeros((2, 0), f32), axis=1, start=0, end=5, step=2)
c.add("slice_i32", "slice", [XI], XI[::2].copy(), axis=0, start=0, end=IMAX, step=2)


# ------------------------------------------------------------------ pad


def np_pad(x, pads, mode, value=0.0):
    """Kiln's pad: negative amounts crop first, then NumPy pads the rest (axis by axis, like Kiln)."""
    crop = tuple(slice(max(0, -b), x.shape[i] - max(0, -a)) for i, (b, a) in enumerate(pads))
    x = x[crop]
    width = [(max(0, b), max(0, a)) for b, a in pads]
    if mode == "constant":
        return np.pad(x, width, mode="constant", constant_values=value)
    return np.pad(x, width, mode=mode)


P = np.arange(12, dtype=f32).reshape(3, 4) + 0.5
PADS = {"both": [[1, 2], [2, 1]], "one_axis": [[0, 0], [3, 0]], "crop": [[-1, 1], [1, -2]], "crop_only": [[-1, 0], [0, -3]],
        "none": [[0, 0], [0, 0]]}
for name, pads in PADS.items():
    c.add(f"pad_zero_{name}", "pad", [P], np_pad(P, pads, "constant"), pads=pads)
    c.add(f"pad_constant_{name}", "pad_constant", [P], np_pad(P, pads, "constant", -7.5), pads=pads, value=-7.5)
    c.add(f"pad_reflect_{name}", "pad_reflect", [P], np_pad(P, pads, "reflect"), pads=pads)
    c.add(f"pad_edge_{name}", "pad_edge", [P], np_pad(P, pads, "edge"), pads=pads)
    c.add(f"pad_circular_{name}", "pad_circular", [P], np_pad(P, pads, "wrap"), pads=pads)
c.add("pad_reflect_max", "pad_reflect", [P], np_pad(P, [[2, 2], [3, 3]], "reflect"), pads=[[2, 2], [3, 3]])
c.add("pad_circular_full", "pad_circular", [P], np_pad(P, [[3, 3], [4, 0]], "wrap"), pads=[[3, 3], [4, 0]])
c.add("pad_edge_long", "pad_edge", [P[:1].copy()], np_pad(P[:1], [[3, 2], [0, 5]], "edge"), pads=[[3, 2], [0, 5]])
c.add("pad_constant_nan", "pad_constant", [P], np_pad(P, [[1, 0], [0, 1]], "constant", np.nan), pads=[[1, 0], [0, 1]], value=np.nan)
c.add("pad_constant_inf_value", "pad_constant", [P], np_pad(P, [[0, 1], [1, 0]], "constant", -np.inf), pads=[[0, 1], [1, 0]],
      value=-np.inf)
c.add("pad_zero_i32", "pad", [XI], np_pad(XI, [[1, 1], [0, 2]], "constant"), pads=[[1, 1], [0, 2]])
c.add("pad_constant_i32", "pad_constant", [XI], np_pad(XI, [[1, 0], [0, 1]], "constant", 9), pads=[[1, 0], [0, 1]], value=9.0)
c.add("pad_reflect_3d", "pad_reflect", [X], np_pad(X, [[0, 0], [1, 1], [2, 1]], "reflect"), pads=[[0, 0], [1, 1], [2, 1]])
c.add("pad_circular_3d", "pad_circular", [X], np_pad(X, [[1, 0], [0, 2], [1, 1]], "wrap"), pads=[[1, 0], [0, 2], [1, 1]])
c.add("pad_edge_transposed", "pad_edge", [tr(P)], np_pad(P, [[1, 0], [2, 1]], "edge"), tr=[0], pads=[[1, 0], [2, 1]])
c.add("pad_reflect_transposed", "pad_reflect", [tr(P)], np_pad(P, [[2, 1], [1, 3]], "reflect"), tr=[0], pads=[[2, 1], [1, 3]])
c.add("pad_zero_size0", "pad", [np.zeros((0, 2), f32)], np.zeros((2, 2), f32), pads=[[1, 1], [0, 0]])
c.add("pad_constant_1d", "pad_constant", [V], np_pad(V, [[2, 3]], "constant", 1.0), pads=[[2, 3]], value=1.0)

# ------------------------------------------------------------------ cat, stack, split, chunk

A, B, C = M, r.standard_normal((2, 4)).astype(f32), r.standard_normal((1, 4)).astype(f32)
c.add("cat_axis0", "cat", [A, B, C], np.concatenate([A, B, C], 0), axis=0)
c.add("cat_axis1", "cat", [A, M * 2, A[:, :1].copy()], np.concatenate([A, M * 2, A[:, :1]], 1), axis=1)
c.add("cat_negative_axis", "cat", [X, X[..., :2].copy()], np.concatenate([X, X[..., :2]], -1), axis=-1)
c.add("cat_single", "cat", [A], A, axis=0)
c.add("cat_size0_piece", "cat", [A, np.zeros((0, 4), f32), C], np.concatenate([A, C], 0), axis=0)
c.add("cat_promotes", "cat", [XI, M], np.concatenate([XI.astype(f32), M], 0), axis=0)
c.add("cat_special", "cat", [np.array([np.nan, np.inf], f32), np.array([-np.inf, -0.0], f32)],
      np.array([np.nan, np.inf, -np.inf, -0.0], f32), axis=0)
c.add("cat_bool", "cat", [np.array([True, False]), np.array([False, True, True])], np.array([True, False, False, True, True]), axis=0)
c.add("cat_transposed", "cat", [tr(A), A], np.concatenate([A, A], 1), tr=[0], axis=1)
c.add("stack_axis0", "stack", [A, M * 2], np.stack([A, M * 2], 0), axis=0)
c.add("stack_axis_last", "stack", [A, M * 2, M * 3], np.stack([A, M * 2, M * 3], 2), axis=2)
c.add("stack_negative_axis", "stack", [A, M * 2], np.stack([A, M * 2], -2), axis=-2)
c.add("stack_single", "stack", [A], A[None], axis=0)
c.add("stack_0d", "stack", [np.array(1.0, f32), np.array(2.0, f32)], np.array([1.0, 2.0], f32), axis=0)
c.add("stack_i32", "stack", [XI, XI * 2], np.stack([XI, XI * 2], 1), axis=1)
c.add("stack_transposed", "stack", [tr(A), A], np.stack([A, A], 0), tr=[0], axis=0)


def pieces(x, size_list, axis):
    out, s = [], 0
    for n in size_list:
        out.append(np.take(x, range(s, s + n), axis=axis))
        s += n
    return out


Q = np.arange(20, dtype=f32).reshape(4, 5) / 3
c.add("split_even", "split", [Q], pieces(Q, [2, 2], 0), size=2, axis=0)
c.add("split_uneven", "split", [Q], pieces(Q, [2, 2, 1], 1), size=2, axis=1)
c.add("split_larger", "split", [Q], [Q], size=10, axis=0)
c.add("split_negative_axis", "split", [Q], pieces(Q, [3, 2], 1), size=3, axis=-1)
c.add("split_size0_axis", "split", [np.zeros((0, 3), f32)], [np.zeros((0, 3), f32)], size=2, axis=0)
c.add("split_transposed", "split", [tr(Q)], pieces(Q, [1, 1, 1, 1], 0), tr=[0], size=1, axis=0)
c.add("split_sizes", "split_sizes", [Q], pieces(Q, [1, 3, 1], 1), sizes=[1, 3, 1], axis=1)
c.add("split_sizes_with_zero", "split_sizes", [Q], pieces(Q, [0, 4, 0], 0), sizes=[0, 4, 0], axis=0)
c.add("split_sizes_negative_axis", "split_sizes", [X], pieces(X, [3, 1], 2), sizes=[3, 1], axis=-1)
c.add("chunk_even", "chunk", [Q], pieces(Q, [2, 2], 0), chunks=2, axis=0)
c.add("chunk_uneven", "chunk", [Q], pieces(Q, [2, 2, 1], 1), chunks=3, axis=1)  # ceil(5 / 3) = 2 per chunk
c.add("chunk_fewer_pieces", "chunk", [np.arange(6, dtype=f32)], pieces(np.arange(6, dtype=f32), [2, 2, 2], 0), chunks=4, axis=0)
c.add("chunk_more_than_size", "chunk", [Q], pieces(Q, [1, 1, 1, 1], 0), chunks=7, axis=0)
c.add("chunk_negative_axis", "chunk", [X], pieces(X, [2, 1], 1), chunks=2, axis=-2)

# ------------------------------------------------------------------ repeat, tile, triu, tril

R = r.standard_normal((2, 3)).astype(f32)
c.add("repeat_basic", "repeat", [R], np.tile(R, (2, 3)), repeats=[2, 3])  # torch.repeat == np.tile for len(reps) >= ndim
c.add("repeat_new_axes", "repeat", [R], np.tile(R, (2, 1, 2)), repeats=[2, 1, 2])
c.add("repeat_ones", "repeat", [R], R, repeats=[1, 1])
c.add("repeat_zero", "repeat", [R], np.zeros((0, 3), f32), repeats=[0, 1])
c.add("repeat_1d", "repeat", [V[:3].copy()], np.tile(V[:3], 3), repeats=[3])
c.add("repeat_i32", "repeat", [XI], np.tile(XI, (1, 2)), repeats=[1, 2])
c.add("repeat_transposed", "repeat", [tr(R)], np.tile(R, (2, 2)), tr=[0], repeats=[2, 2])
c.add("tile_fewer_reps", "tile", [X], np.tile(X, 2), reps=[2])
c.add("tile_fewer_reps_2", "tile", [X], np.tile(X, (3, 1)), reps=[3, 1])
c.add("tile_equal", "tile", [R], np.tile(R, (2, 2)), reps=[2, 2])
c.add("tile_more_reps", "tile", [R], np.tile(R, (2, 1, 1)), reps=[2, 1, 1])

T = r.standard_normal((4, 5)).astype(f32)
T[0, 4] = np.nan  # outside the kept triangle of tril: replaced by 0
for k in [0, 1, -1, 3, -5, 6]:
    c.add(f"triu_k{k}", "triu", [T], np.triu(T, k), k=k)
    c.add(f"tril_k{k}", "tril", [T], np.tril(T, k), k=k)
c.add("triu_batched", "triu", [X], np.triu(X, 1), k=1)
c.add("tril_batched", "tril", [X], np.tril(X, -1), k=-1)
c.add("triu_i32", "triu", [XI], np.triu(XI), k=0)
c.add("tril_bool", "tril", [np.ones((3, 3), bool)], np.tril(np.ones((3, 3), bool)), k=0)
c.add("triu_transposed", "triu", [tr(T)], np.triu(T, 0), tr=[0], k=0)
c.add("tril_tall", "tril", [T.T.copy()], np.tril(T.T, 1), k=1)

c.write()

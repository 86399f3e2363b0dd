"""Golden cases for the indexing ops: gather, scatter, index select, take along axis, one-hot, sort, top-k.

Expected values come from PyTorch (torch.gather, torch.scatter, torch.sort(stable=True), ...) and NumPy
(np.take, np.take_along_axis), run with /usr/bin/python3. Scatters with duplicate indices are checked
against a plain Python loop ("the last write in C order of index wins", which is what Kiln defines and
what PyTorch's sequential CPU kernel does). No tolerances are loosened: every op only moves values,
except scatter_add, which adds, and whose cases use values that sum exactly.

Args: "pre": "transpose" swaps the last two axes of input 0 before the op (a non-contiguous input).
"""
import itertools

import numpy as np
import torch

from golden import Cases, rng

c = Cases("indexing")
r = rng(7)
NAN, INF = float("nan"), float("inf")


def pre(x, args):
    return np.swapaxes(x, -1, -2) if args.get("pre") == "transpose" else x


def t(a):
    return torch.from_numpy(np.array(a, order="C", copy=True))  # ascontiguousarray would make 0-d arrays 1-d


def f32(*shape):
    return r.standard_normal(shape).astype(np.float32)


def idx(high, shape, dtype=np.int64):
    return r.integers(0, high, shape).astype(dtype)


# ---------------------------------------------------------------------------------------------------
# gather


def gather(name, x, axis, index, **args):
    xx = pre(x, args)
    out = torch.gather(t(xx), axis, t(index.astype(np.int64))).numpy()
    c.add(name, "gather", [x, index], [out], axis=axis, **args)


gather("gather_2d_axis0", f32(3, 4), 0, idx(3, (2, 4)))
gather("gather_2d_axis1_longer_index", f32(3, 4), 1, idx(4, (3, 6)))
gather("gather_3d_neg_axis_smaller_index", f32(3, 4, 5), -2, idx(4, (2, 3, 4)))
gather("gather_3d_axis0_i32_index", f32(2, 3, 4), 0, idx(2, (4, 2, 3), np.int32))
gather("gather_u8_index", f32(4, 3), 1, idx(3, (4, 2), np.uint8))
gather("gather_i16_index", f32(4, 3), 0, idx(4, (2, 3), np.int16))
gather("gather_int_values", r.integers(-100, 100, (3, 5)).astype(np.int32), 1, idx(5, (3, 5)))
gather("gather_i64_values", r.integers(-(1 << 40), 1 << 40, (4, 3)), 0, idx(4, (2, 3)))
gather("gather_f16", f32(3, 4).astype(np.float16), 1, idx(4, (3, 2)))
gather("gather_transposed", f32(4, 3), 1, idx(4, (3, 5)), pre="transpose")
gather("gather_size1_dims", f32(1, 5, 1), 1, idx(5, (1, 3, 1)))
gather("gather_empty_index", f32(3, 4), 1, np.zeros((3, 0), np.int64))
gather("gather_1d", f32(6), 0, np.array([5, 0, 0, 3, 2], np.int64))
# NaN and infinities in unselected positions must not leak into selected ones; -0.0 keeps its sign
special = np.array([[NAN, 1.0, -0.0], [INF, -INF, 2.0]], np.float32)
gather("gather_special_values", special, 1, np.array([[1, 2, 2, 0], [2, 2, 1, 0]], np.int64))

# ---------------------------------------------------------------------------------------------------
# scatter (tensor source), scatter (scalar value), scatter_add


def scatter_ref(self, axis, index, src, combine):
    """A plain loop over index in C order: out[.., index[q], ..] = combine(old, src[q])."""
    out = self.copy()
    ax = axis % self.ndim
    for q in itertools.product(*[range(d) for d in index.shape]):
        p = list(q)
        p[ax] = int(index[q])
        out[tuple(p)] = combine(out[tuple(p)], src[q])
    return out


def scatter(name, self, axis, index, src, **args):
    ss = pre(self, args)
    out = scatter_ref(ss, axis, index, src, lambda old, new: new)
    if not args.pop("duplicates", False):
        ref = torch.scatter(t(ss), axis, t(index.astype(np.int64)), t(src)).numpy()
        assert np.array_equal(out, ref, equal_nan=True), name
    c.add(name, "scatter", [self, index, src], [out], axis=axis, **args)


def perm_index(n, shape, axis):
    """Unique indices along axis: a permutation of range(n) cut to shape[axis] (needs shape[axis] <= n)."""
    ax = axis % len(shape)
    moved = np.moveaxis(np.zeros(shape, np.int64), ax, -1)
    flat = moved.reshape(-1, moved.shape[-1])
    for row in flat:
        row[:] = r.permutation(n)[: moved.shape[-1]]
    return np.moveaxis(flat.reshape(moved.shape), -1, ax)


scatter("scatter_2d_axis0", f32(4, 3), 0, perm_index(4, (3, 3), 0), f32(3, 3))
scatter("scatter_2d_neg_axis", f32(3, 5), -1, perm_index(5, (3, 4), -1), f32(3, 4))
scatter("scatter_src_larger", f32(4, 5), 1, perm_index(5, (2, 3), 1), f32(3, 6))
scatter("scatter_3d_axis1", f32(2, 4, 3), 1, perm_index(4, (2, 2, 3), 1), f32(2, 2, 3))
scatter("scatter_int", r.integers(-50, 50, (3, 4)).astype(np.int32), 0, perm_index(3, (2, 4), 0).astype(np.int32),
        r.integers(-50, 50, (2, 4)).astype(np.int32))
scatter("scatter_transposed", f32(5, 3), 1, perm_index(5, (3, 2), 1), f32(3, 2), pre="transpose")
scatter("scatter_size1_dims", f32(1, 4), 1, np.array([[3, 0]], np.int64), f32(1, 2))
scatter("scatter_empty_index", f32(3, 2), 0, np.zeros((0, 2), np.int64), f32(0, 2))
scatter("scatter_duplicates_last_wins", f32(4, 3), 0, np.array([[1, 0, 2], [1, 3, 2], [1, 0, 0]], np.int64),
        f32(3, 3), duplicates=True)


def scatter_value(name, self, axis, index, value, **args):
    ss = pre(self, args)
    out = torch.scatter(t(ss), axis, t(index.astype(np.int64)), value).numpy()
    c.add(name, "scatter_value", [self, index], [out], axis=axis, value=value, **args)


scatter_value("scatter_value_2d", f32(4, 3), 0, np.array([[0, 1, 3], [2, 1, 1]], np.int64), 2.5)
scatter_value("scatter_value_neg_axis_duplicates", f32(2, 5), -1, np.array([[4, 4, 0], [1, 2, 1]], np.int64), -1.0)
scatter_value("scatter_value_int", r.integers(0, 9, (3, 3)).astype(np.int32), 1, np.array([[2], [0], [1]], np.int32), 7)
scatter_value("scatter_value_nan", f32(3, 4), 1, np.array([[0, 3], [1, 1], [2, 0]], np.int64), NAN)
scatter_value("scatter_value_transposed", f32(4, 2), 1, np.array([[1, 0, 3, 2]], np.int64), 9.0, pre="transpose")


def scatter_add(name, self, axis, index, src, **args):
    ss = pre(self, args)
    out = torch.scatter_add(t(ss), axis, t(index.astype(np.int64)), t(src)).numpy()
    assert np.allclose(out, scatter_ref(ss, axis, index, src, lambda old, new: old + new)), name
    c.add(name, "scatter_add", [self, index, src], [out], axis=axis, **args)


def small_ints_f32(*shape):
    """Floats that add exactly, so the order of the additions does not matter."""
    return r.integers(-8, 8, shape).astype(np.float32) / 4


scatter_add("scatter_add_duplicates", small_ints_f32(3, 4), 0, idx(3, (5, 4)), small_ints_f32(5, 4))
scatter_add("scatter_add_neg_axis", small_ints_f32(2, 3, 4), -1, idx(4, (2, 3, 6)), small_ints_f32(2, 3, 6))
scatter_add("scatter_add_smaller_index", small_ints_f32(4, 5), 1, idx(5, (2, 7)), small_ints_f32(3, 8))
scatter_add("scatter_add_int", r.integers(-50, 50, (4, 3)).astype(np.int32), 0, idx(4, (6, 3), np.int32),
            r.integers(-50, 50, (6, 3)).astype(np.int32))
scatter_add("scatter_add_i64", r.integers(-(1 << 40), 1 << 40, (3,)), 0, idx(3, (7,)), r.integers(-(1 << 40), 1 << 40, (7,)))
scatter_add("scatter_add_transposed", small_ints_f32(4, 3), 1, idx(4, (3, 5)), small_ints_f32(3, 5), pre="transpose")
scatter_add("scatter_add_size1", small_ints_f32(1, 1), 0, np.zeros((4, 1), np.int64), small_ints_f32(4, 1))
# -0.0 survives where nothing (or only -0.0) is added
scatter_add("scatter_add_negative_zero", np.array([[-0.0, 1.0], [-0.0, -0.0]], np.float32), 0,
            np.array([[1, 1]], np.int64), np.array([[-0.0, 2.0]], np.float32))

# ---------------------------------------------------------------------------------------------------
# index_select (negative indices wrap, as np.take)


def index_select(name, x, axis, index, **args):
    xx = pre(x, args)
    out = np.take(xx, index.astype(np.int64), axis=axis)
    nonneg = np.where(index < 0, index + xx.shape[axis], index).astype(np.int64)
    assert np.array_equal(out, torch.index_select(t(xx), axis % xx.ndim, t(nonneg)).numpy(), equal_nan=True), name
    c.add(name, "index_select", [x, index], [out], axis=axis, **args)


index_select("index_select_axis0", f32(5, 3), 0, np.array([4, 0, 0, 2], np.int64))
index_select("index_select_neg_axis", f32(2, 3, 4), -1, np.array([3, 1], np.int32))
index_select("index_select_negative_indices", f32(3, 6), 1, np.array([-1, -6, 2, -3], np.int64))
index_select("index_select_empty", f32(3, 4), 0, np.zeros((0,), np.int64))
index_select("index_select_int", r.integers(-9, 9, (4, 4)).astype(np.int16), 1, np.array([3, 3, 0], np.int8))
index_select("index_select_transposed", f32(4, 3), 0, np.array([2, 1], np.int64), pre="transpose")
index_select("index_select_special", special, 1, np.array([2, 1], np.int64))

# ---------------------------------------------------------------------------------------------------
# take_along_axis (NumPy: other axes broadcast, negative indices wrap)


def take_along_axis(name, x, indices, axis, **args):
    xx = pre(x, args)
    out = np.take_along_axis(xx, indices.astype(np.int64), axis)
    c.add(name, "take_along_axis", [x, indices], [out], axis=axis, **args)


x = f32(3, 5)
take_along_axis("take_along_axis_argsort", x, np.argsort(x, axis=1), 1)
take_along_axis("take_along_axis_neg_axis", f32(2, 3, 4), idx(3, (2, 5, 4)), -2)
take_along_axis("take_along_axis_broadcast_indices", f32(3, 4), np.array([[3, 0]], np.int64), 1)
take_along_axis("take_along_axis_broadcast_input", f32(1, 4), idx(4, (3, 2), np.int32), 1)
take_along_axis("take_along_axis_negative_indices", f32(2, 5), np.array([[-1, 0, -5], [-2, 4, 1]], np.int64), -1)
take_along_axis("take_along_axis_int", r.integers(-9, 9, (4, 3)).astype(np.int64), idx(4, (2, 3)), 0)
take_along_axis("take_along_axis_transposed", f32(4, 3), idx(4, (3, 2)), 1, pre="transpose")

# ---------------------------------------------------------------------------------------------------
# one_hot (i64, like torch)


def one_hot(name, index, num_classes):
    out = torch.nn.functional.one_hot(t(index.astype(np.int64)), num_classes).numpy()
    c.add(name, "one_hot", [index], [out], num_classes=num_classes)


one_hot("one_hot_1d", np.array([0, 3, 1, 1], np.int64), 4)
one_hot("one_hot_2d_extra_classes", idx(3, (2, 3), np.int32), 5)
one_hot("one_hot_0d", np.array(2, np.int64), 3)
one_hot("one_hot_u8", np.array([1, 0], np.uint8), 2)
one_hot("one_hot_empty", np.zeros((0,), np.int64), 3)

# ---------------------------------------------------------------------------------------------------
# sort, argsort (stable; NaN largest), topk


def sort_ref(x, axis, descending):
    v, i = torch.sort(t(x), dim=axis, descending=descending, stable=True)
    return v.numpy(), i.numpy()


def sort(name, x, axis, descending, **args):
    v, i = sort_ref(pre(x, args), axis, descending)
    c.add(name, "sort", [x], [v, i], axis=axis, descending=descending, **args)


def argsort(name, x, axis, descending, **args):
    _, i = sort_ref(pre(x, args), axis, descending)
    c.add(name, "argsort", [x], [i], axis=axis, descending=descending, **args)


ties = np.array([[3, 1, 2, 1, 3, 0, 2], [5, 5, 5, 5, 5, 5, 5], [-1, 0, -0.0, 0, -0.0, -2, 1]], np.float32)
nans = np.array([[NAN, 1, -INF, NAN, INF, 0], [2, NAN, 2, -1, NAN, -INF]], np.float32)
sort("sort_ties_ascending", ties, 1, False)
sort("sort_ties_descending", ties, -1, True)
sort("sort_nan_ascending", nans, -1, False)
sort("sort_nan_descending", nans, 1, True)
sort("sort_axis0", f32(5, 3), 0, False)
sort("sort_3d_neg_axis", r.integers(0, 4, (2, 5, 3)).astype(np.float32), -2, True)
sort("sort_int", r.integers(-5, 5, (3, 8)).astype(np.int32), 1, False)
sort("sort_i64_descending", r.integers(-(1 << 40), 1 << 40, (10,)), 0, True)
sort("sort_u8", r.integers(0, 255, (2, 6)).astype(np.uint8), -1, False)
sort("sort_f16", f32(2, 6).astype(np.float16), 1, False)
sort("sort_transposed", r.integers(0, 3, (6, 4)).astype(np.float32), -1, False, pre="transpose")
sort("sort_size1_axis", f32(4, 1), 1, True)
sort("sort_longer_row", f32(2, 40), 1, False)
argsort("argsort_ties", ties, 1, False)
argsort("argsort_descending_nan", nans, -1, True)
argsort("argsort_int_axis0", r.integers(0, 3, (6, 2)).astype(np.int64), 0, False)
argsort("argsort_transposed", f32(5, 3), 0, True, pre="transpose")


def topk(name, x, k, axis, largest, **args):
    xx = pre(x, args)
    v, i = sort_ref(xx, axis, largest)
    v, i = np.take(v, range(k), axis=axis), np.take(i, range(k), axis=axis)
    tv, _ = torch.topk(t(xx), k, dim=axis, largest=largest, sorted=True)
    # torch.topk does not promise an order among ties; the values agree with the stable sort
    assert np.array_equal(tv.numpy(), v, equal_nan=True), name
    c.add(name, "topk", [x], [v, i], k=k, axis=axis, largest=largest, **args)


topk("topk_largest", f32(3, 6), 2, 1, True)
topk("topk_smallest_neg_axis", f32(2, 3, 5), 3, -1, False)
topk("topk_axis0", f32(5, 4), 1, 0, True)
topk("topk_all", f32(2, 4), 4, 1, False)
topk("topk_zero", f32(2, 4), 0, 1, True)
topk("topk_ties_nan", nans, 3, 1, True)
topk("topk_ties_smallest", ties, 4, 1, False)
topk("topk_int", r.integers(-20, 20, (3, 7)).astype(np.int32), 3, 1, True)
topk("topk_transposed", f32(6, 3), 2, 0, False, pre="transpose")

c.write()

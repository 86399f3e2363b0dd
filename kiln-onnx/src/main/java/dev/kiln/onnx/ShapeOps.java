package dev.kiln.onnx;

import dev.kiln.DType;
import dev.kiln.Tensor;
import dev.kiln.Variable;
import onnx.Onnx.AttributeProto;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

import static dev.kiln.onnx.OnnxOps.add;
import static dev.kiln.onnx.OnnxOps.one;

/** Constants, shapes, movement, indexing and scatter operators. */
final class ShapeOps {
    private ShapeOps() {}

    static void register() {
        add("Constant", 1, ShapeOps::constant, (n, opset) -> {
            for (String k : n.attrs().names()) {
                if (k.equals("sparse_value") || k.equals("value_string") || k.equals("value_strings")) return "Constant " + k + " is not supported";
            }
            return null;
        });
        add("ConstantOfShape", 9, c -> {
            Tensor v = c.a.has("value") ? c.a.tensor("value") : Tensor.of(new float[] {0f}, 1);
            int[] shape = c.has(0) ? c.ints(0) : new int[0];
            return one(c.here(v.reshape()).expand(shape).contiguous());
        });
        add("Shape", 1, OnnxOps.Kind.SHAPE_ONLY, c -> {
            int[] d = c.in(0).dims();
            int r = d.length;
            int start = c.opset >= 15 ? clampAxis(c.a.i("start", 0), r) : 0;
            int end = c.opset >= 15 && c.a.has("end") ? clampAxis(c.a.i("end", r), r) : r;
            long[] v = new long[Math.max(0, end - start)];
            for (int k = 0; k < v.length; k++) {
                Variable sym = c.in(0).shape().variable(start + k);
                if (sym != null) throw c.bad("axis " + (start + k) + " of input shape " + c.in(0).shape() + " is the symbolic dimension '"
                        + sym.name() + "', whose size is known only when the plan runs; prepare the model with concrete sizes");
                v[k] = d[start + k];
            }
            return one(c.constant(DType.I64, v, v.length));
        }, null);
        add("Size", 1, OnnxOps.Kind.SHAPE_ONLY, c -> {
            if (c.in(0).shape().isSymbolic()) throw c.bad("input shape " + c.in(0).shape() + " is symbolic; its size is known only when the plan runs");
            return one(c.scalarOf(c.in(0).numel(), DType.I64));
        }, null);
        add("EyeLike", 9, OnnxOps.Kind.SHAPE_ONLY, c -> {
            Tensor x = c.in(0);
            DType dt = c.a.has("dtype") ? TensorProtos.dtype((int) c.a.i("dtype", 1), "EyeLike dtype") : x.dtype();
            int n = x.dim(0), m = x.dim(1), k = (int) c.a.i("k", 0);
            Tensor rows = c.here(Tensor.arange(n)).reshape(n, 1), cols = c.here(Tensor.arange(m)).reshape(1, m);
            return one(cols.sub(rows).eq(k).cast(dt));
        }, (n, opset) -> n.attrs().has("dtype") ? ElementwiseOps.castTarget(n.attrs().i("dtype", 1)) : null);

        add("Reshape", 5, c -> {
            Tensor x = c.in(0);
            long[] s = c.longs(1);
            boolean allowZero = c.opset >= 14 && c.a.b("allowzero", false);
            int[] target = new int[s.length];
            for (int k = 0; k < s.length; k++) {
                if (s[k] == 0 && !allowZero) {
                    if (k >= x.ndim()) throw c.bad("shape " + Arrays.toString(s) + " copies axis " + k + " of " + x.shape() + ", which has no such axis");
                    target[k] = x.dim(k);
                } else target[k] = Math.toIntExact(s[k]);
            }
            return one(x.reshape(target));
        });
        add("Flatten", 1, c -> {
            Tensor x = c.in(0);
            int r = x.ndim();
            long axis = c.a.i("axis", 1);
            int ax = (int) (axis < 0 ? axis + r : axis);
            if (ax < 0 || ax > r) throw c.bad("axis " + axis + " out of range for rank " + r);
            int outer = 1, inner = 1;
            for (int k = 0; k < r; k++) {
                if (k < ax) outer *= x.dim(k);
                else inner *= x.dim(k);
            }
            return one(x.reshape(outer, inner));
        });
        add("Squeeze", 1, c -> {
            Tensor x = c.in(0);
            int[] axes = c.opset >= 13 ? (c.has(1) ? c.ints(1) : null) : c.a.ints("axes");
            return one(axes == null || axes.length == 0 ? x.squeeze() : x.squeeze(axes));
        });
        add("Unsqueeze", 1, c -> {
            Tensor x = c.in(0);
            int[] axes = c.opset >= 13 ? c.ints(1) : c.a.ints("axes");
            if (axes == null) throw c.bad("needs axes");
            int out = x.ndim() + axes.length;
            boolean[] isNew = new boolean[out];
            for (int a : axes) {
                int k = c.axis(a, out, "axis");
                if (isNew[k]) throw c.bad("axis " + a + " repeated in " + Arrays.toString(axes));
                isNew[k] = true;
            }
            int[] d = new int[out];
            for (int k = 0, j = 0; k < out; k++) d[k] = isNew[k] ? 1 : x.dim(j++);
            return one(x.reshape(d));
        });
        add("Transpose", 1, c -> {
            Tensor x = c.in(0);
            int[] perm = c.a.ints("perm");
            if (perm == null) {
                perm = new int[x.ndim()];
                for (int k = 0; k < perm.length; k++) perm[k] = perm.length - 1 - k;
            }
            return one(x.permute(perm));
        });
        add("Concat", 4, c -> {
            List<Tensor> ts = new ArrayList<>();
            for (int k = 0; k < c.inputCount(); k++) if (c.has(k)) ts.add(c.in(k));
            return one(Tensor.cat(c.axis(c.a.i("axis", 0), ts.getFirst().ndim(), "axis"), ts.toArray(Tensor[]::new)));
        });
        add("Split", 2, c -> {
            Tensor x = c.in(0);
            int axis = c.axis(c.a.i("axis", 0), x.ndim(), "axis");
            int[] sizes = c.opset >= 13 ? (c.has(1) ? c.ints(1) : null) : c.a.ints("split");
            int parts = c.outputCount();
            if (sizes == null || sizes.length == 0) {
                int n = x.dim(axis);
                if (n % parts != 0) throw c.bad("axis " + axis + " of " + x.shape() + " does not split into " + parts + " equal parts");
                sizes = new int[parts];
                Arrays.fill(sizes, n / parts);
            }
            return x.split(sizes, axis);
        });
        add("Slice", 1, ShapeOps::slice);
        add("Expand", 8, c -> {
            Tensor x = c.in(0);
            int[] s = c.ints(1);
            int r = Math.max(s.length, x.ndim());
            int[] out = new int[r];
            for (int k = 0; k < r; k++) {
                int a = k - (r - x.ndim()) >= 0 ? x.dim(k - (r - x.ndim())) : 1;
                int b = k - (r - s.length) >= 0 ? s[k - (r - s.length)] : 1;
                if (a != b && a != 1 && b != 1) throw c.bad("cannot expand " + x.shape() + " to " + Arrays.toString(s));
                out[k] = a == 1 ? b : a;
            }
            return one(x.broadcastTo(out));
        });
        add("Tile", 6, c -> one(c.in(0).repeat(c.ints(1))));
        add("Pad", 2, ShapeOps::pad, (n, opset) -> switch (n.attrs().s("mode", "constant")) {
            case "constant", "reflect", "edge" -> null;
            default -> "pad mode '" + n.attrs().s("mode", "constant") + "' is not supported";
        });

        add("Gather", 1, c -> {
            Tensor x = c.in(0), idx = c.in(1);
            int axis = c.axis(c.a.i("axis", 0), x.ndim(), "axis");
            Tensor r = x.indexSelect(axis, idx.reshape((int) idx.numel()));
            int[] d = x.dims(), id = idx.dims();
            int[] out = new int[d.length - 1 + id.length];
            int j = 0;
            for (int k = 0; k < axis; k++) out[j++] = d[k];
            for (int v : id) out[j++] = v;
            for (int k = axis + 1; k < d.length; k++) out[j++] = d[k];
            return one(r.reshape(out));
        });
        add("GatherElements", 11, c -> {
            Tensor x = c.in(0);
            int axis = c.axis(c.a.i("axis", 0), x.ndim(), "axis");
            return one(x.gather(axis, wrap(c.in(1), x.dim(axis))));
        });
        add("GatherND", 11, ShapeOps::gatherNd);
        add("Scatter", 9, c -> scatterElements(c, "none"));
        add("ScatterElements", 11, c -> scatterElements(c, c.opset >= 16 ? c.a.s("reduction", "none") : "none"), ShapeOps::checkReduction);
        add("ScatterND", 11, ShapeOps::scatterNd, ShapeOps::checkReduction);

        add("Range", 11, c -> {
            Tensor s = c.in(0);
            double start = c.scalar(0), limit = c.scalar(1), delta = c.scalar(2);
            int n = (int) Math.max(0, Math.ceil((limit - start) / delta));
            double[] v = new double[n];
            for (int k = 0; k < n; k++) v[k] = start + k * delta;
            return one(c.constant(s.dtype(), v, n));
        });
        add("OneHot", 9, c -> {
            Tensor idx = c.in(0), values = c.in(2);
            int depth = (int) c.scalar(1);
            int r = idx.ndim() + 1;
            int axis = c.axis(c.a.i("axis", -1), r, "axis");
            Tensor i = idx.cast(DType.I64);
            i = Tensor.where(i.lt(0L), i.add((long) depth), i).unsqueeze(axis);
            int[] shape = new int[r];
            Arrays.fill(shape, 1);
            shape[axis] = depth;
            Tensor classes = c.here(Tensor.arange(depth)).cast(DType.I64).reshape(shape);
            Tensor off = values.slice(0, 0, 1, 1).reshape(), on = values.slice(0, 1, 2, 1).reshape();
            return one(Tensor.where(i.eq(classes), on, off));
        });
        add("Trilu", 14, c -> {
            Tensor x = c.in(0);
            int k = c.has(1) ? (int) c.longs(1)[0] : 0;
            return one(c.a.b("upper", true) ? x.triu(k) : x.tril(k));
        });
        add("DepthToSpace", 1, c -> {
            Tensor x = c.in(0);
            int b = (int) c.a.i("blocksize", 0);
            int n = x.dim(0), ch = x.dim(1), h = x.dim(2), w = x.dim(3);
            boolean crd = c.opset >= 11 && c.a.s("mode", "DCR").equals("CRD");
            Tensor y = crd ? x.reshape(n, ch / (b * b), b, b, h, w).permute(0, 1, 4, 2, 5, 3)
                    : x.reshape(n, b, b, ch / (b * b), h, w).permute(0, 3, 4, 1, 5, 2);
            return one(y.reshape(n, ch / (b * b), h * b, w * b));
        });
        add("SpaceToDepth", 1, c -> {
            Tensor x = c.in(0);
            int b = (int) c.a.i("blocksize", 0);
            int n = x.dim(0), ch = x.dim(1), h = x.dim(2), w = x.dim(3);
            return one(x.reshape(n, ch, h / b, b, w / b, b).permute(0, 3, 5, 1, 2, 4).reshape(n, ch * b * b, h / b, w / b));
        });
        add("CumSum", 11, c -> {
            Tensor x = c.in(0);
            int axis = c.axis(c.longs(1)[0], x.ndim(), "axis");
            boolean reverse = c.a.b("reverse", false), exclusive = c.a.b("exclusive", false);
            Tensor y = reverse ? x.flip(axis) : x;
            if (exclusive) {
                int[][] p = new int[x.ndim()][2];
                p[axis] = new int[] {1, -1};
                y = y.pad(p);
            }
            y = y.cumsum(axis).cast(x.dtype());
            return one(reverse ? y.flip(axis) : y);
        });
        add("TopK", 10, c -> {
            Tensor x = c.in(0);
            int k = (int) c.longs(1)[0];
            Tensor.Sorted s = x.topk(k, (int) c.a.i("axis", -1), c.opset < 11 || c.a.b("largest", true));
            return List.of(s.values(), s.indices());
        });
        add("ReverseSequence", 10, c -> {
            Tensor x = c.in(0);
            long[] lens = c.longs(1);
            int batch = (int) c.a.i("batch_axis", 1), time = (int) c.a.i("time_axis", 0);
            int nb = x.dim(batch), nt = x.dim(time);
            long[] src = new long[nb * nt];
            for (int b = 0; b < nb; b++) {
                for (int t = 0; t < nt; t++) src[b * nt + t] = t < lens[b] ? lens[b] - 1 - t : t;
            }
            int[] shape = new int[x.ndim()];
            Arrays.fill(shape, 1);
            shape[batch] = nb;
            shape[time] = nt;
            Tensor idx = c.constant(DType.I64, src, nb, nt);
            if (time < batch) idx = idx.permute(1, 0);
            return one(x.takeAlongAxis(idx.reshape(shape), time));
        });
    }

    private static String checkReduction(Node n, long opset) {
        String r = n.attrs().s("reduction", "none");
        return r.equals("none") || r.equals("add") ? null : "reduction '" + r + "' is not supported";
    }

    private static int clampAxis(long a, int r) {
        long v = a < 0 ? a + r : a;
        return (int) Math.max(0, Math.min(r, v));
    }

    /** Negative indices counted from the end of an axis of size {@code n}. */
    static Tensor wrap(Tensor idx, int n) {
        Tensor i = idx.cast(DType.I64);
        return Tensor.where(i.lt(0L), i.add((long) n), i);
    }

    private static List<Tensor> constant(OpContext c) {
        Attrs a = c.a;
        Tensor t;
        if (a.has("value")) t = a.tensor("value");
        else if (a.has("value_float")) t = Tensor.of(DType.F32, new double[] {a.f("value_float", 0)});
        else if (a.has("value_floats")) {
            float[] f = a.floats("value_floats");
            double[] d = new double[f.length];
            for (int k = 0; k < f.length; k++) d[k] = f[k];
            t = Tensor.of(DType.F32, d, d.length);
        } else if (a.has("value_int")) t = Tensor.of(DType.I64, new long[] {a.i("value_int", 0)});
        else if (a.has("value_ints")) {
            long[] v = a.longs("value_ints");
            t = Tensor.of(DType.I64, v, v.length);
        } else {
            AttributeProto any = a.names().isEmpty() ? null : a.raw(a.names().iterator().next());
            throw c.unsupported("Constant without a supported value attribute" + (any == null ? "" : " (has " + any.getName() + ")"));
        }
        if (a.has("value_float") || a.has("value_int")) t = t.reshape();
        return one(c.here(t));
    }

    private static List<Tensor> slice(OpContext c) {
        Tensor x = c.in(0);
        long[] starts, ends, axes, steps = null;
        if (c.opset < 10) {
            starts = c.a.longs("starts");
            ends = c.a.longs("ends");
            axes = c.a.longs("axes");
        } else {
            starts = c.longs(1);
            ends = c.longs(2);
            axes = c.has(3) ? c.longs(3) : null;
            steps = c.has(4) ? c.longs(4) : null;
        }
        if (starts == null || ends == null || starts.length != ends.length) throw c.bad("starts and ends must be given with equal lengths");
        for (int k = 0; k < starts.length; k++) {
            int axis = axes == null ? k : c.axis(axes[k], x.ndim(), "axis");
            long step = steps == null ? 1 : steps[k];
            if (step == 0) throw c.bad("step 0 on axis " + axis);
            int n = x.dim(axis);
            // ONNX clamps starts and ends to the axis; Python slicing does the same
            long s = starts[k], e = ends[k];
            int si = (int) Math.max(Integer.MIN_VALUE + 1, Math.min(Integer.MAX_VALUE, s));
            int ei;
            if (step < 0 && e < -n) ei = Integer.MIN_VALUE; // through the start of the axis
            else ei = (int) Math.max(Integer.MIN_VALUE + 1, Math.min(Integer.MAX_VALUE, e));
            if (step < 0 && s >= n) si = Integer.MAX_VALUE;
            x = x.slice(axis, si, ei, (int) step);
        }
        return one(x);
    }

    private static List<Tensor> pad(OpContext c) {
        Tensor x = c.in(0);
        long[] pads;
        double value;
        if (c.opset < 11) {
            pads = c.a.longs(c.opset < 2 ? "paddings" : "pads");
            value = c.a.f("value", 0.0);
        } else {
            pads = c.longs(1);
            value = c.has(2) ? c.scalar(2) : 0.0;
        }
        int r = x.ndim();
        if (pads == null || pads.length != 2 * r) throw c.bad("pads must hold " + 2 * r + " values for rank " + r);
        int[][] p = new int[r][2];
        for (int k = 0; k < r; k++) {
            p[k][0] = (int) pads[k];
            p[k][1] = (int) pads[k + r];
        }
        Tensor.PadMode mode = switch (c.a.s("mode", "constant")) {
            case "reflect" -> Tensor.PadMode.REFLECT;
            case "edge" -> Tensor.PadMode.EDGE;
            default -> Tensor.PadMode.CONSTANT;
        };
        return one(x.pad(p, mode, value));
    }

    private static List<Tensor> gatherNd(OpContext c) {
        Tensor x = c.in(0), idx = c.in(1);
        int b = (int) c.a.i("batch_dims", 0);
        int[] d = x.dims(), id = idx.dims();
        int k = id[id.length - 1];
        int batch = 1, inner = 1, rest = 1, q = 1;
        for (int i = 0; i < b; i++) batch *= d[i];
        for (int i = b; i < b + k; i++) inner *= d[i];
        for (int i = b + k; i < d.length; i++) rest *= d[i];
        for (int i = b; i < id.length - 1; i++) q *= id[i];
        // linear index over the k indexed axes, negative indices wrapped per axis
        Tensor lin = null;
        long stride = 1;
        for (int j = k - 1; j >= 0; j--) {
            Tensor comp = wrap(idx.slice(-1, j, j + 1, 1), d[b + j]).mul(stride);
            lin = lin == null ? comp : lin.add(comp);
            stride *= d[b + j];
        }
        Tensor li = lin.reshape(batch, q, 1).expand(batch, q, rest);
        Tensor r = x.reshape(batch, inner, rest).gather(1, li);
        int[] out = new int[id.length - 1 + d.length - b - k];
        int j = 0;
        for (int i = 0; i < id.length - 1; i++) out[j++] = id[i];
        for (int i = b + k; i < d.length; i++) out[j++] = d[i];
        return one(r.reshape(out));
    }

    private static List<Tensor> scatterElements(OpContext c, String reduction) {
        Tensor x = c.in(0), upd = c.in(2);
        int axis = c.axis(c.a.i("axis", 0), x.ndim(), "axis");
        Tensor idx = wrap(c.in(1), x.dim(axis));
        return one(reduction.equals("add") ? x.scatterAdd(axis, idx, upd) : x.scatter(axis, idx, upd));
    }

    private static List<Tensor> scatterNd(OpContext c) {
        Tensor x = c.in(0), idx = c.in(1), upd = c.in(2);
        int[] d = x.dims(), id = idx.dims();
        int k = id[id.length - 1];
        int inner = 1, rest = 1, n = 1;
        for (int i = 0; i < k; i++) inner *= d[i];
        for (int i = k; i < d.length; i++) rest *= d[i];
        for (int i = 0; i < id.length - 1; i++) n *= id[i];
        Tensor lin = null;
        long stride = 1;
        for (int j = k - 1; j >= 0; j--) {
            Tensor comp = wrap(idx.slice(-1, j, j + 1, 1), d[j]).mul(stride);
            lin = lin == null ? comp : lin.add(comp);
            stride *= d[j];
        }
        Tensor li = lin.reshape(n, 1).expand(n, rest);
        Tensor flat = x.reshape(inner, rest), u = upd.reshape(n, rest);
        String red = c.opset >= 16 ? c.a.s("reduction", "none") : "none";
        Tensor r = red.equals("add") ? flat.scatterAdd(0, li, u) : flat.scatter(0, li, u);
        return one(r.reshape(d));
    }
}

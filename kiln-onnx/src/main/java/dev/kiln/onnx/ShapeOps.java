package dev.kiln.onnx;

import dev.kiln.types.DType;
import dev.kiln.Tensor;
import dev.kiln.types.Variable;
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
            // expand would take -1 as "keep this axis" and name itself in the error: a negative size is the model's
            for (int s : shape) if (s < 0) throw c.bad("shape " + Arrays.toString(shape) + " has a negative dimension " + s);
            long numel = 1;
            for (int s : shape) numel = Math.multiplyExact(numel, s);
            // folded (a constant shape, as models that build their weights this way have): filled now, in bulk; the builder
            // builds a larger one again lazily, on the run device
            if (c.folding && v.numel() == 1 && numel <= GraphBuilder.FOLD_OUTPUT_LIMIT) return one(ConstantFill.of(v, shape));
            return one(c.here(v.reshape()).expand(shape).contiguous());
        });
        add("Shape", 1, OnnxOps.Kind.SHAPE_ONLY, c -> {
            int[] d = c.in(0).dims();
            int r = d.length;
            int start = c.opset >= 15 ? clampAxis(c.a.i("start", 0), r) : 0;
            int end = c.opset >= 15 && c.a.has("end") ? clampAxis(c.a.i("end", r), r) : r;
            long[] v = new long[Math.max(0, end - start)];
            Tensor[] sizes = new Tensor[v.length];
            boolean symbolic = false;
            for (int k = 0; k < v.length; k++) {
                v[k] = d[start + k];
                sizes[k] = size(c, start + k);
                symbolic |= c.in(0).shape().variable(start + k) != null;
            }
            // a symbolic size (a prepared plan's input dim, a data-dependent count) is known when the plan runs: a value of
            // the graph then, not a constant (the builder does not fold it), which an operator needing values refuses
            return one(symbolic ? Tensor.stack(0, sizes) : c.constant(DType.I64, v, v.length));
        }, null);
        add("Size", 1, OnnxOps.Kind.SHAPE_ONLY, c -> {
            if (!c.in(0).shape().isSymbolic()) return one(c.scalarOf(c.in(0).numel(), DType.I64));
            Tensor n = c.scalarOf(1, DType.I64);
            for (int a = 0; a < c.in(0).ndim(); a++) n = n.mul(size(c, a));
            return one(n);
        }, null);
        add("EyeLike", 9, OnnxOps.Kind.SHAPE_ONLY, c -> {
            Tensor x = c.in(0);
            DType dt = c.a.has("dtype") ? TensorProtos.dtype(c.a.int32("dtype", 1), "EyeLike dtype") : x.dtype();
            return one(x.eyeLike(c.a.int32("k", 0), dt));
        }, (n, opset) -> n.attrs().has("dtype") ? ElementwiseOps.castTarget(n.attrs().i("dtype", 1)) : null);

        add("Reshape", 5, c -> {
            Tensor x = c.in(0);
            List<Object> shape;
            try {
                shape = ShapeValues.boxed(c.longs(1));
            } catch (UnsupportedOperationException e) {
                // a shape holding sizes known only when the plan runs (x.reshape(y.shape)): the symbolic axes kept
                shape = ShapeValues.of(c.builder(), c.node.inputs().get(1));
                if (shape == null || shape.stream().noneMatch(v -> v instanceof Variable)) throw e;
            }
            return one(reshaped(c, x, shape));
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
            // every input may be left empty ("") even where the validator has counted them
            if (ts.isEmpty()) throw c.bad("needs at least one input, the node gives none");
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
            checkIndices(c, 1, x, axis);
            Tensor r = x.indexSelect(axis, idx.reshape((int) idx.numel()));
            int[] d = x.dims(), id = idx.dims();
            int[] out = new int[d.length - 1 + id.length];
            int j = 0;
            for (int k = 0; k < axis; k++) out[j++] = d[k];
            for (int v : id) out[j++] = v;
            for (int k = axis + 1; k < d.length; k++) out[j++] = d[k];
            return one(r.reshape(out));
        });
        add("GatherElements", 11, c -> one(c.in(0).gatherElements(elementAxis(c), c.in(1))));
        add("GatherND", 11, c -> {
            int batchDims = c.a.int32("batch_dims", 0);
            checkTupleIndices(c, batchDims);
            return one(c.in(0).gatherND(c.in(1), batchDims));
        });
        add("Scatter", 9, c -> one(c.in(0).scatterElements(elementAxis(c), c.in(1), c.in(2), "none")));
        add("ScatterElements", 11, c -> one(c.in(0).scatterElements(elementAxis(c), c.in(1), c.in(2), reduction(c))), ShapeOps::checkReduction);
        add("ScatterND", 11, c -> {
            checkTupleIndices(c, 0);
            return one(c.in(0).scatterND(c.in(1), c.in(2), reduction(c)));
        }, ShapeOps::checkReduction);

        add("Range", 11, c -> {
            DType dt = c.in(0).dtype();
            // integer ranges stay exact in 64 bits; the Number kind tells Tensor.range which arithmetic to use
            if (dt.isFloat()) return one(c.here(Tensor.range(c.scalar(0), c.scalar(1), c.scalar(2), dt)));
            return one(c.here(Tensor.range(c.scalarLong(0), c.scalarLong(1), c.scalarLong(2), dt)));
        });
        add("OneHot", 9, c -> one(c.in(0).oneHot((int) c.scalar(1), c.a.int32("axis", -1), c.in(2))));
        add("Trilu", 14, c -> {
            Tensor x = c.in(0);
            int k = c.has(1) ? c.scalarInt(1) : 0;
            return one(c.a.b("upper", true) ? x.triu(k) : x.tril(k));
        });
        add("DepthToSpace", 1, c -> one(c.in(0).depthToSpace(c.a.int32("blocksize", 0), c.opset >= 11 ? c.a.s("mode", "DCR") : "DCR")));
        add("SpaceToDepth", 1, c -> one(c.in(0).spaceToDepth(c.a.int32("blocksize", 0))));
        add("CumSum", 11, c -> one(c.in(0).cumsum(c.scalarInt(1), c.a.b("exclusive", false), c.a.b("reverse", false))));
        add("TopK", 10, c -> {
            Tensor x = c.in(0);
            int k = c.scalarInt(1);
            Tensor.Sorted s = x.topk(k, c.a.int32("axis", -1), c.opset < 11 || c.a.b("largest", true));
            return List.of(s.values(), s.indices());
        });
        add("ReverseSequence", 10, c -> one(c.in(0).reverseSequence(c.in(1), c.a.int32("batch_axis", 1), c.a.int32("time_axis", 0))));
    }

    /** The axis attribute of an element-wise gather or scatter, normalised, with constant indices checked against it. */
    private static int elementAxis(OpContext c) {
        Tensor x = c.in(0);
        int axis = c.axis(c.a.i("axis", 0), x.ndim(), "axis");
        checkIndices(c, 1, x, axis);
        return axis;
    }

    /** Constant indices of input {@code i} checked against axis {@code axis} of {@code x}, when that axis has a fixed size. */
    private static void checkIndices(OpContext c, int i, Tensor x, int axis) {
        if (x.shape().variable(axis) == null) c.checkIndices(i, x.dim(axis), "axis " + axis + " of data shape " + x.shape());
    }

    /**
     * Constant index tuples of GatherND and ScatterND (input 1, last axis m): element j of a tuple indexes axis
     * {@code batchDims + j} of the data, under ONNX's negative-index rule.
     */
    private static void checkTupleIndices(OpContext c, int batchDims) {
        Tensor x = c.in(0), idx = c.in(1);
        if (!c.isConstant(1) || idx.ndim() < 1 || idx.numel() > 1 << 22 || x.shape().isSymbolic()) return;
        int m = idx.dim(idx.ndim() - 1);
        if (batchDims < 0 || m < 0 || batchDims + m > x.ndim()) {
            throw c.bad("index tuples of " + m + " values with batch_dims " + batchDims + " do not fit data shape " + x.shape());
        }
        long[] v = c.longs(1);
        for (int k = 0; k < v.length; k++) {
            int axis = batchDims + k % m;
            long n = x.dim(axis);
            if (v[k] < -n || v[k] >= n) {
                throw c.bad("index " + v[k] + " (element " + k + " of input 1 '" + c.node.inputs().get(1) + "') is out of range for axis " + axis
                        + " of data shape " + x.shape() + " of size " + n + "; valid are " + -n + " to " + (n - 1));
            }
        }
    }

    private static String checkReduction(Node n, long opset) {
        String r = n.attrs().s("reduction", "none");
        return List.of("none", "add", "mul", "max", "min").contains(r) ? null : "reduction '" + r + "' is not supported";
    }

    /** The scatter reduction: an attribute from opset 16 (mul from 16, max and min from 18), replacement before. */
    private static String reduction(OpContext c) { return c.opset >= 16 ? c.a.s("reduction", "none") : "none"; }

    /** The size of axis {@code a} of input 0 as an int64 scalar: a constant, or the axis's variable when it is symbolic. */
    private static Tensor size(OpContext c, int a) {
        Variable v = c.in(0).shape().variable(a);
        return v == null ? c.scalarOf(c.in(0).dim(a), DType.I64) : Tensor.variable(v).to(c.device);
    }

    static int clampAxis(long a, int r) {
        long v = a < 0 ? a + r : a;
        return (int) Math.max(0, Math.min(r, v));
    }

    private static final List<String> CONSTANT_VALUES = List.of("value", "value_float", "value_floats", "value_int", "value_ints");

    private static List<Tensor> constant(OpContext c) {
        Attrs a = c.a;
        // ONNX allows exactly one: taking the first of two would pick a value the file does not single out
        List<String> given = CONSTANT_VALUES.stream().filter(a::has).toList();
        if (given.size() > 1) throw c.bad("expected exactly one value attribute, got " + given);
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
            try {
                starts = c.longs(1);
                ends = c.longs(2);
            } catch (UnsupportedOperationException e) {
                // bounds known only when the plan runs (a loop's x[t:t + 1]): a part of a constant length is still a shape
                Tensor part = slicedAtRunTime(c, x);
                if (part == null) throw e;
                return one(part);
            }
            axes = c.has(3) ? c.longs(3) : null;
            steps = c.has(4) ? c.longs(4) : null;
        }
        if (starts == null || ends == null || starts.length != ends.length) {
            throw c.bad("starts and ends must be given with equal lengths, got " + Arrays.toString(starts) + " and " + Arrays.toString(ends));
        }
        // axes and steps are read by position beside starts: a shorter list would be an index error
        if (axes != null && axes.length != starts.length) {
            throw c.bad("axes " + Arrays.toString(axes) + " has " + axes.length + " values, expected " + starts.length + " (one per start)");
        }
        if (steps != null && steps.length != starts.length) {
            throw c.bad("steps " + Arrays.toString(steps) + " has " + steps.length + " values, expected " + starts.length + " (one per start)");
        }
        for (int k = 0; k < starts.length; k++) {
            int axis = axes == null ? k : c.axis(axes[k], x.ndim(), "axis");
            long step = steps == null ? 1 : steps[k];
            if (step == 0) throw c.bad("step 0 on axis " + axis);
            if (axis < x.ndim() && x.shape().variable(axis) != null) {
                x = symbolicSlice(c, x, axis, starts[k], ends[k], step);
                continue;
            }
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

    /**
     * x reshaped to {@code shape}, whose elements are constants or, as {@link ShapeValues} reads them, sizes known only
     * when the plan runs: each such size laid out at its maximum, where it must stay one of x's symbolic axes (kiln-core's
     * reshape keeps such an axis where it starts at the same element); refused where it would be merged, split or moved.
     */
    private static Tensor reshaped(OpContext c, Tensor x, List<Object> shape) {
        boolean allowZero = c.opset >= 14 && c.a.b("allowzero", false), symbolic = false;
        int[] target = new int[shape.size()];
        for (int k = 0; k < target.length; k++) {
            switch (shape.get(k)) {
                case Variable v -> {
                    target[k] = (int) v.max();
                    symbolic = true;
                }
                case Long l when l == 0 && !allowZero -> {
                    if (k >= x.ndim()) throw c.bad("shape " + shape + " copies axis " + k + " of " + x.shape() + ", which has no such axis");
                    target[k] = x.dim(k);
                }
                case Long l -> target[k] = Math.toIntExact(l);
                default -> throw new IllegalStateException("a shape element " + shape.get(k));
            }
        }
        if (!symbolic) return x.reshape(target);
        Tensor y;
        try {
            y = x.reshape(target);
        } catch (IllegalArgumentException e) {
            throw c.unsupported("shape " + shape + " of sizes known only when the plan runs does not keep the symbolic axes of " + x.shape() + ": "
                    + e.getMessage());
        }
        for (int k = 0; k < target.length; k++) {
            if (shape.get(k) instanceof Variable v && !v.equals(y.shape().variable(k))) {
                throw c.unsupported("shape " + shape + " of sizes known only when the plan runs puts '" + v.name() + "' at axis " + k
                        + ", where reshaping " + x.shape() + " gives " + y.shape());
            }
        }
        return y;
    }

    /**
     * A Slice of one axis whose start is known only when the plan runs and whose end is that start plus a constant
     * ({@link ConstantOffsets}), step 1: that many elements from the start (negative counts from the end), picked by indices
     * computed when the plan runs. ONNX clamps a part that runs past the axis to its end, which would change the shape: such
     * a run fails its index check instead. Null where the Slice is not of this form.
     */
    private static Tensor slicedAtRunTime(OpContext c, Tensor x) {
        if (!c.has(1) || !c.has(2) || c.in(1).numel() != 1 || c.in(2).numel() != 1 || c.in(1).dtype().isFloat()) return null;
        long[] axes = c.has(3) ? c.builder().constantIntegers(c.node.inputs().get(3)) : new long[] {0};
        long[] steps = c.has(4) ? c.builder().constantIntegers(c.node.inputs().get(4)) : new long[] {1};
        Long length = ConstantOffsets.difference(c.builder(), c.node.inputs().get(1), c.node.inputs().get(2));
        if (axes == null || axes.length != 1 || steps == null || steps.length != 1 || steps[0] != 1 || length == null || length < 0
                || length > Integer.MAX_VALUE - 8) {
            return null;
        }
        int axis = c.axis(axes[0], x.ndim(), "axis");
        Variable v = x.shape().variable(axis);
        Tensor n = c.here(v != null ? Tensor.variable(v) : Tensor.scalar(x.dim(axis), DType.I64));
        Tensor start = c.in(1).reshape().cast(DType.I64);
        start = Tensor.where(start.lt(0L), start.add(n), start);
        start = Tensor.where(start.lt(0L), 0L, start); // ONNX clamps a start before the axis to its beginning
        Tensor at = c.here(Tensor.arange(length.intValue()).cast(DType.I64)).add(start);
        return Tensor.withOpName("Slice node '" + c.node.label() + "'", () -> x.indexSelect(axis, at));
    }

    /**
     * A Slice along an axis whose size {@code n} is known only when the plan runs: the whole axis as it is, or a part of a
     * length that does not depend on {@code n} (from the front, or counted from the end: a decoder's {@code tokens[-2:]},
     * a model's last position), picked by indices computed from {@code n} when the plan runs. Refused where the part's
     * length depends on {@code n} (a symbolic size less a constant is no size a shape holds) or may be cut by it.
     */
    private static Tensor symbolicSlice(OpContext c, Tensor x, int axis, long start, long end, long step) {
        Variable n = x.shape().variable(axis);
        boolean toEnd = end >= n.max();
        if (step == 1 && (start == 0 || start <= -n.max()) && toEnd) return x;
        // a position from the front (a constant) or from the end (n less a constant)
        boolean startFromEnd = start < 0, endFromEnd = end < 0 || toEnd;
        long length = Math.max(0, toEnd ? -start : end - start);
        if (step != 1 || startFromEnd != endFromEnd || startFromEnd && -start > n.min() || !startFromEnd && end > n.min()) {
            throw c.unsupported("Slice [" + start + ", " + end + ") step " + step + " of axis " + axis + " of " + x.shape() + ", whose size '" + n.name()
                    + "' is in [" + n.min() + ", " + n.max() + "]: only the whole axis, or a part of a constant length within its smallest size, "
                    + "counted from its front or its end with step 1, has a shape known before the plan runs");
        }
        Tensor offsets = c.here(Tensor.arange((int) length).cast(DType.I64));
        Tensor at = startFromEnd ? offsets.add(c.here(Tensor.variable(n)).add(start)) : offsets.add(start);
        return x.indexSelect(axis, at);
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
}

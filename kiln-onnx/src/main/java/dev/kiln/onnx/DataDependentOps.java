package dev.kiln.onnx;

import dev.kiln.types.DType;
import dev.kiln.Tensor;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import static dev.kiln.onnx.OnnxOps.add;
import static dev.kiln.onnx.OnnxOps.one;

/**
 * Operators whose output shape depends on input values (Compress, NonZero, Unique, NonMaxSuppression). Where the deciding
 * input is known while the graph is built (a constant, or the realised graph input it comes from under
 * {@link OnnxModel#run}), it is read then and the selection becomes a constant index tensor for the lazy graph: the
 * cheaper path. In a prepared {@link OnnxPlan} it is known only when the plan runs: Compress, NonZero and
 * NonMaxSuppression then make the selection in a sized host step ({@link SizedSteps}) laid out at the most it can
 * select, whose count binds the output's symbolic extent for the rest of the run; Unique too, its inverse indices (the
 * input axis's size, static or symbolic) a plain host step beside it. An input of a symbolic size is read at its size in
 * the run (Compress along a symbolic axis, Unique of a symbolic input). One implementation of each selection serves both
 * paths.
 */
final class DataDependentOps {
    private DataDependentOps() {}

    static void register() {
        add("Compress", 9, c -> {
            Tensor x = c.in(0);
            boolean flat = !c.a.has("axis");
            if (flat) x = flattened(c, x);
            int axis = flat ? 0 : c.axis(c.a.i("axis", 0), x.ndim(), "axis");
            int n = x.dim(axis);
            Tensor idx;
            if (Math.min(c.in(1).numel(), n) == 0) {
                idx = c.constant(DType.I64, new long[0], 0); // an empty condition or axis keeps nothing, whatever runs
            } else if (SizedSteps.knownNow(c, 1)) {
                long[] keep = kept(Arrays.stream(c.longs(1)).mapToDouble(v -> v).toArray(), n);
                idx = c.constant(DType.I64, keep, keep.length);
            } else {
                // the condition is known when the plan runs: the kept positions as a host step, at most one per element; a
                // symbolic axis is read at its length in the run (an input of the step), so no position past it is kept
                Tensor cond = c.in(1);
                int capacity = Math.min(Math.toIntExact(cond.numel()), n);
                DType dt = cond.dtype();
                dev.kiln.types.Variable length = x.shape().variable(axis);
                Tensor[] inputs = length == null ? new Tensor[] {cond} : new Tensor[] {cond, Tensor.variable(length).cast(DType.I64).to(c.device)};
                idx = SizedSteps.step(c, DType.I64, new int[] {capacity}, 0, (in, dims, out) -> {
                    int now = length == null ? n : (int) SizedSteps.longValue(in.get(1), DType.I64);
                    long[] keep = kept(SizedSteps.doubles(in.getFirst(), dt, SizedSteps.numel(dims.getFirst())), now);
                    SizedSteps.writeLongs(out, keep, keep.length);
                    return keep.length;
                }, inputs);
            }
            return one(x.indexSelect(axis, idx));
        });
        add("NonZero", 9, c -> {
            Tensor x = c.in(0);
            int[] d = x.dims();
            if (SizedSteps.knownNow(c, 0)) {
                long[] hits = nonZero(c.doubles(0));
                long[] out = new long[d.length * hits.length];
                write(hits, d, out, hits.length);
                return one(c.constant(DType.I64, out, d.length, hits.length));
            }
            // known when the plan runs: [rank, count] laid out at [rank, numel], row a of the output at a * numel
            int numel = Math.toIntExact(x.numel());
            DType dt = x.dtype();
            return one(SizedSteps.step(c, DType.I64, new int[] {d.length, numel}, 1, (in, dims, out) -> {
                // the input at its size in this run (a symbolic one's leading corner); coordinates within those dims
                int[] now = dims.getFirst();
                long[] hits = nonZero(SizedSteps.doubles(in.getFirst(), dt, SizedSteps.numel(now)));
                long[] rows = new long[d.length * numel];
                write(hits, now, rows, numel);
                SizedSteps.writeLongs(out, rows, rows.length);
                return hits.length;
            }, x));
        });
        add("Unique", 11, DataDependentOps::unique);
        add("NonMaxSuppression", 10, NonMaxSuppression::apply);
    }

    /**
     * The positions {@code k < n} whose condition, truncated to an integer, is non-zero, in order (Compress: a condition
     * longer than the axis is cut to it).
     */
    static long[] kept(double[] cond, int n) {
        return java.util.stream.IntStream.range(0, Math.min(cond.length, n)).filter(k -> (long) cond[k] != 0).asLongStream().toArray();
    }

    /** The flat positions of the non-zero elements (NaN included), in C order. */
    static long[] nonZero(double[] v) {
        return java.util.stream.IntStream.range(0, v.length).filter(i -> v[i] != 0).asLongStream().toArray();
    }

    /** NonZero's output: the coordinates of each flat position along each axis of {@code dims}, axis {@code a}'s at {@code a * stride}. */
    static void write(long[] hits, int[] dims, long[] out, int stride) {
        for (int k = 0; k < hits.length; k++) {
            int[] at = unravel(hits[k], dims);
            for (int a = 0; a < dims.length; a++) out[a * stride + k] = at[a];
        }
    }

    private static int[] unravel(long i, int[] dims) {
        int[] out = new int[dims.length];
        for (int k = dims.length - 1; k >= 0; k--) {
            out[k] = (int) (i % dims[k]);
            i /= dims[k];
        }
        return out;
    }

    /** Unique elements (or slices along {@code axis}), sorted or in first-occurrence order, with indices, inverse indices and counts. */
    /**
     * Compress's and Unique's input without an axis, flattened; one of a symbolic size only where it has one axis (the
     * flattened size of several, one symbolic, would be a symbolic size times a constant, which Kiln's shapes do not hold).
     */
    private static Tensor flattened(OpContext c, Tensor x) {
        if (x.ndim() > 1 && x.shape().isSymbolic()) {
            throw c.unsupported("without an axis the input " + x.shape() + " is flattened, and a symbolic size among several axes has no flattened "
                    + "size in a prepared plan; give the node an axis, or prepare the model with fixed sizes for this input");
        }
        return x.flatten();
    }

    private static List<Tensor> unique(OpContext c) {
        Tensor x = c.in(0);
        boolean flat = !c.a.has("axis");
        if (flat) x = flattened(c, x);
        int axis = flat ? 0 : c.axis(c.a.i("axis", 0), x.ndim(), "axis");
        boolean sorted = c.a.b("sorted", true);
        int n = x.dim(axis);
        if (SizedSteps.knownNow(c, 0)) {
            int[] d = x.dims();
            Uniques u = Uniques.of(c.doubles(0), d, axis, sorted);
            Tensor y = x.indexSelect(axis, c.constant(DType.I64, u.first(), u.first().length));
            return List.of(y, c.constant(DType.I64, u.first(), u.first().length), c.constant(DType.I64, u.inverse(), n),
                    c.constant(DType.I64, u.counts(), u.counts().length));
        }
        // known when the plan runs: first indices (row 0) and counts (row 1) as one sized step of up to n uniques, and the
        // inverse (one per slice along the axis: n, or the axis's symbolic length, which it takes) as a step of its own; both
        // read the input at its dims in the run
        DType dt = x.dtype();
        Tensor block = SizedSteps.step(c, DType.I64, new int[] {2, n}, 1, (in, dims, out) -> {
            int[] now = dims.getFirst();
            Uniques u = Uniques.of(SizedSteps.doubles(in.getFirst(), dt, SizedSteps.numel(now)), now, axis, sorted);
            long[] rows = new long[2 * n];
            System.arraycopy(u.first(), 0, rows, 0, u.first().length);
            System.arraycopy(u.counts(), 0, rows, n, u.counts().length);
            SizedSteps.writeLongs(out, rows, rows.length);
            return u.first().length;
        }, x);
        Tensor inverse = SizedSteps.hostStep(c, "inverse", DType.I64, new int[] {n}, (in, dims, out) -> {
            int[] now = dims.getFirst();
            Uniques u = Uniques.of(SizedSteps.doubles(in.getFirst(), dt, SizedSteps.numel(now)), now, axis, sorted);
            SizedSteps.writeLongs(out, u.inverse(), u.inverse().length);
            return u.inverse().length;
        }, x);
        if (x.shape().variable(axis) != null) inverse = inverse.withSymbolicDim(0, x.shape().variable(axis));
        Tensor first = block.slice(0, 0, 1, 1).squeeze(0), counts = block.slice(0, 1, 2, 1).squeeze(0);
        return List.of(x.indexSelect(axis, first), first, inverse, counts);
    }

    /** What Unique selects: each unique slice's first index, in output order, its count, and each slice's unique's position. */
    record Uniques(long[] first, long[] counts, long[] inverse) {
        /** The uniques of the slices along {@code axis} of values {@code v} of shape {@code d} (C order). */
        static Uniques of(double[] v, int[] d, int axis, boolean sorted) {
            int n = d[axis];
            int outer = 1, inner = 1;
            for (int k = 0; k < axis; k++) outer *= d[k];
            for (int k = axis + 1; k < d.length; k++) inner *= d[k];
            // slice s as a list of its values (outer-major, then inner), the key compared for uniqueness and order
            List<double[]> slices = new ArrayList<>();
            for (int s = 0; s < n; s++) {
                double[] sl = new double[outer * inner];
                for (int o = 0; o < outer; o++) for (int i = 0; i < inner; i++) sl[o * inner + i] = v[(o * n + s) * inner + i];
                slices.add(sl);
            }
            Map<String, Integer> firstOf = new LinkedHashMap<>();
            Map<String, Integer> count = new LinkedHashMap<>();
            for (int s = 0; s < n; s++) {
                String key = Arrays.toString(slices.get(s));
                firstOf.putIfAbsent(key, s);
                count.merge(key, 1, Integer::sum);
            }
            List<Integer> order = new ArrayList<>(firstOf.values());
            if (sorted) order.sort(Comparator.comparing(slices::get, Arrays::compare));
            long[] first = new long[order.size()], counts = new long[order.size()], inverse = new long[n];
            Map<String, Integer> position = new LinkedHashMap<>();
            for (int k = 0; k < order.size(); k++) {
                String key = Arrays.toString(slices.get(order.get(k)));
                first[k] = order.get(k);
                counts[k] = count.get(key);
                position.put(key, k);
            }
            for (int s = 0; s < n; s++) inverse[s] = position.get(Arrays.toString(slices.get(s)));
            return new Uniques(first, counts, inverse);
        }
    }
}

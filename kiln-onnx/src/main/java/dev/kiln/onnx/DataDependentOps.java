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
 * Operators whose output shape depends on input values (Compress, NonZero, Unique, NonMaxSuppression): the deciding input is
 * read at build time (a constant, or the realised graph input it comes from), and the selection becomes an
 * index tensor for the lazy graph.
 */
final class DataDependentOps {
    private DataDependentOps() {}

    static void register() {
        add("Compress", 9, c -> {
            Tensor x = c.in(0);
            long[] cond = c.longs(1);
            boolean flat = !c.a.has("axis");
            if (flat) x = x.flatten();
            int axis = flat ? 0 : c.axis(c.a.i("axis", 0), x.ndim(), "axis");
            List<Long> keep = new ArrayList<>();
            for (int k = 0; k < cond.length && k < x.dim(axis); k++) if (cond[k] != 0) keep.add((long) k);
            long[] idx = keep.stream().mapToLong(Long::longValue).toArray();
            return one(x.indexSelect(axis, c.constant(DType.I64, idx, idx.length)));
        });
        add("NonZero", 9, c -> {
            Tensor x = c.in(0);
            double[] v = c.doubles(0);
            int[] d = x.dims();
            List<int[]> hits = new ArrayList<>();
            for (int i = 0; i < v.length; i++) if (v[i] != 0) hits.add(unravel(i, d));
            long[] out = new long[d.length * hits.size()];
            for (int k = 0; k < hits.size(); k++) for (int a = 0; a < d.length; a++) out[a * hits.size() + k] = hits.get(k)[a];
            return one(c.constant(DType.I64, out, d.length, hits.size()));
        });
        add("Unique", 11, DataDependentOps::unique);
        add("NonMaxSuppression", 10, NonMaxSuppression::apply);
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
    private static List<Tensor> unique(OpContext c) {
        Tensor x = c.in(0);
        boolean flat = !c.a.has("axis");
        if (flat) x = x.flatten();
        int axis = flat ? 0 : c.axis(c.a.i("axis", 0), x.ndim(), "axis");
        double[] v = c.doubles(0);
        int n = x.dim(axis);
        int[] d = x.dims();
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
        if (c.a.b("sorted", true)) order.sort(Comparator.comparing(slices::get, Arrays::compare));
        long[] first = new long[order.size()], counts = new long[order.size()], inverse = new long[n];
        Map<String, Integer> position = new LinkedHashMap<>();
        for (int k = 0; k < order.size(); k++) {
            String key = Arrays.toString(slices.get(order.get(k)));
            first[k] = order.get(k);
            counts[k] = count.get(key);
            position.put(key, k);
        }
        for (int s = 0; s < n; s++) inverse[s] = position.get(Arrays.toString(slices.get(s)));
        Tensor y = x.indexSelect(axis, c.constant(DType.I64, first, first.length));
        return List.of(y, c.constant(DType.I64, first, first.length), c.constant(DType.I64, inverse, n), c.constant(DType.I64, counts, counts.length));
    }
}

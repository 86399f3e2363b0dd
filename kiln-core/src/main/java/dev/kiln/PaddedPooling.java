package dev.kiln;

import dev.kiln.types.DType;
import java.util.Arrays;

/**
 * Max, average and power pooling with ONNX's geometry: separate begin and end pads per spatial axis
 * (any size, as ONNX's explicit and auto pads give them), dilations, ceil mode, and for max pooling the
 * Indices output. Windows come from {@link Convolution#windows} over the padded input.
 */
final class PaddedPooling {
    private PaddedPooling() {}

    /** Window geometry: the number of spatial axes, kernel, strides, (begin, end) pads, dilations, output sizes, ceil-mode extra end padding. */
    private record Geometry(int m, int[] kernel, int[] stride, int[] begin, int[] end, int[] dilation, int[] out, int[] extra) {
        /** (before, after) pairs padding the spatial axes of a rank-r tensor, with or without the ceil-mode extra. */
        int[][] pads(int r, boolean withExtra) {
            int[][] p = new int[r][2];
            for (int i = 0; i < m; i++) p[r - m + i] = new int[] {begin[i], end[i] + (withExtra ? extra[i] : 0)};
            return p;
        }

        int[] windowAxes(int rank) {
            int[] axes = new int[m];
            for (int i = 0; i < m; i++) axes[i] = rank - m + i;
            return axes;
        }
    }

    private static Geometry geometry(String op, Tensor x, int[] kernel, int[] strides, int[] pads, int[] dilations, boolean ceilMode) {
        if (kernel == null || kernel.length == 0) throw new IllegalArgumentException(op + ": kernel shape is required");
        int m = kernel.length;
        if (x.ndim() != m + 2) throw new IllegalArgumentException(op + ": input " + x.shape() + " must be (N, C, " + m + " spatial axes) for kernel " + Arrays.toString(kernel));
        int[] k = Convolution.positive(op, "kernel", kernel);
        int[] s = strides == null ? filled(m, 1) : Convolution.positive(op, "strides", check(op, "strides", strides, m));
        int[] d = dilations == null ? filled(m, 1) : Convolution.positive(op, "dilations", check(op, "dilations", dilations, m));
        int[] p = pads == null ? new int[2 * m] : Convolution.nonNegative(op, "pads", check(op, "pads", pads, 2 * m));
        int[] begin = Arrays.copyOfRange(p, 0, m), end = Arrays.copyOfRange(p, m, 2 * m), out = new int[m], extra = new int[m];
        for (int i = 0; i < m; i++) {
            int n = x.dim(2 + i), eff = d[i] * (k[i] - 1) + 1, span = n + begin[i] + end[i];
            if (span < eff) {
                throw new IllegalArgumentException(op + ": kernel " + Arrays.toString(k) + " (dilations " + Arrays.toString(d) + ") does not fit input "
                        + x.shape() + " padded by " + Arrays.toString(p) + " (spatial axis " + i + ")");
            }
            int o = Math.floorDiv(span - eff + (ceilMode ? s[i] - 1 : 0), s[i]) + 1;
            if (ceilMode && (o - 1) * s[i] >= n + begin[i]) o--; // a window starting in the end padding is dropped
            out[i] = o;
            extra[i] = Math.max(0, (o - 1) * s[i] + eff - span);
        }
        return new Geometry(m, k, s, begin, end, d, out, extra);
    }

    private static int[] check(String op, String name, int[] v, int n) {
        if (v.length != n) throw new IllegalArgumentException(op + ": " + name + " " + Arrays.toString(v) + " must have " + n + " values");
        return v;
    }

    private static int[] filled(int n, int v) {
        int[] a = new int[n];
        Arrays.fill(a, v);
        return a;
    }

    private static Tensor windows(Tensor t, Geometry g) { return Convolution.windows(t, g.kernel, g.stride, g.dilation); }

    /** ONNX MaxPool (values): padding and the ceil-mode extra count as the lowest value. */
    static Tensor maxPool(Tensor x, int[] kernel, int[] strides, int[] pads, int[] dilations, boolean ceilMode) {
        Geometry g = geometry("maxPool", x, kernel, strides, pads, dilations, ceilMode);
        Tensor win = windows(x.pad(g.pads(x.ndim(), true), Tensor.PadMode.CONSTANT, lowest(x.dtype())), g);
        return win.max(g.windowAxes(win.ndim()), false);
    }

    /**
     * ONNX MaxPool with Indices: the values and, as i64, the flattened position in x of the first maximum
     * of each window (row-major over the spatial axes, or column-major with {@code storageOrder} 1).
     */
    static Tensor.Pooled maxPoolWithIndices(Tensor x, int[] kernel, int[] strides, int[] pads, int[] dilations, boolean ceilMode, int storageOrder) {
        String op = "maxPoolWithIndices";
        if (storageOrder != 0 && storageOrder != 1) throw new IllegalArgumentException(op + ": storageOrder must be 0 or 1, got " + storageOrder);
        Geometry g = geometry(op, x, kernel, strides, pads, dilations, ceilMode);
        int r = x.ndim(), m = g.m;
        int[] spatial = Arrays.copyOfRange(x.dims(), 2, r);
        // the flat position of every element: plane offset plus the spatial position in the storage order
        Tensor pos = null;
        long stride = 1;
        for (int j = 0; j < m; j++) {
            int i = storageOrder == 0 ? m - 1 - j : j; // the fastest-varying spatial axis first
            Tensor term = ElementIndexing.positions(spatial[i], r, 2 + i, x.device()).mul(stride);
            pos = pos == null ? term : pos.add(term);
            stride *= spatial[i];
        }
        Tensor plane = ElementIndexing.positions(x.dim(0), r, 0, x.device()).mul((long) x.dim(1)).add(ElementIndexing.positions(x.dim(1), r, 1, x.device())).mul(stride);
        pos = pos.add(plane);
        Tensor vals = windows(x.pad(g.pads(r, true), Tensor.PadMode.CONSTANT, lowest(x.dtype())), g);
        Tensor where = windows(pos.broadcastTo(x.dims()).pad(g.pads(r, true), Tensor.PadMode.CONSTANT, -1), g);
        int[] lead = Arrays.copyOfRange(vals.dims(), 0, r), flat = Arrays.copyOf(lead, r + 1);
        flat[r] = ElementIndexing.prod(g.kernel);
        Tensor v = vals.reshape(flat), w = where.reshape(flat);
        Tensor first = v.argmax(r, true); // the first maximum in window order (row-major over the kernel)
        Tensor hit = first.eq(ElementIndexing.positions(flat[r], r + 1, r, x.device()));
        Tensor idx = Tensor.where(hit, w, 0L).sum(new int[] {r}, false);
        return new Tensor.Pooled(v.max(new int[] {r}, false), idx.cast(DType.I64));
    }

    /**
     * ONNX AveragePool: the window sum over the number of its elements inside the input, or with
     * {@code countIncludePad} inside the padded input (never the ceil-mode extra); integer inputs give f32.
     */
    static Tensor avgPool(Tensor x, int[] kernel, int[] strides, int[] pads, int[] dilations, boolean ceilMode, boolean countIncludePad) {
        Geometry g = geometry("avgPool", x, kernel, strides, pads, dilations, ceilMode);
        int r = x.ndim();
        DType out = x.dtype().isFloat() ? x.dtype() : DType.F32, ct = Normalization.computeType(out);
        Tensor win = windows(x.cast(ct).pad(g.pads(r, true)), g);
        int[] ones = filled(r, 1);
        System.arraycopy(x.dims(), 2, ones, 2, g.m);
        Tensor inside = Tensor.ones(ct, ones).to(x.device());
        if (countIncludePad) inside = inside.pad(g.pads(r, false), Tensor.PadMode.CONSTANT, 1);
        int[][] rest = new int[r][2];
        for (int i = 0; i < g.m; i++) {
            rest[2 + i][0] = countIncludePad ? 0 : g.begin[i];
            rest[2 + i][1] = countIncludePad ? g.extra[i] : g.end[i] + g.extra[i];
        }
        Tensor count = windows(inside.pad(rest), g).sum(g.windowAxes(win.ndim()), false);
        return win.sum(g.windowAxes(win.ndim()), false).div(count).cast(out);
    }

    /** ONNX LpPool: {@code (sum |x|^p)^(1/p)} over each window, padding counting as 0. */
    static Tensor lpPool(Tensor x, double p, int[] kernel, int[] strides, int[] pads, int[] dilations, boolean ceilMode) {
        if (!(p > 0)) throw new IllegalArgumentException("lpPool: p must be > 0, got " + p);
        Geometry g = geometry("lpPool", x, kernel, strides, pads, dilations, ceilMode);
        DType out = x.dtype().isFloat() ? x.dtype() : DType.F32, ct = Normalization.computeType(out);
        Tensor win = windows(x.cast(ct).abs().pow(p).pad(g.pads(x.ndim(), true)), g);
        return win.sum(g.windowAxes(win.ndim()), false).pow(1 / p).cast(out);
    }

    private static double lowest(DType dt) { return dt.isFloat() ? Double.NEGATIVE_INFINITY : dt.minInt(); }
}

package dev.kiln;

import java.util.Arrays;

/**
 * Max, average, power-average and global pooling (PyTorch semantics) over the trailing spatial axes of
 * (N, C, spatial...) or (C, spatial...), reducing the sliding windows of {@link Convolution#windows}.
 */
final class Pooling {
    private Pooling() {}

    /**
     * Window geometry after the argument checks. {@code extra} is the right padding that ceil mode adds
     * so that the last partial window exists.
     */
    private record Geometry(int spatial, int[] kernel, int[] stride, int[] padding, int[] dilation, int[] extra) {
        /** (before, after) pairs for {@link Tensor#pad} of a tensor of {@code rank}. */
        int[][] pads(int rank) {
            int[][] pads = new int[rank][2];
            for (int i = 0; i < spatial; i++) pads[rank - spatial + i] = new int[] {padding[i], padding[i] + extra[i]};
            return pads;
        }

        /** The window axes of {@link Convolution#windows}'s result (the last ones). */
        int[] windowAxes(int rank) {
            int[] axes = new int[spatial];
            for (int i = 0; i < spatial; i++) axes[i] = rank - spatial + i;
            return axes;
        }
    }

    private static Geometry geometry(String op, int spatial, Tensor x, int[] kernel, int[] stride, int[] padding, int[] dilation, boolean ceilMode) {
        if (x.ndim() != spatial + 1 && x.ndim() != spatial + 2) {
            String layout = Convolution.inputLayout(spatial);
            throw new IllegalArgumentException(op + ": input must be " + (spatial + 1) + "-D (C, " + layout.substring(7) + " or " + (spatial + 2) + "-D "
                    + layout + ", got " + x.shape());
        }
        if (kernel == null) throw new IllegalArgumentException(op + ": kernel size is required");
        int[] k = Convolution.positive(op, "kernel", Convolution.spatialArg(op, "kernel", kernel, spatial, 0));
        int[] s = stride == null ? k : Convolution.positive(op, "stride", Convolution.spatialArg(op, "stride", stride, spatial, 0));
        int[] p = Convolution.nonNegative(op, "padding", Convolution.spatialArg(op, "padding", padding, spatial, 0));
        int[] d = Convolution.positive(op, "dilation", Convolution.spatialArg(op, "dilation", dilation, spatial, 1));
        int[] extra = new int[spatial];
        for (int i = 0; i < spatial; i++) {
            if (p[i] > k[i] / 2) {
                throw new IllegalArgumentException(op + ": padding " + Arrays.toString(p) + " must be at most half the kernel " + Arrays.toString(k));
            }
            int n = x.dim(x.ndim() - spatial + i), eff = d[i] * (k[i] - 1) + 1;
            if (n == 0 || n + 2 * p[i] < eff) {
                throw new IllegalArgumentException(op + ": kernel " + Arrays.toString(k) + " (dilation " + Arrays.toString(d) + ") does not fit input "
                        + x.shape() + " padded by " + Arrays.toString(p) + " (spatial axis " + i + ")");
            }
            int o = Math.floorDiv(n + 2 * p[i] - eff + (ceilMode ? s[i] - 1 : 0), s[i]) + 1;
            // as torch: a window that would start in the right padding is dropped
            if (ceilMode && (o - 1) * s[i] >= n + p[i]) o--;
            extra[i] = Math.max(0, (o - 1) * s[i] + eff - (n + 2 * p[i]));
        }
        return new Geometry(spatial, k, s, p, d, extra);
    }

    /** {@code torch.nn.functional.max_pool{n}d}; padding counts as the lowest value of the dtype. */
    static Tensor maxPool(String op, int spatial, Tensor x, int[] kernel, int[] stride, int[] padding, int[] dilation, boolean ceilMode) {
        Geometry g = geometry(op, spatial, x, kernel, stride, padding, dilation, ceilMode);
        double lowest = x.dtype().isFloat() ? Double.NEGATIVE_INFINITY : x.dtype().minInt();
        Tensor win = Convolution.windows(x.pad(g.pads(x.ndim()), Tensor.PadMode.CONSTANT, lowest), g.kernel(), g.stride(), g.dilation());
        return win.max(g.windowAxes(win.ndim()), false);
    }

    /**
     * {@code torch.nn.functional.avg_pool{n}d}: the window sum divided by the number of its elements inside
     * the padded input ({@code countIncludePad}) or inside the input; ceil mode's extra padding never counts.
     */
    static Tensor avgPool(String op, int spatial, Tensor x, int[] kernel, int[] stride, int[] padding, boolean ceilMode, boolean countIncludePad) {
        Geometry g = geometry(op, spatial, x, kernel, stride, padding, null, ceilMode);
        Tensor xf = x.toFloat();
        Tensor win = Convolution.windows(xf.pad(g.pads(xf.ndim())), g.kernel(), g.stride(), g.dilation());
        Tensor sums = win.sum(g.windowAxes(win.ndim()), false);
        // the divisor depends only on the geometry, so it is a host constant (no kernel); it factors over
        // the axes: per axis, how many positions of each window are counted
        Tensor count = null;
        for (int i = 0; i < spatial; i++) {
            int n = x.dim(x.ndim() - spatial + i), p = g.padding()[i], k = g.kernel()[i], st = g.stride()[i];
            int len = countIncludePad ? n + 2 * p : n, before = countIncludePad ? 0 : p;
            int windows = (n + 2 * p + g.extra()[i] - k) / st + 1;
            double[] perWindow = new double[windows];
            for (int o = 0; o < windows; o++) {
                int lo = Math.max(o * st, before), hi = Math.min(o * st + k, before + len);
                perWindow[o] = Math.max(0, hi - lo);
            }
            int[] shape = new int[spatial];
            Arrays.fill(shape, 1);
            shape[i] = windows;
            Tensor axisCount = Tensor.of(xf.dtype(), perWindow, shape);
            count = count == null ? axisCount : count.mul(axisCount);
        }
        return sums.div(count.to(x.device()));
    }

    /**
     * {@code torch.nn.functional.lp_pool{n}d}: {@code (sum x^p)^(1/p)} over each window, computed as torch
     * does from the average times the kernel size (so with ceil mode a partial window's sum is scaled up
     * to the full kernel).
     */
    static Tensor lpPool(String op, int spatial, Tensor x, double p, int[] kernel, int[] stride, boolean ceilMode) {
        if (!(p > 0) || Double.isInfinite(p)) throw new IllegalArgumentException(op + ": p must be positive and finite, got " + p);
        Tensor avg = avgPool(op, spatial, x.toFloat().pow(p), kernel, stride, null, ceilMode, true);
        long size = 1;
        for (int k : Convolution.spatialArg(op, "kernel", kernel, spatial, 0)) size *= k;
        return avg.mul((double) size).pow(1 / p);
    }

    /** Mean over all spatial axes (2..), kept as size 1. */
    static Tensor globalAvgPool(Tensor x) { return x.mean(spatialAxes("globalAvgPool", x), true); }

    /** Maximum over all spatial axes (2..), kept as size 1. */
    static Tensor globalMaxPool(Tensor x) { return x.max(spatialAxes("globalMaxPool", x), true); }

    private static int[] spatialAxes(String op, Tensor x) {
        if (x.ndim() < 3) throw new IllegalArgumentException(op + ": input must be at least 3-D (N, C, spatial...), got " + x.shape());
        int[] axes = new int[x.ndim() - 2];
        for (int i = 0; i < axes.length; i++) axes[i] = 2 + i;
        return axes;
    }
}

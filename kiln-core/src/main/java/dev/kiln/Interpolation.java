package dev.kiln;

import dev.kiln.types.DType;
import java.util.Arrays;

/**
 * Resizing of the spatial axes (2..) as {@code torch.nn.functional.interpolate}. The source positions of
 * every output position are compile-time constants, so each axis becomes a host-built (out, in) selection
 * mask with interpolation weights, applied by a masked sum. Positions and weights are computed in f32
 * arithmetic exactly as PyTorch's CPU kernels do, so the chosen neighbours agree even where rounding
 * decides them.
 */
final class Interpolation {
    private Interpolation() {}

    private static final String MODES = "'nearest', 'linear'";

    static Tensor interpolate(Tensor x, int[] size, String mode, boolean alignCorners) {
        String op = "interpolate";
        if (mode == null || !(mode.equals("nearest") || mode.equals("linear"))) {
            throw new IllegalArgumentException(op + ": unknown mode " + (mode == null ? "null" : "'" + mode + "'") + "; valid modes are " + MODES);
        }
        boolean linear = mode.equals("linear");
        if (alignCorners && !linear) {
            throw new IllegalArgumentException(op + ": alignCorners applies only to mode 'linear', not '" + mode + "'");
        }
        if (x.ndim() < 3) {
            throw new IllegalArgumentException(op + ": input " + x.shape() + " must be (N, C, spatial...) with at least one spatial axis");
        }
        int spatial = x.ndim() - 2;
        if (size.length != spatial) {
            throw new IllegalArgumentException(op + ": size " + Arrays.toString(size) + " has " + size.length + " entries, input "
                    + x.shape() + " has " + spatial + " spatial axes");
        }
        for (int i = 0; i < spatial; i++) {
            if (size[i] <= 0 || x.dim(i + 2) <= 0) {
                throw new IllegalArgumentException(op + ": input " + x.shape() + " and size " + Arrays.toString(size)
                        + " must be positive on every spatial axis");
            }
        }
        Tensor y = linear ? x.toFloat() : x;
        for (int i = 0; i < spatial; i++) {
            int a = i + 2, n = x.dim(a), m = size[i];
            y = linear ? resizeLinear(y, a, n, m, alignCorners) : resizeNearest(y, a, n, m);
        }
        return y;
    }

    /** PyTorch's legacy nearest: source {@code min(floor(dst * (float) in / out), in - 1)}. */
    private static Tensor resizeNearest(Tensor x, int a, int n, int m) {
        float scale = (float) n / m;
        boolean[] take = new boolean[m * n];
        boolean identity = m == n;
        for (int j = 0; j < m; j++) {
            int src = Math.min((int) Math.floor(j * scale), n - 1);
            take[j * n + src] = true;
            identity &= src == j;
        }
        if (identity) return x;
        Tensor xt = x.transpose(a, -1).unsqueeze(-2); // (..., 1, n) against the (m, n) mask
        Tensor mask = Tensor.of(take, m, n).to(x.device());
        return Tensor.where(mask, xt, 0).sum(new int[] {-1}, false).cast(x.dtype()).transpose(a, -1);
    }

    /**
     * Linear weights between the two neighbours of each source position: half-pixel centres
     * ({@code (dst + 0.5) * in/out - 0.5}, clamped at 0) or, with aligned corners,
     * {@code dst * (in-1)/(out-1)}.
     */
    private static Tensor resizeLinear(Tensor x, int a, int n, int m, boolean alignCorners) {
        if (m == n) return x; // PyTorch copies equal sizes through, whatever the coordinate mode
        float scale = alignCorners ? (m > 1 ? (float) (n - 1) / (m - 1) : 0f) : (float) n / m;
        boolean[] take = new boolean[m * n];
        double[] weight = new double[m * n];
        for (int j = 0; j < m; j++) {
            float real = alignCorners ? scale * j : Math.max(scale * (j + 0.5f) - 0.5f, 0f);
            int i0 = (int) real;
            int i1 = i0 + (i0 < n - 1 ? 1 : 0);
            float l1 = Math.min(Math.max(real - i0, 0f), 1f), l0 = 1f - l1;
            take[j * n + i0] = true;
            take[j * n + i1] = true;
            weight[j * n + i0] += l0;
            weight[j * n + i1] += l1;
        }
        Tensor xt = x.transpose(a, -1).unsqueeze(-2);
        Tensor mask = Tensor.of(take, m, n).to(x.device());
        Tensor w = Tensor.of(DType.F32, weight, m, n).to(x.device());
        DType dt = x.dtype();
        return Tensor.where(mask, xt.mul(w.cast(Normalization.computeType(dt))), 0).sum(new int[] {-1}, false).cast(dt).transpose(a, -1);
    }
}

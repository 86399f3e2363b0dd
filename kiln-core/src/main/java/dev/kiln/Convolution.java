package dev.kiln;

import dev.kiln.types.DType;
import java.util.Arrays;

/**
 * Convolution and transposed convolution (PyTorch semantics, layout (N, C, spatial...)), composed from
 * movement ops, broadcasting multiply and sum. The sliding windows ({@link #windows}) are shared with
 * {@link Pooling}.
 */
final class Convolution {
    private Convolution() {}

    /**
     * {@code torch.nn.functional.conv{n}d}: input (N, Cin, spatial...), weight (Cout, Cin/groups, k...),
     * bias (Cout) or null. {@code stride}, {@code padding} and {@code dilation} hold one value per spatial
     * axis or a single value for all (null: 1, 0, 1).
     */
    static Tensor conv(String op, int spatial, Tensor x, Tensor w, Tensor b, int[] stride, int[] padding, int[] dilation, int groups) {
        checkRank(op, "input", x, spatial, inputLayout(spatial));
        checkRank(op, "weight", w, spatial, "(Cout, Cin/groups" + kernelLayout(spatial) + ")");
        int c = x.dim(1), f = w.dim(0);
        checkGroups(op, x, w, groups, c, f);
        if (w.dim(1) * groups != c) {
            throw new IllegalArgumentException(op + ": input " + x.shape() + " has " + c + " channels, weight " + w.shape() + " expects "
                    + w.dim(1) * groups + " (groups " + groups + ")");
        }
        checkBias(op, b, f);
        int[] s = positive(op, "stride", spatialArg(op, "stride", stride, spatial, 1));
        int[] p = nonNegative(op, "padding", spatialArg(op, "padding", padding, spatial, 0));
        int[] d = positive(op, "dilation", spatialArg(op, "dilation", dilation, spatial, 1));
        int[] k = kernel(w, spatial);
        int[] n = Arrays.copyOfRange(x.dims(), 2, 2 + spatial);
        for (int i = 0; i < spatial; i++) {
            if (d[i] * (k[i] - 1) + 1 > n[i] + 2 * p[i]) {
                throw new IllegalArgumentException(op + ": kernel " + Arrays.toString(k) + " (dilation " + Arrays.toString(d) + ") is larger than input "
                        + x.shape() + " padded by " + Arrays.toString(p) + " (spatial axis " + i + ")");
            }
        }
        int[][] pads = new int[x.ndim()][2];
        for (int i = 0; i < spatial; i++) pads[2 + i] = new int[] {p[i], p[i]};
        return correlate(x.pad(pads), w, b, s, d, groups);
    }

    /**
     * {@code torch.nn.functional.conv_transpose{n}d}: input (N, Cin, spatial...), weight (Cin, Cout/groups, k...),
     * bias (Cout) or null; output size {@code (n-1)*stride - 2*padding + dilation*(k-1) + outputPadding + 1}.
     */
    static Tensor convTranspose(String op, int spatial, Tensor x, Tensor w, Tensor b, int[] stride, int[] padding, int[] outputPadding,
                                int[] dilation, int groups) {
        checkRank(op, "input", x, spatial, inputLayout(spatial));
        checkRank(op, "weight", w, spatial, "(Cin, Cout/groups" + kernelLayout(spatial) + ")");
        int c = x.dim(1), fg = w.dim(1);
        if (groups <= 0) throw new IllegalArgumentException(op + ": groups must be positive, got " + groups);
        if (c % groups != 0) {
            throw new IllegalArgumentException(op + ": groups " + groups + " does not divide the " + c + " channels of input " + x.shape());
        }
        if (w.dim(0) != c) {
            throw new IllegalArgumentException(op + ": input " + x.shape() + " has " + c + " channels, weight " + w.shape() + " expects " + w.dim(0)
                    + " (groups " + groups + ")");
        }
        checkBias(op, b, fg * groups);
        int[] s = positive(op, "stride", spatialArg(op, "stride", stride, spatial, 1));
        int[] p = nonNegative(op, "padding", spatialArg(op, "padding", padding, spatial, 0));
        int[] outPad = nonNegative(op, "outputPadding", spatialArg(op, "outputPadding", outputPadding, spatial, 0));
        int[] d = positive(op, "dilation", spatialArg(op, "dilation", dilation, spatial, 1));
        int[] k = kernel(w, spatial);
        Tensor t = x;
        int[][] grow = new int[x.ndim()][2], crop = new int[x.ndim()][2];
        for (int i = 0; i < spatial; i++) {
            int a = 2 + i, n = x.dim(a);
            if (outPad[i] >= s[i] && outPad[i] >= d[i]) {
                throw new IllegalArgumentException(op + ": outputPadding " + Arrays.toString(outPad) + " must be smaller than stride " + Arrays.toString(s)
                        + " or dilation " + Arrays.toString(d) + " (spatial axis " + i + ")");
            }
            long out = (long) (n - 1) * s[i] - 2L * p[i] + (long) d[i] * (k[i] - 1) + outPad[i] + 1;
            if (n == 0 || out <= 0) {
                throw new IllegalArgumentException(op + ": input " + x.shape() + " with weight " + w.shape() + ", stride " + Arrays.toString(s) + ", padding "
                        + Arrays.toString(p) + " gives output size " + out + " on spatial axis " + i);
            }
            t = interleaveZeros(t, a, s[i]);
            // the full correlation pads by the effective kernel - 1; padding takes back from both ends
            int before = d[i] * (k[i] - 1) - p[i], after = before + outPad[i];
            grow[a] = new int[] {Math.max(0, before), Math.max(0, after)};
            crop[a] = new int[] {Math.min(0, before), Math.min(0, after)};
        }
        // grow before cropping: one side may crop more than the input holds when the other side grows
        t = t.pad(grow).pad(crop);
        // (Cin, Cout/g, k...) -> (Cout, Cin/g, k...) per group, flipped spatially
        int cg = c / groups;
        int[] split = concat(new int[] {groups, cg, fg}, k), swapped = concat(new int[] {groups * fg, cg}, k);
        int[] order = new int[split.length];
        for (int i = 0; i < order.length; i++) order[i] = i;
        order[1] = 2;
        order[2] = 1;
        int[] spatialAxes = new int[spatial];
        for (int i = 0; i < spatial; i++) spatialAxes[i] = 2 + i;
        Tensor wt = w.reshape(split).permute(order).reshape(swapped).flip(spatialAxes);
        int[] ones = new int[spatial];
        Arrays.fill(ones, 1);
        return correlate(t, wt, b, ones, d, groups);
    }

    /** {@code stride - 1} zeros between neighbouring elements of an axis: each element gets a zero tail, the last tail is cut. */
    private static Tensor interleaveZeros(Tensor x, int a, int stride) {
        int n = x.dim(a);
        if (stride == 1 || n <= 1) return x;
        int[][] pads = new int[x.ndim() + 1][2];
        pads[a + 1][1] = stride - 1;
        int[] merged = x.dims();
        merged[a] = n * stride;
        return x.unsqueeze(a + 1).pad(pads).reshape(merged).shrinkAxis(a, 0, (n - 1) * stride + 1);
    }

    /** Cross-correlation of an already padded input (the checks are the caller's). */
    private static Tensor correlate(Tensor x, Tensor w, Tensor b, int[] stride, int[] dilation, int groups) {
        int spatial = stride.length;
        DType dt = DType.promote(x.dtype(), w.dtype());
        int n = x.dim(0), c = x.dim(1), f = w.dim(0), cg = c / groups, fg = f / groups;
        int[] k = kernel(w, spatial);
        Tensor win = windows(x.cast(dt), k, stride, dilation); // (N, C, o..., k...)
        int[] o = Arrays.copyOfRange(win.dims(), 2, 2 + spatial);
        int[] onesSp = new int[spatial];
        Arrays.fill(onesSp, 1);
        // (N, G, 1, C/G, o..., k...) * (1, G, Cout/G, C/G, 1..., k...) summed over C/G and k
        Tensor xs = win.reshape(concat(new int[] {n, groups, 1, cg}, o, k));
        Tensor ws = w.cast(dt).reshape(concat(new int[] {1, groups, fg, cg}, onesSp, k));
        int[] reduced = new int[1 + spatial];
        reduced[0] = 3;
        for (int i = 0; i < spatial; i++) reduced[1 + i] = 4 + spatial + i;
        Tensor y = xs.mul(ws).sum(reduced, false).cast(dt).reshape(concat(new int[] {n, f}, o));
        if (b == null) return y;
        return y.add(b.reshape(concat(new int[] {f}, onesSp)));
    }

    /**
     * Sliding windows over the last {@code kernel.length} axes ("unfold"), from movement ops only: shape
     * (..., o_1..o_m, k_1..k_m) with element [..., t..., j...] = x[..., t*stride + j*dilation, ...], where
     * {@code o = (n - dilation*(k-1) - 1) / stride + 1}. Every axis must hold at least one window.
     */
    static Tensor windows(Tensor x, int[] kernel, int[] stride, int[] dilation) {
        int m = kernel.length, lead = x.ndim() - m;
        // each spatial axis becomes a (k, o) pair in place, so axis i sits at lead + 2i
        for (int i = 0; i < m; i++) x = windowAxis(x, lead + 2 * i, kernel[i], stride[i], dilation[i]);
        int[] order = new int[lead + 2 * m];
        for (int i = 0; i < lead; i++) order[i] = i;
        for (int i = 0; i < m; i++) {
            order[lead + i] = lead + 2 * i + 1;
            order[lead + m + i] = lead + 2 * i;
        }
        return x.permute(order);
    }

    /** Axis {@code a} (size n) replaced by (k, o) with [j, t] = x[j*d + t*s]. */
    private static Tensor windowAxis(Tensor x, int a, int k, int s, int d) {
        int n = x.dim(a);
        int o = (n - d * (k - 1) - 1) / s + 1;
        // The axis tiled and read as rows of n + d puts x[(j*d + i) mod n] at [j, i]: each row starts d further on.
        // Within a window j*d + t*s < n, so the wrap-around is never read.
        int[] reps = new int[x.ndim()];
        Arrays.fill(reps, 1);
        reps[a] = Math.ceilDiv(k * (n + d), n);
        Tensor t = x.repeat(reps).shrinkAxis(a, 0, k * (n + d)).reshape(splitAxis(x.dims(), a, k, n + d));
        // columns 0, s, ..., (o-1)*s: fit the row to o*s (cropping, or padding with columns never read), then take column 0 of each (o, s) row
        int[][] fit = new int[t.ndim()][2];
        fit[a + 1][1] = o * s - (n + d);
        t = t.pad(fit);
        t = t.reshape(splitAxis(t.dims(), a + 1, o, s)).shrinkAxis(a + 2, 0, 1);
        int[] dims = t.dims();
        int[] out = new int[dims.length - 1];
        for (int i = 0, j = 0; i < dims.length; i++) if (i != a + 2) out[j++] = dims[i];
        return t.reshape(out);
    }

    private static int[] splitAxis(int[] dims, int a, int outer, int inner) {
        int[] out = new int[dims.length + 1];
        for (int i = 0, j = 0; i < dims.length; i++) {
            if (i == a) {
                out[j++] = outer;
                out[j++] = inner;
            } else out[j++] = dims[i];
        }
        return out;
    }

    static int[] concat(int[]... parts) {
        int len = 0;
        for (int[] p : parts) len += p.length;
        int[] out = new int[len];
        int at = 0;
        for (int[] p : parts) {
            System.arraycopy(p, 0, out, at, p.length);
            at += p.length;
        }
        return out;
    }

    private static int[] kernel(Tensor w, int spatial) { return Arrays.copyOfRange(w.dims(), 2, 2 + spatial); }

    // ---------------------------------------------------------------- argument checks (shared with Pooling)

    /**
     * A per-spatial-axis parameter: null gives {@code dflt} everywhere, one value applies to every axis,
     * otherwise one value per axis.
     */
    static int[] spatialArg(String op, String name, int[] v, int spatial, int dflt) {
        int[] out = new int[spatial];
        if (v == null) Arrays.fill(out, dflt);
        else if (v.length == 1) Arrays.fill(out, v[0]);
        else if (v.length == spatial) System.arraycopy(v, 0, out, 0, spatial);
        else throw new IllegalArgumentException(op + ": " + name + " " + Arrays.toString(v) + " has " + v.length + " values, expected 1 or " + spatial);
        return out;
    }

    static int[] positive(String op, String name, int[] v) {
        for (int x : v) if (x <= 0) throw new IllegalArgumentException(op + ": " + name + " must be positive, got " + Arrays.toString(v));
        return v;
    }

    static int[] nonNegative(String op, String name, int[] v) {
        for (int x : v) if (x < 0) throw new IllegalArgumentException(op + ": " + name + " must not be negative, got " + Arrays.toString(v));
        return v;
    }

    static String inputLayout(int spatial) {
        return switch (spatial) {
            case 1 -> "(N, C, L)";
            case 2 -> "(N, C, H, W)";
            case 3 -> "(N, C, D, H, W)";
            default -> "(N, C, " + spatial + " spatial axes)";
        };
    }

    private static String kernelLayout(int spatial) {
        return switch (spatial) {
            case 1 -> ", kL";
            case 2 -> ", kH, kW";
            case 3 -> ", kD, kH, kW";
            default -> ", " + spatial + " kernel axes";
        };
    }

    private static void checkRank(String op, String what, Tensor t, int spatial, String layout) {
        if (t.ndim() != spatial + 2) {
            throw new IllegalArgumentException(op + ": " + what + " must be " + (spatial + 2) + "-D " + layout + ", got " + t.shape());
        }
    }

    private static void checkGroups(String op, Tensor x, Tensor w, int groups, int c, int f) {
        if (groups <= 0) throw new IllegalArgumentException(op + ": groups must be positive, got " + groups);
        if (c % groups != 0) {
            throw new IllegalArgumentException(op + ": groups " + groups + " does not divide the " + c + " channels of input " + x.shape());
        }
        if (f % groups != 0) {
            throw new IllegalArgumentException(op + ": groups " + groups + " does not divide the " + f + " output channels of weight " + w.shape());
        }
    }

    private static void checkBias(String op, Tensor b, int f) {
        if (b != null && (b.ndim() != 1 || b.dim(0) != f)) {
            throw new IllegalArgumentException(op + ": bias must have shape [" + f + "] (one per output channel), got " + b.shape());
        }
    }

    /** The number of spatial axes of a general convolution, from the weight's rank. */
    static int spatialOf(String op, Tensor w) {
        if (w.ndim() < 3) {
            throw new IllegalArgumentException(op + ": weight must have at least 3 axes (channels, channels, kernel...), got " + w.shape());
        }
        return w.ndim() - 2;
    }
}

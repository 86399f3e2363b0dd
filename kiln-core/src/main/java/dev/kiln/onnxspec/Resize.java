package dev.kiln.onnxspec;

import dev.kiln.Tensor;
import dev.kiln.types.DType;
import dev.kiln.types.Shape;

import java.util.Arrays;

/**
 * ONNX Resize: its coordinate transformation modes, nearest rounding modes, cubic coefficient, region of
 * interest and extrapolation value, as ONNX's reference computes them. Source positions are compile-time
 * constants, so each resized axis becomes a host-built (out, in) weight matrix applied by a masked sum
 * (exact selection for nearest, which keeps any dtype). PyTorch-style resizing is {@link Tensor#interpolate}.
 */
public final class Resize {
    private Resize() {}

    /** The most weights of one axis's tap matrix (doubles): 2^26, 512 MiB. */
    private static final long MAX_TAPS = 1L << 26;

    private static final String TRANSFORMS = "'half_pixel', 'half_pixel_symmetric', 'pytorch_half_pixel', 'align_corners', 'asymmetric', "
            + "'tf_half_pixel_for_nn', 'tf_crop_and_resize'";

    /**
     * ONNX Resize (opsets 11 to 19, without antialias) of every axis of {@code x} to {@code sizes}. The source
     * coordinate of output index j on an axis follows {@code coordinateTransformationMode}
     * ({@code half_pixel}, {@code half_pixel_symmetric}, {@code pytorch_half_pixel}, {@code align_corners},
     * {@code asymmetric}, {@code tf_half_pixel_for_nn}, {@code tf_crop_and_resize}) with the axis' scale,
     * {@code scales[a]} or, when {@code scales} is null, {@code sizes[a] / x.dim(a)} (as ONNX with the sizes
     * input); {@code roi} (starts then ends, normalised) is read by {@code tf_crop_and_resize} only, whose
     * positions outside the input take {@code extrapolationValue}. Modes: {@code nearest} (rounding per
     * {@code nearestMode}: {@code round_prefer_floor}, {@code round_prefer_ceil}, {@code floor}, {@code ceil};
     * any dtype, values exact), {@code linear} and {@code cubic} (coefficient {@code cubicCoeffA}, ONNX
     * default -0.75). Taps outside the input read the edge, or with {@code excludeOutside} drop out and the
     * remaining weights are renormalised. Integer inputs interpolate in f32 and are truncated back.
     */
    public static Tensor apply(Tensor x, int[] sizes, double[] scales, double[] roi, String mode, String coordinateTransformationMode, String nearestMode,
                         double cubicCoeffA, boolean excludeOutside, double extrapolationValue) {
        return resize(x, sizes, scales, roi, mode, coordinateTransformationMode, nearestMode, cubicCoeffA, excludeOutside,
                extrapolationValue);
    }

    private static Tensor resize(Tensor x, int[] sizes, double[] scales, double[] roi, String mode, String transform, String nearestMode,
                         double cubicCoeffA, boolean excludeOutside, double extrapolationValue) {
        String op = "resize";
        int r = x.ndim();
        if (sizes == null || sizes.length != r) {
            throw new IllegalArgumentException(op + ": sizes " + Arrays.toString(sizes) + " must give one output size per axis of input " + x.shape());
        }
        if (scales != null && scales.length != r) {
            throw new IllegalArgumentException(op + ": scales " + Arrays.toString(scales) + " must give one scale per axis of input " + x.shape());
        }
        Kind kind = switch (mode == null ? "" : mode) {
            case "nearest" -> Kind.NEAREST;
            case "linear" -> Kind.LINEAR;
            case "cubic" -> Kind.CUBIC;
            default -> throw new IllegalArgumentException(op + ": unknown mode " + quote(mode) + "; valid are 'nearest', 'linear', 'cubic'");
        };
        if (transform == null || !TRANSFORMS.contains("'" + transform + "'")) {
            throw new IllegalArgumentException(op + ": unknown coordinate transformation mode " + quote(transform) + "; valid are " + TRANSFORMS);
        }
        boolean crop = transform.equals("tf_crop_and_resize");
        if (crop && (roi == null || roi.length != 2 * r)) {
            throw new IllegalArgumentException(op + ": tf_crop_and_resize needs roi with " + 2 * r + " values (starts, then ends) for input " + x.shape()
                    + ", got " + Arrays.toString(roi));
        }
        if (kind == Kind.NEAREST && !Arrays.asList("round_prefer_floor", "round_prefer_ceil", "floor", "ceil").contains(nearestMode)) {
            throw new IllegalArgumentException(op + ": unknown nearest mode " + quote(nearestMode) + "; valid are 'round_prefer_floor', 'round_prefer_ceil', 'floor', 'ceil'");
        }
        for (int a = 0; a < r; a++) {
            if (sizes[a] < 0) throw new IllegalArgumentException(op + ": negative output size in " + Arrays.toString(sizes));
            if (x.dim(a) == 0 && sizes[a] > 0) throw new IllegalArgumentException(op + ": cannot resize empty axis " + a + " of " + x.shape() + " to " + sizes[a]);
            if (scales != null && !(scales[a] > 0)) throw new IllegalArgumentException(op + ": scales must be positive, got " + Arrays.toString(scales));
        }
        DType dt = x.dtype();
        // the output, and each axis's m x n weights built here in Java, are bounded before any is made
        Shape outShape = Shape.of(sizes);
        dev.kiln.runtime.MemoryBudget.check(dt.byteSize(outShape.numel()), op + " of " + x.shape() + " to " + outShape + " x " + dt);
        for (int a = 0; a < r; a++) {
            long weights = (long) sizes[a] * x.dim(a);
            if (weights > Integer.MAX_VALUE - 8) {
                throw new IllegalArgumentException(op + ": axis " + a + " from " + x.dim(a) + " to " + sizes[a] + " needs a weight matrix of "
                        + weights + " entries, more than a Java array holds");
            }
            dev.kiln.runtime.MemoryBudget.check(weights * 9, op + " weights of axis " + a + " (" + x.dim(a) + " to " + sizes[a] + ")");
        }
        boolean exact = kind == Kind.NEAREST;
        DType ct = exact ? dt : Precision.computeType(dt.isFloat() ? dt : DType.F32);
        Tensor y = exact ? x : x.cast(ct);
        Tensor outside = null;
        for (int a = 0; a < r; a++) {
            int n = x.dim(a), m = sizes[a];
            double scale = scales != null ? scales[a] : n == 0 ? 1 : (double) m / n;
            // the axis's dense m x n tap matrix is built on the heap: bounded (512 MiB, an 8192 x 8192 resize) so that a
            // hostile size is refused before it is allocated, not with an OutOfMemoryError or an overflowed int product
            if ((long) m * n > MAX_TAPS) {
                throw new IllegalArgumentException(op + ": resizing axis " + a + " from " + n + " to " + m + " needs a " + m + " x " + n
                        + " weight matrix, over the " + MAX_TAPS + " weights Kiln builds");
            }
            double[] w = new double[m * n];
            boolean[] out = new boolean[m];
            boolean identity = m == n, anyOutside = false;
            for (int j = 0; j < m; j++) {
                double src = coordinate(transform, j, n, m, scale, crop ? roi[a] : 0, crop ? roi[a + r] : 0);
                if (crop && (src < 0 || src > n - 1)) {
                    out[j] = anyOutside = true;
                    identity = false;
                    continue;
                }
                addTaps(w, j, n, src, kind, nearestMode, cubicCoeffA, excludeOutside);
                for (int i = 0; i < n && identity; i++) identity = w[j * n + i] == (i == j ? 1 : 0);
            }
            if (anyOutside) {
                int[] s = new int[r];
                Arrays.fill(s, 1);
                s[a] = m;
                Tensor o = Tensor.of(out, m).reshape(s).to(x.device());
                outside = outside == null ? o : outside.logicalOr(o);
            }
            if (!identity) y = weigh(y, a, n, m, w, exact);
        }
        if (outside != null) y = Tensor.where(outside, Tensor.scalar(extrapolationValue, ct), y);
        return y.cast(dt);
    }

    private enum Kind { NEAREST, LINEAR, CUBIC }

    /**
     * The source coordinate of output index j of an axis resized from n to m. As in ONNX's reference, the
     * resized length in the formulas is {@code n * scale} (not rounded to the output size m).
     */
    private static double coordinate(String transform, int j, int n, int m, double scale, double start, double end) {
        double len = n * scale;
        return switch (transform) {
            case "half_pixel" -> (j + 0.5) / scale - 0.5;
            case "half_pixel_symmetric" -> {
                double adjustment = m / len, center = n / 2.0;
                yield center * (1 - adjustment) + (j + 0.5) / scale - 0.5;
            }
            case "pytorch_half_pixel" -> len > 1 ? (j + 0.5) / scale - 0.5 : 0;
            case "align_corners" -> len == 1 ? 0 : j * (n - 1) / (len - 1);
            case "asymmetric" -> j / scale;
            case "tf_half_pixel_for_nn" -> (j + 0.5) / scale;
            default -> len > 1 ? start * (n - 1) + j * (end - start) * (n - 1) / (len - 1) : 0.5 * (start + end) * (n - 1);
        };
    }

    /**
     * Row j of the weight matrix: the taps around {@code src} with their coefficients, positions outside
     * the axis read its edge (or, with {@code excludeOutside}, drop out and the rest are renormalised).
     */
    private static void addTaps(double[] w, int j, int n, double src, Kind kind, String nearestMode, double a, boolean excludeOutside) {
        if (kind == Kind.NEAREST) {
            double i = switch (nearestMode) {
                case "round_prefer_floor" -> Math.ceil(src - 0.5);
                case "round_prefer_ceil" -> Math.floor(src + 0.5);
                case "floor" -> Math.floor(src);
                default -> Math.ceil(src);
            };
            w[j * n + clamp((long) i, n)] = 1;
            return;
        }
        double lo = Math.floor(src), t = src - lo;
        double[] coeff = kind == Kind.LINEAR ? new double[] {1 - t, t} : new double[] {
                ((a * (t + 1) - 5 * a) * (t + 1) + 8 * a) * (t + 1) - 4 * a,
                ((a + 2) * t - (a + 3)) * t * t + 1,
                ((a + 2) * (1 - t) - (a + 3)) * (1 - t) * (1 - t) + 1,
                ((a * (2 - t) - 5 * a) * (2 - t) + 8 * a) * (2 - t) - 4 * a};
        long first = (long) lo - (kind == Kind.LINEAR ? 0 : 1);
        double total = 0;
        for (int k = 0; k < coeff.length; k++) {
            long i = first + k;
            if (excludeOutside && (i < 0 || i >= n)) coeff[k] = 0;
            total += coeff[k];
        }
        for (int k = 0; k < coeff.length; k++) w[j * n + clamp(first + k, n)] += excludeOutside ? coeff[k] / total : coeff[k];
    }

    private static int clamp(long i, int n) { return (int) Math.max(0, Math.min(n - 1, i)); }

    /** Axis a (n) of x replaced by the m weighted sums of the rows of w; exact selection when {@code select}. */
    private static Tensor weigh(Tensor x, int a, int n, int m, double[] w, boolean select) {
        boolean[] take = new boolean[m * n];
        for (int k = 0; k < take.length; k++) take[k] = w[k] != 0;
        Tensor xt = x.transpose(a, -1).unsqueeze(-2); // (..., 1, n) against (m, n)
        Tensor mask = Tensor.of(take, m, n).to(x.device());
        DType dt = x.dtype();
        Tensor zero = Tensor.scalar(dt.isFloat() ? -0.0 : 0, dt);
        Tensor terms = select ? xt : xt.mul(Tensor.of(dt, w, m, n).to(x.device()));
        return Tensor.where(mask, terms, zero).sum(new int[] {-1}, false).cast(dt).transpose(a, -1);
    }

    private static String quote(String s) { return s == null ? "null" : "'" + s + "'"; }
}

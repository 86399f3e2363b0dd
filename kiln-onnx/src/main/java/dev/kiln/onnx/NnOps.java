package dev.kiln.onnx;

import dev.kiln.DType;
import dev.kiln.Tensor;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

import static dev.kiln.onnx.OnnxOps.add;
import static dev.kiln.onnx.OnnxOps.one;

/** Neural-network operators: matrix products, convolution, pooling, normalisation, resizing. */
final class NnOps {
    private NnOps() {}

    static void register() {
        add("MatMul", 1, c -> one(c.in(0).matmul(c.in(1))));
        add("Gemm", 1, c -> {
            Tensor a = c.in(0), b = c.in(1);
            if (c.a.b("transA", false)) a = a.mT();
            if (c.a.b("transB", false)) b = b.mT();
            Tensor y = a.matmul(b);
            double alpha = c.a.f("alpha", 1.0), beta = c.a.f("beta", 1.0);
            if (alpha != 1.0) y = y.mul(alpha).cast(y.dtype());
            Tensor cc = c.opt(2);
            if (cc != null && beta != 0.0) y = y.add(beta == 1.0 ? cc : cc.mul(beta).cast(cc.dtype()));
            return one(y);
        });
        add("Einsum", 12, c -> {
            Tensor[] ops = new Tensor[c.inputCount()];
            for (int k = 0; k < ops.length; k++) ops[k] = c.in(k);
            return one(Tensor.einsum(explicitEllipsis(c.a.s("equation", "").replace(" ", ""), ops), ops));
        });

        add("Conv", 1, NnOps::conv, NnOps::checkAutoPad);
        add("ConvTranspose", 1, NnOps::convTranspose, NnOps::checkAutoPad);
        add("MaxPool", 1, NnOps::maxPool, (n, opset) -> {
            if (n.outputs().size() > 1 && !n.outputs().get(1).isEmpty()) return "the Indices output is not supported";
            if (n.attrs().i("storage_order", 0) != 0) return "storage_order 1 is not supported";
            return checkAutoPad(n, opset);
        });
        add("AveragePool", 1, NnOps::avgPool, NnOps::checkAutoPad);
        add("GlobalAveragePool", 1, c -> one(c.in(0).globalAvgPool()));
        add("GlobalMaxPool", 1, c -> one(c.in(0).globalMaxPool()));

        add("BatchNormalization", 1, NnOps::batchNorm);
        add("InstanceNormalization", 1, c -> one(c.in(0).instanceNorm(c.in(1), c.in(2), c.a.f("epsilon", 1e-5))));
        add("LayerNormalization", 17, NnOps::layerNorm);
        add("LRN", 1, c -> {
            Tensor x = c.in(0);
            int size = (int) c.a.i("size", 0);
            double alpha = c.a.f("alpha", 1e-4), beta = c.a.f("beta", 0.75), bias = c.a.f("bias", 1.0);
            int before = (size - 1) / 2, after = size - 1 - before, ch = x.dim(1);
            int[][] p = new int[x.ndim()][2];
            p[1] = new int[] {before, after};
            Tensor sq = x.square().pad(p);
            Tensor sum = null;
            for (int k = 0; k < size; k++) {
                Tensor s = sq.slice(1, k, k + ch, 1);
                sum = sum == null ? s : sum.add(s);
            }
            return one(x.div(sum.mul(alpha / size).add(bias).pow(beta)).cast(x.dtype()));
        });
        add("Dropout", 1, c -> {
            Tensor x = c.in(0);
            boolean training = c.opset >= 12 ? c.has(2) && c.scalar(2) != 0 : c.opset < 7 && !c.a.b("is_test", false);
            double ratio = c.opset >= 12 ? (c.has(1) ? c.scalar(1) : 0.5) : c.a.f("ratio", 0.5);
            if (training && ratio > 0) throw c.unsupported("training-mode dropout (random masks) is not supported; Kiln imports models for inference");
            Tensor mask = x.onesLike().cast(c.opset >= 10 ? DType.BOOL : x.dtype());
            return c.wantsOutput(1) ? List.of(x, mask) : List.of(x);
        });
        add("Resize", 10, NnOps::resize, NnOps::checkResize);
        add("Upsample", 7, NnOps::resize, NnOps::checkResize);
    }

    /**
     * The einsum equation with each {@code ...} spelled as letters the equation does not use (right-aligned
     * across operands, as broadcasting aligns them), and an implicit output made explicit: the ellipsis axes,
     * then the letters used once, in alphabetical order.
     */
    static String explicitEllipsis(String eq, Tensor[] ops) {
        String[] io = eq.split("->", -1);
        String[] ins = io[0].split(",", -1);
        java.util.Set<Character> used = new java.util.TreeSet<>();
        for (char ch : eq.toCharArray()) if (Character.isLetter(ch)) used.add(ch);
        int[] extra = new int[ins.length];
        int most = 0;
        for (int k = 0; k < ins.length; k++) {
            if (ins[k].contains("...")) {
                extra[k] = ops[k].ndim() - ins[k].replace("...", "").length();
                most = Math.max(most, extra[k]);
            }
        }
        StringBuilder fresh = new StringBuilder();
        for (char ch = 'A'; fresh.length() < most && ch <= 'z'; ch++) if (Character.isLetter(ch) && !used.contains(ch)) fresh.append(ch);
        String all = fresh.toString();
        StringBuilder out = new StringBuilder();
        for (int k = 0; k < ins.length; k++) {
            if (k > 0) out.append(',');
            out.append(ins[k].replace("...", all.substring(most - extra[k])));
        }
        String rhs;
        if (io.length == 2) rhs = io[1].replace("...", all);
        else {
            java.util.Map<Character, Integer> count = new java.util.TreeMap<>();
            for (char ch : io[0].toCharArray()) if (Character.isLetter(ch)) count.merge(ch, 1, Integer::sum);
            StringBuilder r = new StringBuilder(all);
            count.forEach((ch, n) -> { if (n == 1) r.append(ch); });
            rhs = r.toString();
        }
        return out + "->" + rhs;
    }

    private static String checkAutoPad(Node n, long opset) {
        return switch (n.attrs().s("auto_pad", "NOTSET")) {
            case "NOTSET", "VALID", "SAME_UPPER", "SAME_LOWER" -> null;
            default -> "auto_pad '" + n.attrs().s("auto_pad", "") + "' is not supported";
        };
    }

    /** Per-axis attribute with a default for every spatial axis. */
    private static int[] perAxis(OpContext c, String name, int n, int dflt) {
        int[] v = c.a.ints(name);
        if (v == null) {
            v = new int[n];
            Arrays.fill(v, dflt);
        }
        if (v.length != n) throw c.bad(name + " " + Arrays.toString(v) + " must have " + n + " values");
        return v;
    }

    /**
     * The (begin, end) padding of each spatial axis: the {@code pads} attribute, or what {@code auto_pad} asks
     * for (SAME: the output is ceil(in / stride), the odd extra pad at the end for SAME_UPPER).
     */
    private static int[][] pads(OpContext c, int[] in, int[] kernel, int[] strides, int[] dil) {
        int n = in.length;
        int[][] p = new int[n][2];
        String auto = c.a.s("auto_pad", "NOTSET");
        if (auto.startsWith("SAME")) {
            for (int k = 0; k < n; k++) {
                int out = (in[k] + strides[k] - 1) / strides[k];
                int total = Math.max(0, (out - 1) * strides[k] + (kernel[k] - 1) * dil[k] + 1 - in[k]);
                int small = total / 2;
                p[k] = auto.equals("SAME_UPPER") ? new int[] {small, total - small} : new int[] {total - small, small};
            }
        } else if (!auto.equals("VALID")) {
            int[] v = c.a.ints("pads");
            if (v != null) {
                if (v.length != 2 * n) throw c.bad("pads " + Arrays.toString(v) + " must have " + 2 * n + " values");
                for (int k = 0; k < n; k++) p[k] = new int[] {v[k], v[k + n]};
            }
        }
        return p;
    }

    private static boolean symmetric(int[][] p) {
        for (int[] q : p) if (q[0] != q[1]) return false;
        return true;
    }

    private static int[] begins(int[][] p) { return Arrays.stream(p).mapToInt(q -> q[0]).toArray(); }

    /** {@code pads} on the spatial axes of an (N, C, spatial...) tensor, filled with {@code value}. */
    private static Tensor padSpatial(Tensor x, int[][] p, double value) {
        int[][] all = new int[x.ndim()][2];
        for (int k = 0; k < p.length; k++) all[k + 2] = p[k];
        return x.pad(all, Tensor.PadMode.CONSTANT, value);
    }

    private static int[] spatial(Tensor x) { return Arrays.copyOfRange(x.dims(), 2, x.ndim()); }

    private static List<Tensor> conv(OpContext c) { return convOn(c, c.in(0), c.in(1), c.opt(2)); }

    /** Conv's arithmetic with the node's attributes on the given operands (also for the integer convolutions). */
    static List<Tensor> convOn(OpContext c, Tensor x, Tensor w, Tensor b) {
        int n = x.ndim() - 2;
        int[] kernel = c.a.has("kernel_shape") ? c.a.ints("kernel_shape") : Arrays.copyOfRange(w.dims(), 2, w.ndim());
        int[] strides = perAxis(c, "strides", n, 1), dil = perAxis(c, "dilations", n, 1);
        int group = (int) c.a.i("group", 1);
        int[][] p = pads(c, spatial(x), kernel, strides, dil);
        if (!symmetric(p)) {
            x = padSpatial(x, p, 0);
            p = new int[n][2];
        }
        return one(x.conv(w, b, strides, begins(p), dil, group));
    }

    private static List<Tensor> convTranspose(OpContext c) {
        Tensor x = c.in(0), w = c.in(1), b = c.opt(2);
        int n = x.ndim() - 2;
        int[] in = spatial(x);
        int[] kernel = c.a.has("kernel_shape") ? c.a.ints("kernel_shape") : Arrays.copyOfRange(w.dims(), 2, w.ndim());
        int[] strides = perAxis(c, "strides", n, 1), dil = perAxis(c, "dilations", n, 1), outPad = perAxis(c, "output_padding", n, 0);
        int group = (int) c.a.i("group", 1);
        String auto = c.a.s("auto_pad", "NOTSET");
        int[][] p = new int[n][2];
        int[] outShape = c.a.ints("output_shape");
        if (outShape != null && outShape.length > n) outShape = Arrays.copyOfRange(outShape, outShape.length - n, outShape.length);
        if (outShape == null && auto.startsWith("SAME")) {
            outShape = new int[n];
            for (int k = 0; k < n; k++) outShape[k] = in[k] * strides[k];
        }
        if (outShape != null) {
            for (int k = 0; k < n; k++) {
                int total = strides[k] * (in[k] - 1) + outPad[k] + (kernel[k] - 1) * dil[k] + 1 - outShape[k];
                int half = Math.floorDiv(total, 2);
                p[k] = auto.equals("SAME_UPPER") ? new int[] {half, total - half} : new int[] {total - half, half};
            }
        } else if (!auto.equals("VALID")) {
            int[] v = c.a.ints("pads");
            if (v != null) for (int k = 0; k < n; k++) p[k] = new int[] {v[k], v[k + n]};
        }
        // the full transposed convolution, then the pads cropped from (or the output padding added to) each end
        Tensor full = x.convTranspose(w, null, strides, null, null, dil, group);
        int[][] adjust = new int[n][2];
        for (int k = 0; k < n; k++) adjust[k] = new int[] {-p[k][0], outPad[k] - p[k][1]};
        Tensor y = padSpatial(full, adjust, 0);
        if (b != null) {
            int[] s = new int[y.ndim()];
            Arrays.fill(s, 1);
            s[1] = (int) b.numel();
            y = y.add(b.reshape(s));
        }
        return one(y);
    }

    private static List<Tensor> maxPool(OpContext c) {
        Tensor x = c.in(0);
        int n = x.ndim() - 2;
        int[] kernel = c.a.ints("kernel_shape");
        int[] strides = perAxis(c, "strides", n, 1), dil = perAxis(c, "dilations", n, 1);
        boolean ceil = c.a.b("ceil_mode", false);
        int[][] p = pads(c, spatial(x), kernel, strides, dil);
        boolean direct = symmetric(p);
        for (int k = 0; k < n; k++) direct &= p[k][0] <= kernel[k] / 2;
        if (!direct) {
            double lowest = x.dtype().isFloat() ? Double.NEGATIVE_INFINITY : x.dtype().minInt();
            x = padSpatial(x, p, lowest);
            p = new int[n][2];
        }
        return one(switch (n) {
            case 1 -> x.maxPool1d(kernel, strides, begins(p), dil, ceil);
            case 2 -> x.maxPool2d(kernel, strides, begins(p), dil, ceil);
            case 3 -> x.maxPool3d(kernel, strides, begins(p), dil, ceil);
            default -> throw c.unsupported(n + " spatial axes (1 to 3 are supported)");
        });
    }

    private static Tensor avg(OpContext c, Tensor x, int[] kernel, int[] strides, int[] pads, boolean ceil, boolean countPad) {
        return switch (kernel.length) {
            case 1 -> x.avgPool1d(kernel, strides, pads, ceil, countPad);
            case 2 -> x.avgPool2d(kernel, strides, pads, ceil, countPad);
            case 3 -> x.avgPool3d(kernel, strides, pads, ceil, countPad);
            default -> throw c.unsupported(kernel.length + " spatial axes (1 to 3 are supported)");
        };
    }

    private static List<Tensor> avgPool(OpContext c) {
        Tensor x = c.in(0);
        int n = x.ndim() - 2;
        int[] kernel = c.a.ints("kernel_shape");
        int[] strides = perAxis(c, "strides", n, 1), ones = perAxis(c, "dilations", n, 1);
        for (int d : ones) if (d != 1) throw c.unsupported("dilated average pooling");
        boolean ceil = c.a.b("ceil_mode", false), countPad = c.a.b("count_include_pad", false);
        int[][] p = pads(c, spatial(x), kernel, strides, ones);
        boolean direct = symmetric(p);
        for (int k = 0; k < n; k++) direct &= p[k][0] <= kernel[k] / 2;
        if (direct) return one(avg(c, x, kernel, strides, begins(p), ceil, countPad));
        // padded explicitly: the mean is the windows' sum over their count of counted positions
        Tensor xp = padSpatial(x, p, 0);
        Tensor mask = padSpatial(x.onesLike().cast(DType.F32), p, countPad ? 1 : 0);
        int[] zero = new int[n];
        Tensor s = avg(c, xp, kernel, strides, zero, ceil, true), m = avg(c, mask, kernel, strides, zero, ceil, true);
        return one(s.div(m).cast(s.dtype()));
    }

    private static List<Tensor> batchNorm(OpContext c) {
        Tensor x = c.in(0), scale = c.in(1), bias = c.in(2), mean = c.in(3), var = c.in(4);
        double eps = c.a.f("epsilon", 1e-5);
        boolean training = c.opset >= 14 && c.a.b("training_mode", false);
        if (!training) {
            if (c.opset < 9 && !c.a.b("spatial", true)) throw c.unsupported("spatial = 0 (per-activation statistics)");
            return one(x.batchNorm(mean, var, scale, bias, eps));
        }
        double momentum = c.a.f("momentum", 0.9);
        int[] axes = new int[x.ndim() - 1];
        for (int k = 0, j = 0; k < x.ndim(); k++) if (k != 1) axes[j++] = k;
        Tensor bm = x.mean(axes, false), bv = x.var(axes, false, 0);
        Tensor y = x.batchNormTraining(scale, bias, eps);
        List<Tensor> out = new ArrayList<>(List.of(y));
        out.add(mean.mul(momentum).add(bm.mul(1 - momentum)).cast(mean.dtype()));
        out.add(var.mul(momentum).add(bv.mul(1 - momentum)).cast(var.dtype()));
        return out;
    }

    private static List<Tensor> layerNorm(OpContext c) {
        Tensor x = c.in(0), scale = c.in(1), bias = c.opt(2);
        int r = x.ndim();
        int axis = c.axis(c.a.i("axis", -1), r, "axis");
        double eps = c.a.f("epsilon", 1e-5);
        int[] axes = new int[r - axis];
        for (int k = 0; k < axes.length; k++) axes[k] = axis + k;
        Tensor xf = x.cast(DType.F32);
        Tensor mean = xf.mean(axes, true);
        Tensor d = xf.sub(mean);
        Tensor inv = d.square().mean(axes, true).add(eps).rsqrt();
        Tensor y = d.mul(inv).mul(scale);
        if (bias != null) y = y.add(bias);
        return List.of(y.cast(x.dtype()), mean, inv);
    }

    private static String checkResize(Node n, long opset) {
        String mode = n.attrs().s("mode", "nearest");
        if (!List.of("nearest", "linear", "bilinear", "cubic").contains(mode)) return "mode '" + mode + "' is not supported";
        String coord = n.attrs().s("coordinate_transformation_mode", "half_pixel");
        if (!List.of("half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric", "tf_half_pixel_for_nn", "tf_crop_and_resize").contains(coord)) {
            return "coordinate_transformation_mode '" + coord + "' is not supported";
        }
        return null;
    }

    /**
     * Resize and Upsample, one spatial axis after another (the interpolations are separable): each output
     * position reads 1 (nearest), 2 (linear) or 4 (cubic) source positions with weights computed here.
     */
    private static List<Tensor> resize(OpContext c) {
        Tensor x = c.in(0);
        int r = x.ndim();
        boolean upsample = c.node.opType().equals("Upsample");
        String mode = c.a.s("mode", "nearest");
        if (mode.equals("bilinear")) mode = "linear";
        String coord = upsample || c.opset < 11 ? "asymmetric" : c.a.s("coordinate_transformation_mode", "half_pixel");
        String nearest = c.opset < 11 ? "round_prefer_ceil" : c.a.s("nearest_mode", "round_prefer_floor");
        if (upsample || c.opset < 11) nearest = "floor";
        double a = c.a.f("cubic_coeff_a", -0.75);
        boolean exclude = c.a.b("exclude_outside", false);
        double extrapolation = c.a.f("extrapolation_value", 0.0);
        double[] scales = null;
        int[] sizes = null;
        double[] roi = null;
        if (upsample && c.opset < 9) {
            float[] f = c.a.floats("scales");
            scales = new double[f.length];
            for (int k = 0; k < f.length; k++) scales[k] = f[k];
        } else if (upsample || c.opset < 11) {
            scales = c.doubles(1);
        } else {
            if (c.has(1) && c.in(1).numel() > 0) roi = c.doubles(1);
            if (c.has(2) && c.in(2).numel() > 0) scales = c.doubles(2);
            if (c.has(3) && c.in(3).numel() > 0) sizes = c.ints(3);
        }
        if (scales == null && sizes == null) throw c.bad("needs scales or sizes");
        Tensor y = x;
        for (int axis = 0; axis < r; axis++) {
            int in = x.dim(axis);
            int out = sizes != null ? sizes[axis] : (int) Math.floor(in * scales[axis]);
            double scale = sizes != null ? (double) out / in : scales[axis];
            if (out == in && scale == 1.0 && !coord.equals("tf_crop_and_resize")) continue;
            double outLength = sizes != null ? out : in * scale;
            y = resizeAxis(c, y, axis, in, out, outLength, scale, mode, coord, nearest, a, exclude, extrapolation, roi);
        }
        return one(y);
    }

    private static Tensor resizeAxis(OpContext c, Tensor x, int axis, int in, int out, double outLength, double scale, String mode, String coord, String nearest,
                                     double a, boolean exclude, double extrapolation, double[] roi) {
        int taps = switch (mode) {
            case "nearest" -> 1;
            case "linear" -> 2;
            default -> 4;
        };
        long[][] idx = new long[taps][out];
        double[][] wt = new double[taps][out];
        boolean[] outside = new boolean[out];
        for (int o = 0; o < out; o++) {
            double src = switch (coord) {
                case "half_pixel" -> (o + 0.5) / scale - 0.5;
                case "pytorch_half_pixel" -> out > 1 ? (o + 0.5) / scale - 0.5 : 0;
                // with scales, the reference divides by the unrounded output length in * scale
                case "align_corners" -> out == 1 ? 0 : o * (in - 1.0) / (outLength - 1.0);
                case "tf_half_pixel_for_nn" -> (o + 0.5) / scale;
                case "tf_crop_and_resize" -> {
                    int rank = roi.length / 2;
                    double start = roi[axis], end = roi[axis + rank];
                    yield out > 1 ? start * (in - 1) + o * (end - start) * (in - 1) / (out - 1) : 0.5 * (start + end) * (in - 1);
                }
                default -> o / scale;
            };
            if (coord.equals("tf_crop_and_resize") && (src < 0 || src > in - 1)) outside[o] = true;
            switch (mode) {
                case "nearest" -> {
                    double f = Math.floor(src);
                    long i = switch (nearest) {
                        case "round_prefer_ceil" -> src - f >= 0.5 ? (long) f + 1 : (long) f;
                        case "floor" -> (long) f;
                        case "ceil" -> (long) Math.ceil(src);
                        default -> src - f > 0.5 ? (long) f + 1 : (long) f;
                    };
                    idx[0][o] = Math.max(0, Math.min(in - 1, i));
                    wt[0][o] = 1;
                }
                case "linear" -> {
                    double s = Math.max(0, Math.min(in - 1, src));
                    long i0 = (long) Math.floor(s);
                    long i1 = Math.min(in - 1, i0 + 1);
                    double t = s - i0;
                    idx[0][o] = i0;
                    idx[1][o] = i1;
                    wt[0][o] = 1 - t;
                    wt[1][o] = t;
                }
                default -> {
                    double f = Math.floor(src), t = src - f;
                    double[] cf = cubic(t, a);
                    double total = 0;
                    for (int k = 0; k < 4; k++) {
                        long i = (long) f - 1 + k;
                        boolean in_ = i >= 0 && i < in;
                        if (exclude && !in_) cf[k] = 0;
                        total += cf[k];
                        idx[k][o] = Math.max(0, Math.min(in - 1, i));
                    }
                    for (int k = 0; k < 4; k++) wt[k][o] = exclude ? cf[k] / total : cf[k];
                }
            }
        }
        int[] shape = new int[x.ndim()];
        Arrays.fill(shape, 1);
        shape[axis] = out;
        Tensor y = null;
        DType wdt = x.dtype().isFloat() ? x.dtype() : DType.F32;
        for (int k = 0; k < taps; k++) {
            Tensor g = x.indexSelect(axis, c.constant(DType.I64, idx[k], out));
            if (taps > 1) g = g.mul(c.constant(wdt, wt[k], out).reshape(shape));
            y = y == null ? g : y.add(g);
        }
        if (coord.equals("tf_crop_and_resize")) {
            long[] m = new long[out];
            for (int o = 0; o < out; o++) m[o] = outside[o] ? 1 : 0;
            y = Tensor.where(c.constant(DType.BOOL, m, out).reshape(shape), y.fullLike(extrapolation), y);
        }
        return y.cast(x.dtype());
    }

    /** Keys' cubic convolution weights of the taps at -1, 0, 1, 2 for a fractional offset {@code t}. */
    private static double[] cubic(double t, double a) {
        double[] d = {t + 1, t, 1 - t, 2 - t};
        double[] w = new double[4];
        for (int k = 0; k < 4; k++) {
            double x = Math.abs(d[k]);
            w[k] = x <= 1 ? ((a + 2) * x - (a + 3)) * x * x + 1 : x < 2 ? ((a * x - 5 * a) * x + 8 * a) * x - 4 * a : 0;
        }
        return w;
    }
}

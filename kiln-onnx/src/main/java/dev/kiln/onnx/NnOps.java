package dev.kiln.onnx;

import dev.kiln.types.DType;
import dev.kiln.Tensor;
import dev.kiln.onnxspec.Resize;

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
        add("Det", 11, c -> one(c.in(0).det()));
        add("Gemm", 1, c -> {
            // ONNX's Gemm is a 2-D product; MatMul is the operator that broadcasts
            Tensor a = c.ranked(0, 2, 2), b = c.ranked(1, 2, 2);
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
            String eq = c.a.s("equation", "").replace(" ", "");
            int terms = eq.split("->", -1)[0].split(",", -1).length;
            if (terms != ops.length) throw c.bad("equation '" + eq + "' has " + terms + " operand terms, expected " + ops.length + " (one per input)");
            String[] term = eq.split("->", -1)[0].split(",", -1);
            for (int k = 0; k < ops.length; k++) {
                int letters = term[k].replace("...", "").length();
                boolean ellipsis = term[k].contains("...");
                if (ellipsis ? letters > ops[k].ndim() : letters != ops[k].ndim()) {
                    throw c.bad("term '" + term[k] + "' of equation '" + eq + "' names " + letters + " axes" + (ellipsis ? " besides '...'" : "")
                            + ", input " + k + " has shape " + ops[k].shape());
                }
            }
            return one(Tensor.einsum(explicitEllipsis(eq, ops), ops));
        });

        add("Conv", 1, NnOps::conv, NnOps::checkAutoPad);
        add("ConvTranspose", 1, NnOps::convTranspose, NnOps::checkAutoPad);
        add("MaxPool", 1, NnOps::maxPool, NnOps::checkAutoPad);
        add("AveragePool", 1, NnOps::avgPool, NnOps::checkAutoPad);
        add("MaxUnpool", 9, NnOps::maxUnpool);
        add("GlobalAveragePool", 1, c -> one(c.in(0).globalAvgPool()));
        add("GlobalMaxPool", 1, c -> one(c.in(0).globalMaxPool()));

        add("BatchNormalization", 1, NnOps::batchNorm);
        add("InstanceNormalization", 1, c -> one(c.in(0).instanceNorm(c.in(1), c.in(2), c.a.f("epsilon", 1e-5))));
        add("LayerNormalization", 17, NnOps::layerNorm);
        add("LRN", 1, c -> one(c.in(0).lrn(c.a.int32("size", 0), c.a.f("alpha", 1e-4), c.a.f("beta", 0.75), c.a.f("bias", 1.0))));
        add("Resize", 10, NnOps::resize, NnOps::checkResize);
        add("Upsample", 7, NnOps::resize, NnOps::checkResize);
        add("GridSample", 16, c -> one(c.in(0).gridSample(c.in(1), c.a.s("mode", "bilinear"), c.a.s("padding_mode", "zeros"), c.a.b("align_corners", false))));
        add("RoiAlign", 10, c -> one(c.in(0).roiAlign(c.in(1), c.in(2), c.a.s("mode", "avg"), c.a.int32("output_height", 1), c.a.int32("output_width", 1),
                c.a.int32("sampling_ratio", 0), c.a.f("spatial_scale", 1.0),
                // opset 10 knew only the unshifted form, which opset 16 names output_half_pixel
                c.opset >= 16 ? c.a.s("coordinate_transformation_mode", "half_pixel") : "output_half_pixel")),
                (n, opset) -> n.attrs().i("sampling_ratio", 0) > 0 ? null
                        : "sampling_ratio 0 (adaptive: the number of samples depends on the roi values) is not supported");
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

    /**
     * The number of spatial axes of a convolution's or pooling's (N, C, spatial...) input, which must have at
     * least one: a lower rank would make every per-axis list negative in length.
     */
    private static int spatialRank(OpContext c, Tensor x) {
        if (x.ndim() < 3) throw c.bad("input X must have rank 3 or more (N, C, then spatial axes), got shape " + x.shape());
        return x.ndim() - 2;
    }

    /** A convolution's kernel_shape, one value per spatial axis, or the weight's spatial dims when absent. */
    private static int[] kernel(OpContext c, Tensor w, int n) {
        if (w.ndim() != n + 2) throw c.bad("weight W must have rank " + (n + 2) + " (two channel axes, then " + n + " kernel axes), got shape " + w.shape());
        int[] k = c.attrInts("kernel_shape", n, "one per spatial axis");
        return k != null ? k : Arrays.copyOfRange(w.dims(), 2, w.ndim());
    }

    /** A pooling's kernel_shape, which ONNX requires, one value per spatial axis. */
    private static int[] poolKernel(OpContext c, int n) {
        int[] k = c.attrInts("kernel_shape", n, "one per spatial axis");
        if (k == null) throw c.bad("kernel_shape is required, expected " + n + " values (one per spatial axis)");
        return k;
    }

    private static int[] spatial(Tensor x) { return Arrays.copyOfRange(x.dims(), 2, x.ndim()); }

    private static List<Tensor> conv(OpContext c) { return convOn(c, c.in(0), c.in(1), c.opt(2)); }

    /** Conv's arithmetic with the node's attributes on the given operands (also for the integer convolutions). */
    static List<Tensor> convOn(OpContext c, Tensor x, Tensor w, Tensor b) {
        int n = spatialRank(c, x);
        int[] kernel = kernel(c, w, n);
        int[] strides = perAxis(c, "strides", n, 1), dil = perAxis(c, "dilations", n, 1);
        int group = c.a.int32("group", 1);
        int[][] p = pads(c, spatial(x), kernel, strides, dil);
        if (!symmetric(p)) {
            x = padSpatial(x, p, 0);
            p = new int[n][2];
        }
        return one(x.conv(w, b, strides, begins(p), dil, group));
    }

    private static List<Tensor> convTranspose(OpContext c) {
        Tensor x = c.in(0), w = c.in(1), b = c.opt(2);
        int n = spatialRank(c, x);
        int[] in = spatial(x);
        int[] kernel = kernel(c, w, n);
        int[] strides = perAxis(c, "strides", n, 1), dil = perAxis(c, "dilations", n, 1), outPad = perAxis(c, "output_padding", n, 0);
        int group = c.a.int32("group", 1);
        String auto = c.a.s("auto_pad", "NOTSET");
        int[][] p = new int[n][2];
        int[] outShape = c.a.ints("output_shape");
        if (outShape != null && outShape.length != n && outShape.length != n + 2) {
            throw c.bad("output_shape " + Arrays.toString(outShape) + " has " + outShape.length + " values, expected " + n + " (the spatial axes) or " + (n + 2));
        }
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
            int[] v = c.attrInts("pads", 2 * n, "a begin and an end for each of the " + n + " spatial axes");
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

    /** The pads in ONNX's layout (all begins, then all ends), as the pooling methods take them. */
    private static int[] onnxPads(int[][] p) {
        int n = p.length;
        int[] out = new int[2 * n];
        for (int k = 0; k < n; k++) {
            out[k] = p[k][0];
            out[k + n] = p[k][1];
        }
        return out;
    }

    private static List<Tensor> maxPool(OpContext c) {
        Tensor x = c.in(0);
        int n = spatialRank(c, x);
        int[] kernel = poolKernel(c, n);
        int[] strides = perAxis(c, "strides", n, 1), dil = perAxis(c, "dilations", n, 1);
        int[] pads = onnxPads(pads(c, spatial(x), kernel, strides, dil));
        boolean ceil = c.a.b("ceil_mode", false);
        if (!c.wantsOutput(1)) return one(x.maxPool(kernel, strides, pads, dil, ceil));
        Tensor.Pooled p = x.maxPoolWithIndices(kernel, strides, pads, dil, ceil, c.a.int32("storage_order", 0));
        return List.of(p.values(), p.indices());
    }

    private static List<Tensor> avgPool(OpContext c) {
        Tensor x = c.in(0);
        int n = spatialRank(c, x);
        int[] kernel = poolKernel(c, n);
        int[] strides = perAxis(c, "strides", n, 1), dil = perAxis(c, "dilations", n, 1);
        int[] pads = onnxPads(pads(c, spatial(x), kernel, strides, dil));
        return one(x.avgPool(kernel, strides, pads, dil, c.a.b("ceil_mode", false), c.a.b("count_include_pad", false)));
    }

    /**
     * MaxUnpool as ONNX's reference does it: the values placed in a zero tensor of the size the pooling
     * attributes give, which output_shape (opset 11) may enlarge with zeros at the end of each axis.
     */
    private static List<Tensor> maxUnpool(OpContext c) {
        Tensor x = c.in(0);
        int n = spatialRank(c, x);
        int[] kernel = poolKernel(c, n), strides = perAxis(c, "strides", n, 1);
        int[] pads = c.attrInts("pads", 2 * n, "a begin and an end for each of the " + n + " spatial axes");
        int[] inferred = x.dims();
        for (int k = 0; k < n; k++) inferred[k + 2] = (x.dim(k + 2) - 1) * strides[k] + kernel[k] - (pads == null ? 0 : pads[k] + pads[k + n]);
        Tensor y = x.maxUnpool(c.in(1), inferred);
        if (c.opset < 11 || !c.has(2)) return one(y);
        int[] out = c.ints(2);
        if (out.length != inferred.length) throw c.bad("output_shape " + Arrays.toString(out) + " must have rank " + inferred.length);
        int[][] grow = new int[out.length][2];
        for (int k = 0; k < out.length; k++) {
            if (out[k] < inferred[k]) throw c.bad("output_shape " + Arrays.toString(out) + " is smaller than the unpooled shape " + Arrays.toString(inferred));
            grow[k][1] = out[k] - inferred[k];
        }
        return one(y.pad(grow));
    }

    private static List<Tensor> batchNorm(OpContext c) {
        Tensor x = c.ranked(0, 2, Integer.MAX_VALUE), scale = c.in(1), bias = c.in(2), mean = c.in(3), var = c.in(4);
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
        Attrs a = n.attrs();
        String mode = a.s("mode", "nearest");
        if (!List.of("nearest", "linear", "bilinear", "cubic").contains(mode)) return "mode '" + mode + "' is not supported";
        String coord = a.s("coordinate_transformation_mode", "half_pixel");
        if (!List.of("half_pixel", "half_pixel_symmetric", "pytorch_half_pixel", "align_corners", "asymmetric", "tf_half_pixel_for_nn", "tf_crop_and_resize")
                .contains(coord)) {
            return "coordinate_transformation_mode '" + coord + "' is not supported";
        }
        if (a.b("antialias", false)) return "antialias = 1 is not supported";
        if (a.has("axes")) return "the axes attribute is not supported";
        if (!a.s("keep_aspect_ratio_policy", "stretch").equals("stretch")) return "keep_aspect_ratio_policy '" + a.s("keep_aspect_ratio_policy", "") + "' is not supported";
        return null;
    }

    /**
     * Resize and Upsample: the scales or sizes, and the modes of the node's opset (Upsample and Resize-10
     * use asymmetric coordinates and floor rounding), passed to {@link Resize#apply}.
     */
    private static List<Tensor> resize(OpContext c) {
        Tensor x = c.in(0);
        int r = x.ndim();
        boolean upsample = c.node.opType().equals("Upsample"), legacy = upsample || c.opset < 11;
        String mode = c.a.s("mode", "nearest");
        if (mode.equals("bilinear")) mode = "linear";
        String coord = legacy ? "asymmetric" : c.a.s("coordinate_transformation_mode", "half_pixel");
        String nearest = legacy ? "floor" : c.a.s("nearest_mode", "round_prefer_floor");
        double[] scales = null, roi = null;
        int[] sizes = null;
        if (upsample && c.opset < 9) {
            float[] f = c.a.floats("scales");
            if (f == null) throw c.bad("the scales attribute is required at opset " + c.opset + ", expected " + r + " values (one per axis)");
            scales = new double[f.length];
            for (int k = 0; k < f.length; k++) scales[k] = f[k];
        } else if (legacy) {
            scales = c.doubles(1);
        } else {
            if (c.has(1) && c.in(1).numel() > 0) roi = c.doubles(1);
            if (c.has(2) && c.in(2).numel() > 0) scales = c.doubles(2);
            if (c.has(3) && c.in(3).numel() > 0) sizes = c.ints(3);
        }
        if (scales == null && sizes == null) throw c.bad("needs scales or sizes");
        if (scales != null && sizes == null && scales.length != r) {
            throw c.bad("scales " + Arrays.toString(scales) + " has " + scales.length + " values, expected " + r + " (one per axis of input shape " + x.shape() + ")");
        }
        if (sizes != null) scales = null; // with sizes, ONNX's scale per axis is sizes / input size, which Tensor.resize derives
        else {
            sizes = new int[r];
            for (int a = 0; a < Math.min(r, scales.length); a++) sizes[a] = (int) Math.floor(x.dim(a) * scales[a]);
        }
        return one(Resize.apply(x, sizes, scales, roi, mode, coord, nearest, c.a.f("cubic_coeff_a", -0.75), c.a.b("exclude_outside", false),
                c.a.f("extrapolation_value", 0.0)));
    }
}

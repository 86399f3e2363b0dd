package dev.kiln.onnx;

import dev.kiln.DType;
import dev.kiln.Tensor;

import java.util.Arrays;
import java.util.List;

import static dev.kiln.onnx.OnnxOps.add;
import static dev.kiln.onnx.OnnxOps.one;

/** Linear quantisation operators and the signal windows. */
final class QuantOps {
    private QuantOps() {}

    static void register() {
        add("QuantizeLinear", 10, c -> {
            Tensor x = c.in(0), zp = c.opt(2);
            DType out = zp == null ? DType.U8 : zp.dtype();
            long axis = c.opset >= 13 ? c.a.i("axis", 1) : 1;
            return one(quantize(x.cast(DType.F32).div(perAxis(c.in(1), x, axis)), zp == null ? null : perAxis(zp, x, axis), out));
        }, (n, opset) -> n.attrs().b("saturate", true) ? null : "saturate = 0 is not supported");
        add("DequantizeLinear", 10, c -> {
            Tensor x = c.in(0), zp = c.opt(2);
            long axis = c.opset >= 13 ? c.a.i("axis", 1) : 1;
            Tensor v = x.cast(DType.F32);
            if (zp != null) v = v.sub(perAxis(zp, x, axis).cast(DType.F32));
            return one(v.mul(perAxis(c.in(1), x, axis)).cast(c.in(1).dtype()));
        });
        add("DynamicQuantizeLinear", 11, c -> {
            Tensor x = c.in(0).cast(DType.F32);
            Tensor lo = x.min().minimum(0.0), hi = x.max().maximum(0.0);
            Tensor scale = hi.sub(lo).div(255.0);
            Tensor zp = saturate(lo.neg().div(scale).round(), DType.U8);
            Tensor y = quantize(x.div(scale), zp, DType.U8);
            return List.of(y, scale, zp);
        });
        add("MatMulInteger", 10, c -> {
            Tensor a = centred(c.in(0), c.opt(2), true), b = centred(c.in(1), c.opt(3), false);
            return one(a.matmul(b).cast(DType.I32));
        });
        add("ConvInteger", 10, c -> {
            Tensor x = centred(c.in(0), c.opt(2), false), w = centred(c.in(1), c.opt(3), false);
            return NnOps.convOn(c, x, w, null).stream().map(t -> t.cast(DType.I32)).toList();
        });
        add("QLinearMatMul", 10, c -> {
            Tensor a = centred(c.in(0), c.in(2), true), b = centred(c.in(3), c.in(5), false);
            Tensor scale = c.in(1).cast(DType.F64).mul(c.in(4).cast(DType.F64)).div(c.in(6).cast(DType.F64));
            Tensor yzp = c.in(7);
            return one(quantize(a.matmul(b).mul(scale), yzp, yzp.dtype()));
        });
        add("QLinearConv", 10, c -> {
            Tensor x = centred(c.in(0), c.in(2), false), w = c.in(3);
            Tensor wzp = c.in(5);
            int m = w.dim(0);
            Tensor wc = w.cast(DType.F64).sub(wzp.numel() == 1 ? wzp.reshape().cast(DType.F64) : channels(wzp, w.ndim(), 0).cast(DType.F64));
            Tensor acc = NnOps.convOn(c, x, wc, null).getFirst();
            if (c.has(8)) acc = acc.add(channels(c.in(8), acc.ndim(), 1).cast(DType.F64));
            Tensor ws = c.in(4).numel() == 1 ? c.in(4).reshape() : channels(c.in(4), acc.ndim(), 1);
            Tensor scale = ws.cast(DType.F64).mul(c.in(1).cast(DType.F64).reshape()).div(c.in(6).cast(DType.F64).reshape());
            if (m <= 0) throw c.bad("weight " + w.shape() + " has no output channels");
            Tensor yzp = c.in(7);
            return one(quantize(acc.mul(scale), yzp.reshape(), yzp.dtype()));
        });

        window("HannWindow", (n, len) -> 0.5 - 0.5 * Math.cos(2 * Math.PI * n / len));
        window("HammingWindow", (n, len) -> 25.0 / 46 - 21.0 / 46 * Math.cos(2 * Math.PI * n / len));
        window("BlackmanWindow", (n, len) -> 0.42 - 0.5 * Math.cos(2 * Math.PI * n / len) + 0.08 * Math.cos(4 * Math.PI * n / len));
    }

    /** A per-axis parameter (1-D, one value per index of {@code axis} of x) shaped to broadcast; a scalar as it is. */
    private static Tensor perAxis(Tensor p, Tensor x, long axis) {
        if (p.ndim() == 0 || p.numel() == 1 && p.ndim() == 1 && x.ndim() == 0) return p.reshape();
        long a = axis < 0 ? axis + x.ndim() : axis;
        if (a < 0 || a >= x.ndim()) throw new IllegalArgumentException("axis " + axis + " is out of range for input " + x.shape());
        return channels(p, x.ndim(), (int) a);
    }

    /** A 1-D tensor reshaped to lie along {@code axis} of a rank-{@code rank} tensor. */
    private static Tensor channels(Tensor p, int rank, int axis) {
        int[] s = new int[rank];
        Arrays.fill(s, 1);
        s[axis] = (int) p.numel();
        return p.reshape(s);
    }

    /** {@code x - zeroPoint} in f64 (exact for 8-bit operands); a 1-D zero point of A is per row. */
    private static Tensor centred(Tensor x, Tensor zp, boolean perRow) {
        Tensor v = x.cast(DType.F64);
        if (zp == null) return v;
        Tensor z = zp.cast(DType.F64);
        if (z.numel() > 1 && perRow) z = z.reshape((int) z.numel(), 1);
        else if (z.numel() == 1) z = z.reshape();
        return v.sub(z);
    }

    /** {@code saturate(round(v) + zeroPoint)} in {@code dtype}, rounding half to even. */
    private static Tensor quantize(Tensor v, Tensor zp, DType dtype) {
        Tensor r = v.round();
        if (zp != null) r = r.add(zp.cast(r.dtype()));
        return saturate(r, dtype);
    }

    private static Tensor saturate(Tensor v, DType dtype) {
        return v.clamp((double) dtype.minInt(), (double) dtype.maxInt()).cast(dtype);
    }

    private interface WindowFn {
        double at(int n, int length);
    }

    /** A window of the size given by input 0 (periodic: length N, else N - 1 in the formula), as {@code output_datatype}. */
    private static void window(String op, WindowFn f) {
        add(op, 17, c -> {
            int size = (int) c.scalar(0);
            int len = c.a.b("periodic", true) ? size : size - 1;
            double[] v = new double[size];
            for (int k = 0; k < size; k++) v[k] = f.at(k, len);
            DType dt = TensorProtos.dtype((int) c.a.i("output_datatype", 1), "output_datatype");
            return one(c.constant(dt, v, size));
        }, (n, opset) -> ElementwiseOps.castTarget(n.attrs().i("output_datatype", 1)));
    }
}

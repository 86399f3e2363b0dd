package dev.kiln.onnx;

import dev.kiln.types.DType;
import dev.kiln.Tensor;

import java.util.Arrays;
import java.util.List;

import static dev.kiln.onnx.OnnxOps.add;
import static dev.kiln.onnx.OnnxOps.one;

/** Linear quantisation and the integer and quantised matrix products and convolutions. */
final class QuantOps {
    private QuantOps() {}

    static void register() {
        add("QuantizeLinear", 10, c -> one(c.in(0).quantizeLinear(c.in(1), c.opt(2), axis(c))),
                (n, opset) -> n.attrs().b("saturate", true) ? null : "saturate = 0 is not supported");
        add("DequantizeLinear", 10, c -> one(c.in(0).dequantizeLinear(c.in(1), c.opt(2), axis(c))));
        add("DynamicQuantizeLinear", 11, c -> {
            Tensor.Quantized q = c.in(0).dynamicQuantizeLinear();
            return List.of(q.values(), q.scale(), q.zeroPoint());
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

    }

    /** The per-axis quantisation axis: an attribute from opset 13, axis 1 before. */
    private static int axis(OpContext c) { return c.opset >= 13 ? c.a.int32("axis", 1) : 1; }

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
}

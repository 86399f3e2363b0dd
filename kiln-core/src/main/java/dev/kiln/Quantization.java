package dev.kiln;

import dev.kiln.types.DType;

import java.util.Arrays;

/** Linear quantisation to integers and back, per tensor or per axis, and dynamic u8 quantisation. */
final class Quantization {
    private Quantization() {}

    /**
     * ONNX QuantizeLinear: {@code saturate(round_half_even(x / scale) + zeroPoint)} in zeroPoint's dtype
     * (u8 when it is null). A 1-D scale (and zero point) applies along {@code axis}, a scalar to all.
     */
    static Tensor quantizeLinear(Tensor x, Tensor scale, Tensor zeroPoint, int axis) {
        String op = "quantizeLinear";
        DType q = zeroPoint == null ? DType.U8 : zeroPoint.dtype();
        if (!q.isInt()) throw new IllegalArgumentException(op + ": zeroPoint must have an integer dtype, got " + q);
        if (!scale.dtype().isFloat()) throw new IllegalArgumentException(op + ": scale must be a float tensor, got " + scale.dtype());
        DType ct = DType.promote(Normalization.computeType(scale.dtype()), DType.F32);
        Tensor s = perAxis(op, "scale", x, scale, axis).cast(ct);
        Tensor y = x.cast(ct).div(s).round();
        if (zeroPoint != null) y = y.add(perAxis(op, "zeroPoint", x, zeroPoint, axis).cast(ct));
        return y.clamp((double) q.minInt(), (double) q.maxInt()).cast(q);
    }

    /** ONNX DequantizeLinear: {@code (x - zeroPoint) * scale} in scale's dtype; per-axis as {@link #quantizeLinear}. */
    static Tensor dequantizeLinear(Tensor x, Tensor scale, Tensor zeroPoint, int axis) {
        String op = "dequantizeLinear";
        if (!x.dtype().isInt()) throw new IllegalArgumentException(op + ": input must have an integer dtype, got " + x.dtype());
        if (!scale.dtype().isFloat()) throw new IllegalArgumentException(op + ": scale must be a float tensor, got " + scale.dtype());
        if (zeroPoint != null && zeroPoint.dtype() != x.dtype()) {
            throw new IllegalArgumentException(op + ": zeroPoint " + zeroPoint.dtype() + " must have the input's dtype " + x.dtype());
        }
        Tensor d = x.cast(DType.I64);
        if (zeroPoint != null) d = d.sub(perAxis(op, "zeroPoint", x, zeroPoint, axis).cast(DType.I64));
        Tensor s = perAxis(op, "scale", x, scale, axis);
        return d.cast(s.dtype()).mul(s);
    }

    /**
     * ONNX DynamicQuantizeLinear of a float tensor: u8 quantisation over the range of x extended to
     * include 0, {@code scale = (max - min) / 255}, {@code zeroPoint = round(clip(-min / scale, 0, 255))}.
     */
    static Tensor.Quantized dynamicQuantizeLinear(Tensor x) {
        if (!x.dtype().isFloat()) throw new IllegalArgumentException("dynamicQuantizeLinear: input must be a float tensor, got " + x.dtype());
        Tensor xf = x.cast(DType.F32);
        Tensor lo = xf.min().minimum(0.0), hi = xf.max().maximum(0.0);
        Tensor scale = hi.sub(lo).div(255.0);
        Tensor zp = lo.neg().div(scale).clamp(0.0, 255.0).round();
        Tensor y = xf.div(scale).round().add(zp).clamp(0.0, 255.0).cast(DType.U8);
        return new Tensor.Quantized(y, scale, zp.cast(DType.U8));
    }

    /** A scale or zero point of x: a scalar as it is, a 1-D one of size {@code x.dim(axis)} shaped to broadcast along axis. */
    private static Tensor perAxis(String op, String name, Tensor x, Tensor p, int axis) {
        Tensor t = p.to(x.device());
        if (t.numel() == 1 && t.ndim() <= 1) return t.reshape();
        int a = x.axis(axis, op);
        if (t.ndim() != 1 || t.dim(0) != x.dim(a)) {
            throw new IllegalArgumentException(op + ": " + name + " " + p.shape() + " must be a scalar or 1-D of size " + x.dim(a) + " (axis " + axis
                    + " of input " + x.shape() + ")");
        }
        int[] s = new int[x.ndim()];
        Arrays.fill(s, 1);
        s[a] = x.dim(a);
        return t.reshape(s);
    }
}

package dev.kiln;

import dev.kiln.types.DType;
/**
 * The signal operators of ONNX (opset 17): DFT as matrix products with host-built cosine and sine
 * tables (angles reduced modulo the length in exact integer arithmetic before the double-precision
 * trigonometry), STFT as framing by sliding windows followed by that DFT, and the mel filter bank.
 * Complex values are pairs on a trailing axis of size 2 (real, imaginary); real signals may have a
 * trailing axis of size 1.
 */
final class Signal {
    private Signal() {}

    /** The most entries of one DFT twiddle matrix (doubles): 2^26, 512 MiB. */
    private static final long MAX_TWIDDLES = 1L << 26;

    /**
     * ONNX DFT along {@code axis} (an axis of the signal, not the trailing complex axis) of length
     * {@code dftLength} (null: the axis size; longer zero-pads, shorter truncates). {@code onesided}
     * keeps frequencies {@code 0..n/2} of a real input; {@code inverse} takes the inverse transform,
     * scaled by {@code 1/n}.
     */
    static Tensor dft(Tensor x, int axis, boolean inverse, boolean onesided, Integer dftLength) {
        String op = "dft";
        if (x.ndim() < 2 || (x.dim(-1) != 1 && x.dim(-1) != 2)) {
            throw new IllegalArgumentException(op + ": input " + x.shape() + " must end in a complex axis of size 1 (real) or 2 (real, imaginary)");
        }
        if (!x.dtype().isFloat()) throw new IllegalArgumentException(op + ": input must be a float tensor, got " + x.dtype());
        int r = x.ndim();
        int a = axis < 0 ? axis + r : axis;
        if (a < 0 || a > r - 2) throw new IllegalArgumentException(op + ": axis " + axis + " must name a signal axis of " + x.shape() + " (not the complex axis)");
        boolean complex = x.dim(-1) == 2;
        if (onesided && (complex || inverse)) {
            throw new IllegalArgumentException(op + ": onesided output needs a real input and a forward transform (input " + x.shape() + ", inverse " + inverse + ")");
        }
        int n = dftLength == null ? x.dim(a) : dftLength;
        if (n <= 0) throw new IllegalArgumentException(op + ": dft length must be > 0, got " + n + " (input " + x.shape() + ")");
        DType dt = x.dtype(), ct = Normalization.computeType(dt);
        Tensor xc = x.cast(ct);
        // the signal axis cut or zero-padded to n
        int[][] pads = new int[r][2];
        pads[a][1] = n - x.dim(a);
        xc = xc.pad(pads);
        Tensor re = xc.shrinkAxis(r - 1, 0, 1).squeeze(-1).transpose(a, -1);
        Tensor im = complex ? xc.shrinkAxis(r - 1, 1, 2).squeeze(-1).transpose(a, -1) : null;
        int k = onesided ? n / 2 + 1 : n;
        // the dense n x k twiddle matrices are built on the heap: bounded (512 MiB each, an 8192-point transform) so a
        // hostile length is refused before it is allocated, not with an OutOfMemoryError or an overflowed int product
        if ((long) n * k > MAX_TWIDDLES) {
            throw new IllegalArgumentException(op + ": a " + n + "-point transform needs " + n + " x " + k + " twiddle factors, over the "
                    + MAX_TWIDDLES + " Kiln builds (input " + x.shape() + ")");
        }
        double[] cos = new double[n * k], sin = new double[n * k];
        for (int j = 0; j < n; j++) {
            for (int f = 0; f < k; f++) {
                double angle = 2 * Math.PI * ((long) f * j % n) / n;
                cos[j * k + f] = Math.cos(angle);
                sin[j * k + f] = Math.sin(angle);
            }
        }
        Tensor c = Tensor.of(ct, cos, n, k).to(x.device()), s = Tensor.of(ct, sin, n, k).to(x.device());
        // X[f] = sum x[j] e^{-+i angle}: forward (re + i im)(cos - i sin), inverse (re + i im)(cos + i sin) / n
        double sign = inverse ? 1 : -1;
        Tensor outRe = re.matmul(c), outIm = re.matmul(s).mul(sign);
        if (im != null) {
            outRe = outRe.sub(im.matmul(s).mul(sign));
            outIm = outIm.add(im.matmul(c));
        }
        if (inverse) {
            outRe = outRe.div((double) n);
            outIm = outIm.div((double) n);
        }
        return Tensor.stack(-1, outRe.transpose(a, -1), outIm.transpose(a, -1)).cast(dt);
    }

    /**
     * ONNX STFT of a signal (batch, length, 1 or 2): frames of {@code frameLength} every {@code frameStep}
     * samples, multiplied by {@code window} (null: rectangular), transformed by {@link #dft}; the result
     * is (batch, frames, bins, 2) with {@code bins = frameLength/2 + 1} when {@code onesided}.
     */
    static Tensor stft(Tensor signal, int frameStep, Tensor window, Integer frameLength, boolean onesided) {
        String op = "stft";
        if (signal.ndim() != 3 || (signal.dim(2) != 1 && signal.dim(2) != 2)) {
            throw new IllegalArgumentException(op + ": signal must be (batch, length, 1 or 2), got " + signal.shape());
        }
        if (frameStep <= 0) throw new IllegalArgumentException(op + ": frameStep must be > 0, got " + frameStep);
        if (window != null && window.ndim() != 1) throw new IllegalArgumentException(op + ": window must be 1-D, got " + window.shape());
        if (window == null && frameLength == null) throw new IllegalArgumentException(op + ": needs a window or a frame length");
        int len = frameLength != null ? frameLength : window.dim(0);
        if (window != null && window.dim(0) != len) {
            throw new IllegalArgumentException(op + ": window " + window.shape() + " does not match frame length " + len);
        }
        if (len <= 0 || len > signal.dim(1)) {
            throw new IllegalArgumentException(op + ": frame length " + len + " must be in [1, " + signal.dim(1) + "] for signal " + signal.shape());
        }
        Tensor frames = Convolution.windows(signal.transpose(1, 2), new int[] {len}, new int[] {frameStep}, new int[] {1}); // (batch, c, frames, len)
        if (window != null) frames = frames.mul(window.to(signal.device()).cast(signal.dtype()));
        return dft(frames.permute(0, 2, 3, 1), 2, false, onesided, null);
    }

    /** The window functions of ONNX (opset 17): cosine sums {@code a0 - a1 cos(2 pi n/N) + a2 cos(4 pi n/N)}. */
    enum Window {
        HANN(0.5, 0.5, 0), HAMMING(25.0 / 46, 21.0 / 46, 0), BLACKMAN(0.42, 0.5, 0.08);

        final double a0, a1, a2;

        Window(double a0, double a1, double a2) {
            this.a0 = a0;
            this.a1 = a1;
            this.a2 = a2;
        }
    }

    /** A window of {@code size} points; N is {@code size} if {@code periodic}, else {@code size - 1}. */
    static Tensor window(String op, Window w, int size, boolean periodic, DType dtype) {
        if (size < 0) throw new IllegalArgumentException(op + ": size must be >= 0, got " + size);
        if (dtype.isBool() || dtype.isPacked()) throw new IllegalArgumentException(op + ": dtype must be numeric, got " + dtype);
        double n = periodic ? size : size - 1;
        double[] v = Creation.doubles(op, dtype, size); // a size from a file: bounded before the array exists
        for (int i = 0; i < size; i++) v[i] = w.a0 - w.a1 * Math.cos(2 * Math.PI * i / n) + w.a2 * Math.cos(4 * Math.PI * i / n);
        return Tensor.of(dtype, v, size);
    }
}

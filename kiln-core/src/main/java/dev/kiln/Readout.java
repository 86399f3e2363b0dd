package dev.kiln;

import dev.kiln.ir.Alu;
import dev.kiln.ir.Elements;
import dev.kiln.runtime.Buffer;
import dev.kiln.types.DType;
import dev.kiln.types.Shape;

/**
 * A realised tensor's values read into Java arrays ({@link Tensor#toFloatArray()} and its siblings). The count comes first,
 * so that a caller checks it (computing its argument) before it realises the tensor for the buffer.
 */
final class Readout {
    private Readout() {}

    /** Non-zero as true. */
    static boolean[] booleans(double[] d) {
        boolean[] out = new boolean[d.length];
        for (int i = 0; i < d.length; i++) out[i] = d[i] != 0;
        return out;
    }

    static float[] floats(int n, Buffer b) {
        float[] f = new float[n];
        Elements.getAsFloats(b.segment(), b.dtype(), f, n);
        return f;
    }

    static double[] doubles(int n, Buffer b) {
        double[] out = new double[n];
        if (b.dtype().isFloat()) Elements.getDoubles(b.segment(), b.dtype(), out, n);
        else for (int i = 0; i < n; i++) out[i] = Elements.getAsDouble(b.segment(), b.dtype(), i);
        return out;
    }

    static long[] longs(int n, Buffer b) {
        long[] out = new long[n];
        for (int i = 0; i < n; i++) {
            out[i] = b.dtype().isFloat() ? Alu.castFloatToInt(DType.I64, Elements.getDouble(b.segment(), b.dtype(), i))
                    : Elements.getLong(b.segment(), b.dtype(), i);
        }
        return out;
    }

    /** The element count of {@code shape} as a Java array length, checked before anything is computed or allocated. */
    static int arrayLength(String op, Shape shape) {
        long n = shape.numel();
        if (n > Integer.MAX_VALUE - 8) { // the largest array length a JVM allows
            throw new IllegalArgumentException(op + ": a tensor of shape " + shape + " has " + n + " elements, more than a Java array holds ("
                    + (Integer.MAX_VALUE - 8) + "); read it through its buffer()");
        }
        return (int) n;
    }
}

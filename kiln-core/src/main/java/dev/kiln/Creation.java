package dev.kiln;

import dev.kiln.ir.Elements;
import dev.kiln.ir.Op;
import dev.kiln.ir.UOp;
import dev.kiln.runtime.Buffer;
import dev.kiln.runtime.Device;
import dev.kiln.runtime.MemoryBudget;
import dev.kiln.types.DType;
import dev.kiln.types.Shape;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.math.BigInteger;
import java.util.Arrays;

/**
 * Tensors made from host data and parameters: copies of Java arrays and memory segments, constants, integer
 * and float ranges, evenly spaced values, identities (also shaped like a tensor) and ranges of any dtype.
 */
final class Creation {
    private Creation() {}

    /** ONNX EyeLike: ones on diagonal {@code k} of a 2-D tensor shaped like x, in {@code dtype} (x's when null). */
    static Tensor eyeLike(Tensor x, int k, DType dtype) {
        if (x.ndim() != 2) throw new IllegalArgumentException("eyeLike: input must be 2-D, got " + x.shape());
        int r = x.dim(0), c = x.dim(1);
        Tensor diag = Tensor.arange(c).reshape(1, c).sub(Tensor.arange(r).reshape(r, 1)).eq(k);
        return diag.cast(dtype == null ? x.dtype() : dtype).to(x.device());
    }

    /** ONNX Range: {@code start + i*delta} for {@code i < max(ceil((limit - start) / delta), 0)}, in {@code dtype}. */
    static Tensor range(Number start, Number limit, Number delta, DType dtype) {
        String op = "range";
        if (dtype.isBool() || dtype.isPacked()) throw new IllegalArgumentException(op + ": dtype must be numeric, got " + dtype);
        if (dtype.isFloat()) {
            double s = start.doubleValue(), l = limit.doubleValue(), d = delta.doubleValue();
            if (d == 0 || !Double.isFinite(d)) throw new IllegalArgumentException(op + ": delta must be finite and non-zero, got " + delta);
            double count = Math.max(0, Math.ceil((l - s) / d));
            if (count > Integer.MAX_VALUE) throw new IllegalArgumentException(op + ": " + (long) count + " elements from " + start + " to " + limit + " by " + delta + " are too many");
            int n = (int) count;
            double[] v = doubles(op, dtype, n);
            for (int i = 0; i < n; i++) v[i] = s + i * d;
            return Tensor.of(dtype, v, n);
        }
        long s = start.longValue(), l = limit.longValue(), d = delta.longValue();
        if (d == 0) throw new IllegalArgumentException(op + ": delta must not be 0");
        // the span limit - start can pass a long (from -9e18 to 9e18), which wrapped to a negative count: an empty range
        BigInteger span = BigInteger.valueOf(l).subtract(BigInteger.valueOf(s)), step = BigInteger.valueOf(d);
        BigInteger[] qr = span.divideAndRemainder(step);
        BigInteger count = qr[1].signum() != 0 && span.signum() == step.signum() ? qr[0].add(BigInteger.ONE) : qr[0];
        if (count.signum() < 0) count = BigInteger.ZERO;
        if (count.compareTo(BigInteger.valueOf(Integer.MAX_VALUE)) > 0) {
            throw new IllegalArgumentException(op + ": " + count + " elements from " + start + " to " + limit + " by " + delta + " are too many");
        }
        int n = count.intValue();
        checkBudget(op, dtype, n);
        long[] v;
        try {
            v = new long[n];
        } catch (OutOfMemoryError e) {
            throw MemoryBudget.refused((long) n * 8, op + " of " + n + " x " + dtype, e);
        }
        for (int i = 0; i < n; i++) v[i] = s + i * d; // wraps on the way for a long span, but each value lies between start and limit
        return Tensor.of(dtype, v, n);
    }

    // Java arrays of a dtype's own type are copied in bulk (a language model's RoPE tables are 10^5 values or more,
    // built while the JIT is cold)

    static Tensor of(float[] data, int... shape) {
        return fillBulk(DType.F32, data.length, shapeFor("of", data.length, shape),
                host -> MemorySegment.copy(data, 0, host, ValueLayout.JAVA_FLOAT_UNALIGNED, 0, data.length));
    }

    static Tensor of(double[] data, int... shape) {
        return fillBulk(DType.F64, data.length, shapeFor("of", data.length, shape),
                host -> MemorySegment.copy(data, 0, host, ValueLayout.JAVA_DOUBLE_UNALIGNED, 0, data.length));
    }

    static Tensor of(int[] data, int... shape) {
        return fillBulk(DType.I32, data.length, shapeFor("of", data.length, shape),
                host -> MemorySegment.copy(data, 0, host, ValueLayout.JAVA_INT_UNALIGNED, 0, data.length));
    }

    static Tensor of(long[] data, int... shape) {
        return fillBulk(DType.I64, data.length, shapeFor("of", data.length, shape),
                host -> MemorySegment.copy(data, 0, host, ValueLayout.JAVA_LONG_UNALIGNED, 0, data.length));
    }

    static Tensor of(boolean[] data, int... shape) {
        return fill(DType.BOOL, data.length, shapeFor("of", data.length, shape), (seg, i) -> Elements.setLong(seg, DType.BOOL, i, data[i] ? 1 : 0));
    }

    static Tensor of(DType dtype, double[] values, int... shape) {
        Tensor.checkComputable("of", dtype);
        return fill(dtype, values.length, shapeFor("of", values.length, shape), (seg, i) -> {
            if (dtype.isFloat()) Elements.setDouble(seg, dtype, i, values[i]);
            else Elements.setLong(seg, dtype, i, dev.kiln.ir.Alu.castFloatToInt(dtype, values[i]));
        });
    }

    static Tensor of(DType dtype, long[] values, int... shape) {
        Tensor.checkComputable("of", dtype);
        return fill(dtype, values.length, shapeFor("of", values.length, shape), (seg, i) -> {
            if (dtype.isFloat()) Elements.setDouble(seg, dtype, i, dev.kiln.ir.Alu.castIntToFloat(DType.I64, dtype, values[i]));
            else Elements.setLong(seg, dtype, i, dev.kiln.ir.Alu.wrap(dtype, values[i]));
        });
    }

    /** The bytes {@code shape} of {@code dtype} takes, checked against what {@code data} holds. */
    private static long segmentBytes(String op, MemorySegment data, DType dtype, Shape s) {
        Tensor.checkComputable(op, dtype);
        long bytes = dtype.byteSize(s.numel());
        if (data.byteSize() < bytes) {
            throw new IllegalArgumentException(op + ": shape " + s + " of " + dtype + " needs " + bytes + " bytes, segment has " + data.byteSize());
        }
        return bytes;
    }

    static Tensor fromSegment(MemorySegment data, DType dtype, int... shape) {
        Shape s = Shape.of(shape);
        long bytes = segmentBytes("fromSegment", data, dtype, s);
        Device d = Tensor.defaultDevice();
        Buffer b = d.allocate(dtype, s.numel());
        dev.kiln.runtime.Transfers.copyFromHost(data, d, b.segment(), bytes);
        // realised over its buffer: realising an unrealised reshape of it would run a plan that copies it again
        return Tensor.overBuffer(b, s, d);
    }

    /**
     * For values computed in bulk (weights folded while a graph is built) without an intermediate array: {@code writer}
     * stores native-order elements into the new buffer's host memory; nothing is copied on a host device. Allocation
     * checks the memory budget like any other.
     */
    static Tensor fromWriter(DType dtype, int[] shape, java.util.function.Consumer<MemorySegment> writer) {
        Tensor.checkComputable("fromWriter", dtype);
        Shape s = Shape.of(shape);
        return fillBulk(dtype, Math.toIntExact(s.numel()), s, writer);
    }

    static Tensor wrapConstant(MemorySegment data, DType dtype, int... shape) {
        Shape s = Shape.of(shape);
        long bytes = segmentBytes("wrapConstant", data, dtype, s);
        // native kernels (CLANG) read elements at their natural alignment; the Java ones would not mind
        if (data.isNative() && data.address() % dtype.itemSize() != 0) {
            throw new IllegalArgumentException("wrapConstant: " + dtype + " elements need an address that is a multiple of " + dtype.itemSize()
                    + ", the segment starts at 0x" + Long.toHexString(data.address()));
        }
        Device d = Tensor.defaultDevice();
        if (d.deviceMemory().isPresent()) {
            throw new IllegalStateException("wrapConstant: the default device " + d.spec() + " keeps its tensors in its own memory, so host memory"
                    + " cannot be its storage; copy the data with fromSegment");
        }
        Buffer b = new Buffer(d.spec().toString(), dtype, s.numel(), data.asSlice(0, bytes)).asImmutable();
        return Tensor.overBuffer(b, s, d);
    }

    static Tensor full(Number value, DType dtype, int... shape) {
        Tensor.checkComputable("full", dtype);
        Shape s = Shape.of(shape);
        UOp c = UOp.constant(dtype, value);
        if (s.rank() > 0) {
            int[] ones = new int[s.rank()];
            Arrays.fill(ones, 1);
            c = UOp.of(Op.EXPAND, dtype, s, UOp.of(Op.RESHAPE, dtype, Shape.of(ones), c));
        }
        return new Tensor(c, Tensor.defaultDevice());
    }

    static Tensor arange(int start, int end, int step) {
        if (step == 0) throw new IllegalArgumentException("arange: step must not be 0");
        int n = Math.max(0, (int) Math.ceil((end - (double) start) / step));
        // a node, not a buffer: kernels compute it from the loop index, and a one-hot sum over it becomes a load
        Tensor t = new Tensor(UOp.arange(DType.I32, Shape.of(n)), Tensor.defaultDevice());
        if (step != 1) t = t.mul(step);
        return start != 0 ? t.add(start) : t;
    }

    static Tensor arange(double start, double end, double step) {
        if (step == 0 || !Double.isFinite(step)) throw new IllegalArgumentException("arange: step must be finite and non-zero, got " + step);
        double count = Math.max(0, Math.ceil((end - start) / step));
        if (count > Integer.MAX_VALUE) throw new IllegalArgumentException("arange: " + (long) count + " elements from " + start + " to " + end + " by " + step + " are too many");
        int n = (int) count;
        double[] v = doubles("arange", DType.F32, n);
        for (int i = 0; i < n; i++) v[i] = start + i * step;
        return Tensor.of(DType.F32, v, n);
    }

    static Tensor linspace(double start, double end, int steps) {
        if (steps < 0) throw new IllegalArgumentException("linspace: steps must be >= 0, got " + steps);
        double[] v = doubles("linspace", DType.F32, steps);
        double step = steps > 1 ? (end - start) / (steps - 1) : 0;
        for (int i = 0; i < steps; i++) v[i] = i == steps - 1 && steps > 1 ? end : start + i * step;
        return Tensor.of(DType.F32, v, steps);
    }

    static Tensor eye(int n, int m) {
        if (n < 0 || m < 0) throw new IllegalArgumentException("eye: expected sizes of 0 or more, got " + n + " x " + m);
        Tensor rows = Tensor.arange(n).reshape(n, 1), cols = Tensor.arange(m).reshape(1, m);
        return rows.eq(cols).cast(DType.F32);
    }

    /**
     * Refuses, before the Java array of values is made, a range of {@code n} elements over the memory budget:
     * the array (8 bytes an element) and the tensor it becomes are both held at once.
     */
    private static void checkBudget(String op, DType dtype, int n) {
        if (n > MAX_ARRAY) throw new IllegalArgumentException(op + ": " + n + " elements are more than one Java array holds (" + MAX_ARRAY + ")");
        MemoryBudget.check((long) n * 8 + dtype.byteSize(n), op + " of " + n + " x " + dtype);
    }

    /** The most elements a Java array may have on HotSpot: a larger request is an OutOfMemoryError, whatever the heap. */
    private static final int MAX_ARRAY = Integer.MAX_VALUE - 8;

    /**
     * The array of {@code n} values a creation op computes before it becomes a tensor of {@code dtype}: checked against
     * the budget and the array limit first, and a heap that cannot hold it is a {@link dev.kiln.runtime.MemoryBudgetException}.
     */
    static double[] doubles(String op, DType dtype, int n) {
        checkBudget(op, dtype, n);
        try {
            return new double[n];
        } catch (OutOfMemoryError e) {
            throw MemoryBudget.refused((long) n * 8, op + " of " + n + " x " + dtype, e); // one array that did not fit
        }
    }

    private interface Filler { void set(MemorySegment seg, int i); }

    private static Tensor fill(DType dtype, int count, Shape shape, Filler f) {
        return fillBulk(dtype, count, shape, host -> {
            for (int i = 0; i < count; i++) f.set(host, i);
        });
    }

    private static Tensor fillBulk(DType dtype, int count, Shape shape, java.util.function.Consumer<MemorySegment> write) {
        Device d = Tensor.defaultDevice();
        Buffer b = d.allocate(dtype, count);
        // filled in host memory, then copied where the device keeps its tensors (nothing to copy on a host device)
        MemorySegment host = b.isHostMemory() ? b.segment() : Buffer.allocateOffHeap("host", dtype, count).segment();
        write.accept(host);
        if (!b.isHostMemory()) dev.kiln.runtime.Transfers.copyFromHost(host, d, b.segment(), dtype.byteSize(count));
        return Tensor.overBuffer(b, shape, d); // realised: see fromSegment

    }

    private static Shape shapeFor(String op, int length, int[] shape) {
        Shape s = shape.length == 0 ? Shape.of(length) : Shape.of(shape);
        if (s.numel() != length) {
            throw new IllegalArgumentException(op + ": " + length + " values do not fill shape " + s + " (" + s.numel() + " elements)");
        }
        return s;
    }
}

package dev.kiln;

import dev.kiln.types.Variable;
import dev.kiln.types.Shape;
import dev.kiln.types.DType;
import dev.kiln.ir.Ints;
import dev.kiln.ir.Op;
import dev.kiln.ir.ReduceArg;
import dev.kiln.ir.UOp;
import dev.kiln.runtime.Buffer;
import dev.kiln.runtime.Device;
import dev.kiln.runtime.DeviceRegistry;
import dev.kiln.ir.Elements;

import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * A lazy n-dimensional array. Operations build an IR graph; nothing is computed until the data is
 * asked for ({@link #realize()}, {@link #toFloatArray()}, ...). Every operation here is composed from
 * the primitive ops of {@link Op}; none adds a primitive.
 *
 * <p>Conventions: default float dtype {@code f32}, default integer dtype {@code i32}, index results
 * ({@code argmax}, sort indices) {@code i64}. Binary operations broadcast as NumPy does and promote
 * dtypes with {@link DType#promote}; a Java scalar operand takes the tensor's dtype, except that a
 * fractional scalar with an integer tensor gives {@code f32}. Axes may be negative. Bad arguments raise
 * {@link IllegalArgumentException} naming the operation, the operands and the offending value.
 */
public final class Tensor {
    private final UOp uop;
    private final Device device;
    private volatile Buffer realized;

    Tensor(UOp uop, Device device) {
        this.uop = uop;
        this.device = device;
    }

    private Tensor(Buffer buffer, Shape shape, Device device) {
        this(UOp.buffer(buffer), device);
        this.realized = buffer;
    }

    // =====================================================================================================
    // properties

    /**
     * The device new tensors are created on: the system property {@code kiln.device} or the environment
     * variable {@code KILN_DEVICE} if set (e.g. {@code INTERP}, {@code CPU:1}), else CPU.
     */
    public static Device defaultDevice() { return DeviceRegistry.get(defaultDeviceName()); }

    private static String defaultDeviceName() {
        String p = System.getProperty("kiln.device");
        if (p != null && !p.isBlank()) return p;
        String e = System.getenv("KILN_DEVICE");
        return e != null && !e.isBlank() ? e : "CPU";
    }

    public Shape shape() { return uop.shape(); }

    /** The dimensions as an array. */
    public int[] dims() { return shape().toArray(); }

    /** Size of one axis (negative axes count from the end). */
    public int dim(int axis) { return shape().dim(axis(axis, "dim")); }

    public int ndim() { return shape().rank(); }

    public long numel() { return shape().numel(); }

    public DType dtype() { return uop.dtype(); }

    public Device device() { return device; }

    /** The IR node this tensor stands for (a buffer node once realised). */
    public UOp uop() { return node(); }

    UOp node() {
        Buffer b = realized;
        if (b == null) return uop;
        UOp buf = UOp.buffer(b);
        return buf.shape().equals(shape()) ? buf : UOp.of(Op.RESHAPE, b.dtype(), shape(), buf);
    }

    private Tensor make(UOp u) { return new Tensor(u, device); }

    // =====================================================================================================
    // creation

    /** A tensor holding a copy of {@code data} with the given shape (f32). */
    public static Tensor of(float[] data, int... shape) {
        return fill(DType.F32, data.length, shapeFor("of", data.length, shape), (seg, i) -> Elements.setDouble(seg, DType.F32, i, data[i]));
    }

    /** A 1-D f32 tensor holding a copy of {@code data}. */
    public static Tensor of(float... data) { return of(data, data.length); }

    /** A tensor holding a copy of {@code data} (f64). */
    public static Tensor of(double[] data, int... shape) {
        return fill(DType.F64, data.length, shapeFor("of", data.length, shape), (seg, i) -> Elements.setDouble(seg, DType.F64, i, data[i]));
    }

    /** A tensor holding a copy of {@code data} (i32). */
    public static Tensor of(int[] data, int... shape) {
        return fill(DType.I32, data.length, shapeFor("of", data.length, shape), (seg, i) -> Elements.setLong(seg, DType.I32, i, data[i]));
    }

    /** A tensor holding a copy of {@code data} (i64). */
    public static Tensor of(long[] data, int... shape) {
        return fill(DType.I64, data.length, shapeFor("of", data.length, shape), (seg, i) -> Elements.setLong(seg, DType.I64, i, data[i]));
    }

    /** A tensor holding a copy of {@code data} (bool). */
    public static Tensor of(boolean[] data, int... shape) {
        return fill(DType.BOOL, data.length, shapeFor("of", data.length, shape), (seg, i) -> Elements.setLong(seg, DType.BOOL, i, data[i] ? 1 : 0));
    }

    /**
     * A tensor of {@code dtype} holding a copy of {@code values}, each converted to the dtype (integers
     * wrap, floats round).
     */
    public static Tensor of(DType dtype, double[] values, int... shape) {
        checkComputable("of", dtype);
        return fill(dtype, values.length, shapeFor("of", values.length, shape), (seg, i) -> {
            if (dtype.isFloat()) Elements.setDouble(seg, dtype, i, values[i]);
            else Elements.setLong(seg, dtype, i, dev.kiln.ir.Alu.castFloatToInt(dtype, values[i]));
        });
    }

    /** A tensor of {@code dtype} holding integer {@code values}, each wrapped to the dtype. */
    public static Tensor of(DType dtype, long[] values, int... shape) {
        checkComputable("of", dtype);
        return fill(dtype, values.length, shapeFor("of", values.length, shape), (seg, i) -> {
            if (dtype.isFloat()) Elements.setDouble(seg, dtype, i, dev.kiln.ir.Alu.castIntToFloat(DType.I64, dtype, values[i]));
            else Elements.setLong(seg, dtype, i, dev.kiln.ir.Alu.wrap(dtype, values[i]));
        });
    }

    /**
     * A tensor holding a copy of the first {@code dtype.byteSize(numel)} bytes of {@code data}, read as
     * dense C-order elements in native byte order.
     */
    public static Tensor fromSegment(MemorySegment data, DType dtype, int... shape) {
        checkComputable("fromSegment", dtype);
        Shape s = Shape.of(shape);
        long bytes = dtype.byteSize(s.numel());
        if (data.byteSize() < bytes) {
            throw new IllegalArgumentException("fromSegment: shape " + s + " of " + dtype + " needs " + bytes
                    + " bytes, segment has " + data.byteSize());
        }
        Device d = defaultDevice();
        Buffer b = d.allocate(dtype, s.numel());
        MemorySegment.copy(data, 0, b.segment(), 0, bytes);
        return new Tensor(b, s, d).reshapeTo(s);
    }

    /** A 0-d f32 tensor. */
    public static Tensor scalar(double value) { return full(value, DType.F32); }

    /** A 0-d tensor of {@code dtype}. */
    public static Tensor scalar(Number value, DType dtype) { return full(value, dtype); }

    /** A tensor of {@code shape} filled with {@code value} (converted to {@code dtype}). */
    public static Tensor full(Number value, DType dtype, int... shape) {
        checkComputable("full", dtype);
        Shape s = Shape.of(shape);
        UOp c = UOp.constant(dtype, value);
        if (s.rank() > 0) {
            int[] ones = new int[s.rank()];
            Arrays.fill(ones, 1);
            c = UOp.of(Op.EXPAND, dtype, s, UOp.of(Op.RESHAPE, dtype, Shape.of(ones), c));
        }
        return new Tensor(c, defaultDevice());
    }

    public static Tensor zeros(int... shape) { return full(0.0, DType.F32, shape); }

    public static Tensor zeros(DType dtype, int... shape) { return full(0, dtype, shape); }

    public static Tensor ones(int... shape) { return full(1.0, DType.F32, shape); }

    public static Tensor ones(DType dtype, int... shape) { return full(1, dtype, shape); }

    /** A tensor like this one (shape, dtype, device) filled with {@code value}. */
    public Tensor fullLike(Number value) { return full(value, dtype(), dims()).to(device); }

    public Tensor zerosLike() { return fullLike(0); }

    public Tensor onesLike() { return fullLike(1); }

    /** {@code [0, 1, ..., end-1]} as i32. */
    public static Tensor arange(int end) { return arange(0, end, 1); }

    /** {@code start, start+step, ...} below {@code end} (above, for a negative step), as i32. */
    public static Tensor arange(int start, int end, int step) {
        if (step == 0) throw new IllegalArgumentException("arange: step must not be 0");
        int n = Math.max(0, (int) Math.ceil((end - (double) start) / step));
        // a node, not a buffer: kernels compute it from the loop index, and a one-hot sum over it becomes a load
        Tensor t = new Tensor(UOp.arange(DType.I32, Shape.of(n)), defaultDevice());
        if (step != 1) t = t.mul(step);
        return start != 0 ? t.add(start) : t;
    }

    /** {@code start, start+step, ...} below {@code end}, as f32. */
    public static Tensor arange(double start, double end, double step) {
        if (step == 0 || !Double.isFinite(step)) throw new IllegalArgumentException("arange: step must be finite and non-zero, got " + step);
        int n = Math.max(0, (int) Math.ceil((end - start) / step));
        double[] v = new double[n];
        for (int i = 0; i < n; i++) v[i] = start + i * step;
        return of(DType.F32, v, n);
    }

    /** {@code steps} evenly spaced f32 values from {@code start} to {@code end} inclusive. */
    public static Tensor linspace(double start, double end, int steps) {
        if (steps < 0) throw new IllegalArgumentException("linspace: steps must be >= 0, got " + steps);
        double[] v = new double[steps];
        double step = steps > 1 ? (end - start) / (steps - 1) : 0;
        for (int i = 0; i < steps; i++) v[i] = i == steps - 1 && steps > 1 ? end : start + i * step;
        return of(DType.F32, v, steps);
    }

    /** The n-by-m f32 identity (ones on the main diagonal). */
    public static Tensor eye(int n, int m) {
        Tensor rows = arange(n).reshape(n, 1), cols = arange(m).reshape(1, m);
        return rows.eq(cols).cast(DType.F32);
    }

    public static Tensor eye(int n) { return eye(n, n); }

    private interface Filler { void set(MemorySegment seg, int i); }

    private static Tensor fill(DType dtype, int count, Shape shape, Filler f) {
        Device d = defaultDevice();
        Buffer b = d.allocate(dtype, count);
        for (int i = 0; i < count; i++) f.set(b.segment(), i);
        return new Tensor(b, shape, d).reshapeTo(shape);
    }

    private Tensor reshapeTo(Shape s) {
        if (s.equals(shape())) return this;
        UOp n = node();
        while (n.op() == Op.RESHAPE) n = n.src(0); // a reshape of a reshape is one reshape
        return make(n.shape().equals(s) ? n : UOp.of(Op.RESHAPE, dtype(), s, n));
    }

    private static Shape shapeFor(String op, int length, int[] shape) {
        Shape s = shape.length == 0 ? Shape.of(length) : Shape.of(shape);
        if (s.numel() != length) {
            throw new IllegalArgumentException(op + ": " + length + " values do not fill shape " + s + " (" + s.numel() + " elements)");
        }
        return s;
    }

    private static void checkComputable(String op, DType dtype) {
        if (dtype.isPacked()) throw new IllegalArgumentException(op + ": packed dtype " + dtype + " holds weights only; it has no element values");
    }

    // =====================================================================================================
    // realisation and data

    /** Computes this tensor (once); later operations read the stored result. */
    public Tensor realize() {
        if (realized == null) {
            synchronized (this) {
                if (realized == null) realized = device.realize(uop, Map.of());
            }
        }
        return this;
    }

    /** The realised buffer (computing it first if needed). */
    public Buffer buffer() { return realize().realized; }

    /**
     * This tensor's graph scheduled, planned and compiled for its device once, to be executed many
     * times ({@link dev.kiln.runtime.ExecutionPlan#execute()}). Close the plan to free its memory.
     */
    public dev.kiln.runtime.ExecutionPlan prepare() { return prepare(this); }

    /** One plan computing several outputs (in the given order) on the first output's device. */
    public static dev.kiln.runtime.ExecutionPlan prepare(Tensor... outputs) {
        if (outputs.length == 0) throw new IllegalArgumentException("prepare: needs at least one output");
        Device d = outputs[0].device;
        List<UOp> roots = new ArrayList<>();
        for (Tensor t : outputs) roots.add(t.to(d).node());
        return dev.kiln.runtime.PlanBuilder.build(d, roots);
    }

    /**
     * A 0-d i64 tensor holding the value of a symbolic variable, given when a plan runs
     * ({@link dev.kiln.runtime.ExecutionPlan#executeWithVars}); use it like any scalar, e.g. to mask
     * positions past a length: {@code arange(n).lt(variable(len))}.
     */
    public static Tensor variable(Variable v) { return new Tensor(UOp.variable(v), defaultDevice()); }

    /** This tensor on another device (a {@link Op#COPY}); the same tensor if it is already there. */
    public Tensor to(String deviceName) { return to(DeviceRegistry.get(deviceName)); }

    /**
     * This tensor on another device. A tensor computed from constants and variables alone (no buffer)
     * is not copied but computed where it is used: the same graph, placed on {@code target}.
     */
    public Tensor to(Device target) {
        if (target == device) return this;
        if (realized == null && bufferFree(node())) return new Tensor(node(), target);
        return new Tensor(UOp.of(Op.COPY, dtype(), target.spec().toString(), node()), target);
    }

    private static boolean bufferFree(UOp root) {
        for (UOp u : root.toposort()) {
            if (u.op() == Op.BUFFER || u.op() == Op.COPY || u.op() == Op.CUSTOM || u.op() == Op.ASSIGN) return false;
        }
        return true;
    }

    /** Forces materialisation when scheduled; the value is unchanged. */
    public Tensor contiguous() { return make(UOp.of(Op.CONTIGUOUS, dtype(), null, node())); }

    /**
     * Writes {@code value} into this realised tensor's buffer when the returned tensor is realised.
     *
     * @throws IllegalArgumentException if shapes or dtypes differ
     */
    public Tensor assign(Tensor value) {
        if (!value.shape().equals(shape()) || value.dtype() != dtype()) {
            throw new IllegalArgumentException("assign: value " + value.dtype() + value.shape() + " does not match target "
                    + dtype() + shape());
        }
        realize();
        return make(UOp.of(Op.ASSIGN, dtype(), null, node(), value.to(device).node()));
    }

    /**
     * A tensor computed by host code: {@code body} reads the realised inputs and writes the output
     * (shape {@code shape}, dtype {@code dtype}) in C order.
     */
    public static Tensor custom(String name, DType dtype, int[] shape, dev.kiln.ir.CustomFunction.Body body, Tensor... inputs) {
        Objects.requireNonNull(body, "body");
        checkComputable("custom", dtype);
        var fn = new dev.kiln.ir.CustomFunction(name, Shape.of(shape), body);
        Device d = inputs.length > 0 ? inputs[0].device : defaultDevice();
        List<UOp> src = new ArrayList<>();
        for (Tensor t : inputs) src.add(t.to(d).node());
        return new Tensor(UOp.of(Op.CUSTOM, dtype, fn, src), d);
    }

    /** The values converted to float (C order). */
    public float[] toFloatArray() {
        double[] d = toDoubleArray();
        float[] f = new float[d.length];
        for (int i = 0; i < d.length; i++) f[i] = (float) d[i];
        return f;
    }

    /** The values converted to double (C order). */
    public double[] toDoubleArray() {
        Buffer b = buffer();
        double[] out = new double[Math.toIntExact(numel())];
        for (int i = 0; i < out.length; i++) out[i] = Elements.getAsDouble(b.segment(), b.dtype(), i);
        return out;
    }

    /** The values as longs (C order): integers as they are (u64 as raw bits), floats truncated. */
    public long[] toLongArray() {
        Buffer b = buffer();
        long[] out = new long[Math.toIntExact(numel())];
        for (int i = 0; i < out.length; i++) {
            out[i] = b.dtype().isFloat() ? dev.kiln.ir.Alu.castFloatToInt(DType.I64, Elements.getDouble(b.segment(), b.dtype(), i))
                    : Elements.getLong(b.segment(), b.dtype(), i);
        }
        return out;
    }

    /** The values as ints (C order), see {@link #toLongArray()}. */
    public int[] toIntArray() { return Arrays.stream(toLongArray()).mapToInt(v -> (int) v).toArray(); }

    /** The values as booleans (non-zero is true). */
    public boolean[] toBooleanArray() {
        double[] d = toDoubleArray();
        boolean[] out = new boolean[d.length];
        for (int i = 0; i < d.length; i++) out[i] = d[i] != 0;
        return out;
    }

    /** The single value of a one-element tensor. */
    public double item() {
        if (numel() != 1) throw new IllegalArgumentException("item: tensor of shape " + shape() + " has " + numel() + " elements, not 1");
        return toDoubleArray()[0];
    }

    @Override
    public String toString() {
        return "Tensor" + shape() + " " + dtype() + " on " + device + (realized != null ? " (realised)" : "");
    }

    // =====================================================================================================
    // axes and broadcasting

    /** {@code axis} normalised to {@code [0, rank)}. */
    int axis(int axis, String op) { return normAxis(axis, ndim(), op, shape()); }

    static int normAxis(int axis, int rank, String op, Shape shape) {
        int a = axis < 0 ? axis + rank : axis;
        if (a < 0 || a >= rank) {
            throw new IllegalArgumentException(op + ": axis " + axis + " out of range for shape " + shape + " (rank " + rank + ")");
        }
        return a;
    }

    /** Distinct normalised axes; an empty list means all axes. */
    int[] axes(int[] axes, String op) {
        if (axes.length == 0) {
            int[] all = new int[ndim()];
            for (int i = 0; i < all.length; i++) all[i] = i;
            return all;
        }
        int[] out = new int[axes.length];
        for (int i = 0; i < axes.length; i++) {
            out[i] = axis(axes[i], op);
            for (int j = 0; j < i; j++) {
                if (out[j] == out[i]) throw new IllegalArgumentException(op + ": axis " + axes[i] + " given twice in " + Arrays.toString(axes));
            }
        }
        Arrays.sort(out);
        return out;
    }

    /**
     * The NumPy broadcast of two shapes. A symbolic axis stays symbolic; a fixed axis of the same size
     * as a symbolic one takes its variable (a table laid out for the maximum, read up to the size), and
     * two different variables on one axis do not broadcast.
     */
    static Shape broadcastShape(String op, Shape a, Shape b) {
        int r = Math.max(a.rank(), b.rank());
        Object[] out = new Object[r];
        for (int i = 0; i < r; i++) {
            int ia = i - (r - a.rank()), ib = i - (r - b.rank());
            int da = ia < 0 ? 1 : a.dim(ia), db = ib < 0 ? 1 : b.dim(ib);
            Variable va = ia < 0 ? null : a.variable(ia), vb = ib < 0 ? null : b.variable(ib);
            if (da != db && da != 1 && db != 1) {
                throw new IllegalArgumentException(op + ": shapes " + a + " and " + b + " cannot broadcast (axis " + (i - r)
                        + ": " + da + " vs " + db + ")");
            }
            if (da == db && va != null && vb != null && !va.equals(vb)) {
                throw new IllegalArgumentException(op + ": shapes " + a + " and " + b + " cannot broadcast (axis " + (i - r)
                        + ": symbolic sizes " + va.name() + " and " + vb.name() + ")");
            }
            Variable v = da == 1 && db != 1 ? vb : db == 1 && da != 1 ? va : va != null ? va : vb;
            out[i] = v != null ? v : (Object) (da == 1 ? db : da);
        }
        return Shape.symbolic(out);
    }

    /** This tensor broadcast to {@code target} (NumPy rules); symbolic axes of this tensor stay symbolic. */
    public Tensor broadcastTo(int... target) {
        Shape t = Shape.of(target);
        for (int i = 0; i < ndim(); i++) {
            int j = t.rank() - ndim() + i;
            if (shape().variable(i) != null && j >= 0 && t.dim(j) == dim(i)) t = t.withVariable(j, shape().variable(i));
        }
        return broadcastTo(t, "broadcastTo");
    }

    /** This tensor broadcast to {@code t}; a fixed axis of this tensor may become symbolic, a symbolic one stays. */
    Tensor broadcastTo(Shape t, String op) {
        Shape s = shape();
        if (s.equals(t)) return this;
        Shape b = broadcastShape(op, s, t);
        if (!b.equals(t)) throw new IllegalArgumentException(op + ": shape " + s + " cannot broadcast to " + t);
        Shape padded = Shape.of(t.rank() == s.rank() ? s.toArray() : ones(t.rank() - s.rank(), s.toArray()));
        for (int i = 0; i < s.rank(); i++) {
            int j = t.rank() - s.rank() + i;
            Variable v = s.variable(i) != null ? s.variable(i) : s.dim(i) != 1 ? t.variable(j) : null;
            if (v != null) padded = padded.withVariable(j, v);
        }
        Tensor x = reshapeTo(padded);
        return x.shape().equals(t) ? x : make(UOp.of(Op.EXPAND, dtype(), t, x.node()));
    }

    /** {@code dims} after {@code lead} leading ones. */
    private static int[] ones(int lead, int[] dims) {
        int[] out = new int[lead + dims.length];
        Arrays.fill(out, 0, lead, 1);
        System.arraycopy(dims, 0, out, lead, dims.length);
        return out;
    }

    /** A 0-d tensor for a Java scalar operand ({@link Number} or {@link Boolean}) of this tensor. */
    private Tensor scalarLike(Object v, String op) {
        if (v instanceof Boolean bo) return full(bo ? 1 : 0, dtype().isBool() ? DType.BOOL : dtype()).to(device);
        if (!(v instanceof Number num)) {
            throw new IllegalArgumentException(op + ": operand must be a Tensor, Number or Boolean, got " + (v == null ? "null" : v.getClass().getName()));
        }
        DType dt = dtype();
        if ((num instanceof Double || num instanceof Float) && !dt.isFloat()) dt = DType.F32;
        else if (dt.isBool()) dt = DType.I32;
        return full(num, dt).to(device);
    }

    private static Tensor operand(Tensor self, Object o, String op) {
        return o instanceof Tensor t ? t : self.scalarLike(o, op);
    }

    /** Broadcasts and promotes two operands; the result holds the two converted tensors. */
    private static Tensor[] align(String op, Tensor a, Tensor b, DType dtype) {
        Shape s = broadcastShape(op, a.shape(), b.shape());
        Tensor x = a.cast(dtype).broadcastTo(s, op), y = b.to(a.device).cast(dtype).broadcastTo(s, op);
        return new Tensor[] {x, y};
    }

    private static DType promoteFor(String op, Tensor a, Tensor b) {
        return DType.promote(a.dtype(), b.dtype());
    }

    /** A binary primitive after broadcasting and promotion. */
    private Tensor binary(Op op, String name, Object other) {
        Tensor o = operand(this, other, name);
        Tensor[] xy = align(name, this, o, promoteFor(name, this, o));
        DType out = op.isComparison() ? DType.BOOL : xy[0].dtype();
        return make(UOp.of(op, out, null, xy[0].node(), xy[1].node()));
    }

    private Tensor unary(Op op) { return make(UOp.of(op, dtype(), null, node())); }

    /** This tensor as a float dtype (f32 if it is an integer or bool tensor). */
    Tensor toFloat() { return dtype().isFloat() ? this : cast(DType.F32); }

    private Tensor requireIntOrBool(String op) {
        if (dtype().isFloat()) throw new IllegalArgumentException(op + ": needs integer or bool operands, got " + dtype());
        return this;
    }

    // =====================================================================================================
    // casts

    /** The values converted to {@code dtype} (floats to integers truncate toward zero). */
    public Tensor cast(DType dtype) {
        checkComputable("cast", dtype);
        return dtype == dtype() ? this : make(UOp.of(Op.CAST, dtype, null, node()));
    }

    /** The same bits seen as {@code dtype}, which must have the same item size. */
    public Tensor bitcast(DType dtype) {
        checkComputable("bitcast", dtype);
        if (dtype.itemSize() != dtype().itemSize()) {
            throw new IllegalArgumentException("bitcast: " + dtype() + " (" + dtype().itemSize() + " bytes) to " + dtype
                    + " (" + dtype.itemSize() + " bytes) needs equal item sizes");
        }
        return dtype == dtype() ? this : make(UOp.of(Op.BITCAST, dtype, null, node()));
    }

    // =====================================================================================================
    // arithmetic

    public Tensor add(Object other) { return binary(Op.ADD, "add", other); }

    public Tensor sub(Object other) { return add(operand(this, other, "sub").neg()); }

    /** {@code other - this}. */
    public Tensor rsub(Object other) { return neg().add(other); }

    public Tensor mul(Object other) { return binary(Op.MUL, "mul", other); }

    /** True division; integer operands give f32. */
    public Tensor div(Object other) {
        Tensor o = operand(this, other, "div");
        DType dt = DType.promote(dtype(), o.dtype());
        if (!dt.isFloat()) dt = DType.F32;
        Tensor[] xy = align("div", this, o, dt);
        return make(UOp.of(Op.DIV, dt, null, xy[0].node(), xy[1].node()));
    }

    /** Division rounding toward negative infinity (Python {@code //}). */
    public Tensor floorDiv(Object other) { return binary(Op.FLOORDIV, "floorDiv", other); }

    /** Integer division truncating toward zero (C {@code /}); on floats, {@code trunc(a / b)}. */
    public Tensor truncDiv(Object other) {
        Tensor o = operand(this, other, "truncDiv");
        if (dtype().isFloat() || o.dtype().isFloat()) return div(o).trunc();
        return binary(Op.DIV, "truncDiv", o);
    }

    /** Remainder with the divisor's sign (Python {@code %}, {@code torch.remainder}). */
    public Tensor mod(Object other) { return binary(Op.FLOORMOD, "mod", other); }

    /** Remainder with the dividend's sign (C {@code fmod}, {@code torch.fmod}). */
    public Tensor fmod(Object other) { return binary(Op.MOD, "fmod", other); }

    public Tensor neg() {
        if (dtype().isBool()) throw new IllegalArgumentException("neg: not defined on bool; use logicalNot");
        return unary(Op.NEG);
    }

    public Tensor reciprocal() { return toFloat().unary(Op.RECIP); }

    public Tensor square() { return mul(this); }

    /** Elementwise maximum; NaN wins. */
    public Tensor maximum(Object other) { return binary(Op.MAX, "maximum", other); }

    /** Elementwise minimum; NaN wins. */
    public Tensor minimum(Object other) {
        Tensor o = operand(this, other, "minimum");
        Tensor[] xy = align("minimum", this, o, promoteFor("minimum", this, o));
        Tensor a = xy[0], b = xy[1];
        Tensor pickA = a.lt(b);
        if (a.dtype().isFloat()) pickA = pickA.logicalOr(a.isnan());
        return where(pickA, a, b);
    }

    /** {@code this ** exponent} with real-valued semantics: a negative base needs an integral exponent. */
    public Tensor pow(Object exponent) {
        Tensor e = operand(this, exponent, "pow");
        DType dt = DType.promote(dtype(), e.dtype());
        if (!dt.isFloat()) { // integer powers: exact through f64 for the magnitudes integers reach
            Tensor[] xy = align("pow", this.cast(DType.F64), e.cast(DType.F64), DType.F64);
            return xy[0].pow(xy[1]).round().cast(dt);
        }
        Tensor[] xy = align("pow", this, e, dt);
        Tensor b = xy[0], y = xy[1];
        Tensor mag = y.mul(b.abs().log2()).exp2();
        Tensor yInt = y.trunc().eq(y);
        Tensor yOdd = yInt.logicalAnd(y.mod(2.0).abs().eq(1.0));
        Tensor negResult = where(yInt, where(yOdd, mag.neg(), mag), b.fullLike(Double.NaN));
        Tensor negZero = b.eq(0.0).logicalAnd(b.reciprocal().lt(0.0)); // -0.0 ** odd keeps the sign: (-0.0)**-1 is -inf
        Tensor r = where(b.lt(0.0), negResult, where(negZero.logicalAnd(yOdd), mag.neg(), mag));
        // C99 pow: x**0, 1**y (even NaN) and (-1)**(+-inf) are 1
        Tensor one = y.eq(0.0).logicalOr(b.eq(1.0)).logicalOr(b.eq(-1.0).logicalAnd(y.isinf()));
        return where(one, b.fullLike(1.0), r);
    }

    /** {@code this + weight * (end - this)}. */
    public Tensor lerp(Object end, Object weight) {
        Tensor e = operand(this, end, "lerp");
        return add(operand(this, weight, "lerp").mul(e.sub(this)));
    }

    /** Values clipped to {@code [min, max]}; either bound may be null. */
    public Tensor clamp(Object min, Object max) {
        Tensor x = this;
        if (min != null) x = x.maximum(min);
        if (max != null) x = x.minimum(max);
        return x;
    }

    // =====================================================================================================
    // exponentials, logarithms and powers

    public Tensor exp2() { return toFloat().unary(Op.EXP2); }

    public Tensor log2() { return toFloat().unary(Op.LOG2); }

    public Tensor exp() { return toFloat().mul(1.0 / Math.log(2)).exp2(); }

    public Tensor log() { return log2().mul(Math.log(2)); }

    public Tensor log10() { return log2().mul(Math.log(2) / Math.log(10)); }

    /** {@code log(1 + x)}, accurate near 0. */
    public Tensor log1p() {
        Tensor x = toFloat(), u = x.add(1.0);
        // log(u) * x / (u - 1) corrects the rounding of 1 + x (Goldberg's trick); x / (u - 1) first, so that
        // huge x does not overflow, and +inf passes through
        Tensor d = u.sub(1.0);
        return where(d.eq(0.0).logicalOr(x.eq(Double.POSITIVE_INFINITY)), x, u.log().mul(x.div(d)));
    }

    /** {@code exp(x) - 1}. */
    public Tensor expm1() {
        Tensor x = toFloat(), u = x.exp();
        Tensor um1 = u.sub(1.0);
        // (u - 1) * x / log(u) corrects the rounding of exp near 0; x / log(u) first, so that large x does
        // not overflow, and an infinite exp passes through
        return where(u.eq(1.0), x, where(um1.eq(-1.0).logicalOr(u.isinf()), um1, um1.mul(x.div(u.log()))));
    }

    public Tensor sqrt() { return toFloat().unary(Op.SQRT); }

    public Tensor rsqrt() { return sqrt().reciprocal(); }

    // =====================================================================================================
    // trigonometry

    public Tensor sin() { return toFloat().unary(Op.SIN); }

    public Tensor cos() { return toFloat().rsub(Math.PI / 2).sin(); }

    public Tensor tan() { return sin().div(cos()); }

    /** Arctangent from a minimax polynomial after range reduction (max error about 2 ulp in f32). */
    public Tensor atan() {
        Tensor x = toFloat(), a = x.abs();
        // reduce |x| > tan(3pi/8) to -1/|x|, tan(pi/8) < |x| <= tan(3pi/8) to (|x|-1)/(|x|+1)
        Tensor big = a.gt(2.414213562373095), mid = a.gt(0.4142135623730950).logicalAnd(big.logicalNot());
        Tensor y0 = where(big, a.fullLike(Math.PI / 2), where(mid, a.fullLike(Math.PI / 4), a.fullLike(0.0)));
        Tensor r = where(big, a.reciprocal().neg(), where(mid, a.sub(1.0).div(a.add(1.0)), a));
        Tensor z = r.square();
        Tensor p = z.mul(8.05374449538e-2).sub(1.38776856032e-1).mul(z).add(1.99777106478e-1).mul(z).sub(3.33329491539e-1).mul(z).mul(r).add(r);
        Tensor res = y0.add(p);
        return where(x.lt(0.0), res.neg(), res);
    }

    public Tensor asin() {
        Tensor x = toFloat();
        return x.div(x.square().rsub(1.0).sqrt()).atan();
    }

    public Tensor acos() { return asin().rsub(Math.PI / 2); }

    public Tensor sinh() {
        Tensor x = toFloat();
        return x.exp().sub(x.neg().exp()).mul(0.5);
    }

    public Tensor cosh() {
        Tensor x = toFloat();
        return x.exp().add(x.neg().exp()).mul(0.5);
    }

    public Tensor tanh() {
        Tensor x = toFloat();
        return x.mul(2.0).sigmoid().mul(2.0).sub(1.0);
    }

    public Tensor asinh() {
        Tensor x = toFloat(), a = x.abs();
        Tensor r = a.add(a.square().add(1.0).sqrt()).log();
        return where(x.lt(0.0), r.neg(), r);
    }

    public Tensor acosh() {
        Tensor x = toFloat();
        return x.add(x.square().sub(1.0).sqrt()).log();
    }

    public Tensor atanh() {
        Tensor x = toFloat();
        return x.add(1.0).div(x.rsub(1.0)).log().mul(0.5);
    }

    /** The error function (Abramowitz and Stegun 7.1.26, absolute error below 1.5e-7). */
    public Tensor erf() {
        Tensor x = toFloat(), a = x.abs();
        Tensor t = a.mul(0.3275911).add(1.0).reciprocal();
        Tensor poly = t.mul(1.061405429).sub(1.453152027).mul(t).add(1.421413741).mul(t).sub(0.284496736).mul(t).add(0.254829592).mul(t);
        Tensor y = poly.mul(a.square().neg().exp()).rsub(1.0);
        return where(x.lt(0.0), y.neg(), y);
    }

    // =====================================================================================================
    // rounding and sign

    public Tensor trunc() { return dtype().isFloat() ? unary(Op.TRUNC) : this; }

    public Tensor floor() {
        if (!dtype().isFloat()) return this;
        Tensor t = trunc();
        return where(lt(t), t.sub(1.0), t);
    }

    public Tensor ceil() {
        if (!dtype().isFloat()) return this;
        Tensor t = trunc();
        return where(gt(t), t.add(1.0), t);
    }

    /** Round half to even, as NumPy and PyTorch do. */
    public Tensor round() {
        if (!dtype().isFloat()) return this;
        Tensor f = floor(), d = sub(f);
        Tensor even = f.mod(2.0).eq(0.0);
        Tensor up = d.gt(0.5).logicalOr(d.eq(0.5).logicalAnd(even.logicalNot()));
        return where(up, f.add(1.0), f);
    }

    public Tensor abs() {
        if (dtype().isBool() || dtype().isUnsigned()) return this;
        return maximum(neg());
    }

    /** -1, 0 or 1 by sign (NaN stays NaN, zero keeps its sign as 0). */
    public Tensor sign() {
        if (dtype().isBool()) return this;
        Tensor one = fullLike(1), zero = fullLike(0);
        Tensor s = where(gt(zero), one, where(lt(zero), one.neg(), zero));
        return dtype().isFloat() ? where(isnan(), this, s) : s;
    }

    public Tensor isnan() { return dtype().isFloat() ? ne(this) : fullLike(0).cast(DType.BOOL); }

    public Tensor isinf() {
        return dtype().isFloat() ? eq(Double.POSITIVE_INFINITY).logicalOr(eq(Double.NEGATIVE_INFINITY)) : fullLike(0).cast(DType.BOOL);
    }

    public Tensor isfinite() { return isnan().logicalOr(isinf()).logicalNot(); }

    // =====================================================================================================
    // comparisons and logic (results are bool)

    public Tensor lt(Object other) { return binary(Op.CMPLT, "lt", other); }

    public Tensor gt(Object other) { return operand(this, other, "gt").binaryFrom(Op.CMPLT, "gt", this); }

    public Tensor le(Object other) { return lt(other).logicalOr(eq(other)); }

    public Tensor ge(Object other) { return gt(other).logicalOr(eq(other)); }

    public Tensor eq(Object other) { return binary(Op.CMPEQ, "eq", other); }

    public Tensor ne(Object other) { return binary(Op.CMPNE, "ne", other); }

    private Tensor binaryFrom(Op op, String name, Tensor other) { return binary(op, name, other); }

    public Tensor logicalNot() { return cast(DType.BOOL).binary(Op.XOR, "logicalNot", true); }

    public Tensor logicalAnd(Object other) { return cast(DType.BOOL).binary(Op.AND, "logicalAnd", operand(this, other, "logicalAnd").cast(DType.BOOL)); }

    public Tensor logicalOr(Object other) { return cast(DType.BOOL).binary(Op.OR, "logicalOr", operand(this, other, "logicalOr").cast(DType.BOOL)); }

    public Tensor logicalXor(Object other) { return cast(DType.BOOL).binary(Op.XOR, "logicalXor", operand(this, other, "logicalXor").cast(DType.BOOL)); }

    /** {@code cond ? a : b}, broadcasting all three; {@code cond} is converted to bool. */
    public static Tensor where(Tensor cond, Object a, Object b) {
        Tensor ta = a instanceof Tensor t ? t : b instanceof Tensor tb ? tb.scalarLike(a, "where")
                : cond.scalarLike(a, "where").cast(a instanceof Double || a instanceof Float ? DType.F32 : a instanceof Boolean ? DType.BOOL : DType.I32);
        Tensor tbb = b instanceof Tensor t ? t : ta.scalarLike(b, "where");
        DType dt = DType.promote(ta.dtype(), tbb.dtype());
        Shape s = broadcastShape("where", broadcastShape("where", cond.shape(), ta.shape()), tbb.shape());
        Tensor c = cond.cast(DType.BOOL).broadcastTo(s, "where");
        Tensor x = ta.to(cond.device).cast(dt).broadcastTo(s, "where"), y = tbb.to(cond.device).cast(dt).broadcastTo(s, "where");
        return cond.make(UOp.of(Op.WHERE, dt, null, c.node(), x.node(), y.node()));
    }

    /** {@code where(mask, value, this)}. */
    public Tensor maskedFill(Tensor mask, Number value) { return where(mask, scalarLike(value, "maskedFill").cast(dtype()), this); }

    // =====================================================================================================
    // bitwise (integer and bool tensors)

    public Tensor bitwiseAnd(Object other) { return requireIntOrBool("bitwiseAnd").binaryInt(Op.AND, "bitwiseAnd", other); }

    public Tensor bitwiseOr(Object other) { return requireIntOrBool("bitwiseOr").binaryInt(Op.OR, "bitwiseOr", other); }

    public Tensor bitwiseXor(Object other) { return requireIntOrBool("bitwiseXor").binaryInt(Op.XOR, "bitwiseXor", other); }

    public Tensor bitwiseNot() { return requireIntOrBool("bitwiseNot").binary(Op.XOR, "bitwiseNot", dtype().isBool() ? (Object) true : (Object) (-1L)); }

    /** Left shift; shifting by the bit width or more gives 0. */
    public Tensor shl(Object bits) { return requireIntOrBool("shl").binaryInt(Op.SHL, "shl", bits); }

    /** Right shift, arithmetic for signed and logical for unsigned dtypes. */
    public Tensor shr(Object bits) { return requireIntOrBool("shr").binaryInt(Op.SHR, "shr", bits); }

    private Tensor binaryInt(Op op, String name, Object other) {
        Tensor o = operand(this, other, name);
        o.requireIntOrBool(name);
        return binary(op, name, o);
    }

    // =====================================================================================================
    // activations

    public Tensor relu() { return maximum(0); }

    public Tensor relu6() { return relu().minimum(6); }

    public Tensor leakyRelu(double slope) { return where(gt(0), this, mul(slope)); }

    /** {@code x > 0 ? x : weight * x}; {@code weight} broadcasts along axis 1 (channels) if 1-D. */
    public Tensor prelu(Tensor weight) {
        Tensor w = weight;
        if (w.ndim() == 1 && ndim() >= 2 && w.numel() > 1) {
            int[] s = new int[ndim()];
            Arrays.fill(s, 1);
            s[1] = (int) w.numel();
            w = w.reshape(s);
        }
        return where(gt(0), this, mul(w));
    }

    public Tensor elu(double alpha) {
        Tensor x = toFloat();
        return where(x.gt(0), x, x.expm1().mul(alpha));
    }

    public Tensor selu() {
        double alpha = 1.6732632423543772848170429916717, scale = 1.0507009873554804934193349852946;
        return elu(alpha).mul(scale);
    }

    public Tensor celu(double alpha) {
        Tensor x = toFloat();
        return x.relu().add(x.div(alpha).expm1().mul(alpha).minimum(0));
    }

    /** GELU with the exact erf form. */
    public Tensor gelu() {
        Tensor x = toFloat();
        return x.mul(0.5).mul(x.mul(1 / Math.sqrt(2)).erf().add(1.0));
    }

    /** GELU with the tanh approximation. */
    public Tensor geluTanh() {
        Tensor x = toFloat();
        Tensor inner = x.add(x.mul(x).mul(x).mul(0.044715)).mul(Math.sqrt(2 / Math.PI));
        return x.mul(0.5).mul(inner.tanh().add(1.0));
    }

    public Tensor sigmoid() { return toFloat().neg().exp().add(1.0).reciprocal(); }

    public Tensor logSigmoid() { return neg().softplus(1, 20).neg(); }

    public Tensor silu() { return mul(sigmoid()); }

    public Tensor mish() { return mul(softplus(1, 20).tanh()); }

    /** {@code log(1 + exp(beta x)) / beta}, linear above {@code threshold} (as PyTorch). */
    public Tensor softplus(double beta, double threshold) {
        Tensor x = toFloat(), bx = x.mul(beta);
        // log1p(exp(-|bx|)) + max(bx, 0) does not overflow
        Tensor sp = bx.abs().neg().exp().log1p().add(bx.relu()).div(beta);
        return where(bx.gt(threshold), x, sp);
    }

    public Tensor softplus() { return softplus(1, 20); }

    public Tensor softsign() { return toFloat().div(abs().add(1.0)); }

    /** {@code clamp(x / 6 + 1/2, 0, 1)} (PyTorch's definition). */
    public Tensor hardsigmoid() { return toFloat().div(6.0).add(0.5).clamp(0.0, 1.0); }

    public Tensor hardswish() { return mul(hardsigmoid()); }

    public Tensor hardtanh(double min, double max) { return clamp(min, max); }

    /** Softmax along {@code axis}. */
    public Tensor softmax(int axis) {
        Tensor x = toFloat();
        Tensor e = x.sub(x.max(new int[] {axis}, true)).exp();
        return e.div(e.sum(new int[] {axis}, true));
    }

    public Tensor logSoftmax(int axis) {
        Tensor x = toFloat();
        Tensor s = x.sub(x.max(new int[] {axis}, true));
        return s.sub(s.exp().sum(new int[] {axis}, true).log());
    }

    // =====================================================================================================
    // reductions

    private Tensor reduce(ReduceArg.Kind kind, String op, int[] axes, boolean keepdim) {
        int[] ax = axes(axes, op);
        DType dt = dtype();
        DType acc = (kind == ReduceArg.Kind.SUM || kind == ReduceArg.Kind.PROD) ? dt.accumulator() : dt;
        Tensor x = cast(acc);
        Tensor r = make(UOp.of(Op.REDUCE, acc, new ReduceArg(kind, Ints.of(ax)), x.node()));
        if (dt == DType.F16 || dt == DType.BF16) r = r.cast(dt); // half precision accumulates in f32
        return keepdim ? r : r.dropAxes(ax);
    }

    private Tensor dropAxes(int[] ax) {
        int[] d = dims();
        int[] out = new int[d.length - ax.length];
        for (int i = 0, j = 0; i < d.length; i++) if (Arrays.binarySearch(ax, i) < 0) out[j++] = d[i];
        return reshape(out);
    }

    /** Sum over all axes. Integers sum in i64 (u64 if unsigned), half floats accumulate in f32. */
    public Tensor sum() { return sum(new int[0], false); }

    public Tensor sum(int... axes) { return sum(axes, false); }

    public Tensor sum(int[] axes, boolean keepdim) { return reduce(ReduceArg.Kind.SUM, "sum", axes, keepdim); }

    public Tensor prod(int... axes) { return prod(axes, false); }

    public Tensor prod(int[] axes, boolean keepdim) { return reduce(ReduceArg.Kind.PROD, "prod", axes, keepdim); }

    public Tensor max(int... axes) { return max(axes, false); }

    public Tensor max(int[] axes, boolean keepdim) { return reduce(ReduceArg.Kind.MAX, "max", axes, keepdim); }

    public Tensor min(int... axes) { return min(axes, false); }

    public Tensor min(int[] axes, boolean keepdim) { return reduce(ReduceArg.Kind.MIN, "min", axes, keepdim); }

    /** Mean over axes (all if none); integer inputs give f32. */
    public Tensor mean(int... axes) { return mean(axes, false); }

    public Tensor mean(int[] axes, boolean keepdim) {
        Tensor x = toFloat();
        Object count = countOver(axes, "mean", x.dtype(), 0); // checks the axes first, in the caller's terms
        return x.sum(axes, keepdim).div(count);
    }

    /**
     * The number of elements over {@code axes} minus {@code correction} (at least 0): a Java number, or a
     * 0-d tensor of {@code dtype} when an axis is symbolic (its size is known only when the plan runs).
     */
    private Object countOver(int[] axes, String op, DType dtype, double correction) {
        long n = 1;
        Tensor symbolic = null;
        for (int a : axes(axes, op)) {
            Variable v = shape().variable(a);
            if (v == null) n *= dim(a);
            else symbolic = symbolic == null ? variable(v) : symbolic.mul(variable(v));
        }
        if (symbolic == null) return Math.max(0, n - correction);
        return symbolic.cast(dtype).mul((double) n).sub(correction).maximum(0.0).to(device);
    }

    /** Variance with Bessel's correction (as {@code torch.var}). */
    public Tensor var(int... axes) { return var(axes, false, 1); }

    /** Variance dividing by {@code N - correction}. */
    public Tensor var(int[] axes, boolean keepdim, double correction) {
        Tensor x = toFloat();
        Object count = countOver(axes, "var", x.dtype(), correction);
        Tensor d = x.sub(x.mean(axes, true));
        return d.square().sum(axes, keepdim).div(count);
    }

    public Tensor std(int... axes) { return var(axes).sqrt(); }

    public Tensor std(int[] axes, boolean keepdim, double correction) { return var(axes, keepdim, correction).sqrt(); }

    /** True where any element along the axes is non-zero. */
    public Tensor any(int... axes) { return any(axes, false); }

    public Tensor any(int[] axes, boolean keepdim) { return cast(DType.BOOL).reduce(ReduceArg.Kind.MAX, "any", axes, keepdim); }

    public Tensor all(int... axes) { return all(axes, false); }

    public Tensor all(int[] axes, boolean keepdim) { return cast(DType.BOOL).reduce(ReduceArg.Kind.MIN, "all", axes, keepdim); }

    /** {@code log(sum(exp(x)))}, stable for large values. */
    public Tensor logsumexp(int... axes) { return logsumexp(axes, false); }

    public Tensor logsumexp(int[] axes, boolean keepdim) {
        Tensor x = toFloat();
        Tensor m = x.max(axes, true);
        m = where(m.isinf(), m.zerosLike(), m);
        Tensor r = x.sub(m).exp().sum(axes, true).log().add(m);
        return keepdim ? r : r.dropAxes(axes(axes, "logsumexp"));
    }

    /** Index of the first maximum along {@code axis} (NaN counts as the maximum), as i64. */
    public Tensor argmax(int axis, boolean keepdim) { return argExtreme(axis, keepdim, true); }

    public Tensor argmax(int axis) { return argmax(axis, false); }

    /** Index of the first maximum of the flattened tensor. */
    public Tensor argmax() { return flatten().argmax(0, false); }

    public Tensor argmin(int axis, boolean keepdim) { return argExtreme(axis, keepdim, false); }

    public Tensor argmin(int axis) { return argmin(axis, false); }

    public Tensor argmin() { return flatten().argmin(0, false); }

    private Tensor argExtreme(int axis, boolean keepdim, boolean max) {
        int a = axis(axis, max ? "argmax" : "argmin");
        int n = dim(a);
        if (n == 0) throw new IllegalArgumentException((max ? "argmax" : "argmin") + ": axis " + axis + " of shape " + shape() + " is empty");
        Tensor m = max ? max(new int[] {a}, true) : min(new int[] {a}, true);
        Tensor hit = eq(m);
        if (dtype().isFloat()) hit = hit.logicalOr(isnan());
        int[] s = new int[ndim()];
        Arrays.fill(s, 1);
        s[a] = n;
        // the first hit has the largest (n - index)
        Tensor rev = arange(n, 0, -1).cast(DType.I64).reshape(s);
        Tensor idx = where(hit, rev, rev.zerosLike()).max(new int[] {a}, keepdim).rsub((long) n);
        return idx.cast(DType.I64);
    }

    /** Running sum along {@code axis}. */
    public Tensor cumsum(int axis) { return cumulative(axis, true); }

    /** Running product along {@code axis}. */
    public Tensor cumprod(int axis) { return cumulative(axis, false); }

    private Tensor cumulative(int axis, boolean sum) {
        int a = axis(axis, sum ? "cumsum" : "cumprod");
        int n = dim(a);
        Tensor x = transpose(a, -1).unsqueeze(-2); // (..., 1, n): element j
        Tensor rows = arange(n).reshape(n, 1), cols = arange(n).reshape(1, n);
        Tensor mask = cols.le(rows); // (n, n): output i takes j <= i
        Tensor xe = x.expand(broadcastShape("cumsum", x.shape(), mask.shape()).toArray());
        Tensor picked = where(mask, xe, sum ? xe.zerosLike() : xe.onesLike());
        Tensor r = sum ? picked.sum(new int[] {-1}, false) : picked.prod(new int[] {-1}, false);
        return r.transpose(a, -1);
    }

    // =====================================================================================================
    // movement

    /** The same elements in C order with a new shape; one dimension may be -1 (inferred). */
    public Tensor reshape(int... shape) {
        int[] s = shape.clone();
        int infer = -1;
        long known = 1;
        for (int i = 0; i < s.length; i++) {
            if (s[i] == -1) {
                if (infer >= 0) throw new IllegalArgumentException("reshape: more than one -1 in " + Arrays.toString(shape));
                infer = i;
            } else if (s[i] < 0) {
                throw new IllegalArgumentException("reshape: negative dimension " + s[i] + " in " + Arrays.toString(shape));
            } else known *= s[i];
        }
        if (infer >= 0) {
            if (known == 0 || numel() % known != 0) {
                throw new IllegalArgumentException("reshape: cannot infer -1 in " + Arrays.toString(shape) + " for shape " + shape() + " (" + numel() + " elements)");
            }
            s[infer] = (int) (numel() / known);
        }
        Shape target = Shape.of(s);
        if (target.numel() != numel()) {
            throw new IllegalArgumentException("reshape: cannot reshape " + shape() + " (" + numel() + " elements) to " + target
                    + " (" + target.numel() + " elements)");
        }
        return reshapeTo(shape().reshaped(s));
    }

    /**
     * This tensor with {@code axis} made symbolic: its size is {@code size}'s value when a plan runs (at
     * most {@code size.max()}, which must equal the axis's size). The buffer keeps its layout; kernels
     * compute only the rows below the size, and never read the rows past it. Use it for inputs padded
     * to a maximum (a sequence of up to N tokens) and for tables laid out for the maximum.
     */
    public Tensor withSymbolicDim(int axis, Variable size) {
        int a = axis(axis, "withSymbolicDim");
        Variable had = shape().variable(a);
        if (had != null && !had.equals(size)) {
            throw new IllegalArgumentException("withSymbolicDim: axis " + axis + " of " + shape() + " is already symbolic ("
                    + had.name() + ")");
        }
        return reshapeTo(shape().withVariable(a, size));
    }

    /** Axes reordered: output axis i is input axis {@code order[i]}. */
    public Tensor permute(int... order) {
        if (order.length != ndim()) {
            throw new IllegalArgumentException("permute: order " + Arrays.toString(order) + " has " + order.length + " axes, shape " + shape() + " has " + ndim());
        }
        int[] p = new int[order.length];
        boolean[] seen = new boolean[order.length];
        boolean identity = true;
        for (int i = 0; i < order.length; i++) {
            p[i] = axis(order[i], "permute");
            if (seen[p[i]]) throw new IllegalArgumentException("permute: axis " + order[i] + " repeated in " + Arrays.toString(order));
            seen[p[i]] = true;
            identity &= p[i] == i;
        }
        return identity ? this : make(UOp.of(Op.PERMUTE, dtype(), Ints.of(p), node()));
    }

    /** Two axes swapped. */
    public Tensor transpose(int a, int b) {
        int x = axis(a, "transpose"), y = axis(b, "transpose");
        int[] p = new int[ndim()];
        for (int i = 0; i < p.length; i++) p[i] = i;
        p[x] = y;
        p[y] = x;
        return permute(p);
    }

    /** The last two axes swapped (a matrix transpose). */
    public Tensor mT() {
        if (ndim() < 2) throw new IllegalArgumentException("mT: needs at least 2 axes, shape is " + shape());
        return transpose(-2, -1);
    }

    /** Size-1 axes repeated to {@code shape} (-1 keeps a size); new leading axes may be added. */
    public Tensor expand(int... shape) {
        int[] s = shape.clone();
        int off = s.length - ndim();
        if (off < 0) throw new IllegalArgumentException("expand: shape " + Arrays.toString(shape) + " has fewer axes than " + shape());
        for (int i = 0; i < s.length; i++) {
            if (s[i] == -1) {
                if (i < off) throw new IllegalArgumentException("expand: -1 not allowed for new axis " + i + " in " + Arrays.toString(shape));
                s[i] = dim(i - off);
            }
            if (i >= off && dim(i - off) != 1 && dim(i - off) != s[i]) {
                throw new IllegalArgumentException("expand: axis " + (i - off) + " of " + shape() + " has size " + dim(i - off)
                        + ", cannot expand to " + s[i]);
            }
        }
        return broadcastTo(s);
    }

    /** Size-1 axes removed: the given ones (each must have size 1), or all if none are given. */
    public Tensor squeeze(int... axes) {
        int[] d = dims();
        List<Integer> keep = new ArrayList<>();
        if (axes.length == 0) {
            for (int x : d) if (x != 1) keep.add(x);
        } else {
            int[] ax = axes(axes, "squeeze");
            for (int a : ax) {
                if (d[a] != 1) throw new IllegalArgumentException("squeeze: axis " + a + " of shape " + shape() + " has size " + d[a] + ", not 1");
            }
            for (int i = 0; i < d.length; i++) if (Arrays.binarySearch(ax, i) < 0) keep.add(d[i]);
        }
        return reshape(keep.stream().mapToInt(Integer::intValue).toArray());
    }

    /** A size-1 axis inserted at {@code axis} (in {@code [-rank-1, rank]}). */
    public Tensor unsqueeze(int axis) {
        int a = normAxis(axis, ndim() + 1, "unsqueeze", shape());
        int[] d = dims();
        int[] out = new int[d.length + 1];
        for (int i = 0, j = 0; i < out.length; i++) out[i] = i == a ? 1 : d[j++];
        return reshape(out);
    }

    /** All axes merged into one. */
    public Tensor flatten() { return reshape((int) numel()); }

    /** Axes {@code start..end} (inclusive) merged into one. */
    public Tensor flatten(int start, int end) {
        if (ndim() == 0) return reshape(1);
        int s = axis(start, "flatten"), e = axis(end, "flatten");
        if (s > e) throw new IllegalArgumentException("flatten: start axis " + start + " is after end axis " + end + " for shape " + shape());
        int[] d = dims();
        int[] out = new int[d.length - (e - s)];
        int m = 1;
        for (int i = s; i <= e; i++) m *= d[i];
        for (int i = 0, j = 0; i < d.length; i++) {
            if (i < s || i > e) out[j++] = d[i];
            else if (i == s) out[j++] = m;
        }
        return reshape(out);
    }

    /** The order of elements reversed along the given axes. */
    public Tensor flip(int... axes) {
        if (axes.length == 0) return this;
        return make(UOp.of(Op.FLIP, dtype(), Ints.of(axes(axes, "flip")), node()));
    }

    /**
     * Elements {@code start, start+step, ...} before {@code end} along {@code axis}, Python slice
     * semantics: negative indices count from the end, bounds are clipped, a negative step walks
     * backwards (then {@code start} defaults to the last element when given as {@code Integer.MAX_VALUE}).
     */
    public Tensor slice(int axis, int start, int end, int step) {
        int a = axis(axis, "slice");
        int n = dim(a);
        if (step == 0) throw new IllegalArgumentException("slice: step must not be 0 (axis " + axis + " of shape " + shape() + ")");
        if (step > 0) {
            int s = clampIndex(start, n, 0, n), e = clampIndex(end, n, 0, n);
            if (e < s) e = s;
            Tensor x = shrinkAxis(a, s, e);
            return step == 1 ? x : x.stride(a, step);
        }
        // negative step: the same elements as a positive-step slice over the flipped axis
        int s = clampIndex(start, n, -1, n - 1), e = clampIndex(end, n, -1, n - 1);
        int fs = n - 1 - s, fe = n - 1 - e; // positions in the flipped axis
        if (fe < fs) fe = fs;
        return flip(a).shrinkAxis(a, fs, Math.min(fe, n)).stride(a, -step);
    }

    private static int clampIndex(int i, int n, int lo, int hi) {
        long v = i < 0 && i != Integer.MIN_VALUE ? (long) i + n : i;
        if (i == Integer.MIN_VALUE) v = lo;
        return (int) Math.max(lo, Math.min(hi, v));
    }

    /** Elements {@code [start, end)} along an axis. */
    Tensor shrinkAxis(int a, int start, int end) {
        if (start == 0 && end == dim(a)) return this;
        int[] b = new int[2 * ndim()];
        for (int i = 0; i < ndim(); i++) {
            b[2 * i] = i == a ? start : 0;
            b[2 * i + 1] = i == a ? end : dim(i);
        }
        return make(UOp.of(Op.SHRINK, dtype(), Ints.of(b), node()));
    }

    /** Every {@code step}-th element along an axis, from a pad-reshape-shrink (no gather). */
    private Tensor stride(int a, int step) {
        int n = dim(a);
        int out = (n + step - 1) / step;
        Tensor x = padAxis(a, 0, out * step - n);
        int[] d = x.dims();
        int[] split = new int[d.length + 1];
        for (int i = 0, j = 0; i < d.length; i++) {
            if (i == a) {
                split[j++] = out;
                split[j++] = step;
            } else split[j++] = d[i];
        }
        return x.reshape(split).shrinkAxis(a + 1, 0, 1).squeeze(a + 1);
    }

    private Tensor padAxis(int a, int before, int after) {
        if (before == 0 && after == 0) return this;
        int[] b = new int[2 * ndim()];
        b[2 * a] = before;
        b[2 * a + 1] = after;
        return make(UOp.of(Op.PAD, dtype(), Ints.of(b), node()));
    }

    /** Padding modes of {@link #pad(int[][], PadMode, double)}. */
    public enum PadMode { CONSTANT, REFLECT, EDGE, CIRCULAR }

    /** Zero padding, {@code pads[i] = {before, after}} for each axis; negative amounts crop. */
    public Tensor pad(int[][] pads) { return pad(pads, PadMode.CONSTANT, 0); }

    /**
     * Padding with a mode: {@code CONSTANT} fills with {@code value}, {@code REFLECT} mirrors without
     * repeating the edge, {@code EDGE} repeats the edge, {@code CIRCULAR} wraps around. Negative amounts
     * crop (any mode).
     */
    public Tensor pad(int[][] pads, PadMode mode, double value) {
        if (pads.length != ndim()) {
            throw new IllegalArgumentException("pad: " + pads.length + " (before, after) pairs for shape " + shape() + " of rank " + ndim());
        }
        Tensor x = this;
        for (int a = 0; a < pads.length; a++) {
            if (pads[a].length != 2) throw new IllegalArgumentException("pad: axis " + a + " needs a (before, after) pair, got " + Arrays.toString(pads[a]));
            int before = pads[a][0], after = pads[a][1];
            // crop first, so modes see the cropped data
            x = x.shrinkAxis(a, Math.max(0, -before), x.dim(a) - Math.max(0, -after));
            before = Math.max(0, before);
            after = Math.max(0, after);
            if (before == 0 && after == 0) continue;
            int n = x.dim(a);
            x = switch (mode) {
                case CONSTANT -> {
                    Tensor padded = x.padAxis(a, before, after);
                    if (value == 0) yield padded;
                    Tensor inside = x.onesLike().cast(DType.BOOL).padAxis(a, before, after);
                    yield where(inside, padded, padded.fullLike(value));
                }
                case REFLECT -> {
                    if (before >= n || after >= n) {
                        throw new IllegalArgumentException("pad: reflect padding (" + before + ", " + after + ") needs less than the axis size " + n
                                + " (axis " + a + " of " + shape() + ")");
                    }
                    // the after-part ends just before index n - 2 - after, which is -1 (open) for after = n - 1
                    int afterEnd = n - 2 - after < 0 ? Integer.MIN_VALUE : n - 2 - after;
                    yield cat(a, x.slice(a, before, 0, -1), x, x.slice(a, n - 2, afterEnd, -1));
                }
                case EDGE -> {
                    if (n == 0) throw new IllegalArgumentException("pad: edge padding of empty axis " + a + " of " + shape());
                    Tensor first = x.shrinkAxis(a, 0, 1), last = x.shrinkAxis(a, n - 1, n);
                    yield cat(a, first.repeatAxis(a, before), x, last.repeatAxis(a, after));
                }
                case CIRCULAR -> {
                    if (before > n || after > n) {
                        throw new IllegalArgumentException("pad: circular padding (" + before + ", " + after + ") exceeds the axis size " + n
                                + " (axis " + a + " of " + shape() + ")");
                    }
                    yield cat(a, x.shrinkAxis(a, n - before, n), x, x.shrinkAxis(a, 0, after));
                }
            };
        }
        return x;
    }

    private Tensor repeatAxis(int a, int times) {
        int[] r = new int[ndim()];
        Arrays.fill(r, 1);
        r[a] = times;
        return repeat(r);
    }

    /** Tensors joined along an existing axis; other axes must match. */
    public static Tensor cat(int axis, Tensor... tensors) {
        if (tensors.length == 0) throw new IllegalArgumentException("cat: needs at least one tensor");
        Tensor first = tensors[0];
        int a = first.axis(axis, "cat");
        DType dt = first.dtype();
        int total = 0;
        for (Tensor t : tensors) {
            if (t.ndim() != first.ndim()) {
                throw new IllegalArgumentException("cat: shapes " + first.shape() + " and " + t.shape() + " have different ranks");
            }
            for (int i = 0; i < t.ndim(); i++) {
                if (i != a && t.dim(i) != first.dim(i)) {
                    throw new IllegalArgumentException("cat: shapes " + first.shape() + " and " + t.shape() + " differ at axis " + i + " (cat axis " + axis + ")");
                }
            }
            dt = DType.promote(dt, t.dtype());
            total += t.dim(a);
        }
        Tensor acc = null;
        int offset = 0;
        for (Tensor t : tensors) {
            Tensor p = t.to(first.device).cast(dt).padAxis(a, offset, total - offset - t.dim(a));
            offset += t.dim(a);
            acc = acc == null ? p : acc.add(p);
        }
        return acc;
    }

    /** Tensors of one shape joined along a new axis. */
    public static Tensor stack(int axis, Tensor... tensors) {
        if (tensors.length == 0) throw new IllegalArgumentException("stack: needs at least one tensor");
        Tensor[] u = new Tensor[tensors.length];
        for (int i = 0; i < tensors.length; i++) {
            if (!tensors[i].shape().equals(tensors[0].shape())) {
                throw new IllegalArgumentException("stack: shapes " + tensors[0].shape() + " and " + tensors[i].shape() + " differ");
            }
            u[i] = tensors[i].unsqueeze(axis);
        }
        return cat(axis, u);
    }

    /** Pieces of {@code size} along {@code axis} (the last may be smaller). */
    public List<Tensor> split(int size, int axis) {
        if (size <= 0) throw new IllegalArgumentException("split: size must be > 0, got " + size);
        int a = axis(axis, "split");
        List<Tensor> out = new ArrayList<>();
        for (int s = 0; s < dim(a) || (s == 0 && dim(a) == 0); s += size) {
            out.add(shrinkAxis(a, s, Math.min(dim(a), s + size)));
            if (dim(a) == 0) break;
        }
        return out;
    }

    /** Pieces of the given sizes along {@code axis}; the sizes must add up to the axis size. */
    public List<Tensor> split(int[] sizes, int axis) {
        int a = axis(axis, "split");
        int total = Arrays.stream(sizes).sum();
        if (total != dim(a) || Arrays.stream(sizes).anyMatch(s -> s < 0)) {
            throw new IllegalArgumentException("split: sizes " + Arrays.toString(sizes) + " do not add up to axis " + axis + " of " + shape());
        }
        List<Tensor> out = new ArrayList<>();
        int s = 0;
        for (int size : sizes) {
            out.add(shrinkAxis(a, s, s + size));
            s += size;
        }
        return out;
    }

    /** {@code chunks} pieces of equal size (the last may be smaller), as {@code torch.chunk}. */
    public List<Tensor> chunk(int chunks, int axis) {
        if (chunks <= 0) throw new IllegalArgumentException("chunk: chunks must be > 0, got " + chunks);
        int n = dim(axis);
        return split(Math.max(1, (n + chunks - 1) / chunks), axis);
    }

    /** The tensor tiled {@code repeats[i]} times along each axis ({@code torch.repeat}; extra leading repeats add axes). */
    public Tensor repeat(int... repeats) {
        if (repeats.length < ndim()) {
            throw new IllegalArgumentException("repeat: " + repeats.length + " repeats for shape " + shape() + " of rank " + ndim());
        }
        int off = repeats.length - ndim();
        int[] base = new int[repeats.length];
        for (int i = 0; i < repeats.length; i++) {
            if (repeats[i] < 0) throw new IllegalArgumentException("repeat: negative count " + repeats[i]);
            base[i] = i < off ? 1 : dim(i - off);
        }
        // (..., d, ...) -> (..., 1, d, ...) -> (..., r, d, ...) -> (..., r*d, ...)
        int[] inter = new int[2 * repeats.length], expanded = new int[2 * repeats.length], out = new int[repeats.length];
        for (int i = 0; i < repeats.length; i++) {
            inter[2 * i] = 1;
            inter[2 * i + 1] = base[i];
            expanded[2 * i] = repeats[i];
            expanded[2 * i + 1] = base[i];
            out[i] = repeats[i] * base[i];
        }
        return reshape(inter).expand(expanded).reshape(out);
    }

    /** NumPy's tile: like {@link #repeat} but fewer repeats than axes apply to the trailing axes. */
    public Tensor tile(int... reps) {
        if (reps.length >= ndim()) return repeat(reps);
        int[] r = new int[ndim()];
        Arrays.fill(r, 1);
        System.arraycopy(reps, 0, r, ndim() - reps.length, reps.length);
        return repeat(r);
    }

    /** Elements on and above the {@code k}-th diagonal of the last two axes; others zero. */
    public Tensor triu(int k) { return triangle(k, true); }

    /** Elements on and below the {@code k}-th diagonal of the last two axes; others zero. */
    public Tensor tril(int k) { return triangle(k, false); }

    private Tensor triangle(int k, boolean upper) {
        if (ndim() < 2) throw new IllegalArgumentException((upper ? "triu" : "tril") + ": needs at least 2 axes, shape is " + shape());
        int r = dim(-2), c = dim(-1);
        Tensor rows = arange(r).reshape(r, 1), cols = arange(c).reshape(1, c);
        Tensor keep = upper ? cols.sub(rows).ge(k) : cols.sub(rows).le(k);
        return where(keep, this, zerosLike());
    }

    // =====================================================================================================
    // linear algebra (LinearAlgebra.java)

    /** Matrix product with NumPy semantics: batch axes broadcast, 1-D operands act as vectors. */
    public Tensor matmul(Tensor other) { return LinearAlgebra.matmul(this, other.to(device)); }

    /** {@code this @ weight^T + bias}; {@code weight} is (out, in), {@code bias} may be null. */
    public Tensor linear(Tensor weight, Tensor bias) { return LinearAlgebra.linear(this, weight.to(device), bias == null ? null : bias.to(device)); }

    /** Einstein summation, e.g. {@code einsum("bij,bjk->bik", a, b)}. */
    public static Tensor einsum(String equation, Tensor... operands) { return LinearAlgebra.einsum(equation, operands); }

    // end of linear algebra section

    // =====================================================================================================
    // random numbers (RandomOps.java)
    //
    // The stream is defined by (seed, element index): element i (C order) is Threefry-2x32 of the
    // counter i under the key seed, computed in the graph, so the same seed and shape give the same
    // numbers on every device and in every run, and a smaller tensor is a prefix of a larger one.
    // Tensors drawn with the same seed share their random words; use distinct seeds for independent ones.

    /**
     * Uniform f32 values in [0, 1): {@code k * 2^-24} from the top 24 bits of each random word.
     * Same seed and shape give the same values on every device.
     *
     * @throws IllegalArgumentException for a negative dimension
     */
    public static Tensor rand(long seed, int... shape) { return RandomOps.rand(seed, DType.F32, shape); }

    /**
     * Uniform values in [0, 1) of a float dtype, on the grid {@code 2^-p} where {@code p} is the
     * dtype's significand precision (f16 11, bf16 8, f32 24, f64 53 bits), so no value rounds to 1.
     *
     * @throws IllegalArgumentException for a non-float dtype or a negative dimension
     */
    public static Tensor rand(long seed, DType dtype, int... shape) { return RandomOps.rand(seed, dtype, shape); }

    /**
     * Uniform f32 values in [low, high): {@code low + (high - low) * rand(seed, shape)}, with the
     * bounds rounded to f32 first.
     *
     * @throws IllegalArgumentException unless {@code low < high}, both finite
     */
    public static Tensor uniform(long seed, double low, double high, int... shape) { return RandomOps.uniform(seed, low, high, shape); }

    /**
     * Standard normal f32 values by Box-Muller from two independent uniform streams of the seed
     * (element i uses the i-th value of each).
     */
    public static Tensor randn(long seed, int... shape) { return RandomOps.randn(seed, shape); }

    /**
     * Normal f32 values with the given mean and standard deviation: {@code mean + std * randn(seed, shape)}.
     *
     * @throws IllegalArgumentException for a negative or non-finite {@code std} or a non-finite mean
     */
    public static Tensor normal(long seed, double mean, double std, int... shape) { return RandomOps.normal(seed, mean, std, shape); }

    /**
     * Uniform i32 integers in [low, high): {@code low + floor(u * (high - low))} where
     * {@code u = word / 2^64} is the full 64-bit random word, computed exactly in integer arithmetic.
     *
     * @throws IllegalArgumentException unless {@code low < high} and the range fits i32
     */
    public static Tensor randint(long seed, long low, long high, int... shape) { return RandomOps.randint(seed, low, high, DType.I32, shape); }

    /**
     * As {@link #randint(long, long, long, int...)} with an integer result dtype; {@code [low, high)}
     * must fit the dtype.
     */
    public static Tensor randint(long seed, long low, long high, DType dtype, int... shape) {
        return RandomOps.randint(seed, low, high, dtype, shape);
    }

    /**
     * True with probability {@code p} for each element of {@code p} ({@code u < p} with {@code u} from
     * {@link #rand(long, DType, int...)} in f32, or f64 for an f64 {@code p}); probabilities below 0 act as
     * 0 and above 1 as 1. The result has {@code p}'s shape and device.
     */
    public static Tensor bernoulli(long seed, Tensor p) { return RandomOps.bernoulli(seed, p); }

    /**
     * Booleans that are true with probability {@code p} ({@code u < p} with an f64 uniform {@code u}).
     *
     * @throws IllegalArgumentException unless {@code 0 <= p <= 1}
     */
    public static Tensor bernoulli(long seed, double p, int... shape) { return RandomOps.bernoulli(seed, p, shape); }

    // end of random section

    // =====================================================================================================
    // indexing (Indexing.java)
    //
    // Indices may have any integer dtype. They are lazy, so they are not range-checked: an index outside
    // the axis selects nothing (a gathered element reads as zero, -0.0 for floats; a scatter does not
    // write). Negative indices wrap only where a method says so.

    /**
     * Values picked along {@code axis} by {@code index}, as {@code torch.gather}: for axis 0,
     * {@code out[i][j] = this[index[i][j]][j]}. {@code index} has this tensor's rank and is no larger than
     * it in the other axes; the result has the index's shape and this tensor's dtype.
     */
    public Tensor gather(int axis, Tensor index) { return Indexing.gather(this, axis, index.to(device)); }

    /**
     * A copy of this tensor with elements of {@code src} written at {@code index} along {@code axis}, as
     * {@code torch.scatter}: for axis 0, {@code out[index[i][j]][j] = src[i][j]}. {@code src} is at least
     * as large as {@code index} in every axis (the excess is ignored) and is converted to this tensor's
     * dtype. When several index entries name the same element, the one last in C order of {@code index}
     * wins (as PyTorch's sequential CPU kernel).
     */
    public Tensor scatter(int axis, Tensor index, Tensor src) { return Indexing.scatter(this, axis, index.to(device), src.to(device)); }

    /** A copy of this tensor with {@code value} written at {@code index} along {@code axis} ({@code torch.scatter} with a scalar). */
    public Tensor scatter(int axis, Tensor index, Number value) { return Indexing.scatter(this, axis, index.to(device), value); }

    /**
     * This tensor plus the elements of {@code src} added at {@code index} along {@code axis}, as
     * {@code torch.scatter_add}; duplicate indices accumulate.
     */
    public Tensor scatterAdd(int axis, Tensor index, Tensor src) { return Indexing.scatterAdd(this, axis, index.to(device), src.to(device)); }

    /**
     * The slices along {@code axis} named by the 1-D {@code index}, in its order ({@code torch.index_select});
     * unlike PyTorch, negative indices count from the end of the axis.
     */
    public Tensor indexSelect(int axis, Tensor index) { return Indexing.indexSelect(this, axis, index.to(device)); }

    /**
     * NumPy's {@code take_along_axis}: like {@link #gather}, but {@code indices} and this tensor broadcast
     * in the axes other than {@code axis}, and negative indices count from the end of the axis (as NumPy).
     */
    public Tensor takeAlongAxis(Tensor indices, int axis) { return Indexing.takeAlongAxis(this, indices.to(device), axis); }

    /**
     * One-hot encoding of this integer tensor: a new last axis of {@code numClasses} (which must be given,
     * > 0), holding 1 at the index and 0 elsewhere, as i64 ({@code torch.nn.functional.one_hot}).
     */
    public Tensor oneHot(int numClasses) { return Indexing.oneHot(this, numClasses); }

    /** The result of {@link #sort} and {@link #topk}: the values and their i64 positions along the axis. */
    public record Sorted(Tensor values, Tensor indices) {}

    /**
     * A stable sort along {@code axis}: equal values keep their order, NaN sorts as the largest value
     * (last ascending, first descending), as {@code torch.sort(stable=True)}.
     */
    public Sorted sort(int axis, boolean descending) { return Indexing.sort("sort", this, axis, descending, dim(axis(axis, "sort"))); }

    /** The i64 positions that sort this tensor along {@code axis} (the indices of {@link #sort}). */
    public Tensor argsort(int axis, boolean descending) { return Indexing.sort("argsort", this, axis, descending, dim(axis(axis, "argsort"))).indices(); }

    /**
     * The {@code k} largest (or smallest) values along {@code axis} and their positions, in sorted order,
     * as {@code torch.topk}; NaN counts as the largest value, and equal values keep their order.
     */
    public Sorted topk(int k, int axis, boolean largest) { return Indexing.topk(this, k, axis, largest); }

    // end of indexing section

    // =====================================================================================================
    // neural network: convolution and pooling (Convolution.java, Pooling.java)
    //
    // Layout (N, C, spatial...) as PyTorch. Array parameters (stride, padding, dilation, ...) hold one value per
    // spatial axis or a single value for all; null gives the default.

    /**
     * N-dimensional convolution (cross-correlation, as {@code torch.nn.functional.conv*d}); the number of
     * spatial axes is the weight's rank minus 2.
     *
     * @param weight (Cout, Cin/groups, k...)
     * @param bias (Cout), or null
     * @param stride default 1
     * @param padding zeros on both sides of each spatial axis, default 0
     * @param dilation spacing of the kernel taps, default 1
     * @param groups input and output channels split into this many independent groups ({@code groups == Cin}: depthwise)
     */
    public Tensor conv(Tensor weight, Tensor bias, int[] stride, int[] padding, int[] dilation, int groups) {
        return Convolution.conv("conv", Convolution.spatialOf("conv", weight), this, weight.to(device), bias == null ? null : bias.to(device),
                stride, padding, dilation, groups);
    }

    /** 1-D convolution of (N, Cin, L) with weight (Cout, Cin/groups, kL); see {@link #conv}. */
    public Tensor conv1d(Tensor weight, Tensor bias, int[] stride, int[] padding, int[] dilation, int groups) {
        return Convolution.conv("conv1d", 1, this, weight.to(device), bias == null ? null : bias.to(device), stride, padding, dilation, groups);
    }

    /** 1-D convolution with stride 1, no padding, dilation 1, one group. */
    public Tensor conv1d(Tensor weight, Tensor bias) { return conv1d(weight, bias, null, null, null, 1); }

    /** 2-D convolution of (N, Cin, H, W) with weight (Cout, Cin/groups, kH, kW); see {@link #conv}. */
    public Tensor conv2d(Tensor weight, Tensor bias, int[] stride, int[] padding, int[] dilation, int groups) {
        return Convolution.conv("conv2d", 2, this, weight.to(device), bias == null ? null : bias.to(device), stride, padding, dilation, groups);
    }

    /** 2-D convolution with stride 1, no padding, dilation 1, one group. */
    public Tensor conv2d(Tensor weight, Tensor bias) { return conv2d(weight, bias, null, null, null, 1); }

    /** 3-D convolution of (N, Cin, D, H, W) with weight (Cout, Cin/groups, kD, kH, kW); see {@link #conv}. */
    public Tensor conv3d(Tensor weight, Tensor bias, int[] stride, int[] padding, int[] dilation, int groups) {
        return Convolution.conv("conv3d", 3, this, weight.to(device), bias == null ? null : bias.to(device), stride, padding, dilation, groups);
    }

    /** 3-D convolution with stride 1, no padding, dilation 1, one group. */
    public Tensor conv3d(Tensor weight, Tensor bias) { return conv3d(weight, bias, null, null, null, 1); }

    /**
     * N-dimensional transposed convolution (the gradient of {@link #conv} with respect to its input, as
     * {@code torch.nn.functional.conv_transpose*d}); output size per axis
     * {@code (n - 1)*stride - 2*padding + dilation*(k - 1) + outputPadding + 1}.
     *
     * @param weight (Cin, Cout/groups, k...)
     * @param bias (Cout), or null
     * @param stride default 1
     * @param padding removed from both ends of the output, default 0
     * @param outputPadding added to the end of the output, smaller than stride or dilation; default 0
     * @param dilation default 1
     * @param groups default 1
     */
    public Tensor convTranspose(Tensor weight, Tensor bias, int[] stride, int[] padding, int[] outputPadding, int[] dilation, int groups) {
        return Convolution.convTranspose("convTranspose", Convolution.spatialOf("convTranspose", weight), this, weight.to(device),
                bias == null ? null : bias.to(device), stride, padding, outputPadding, dilation, groups);
    }

    /** 1-D transposed convolution of (N, Cin, L) with weight (Cin, Cout/groups, kL); see {@link #convTranspose}. */
    public Tensor convTranspose1d(Tensor weight, Tensor bias, int[] stride, int[] padding, int[] outputPadding, int[] dilation, int groups) {
        return Convolution.convTranspose("convTranspose1d", 1, this, weight.to(device), bias == null ? null : bias.to(device), stride, padding,
                outputPadding, dilation, groups);
    }

    /** 1-D transposed convolution with stride 1, no padding, dilation 1, one group. */
    public Tensor convTranspose1d(Tensor weight, Tensor bias) { return convTranspose1d(weight, bias, null, null, null, null, 1); }

    /** 2-D transposed convolution of (N, Cin, H, W) with weight (Cin, Cout/groups, kH, kW); see {@link #convTranspose}. */
    public Tensor convTranspose2d(Tensor weight, Tensor bias, int[] stride, int[] padding, int[] outputPadding, int[] dilation, int groups) {
        return Convolution.convTranspose("convTranspose2d", 2, this, weight.to(device), bias == null ? null : bias.to(device), stride, padding,
                outputPadding, dilation, groups);
    }

    /** 2-D transposed convolution with stride 1, no padding, dilation 1, one group. */
    public Tensor convTranspose2d(Tensor weight, Tensor bias) { return convTranspose2d(weight, bias, null, null, null, null, 1); }

    /** 3-D transposed convolution of (N, Cin, D, H, W) with weight (Cin, Cout/groups, kD, kH, kW); see {@link #convTranspose}. */
    public Tensor convTranspose3d(Tensor weight, Tensor bias, int[] stride, int[] padding, int[] outputPadding, int[] dilation, int groups) {
        return Convolution.convTranspose("convTranspose3d", 3, this, weight.to(device), bias == null ? null : bias.to(device), stride, padding,
                outputPadding, dilation, groups);
    }

    /** 3-D transposed convolution with stride 1, no padding, dilation 1, one group. */
    public Tensor convTranspose3d(Tensor weight, Tensor bias) { return convTranspose3d(weight, bias, null, null, null, null, 1); }

    /**
     * 1-D max pooling of (N, C, L) or (C, L), as {@code torch.nn.functional.max_pool1d}.
     *
     * @param kernel window size
     * @param stride default (null) the kernel size
     * @param padding at most half the kernel, counts as the lowest value; default 0
     * @param dilation spacing of the window taps, default 1
     * @param ceilMode round the output size up: the last partial window is included unless it would start in the right padding
     */
    public Tensor maxPool1d(int[] kernel, int[] stride, int[] padding, int[] dilation, boolean ceilMode) {
        return Pooling.maxPool("maxPool1d", 1, this, kernel, stride, padding, dilation, ceilMode);
    }

    /** 1-D max pooling with stride = kernel, no padding. */
    public Tensor maxPool1d(int... kernel) { return maxPool1d(kernel, null, null, null, false); }

    /** 2-D max pooling of (N, C, H, W) or (C, H, W); parameters as {@link #maxPool1d(int[], int[], int[], int[], boolean)}. */
    public Tensor maxPool2d(int[] kernel, int[] stride, int[] padding, int[] dilation, boolean ceilMode) {
        return Pooling.maxPool("maxPool2d", 2, this, kernel, stride, padding, dilation, ceilMode);
    }

    /** 2-D max pooling with stride = kernel, no padding. */
    public Tensor maxPool2d(int... kernel) { return maxPool2d(kernel, null, null, null, false); }

    /** 3-D max pooling of (N, C, D, H, W) or (C, D, H, W); parameters as {@link #maxPool1d(int[], int[], int[], int[], boolean)}. */
    public Tensor maxPool3d(int[] kernel, int[] stride, int[] padding, int[] dilation, boolean ceilMode) {
        return Pooling.maxPool("maxPool3d", 3, this, kernel, stride, padding, dilation, ceilMode);
    }

    /** 3-D max pooling with stride = kernel, no padding. */
    public Tensor maxPool3d(int... kernel) { return maxPool3d(kernel, null, null, null, false); }

    /**
     * 1-D average pooling of (N, C, L) or (C, L), as {@code torch.nn.functional.avg_pool1d}; integer inputs give f32.
     *
     * @param kernel window size
     * @param stride default (null) the kernel size
     * @param padding zeros, at most half the kernel; default 0
     * @param ceilMode round the output size up (see {@link #maxPool1d(int[], int[], int[], int[], boolean)}); the extra padding never counts
     * @param countIncludePad divide by the window's elements inside the padded input (true) or inside the input (false)
     */
    public Tensor avgPool1d(int[] kernel, int[] stride, int[] padding, boolean ceilMode, boolean countIncludePad) {
        return Pooling.avgPool("avgPool1d", 1, this, kernel, stride, padding, ceilMode, countIncludePad);
    }

    /** 1-D average pooling with stride = kernel, no padding. */
    public Tensor avgPool1d(int... kernel) { return avgPool1d(kernel, null, null, false, true); }

    /** 2-D average pooling of (N, C, H, W) or (C, H, W); parameters as {@link #avgPool1d(int[], int[], int[], boolean, boolean)}. */
    public Tensor avgPool2d(int[] kernel, int[] stride, int[] padding, boolean ceilMode, boolean countIncludePad) {
        return Pooling.avgPool("avgPool2d", 2, this, kernel, stride, padding, ceilMode, countIncludePad);
    }

    /** 2-D average pooling with stride = kernel, no padding. */
    public Tensor avgPool2d(int... kernel) { return avgPool2d(kernel, null, null, false, true); }

    /** 3-D average pooling of (N, C, D, H, W) or (C, D, H, W); parameters as {@link #avgPool1d(int[], int[], int[], boolean, boolean)}. */
    public Tensor avgPool3d(int[] kernel, int[] stride, int[] padding, boolean ceilMode, boolean countIncludePad) {
        return Pooling.avgPool("avgPool3d", 3, this, kernel, stride, padding, ceilMode, countIncludePad);
    }

    /** 3-D average pooling with stride = kernel, no padding. */
    public Tensor avgPool3d(int... kernel) { return avgPool3d(kernel, null, null, false, true); }

    /**
     * 1-D power-average pooling {@code (sum x^p)^(1/p)} over each window, as {@code torch.nn.functional.lp_pool1d}
     * (with ceil mode, as torch, a partial window's sum is scaled up to the full kernel size).
     *
     * @param p the power, positive
     * @param kernel window size
     * @param stride default (null) the kernel size
     * @param ceilMode round the output size up
     */
    public Tensor lpPool1d(double p, int[] kernel, int[] stride, boolean ceilMode) {
        return Pooling.lpPool("lpPool1d", 1, this, p, kernel, stride, ceilMode);
    }

    /** 2-D power-average pooling of (N, C, H, W) or (C, H, W); see {@link #lpPool1d}. */
    public Tensor lpPool2d(double p, int[] kernel, int[] stride, boolean ceilMode) {
        return Pooling.lpPool("lpPool2d", 2, this, p, kernel, stride, ceilMode);
    }

    /** Mean over all spatial axes of (N, C, spatial...), kept as size 1 (ONNX GlobalAveragePool); integer inputs give f32. */
    public Tensor globalAvgPool() { return Pooling.globalAvgPool(this); }

    /** Maximum over all spatial axes of (N, C, spatial...), kept as size 1 (ONNX GlobalMaxPool). */
    public Tensor globalMaxPool() { return Pooling.globalMaxPool(this); }

    // end of convolution and pooling section

    // =====================================================================================================
    // neural network: normalisation, embedding, attention, rotary, interpolation
    // (Normalization.java, Attention.java, Interpolation.java)

    /**
     * Batch normalisation with running statistics (inference form, {@code torch.nn.functional.batch_norm}
     * with {@code training=False}): {@code (x - runningMean) / sqrt(runningVar + eps) * weight + bias} with
     * channels on axis 1 of an (N, C, ...) input. The statistics and the affine parameters are 1-D of size
     * C; {@code weight} and {@code bias} may be null. Half-precision inputs are computed in f32.
     */
    public Tensor batchNorm(Tensor runningMean, Tensor runningVar, Tensor weight, Tensor bias, double eps) {
        return Normalization.batchNorm(this, runningMean, runningVar, weight, bias, eps);
    }

    /**
     * Batch normalisation with the batch's own statistics, as PyTorch in training mode (output only, no
     * running-statistics update): mean and biased variance over every axis but 1.
     */
    public Tensor batchNormTraining(Tensor weight, Tensor bias, double eps) {
        return Normalization.batchNormTraining(this, weight, bias, eps);
    }

    /**
     * Layer normalisation over the trailing axes given by {@code normalizedShape} (which must equal
     * them): mean and biased variance per leading index, then {@code * weight + bias}, both of shape
     * {@code normalizedShape} and nullable.
     */
    public Tensor layerNorm(int[] normalizedShape, Tensor weight, Tensor bias, double eps) {
        return Normalization.layerNorm(this, normalizedShape, weight, bias, eps);
    }

    /**
     * Group normalisation of an (N, C, ...) input: the C channels form {@code groups} consecutive groups,
     * each (sample, group) is normalised over its channels and spatial positions, then a per-channel
     * {@code * weight + bias} (1-D of size C, nullable). {@code groups} must divide C.
     */
    public Tensor groupNorm(int groups, Tensor weight, Tensor bias, double eps) {
        return Normalization.groupNorm(this, groups, weight, bias, eps);
    }

    /**
     * Instance normalisation of an (N, C, spatial...) input: each (sample, channel) is normalised over
     * its spatial axes, then a per-channel {@code * weight + bias} (1-D of size C, nullable).
     */
    public Tensor instanceNorm(Tensor weight, Tensor bias, double eps) {
        return Normalization.instanceNorm(this, weight, bias, eps);
    }

    /**
     * RMS normalisation ({@code torch.nn.functional.rms_norm}): {@code x / sqrt(mean(x^2) + eps) * weight}
     * with the mean over the trailing {@code normalizedShape} axes; {@code weight} has that shape or is null.
     */
    public Tensor rmsNorm(int[] normalizedShape, Tensor weight, double eps) {
        return Normalization.rmsNorm(this, normalizedShape, weight, eps);
    }

    /**
     * Embedding lookup ({@code torch.nn.functional.embedding(indices, weight)}): row {@code indices[...]}
     * of {@code weight} (numEmbeddings, dim), giving shape {@code indices.shape + [dim]} and weight's dtype.
     * Indices must be integers; one outside {@code [0, numEmbeddings)} selects no row and gives zeros
     * (the check PyTorch makes would need the data).
     */
    public static Tensor embedding(Tensor indices, Tensor weight) { return Normalization.embedding(indices, weight); }

    /**
     * Scaled dot-product attention with PyTorch 2 semantics: {@code softmax(q @ k^T * scale + bias) @ v}
     * for q (..., L, E), k (..., S, E), v (..., S, Ev), batch axes broadcasting, giving (..., L, Ev).
     * {@code mask} (nullable) broadcasts to (..., L, S) and is either bool (true = the key takes part) or
     * float (added to the scores). {@code causal} lets query i see keys {@code j <= i} (aligned top-left,
     * as PyTorch) and combines with {@code mask}. {@code scale} defaults (null) to {@code 1/sqrt(E)}. A
     * query that sees no key gets NaN, as softmax over nothing does. Half precision computes in f32.
     */
    public static Tensor scaledDotProductAttention(Tensor q, Tensor k, Tensor v, Tensor mask, boolean causal, Double scale) {
        return Attention.scaledDotProductAttention(q, k, v, mask, causal, scale);
    }

    /**
     * Rotary position embedding of this x (..., seq, dim): {@code x * cos + rotate(x) * sin}. Not
     * interleaved, {@code rotate} is rotate_half (GPT-NeoX, Llama in Hugging Face): halves x1, x2 become
     * {@code [-x2, x1]}; interleaved, it is GPT-J's rotation of pairs {@code (x0, x1), (x2, x3), ...} to
     * {@code (-x1, x0), ...}. {@code cos} and {@code sin} (same shape) broadcast to x with a last axis of
     * either {@code dim}, used as laid out, or {@code dim/2}, one angle per pair, which is spread to the
     * chosen convention (duplicated halves, or each angle twice in a row).
     */
    public Tensor rotaryEmbedding(Tensor cos, Tensor sin, boolean interleaved) {
        return Attention.rotaryEmbedding(this, cos, sin, interleaved);
    }

    /** The cos and sin tables of a rotary embedding, as returned by {@link #rotaryTables}. */
    public record RotaryTables(Tensor cos, Tensor sin) {}

    /**
     * Llama's rotary tables: f32 tensors of shape (seqLen, dim) holding {@code cos} and {@code sin} of
     * {@code pos * base^(-2i/dim)} at column {@code i} and again at column {@code i + dim/2} (the
     * duplicated-halves layout of the non-interleaved convention); the first {@code dim/2} columns are
     * the per-pair tables that {@link #rotaryEmbedding} accepts for either convention. Angles are
     * computed in double precision on the host. {@code dim} must be even.
     */
    public static RotaryTables rotaryTables(int seqLen, int dim, double base) { return Attention.rotaryTables(seqLen, dim, base); }

    /**
     * Resizes the spatial axes (2..) of an (N, C, spatial...) input to {@code size}, as
     * {@code torch.nn.functional.interpolate(size=...)}. Modes: {@code "nearest"} (PyTorch's legacy
     * nearest, source index {@code floor(dst * in / out)}; any dtype) and {@code "linear"} (linear,
     * bilinear or trilinear by the number of spatial axes; integer inputs give f32). For linear,
     * {@code alignCorners} maps the corner pixels onto each other ({@code src = dst * (in-1)/(out-1)});
     * otherwise pixel centres are aligned ({@code src = (dst + 0.5) * in/out - 0.5}, clamped at 0).
     * {@code alignCorners} must be false for nearest.
     */
    public Tensor interpolate(int[] size, String mode, boolean alignCorners) {
        return Interpolation.interpolate(this, size, mode, alignCorners);
    }

    // end of normalisation and attention section

    // =====================================================================================================
    // operators from ONNX's catalogue that any model format wants (bodies by topic: ElementIndexing,
    // Reductions, Activations, Movement, Normalization, Losses, Quantization, LinearAlgebra, Creation,
    // Signal, Resampling, PaddedPooling; what only ONNX needs lives in dev.kiln.onnxspec). Indices follow
    // the indexing section's rule: lazy, not checked, an out-of-range index selects nothing.

    /**
     * ONNX GatherElements: {@link #gather} along {@code axis}, with negative indices counting from the end
     * of the axis. {@code indices} has this tensor's rank and is no larger in the other axes; the result
     * has the indices' shape.
     */
    public Tensor gatherElements(int axis, Tensor indices) { return ElementIndexing.gatherElements(this, axis, indices.to(device)); }

    /**
     * ONNX GatherND: the last axis of {@code indices} (size k) holds coordinates (negative ones wrap) into
     * the k axes that follow the first {@code batchDims} axes, which this tensor and the indices share;
     * the result has shape {@code indices.shape[:-1] + shape[batchDims + k:]}.
     */
    public Tensor gatherND(Tensor indices, int batchDims) { return ElementIndexing.gatherND(this, indices.to(device), batchDims); }

    /**
     * ONNX ScatterElements (and the older Scatter): a copy of this tensor with {@code updates} (the shape
     * of {@code indices}, which has this tensor's rank) written along {@code axis} at the indices
     * (negative ones wrap). {@code reduction} is {@code "none"} (replace; of duplicate writes the last in
     * C order wins), {@code "add"}, {@code "mul"}, {@code "max"} or {@code "min"} (combined with the
     * existing element and every update that names it).
     */
    public Tensor scatterElements(int axis, Tensor indices, Tensor updates, String reduction) {
        return ElementIndexing.scatterElements(this, axis, indices.to(device), updates.to(device), reduction);
    }

    /**
     * ONNX ScatterND: the last axis of {@code indices} (size k) addresses slices of the first k axes,
     * which take the matching slices of {@code updates} (shape {@code indices.shape[:-1] + shape[k:]}),
     * combined per {@code reduction} as in {@link #scatterElements}.
     */
    public Tensor scatterND(Tensor indices, Tensor updates, String reduction) {
        return ElementIndexing.scatterND(this, indices.to(device), updates.to(device), reduction);
    }

    /**
     * ONNX OneHot of this index tensor: a new axis at {@code axis} (in {@code [-rank-1, rank]}) of size
     * {@code depth} holding {@code values[1]} at the index and {@code values[0]} elsewhere, in the dtype of
     * {@code values} (2 elements). Indices in {@code [-depth, depth)} count, negative ones from the end;
     * float indices are truncated; others give an all-off row.
     */
    public Tensor oneHot(int depth, int axis, Tensor values) { return ElementIndexing.oneHot(this, depth, axis, values.to(device)); }

    /** ONNX Hardmax: 1 at the first maximum along {@code axis} and 0 elsewhere, in this tensor's dtype. */
    public Tensor hardmax(int axis) { return Reductions.hardmax(this, axis); }

    /** {@link #argmax(int, boolean)} returning the last index of equal maxima when {@code selectLastIndex} (ONNX ArgMax). */
    public Tensor argmax(int axis, boolean keepdim, boolean selectLastIndex) { return Reductions.argExtreme(this, axis, keepdim, true, selectLastIndex); }

    /** {@link #argmin(int, boolean)} returning the last index of equal minima when {@code selectLastIndex} (ONNX ArgMin). */
    public Tensor argmin(int axis, boolean keepdim, boolean selectLastIndex) { return Reductions.argExtreme(this, axis, keepdim, false, selectLastIndex); }

    /**
     * ONNX CumSum: the running sum along {@code axis} in this tensor's dtype; {@code exclusive} leaves each
     * element out of its own sum, {@code reverse} sums from the end of the axis.
     */
    public Tensor cumsum(int axis, boolean exclusive, boolean reverse) { return Reductions.cumsum(this, axis, exclusive, reverse); }

    /** ONNX HardSigmoid: {@code max(0, min(1, alpha * x + beta))} (ONNX defaults alpha 0.2, beta 0.5). */
    public Tensor hardSigmoid(double alpha, double beta) { return Activations.hardSigmoid(this, alpha, beta); }

    /** ONNX Shrink: {@code x + bias} where {@code x < -lambd}, {@code x - bias} where {@code x > lambd}, else 0; dtype kept. */
    public Tensor shrink(double lambd, double bias) { return Activations.shrink(this, lambd, bias); }

    /** ONNX ThresholdedRelu: {@code x > alpha ? x : 0}. */
    public Tensor thresholdedRelu(double alpha) { return Activations.thresholdedRelu(this, alpha); }

    /** ONNX IsInf: true at +inf when {@code detectPositive} and at -inf when {@code detectNegative}. */
    public Tensor isinf(boolean detectPositive, boolean detectNegative) { return Activations.isinf(this, detectPositive, detectNegative); }

    /**
     * ONNX DepthToSpace of (N, C, H, W) to (N, C/b^2, H*b, W*b); {@code mode} {@code "DCR"} takes the block
     * offsets from the leading channel bits, {@code "CRD"} from the trailing ones.
     */
    public Tensor depthToSpace(int blockSize, String mode) { return Movement.depthToSpace(this, blockSize, mode); }

    /** ONNX SpaceToDepth of (N, C, H, W) to (N, C*b^2, H/b, W/b), the inverse of DCR {@link #depthToSpace}. */
    public Tensor spaceToDepth(int blockSize) { return Movement.spaceToDepth(this, blockSize); }

    /**
     * ONNX ReverseSequence: for each index b of {@code batchAxis}, the first {@code sequenceLens[b]}
     * elements along {@code timeAxis} in reverse order, the rest unchanged.
     */
    public Tensor reverseSequence(Tensor sequenceLens, int batchAxis, int timeAxis) {
        return ElementIndexing.reverseSequence(this, sequenceLens.to(device), batchAxis, timeAxis);
    }

    /**
     * ONNX LRN (local response normalisation across channels) of (N, C, ...):
     * {@code x / (bias + alpha / size * sum(x^2))^beta}, summing channels {@code c - (size-1)/2} to
     * {@code c + ceil((size-1)/2)} (ONNX defaults alpha 1e-4, beta 0.75, bias 1).
     */
    public Tensor lrn(int size, double alpha, double beta, double bias) { return Normalization.lrn(this, size, alpha, beta, bias); }

    /** ONNX LpNormalization: this tensor divided by its L1 ({@code p = 1}) or L2 ({@code p = 2}) norm along {@code axis}. */
    public Tensor lpNormalization(int axis, int p) { return Normalization.lpNormalization(this, axis, p); }

    /** ONNX MeanVarianceNormalization: {@code (x - mean) / (std + 1e-9)} with mean and biased std over {@code axes} (ONNX default {0, 2, 3}). */
    public Tensor meanVarianceNormalization(int... axes) { return Normalization.meanVarianceNormalization(this, axes); }

    /**
     * ONNX NegativeLogLikelihoodLoss of this (N, C, d...) tensor of log-probabilities and {@code target}
     * (N, d...) of class indices: {@code -x[n, target, d...] * weight[target]}, 0 where the target is
     * {@code ignoreIndex} (nullable). {@code weight} (C) may be null (all 1). {@code reduction}:
     * {@code "none"} gives (N, d...), {@code "sum"} the sum, {@code "mean"} the sum over the total weight
     * of the counted targets.
     */
    public Tensor nllLoss(Tensor target, Tensor weight, String reduction, Integer ignoreIndex) {
        return Losses.nllLoss(this, target.to(device), weight == null ? null : weight.to(device), reduction, ignoreIndex);
    }

    /**
     * ONNX SoftmaxCrossEntropyLoss of these (N, C, d...) scores: {@link #nllLoss} of {@code logSoftmax(1)}
     * (ONNX's optional second output is {@code logSoftmax(1)} itself).
     */
    public Tensor softmaxCrossEntropyLoss(Tensor labels, Tensor weight, String reduction, Integer ignoreIndex) {
        return Losses.softmaxCrossEntropyLoss(this, labels.to(device), weight == null ? null : weight.to(device), reduction, ignoreIndex);
    }

    /**
     * ONNX QuantizeLinear: {@code saturate(round_half_even(x / scale) + zeroPoint)} in the dtype of
     * {@code zeroPoint}, u8 when it is null. A scalar scale (and zero point) applies to all elements, a
     * 1-D one of size {@code dim(axis)} per index of {@code axis} (ONNX default axis 1).
     */
    public Tensor quantizeLinear(Tensor scale, Tensor zeroPoint, int axis) {
        return Quantization.quantizeLinear(this, scale.to(device), zeroPoint == null ? null : zeroPoint.to(device), axis);
    }

    /**
     * ONNX DequantizeLinear of this integer tensor: {@code (x - zeroPoint) * scale} in the scale's dtype;
     * {@code zeroPoint} (this tensor's dtype) may be null; scale and zero point per-axis as in
     * {@link #quantizeLinear}.
     */
    public Tensor dequantizeLinear(Tensor scale, Tensor zeroPoint, int axis) {
        return Quantization.dequantizeLinear(this, scale.to(device), zeroPoint == null ? null : zeroPoint.to(device), axis);
    }

    /** The outputs of {@link #dynamicQuantizeLinear()}: u8 values, the f32 scale and the u8 zero point (both 0-d). */
    public record Quantized(Tensor values, Tensor scale, Tensor zeroPoint) {}

    /**
     * ONNX DynamicQuantizeLinear of this float tensor: u8 quantisation of the range of the values extended
     * to include 0, {@code scale = (max - min) / 255}, {@code zeroPoint = round(clip(-min / scale, 0, 255))}.
     */
    public Quantized dynamicQuantizeLinear() { return Quantization.dynamicQuantizeLinear(this); }

    /**
     * Determinants of the square matrices on the last two axes (ONNX Det), by Gaussian elimination with
     * partial pivoting unrolled over the static size (meant for small matrices); integer inputs give f32.
     */
    public Tensor det() { return LinearAlgebra.det(this); }

    /**
     * ONNX MaxUnpool: this (N, C, spatial...) tensor's values placed at {@code indices} (their positions in
     * the flattened output, as MaxPool's Indices output gives them) of a zero tensor of {@code outputShape}
     * (N, C, spatial...). Each index is read inside its own (n, c) plane, which is ONNX's flat placement
     * when the output planes have the pooled input's size (the default output shape) or N*C = 1.
     */
    public Tensor maxUnpool(Tensor indices, int[] outputShape) { return ElementIndexing.maxUnpool(this, indices.to(device), outputShape); }

    /** ONNX EyeLike: a tensor shaped like this 2-D one with ones on diagonal {@code k} (above the main one if positive), in {@code dtype} (this tensor's if null). */
    public Tensor eyeLike(int k, DType dtype) { return Creation.eyeLike(this, k, dtype); }

    /**
     * ONNX Range: {@code start + i * delta} for {@code 0 <= i < max(ceil((limit - start) / delta), 0)} in
     * {@code dtype}; integer dtypes compute exactly in 64 bits, float ones in double precision.
     */
    public static Tensor range(Number start, Number limit, Number delta, DType dtype) { return Creation.range(start, limit, delta, dtype); }

    /** ONNX HannWindow: {@code 0.5 - 0.5 cos(2 pi n / N)} with N = size (periodic) or size - 1 (symmetric). */
    public static Tensor hannWindow(int size, boolean periodic, DType dtype) {
        return Signal.window("hannWindow", Signal.Window.HANN, size, periodic, dtype);
    }

    /** ONNX HammingWindow: {@code 25/46 - 21/46 cos(2 pi n / N)}, N as in {@link #hannWindow}. */
    public static Tensor hammingWindow(int size, boolean periodic, DType dtype) {
        return Signal.window("hammingWindow", Signal.Window.HAMMING, size, periodic, dtype);
    }

    /** ONNX BlackmanWindow: {@code 0.42 - 0.5 cos(2 pi n / N) + 0.08 cos(4 pi n / N)}, N as in {@link #hannWindow}. */
    public static Tensor blackmanWindow(int size, boolean periodic, DType dtype) {
        return Signal.window("blackmanWindow", Signal.Window.BLACKMAN, size, periodic, dtype);
    }

    /**
     * ONNX GridSample (opset 16; opset 20's mode names {@code linear} and {@code cubic} are accepted too),
     * as {@code torch.nn.functional.grid_sample}: this (N, C, H, W) tensor sampled at {@code grid}
     * (N, Ho, Wo, 2) of normalised (x, y) positions in [-1, 1], giving (N, C, Ho, Wo). {@code mode}
     * {@code bilinear}, {@code nearest} (ties to even) or {@code bicubic} (A = -0.75); {@code paddingMode}
     * {@code zeros}, {@code border} or {@code reflection}; {@code alignCorners} maps -1 and 1 to the centres
     * (rather than the outer edges) of the corner pixels.
     */
    public Tensor gridSample(Tensor grid, String mode, String paddingMode, boolean alignCorners) {
        return Resampling.gridSample(this, grid.to(device), mode, paddingMode, alignCorners);
    }

    /**
     * ONNX DFT (opset 17) of this signal, whose last axis holds (real) or (real, imaginary) values (size 1
     * or 2), along {@code axis} (a signal axis; ONNX default 1); the result ends in a (real, imaginary) axis
     * of size 2.
     *
     * @param inverse the inverse transform, scaled by {@code 1/n}
     * @param onesided only frequencies {@code 0..n/2} (real forward transforms only)
     * @param dftLength the transform length n (null: the axis size); longer zero-pads, shorter truncates
     */
    public Tensor dft(int axis, boolean inverse, boolean onesided, Integer dftLength) { return Signal.dft(this, axis, inverse, onesided, dftLength); }

    /**
     * ONNX STFT of this (batch, length, 1 or 2) signal: frames of {@code frameLength} samples every
     * {@code frameStep}, each multiplied by {@code window} (1-D of the frame length; null: rectangular) and
     * transformed, giving (batch, frames, bins, 2) with {@code frames = (length - frameLength) / frameStep + 1}
     * and {@code bins = frameLength / 2 + 1} if {@code onesided} (ONNX default), else frameLength.
     * {@code frameLength} may be null when a window is given.
     */
    public Tensor stft(int frameStep, Tensor window, Integer frameLength, boolean onesided) {
        return Signal.stft(this, frameStep, window == null ? null : window.to(device), frameLength, onesided);
    }

    /** The outputs of {@link #maxPoolWithIndices}: the pooled values and the i64 positions of the maxima. */
    public record Pooled(Tensor values, Tensor indices) {}

    /**
     * ONNX MaxPool of (N, C, spatial...) with the kernel's number of spatial axes.
     *
     * @param kernel window size per spatial axis
     * @param strides null for 1
     * @param pads ONNX layout {@code [begin_1, ..., begin_m, end_1, ..., end_m]}, any sizes (auto_pad resolved by the caller); null for 0
     * @param dilations null for 1
     * @param ceilMode round the output size up; a window that would start in the end padding is dropped
     */
    public Tensor maxPool(int[] kernel, int[] strides, int[] pads, int[] dilations, boolean ceilMode) {
        return PaddedPooling.maxPool(this, kernel, strides, pads, dilations, ceilMode);
    }

    /**
     * {@link #maxPool(int[], int[], int[], int[], boolean)} with ONNX MaxPool's Indices output: the position
     * of each window's first maximum in this tensor flattened, row-major over the spatial axes
     * ({@code storageOrder} 0) or column-major ({@code storageOrder} 1), planes (n, c) in order.
     */
    public Pooled maxPoolWithIndices(int[] kernel, int[] strides, int[] pads, int[] dilations, boolean ceilMode, int storageOrder) {
        return PaddedPooling.maxPoolWithIndices(this, kernel, strides, pads, dilations, ceilMode, storageOrder);
    }

    /**
     * ONNX AveragePool; geometry as {@link #maxPool(int[], int[], int[], int[], boolean)}. Each window sum is
     * divided by its number of elements inside the input, or with {@code countIncludePad} inside the padded
     * input (the ceil-mode extra never counts); integer inputs give f32.
     */
    public Tensor avgPool(int[] kernel, int[] strides, int[] pads, int[] dilations, boolean ceilMode, boolean countIncludePad) {
        return PaddedPooling.avgPool(this, kernel, strides, pads, dilations, ceilMode, countIncludePad);
    }

    /** ONNX LpPool: {@code (sum |x|^p)^(1/p)} over each window (padding counts as 0); geometry as {@link #maxPool(int[], int[], int[], int[], boolean)}. */
    public Tensor lpPool(double p, int[] kernel, int[] strides, int[] pads, int[] dilations, boolean ceilMode) {
        return PaddedPooling.lpPool(this, p, kernel, strides, pads, dilations, ceilMode);
    }

    /**
     * ONNX RoiAlign (opset 16) of this (N, C, H, W) tensor, with ONNX Runtime's sampling: for each region
     * {@code rois[r] = (x1, y1, x2, y2)} (scaled by {@code spatialScale}) of image {@code batchIndices[r]},
     * an (outH, outW) grid of bins, each the average ({@code mode "avg"}) or maximum ({@code "max"}, of
     * the weighted bilinear corners) of {@code samplingRatio^2} bilinear samples; result (R, C, outH, outW).
     * {@code coordinateTransformationMode} {@code "half_pixel"} shifts the region by -0.5 pixel,
     * {@code "output_half_pixel"} (the legacy form) does not and makes regions at least 1 pixel wide.
     *
     * @throws UnsupportedOperationException for samplingRatio 0 (ONNX's adaptive count depends on the roi values)
     */
    public Tensor roiAlign(Tensor rois, Tensor batchIndices, String mode, int outH, int outW, int samplingRatio, double spatialScale,
                           String coordinateTransformationMode) {
        return Resampling.roiAlign(this, rois.to(device), batchIndices.to(device), mode, outH, outW, samplingRatio, spatialScale,
                coordinateTransformationMode);
    }

    // end of operators from ONNX's catalogue
}

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

    Tensor(Buffer buffer, Shape shape, Device device) {
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

    Tensor make(UOp u) { return new Tensor(u, device); }

    /** An optional operand (null stays null) moved to this tensor's device. */
    private Tensor onThisDevice(Tensor t) { return t == null ? null : t.to(device); }

    // =====================================================================================================
    // creation (Creation.java)

    /** A tensor holding a copy of {@code data} with the given shape (f32). */
    public static Tensor of(float[] data, int... shape) { return Creation.of(data, shape); }

    /** A 1-D f32 tensor holding a copy of {@code data}. */
    public static Tensor of(float... data) { return of(data, data.length); }

    /** A tensor holding a copy of {@code data} (f64). */
    public static Tensor of(double[] data, int... shape) { return Creation.of(data, shape); }

    /** A tensor holding a copy of {@code data} (i32). */
    public static Tensor of(int[] data, int... shape) { return Creation.of(data, shape); }

    /** A tensor holding a copy of {@code data} (i64). */
    public static Tensor of(long[] data, int... shape) { return Creation.of(data, shape); }

    /** A tensor holding a copy of {@code data} (bool). */
    public static Tensor of(boolean[] data, int... shape) { return Creation.of(data, shape); }

    /**
     * A tensor of {@code dtype} holding a copy of {@code values}, each converted to the dtype (integers
     * wrap, floats round).
     */
    public static Tensor of(DType dtype, double[] values, int... shape) { return Creation.of(dtype, values, shape); }

    /** A tensor of {@code dtype} holding integer {@code values}, each wrapped to the dtype. */
    public static Tensor of(DType dtype, long[] values, int... shape) { return Creation.of(dtype, values, shape); }

    /**
     * A tensor holding a copy of the first {@code dtype.byteSize(numel)} bytes of {@code data}, read as
     * dense C-order elements in native byte order.
     */
    public static Tensor fromSegment(MemorySegment data, DType dtype, int... shape) { return Creation.fromSegment(data, dtype, shape); }

    /** A realised tensor on the default device whose zero-filled C-order host storage {@code writer} fills (copied once to a device with its own memory). */
    public static Tensor fromWriter(DType dtype, int[] shape, java.util.function.Consumer<MemorySegment> writer) { return Creation.fromWriter(dtype, shape, writer); }

    /**
     * A realised constant tensor on the default device whose storage is {@code data} itself, not a copy: for
     * weights in memory that the caller owns, such as a memory-mapped file. Its first {@code dtype.byteSize(numel)}
     * bytes are read as dense C-order elements in native byte order and never written: the tensor is a
     * {@linkplain #asConstant() constant}, so plans may keep data derived from it. Nothing is allocated, so the
     * {@link dev.kiln.runtime.MemoryBudget} is not consulted. The caller keeps {@code data}'s arena open for as long
     * as this tensor, a tensor computed from it or a plan that reads it is used; a read after the arena is closed
     * fails with an {@link IllegalStateException}.
     *
     * @throws IllegalArgumentException if {@code data} holds fewer bytes than the shape needs, or is native memory
     *                                  whose address is not a multiple of the element size
     * @throws IllegalStateException    if the default device keeps its tensors in its own memory (a GPU): copy the
     *                                  data there with {@link #fromSegment} instead
     */
    public static Tensor wrapConstant(MemorySegment data, DType dtype, int... shape) { return Creation.wrapConstant(data, dtype, shape); }

    /** A 0-d f32 tensor. */
    public static Tensor scalar(double value) { return full(value, DType.F32); }

    /** A 0-d tensor of {@code dtype}. */
    public static Tensor scalar(Number value, DType dtype) { return full(value, dtype); }

    /** A tensor of {@code shape} filled with {@code value} (converted to {@code dtype}). */
    public static Tensor full(Number value, DType dtype, int... shape) { return Creation.full(value, dtype, shape); }

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
    public static Tensor arange(int start, int end, int step) { return Creation.arange(start, end, step); }

    /** {@code start, start+step, ...} below {@code end}, as f32. */
    public static Tensor arange(double start, double end, double step) { return Creation.arange(start, end, step); }

    /** {@code steps} evenly spaced f32 values from {@code start} to {@code end} inclusive. */
    public static Tensor linspace(double start, double end, int steps) { return Creation.linspace(start, end, steps); }

    /** The n-by-m f32 identity (ones on the main diagonal). */
    public static Tensor eye(int n, int m) { return Creation.eye(n, m); }

    public static Tensor eye(int n) { return eye(n, n); }

    Tensor reshapeTo(Shape s) {
        if (s.equals(shape())) return this;
        UOp n = node();
        while (n.op() == Op.RESHAPE) n = n.src(0); // a reshape of a reshape is one reshape
        return make(n.shape().equals(s) ? n : UOp.of(Op.RESHAPE, dtype(), s, n));
    }

    static void checkComputable(String op, DType dtype) {
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
     * This tensor, realised, as a constant: a tensor over the same memory whose contents the caller promises never
     * to change again ({@link Buffer#asImmutable()}). Plans that read it may keep data derived from it, such as
     * weights packed for a matrix product once instead of on every run.
     */
    public Tensor asConstant() {
        Buffer b = buffer();
        if (b.isImmutable()) return this;
        return overBuffer(b.asImmutable(), shape(), device);
    }

    /** A realised tensor of {@code shape} whose values are {@code b}'s, in place. */
    static Tensor overBuffer(Buffer b, Shape shape, Device device) {
        Tensor t = new Tensor(b, Shape.of(Math.toIntExact(b.count())), device).reshapeTo(shape);
        t.realized = b; // the reshape of a buffer is that buffer's values: realising it must not copy them
        return t;
    }

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
     * {@link #prepare(Tensor...)} with each kernel's optimisation actions tuned by BEAM search per
     * {@code beam} (e.g. {@code BeamOptions.width(4)}): variants are compiled and timed, and the fastest kept,
     * never slower than the default as measured. Results are cached per kernel structure, device and width,
     * in memory and on disk, so preparing the same kernels again, in this process or a later one, does not
     * search. {@link dev.kiln.runtime.BeamOptions#OFF} prepares as usual. (The environment variable
     * {@code KILN_BEAM=n} turns BEAM on for every prepare of a process.)
     */
    public static dev.kiln.runtime.ExecutionPlan prepare(dev.kiln.runtime.BeamOptions beam, Tensor... outputs) {
        return beam.during(() -> prepare(outputs));
    }

    /**
     * Compiles, ahead of time and in a few large batches, the kernels of many graphs (each a list of
     * outputs) for {@code device}, so that plans prepared later find them in the kernel caches: one compiler
     * run per batch costs far less than one per graph. A graph that cannot be scheduled or compiled here is
     * skipped; preparing it later reports the problem.
     */
    public static void compileAhead(Device device, List<List<Tensor>> graphs) {
        List<List<UOp>> roots = new ArrayList<>();
        for (List<Tensor> g : graphs) roots.add(g.stream().map(t -> t.to(device).node()).toList());
        device.compileAhead(roots);
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
     * Writes {@code value} into this realised tensor's buffer when the returned tensor is realised; on a graph's input
     * (or a reshape of it), into the compiled graph's input buffer on every run (a KV cache the graph updates itself).
     *
     * @throws IllegalArgumentException if shapes or dtypes differ
     */
    public Tensor assign(Tensor value) {
        if (!value.shape().equals(shape()) || value.dtype() != dtype()) {
            throw new IllegalArgumentException("assign: value " + value.dtype() + value.shape() + " does not match target "
                    + dtype() + shape());
        }
        if (!Scans.isInput(uop)) realize();
        return make(UOp.of(Op.ASSIGN, dtype(), null, node(), value.to(device).node()));
    }

    /**
     * A tensor computed by host code: {@code body} reads the realised inputs and writes the output
     * (shape {@code shape}, dtype {@code dtype}) in C order.
     */
    public static Tensor custom(String name, DType dtype, int[] shape, dev.kiln.ir.CustomFunction.Body body, Tensor... inputs) {
        return HostSteps.custom(name, dtype, Shape.of(shape), body, inputs);
    }

    /** As {@link #custom}, with the public {@link HostFunction}: a step of host code, for code outside Kiln's core. */
    public static Tensor host(String name, DType dtype, int[] shape, HostFunction fn, Tensor... inputs) {
        return custom(name, dtype, shape, Scans.body(Objects.requireNonNull(fn, "fn")), inputs);
    }

    /**
     * A host step whose extent along {@code axis} is decided when it runs: {@code fn} writes up to {@code capacity[axis]}
     * rows and returns how many, and the plan binds {@code extent} (range {@code [0 or more, capacity[axis]]}) to that
     * count for every later step, so nothing re-compiles. Inputs come at their maximum layout (pass {@link #variable}s for sizes).
     * @throws IllegalArgumentException if {@code extent}'s range does not start at 0 or more and end at the capacity
     */
    public static Tensor hostSized(String name, DType dtype, int[] capacity, int axis, Variable extent, SizedHostFunction fn, Tensor... inputs) {
        return HostSteps.sized(name, dtype, capacity, axis, extent, fn, inputs);
    }

    /**
     * A loop over the first axis of the {@code sequences}, its step traced and compiled once (see {@link ScanStep}): the final states,
     * then each per-step output stacked on a new first axis. Build, plan and plan size do not grow with the steps.
     *
     * @throws IllegalArgumentException if there is no sequence, the sequences disagree or are symbolic, the step's next
     *                                  states do not match the state, or it reads a value supplied from outside the scan
     */
    public static List<Tensor> scan(ScanStep step, List<Tensor> initial, List<Tensor> sequences, List<Tensor> constants) {
        return Scans.scan(step, -1, initial, sequences, constants);
    }

    /** {@link #scan(ScanStep, List, List, List)} over {@code steps} steps; the sequences (if any) must have as many. */
    public static List<Tensor> scan(ScanStep step, int steps, List<Tensor> initial, List<Tensor> sequences, List<Tensor> constants) {
        return Scans.scan(step, Scans.requireSteps(steps), initial, sequences, constants);
    }

    /** A while-loop traced and compiled once, run per iteration; trip count and condition read when it runs, sizes bound per iteration (see {@link LoopStep}). */
    public static LoopResult loop(LoopStep step, Tensor tripCount, Tensor condition, List<Tensor> initial, List<Tensor> constants, int capacity, LoopStep.Size... sizes) {
        return Scans.loop(step, tripCount, condition, initial, constants, capacity, List.of(sizes), LoopLimit.maxIterations());
    }

    /** The values converted to float (C order). */
    public float[] toFloatArray() { return Readout.floats(arrayLength("toFloatArray"), buffer().toHost()); }

    /** The values converted to double (C order). */
    public double[] toDoubleArray() { return Readout.doubles(arrayLength("toDoubleArray"), buffer().toHost()); }

    /** The values as longs (C order): integers as they are (u64 as raw bits), floats truncated. */
    public long[] toLongArray() { return Readout.longs(arrayLength("toLongArray"), buffer().toHost()); }

    /** The element count as a Java array length, checked before anything is computed or allocated (so it comes first). */
    private int arrayLength(String op) { return Readout.arrayLength(op, shape()); }

    /** The values as ints (C order), see {@link #toLongArray()}. */
    public int[] toIntArray() { return Arrays.stream(toLongArray()).mapToInt(v -> (int) v).toArray(); }

    /** The values as booleans (non-zero is true). */
    public boolean[] toBooleanArray() { return Readout.booleans(toDoubleArray()); }

    /** The single value of a one-element tensor. */
    public double item() {
        if (numel() != 1) throw new IllegalArgumentException("item: tensor of shape " + shape() + " has " + numel() + " elements, not 1");
        return toDoubleArray()[0];
    }

    @Override
    public String toString() { return "Tensor" + shape() + " " + dtype() + " on " + device + (realized != null ? " (realised)" : ""); }

    // =====================================================================================================
    // axes and broadcasting

    /** {@code axis} normalised to {@code [0, rank)}. */
    int axis(int axis, String op) { return normAxis(axis, ndim(), op, shape()); }

    static int normAxis(int axis, int rank, String op, Shape shape) { return Broadcasting.normAxis(axis, rank, op, shape); }

    int[] axes(int[] axes, String op) { return Broadcasting.axes(this, axes, op); }

    static Shape broadcastShape(String op, Shape a, Shape b) { return Broadcasting.broadcastShape(op, a, b); }

    /** This tensor broadcast to {@code target} (NumPy rules); symbolic axes of this tensor stay symbolic. */
    public Tensor broadcastTo(int... target) { return Broadcasting.broadcastTo(this, target); }

    Tensor broadcastTo(Shape t, String op) { return Broadcasting.broadcastTo(this, t, op); }

    Tensor scalarLike(Object v, String op) { return Broadcasting.scalarLike(this, v, op); }

    static Tensor operand(Tensor self, Object o, String op) { return o instanceof Tensor t ? t : self.scalarLike(o, op); }

    static Tensor[] align(String op, Tensor a, Tensor b, DType dtype) { return Broadcasting.align(op, a, b, dtype); }

    static DType promoteFor(String op, Tensor a, Tensor b) { return DType.promote(a.dtype(), b.dtype()); }

    /** A binary primitive after broadcasting and promotion. */
    Tensor binary(Op op, String name, Object other) {
        Tensor o = operand(this, other, name);
        Tensor[] xy = align(name, this, o, promoteFor(name, this, o));
        DType out = op.isComparison() ? DType.BOOL : xy[0].dtype();
        return make(UOp.of(op, out, null, xy[0].node(), xy[1].node()));
    }

    Tensor unary(Op op) { return make(UOp.of(op, dtype(), null, node())); }

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
    // arithmetic (ElementwiseMath.java)

    public Tensor add(Object other) { return binary(Op.ADD, "add", other); }

    public Tensor sub(Object other) {
        Tensor o = operand(this, other, "sub");
        broadcastShape("sub", shape(), o.shape()); // checked here so that a mismatch names sub, not the add it becomes
        return add(o.neg());
    }

    /** {@code other - this}. */
    public Tensor rsub(Object other) {
        broadcastShape("rsub", shape(), operand(this, other, "rsub").shape());
        return neg().add(other);
    }

    public Tensor mul(Object other) { return binary(Op.MUL, "mul", other); }

    /** True division; integer operands give f32. */
    public Tensor div(Object other) { return ElementwiseMath.div(this, other); }

    /** Division rounding toward negative infinity (Python {@code //}). */
    public Tensor floorDiv(Object other) { return binary(Op.FLOORDIV, "floorDiv", other); }

    /** Integer division truncating toward zero (C {@code /}); on floats, {@code trunc(a / b)}. */
    public Tensor truncDiv(Object other) { return ElementwiseMath.truncDiv(this, other); }

    /** Remainder with the divisor's sign (Python {@code %}, {@code torch.remainder}). */
    public Tensor mod(Object other) { return binary(Op.FLOORMOD, "mod", other); }

    /** Remainder with the dividend's sign (C {@code fmod}, {@code torch.fmod}). */
    public Tensor fmod(Object other) { return binary(Op.MOD, "fmod", other); }

    public Tensor neg() { return ElementwiseMath.neg(this); }

    public Tensor reciprocal() { return toFloat().unary(Op.RECIP); }

    public Tensor square() { return mul(this); }

    /** Elementwise maximum; NaN wins. */
    public Tensor maximum(Object other) { return binary(Op.MAX, "maximum", other); }

    /** Elementwise minimum; NaN wins. */
    public Tensor minimum(Object other) { return ElementwiseMath.minimum(this, other); }

    /** {@code this ** exponent} with real-valued semantics: a negative base needs an integral exponent. */
    public Tensor pow(Object exponent) { return ElementwiseMath.pow(this, exponent); }

    /** {@code this + weight * (end - this)}. */
    public Tensor lerp(Object end, Object weight) { return ElementwiseMath.lerp(this, end, weight); }

    /** Values clipped to {@code [min, max]}; either bound may be null. */
    public Tensor clamp(Object min, Object max) { return ElementwiseMath.clamp(this, min, max); }

    // =====================================================================================================
    // exponentials, logarithms and powers (ElementwiseMath.java)

    public Tensor exp2() { return toFloat().unary(Op.EXP2); }

    public Tensor log2() { return toFloat().unary(Op.LOG2); }

    public Tensor exp() { return toFloat().mul(1.0 / Math.log(2)).exp2(); }

    public Tensor log() { return log2().mul(Math.log(2)); }

    public Tensor log10() { return log2().mul(Math.log(2) / Math.log(10)); }

    /** {@code log(1 + x)}, accurate near 0. */
    public Tensor log1p() { return ElementwiseMath.log1p(this); }

    /** {@code exp(x) - 1}. */
    public Tensor expm1() { return ElementwiseMath.expm1(this); }

    public Tensor sqrt() { return toFloat().unary(Op.SQRT); }

    public Tensor rsqrt() { return sqrt().reciprocal(); }

    // =====================================================================================================
    // trigonometry (ElementwiseMath.java)

    public Tensor sin() { return toFloat().unary(Op.SIN); }

    public Tensor cos() { return toFloat().rsub(Math.PI / 2).sin(); }

    public Tensor tan() { return sin().div(cos()); }

    /** Arctangent from a minimax polynomial after range reduction (max error about 2 ulp in f32). */
    public Tensor atan() { return ElementwiseMath.atan(this); }

    public Tensor asin() { return ElementwiseMath.asin(this); }

    public Tensor acos() { return asin().rsub(Math.PI / 2); }

    public Tensor sinh() { return ElementwiseMath.sinh(this); }

    public Tensor cosh() { return ElementwiseMath.cosh(this); }

    public Tensor tanh() { return ElementwiseMath.tanh(this); }

    public Tensor asinh() { return ElementwiseMath.asinh(this); }

    public Tensor acosh() { return ElementwiseMath.acosh(this); }

    public Tensor atanh() { return ElementwiseMath.atanh(this); }

    /** The error function (Abramowitz and Stegun 7.1.26, absolute error below 1.5e-7). */
    public Tensor erf() { return ElementwiseMath.erf(this); }

    // =====================================================================================================
    // rounding and sign (ElementwiseMath.java)

    public Tensor trunc() { return dtype().isFloat() ? unary(Op.TRUNC) : this; }

    public Tensor floor() { return ElementwiseMath.floor(this); }

    public Tensor ceil() { return ElementwiseMath.ceil(this); }

    /** Round half to even, as NumPy and PyTorch do. */
    public Tensor round() { return ElementwiseMath.round(this); }

    public Tensor abs() { return ElementwiseMath.abs(this); }

    /** -1, 0 or 1 by sign (NaN stays NaN, zero keeps its sign as 0). */
    public Tensor sign() { return ElementwiseMath.sign(this); }

    public Tensor isnan() { return dtype().isFloat() ? ne(this) : fullLike(0).cast(DType.BOOL); }

    public Tensor isinf() { return dtype().isFloat() ? eq(Double.POSITIVE_INFINITY).logicalOr(eq(Double.NEGATIVE_INFINITY)) : fullLike(0).cast(DType.BOOL); }

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
    public static Tensor where(Tensor cond, Object a, Object b) { return ElementwiseMath.where(cond, a, b); }

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
    // activations (Activations.java)

    public Tensor relu() { return maximum(0); }

    public Tensor relu6() { return relu().minimum(6); }

    public Tensor leakyRelu(double slope) { return where(gt(0), this, mul(slope)); }

    /** {@code x > 0 ? x : weight * x}; {@code weight} broadcasts along axis 1 (channels) if 1-D. */
    public Tensor prelu(Tensor weight) { return Activations.prelu(this, weight); }

    public Tensor elu(double alpha) { return Activations.elu(this, alpha); }

    public Tensor selu() { return Activations.selu(this); }

    public Tensor celu(double alpha) { return Activations.celu(this, alpha); }

    /** GELU with the exact erf form. */
    public Tensor gelu() { return Activations.gelu(this); }

    /** GELU with the tanh approximation. */
    public Tensor geluTanh() { return Activations.geluTanh(this); }

    public Tensor sigmoid() { return toFloat().neg().exp().add(1.0).reciprocal(); }

    public Tensor logSigmoid() { return neg().softplus(1, 20).neg(); }

    public Tensor silu() { return mul(sigmoid()); }

    public Tensor mish() { return mul(softplus(1, 20).tanh()); }

    /** {@code log(1 + exp(beta x)) / beta}, linear above {@code threshold} (as PyTorch). */
    public Tensor softplus(double beta, double threshold) { return Activations.softplus(this, beta, threshold); }

    public Tensor softplus() { return softplus(1, 20); }

    public Tensor softsign() { return toFloat().div(abs().add(1.0)); }

    /** {@code clamp(x / 6 + 1/2, 0, 1)} (PyTorch's definition). */
    public Tensor hardsigmoid() { return toFloat().div(6.0).add(0.5).clamp(0.0, 1.0); }

    public Tensor hardswish() { return mul(hardsigmoid()); }

    public Tensor hardtanh(double min, double max) { return clamp(min, max); }

    /** Softmax along {@code axis}. */
    public Tensor softmax(int axis) { return Activations.softmax(this, axis); }

    public Tensor logSoftmax(int axis) { return Activations.logSoftmax(this, axis); }

    // =====================================================================================================
    // reductions (Reductions.java)

    private Tensor reduce(ReduceArg.Kind kind, String op, int[] axes, boolean keepdim) {
        int[] ax = axes(axes, op);
        DType dt = dtype();
        DType acc = (kind == ReduceArg.Kind.SUM || kind == ReduceArg.Kind.PROD) ? dt.accumulator() : dt;
        Tensor x = cast(acc);
        Tensor r = make(UOp.of(Op.REDUCE, acc, new ReduceArg(kind, Ints.of(ax)), x.node()));
        if (dt == DType.F16 || dt == DType.BF16) r = r.cast(dt); // half precision accumulates in f32
        return keepdim ? r : r.dropAxes(ax);
    }

    Tensor dropAxes(int[] ax) {
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

    public Tensor mean(int[] axes, boolean keepdim) { return Reductions.mean(this, axes, keepdim); }

    /** Variance with Bessel's correction (as {@code torch.var}). */
    public Tensor var(int... axes) { return var(axes, false, 1); }

    /** Variance dividing by {@code N - correction}. */
    public Tensor var(int[] axes, boolean keepdim, double correction) { return Reductions.var(this, axes, keepdim, correction); }

    public Tensor std(int... axes) { return var(axes).sqrt(); }

    public Tensor std(int[] axes, boolean keepdim, double correction) { return var(axes, keepdim, correction).sqrt(); }

    /** True where any element along the axes is non-zero. */
    public Tensor any(int... axes) { return any(axes, false); }

    public Tensor any(int[] axes, boolean keepdim) { return cast(DType.BOOL).reduce(ReduceArg.Kind.MAX, "any", axes, keepdim); }

    public Tensor all(int... axes) { return all(axes, false); }

    public Tensor all(int[] axes, boolean keepdim) { return cast(DType.BOOL).reduce(ReduceArg.Kind.MIN, "all", axes, keepdim); }

    /** {@code log(sum(exp(x)))}, stable for large values. */
    public Tensor logsumexp(int... axes) { return logsumexp(axes, false); }

    public Tensor logsumexp(int[] axes, boolean keepdim) { return Reductions.logsumexp(this, axes, keepdim); }

    /** Index of the first maximum along {@code axis} (NaN counts as the maximum), as i64. */
    public Tensor argmax(int axis, boolean keepdim) { return Reductions.argExtreme(this, axis, keepdim, true); }

    public Tensor argmax(int axis) { return argmax(axis, false); }

    /** Index of the first maximum of the flattened tensor. */
    public Tensor argmax() { return flatten().argmax(0, false); }

    public Tensor argmin(int axis, boolean keepdim) { return Reductions.argExtreme(this, axis, keepdim, false); }

    public Tensor argmin(int axis) { return argmin(axis, false); }

    public Tensor argmin() { return flatten().argmin(0, false); }

    /** Running sum along {@code axis}. */
    public Tensor cumsum(int axis) { return Reductions.cumulative(this, axis, true); }

    /** Running product along {@code axis}. */
    public Tensor cumprod(int axis) { return Reductions.cumulative(this, axis, false); }

    // =====================================================================================================
    // movement (Movement.java)

    /** The same elements in C order with a new shape; one dimension may be -1 (inferred). */
    public Tensor reshape(int... shape) { return Movement.reshape(this, shape); }

    /**
     * This tensor with {@code axis} made symbolic: its size is {@code size}'s value when a plan runs (at
     * most {@code size.max()}, which must equal the axis's size). The buffer keeps its layout; kernels
     * compute only the rows below the size, and never read the rows past it. Use it for inputs padded
     * to a maximum (a sequence of up to N tokens) and for tables laid out for the maximum.
     */
    public Tensor withSymbolicDim(int axis, Variable size) { return Movement.withSymbolicDim(this, axis, size); }

    /** Axes reordered: output axis i is input axis {@code order[i]}. */
    public Tensor permute(int... order) { return Movement.permute(this, order); }

    /** Two axes swapped. */
    public Tensor transpose(int a, int b) { return Movement.transpose(this, a, b); }

    /** The last two axes swapped (a matrix transpose). */
    public Tensor mT() { return Movement.mT(this); }

    /** Size-1 axes repeated to {@code shape} (-1 keeps a size); new leading axes may be added. */
    public Tensor expand(int... shape) { return Movement.expand(this, shape); }

    /** Size-1 axes removed: the given ones (each must have size 1), or all if none are given. */
    public Tensor squeeze(int... axes) { return Movement.squeeze(this, axes); }

    /** A size-1 axis inserted at {@code axis} (in {@code [-rank-1, rank]}). */
    public Tensor unsqueeze(int axis) { return Movement.unsqueeze(this, axis); }

    /** All axes merged into one. */
    public Tensor flatten() { return Movement.flatten(this); }

    /** Axes {@code start..end} (inclusive) merged into one. */
    public Tensor flatten(int start, int end) { return Movement.flatten(this, start, end); }

    /** The order of elements reversed along the given axes. */
    public Tensor flip(int... axes) { return Movement.flip(this, axes); }

    /**
     * Elements {@code start, start+step, ...} before {@code end} along {@code axis}, Python slice
     * semantics: negative indices count from the end, bounds are clipped, a negative step walks
     * backwards (then {@code start} defaults to the last element when given as {@code Integer.MAX_VALUE}).
     */
    public Tensor slice(int axis, int start, int end, int step) { return Movement.slice(this, axis, start, end, step); }

    /** Elements {@code [start, end)} along an axis. */
    Tensor shrinkAxis(int a, int start, int end) { return Movement.shrinkAxis(this, a, start, end); }

    /** Padding modes of {@link #pad(int[][], PadMode, double)}. */
    public enum PadMode { CONSTANT, REFLECT, EDGE, CIRCULAR }

    /** Zero padding, {@code pads[i] = {before, after}} for each axis; negative amounts crop. */
    public Tensor pad(int[][] pads) { return Movement.pad(this, pads); }

    /**
     * Padding with a mode: {@code CONSTANT} fills with {@code value}, {@code REFLECT} mirrors without
     * repeating the edge, {@code EDGE} repeats the edge, {@code CIRCULAR} wraps around. Negative amounts
     * crop (any mode).
     */
    public Tensor pad(int[][] pads, PadMode mode, double value) { return Movement.pad(this, pads, mode, value); }

    /** Tensors joined along an existing axis; other axes must match. */
    public static Tensor cat(int axis, Tensor... tensors) { return Movement.cat(axis, tensors); }

    /** Tensors of one shape joined along a new axis. */
    public static Tensor stack(int axis, Tensor... tensors) { return Movement.stack(axis, tensors); }

    /** Pieces of {@code size} along {@code axis} (the last may be smaller). */
    public List<Tensor> split(int size, int axis) { return Movement.split(this, size, axis); }

    /** Pieces of the given sizes along {@code axis}; the sizes must add up to the axis size. */
    public List<Tensor> split(int[] sizes, int axis) { return Movement.split(this, sizes, axis); }

    /** {@code chunks} pieces of equal size (the last may be smaller), as {@code torch.chunk}. */
    public List<Tensor> chunk(int chunks, int axis) { return Movement.chunk(this, chunks, axis); }

    /** The tensor tiled {@code repeats[i]} times along each axis ({@code torch.repeat}; extra leading repeats add axes). */
    public Tensor repeat(int... repeats) { return Movement.repeat(this, repeats); }

    /** NumPy's tile: like {@link #repeat} but fewer repeats than axes apply to the trailing axes. */
    public Tensor tile(int... reps) { return Movement.tile(this, reps); }

    /** Elements on and above the {@code k}-th diagonal of the last two axes; others zero. */
    public Tensor triu(int k) { return Movement.triu(this, k); }

    /** Elements on and below the {@code k}-th diagonal of the last two axes; others zero. */
    public Tensor tril(int k) { return Movement.tril(this, k); }

    // =====================================================================================================
    // linear algebra (LinearAlgebra.java)

    /** Matrix product with NumPy semantics: batch axes broadcast, 1-D operands act as vectors. */
    public Tensor matmul(Tensor other) { return LinearAlgebra.matmul(this, other.to(device)); }

    /** {@code this @ weight^T + bias}; {@code weight} is (out, in), {@code bias} may be null. */
    public Tensor linear(Tensor weight, Tensor bias) { return LinearAlgebra.linear(this, weight.to(device), onThisDevice(bias)); }

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

    /** Standard normal f32 values by Box-Muller from two independent uniform streams of the seed (element i: the i-th of each). */
    public static Tensor randn(long seed, int... shape) { return RandomOps.randn(seed, shape); }

    /**
     * Standard normal values of f32 or f64 by Box-Muller, computed in that dtype from uniforms at its precision
     * (24 or 53 bits); the f32 values are {@link #randn(long, int...)}'s.
     *
     * @throws IllegalArgumentException for another dtype or a negative dimension
     */
    public static Tensor randn(long seed, DType dtype, int... shape) { return RandomOps.randn(seed, dtype, shape); }

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
    public static Tensor randint(long seed, long low, long high, DType dtype, int... shape) { return RandomOps.randint(seed, low, high, dtype, shape); }

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
    // Indices may have any integer dtype. They are lazy, so they are checked when the graph runs: an index
    // outside the axis fails the run with an IndexOutOfRangeException naming the method (or the name of an
    // enclosing withOpName), the index and the valid range, on every device. Negative indices wrap only where
    // a method says so; elsewhere they are out of range.

    /**
     * {@code build} run with {@code op} as the operation that the index checks of the gathers and scatters it builds
     * name when an index is out of range (an importer passes its node, e.g. {@code "Gather node 'g'"}; otherwise the
     * errors name the {@code Tensor} method). The checks run when the graph runs, so the name is kept in the graph.
     */
    public static <T> T withOpName(String op, java.util.function.Supplier<T> build) {
        java.util.Objects.requireNonNull(op, "op");
        return ScopedValue.where(Indexing.OP_NAME, op).call(build::get);
    }

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
     * > 0), holding 1 at the index and 0 elsewhere, as i64 ({@code torch.nn.functional.one_hot}). A value outside
     * {@code [0, numClasses)} fails the run, as PyTorch raises (the ONNX form, {@link #oneHot(int, int, Tensor)},
     * gives an all-off row instead, as ONNX defines).
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
        return Convolution.conv("conv", Convolution.spatialOf("conv", weight), this, weight.to(device), onThisDevice(bias),
                stride, padding, dilation, groups);
    }

    /** 1-D convolution of (N, Cin, L) with weight (Cout, Cin/groups, kL); see {@link #conv}. */
    public Tensor conv1d(Tensor weight, Tensor bias, int[] stride, int[] padding, int[] dilation, int groups) {
        return Convolution.conv("conv1d", 1, this, weight.to(device), onThisDevice(bias), stride, padding, dilation, groups);
    }

    /** 1-D convolution with stride 1, no padding, dilation 1, one group. */
    public Tensor conv1d(Tensor weight, Tensor bias) { return conv1d(weight, bias, null, null, null, 1); }

    /** 2-D convolution of (N, Cin, H, W) with weight (Cout, Cin/groups, kH, kW); see {@link #conv}. */
    public Tensor conv2d(Tensor weight, Tensor bias, int[] stride, int[] padding, int[] dilation, int groups) {
        return Convolution.conv("conv2d", 2, this, weight.to(device), onThisDevice(bias), stride, padding, dilation, groups);
    }

    /** 2-D convolution with stride 1, no padding, dilation 1, one group. */
    public Tensor conv2d(Tensor weight, Tensor bias) { return conv2d(weight, bias, null, null, null, 1); }

    /** 3-D convolution of (N, Cin, D, H, W) with weight (Cout, Cin/groups, kD, kH, kW); see {@link #conv}. */
    public Tensor conv3d(Tensor weight, Tensor bias, int[] stride, int[] padding, int[] dilation, int groups) {
        return Convolution.conv("conv3d", 3, this, weight.to(device), onThisDevice(bias), stride, padding, dilation, groups);
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
                onThisDevice(bias), stride, padding, outputPadding, dilation, groups);
    }

    /** 1-D transposed convolution of (N, Cin, L) with weight (Cin, Cout/groups, kL); see {@link #convTranspose}. */
    public Tensor convTranspose1d(Tensor weight, Tensor bias, int[] stride, int[] padding, int[] outputPadding, int[] dilation, int groups) {
        return Convolution.convTranspose("convTranspose1d", 1, this, weight.to(device), onThisDevice(bias), stride, padding,
                outputPadding, dilation, groups);
    }

    /** 1-D transposed convolution with stride 1, no padding, dilation 1, one group. */
    public Tensor convTranspose1d(Tensor weight, Tensor bias) { return convTranspose1d(weight, bias, null, null, null, null, 1); }

    /** 2-D transposed convolution of (N, Cin, H, W) with weight (Cin, Cout/groups, kH, kW); see {@link #convTranspose}. */
    public Tensor convTranspose2d(Tensor weight, Tensor bias, int[] stride, int[] padding, int[] outputPadding, int[] dilation, int groups) {
        return Convolution.convTranspose("convTranspose2d", 2, this, weight.to(device), onThisDevice(bias), stride, padding,
                outputPadding, dilation, groups);
    }

    /** 2-D transposed convolution with stride 1, no padding, dilation 1, one group. */
    public Tensor convTranspose2d(Tensor weight, Tensor bias) { return convTranspose2d(weight, bias, null, null, null, null, 1); }

    /** 3-D transposed convolution of (N, Cin, D, H, W) with weight (Cin, Cout/groups, kD, kH, kW); see {@link #convTranspose}. */
    public Tensor convTranspose3d(Tensor weight, Tensor bias, int[] stride, int[] padding, int[] outputPadding, int[] dilation, int groups) {
        return Convolution.convTranspose("convTranspose3d", 3, this, weight.to(device), onThisDevice(bias), stride, padding,
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
    public Tensor lpPool1d(double p, int[] kernel, int[] stride, boolean ceilMode) { return Pooling.lpPool("lpPool1d", 1, this, p, kernel, stride, ceilMode); }

    /** 2-D power-average pooling of (N, C, H, W) or (C, H, W); see {@link #lpPool1d}. */
    public Tensor lpPool2d(double p, int[] kernel, int[] stride, boolean ceilMode) { return Pooling.lpPool("lpPool2d", 2, this, p, kernel, stride, ceilMode); }

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
    public Tensor batchNormTraining(Tensor weight, Tensor bias, double eps) { return Normalization.batchNormTraining(this, weight, bias, eps); }

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
    public Tensor groupNorm(int groups, Tensor weight, Tensor bias, double eps) { return Normalization.groupNorm(this, groups, weight, bias, eps); }

    /**
     * Instance normalisation of an (N, C, spatial...) input: each (sample, channel) is normalised over
     * its spatial axes, then a per-channel {@code * weight + bias} (1-D of size C, nullable).
     */
    public Tensor instanceNorm(Tensor weight, Tensor bias, double eps) { return Normalization.instanceNorm(this, weight, bias, eps); }

    /**
     * RMS normalisation ({@code torch.nn.functional.rms_norm}): {@code x / sqrt(mean(x^2) + eps) * weight}
     * with the mean over the trailing {@code normalizedShape} axes; {@code weight} has that shape or is null.
     */
    public Tensor rmsNorm(int[] normalizedShape, Tensor weight, double eps) { return Normalization.rmsNorm(this, normalizedShape, weight, eps); }

    /**
     * Embedding lookup ({@code torch.nn.functional.embedding(indices, weight)}): row {@code indices[...]}
     * of {@code weight} (numEmbeddings, dim), giving shape {@code indices.shape + [dim]} and weight's dtype.
     * Indices must be integers; one outside {@code [0, numEmbeddings)} fails the run with an
     * {@link dev.kiln.runtime.IndexOutOfRangeException} (as PyTorch raises).
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
    public Tensor rotaryEmbedding(Tensor cos, Tensor sin, boolean interleaved) { return Attention.rotaryEmbedding(this, cos, sin, interleaved); }

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
    public Tensor interpolate(int[] size, String mode, boolean alignCorners) { return Interpolation.interpolate(this, size, mode, alignCorners); }

    // end of normalisation and attention section

    // =====================================================================================================
    // operators from ONNX's catalogue that any model format wants (bodies by topic: ElementIndexing,
    // Reductions, Activations, Movement, Normalization, Losses, Quantization, LinearAlgebra, Creation,
    // Signal, Resampling, PaddedPooling; what only ONNX needs lives in dev.kiln.onnxspec). Indices follow
    // the indexing section's rule: lazy, checked when the graph runs.

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
    public Tensor isinf(boolean detectPositive, boolean detectNegative) { return ElementwiseMath.isinf(this, detectPositive, detectNegative); }

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
        return Losses.nllLoss(this, target.to(device), onThisDevice(weight), reduction, ignoreIndex);
    }

    /**
     * ONNX SoftmaxCrossEntropyLoss of these (N, C, d...) scores: {@link #nllLoss} of {@code logSoftmax(1)}
     * (ONNX's optional second output is {@code logSoftmax(1)} itself).
     */
    public Tensor softmaxCrossEntropyLoss(Tensor labels, Tensor weight, String reduction, Integer ignoreIndex) {
        return Losses.softmaxCrossEntropyLoss(this, labels.to(device), onThisDevice(weight), reduction, ignoreIndex);
    }

    /**
     * ONNX QuantizeLinear: {@code saturate(round_half_even(x / scale) + zeroPoint)} in the dtype of
     * {@code zeroPoint}, u8 when it is null. A scalar scale (and zero point) applies to all elements, a
     * 1-D one of size {@code dim(axis)} per index of {@code axis} (ONNX default axis 1).
     */
    public Tensor quantizeLinear(Tensor scale, Tensor zeroPoint, int axis) {
        return Quantization.quantizeLinear(this, scale.to(device), onThisDevice(zeroPoint), axis);
    }

    /**
     * ONNX DequantizeLinear of this integer tensor: {@code (x - zeroPoint) * scale} in the scale's dtype;
     * {@code zeroPoint} (this tensor's dtype) may be null; scale and zero point per-axis as in
     * {@link #quantizeLinear}.
     */
    public Tensor dequantizeLinear(Tensor scale, Tensor zeroPoint, int axis) {
        return Quantization.dequantizeLinear(this, scale.to(device), onThisDevice(zeroPoint), axis);
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
    public static Tensor hannWindow(int size, boolean periodic, DType dtype) { return Signal.window("hannWindow", Signal.Window.HANN, size, periodic, dtype); }

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
        return Signal.stft(this, frameStep, onThisDevice(window), frameLength, onesided);
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

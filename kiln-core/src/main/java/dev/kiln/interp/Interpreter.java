package dev.kiln.interp;

import dev.kiln.types.DType;
import dev.kiln.types.Shape;
import dev.kiln.types.Variable;
import dev.kiln.ir.Alu;
import dev.kiln.ir.CustomFunction;
import dev.kiln.ir.IndexCheck;
import dev.kiln.ir.Ints;
import dev.kiln.ir.Op;
import dev.kiln.ir.ReduceArg;
import dev.kiln.ir.UOp;
import dev.kiln.runtime.Buffer;
import dev.kiln.runtime.IndexOutOfRangeException;

import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;

/**
 * Evaluates a tensor-level graph node by node with plain loops: every node becomes a dense array,
 * every movement op is an explicit index mapping. Slow on purpose: it is the oracle that every
 * compiled device is tested against, so each rule here should be checkable by reading it.
 */
final class Interpreter {
    private final String device;
    private final Map<Variable, Long> bindings;
    private final Map<UOp, Value> values = new IdentityHashMap<>();

    Interpreter(String device, Map<Variable, Long> bindings) {
        this.device = device;
        this.bindings = new java.util.HashMap<>(bindings); // a sized host step binds its extent here as it runs
    }

    /** Evaluates {@code root}, freeing each intermediate after its last use. */
    Value evaluate(UOp root) {
        List<UOp> order = root.toposort();
        Map<UOp, Integer> usesLeft = new HashMap<>();
        for (UOp u : order) for (UOp s : u.src()) usesLeft.merge(s, 1, Integer::sum);
        for (UOp u : order) {
            values.put(u, node(u));
            for (UOp s : u.src()) {
                if (usesLeft.merge(s, -1, Integer::sum) == 0) values.remove(s);
            }
        }
        return values.get(root);
    }

    private Value in(UOp u, int i) { return values.get(u.src(i)); }

    private Value node(UOp u) {
        Op op = u.op();
        if (op == Op.CHECK) return check(u, in(u, 0), in(u, 1));
        return switch (op.group()) {
            case UNARY -> unary(u, in(u, 0));
            case BINARY -> binary(u, in(u, 0), in(u, 1));
            case TERNARY -> ternary(u, in(u, 0), in(u, 1), in(u, 2));
            case REDUCE -> reduce(u, in(u, 0));
            case MOVEMENT -> movement(u, in(u, 0));
            case BUFFER -> switch (op) {
                case CONST -> scalar(u);
                case DEFINE_VAR -> {
                    if (!(u.arg() instanceof Variable v)) {
                        throw new UnsupportedOperationException("DEFINE_VAR of " + u.arg() + " is kernel-level; tensor graphs contain only Variables");
                    }
                    Value out = Value.allocate(u.dtype(), Shape.SCALAR);
                    out.ints[0] = Alu.wrap(u.dtype(), bound(v));
                    yield out;
                }
                case ARANGE -> {
                    Value out = Value.allocate(u.dtype(), u.shape());
                    for (int i = 0; i < out.ints.length; i++) out.ints[i] = i;
                    yield out;
                }
                case BUFFER -> Value.read(Buffer.of(u), u.shape());
                case COPY, CONTIGUOUS -> in(u, 0);
                case ASSIGN -> assign(u, in(u, 1));
                case CUSTOM -> custom(u);
                case LOAD -> throw new UnsupportedOperationException(op
                        + " is a kernel-level op; tensor graphs contain it only after scheduling");
                default -> throw new AssertionError(op);
            };
        };
    }

    private static Value scalar(UOp u) {
        Value v = Value.allocate(u.dtype(), Shape.SCALAR);
        if (u.dtype().isFloat()) v.floats[0] = u.constDouble();
        else v.ints[0] = u.constLong();
        return v;
    }

    // ---------------------------------------------------------------- elementwise

    private static Value unary(UOp u, Value x) {
        DType dt = u.dtype();
        Value out = Value.allocate(dt, u.shape());
        int n = out.size();
        for (int i = 0; i < n; i++) {
            switch (u.op()) {
                case CAST -> cast(x, i, out);
                case BITCAST -> {
                    long bits = Alu.bitsOf(x.dtype, x.ints != null ? x.ints[i] : 0, x.floats != null ? x.floats[i] : 0);
                    if (dt.isFloat()) out.floats[i] = Alu.floatFromBits(dt, bits);
                    else out.ints[i] = Alu.wrap(dt, bits);
                }
                default -> {
                    if (dt.isFloat()) out.floats[i] = Alu.unary(u.op(), dt, x.floats[i]);
                    else out.ints[i] = Alu.unary(u.op(), dt, x.ints[i]);
                }
            }
        }
        return out;
    }

    /**
     * The index values, each checked: the first out of range (in C order) stops the evaluation with the error. On
     * a symbolic axis only the positions within its size are checked, as compiled loops stop there (the rows
     * past it hold whatever the buffer held).
     */
    private Value check(UOp u, Value x, Value size) {
        IndexCheck c = u.indexCheckArg();
        int[] dims = u.shape().toArray();
        long[] active = new long[dims.length];
        for (int k = 0; k < dims.length; k++) active[k] = u.shape().variable(k) == null ? dims[k] : bound(u.shape().variable(k));
        int[] idx = new int[dims.length];
        for (int i = 0; i < x.ints.length; i++) {
            long n = size.ints[i];
            if (!c.admits(x.ints[i], n) && !outside(idx, active)) throw new IndexOutOfRangeException(c.op(), c.axis(), x.ints[i], c.min(n), n - 1);
            increment(idx, dims);
        }
        return x;
    }

    private static void cast(Value x, int i, Value out) {
        long xi = x.ints != null ? x.ints[i] : 0;
        double xf = x.floats != null ? x.floats[i] : 0;
        if (out.dtype.isFloat()) out.floats[i] = Alu.castToDouble(x.dtype, out.dtype, xi, xf);
        else out.ints[i] = Alu.castToLong(x.dtype, out.dtype, xi, xf);
    }

    private static Value binary(UOp u, Value a, Value b) {
        Value out = Value.allocate(u.dtype(), u.shape());
        DType in = a.dtype;
        int n = out.size();
        for (int i = 0; i < n; i++) {
            if (in.isFloat()) {
                double r = Alu.binary(u.op(), in, a.floats[i], b.floats[i]);
                if (u.op().isComparison()) out.ints[i] = (long) r;
                else out.floats[i] = r;
            } else {
                out.ints[i] = Alu.binary(u.op(), in, a.ints[i], b.ints[i]);
            }
        }
        return out;
    }

    private static Value ternary(UOp u, Value a, Value b, Value c) {
        Value out = Value.allocate(u.dtype(), u.shape());
        if (u.op() != Op.WHERE) throw new IllegalArgumentException("unknown ternary op " + u.op());
        int n = out.size();
        for (int i = 0; i < n; i++) out.copyFrom(a.ints[i] != 0 ? b : c, i, i);
        return out;
    }

    // ---------------------------------------------------------------- reduce

    private Value reduce(UOp u, Value x) {
        ReduceArg arg = u.reduceArg();
        DType dt = u.dtype();
        Value out = Value.allocate(dt, u.shape());
        boolean[] seen = new boolean[out.size()];
        int[] dims = x.shape.toArray();
        long[] outStrides = u.shape().strides();
        long[] active = new long[dims.length]; // a symbolic axis is reduced only up to its size
        for (int k = 0; k < dims.length; k++) {
            Variable v = u.src(0).shape().variable(k);
            active[k] = v == null || !arg.axes().contains(k) ? dims[k] : bound(v);
        }
        int[] idx = new int[dims.length];
        int n = x.size();
        for (int i = 0; i < n; i++) {
            if (outside(idx, active)) {
                increment(idx, dims);
                continue;
            }
            int o = 0;
            for (int k = 0; k < dims.length; k++) if (!arg.axes().contains(k)) o += (int) (idx[k] * outStrides[k]);
            if (!seen[o]) {
                seen[o] = true;
                out.copyFrom(x, i, o);
            } else if (dt.isFloat()) {
                out.floats[o] = combine(arg.kind(), dt, out.floats[o], x.floats[i]);
            } else {
                out.ints[o] = combine(arg.kind(), dt, out.ints[o], x.ints[i]);
            }
            increment(idx, dims);
        }
        for (int o = 0; o < seen.length; o++) { // reductions over zero elements give the identity
            if (seen[o]) continue;
            switch (arg.kind()) {
                case SUM -> { /* zero already */ }
                case PROD -> { if (dt.isFloat()) out.floats[o] = 1; else out.ints[o] = 1; }
                case MAX -> { if (dt.isFloat()) out.floats[o] = Double.NEGATIVE_INFINITY; else out.ints[o] = dt.minInt(); }
                case MIN -> { if (dt.isFloat()) out.floats[o] = Double.POSITIVE_INFINITY; else out.ints[o] = dt.isUnsigned() ? -1L >>> (64 - dt.bits()) : dt.maxInt(); }
            }
        }
        return out;
    }

    private static boolean outside(int[] idx, long[] active) {
        for (int k = 0; k < idx.length; k++) if (idx[k] >= active[k]) return true;
        return false;
    }

    /** The value of a bound variable, checked against its range. */
    private long bound(Variable v) {
        Long val = bindings.get(v);
        if (val == null) throw new IllegalArgumentException("variable '" + v.name() + "' is not bound");
        return v.bind(val).value();
    }

    private static double combine(ReduceArg.Kind k, DType dt, double acc, double v) {
        return switch (k) {
            case SUM -> Alu.binary(Op.ADD, dt, acc, v);
            case PROD -> Alu.binary(Op.MUL, dt, acc, v);
            case MAX -> Alu.binary(Op.MAX, dt, acc, v);
            case MIN -> Double.isNaN(acc) || Double.isNaN(v) ? Double.NaN : Math.min(acc, v);
        };
    }

    private static long combine(ReduceArg.Kind k, DType dt, long acc, long v) {
        return switch (k) {
            case SUM -> Alu.binary(Op.ADD, dt, acc, v);
            case PROD -> Alu.binary(Op.MUL, dt, acc, v);
            case MAX -> Alu.binary(Op.MAX, dt, acc, v);
            case MIN -> Alu.binary(Op.CMPLT, dt, v, acc) == 1 ? v : acc;
        };
    }

    private static void increment(int[] idx, int[] dims) {
        for (int k = dims.length - 1; k >= 0; k--) {
            if (++idx[k] < dims[k]) return;
            idx[k] = 0;
        }
    }

    // ---------------------------------------------------------------- movement

    private static Value movement(UOp u, Value x) {
        if (u.op() == Op.RESHAPE) return x.reshaped(u.shape()); // C order: the flat data is unchanged
        Value out = Value.allocate(x.dtype, u.shape());
        int[] outDims = u.shape().toArray();
        int[] inDims = x.shape.toArray();
        long[] inStrides = x.shape.strides();
        int[] o = new int[outDims.length];
        int[] j = new int[inDims.length];
        int n = out.size();
        if (u.op() == Op.EXPAND && x.size() == 1) {
            // one value everywhere (a constant filled to a shape: ONNX ConstantOfShape folds millions of weights so)
            out.fill(x);
            return out;
        }
        for (int i = 0; i < n; i++) {
            // j: the input position that output position o reads
            for (int k = 0; k < outDims.length; k++) {
                switch (u.op()) {
                    case PERMUTE -> j[u.intsArg().get(k)] = o[k];
                    case EXPAND -> j[k] = inDims[k] == 1 ? 0 : o[k];
                    case PAD -> j[k] = o[k] - u.intsArg().get(2 * k);
                    case SHRINK -> j[k] = o[k] + u.intsArg().get(2 * k);
                    case FLIP -> j[k] = u.intsArg().contains(k) ? inDims[k] - 1 - o[k] : o[k];
                    default -> throw new AssertionError(u.op());
                }
            }
            long src = 0;
            boolean inside = true;
            for (int k = 0; k < inDims.length; k++) {
                if (j[k] < 0 || j[k] >= inDims[k]) inside = false;
                src += j[k] * inStrides[k];
            }
            if (inside) out.copyFrom(x, (int) src, i); // in PAD's border the zero from allocate stays
            increment(o, outDims);
        }
        return out;
    }

    // ---------------------------------------------------------------- buffers

    private Value assign(UOp u, Value v) {
        UOp target = u.src(0);
        while (target.op() == Op.RESHAPE) target = target.src(0);
        if (target.op() != Op.BUFFER) {
            throw new IllegalArgumentException("ASSIGN target must be a realised buffer, got " + target.op());
        }
        v.write(Buffer.of(target).segment());
        return v;
    }

    private Value custom(UOp u) {
        CustomFunction f = u.functionArg();
        List<MemorySegment> inputs = new ArrayList<>();
        for (int i = 0; i < u.src().size(); i++) {
            Buffer b = toBuffer(device, in(u, i));
            inputs.add(b.segment().asReadOnly());
        }
        Buffer out = Buffer.allocateHeap(device, u.dtype(), u.shape().numel());
        if (f.body() instanceof CustomFunction.Sized sized) {
            Variable v = f.producedVariable();
            long extent = sized.applySized(List.copyOf(inputs), out.segment());
            if (extent < v.min() || extent > v.max()) throw new dev.kiln.runtime.ExtentOutOfRangeException(f.name(), v, extent);
            bindings.put(v, extent); // for every node after this one, as a plan binds it for every later step
        } else {
            f.body().apply(List.copyOf(inputs), out.segment());
        }
        return Value.read(out, u.shape());
    }

    static Buffer toBuffer(String device, Value v) {
        Buffer b = Buffer.allocateHeap(device, v.dtype, v.size());
        v.write(b.segment());
        return b;
    }
}

package dev.kiln.ir;

import dev.kiln.types.DType;
import dev.kiln.types.Shape;
import dev.kiln.types.Variable;

import java.lang.ref.ReferenceQueue;
import java.lang.ref.WeakReference;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.HashSet;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * One node of the IR: an operation, its result dtype, its sources and an argument.
 *
 * <p>UOps are immutable and interned: building the same (op, dtype, arg, sources) twice returns the
 * same object, so structural equality is identity and a node's hash is its structural hash. Every
 * node knows its shape (rank 0 for scalars and index math), checked when the node is built, so a
 * malformed graph fails where it is made rather than where it runs.
 */
public final class UOp {
    private final Op op;
    private final DType dtype;
    private final List<UOp> src;
    private final Object arg;
    private final Shape shape;
    private final int hash;
    private volatile long[] range; // [vmin, vmax], computed on first use

    private UOp(Op op, DType dtype, List<UOp> src, Object arg, Shape shape, int hash) {
        this.op = op;
        this.dtype = dtype;
        this.src = src;
        this.arg = arg;
        this.shape = shape;
        this.hash = hash;
    }

    public Op op() { return op; }

    public DType dtype() { return dtype; }

    /** The sources, in order (unmodifiable). */
    public List<UOp> src() { return src; }

    public UOp src(int i) { return src.get(i); }

    /** The argument: a movement shape or {@link Ints}, a {@link ReduceArg}, a constant, ... or null. */
    public Object arg() { return arg; }

    public Shape shape() { return shape; }

    @Override
    public int hashCode() { return hash; }

    // equals stays identity: interning makes identity structural equality.

    // ---------------------------------------------------------------- interning

    private record Key(Op op, DType dtype, Object arg, List<UOp> src) {}

    private static final class Ref extends WeakReference<UOp> {
        final Key key;

        Ref(UOp referent, Key key, ReferenceQueue<UOp> queue) {
            super(referent, queue);
            this.key = key;
        }
    }

    private static final ConcurrentHashMap<Key, Ref> INTERNED = new ConcurrentHashMap<>();
    private static final ReferenceQueue<UOp> COLLECTED = new ReferenceQueue<>();

    /**
     * The node (op, dtype, arg, sources), built and checked on first request and shared after.
     *
     * @throws IllegalArgumentException if the sources, dtype or arg do not fit the op
     */
    public static UOp of(Op op, DType dtype, Object arg, UOp... src) {
        return of(op, dtype, arg, List.of(src));
    }

    /** As {@link #of(Op, DType, Object, UOp...)}. */
    public static UOp of(Op op, DType dtype, Object arg, List<UOp> src) {
        Objects.requireNonNull(op);
        Objects.requireNonNull(dtype);
        List<UOp> sources = List.copyOf(src);
        drainCollected();
        Key key = new Key(op, dtype, arg, sources);
        Ref ref = INTERNED.get(key);
        UOp found = ref == null ? null : ref.get();
        if (found != null) return found;
        Shape shape = ShapeInference.infer(op, dtype, arg, sources);
        int hash = Objects.hash(op.ordinal(), dtype.ordinal(), arg, sources.stream().mapToInt(UOp::hashCode).boxed().toList());
        UOp fresh = new UOp(op, dtype, sources, arg, shape, hash);
        while (true) {
            Ref mine = new Ref(fresh, key, COLLECTED);
            Ref prior = INTERNED.putIfAbsent(key, mine);
            if (prior == null) return fresh;
            UOp other = prior.get();
            if (other != null) return other;
            INTERNED.remove(key, prior); // a collected node still holds the slot
        }
    }

    private static void drainCollected() {
        for (var r = COLLECTED.poll(); r != null; r = COLLECTED.poll()) {
            Ref ref = (Ref) r;
            INTERNED.remove(ref.key, ref);
        }
    }

    /** This node with other sources (same op, dtype and arg). */
    public UOp withSrc(List<UOp> newSrc) {
        return newSrc.equals(src) ? this : of(op, dtype, arg, newSrc);
    }

    // ---------------------------------------------------------------- constructors of common nodes

    /** A scalar constant of {@code dtype}; the value is converted to that dtype first. */
    public static UOp constant(DType dtype, Number value) {
        return of(Op.CONST, dtype, Alu.normalizeConst(dtype, value));
    }

    /** An i64 constant (the dtype of index math). */
    public static UOp index(long value) { return constant(DType.I64, value); }

    /** {@code [0, 1, ..., shape.dim(0) - 1]} as {@code dtype} (i32 or i64); see {@link Op#ARANGE}. */
    public static UOp arange(DType dtype, Shape shape) { return of(Op.ARANGE, dtype, shape); }

    /** The i64 node of a symbolic variable. */
    public static UOp variable(Variable v) { return of(Op.DEFINE_VAR, DType.I64, v); }

    /** A realised buffer as a 1-D node of its element count. */
    public static UOp buffer(BufferRef b) { return of(Op.BUFFER, b.dtype(), b); }

    public boolean isConst() { return op == Op.CONST; }

    /** The constant's value as a long (integers and bools) — only for {@link Op#CONST} nodes. */
    public long constLong() {
        if (op != Op.CONST) throw new IllegalStateException("not a constant: " + this);
        return arg instanceof Long l ? l : (long) (double) (Double) arg;
    }

    /** The constant's value as a double — only for {@link Op#CONST} nodes. */
    public double constDouble() {
        if (op != Op.CONST) throw new IllegalStateException("not a constant: " + this);
        return arg instanceof Long l ? l : (Double) arg;
    }

    // ---------------------------------------------------------------- typed arguments
    // An op fixes its arg's type (Op's Javadoc) and ShapeInference checks it when the node is built; these
    // accessors name that type, so passes neither cast nor guess.

    /** The axes or pairs of a PERMUTE, PAD, SHRINK or FLIP. */
    public Ints intsArg() { return argOf(Ints.class, "Ints"); }

    /** The reduction of a REDUCE. */
    public ReduceArg reduceArg() { return argOf(ReduceArg.class, "ReduceArg"); }

    /** The buffer of a BUFFER node. */
    public BufferRef bufferArg() { return argOf(BufferRef.class, "BufferRef"); }

    /** The symbolic integer of a tensor- or loop-level DEFINE_VAR. */
    public Variable variableArg() { return argOf(Variable.class, "Variable"); }

    /** The parameter or register of a kernel-level DEFINE_VAR. */
    public Slot slotArg() { return argOf(Slot.class, "Slot"); }

    /** The host function of a CUSTOM node. */
    public CustomFunction functionArg() { return argOf(CustomFunction.class, "CustomFunction"); }

    /** The valid range and names of a CHECK. */
    public IndexCheck indexCheckArg() { return argOf(IndexCheck.class, "IndexCheck"); }

    /** The target device name of a COPY. */
    public String deviceArg() {
        if (op != Op.COPY) throw new IllegalStateException("not a COPY: " + this);
        return argOf(String.class, "device name");
    }

    private <T> T argOf(Class<T> type, String what) {
        if (!type.isInstance(arg)) throw new IllegalStateException(op + " node has no " + what + " argument: " + this);
        return type.cast(arg);
    }

    // ---------------------------------------------------------------- symbolic integer arithmetic

    private UOp bin(Op o, UOp other) {
        DType dt = o.isComparison() ? DType.BOOL : dtype;
        return of(o, dt, null, this, other);
    }

    public UOp add(UOp o) { return bin(Op.ADD, o); }

    public UOp add(long c) { return add(constant(dtype, c)); }

    public UOp sub(UOp o) { return add(o.neg()); }

    public UOp mul(UOp o) { return bin(Op.MUL, o); }

    public UOp mul(long c) { return mul(constant(dtype, c)); }

    public UOp neg() { return of(Op.NEG, dtype, null, this); }

    /** Division rounding toward negative infinity. */
    public UOp floorDiv(UOp o) { return bin(Op.FLOORDIV, o); }

    public UOp floorDiv(long c) { return floorDiv(constant(dtype, c)); }

    /** Remainder with the divisor's sign. */
    public UOp floorMod(UOp o) { return bin(Op.FLOORMOD, o); }

    public UOp floorMod(long c) { return floorMod(constant(dtype, c)); }

    /** Division truncating toward zero. */
    public UOp div(UOp o) { return bin(Op.DIV, o); }

    public UOp div(long c) { return div(constant(dtype, c)); }

    /** Remainder with the dividend's sign. */
    public UOp mod(UOp o) { return bin(Op.MOD, o); }

    public UOp mod(long c) { return mod(constant(dtype, c)); }

    public UOp max(UOp o) { return bin(Op.MAX, o); }

    public UOp min(UOp o) { return neg().max(o.neg()).neg(); }

    public UOp lt(UOp o) { return bin(Op.CMPLT, o); }

    public UOp where(UOp ifTrue, UOp ifFalse) { return of(Op.WHERE, ifTrue.dtype, null, this, ifTrue, ifFalse); }

    // ---------------------------------------------------------------- range analysis

    /** The smallest value this integer or boolean scalar can take, over all variable values. */
    public long vmin() { return range()[0]; }

    /** The largest value this integer or boolean scalar can take, over all variable values. */
    public long vmax() { return range()[1]; }

    private long[] range() {
        long[] r = range;
        if (r == null) range = r = RangeAnalysis.bounds(this);
        return r;
    }

    // ---------------------------------------------------------------- traversal

    /** All nodes reachable from this one, sources before users (this node last). */
    public List<UOp> toposort() { return toposort(Set.of()); }

    /**
     * The nodes reachable from this one without passing through a node of {@code boundary}, sources
     * before users; boundary nodes are not listed. A kernel's nodes are its output's nodes within its
     * inputs: walking past them would visit the whole graph upstream, once per kernel.
     */
    public List<UOp> toposort(Set<UOp> boundary) {
        List<UOp> order = new ArrayList<>();
        Set<UOp> done = Collections.newSetFromMap(new IdentityHashMap<>());
        if (boundary.contains(this)) return order;
        ArrayDeque<UOp> stack = new ArrayDeque<>();
        ArrayDeque<Boolean> expanded = new ArrayDeque<>();
        stack.push(this);
        expanded.push(false);
        while (!stack.isEmpty()) {
            UOp u = stack.pop();
            boolean ready = expanded.pop();
            if (done.contains(u)) continue;
            if (ready) {
                done.add(u);
                order.add(u);
                continue;
            }
            stack.push(u);
            expanded.push(true);
            for (int i = u.src.size() - 1; i >= 0; i--) {
                if (!done.contains(u.src.get(i)) && !boundary.contains(u.src.get(i))) {
                    stack.push(u.src.get(i));
                    expanded.push(false);
                }
            }
        }
        return order;
    }

    /** The distinct variables this node depends on. */
    public Set<Variable> variables() {
        Set<Variable> vars = new HashSet<>();
        for (UOp u : toposort()) if (u.op == Op.DEFINE_VAR && u.arg instanceof Variable v) vars.add(v);
        return vars;
    }

    @Override
    public String toString() {
        if (op == Op.CONST) return String.valueOf(arg);
        if (op == Op.DEFINE_VAR) return arg instanceof Variable v ? v.name() : ((Slot) arg).name();
        if (src.isEmpty() || toposort().size() > 64) {
            return op + "<" + dtype + (arg == null ? "" : ", " + argString()) + ">" + shape;
        }
        StringBuilder sb = new StringBuilder(op.name()).append('(');
        for (int i = 0; i < src.size(); i++) sb.append(i > 0 ? ", " : "").append(src.get(i));
        if (arg != null) sb.append(", ").append(argString());
        return sb.append(')').toString();
    }

    private String argString() {
        return arg instanceof Object[] a ? Arrays.toString(a) : String.valueOf(arg);
    }
}

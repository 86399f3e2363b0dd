package dev.kiln.codegen;

import dev.kiln.types.DType;
import dev.kiln.types.Shape;
import dev.kiln.types.Variable;
import dev.kiln.ir.IndexCheck;
import dev.kiln.ir.Ints;
import dev.kiln.ir.Op;
import dev.kiln.ir.ReduceArg;
import dev.kiln.ir.Slot;
import dev.kiln.ir.UOp;

import java.nio.BufferUnderflowException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;

/**
 * A compact binary form of kernel IR, for caches that outlive the process: the structure of a
 * scheduled kernel (a cache key) and whole {@link KernelProgram}s (a cache value).
 *
 * <p>UOps are written as a table in topological order, each node once: op, dtype, argument and the
 * table indices of its sources. Decoding rebuilds the nodes with {@link UOp#of}, so they are interned
 * (identical to the nodes of an equal program built in this process) and checked like any new node.
 * Enums are written by ordinal: the format is only read by the same Kiln build that wrote it (caches
 * key their entries by a fingerprint of Kiln's classes), and a decoder never trusts its input: malformed
 * bytes are an {@link IllegalArgumentException}, never a wrong program.
 *
 * <p>Arguments: null, {@link Long}, {@link Double} (its raw bits: NaN payloads and -0.0 survive),
 * {@link Shape}, {@link Ints}, {@link ReduceArg}, {@link Variable}, {@link Slot} and {@link IndexCheck} — every
 * argument a kernel's nodes can hold. An index check is written without the names a tensor-level one holds (its
 * negative-index rule and site only): a kernel's structure and program never depend on what an operation is
 * called. Anything else (a realised buffer, a device name, a host function) has no place inside a kernel, and
 * encoding it is an {@link IllegalStateException}.
 */
public final class ProgramCodec {
    /** Bump when the layout changes. */
    static final int VERSION = 4; // 2: symbolic dimensions of shapes, loop limits; 3: index checks; 4: loop limit steps, store gates

    private static final int ARG_NULL = 0, ARG_LONG = 1, ARG_DOUBLE = 2, ARG_SHAPE = 3, ARG_INTS = 4, ARG_REDUCE = 5,
            ARG_VARIABLE = 6, ARG_SLOT = 7, ARG_INDEX_CHECK = 8;
    private static final int STMT_BLOCK = 0, STMT_LOOP = 1, STMT_DEFINE = 2, STMT_ACCUMULATE = 3, STMT_STORE = 4;
    private static final int OPT_UPCAST = 0, OPT_UNROLL = 1, OPT_TILE = 2, OPT_GROUP = 3, OPT_THREAD = 4, OPT_UPCAST_REMAINDER = 5, OPT_SPLIT = 6, OPT_UPCAST_OVERLAP = 7;

    private static final Op[] OPS = Op.values();
    private static final DType[] DTYPES = DType.values();
    private static final ReduceArg.Kind[] REDUCE_KINDS = ReduceArg.Kind.values();
    private static final Slot.Kind[] SLOT_KINDS = Slot.Kind.values();
    private static final Stmt.LoopKind[] LOOP_KINDS = Stmt.LoopKind.values();

    private ProgramCodec() {}

    /**
     * The structure of a scheduled kernel: the nodes of its output's graph down to (not into) its
     * inputs, each input written as a placeholder of its position, dtype and shape. Kernels that compute
     * the same thing from inputs of the same dtypes and shapes (the same layer with other weights) encode
     * equally; any difference of op, dtype, argument or edge shows. Runs once per kernel of every plan,
     * so it builds no nodes: it only walks them.
     */
    public static byte[] encodeKernel(UOp output, List<UOp> inputs) {
        Writer w = new Writer();
        w.out.writeInt(VERSION);
        w.out.writeInt(inputs.size());
        for (UOp in : inputs) { // table entries 0..n-1
            w.index.put(in, w.index.size());
            w.out.writeByte(in.dtype().ordinal());
            w.shape(in.shape());
        }
        w.nodes(List.of(output));
        w.out.writeInt(w.ref(output));
        return w.bytes();
    }

    /** The whole program: name, parameters, sizes, variables, optimisation actions and statements. */
    public static byte[] encode(KernelProgram p) {
        Writer w = new Writer();
        w.out.writeInt(VERSION);
        w.out.writeString(p.name());
        w.out.writeInt(p.params().size());
        for (Slot s : p.params()) w.slot(s);
        w.out.writeInt(p.sizes().size());
        for (long s : p.sizes()) w.out.writeLong(s);
        w.out.writeInt(p.variables().size());
        for (Variable v : p.variables()) w.variable(v);
        w.out.writeInt(p.opts().size());
        for (Opt o : p.opts()) {
            w.out.writeByte(switch (o) {
                case Opt.Upcast u -> OPT_UPCAST;
                case Opt.Unroll u -> OPT_UNROLL;
                case Opt.Tile t -> OPT_TILE;
                case Opt.Group g -> OPT_GROUP;
                case Opt.Thread t -> OPT_THREAD;
                case Opt.UpcastRemainder u -> OPT_UPCAST_REMAINDER;
                case Opt.Split sp -> OPT_SPLIT;
                case Opt.UpcastOverlap u -> OPT_UPCAST_OVERLAP;
            });
            w.out.writeInt(o.axis());
            w.out.writeInt(o.amount());
        }
        List<UOp> expressions = new ArrayList<>();
        Optimizer.walk(p.body(), s -> expressions.addAll(Optimizer.expressions(s)));
        w.nodes(expressions);
        w.stmt(p.body());
        return w.bytes();
    }

    /**
     * The program {@link #encode} wrote.
     *
     * @throws IllegalArgumentException if {@code bytes} are not a whole, valid encoding of this version
     */
    public static KernelProgram decode(byte[] bytes) {
        Reader r = new Reader(bytes);
        try {
            r.version();
            String name = r.string();
            int n = r.count();
            List<Slot> params = new ArrayList<>(n);
            for (int i = 0; i < n; i++) params.add(r.slot());
            n = r.count();
            List<Long> sizes = new ArrayList<>(n);
            for (int i = 0; i < n; i++) sizes.add(r.in.getLong());
            n = r.count();
            List<Variable> variables = new ArrayList<>(n);
            for (int i = 0; i < n; i++) variables.add(r.variable());
            n = r.count();
            List<Opt> opts = new ArrayList<>(n);
            for (int i = 0; i < n; i++) {
                int tag = r.in.get(), axis = r.in.getInt(), amount = r.in.getInt();
                opts.add(switch (tag) {
                    case OPT_UPCAST -> new Opt.Upcast(axis, amount);
                    case OPT_UNROLL -> new Opt.Unroll(axis, amount);
                    case OPT_TILE -> new Opt.Tile(axis, amount);
                    case OPT_GROUP -> new Opt.Group(axis, amount);
                    case OPT_THREAD -> new Opt.Thread(axis, amount);
                    case OPT_UPCAST_REMAINDER -> new Opt.UpcastRemainder(axis, amount);
                    case OPT_SPLIT -> new Opt.Split(axis, amount);
                    case OPT_UPCAST_OVERLAP -> new Opt.UpcastOverlap(axis, amount);
                    default -> throw r.bad("unknown optimisation action " + tag);
                });
            }
            r.nodes();
            if (!(r.stmt() instanceof Stmt.Block body)) throw r.bad("the body is not a block");
            if (r.in.hasRemaining()) throw r.bad(r.in.remaining() + " bytes after the program");
            return new KernelProgram(name, params, sizes, variables, body, opts);
        } catch (BufferUnderflowException e) {
            throw r.bad("truncated");
        } catch (IllegalArgumentException e) {
            throw e; // the reader's own complaint, or a node check's: both say what is wrong
        } catch (RuntimeException e) {
            throw new IllegalArgumentException(Reader.PREFIX + "invalid content: " + e, e);
        }
    }

    // ---------------------------------------------------------------- writing

    private static final class Writer {
        final Out out = new Out();
        final Map<UOp, Integer> index = new IdentityHashMap<>();

        /** Writes the table of every node reachable from {@code roots} that is not in it yet. */
        void nodes(List<UOp> roots) {
            List<UOp> order = new ArrayList<>();
            for (UOp root : roots) {
                for (UOp u : root.toposort(index.keySet())) {
                    index.put(u, index.size());
                    order.add(u);
                }
            }
            out.writeInt(order.size());
            for (UOp u : order) {
                out.writeByte(u.op().ordinal());
                out.writeByte(u.dtype().ordinal());
                arg(u.arg(), u);
                out.writeInt(u.src().size());
                for (UOp s : u.src()) out.writeInt(ref(s));
            }
        }

        int ref(UOp u) {
            Integer i = index.get(u);
            if (i == null) throw new IllegalStateException("program codec: node " + u.op() + " was not written");
            return i;
        }

        // an instanceof chain rather than a pattern switch: it runs for every node of every kernel, mostly
        // before the JIT has compiled anything, where a type switch's dispatch costs several times more
        void arg(Object arg, UOp owner) {
            if (arg == null) {
                out.writeByte(ARG_NULL);
            } else if (arg instanceof Long l) {
                out.writeByte(ARG_LONG);
                out.writeLong(l);
            } else if (arg instanceof Shape s) {
                out.writeByte(ARG_SHAPE);
                shape(s);
            } else if (arg instanceof Ints i) {
                out.writeByte(ARG_INTS);
                ints(i.toArray());
            } else if (arg instanceof Double d) {
                out.writeByte(ARG_DOUBLE);
                out.writeLong(Double.doubleToRawLongBits(d));
            } else if (arg instanceof ReduceArg r) {
                out.writeByte(ARG_REDUCE);
                out.writeByte(r.kind().ordinal());
                ints(r.axes().toArray());
            } else if (arg instanceof Slot s) {
                out.writeByte(ARG_SLOT);
                slot(s);
            } else if (arg instanceof Variable v) {
                out.writeByte(ARG_VARIABLE);
                variable(v);
            } else if (arg instanceof IndexCheck c) {
                out.writeByte(ARG_INDEX_CHECK);
                out.writeByte(c.negativeWraps() ? 1 : 0);
                out.writeInt(c.site());
            } else {
                throw new IllegalStateException("program codec: a " + owner.op() + " node inside a kernel holds a "
                        + arg.getClass().getName() + " (" + arg + "), which kernels never hold; teach ProgramCodec that argument");
            }
        }

        /** The sizes, then per axis whether it is symbolic and its variable: a symbolic axis loops differently. */
        void shape(Shape s) {
            ints(s.toArray());
            for (int a = 0; a < s.rank(); a++) optionalVariable(s.variable(a));
        }

        void optionalVariable(Variable v) {
            out.writeByte(v == null ? 0 : 1);
            if (v != null) variable(v);
        }

        void ints(int[] values) {
            out.writeInt(values.length);
            for (int v : values) out.writeInt(v);
        }

        void variable(Variable v) {
            out.writeString(v.name());
            out.writeLong(v.min());
            out.writeLong(v.max());
        }

        void slot(Slot s) {
            out.writeByte(s.kind().ordinal());
            out.writeInt(s.index());
            out.writeByte(s.dtype().ordinal());
        }

        void stmt(Stmt s) {
            switch (s) {
                case Stmt.Block b -> {
                    out.writeByte(STMT_BLOCK);
                    out.writeInt(b.body().size());
                    for (Stmt x : b.body()) stmt(x);
                }
                case Stmt.Loop l -> {
                    out.writeByte(STMT_LOOP);
                    variable(l.index());
                    out.writeByte(l.kind().ordinal());
                    optionalVariable(l.limit());
                    out.writeInt(l.limitStep());
                    stmt(l.body());
                }
                case Stmt.Define d -> {
                    out.writeByte(STMT_DEFINE);
                    slot(d.register());
                    out.writeInt(ref(d.init()));
                }
                case Stmt.Accumulate a -> {
                    out.writeByte(STMT_ACCUMULATE);
                    slot(a.register());
                    out.writeByte(a.kind().ordinal());
                    out.writeInt(ref(a.value()));
                }
                case Stmt.Store st -> {
                    out.writeByte(STMT_STORE);
                    slot(st.param());
                    out.writeInt(ref(st.index()));
                    out.writeInt(ref(st.value()));
                    out.writeInt(st.gate() == null ? -1 : ref(st.gate()));
                }
            }
        }

        byte[] bytes() { return out.toByteArray(); }
    }

    /** A growable big-endian byte buffer (what {@link ByteBuffer} reads back). */
    private static final class Out {
        private byte[] buf = new byte[1024];
        private int size;

        private void ensure(int more) {
            if (size + more > buf.length) buf = Arrays.copyOf(buf, Math.max(buf.length * 2, size + more));
        }

        void writeByte(int v) {
            ensure(1);
            buf[size++] = (byte) v;
        }

        void writeInt(int v) {
            ensure(4);
            for (int shift = 24; shift >= 0; shift -= 8) buf[size++] = (byte) (v >>> shift);
        }

        void writeLong(long v) {
            ensure(8);
            for (int shift = 56; shift >= 0; shift -= 8) buf[size++] = (byte) (v >>> shift);
        }

        void writeString(String s) {
            byte[] b = s.getBytes(StandardCharsets.UTF_8);
            writeInt(b.length);
            ensure(b.length);
            System.arraycopy(b, 0, buf, size, b.length);
            size += b.length;
        }

        byte[] toByteArray() { return Arrays.copyOf(buf, size); }
    }

    // ---------------------------------------------------------------- reading

    private static final class Reader {
        static final String PREFIX = "program codec: ";
        final ByteBuffer in;
        final List<UOp> nodes = new ArrayList<>();

        Reader(byte[] bytes) { this.in = ByteBuffer.wrap(bytes); }

        IllegalArgumentException bad(String why) {
            return new IllegalArgumentException(PREFIX + why + " (at byte " + in.position() + " of " + in.limit() + ")");
        }

        void version() {
            int v = in.getInt();
            if (v != VERSION) throw bad("version " + v + ", expected " + VERSION);
        }

        /** A non-negative count that cannot exceed the bytes left (every element takes at least one). */
        int count() {
            int n = in.getInt();
            if (n < 0 || n > in.remaining()) throw bad("count " + n + " with " + in.remaining() + " bytes left");
            return n;
        }

        <T> T pick(T[] values, int ordinal, String what) {
            if (ordinal < 0 || ordinal >= values.length) throw bad(what + " " + ordinal + " out of range");
            return values[ordinal];
        }

        String string() {
            int n = count();
            byte[] b = new byte[n];
            in.get(b);
            return new String(b, StandardCharsets.UTF_8);
        }

        int[] ints() {
            int n = count();
            int[] v = new int[n];
            for (int i = 0; i < n; i++) v[i] = in.getInt();
            return v;
        }

        Variable variable() { return new Variable(string(), in.getLong(), in.getLong()); }

        Variable optionalVariable() {
            int tag = in.get();
            if (tag != 0 && tag != 1) throw bad("optional variable tag " + tag);
            return tag == 1 ? variable() : null;
        }

        Shape shape() {
            int[] dims = ints();
            Object[] axes = new Object[dims.length];
            for (int a = 0; a < dims.length; a++) {
                Variable v = optionalVariable();
                if (v != null && v.max() != dims[a]) throw bad("symbolic axis " + a + " of size " + dims[a] + " has variable maximum " + v.max());
                axes[a] = v != null ? v : (Object) dims[a];
            }
            return Shape.symbolic(axes);
        }

        Slot slot() {
            Slot.Kind kind = pick(SLOT_KINDS, in.get(), "slot kind");
            int index = in.getInt();
            return new Slot(kind, index, pick(DTYPES, in.get(), "dtype"));
        }

        void nodes() {
            int n = count();
            for (int i = 0; i < n; i++) {
                Op op = pick(OPS, in.get(), "op");
                DType dtype = pick(DTYPES, in.get(), "dtype");
                Object arg = arg();
                int k = count();
                List<UOp> src = new ArrayList<>(k);
                for (int j = 0; j < k; j++) src.add(ref());
                nodes.add(UOp.of(op, dtype, arg, src));
            }
        }

        UOp ref() { return refAt(in.getInt()); }

        UOp refAt(int i) {
            if (i < 0 || i >= nodes.size()) throw bad("node reference " + i + " of " + nodes.size());
            return nodes.get(i);
        }

        Object arg() {
            int tag = in.get();
            return switch (tag) {
                case ARG_NULL -> null;
                case ARG_LONG -> in.getLong();
                case ARG_DOUBLE -> Double.longBitsToDouble(in.getLong());
                case ARG_SHAPE -> shape();
                case ARG_INTS -> Ints.of(ints());
                case ARG_REDUCE -> new ReduceArg(pick(REDUCE_KINDS, in.get(), "reduction"), Ints.of(ints()));
                case ARG_VARIABLE -> variable();
                case ARG_SLOT -> slot();
                case ARG_INDEX_CHECK -> {
                    int wraps = in.get();
                    if (wraps != 0 && wraps != 1) throw bad("index check flag " + wraps);
                    yield new IndexCheck("", -1, wraps == 1, in.getInt());
                }
                default -> throw bad("unknown argument tag " + tag);
            };
        }

        Stmt stmt() {
            int tag = in.get();
            return switch (tag) {
                case STMT_BLOCK -> {
                    int n = count();
                    List<Stmt> body = new ArrayList<>(n);
                    for (int i = 0; i < n; i++) body.add(stmt());
                    yield new Stmt.Block(body);
                }
                case STMT_LOOP -> {
                    Variable index = variable();
                    Stmt.LoopKind kind = pick(LOOP_KINDS, in.get(), "loop kind");
                    Variable limit = optionalVariable();
                    int step = in.getInt();
                    if (step < 1 || limit == null && step != 1) throw bad("loop limit step " + step);
                    if (limit != null && Math.ceilDiv(limit.max(), step) > index.max() + 1) throw bad("loop limit past the loop's extent");
                    if (!(stmt() instanceof Stmt.Block body)) throw bad("a loop body is not a block");
                    yield new Stmt.Loop(index, kind, body, limit, step);
                }
                case STMT_DEFINE -> new Stmt.Define(slot(), ref());
                case STMT_ACCUMULATE -> new Stmt.Accumulate(slot(), pick(REDUCE_KINDS, in.get(), "reduction"), ref());
                case STMT_STORE -> {
                    Slot param = slot();
                    UOp index = ref(), value = ref();
                    int gate = in.getInt();
                    UOp g = gate == -1 ? null : refAt(gate);
                    if (g != null && !g.dtype().isBool()) throw bad("a store's gate is " + g.dtype());
                    yield new Stmt.Store(param, index, value, g);
                }
                default -> throw bad("unknown statement tag " + tag);
            };
        }
    }
}

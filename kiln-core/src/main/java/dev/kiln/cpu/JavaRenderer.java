package dev.kiln.cpu;

import dev.kiln.codegen.Heuristics;
import dev.kiln.codegen.KernelProgram;
import dev.kiln.codegen.Optimizer;
import dev.kiln.codegen.Stmt;
import dev.kiln.ir.Op;
import dev.kiln.ir.Slot;
import dev.kiln.ir.UOp;
import dev.kiln.types.DType;
import dev.kiln.types.Variable;

import jdk.incubator.vector.FloatVector;

import javax.lang.model.SourceVersion;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.OptionalLong;
import java.util.Set;
import java.util.TreeMap;

/**
 * Renders a {@link KernelProgram} as the source of a Java class whose
 * {@code public static void run(MemorySegment[] bufs, long[] vars, long start, long end)} executes the
 * program with exactly the semantics of {@link dev.kiln.ir.Alu} (the reference the
 * {@link dev.kiln.codegen.KernelEvaluator} and the INTERP device share).
 *
 * <p>{@code bufs} are the parameters (output first), {@code vars} the values of
 * {@link KernelProgram#variables()} in order. When the body is one output loop, only its iterations
 * {@code [start, end)} run, so a kernel can be split across workers; otherwise the kernel has the single
 * iteration 0 (see {@link KernelProgram#outerExtent}).
 *
 * <p>Statements, expressions and common subexpressions are the C family's
 * ({@link dev.kiln.codegen.render.CFamilyRenderer}); Java's scalar types and spellings are
 * {@link JavaScalarRenderer}'s; this class adds the vector lanes and the class around the body.
 *
 * <p>Representation: bool is {@code boolean}; i8/u8/i16/u16/i32 are {@code int} and u32/i64/u64
 * {@code long}, normalised like {@link dev.kiln.ir.Alu#wrap} (u64 as raw bits); i64 index math is
 * {@code int} where range analysis proves every intermediate fits. f16, bf16 and f32 are {@code float}
 * (f16 and bf16 values are exact in float and every result is rounded back); f64 is {@code double}.
 * Float ops whose result in float equals Alu's compute-in-double-then-round (+, *, /, sqrt, fmod)
 * run in float, the rest (floor division, floor modulo, exp2, log2, sin) in double, then round. Memory
 * offsets are long: their linear index math is widened term by term (see {@link #index}).
 *
 * <p>Loops: UNROLL loops and UPCAST loops are expanded first ({@link LoopExpansion}); of each nest of
 * UPCAST loops at most one is left, and it is rendered as <b>vector lanes</b> (jdk.incubator.vector, the
 * species' size baked into the class): its body once, each value that differs between lanes a vector
 * of its dtype (f32, f64, i32, i64 with int lanes where range analysis allows, bool a mask), the rest
 * scalars broadcast where they meet vectors. Registers whose value differs between lanes become vector
 * registers. Every vector operation is exactly the scalar one per lane: +, -, *, /, sqrt, negation,
 * max and min (Java's Math semantics: NaN wins, -0.0 is below 0.0), comparisons, blends, wrapping
 * integer arithmetic and bitwise ops, and only the conversions Java and Alu agree on (no FMA: a*b+c
 * rounds twice). Loads and stores contiguous in the lanes are vector accesses (masked where a gate
 * differs between lanes: masked-off lanes are 0 and never read), other ones lane by lane; every other op
 * (transcendentals, integer division, shifts, float to int) runs lane by lane through arrays with the
 * scalar code, so the results are always those of the scalar rendering, bit for bit. A nest whose
 * values have no vector form (other dtypes, lanes wider than the machine's vectors) is interleaved as
 * scalar copies. Reductions stay sequential per output element: lanes are across outputs.
 *
 * <p>The generated code only uses JDK types, so compiling it needs no Kiln class. Elements are read and
 * written with {@code MemorySegment.get/set} on slices of exactly the parameter's size, so an index out
 * of range is an {@link IndexOutOfBoundsException}, never a stray access. Values are computed eagerly in
 * program order (the two branches of a {@code WHERE} both): that is safe because the lowering gates
 * every load whose index may be out of range.
 */
public final class JavaRenderer extends JavaScalarRenderer {
    /** Vector sizes in bytes the renderer uses: 128, 256 and 512 bits, up to the machine's preferred size. */
    private static final Set<Integer> VECTOR_SIZES = Set.of(16, 32, 64);

    private final int vectorBytes;
    /** The estimated bytecode the loop expansions may grow the kernel to. */
    private final long expansionBudget;
    /** Vector species constants the class declares, by name. */
    private final Map<String, String> species = new TreeMap<>();
    /** Per-lane arrays declared once at the start of {@code run} ({@link #hoist}). */
    private final List<String> hoisted = new ArrayList<>();
    /** The UPCAST loop being rendered as vector lanes, or null. */
    private Lanes lanes;

    private JavaRenderer(KernelProgram program, int vectorBytes, long expansionBudget) {
        super(program);
        this.vectorBytes = vectorBytes;
        this.expansionBudget = expansionBudget;
    }

    /**
     * The Java source of {@code program} as {@code final class className} in package {@code dev.kiln.cpu}.
     *
     * @throws IllegalArgumentException if {@code className} is not a Java identifier, or the program uses an
     *                                  op on a dtype that has no meaning for it (as {@link dev.kiln.ir.Alu} would)
     */
    public static String render(KernelProgram program, String className) {
        return render(program, className, FloatVector.SPECIES_PREFERRED.vectorByteSize());
    }

    /**
     * The Java source of {@code program} as {@code final class className}, using vectors of at most
     * {@code vectorBytes} bytes for UPCAST loops (below 16: none, every UPCAST loop is unrolled). The
     * vector size changes only the speed of the code, never a value.
     *
     * @throws IllegalArgumentException as {@link #render(KernelProgram, String)}
     */
    public static String render(KernelProgram program, String className, int vectorBytes) {
        return render(program, className, vectorBytes, LoopExpansion.MAX_BYTES);
    }

    /**
     * {@link #render(KernelProgram, String, int)} with the loop expansions (UNROLL, interleaved UPCAST) bounded to an
     * estimated {@code expansionBudget} bytes of bytecode: a smaller budget leaves more loops as loops.
     */
    static String render(KernelProgram program, String className, int vectorBytes, long expansionBudget) {
        if (!SourceVersion.isName(className) || className.contains(".")) {
            throw new IllegalArgumentException("render: class name '" + className + "' is not a Java identifier");
        }
        return new JavaRenderer(program, vectorBytes, expansionBudget).renderClass(className);
    }

    /** Most calls of the generated {@code range} method per call of {@code run} (see {@link #renderClass}). */
    static final int RANGE_CALLS = 64;

    // ---------------------------------------------------------------- class and statements

    private String renderClass(String className) {
        String body = renderBody(2);
        StringBuilder s = new StringBuilder();
        s.append("package dev.kiln.cpu;\n\n");
        s.append("import java.lang.foreign.MemorySegment;\n");
        if (!species.isEmpty()) s.append("import java.nio.ByteOrder;\n");
        s.append("import java.util.Objects;\n");
        if (!species.isEmpty()) s.append("\nimport jdk.incubator.vector.*;\n");
        s.append("\nimport static java.lang.foreign.ValueLayout.*;\n\n");
        s.append("/** Kiln kernel ").append(comment(program.name())).append(" (generated). */\n");
        s.append("final class ").append(className).append(" {\n");
        if (!species.isEmpty()) {
            s.append("    private static final ByteOrder ORDER = ByteOrder.nativeOrder();\n");
            for (String decl : species.values()) s.append("    private static final ").append(decl).append(";\n");
            s.append('\n');
        }
        // The work runs in range(), called for at most RANGE_CALLS shares of [start, end) per call of run(): a plan
        // calls run() once per execution, so a loop in it would reach C2 only through on-stack replacement of the
        // loop (slower code, entered mid-loop) for hundreds of runs; range() is called often enough to be
        // compiled as a method after a few (SqueezeNet: 15 -> 10 ms at 100 warm-up runs).
        s.append("    public static void run(MemorySegment[] bufs, long[] vars, long start, long end) {\n");
        s.append("        Objects.checkFromToIndex(start, end, ").append(program.outerExtent()).append("L);\n");
        s.append("        long step = Math.max(1, (end - start + ").append(RANGE_CALLS - 1).append(") / ").append(RANGE_CALLS).append(");\n");
        s.append("        for (long s = start; s < end; s += step) range(bufs, vars, s, Math.min(end, s + step));\n");
        s.append("    }\n\n");
        s.append("    private static void range(MemorySegment[] bufs, long[] vars, long start, long end) {\n");
        hoisted.forEach(s::append);
        s.append(body);
        s.append("    }\n");
        for (JavaHelper h : helpers) s.append('\n').append(h.source());
        s.append("}\n");
        return s.toString();
    }

    /** The range check, the parameters as slices of exactly their size, and the variables, range-checked. */
    @Override
    protected void prologue() {
        line("Objects.checkFromToIndex(start, end, " + program.outerExtent() + "L);");
        for (int i = 0; i < program.params().size(); i++) {
            Slot p = program.params().get(i);
            long size = program.sizes().get(i);
            // bounded to the parameter's size; a buffer of exactly that size is used as it is, so a plan's call allocates no slice
            long bytes = p.dtype().byteSize(size);
            line("MemorySegment " + p.name() + " = bufs[" + i + "].byteSize() == " + bytes + "L ? bufs[" + i + "] : bufs[" + i + "].asSlice(0, "
                    + bytes + "L); // " + p.dtype() + "[" + size + "]" + (i == 0 ? ", output" : ""));
        }
        for (int i = 0; i < program.variables().size(); i++) {
            Variable v = program.variables().get(i);
            String name = name(v);
            helpers.add(JavaHelper.CHECK_VAR);
            line(varType(v).name + " " + name + " = " + (varType(v) == JType.INT ? "(int) " : "")
                    + "checkVar(vars[" + i + "], " + v.min() + "L, " + v.max() + "L, \"" + javaString(v.name()) + "\");");
        }
    }

    @Override
    protected List<String> outputLoopHead(Stmt.Loop split) {
        String i = name(split.index());
        String t = varType(split.index()).name;
        String stop = split.limit() == null ? "end" : "Math.min(end, " + limit(split) + ")"; // a symbolic axis stops at its size
        return List.of(forLoop(t, i, "(" + t + ") start", "(" + t + ") " + stop));
    }

    /** UNROLL and UPCAST loops expanded: of each nest of UPCAST loops at most one is left, to be rendered as vector lanes. */
    @Override
    protected Stmt.Block prepare(Stmt.Block body) {
        return LoopExpansion.expand(body, LoopExpansion.registerCount(program.body()), this::vectorCost, expansionBudget);
    }

    /** The expansion left only UPCAST loops that have a vector form. */
    @Override
    protected boolean inLanes(Stmt.Loop upcast) { return true; }

    @Override
    protected void lanes(Stmt.Loop upcast) { vectorLoop(upcast); }

    @Override
    protected void define(Stmt.Define d) {
        if (lanes == null || !lanes.registers().contains(d.register())) {
            super.define(d);
            return;
        }
        JType t = vectorType(d.register().uop());
        String init = dependent(d.init()) ? vec(d.init(), t).text() : broadcast(ref(d.init()), t);
        line(t.name + " " + name(d.register()) + " = " + init + ";");
    }

    @Override
    protected void accumulate(Stmt.Accumulate a) {
        if (lanes != null && lanes.registers().contains(a.register())) vectorAccumulate(a);
        else if (lanes != null && dependent(a.value())) laneFold(a);
        else super.accumulate(a);
    }

    @Override
    protected void store(Stmt.Store st) {
        if (lanes != null && (dependent(st.index()) || dependent(st.value()) || st.gate() != null && dependent(st.gate()))) vectorStore(st);
        else super.store(st);
    }

    /**
     * A GROUP's combine: a register defined outside the vector loop takes every lane of a vector value,
     * lane 0 first, as the loop run lane by lane would.
     */
    private void laneFold(Stmt.Accumulate a) {
        JType t = vectorType(a.value());
        Expr<JType> v = vec(a.value(), t);
        for (int l = 0; l < lanes.count(); l++) {
            accumulate(a.register(), a.kind(), new Expr<>(paren(v, ATOM) + ".lane(" + l + ")", t.element(), ATOM));
        }
    }

    private static String javaString(String s) {
        return s.replace("\\", "\\\\").replace("\"", "\\\"").replaceAll("[\\p{Cntrl}]", "?");
    }

    // ---------------------------------------------------------------- vector lanes

    /**
     * An UPCAST loop rendered as vector lanes: its variable, the lane count, the registers that hold one
     * value per lane (vectors), and which nodes differ between lanes (memoised).
     */
    private record Lanes(Variable index, int count, Set<Slot> registers, Map<UOp, Boolean> dependent) {}

    /**
     * The estimated bytecode size of {@code loop} (UPCAST, its body expanded) rendered as vector lanes
     * (see {@link LoopExpansion}), or -1 if it cannot be: every value that differs
     * between lanes needs a vector form of at most {@link #vectorBytes} (f32, f64, i32 or i64 lanes, or
     * a mask), the registers that become vectors must be defined in the body, and no index may read one
     * (indices are computed per lane as scalars).
     */
    private long vectorCost(Stmt.Loop loop) {
        Lanes saved = lanes;
        lanes = lanesOf(loop);
        try {
            Set<Slot> defined = new HashSet<>(), read = Optimizer.registersRead(loop.body());
            long[] cost = {0};
            Set<UOp> seen = new HashSet<>();
            Optimizer.walk(loop.body(), s -> {
                long c = switch (s) {
                    case Stmt.Loop l -> l.kind() == Stmt.LoopKind.UPCAST || l.kind() == Stmt.LoopKind.UNROLL ? -1 : LoopExpansion.NODE_BYTES;
                    case Stmt.Define d -> {
                        defined.add(d.register());
                        yield plus(VECTOR_OP_BYTES, cost(d.init(), seen));
                    }
                    case Stmt.Accumulate a when !lanes.registers().contains(a.register()) && dependent(a.value()) -> {
                        // a lane fold (GROUP's combine): lane by lane into a scalar no statement of the loop reads
                        JType t = vectorType(a.value());
                        if (t == null || t.isMask() || read.contains(a.register())) yield -1;
                        yield plus(lanes.count() * (ACCESS_BYTES + LoopExpansion.NODE_BYTES), cost(a.value(), seen));
                    }
                    case Stmt.Accumulate a -> plus(VECTOR_OP_BYTES, cost(a.value(), seen));
                    case Stmt.Store st -> {
                        if (readsLaneRegister(st.index())) yield -1;
                        JType memory = memoryVector(st.param().dtype());
                        boolean vector = memory != null && fits(memory.element()) && contiguous(st.index());
                        if (st.gate() != null && readsLaneRegister(st.gate())) yield -1;
                        yield plus(access(vector, st.index(), st.gate()), st.gate() == null ? cost(st.value(), seen)
                                : plus(cost(st.value(), seen), cost(st.gate(), seen)));
                    }
                    case Stmt.Block b -> 0;
                };
                cost[0] = plus(cost[0], c);
            });
            for (Slot r : lanes.registers()) {
                if (!defined.contains(r) || vectorType(r.uop()) == null || !fits(vectorType(r.uop()).element())) return -1;
            }
            return cost[0];
        } finally {
            lanes = saved;
        }
    }

    /** {@code a + b}, or -1 if either is -1 (no vector form). */
    private static long plus(long a, long b) { return a < 0 || b < 0 ? -1 : a + b; }

    /**
     * The lanes of {@code loop}: its vector registers are those defined in it whose value depends on the
     * lane (a fixpoint). A register defined outside that takes lane-dependent values (a GROUP's combine)
     * stays a scalar: it folds the lanes in order.
     */
    private static Lanes lanesOf(Stmt.Loop loop) {
        Set<Slot> registers = new HashSet<>(), defined = definedIn(loop);
        while (true) {
            Lanes t = new Lanes(loop.index(), (int) loop.extent(), Set.copyOf(registers), new HashMap<>());
            Optimizer.walk(loop.body(), s -> {
                switch (s) {
                    case Stmt.Define d when dependent(t, d.init()) -> registers.add(d.register());
                    case Stmt.Accumulate a when defined.contains(a.register()) && dependent(t, a.value()) -> registers.add(a.register());
                    default -> { }
                }
            });
            if (registers.size() == t.registers().size()) return t;
        }
    }

    private static Set<Slot> definedIn(Stmt.Loop loop) {
        Set<Slot> defined = new HashSet<>();
        Optimizer.walk(loop.body(), s -> {
            if (s instanceof Stmt.Define d) defined.add(d.register());
        });
        return defined;
    }

    private boolean dependent(UOp u) { return lanes != null && dependent(lanes, u); }

    private static boolean dependent(Lanes t, UOp u) {
        Boolean known = t.dependent().get(u);
        if (known != null) return known;
        boolean d = u.op() == Op.DEFINE_VAR && (u.arg().equals(t.index()) || u.arg() instanceof Slot r && t.registers().contains(r));
        for (int i = 0; !d && i < u.src().size(); i++) d = dependent(t, u.src(i));
        t.dependent().put(u, d);
        return d;
    }

    private boolean readsLaneRegister(UOp u) {
        for (Slot r : registersRead(u)) if (lanes.registers().contains(r)) return true;
        return false;
    }

    /** Bytecode of one vector operation or broadcast (a call on a local, about 6 to 10 bytes). */
    private static final long VECTOR_OP_BYTES = 10;
    /** Bytecode of an index node (int or long arithmetic on locals). */
    private static final long INDEX_NODE_BYTES = 5;
    /** Bytecode of one element access (a segment call), or of the lane-by-lane loop around a scalar op. */
    private static final long ACCESS_BYTES = 20;

    /** A load or store at {@code index}: one vector access, or one scalar access per lane. */
    private long access(boolean vector, UOp index, UOp gate) {
        long nodes = index.toposort().size() + (gate == null ? 0 : gate.toposort().size());
        return (vector ? 1 : lanes.count()) * (ACCESS_BYTES + INDEX_NODE_BYTES * nodes);
    }

    /**
     * The estimated bytecode of a value and what it is computed from (nodes not already counted): a
     * scalar node as {@link LoopExpansion#NODE_BYTES}, a vector operation {@link #VECTOR_OP_BYTES}, a
     * load lane by lane once per lane; -1 if a lane-dependent value has no vector form.
     */
    private long cost(UOp u, Set<UOp> seen) {
        if (!seen.add(u)) return 0;
        if (!dependent(u)) {
            long c = LoopExpansion.NODE_BYTES;
            for (UOp s : u.src()) c += cost(s, seen);
            return c;
        }
        JType t = vectorType(u);
        if (t == null || !fits(t.element())) return -1;
        switch (u.op()) {
            case LOAD -> {
                UOp gate = u.src().size() > 2 ? u.src(2) : null;
                if (readsLaneRegister(u.src(1)) || gate != null && readsLaneRegister(gate)) return -1;
                if (memoryVector(u.dtype()) == t && everyOther(u.src(1), gate)) return 2 * access(true, u.src(1), gate) + VECTOR_OP_BYTES;
                return access(memoryVector(u.dtype()) == t && contiguous(u.src(1)), u.src(1), gate);
            }
            case CONST, DEFINE_VAR -> {
                return VECTOR_OP_BYTES;
            }
            case CMPLT, CMPNE, CMPEQ, CAST -> {
                if (!u.src(0).dtype().isBool()) {
                    JType e = laneElement(u.src(0), u.op() == Op.CAST ? u.src(0) : u.src(1));
                    if (e == null || !fits(e)) return -1;
                }
            }
            default -> { }
        }
        if (u.op().group() != Op.Group.UNARY && u.op().group() != Op.Group.BINARY && u.op().group() != Op.Group.TERNARY) return -1;
        long c = VECTOR_OP_BYTES;
        for (UOp s : u.src()) c = plus(c, cost(s, seen));
        return c;
    }

    private static int laneBytes(JType element) { return element == JType.LONG || element == JType.DOUBLE ? 8 : 4; }

    /** Whether a vector of {@link #lanes} lanes of {@code element} is a size the renderer uses. */
    private boolean fits(JType element) {
        int bytes = lanes.count() * laneBytes(element);
        return VECTOR_SIZES.contains(bytes) && bytes <= vectorBytes;
    }

    /**
     * The vector type of a lane-dependent value, or null if it has none: f32, f64, i32 and i64 lanes (an
     * i64 that range analysis keeps in int range has int lanes, like its scalar form), bool a mask.
     */
    private JType vectorType(UOp u) {
        if (u.dtype().isBool()) {
            JType e = maskElement(u);
            return e == null ? null : e.mask();
        }
        return switch (u.dtype()) {
            case F32 -> JType.FLOAT_VECTOR;
            case F64 -> JType.DOUBLE_VECTOR;
            case I32 -> JType.INT_VECTOR;
            case I64 -> jtype(u) == JType.INT ? JType.INT_VECTOR : JType.LONG_VECTOR;
            default -> null;
        };
    }

    /** A mask's element type: a comparison's operands', else the first lane-dependent bool operand's, else int. */
    private JType maskElement(UOp u) {
        boolean fromNumbers = (u.op().isComparison() || u.op() == Op.CAST) && !u.src(0).dtype().isBool();
        if (fromNumbers) return laneElement(u.src(0), u.op() == Op.CAST ? u.src(0) : u.src(1));
        return switch (u.op()) {
            case LOAD, DEFINE_VAR, CONST -> JType.INT;
            default -> {
                List<UOp> src = u.op() == Op.WHERE ? List.of(u.src(1), u.src(2), u.src(0)) : u.src();
                for (UOp s : src) {
                    if (s.dtype().isBool() && dependent(s)) {
                        JType t = vectorType(s);
                        yield t == null ? null : t.element();
                    }
                }
                yield JType.INT;
            }
        };
    }

    /** The lane element type two operands are compared (or one converted) in, or null if none. */
    private JType laneElement(UOp a, UOp b) {
        JType ta = numericElement(a), tb = numericElement(b);
        if (ta == null || tb == null) return null;
        if (ta == tb) return ta;
        return (ta == JType.INT || ta == JType.LONG) && (tb == JType.INT || tb == JType.LONG) ? JType.LONG : null;
    }

    private JType numericElement(UOp u) {
        return switch (u.dtype()) {
            case F32, F64, I32, I64 -> jtype(u);
            default -> null;
        };
    }

    /** Renders the body of a vectorisable UPCAST loop once, each lane-dependent value as a vector. */
    private void vectorLoop(Stmt.Loop l) {
        lanes = lanesOf(l);
        line("// " + name(l.index()) + " = 0.." + (lanes.count() - 1) + " in vector lanes");
        scoped(() -> l.body().body().forEach(this::stmt));
        lanes = null;
    }

    /** {@code u} as a vector (or mask) of type {@code t}: its lanes if they differ, else its value in every lane. */
    private Expr<JType> vec(UOp u, JType t) {
        Form key = new Form(u, t);
        Expr<JType> known = known(key);
        if (known != null) return known;
        Expr<JType> e;
        if (!dependent(u)) {
            e = local(new Expr<>(broadcast(ref(u), t), t, ATOM));
        } else {
            Expr<JType> v = vref(u);
            if (v.type() == t) return v;
            if (v.type().isMask() && t.isMask()) {
                e = local(new Expr<>(paren(v, ATOM) + ".cast(" + species(t.element()) + ")", t, ATOM));
            } else if (v.type() == JType.INT_VECTOR && t == JType.LONG_VECTOR) {
                e = local(new Expr<>("(LongVector) " + paren(v, ATOM) + ".convertShape(VectorOperators.I2L, " + species(JType.LONG) + ", 0)", t, UNARY));
            } else {
                throw new IllegalStateException("kernel " + program.name() + ": no conversion from " + v.type().name + " to " + t.name);
            }
        }
        remember(key, e);
        return e;
    }

    /** A scalar's value in every lane of a vector (or mask) of type {@code t}. */
    private String broadcast(Expr<JType> scalar, JType t) {
        String value = scalar.text().startsWith("(-") && scalar.prec() == ATOM ? scalar.text().substring(1, scalar.text().length() - 1) : scalar.text();
        return t.isMask() ? species(t.element()) + ".maskAll(" + value + ")" : t.name + ".broadcast(" + species(t.element()) + ", " + value + ")";
    }

    /** The vector of a lane-dependent node, in its own {@link #vectorType}, computed once per block. */
    private Expr<JType> vref(UOp u) {
        JType t = vectorType(u);
        Form key = new Form(u, t);
        Expr<JType> known = known(key);
        if (known != null) return known;
        Expr<JType> e = switch (u.op()) {
            case DEFINE_VAR -> u.arg() instanceof Slot r ? new Expr<>(name(r), t, ATOM)
                    : local(new Expr<>(t.name + ".zero(" + species(t.element()) + ").addIndex(1)", t, ATOM)); // the lane numbers
            case LOAD -> local(vectorLoad(u, t));
            default -> local(vectorCompute(u, t));
        };
        remember(key, e);
        return e;
    }

    /** {@code e} with the lane variable replaced by lane {@code l}'s number: that lane's scalar expression. */
    private UOp atLane(UOp e, int l) { return Optimizer.substitute(e, Map.of(lanes.index(), UOp.index(l))); }

    /**
     * Declares an array of one element per lane at the start of {@code run}: lanes computed one by one go through
     * it, and declared inside the loops it would be a new array every iteration (BERT's softmax allocated 97 MB per
     * run that way).
     */
    private void hoist(String laneType, String name) {
        hoisted.add("        " + laneType + "[] " + name + " = new " + laneType + "[" + lanes.count() + "];\n");
    }

    /** Lane {@code l} of a lane-dependent node, from an array of its lanes (made once per block). */
    private Expr<JType> laneOf(UOp u, String l) {
        Form key = new Form(u, null);
        Expr<JType> array = known(key);
        if (array == null) {
            Expr<JType> v = vref(u);
            String name = valueName();
            hoist(v.type().lane().name, name);
            line(paren(v, ATOM) + ".intoArray(" + name + ", 0);");
            array = new Expr<>(name, v.type(), ATOM);
            remember(key, array);
        }
        return new Expr<>(array.text() + "[" + l + "]", array.type().lane(), ATOM);
    }

    private Expr<JType> zeroVector(JType t) {
        return new Expr<>(t.isMask() ? species(t.element()) + ".maskAll(false)" : t.name + ".zero(" + species(t.element()) + ")", t, ATOM);
    }

    private String fromArray(JType t, String array) {
        return (t.isMask() ? "VectorMask" : t.name) + ".fromArray(" + species(t.element()) + ", " + array + ", 0)";
    }

    /** The vector type that holds elements of {@code dt} in memory layout, or null if it is not f32, f64, i32 or i64. */
    private static JType memoryVector(DType dt) {
        return switch (dt) {
            case F32 -> JType.FLOAT_VECTOR;
            case F64 -> JType.DOUBLE_VECTOR;
            case I32 -> JType.INT_VECTOR;
            case I64 -> JType.LONG_VECTOR;
            default -> null;
        };
    }

    private boolean contiguous(UOp index) { return stride(index) == 1; }

    /** A load of every other element under no gate or one the same for all lanes: two vector loads and a permute. */
    private boolean everyOther(UOp index, UOp gate) { return stride(index) == 2 && (gate == null || !dependent(gate)); }

    /** How far {@code index} moves from one lane to the next, or 0 when it differs between lanes. */
    private long stride(UOp index) { return Heuristics.stride(index, lanes.index()).orElse(0); }

    /**
     * The shuffle that picks lane {@code k}'s element {@code 2k} from a vector loaded at element 0 and, through negative
     * indices, one loaded at element {@code lanes - 1} ({@code first.rearrange(shuffle, second)}), declared once per
     * class. A two-table permute by an index vector ({@code selectFrom}) took twice as long (2.1 against 0.95 ns a
     * vector on 16 floats).
     */
    private String everyOther(JType t) {
        String s = species(t.element());
        String name = s + "_EVERY_OTHER";
        StringBuilder lanesOf = new StringBuilder();
        int n = lanes.count();
        for (int k = 0; k < n; k++) lanesOf.append(", ").append(2 * k < n ? 2 * k : 2 * k + 1 - 2 * n);
        // after the species in the (sorted) declarations: a static field may only read fields declared before it
        String type = t.mask().name.replace("VectorMask", "VectorShuffle");
        species.putIfAbsent(name, type + " " + name + " = VectorShuffle.fromValues(" + s + lanesOf + ")");
        return name;
    }

    /**
     * A lane-dependent load: one vector load where the index is contiguous in the lanes (masked where
     * the gate differs between lanes: masked-off lanes are 0 and never read), else each lane's scalar load.
     */
    private Expr<JType> vectorLoad(UOp u, JType t) {
        Slot p = u.src(0).slotArg();
        DType dt = u.dtype();
        UOp gate = u.src().size() > 2 ? u.src(2) : null;
        if (gate != null && gate.isConst()) {
            if (gate.constLong() == 0) return zeroVector(t);
            gate = null;
        }
        if (memoryVector(dt) == t && contiguous(u.src(1))) {
            String at = p.name() + ", " + offset(index(atLane(u.src(1), 0)), dt) + ", ORDER";
            if (gate == null) return new Expr<>(t.name + ".fromMemorySegment(" + species(t.element()) + ", " + at + ")", t, ATOM);
            if (dependent(gate)) {
                return new Expr<>(t.name + ".fromMemorySegment(" + species(t.element()) + ", " + at + ", " + vec(gate, t.mask()).text() + ")", t, ATOM);
            }
            Expr<JType> g = ref(gate);
            return cond(g, new Expr<>(t.name + ".fromMemorySegment(" + species(t.element()) + ", " + at + ")", t, ATOM), zeroVector(t), t);
        }
        if (memoryVector(dt) == t && everyOther(u.src(1), gate)) {
            // every other element: two overlapping loads that end at the last element read, then one permute
            UOp first = atLane(u.src(1), 0);
            String s = species(t.element());
            String even = t.name + ".fromMemorySegment(" + s + ", " + p.name() + ", " + offset(index(first), dt) + ", ORDER)";
            String odd = t.name + ".fromMemorySegment(" + s + ", " + p.name() + ", " + offset(index(first.add(lanes.count() - 1)), dt) + ", ORDER)";
            Expr<JType> load = new Expr<>(even + ".rearrange(" + everyOther(t) + ", " + odd + ")", t, ATOM);
            return gate == null ? load : cond(ref(gate), load, zeroVector(t), t);
        }
        // a gathered load, lane by lane into an array declared once per call
        List<String> laneValues = new ArrayList<>();
        for (int l = 0; l < lanes.count(); l++) laneValues.add(ref(atLane(u, l)).text());
        String array = valueName();
        hoist(t.lane().name, array);
        for (int l = 0; l < laneValues.size(); l++) line(array + "[" + l + "] = " + laneValues.get(l) + ";");
        return new Expr<>(fromArray(t, array), t, ATOM);
    }

    /**
     * A store of lane-dependent values: one vector store where the index is contiguous in the lanes (masked where
     * its gate differs between lanes), else lane by lane in order, each lane under its gate.
     */
    private void vectorStore(Stmt.Store st) {
        Slot p = st.param();
        DType dt = p.dtype();
        JType memory = memoryVector(dt);
        UOp gate = st.gate();
        String guard = gate == null || dependent(gate) ? "" : "if (" + ref(gate).text() + ") ";
        if (memory != null && fits(memory.element()) && contiguous(st.index())) {
            Expr<JType> first = index(atLane(st.index(), 0));
            String mask = gate != null && dependent(gate) ? ", " + vec(gate, memory.mask()).text() : "";
            line(guard + paren(vec(st.value(), memory), ATOM) + ".intoMemorySegment(" + p.name() + ", " + offset(first, dt) + ", ORDER" + mask + ");");
            return;
        }
        Expr<JType> same = dependent(st.value()) ? null : ref(st.value());
        for (int l = 0; l < lanes.count(); l++) {
            Expr<JType> value = same != null ? same : laneOf(st.value(), Integer.toString(l));
            Expr<JType> index = index(atLane(st.index(), l));
            String laneGuard = gate == null || !dependent(gate) ? guard : "if (" + ref(atLane(gate, l)).text() + ") ";
            line(laneGuard + p.name() + ".set(" + layout(dt) + ", " + offset(index, dt) + ", " + storeValue(value, dt) + ");");
        }
    }

    private void vectorAccumulate(Stmt.Accumulate a) {
        Slot reg = a.register();
        JType t = vectorType(reg.uop());
        Expr<JType> v = vec(a.value(), t);
        String method = switch (a.kind()) {
            case SUM -> t.isMask() ? "or" : "add";
            case PROD -> t.isMask() ? "and" : "mul";
            // lanewise max and min are Math.max and Math.min: NaN wins, -0.0 is below 0.0 (as the scalar update)
            case MAX -> t.isMask() ? "or" : "max";
            case MIN -> t.isMask() ? "and" : "min";
        };
        line(name(reg) + " = " + name(reg) + "." + method + "(" + v.text() + ");");
        invalidate(reg);
    }

    /** A method call on a vector. */
    @SafeVarargs
    private static Expr<JType> on(Expr<JType> receiver, String method, JType t, Expr<JType>... args) {
        StringBuilder s = new StringBuilder(paren(receiver, ATOM)).append('.').append(method).append('(');
        for (int i = 0; i < args.length; i++) s.append(i > 0 ? ", " : "").append(args[i].text());
        return new Expr<>(s.append(')').toString(), t, ATOM);
    }

    /**
     * A lane-dependent op of vector type {@code t}: lanewise vector operations where they are exactly the
     * scalar semantics (IEEE +, -, *, /, sqrt, Math.max; wrapping integer +, *, &, |, ^; comparisons;
     * exact conversions), else {@link #laneWise}.
     */
    private Expr<JType> vectorCompute(UOp u, JType t) {
        Op op = u.op();
        DType dt = u.dtype();
        if (op == Op.CAST) return vectorCast(u, t);
        if (op == Op.WHERE) {
            UOp c = u.src(0), x = u.src(1), y = u.src(2);
            if (!dependent(c)) return cond(ref(c), vec(x, t), vec(y, t), t);
            if (!t.isMask()) return on(vec(y, t), "blend", t, vec(x, t), vec(c, t.mask()));
            Expr<JType> m = vec(c, t);
            // with a constant branch, plain logic (as the scalar bool WHERE)
            if (x.isConst()) return x.constLong() != 0 ? on(m, "or", t, vec(y, t)) : on(vec(y, t), "andNot", t, m);
            if (y.isConst()) return y.constLong() != 0 ? on(vec(x, t), "or", t, on(m, "not", t)) : on(vec(x, t), "and", t, m);
            return on(on(vec(x, t), "and", t, m), "or", t, on(vec(y, t), "andNot", t, m));
        }
        if (op.isComparison() && !u.src(0).dtype().isBool()) {
            JType e = laneElement(u.src(0), u.src(1)).vector();
            String cmp = switch (op) {
                case CMPLT -> "LT";
                case CMPEQ -> "EQ";
                default -> "NE"; // NaN != x, as Java's !=
            };
            return on(vec(u.src(0), e), "compare", t, new Expr<>("VectorOperators." + cmp, t, ATOM), vec(u.src(1), e));
        }
        if (t.isMask()) { // bool ops on masks, as the scalar bool ops
            List<Expr<JType>> m = new ArrayList<>();
            for (UOp s : u.src()) m.add(vec(s, t));
            return switch (op) {
                case ADD, OR, MAX -> on(m.get(0), "or", t, m.get(1));
                case MUL, AND -> on(m.get(0), "and", t, m.get(1));
                case XOR, CMPNE -> on(m.get(0), "xor", t, m.get(1));
                case CMPEQ -> on(m.get(0), "eq", t, m.get(1));
                case CMPLT -> on(m.get(1), "andNot", t, m.get(0));
                case NEG, TRUNC -> m.get(0);
                default -> laneWise(u, t);
            };
        }
        boolean f = dt.isFloat();
        return switch (op) {
            case ADD -> {
                UOp x = negated(u.src(1)); // a + (-b) is a - b, bit for bit
                yield x == null ? on(vec(u.src(0), t), "add", t, vec(u.src(1), t)) : on(vec(u.src(0), t), "sub", t, vec(x, t));
            }
            case MUL -> on(vec(u.src(0), t), "mul", t, vec(u.src(1), t));
            case MAX -> on(vec(u.src(0), t), "max", t, vec(u.src(1), t));
            case NEG -> on(vec(u.src(0), t), "neg", t);
            case AND -> on(vec(u.src(0), t), "and", t, vec(u.src(1), t));
            case OR -> on(vec(u.src(0), t), "or", t, vec(u.src(1), t));
            case XOR -> on(vec(u.src(0), t), "lanewise", t, new Expr<>("VectorOperators.XOR", t, ATOM), vec(u.src(1), t));
            case DIV -> f ? on(vec(u.src(0), t), "div", t, vec(u.src(1), t)) : laneWise(u, t);
            // sqrt in float rounds like Alu's sqrt in double rounded to float (double has over 2p + 2 bits)
            case SQRT -> f ? on(vec(u.src(0), t), "sqrt", t) : laneWise(u, t);
            case RECIP -> f ? on(vec(UOp.constant(dt, 1), t), "div", t, vec(u.src(0), t)) : laneWise(u, t);
            case EXP2 -> dt == DType.F32 && lanes.count() >= 4 && lanes.count() <= 16 ? exp2Lanes(vec(u.src(0), t), t) : laneWise(u, t);
            case TRUNC -> f ? laneWise(u, t) : vec(u.src(0), t);
            default -> laneWise(u, t);
        };
    }

    /**
     * f32 {@code exp2} of every lane, bit for bit the scalar helper {@code exp2f}: its double polynomial with the
     * same roundings on each half of the lanes, written into the loop (a helper method would be compiled apart,
     * too large to inline, and box its vectors); lanes outside [-126, 128) or near a rounding midpoint go to
     * {@code exp2f} ({@code exp2fLanes}).
     */
    private Expr<JType> exp2Lanes(Expr<JType> x, JType t) {
        helpers.add(JavaHelper.EXP2F);
        helpers.add(JavaHelper.EXP2V);
        int n = lanes.count(), h = n / 2;
        String ds = species(JType.DOUBLE, h), ls = species(JType.LONG, h), fs = species(JType.FLOAT), xv = paren(x, ATOM);
        String[] halves = new String[2];
        long nearAll = 0;
        for (int part = 0; part < 2; part++) {
            String d = valueName(), k = valueName(), f = valueName(), p = valueName(), v = valueName();
            line("DoubleVector " + d + " = (DoubleVector) " + xv + ".convertShape(VectorOperators.F2D, " + ds + ", " + part + ");");
            line("DoubleVector " + k + " = " + d + ".add(6755399441055744.0).sub(6755399441055744.0);"); // rint, exact below 2^51
            line("DoubleVector " + f + " = " + d + ".sub(" + k + ");");
            line("DoubleVector " + p + " = " + f + ".mul(4.4455382718708116E-10).add(7.054911620801123E-9);");
            for (String c : List.of("1.01780860092397E-7", "1.321548679014431E-6", "1.5252733804059841E-5", "1.540353039338161E-4",
                    "0.0013333558146428443", "0.009618129107628477", "0.05550410866482158", "0.24022650695910072", "0.6931471805599453", "1.0")) {
                line(p + " = " + f + ".mul(" + p + ").add(" + c + ");");
            }
            line("DoubleVector " + v + " = " + p + ".mul(((LongVector) " + k + ".add(1023.0).convertShape(VectorOperators.D2L, " + ls
                    + ", 0)).lanewise(VectorOperators.LSHL, 52).reinterpretAsDoubles());");
            halves[part] = v;
        }
        String r = valueName(), slow = valueName();
        line("FloatVector " + r + " = ((FloatVector) " + halves[0] + ".convertShape(VectorOperators.D2F, " + fs + ", 0)).blend((FloatVector) "
                + halves[1] + ".convertShape(VectorOperators.D2F, " + fs + ", -1), VectorMask.fromLong(" + fs + ", " + ((((1L << n) - 1) & ~((1L << h) - 1))) + "L));");
        // lanes exp2f leaves to Math.pow (within 2^-40 of a rounding midpoint), inline: a helper taking a vector would box it
        String near = ".reinterpretAsLongs().and(0x1FFFFFFFL).sub(0x10000000L).abs().compare(VectorOperators.LT, 4096L).toLong()";
        line("long " + slow + " = " + xv + ".compare(VectorOperators.GE, -126f).and(" + xv + ".compare(VectorOperators.LT, 128f)).not().toLong() | "
                + halves[0] + near + " | " + halves[1] + near + " << " + h + ";");
        // the rare lanes through arrays: a helper taking or returning vectors would box them, and r's merge after the
        // branch with them, in every iteration
        String in = valueName(), out = valueName();
        hoist("float", in);
        hoist("float", out);
        line("if (" + slow + " != 0) { " + xv + ".intoArray(" + in + ", 0); " + r + ".intoArray(" + out + ", 0); exp2fLanes(" + in + ", " + out + ", "
                + slow + "); " + r + " = FloatVector.fromArray(" + fs + ", " + out + ", 0); }");
        return new Expr<>(r, t, ATOM);
    }

    /**
     * A lane-dependent cast: lanewise conversions where Java's conversion is Alu's (int and long to float
     * round once; float to long truncates and saturates, NaN to 0; widening is exact; long to int wraps),
     * bool masks by blending 0 and 1 and comparing with 0, the rest (float to int wraps through long) lane by lane.
     */
    private Expr<JType> vectorCast(UOp u, JType t) {
        UOp s = u.src(0);
        DType from = s.dtype(), to = u.dtype();
        if (from == to) return vec(s, t);
        if (to.isBool()) {
            if (from.isBool()) return vec(s, t);
            JType e = numericElement(s).vector();
            return on(vec(s, e), "compare", t, new Expr<>("VectorOperators.NE", t, ATOM), zero(e.lane())); // NaN is true
        }
        if (from.isBool()) return on(zeroVector(t), "blend", t, vec(UOp.constant(to, 1), t), vec(s, t.mask()));
        JType fe = numericElement(s), te = t.element();
        if (fe == te) return vec(s, t); // i32 and an i64 held in int range: the same ints
        String conversion = switch (fe) {
            case INT -> te == JType.LONG ? "I2L" : te == JType.FLOAT ? "I2F" : "I2D";
            case LONG -> te == JType.INT ? "L2I" : te == JType.FLOAT ? "L2F" : "L2D";
            case FLOAT -> te == JType.DOUBLE ? "F2D" : te == JType.LONG ? "F2L" : null;
            default -> te == JType.FLOAT ? "D2F" : te == JType.LONG ? "D2L" : null;
        };
        if (conversion == null) return laneWise(u, t);
        return new Expr<>("(" + t.name + ") " + paren(vec(s, fe.vector()), ATOM) + ".convertShape(VectorOperators." + conversion + ", "
                + species(te) + ", 0)", t, UNARY);
    }

    /**
     * Any lane-dependent op, lane by lane with the scalar rendering (so exactly its semantics): the
     * operands' lanes from arrays, the results into an array, back into a vector.
     */
    private Expr<JType> laneWise(UOp u, JType t) {
        Op op = u.op();
        DType dt = u.dtype();
        JType lane = t.lane();
        List<Expr<JType>> a = new ArrayList<>();
        for (UOp s : u.src()) a.add(dependent(s) ? laneOf(s, "lane") : ref(s));
        Expr<JType> x = switch (op) {
            case WHERE -> cond(a.get(0), a.get(1), a.get(2), lane);
            case CAST -> cast(a.get(0), u.src(0).dtype(), dt, lane);
            case BITCAST -> bitcast(a.get(0), u.src(0).dtype(), dt);
            case CHECK -> indexCheck(u.indexCheckArg(), a.get(0), a.get(1), a.size() > 2 ? a.get(2) : null, u);
            default -> switch (op.group()) {
                case UNARY -> unary(op, dt, lane, a.get(0), u);
                case BINARY -> binary(op, u.src(0).dtype(), lane, a.get(0), a.get(1), u.src(0), u.src(1), u);
                default -> throw new IllegalArgumentException("kernel " + program.name() + " has a " + op + " node inside an expression");
            };
        };
        String array = valueName();
        hoist(lane.name, array);
        line("for (int lane = 0; lane < " + lanes.count() + "; lane++) " + array + "[lane] = " + x.text() + ";");
        return new Expr<>(fromArray(t, array), t, ATOM);
    }

    /** The name of the species constant for {@link #lanes} lanes of {@code element}, declared on first use. */
    private String species(JType element) { return species(element, lanes.count()); }

    /** The species constant for {@code n} lanes of {@code element}, declared on first use. */
    private String species(JType element, int n) {
        String prefix = switch (element) {
            case INT -> "I32";
            case LONG -> "I64";
            case FLOAT -> "F32";
            case DOUBLE -> "F64";
            default -> throw new IllegalStateException("no species of " + element);
        };
        String box = switch (element) {
            case INT -> "Integer";
            case LONG -> "Long";
            case FLOAT -> "Float";
            default -> "Double";
        };
        String name = prefix + "X" + n;
        species.putIfAbsent(name, "VectorSpecies<" + box + "> " + name + " = " + element.vector().name + ".SPECIES_" + n * laneBytes(element) * 8);
        return name;
    }
}

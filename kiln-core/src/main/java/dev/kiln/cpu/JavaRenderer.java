package dev.kiln.cpu;

import dev.kiln.types.DType;
import dev.kiln.types.Variable;
import dev.kiln.codegen.Heuristics;
import dev.kiln.codegen.KernelProgram;
import dev.kiln.codegen.Optimizer;
import dev.kiln.codegen.Stmt;
import dev.kiln.ir.Op;
import dev.kiln.ir.ReduceArg;
import dev.kiln.ir.Slot;
import dev.kiln.ir.UOp;

import jdk.incubator.vector.FloatVector;

import javax.lang.model.SourceVersion;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.EnumSet;
import java.util.HashMap;
import java.util.HashSet;
import java.util.IdentityHashMap;
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
public final class JavaRenderer {
    /** The Java primitive types values are held in, with their keywords. */
    private enum JType {
        BOOLEAN("boolean"), INT("int"), LONG("long"), FLOAT("float"), DOUBLE("double"),
        // vector lanes (jdk.incubator.vector) of the four element types with vector forms, and their masks
        INT_VECTOR("IntVector"), LONG_VECTOR("LongVector"), FLOAT_VECTOR("FloatVector"), DOUBLE_VECTOR("DoubleVector"),
        INT_MASK("VectorMask<Integer>"), LONG_MASK("VectorMask<Long>"), FLOAT_MASK("VectorMask<Float>"), DOUBLE_MASK("VectorMask<Double>");

        final String name;

        JType(String name) { this.name = name; }

        boolean isVector() { return ordinal() >= INT_VECTOR.ordinal(); }

        boolean isMask() { return ordinal() >= INT_MASK.ordinal(); }

        /** The lane type of a vector or mask (BOOLEAN for a mask: its lanes are bits), a scalar's own type. */
        JType lane() {
            return switch (this) {
                case INT_VECTOR -> INT;
                case LONG_VECTOR -> LONG;
                case FLOAT_VECTOR -> FLOAT;
                case DOUBLE_VECTOR -> DOUBLE;
                case INT_MASK, LONG_MASK, FLOAT_MASK, DOUBLE_MASK -> BOOLEAN;
                default -> this;
            };
        }

        /** The element type a vector or mask belongs to (a mask's is the vector type it selects lanes of). */
        JType element() {
            return switch (this) {
                case INT_VECTOR, INT_MASK -> INT;
                case LONG_VECTOR, LONG_MASK -> LONG;
                case FLOAT_VECTOR, FLOAT_MASK -> FLOAT;
                case DOUBLE_VECTOR, DOUBLE_MASK -> DOUBLE;
                default -> this;
            };
        }

        JType vector() {
            return switch (element()) {
                case INT -> INT_VECTOR;
                case LONG -> LONG_VECTOR;
                case FLOAT -> FLOAT_VECTOR;
                case DOUBLE -> DOUBLE_VECTOR;
                default -> throw new IllegalStateException("no vector of " + this);
            };
        }

        JType mask() {
            return switch (element()) {
                case INT -> INT_MASK;
                case LONG -> LONG_MASK;
                case FLOAT -> FLOAT_MASK;
                case DOUBLE -> DOUBLE_MASK;
                default -> throw new IllegalStateException("no mask of " + this);
            };
        }
    }

    // Java operator precedences (higher binds tighter); ATOM needs no parentheses anywhere.
    private static final int COND = 2, OR = 6, XOR = 7, AND = 8, EQ = 9, REL = 10, SHIFT = 11, ADD = 12, MUL = 13, UNARY = 14, ATOM = 15;

    /** Expressions longer than this go to a named local even when they could be inlined. */
    private static final int INLINE_LIMIT = 60;

    /** A rendered Java expression: its text, Java type and precedence. */
    private record Expr(String text, JType type, int prec) {}

    /** Static methods the generated class may need, emitted only when used. */
    private enum Helper {
        F16("f16"), BF16("bf16"), BF16_BITS("bf16Bits"), BF16_TO_FLOAT("bf16ToFloat"), FLOOR_DIV("floorDiv"), FLOOR_MOD("floorMod"), LOG2("log2"), TRUNC("trunc"),
        F2U64("f2u64"), U64_TO_DOUBLE("u64ToDouble"), U64_TO_FLOAT("u64ToFloat"), ROUND_ODD("toFloatRoundOdd"), S64_ODD("s64ToDoubleOdd"), U64_ODD("u64ToDoubleOdd"), THREEFRY("threefry"), CHECK_VAR("checkVar"), EXP2F("exp2f");

        final String method;

        Helper(String method) { this.method = method; }
    }

    private static final Set<String> RESERVED = Set.of("bufs", "vars", "start", "end", "run", "MemorySegment", "Objects",
            "Math", "Float", "Double", "Long", "Integer", "Short", "Byte", "String", "lane", "ORDER", "ByteOrder", "FloatVector",
            "DoubleVector", "IntVector", "LongVector", "VectorMask", "VectorOperators", "VectorSpecies");

    /** Vector sizes in bytes the renderer uses: 128, 256 and 512 bits, up to the machine's preferred size. */
    private static final Set<Integer> VECTOR_SIZES = Set.of(16, 32, 64);

    private final KernelProgram program;
    private final int vectorBytes;
    private final StringBuilder out = new StringBuilder();
    private int indent;
    private int values;
    private final Map<Variable, String> varNames = new HashMap<>();
    private final Map<Slot, String> registerNames = new HashMap<>();
    private final Set<String> usedNames = new HashSet<>();
    /** Values already computed, innermost block first: keyed by node (scalar form) or {@link Form}. */
    private final Deque<Map<Object, Expr>> scopes = new ArrayDeque<>();
    private final Set<Helper> helpers = EnumSet.noneOf(Helper.class);
    private final Map<UOp, Boolean> narrow = new IdentityHashMap<>();
    private final Map<UOp, Set<Slot>> registersRead = new IdentityHashMap<>();
    /** Vector species constants the class declares, by name. */
    private final Map<String, String> species = new TreeMap<>();
    /** The UPCAST loop being rendered as vector lanes, or null. */
    private Lanes lanes;

    private JavaRenderer(KernelProgram program, int vectorBytes) {
        this.program = program;
        this.vectorBytes = vectorBytes;
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
        if (!SourceVersion.isName(className) || className.contains(".")) {
            throw new IllegalArgumentException("render: class name '" + className + "' is not a Java identifier");
        }
        return new JavaRenderer(program, vectorBytes).renderClass(className);
    }

    // ---------------------------------------------------------------- class and statements

    private String renderClass(String className) {
        Stmt.Loop split = program.outputLoop();
        indent = 2;
        scopes.push(new HashMap<>());
        line("Objects.checkFromToIndex(start, end, " + (split == null ? 1 : split.extent()) + "L);");
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
            helpers.add(Helper.CHECK_VAR);
            line(varType(v).name + " " + name + " = " + (varType(v) == JType.INT ? "(int) " : "")
                    + "checkVar(vars[" + i + "], " + v.min() + "L, " + v.max() + "L, \"" + javaString(v.name()) + "\");");
        }
        int registerCount = LoopExpansion.registerCount(program.body());
        if (split != null) {
            String i = name(split.index());
            String t = varType(split.index()).name;
            String stop = split.limit() == null ? "end" : "Math.min(end, " + name(split.limit()) + ")"; // a symbolic axis stops at its size
            line("for (" + t + " " + i + " = (" + t + ") start; " + i + " < (" + t + ") " + stop + "; " + i + "++) {");
            block(LoopExpansion.expand(split.body(), registerCount, this::vectorCost));
            line("}");
        } else if (!program.body().body().isEmpty()) {
            line("if (start < end) {");
            block(LoopExpansion.expand(program.body(), registerCount, this::vectorCost));
            line("}");
        }
        String body = out.toString();

        StringBuilder s = new StringBuilder();
        s.append("package dev.kiln.cpu;\n\n");
        s.append("import java.lang.foreign.MemorySegment;\n");
        if (!species.isEmpty()) s.append("import java.nio.ByteOrder;\n");
        s.append("import java.util.Objects;\n");
        if (!species.isEmpty()) s.append("\nimport jdk.incubator.vector.*;\n");
        s.append("\nimport static java.lang.foreign.ValueLayout.*;\n\n");
        s.append("/** Kiln kernel ").append(javaComment(program.name())).append(" (generated). */\n");
        s.append("final class ").append(className).append(" {\n");
        if (!species.isEmpty()) {
            s.append("    private static final ByteOrder ORDER = ByteOrder.nativeOrder();\n");
            for (String decl : species.values()) s.append("    private static final ").append(decl).append(";\n");
            s.append('\n');
        }
        s.append("    public static void run(MemorySegment[] bufs, long[] vars, long start, long end) {\n");
        s.append(body);
        s.append("    }\n");
        for (Helper h : helpers) s.append('\n').append(helperSource(h));
        s.append("}\n");
        return s.toString();
    }

    private void block(Stmt.Block b) {
        indent++;
        scopes.push(new HashMap<>());
        for (Stmt s : b.body()) stmt(s);
        scopes.pop();
        indent--;
    }

    private void stmt(Stmt s) {
        switch (s) {
            case Stmt.Block b -> b.body().forEach(this::stmt);
            case Stmt.Loop l when l.kind() == Stmt.LoopKind.UPCAST -> vectorLoop(l); // the expansion left only vector loops
            case Stmt.Loop l -> {
                String i = name(l.index());
                String stop = l.limit() != null ? name(l.limit()) : l.extent() + (varType(l.index()) == JType.LONG ? "L" : "");
                line("for (" + varType(l.index()).name + " " + i + " = 0; " + i + " < " + stop + "; " + i + "++) {");
                block(l.body());
                line("}");
            }
            case Stmt.Define d when lanes != null && lanes.registers().contains(d.register()) -> {
                JType t = vectorType(d.register().uop());
                String init = dependent(d.init()) ? vec(d.init(), t).text : broadcast(ref(d.init()), t);
                line(t.name + " " + name(d.register()) + " = " + init + ";");
            }
            case Stmt.Define d -> {
                Expr init = ref(d.init());
                line(jtype(d.register().uop()).name + " " + name(d.register()) + " = " + init.text + ";");
            }
            case Stmt.Accumulate a when lanes != null && lanes.registers().contains(a.register()) -> vectorAccumulate(a);
            case Stmt.Accumulate a when lanes != null && dependent(a.value()) -> laneFold(a);
            case Stmt.Accumulate a -> accumulate(a);
            case Stmt.Store st -> {
                Slot p = st.param();
                if (st.value().dtype() != p.dtype()) {
                    throw new IllegalArgumentException("kernel " + program.name() + " stores " + st.value().dtype() + " into " + p.name() + " of " + p.dtype());
                }
                if (lanes != null && (dependent(st.index()) || dependent(st.value()))) {
                    vectorStore(st);
                    return;
                }
                Expr index = index(st.index());
                Expr value = ref(st.value());
                line(p.name() + ".set(" + layout(p.dtype()) + ", " + offset(index, p.dtype()) + ", " + storeValue(value, p.dtype()) + ");");
            }
        }
    }

    private void accumulate(Stmt.Accumulate a) { accumulate(a.register(), a.kind(), ref(a.value())); }

    /**
     * A GROUP's combine: a register defined outside the vector loop takes every lane of a vector value,
     * lane 0 first, as the loop run lane by lane would.
     */
    private void laneFold(Stmt.Accumulate a) {
        JType t = vectorType(a.value());
        Expr v = vec(a.value(), t);
        for (int l = 0; l < lanes.count(); l++) {
            accumulate(a.register(), a.kind(), new Expr(paren(v, ATOM) + ".lane(" + l + ")", t.element(), ATOM));
        }
    }

    private void accumulate(Slot reg, ReduceArg.Kind kind, Expr v) {
        DType dt = reg.dtype();
        Expr acc = new Expr(name(reg), jtype(reg.uop()), ATOM);
        Expr r = switch (kind) {
            case SUM -> binary(Op.ADD, dt, acc.type, acc, v, null, null);
            case PROD -> binary(Op.MUL, dt, acc.type, acc, v, null, null);
            case MAX -> binary(Op.MAX, dt, acc.type, acc, v, null, null);
            case MIN -> { // as KernelEvaluator: NaN wins, else the smaller (the new value only if strictly smaller)
                if (dt.isBool()) yield bin(acc, "&", v, AND);
                if (dt == DType.U64) yield cond(new Expr("Long.compareUnsigned(" + v.text + ", " + acc.text + ") < 0", JType.BOOLEAN, REL), v, acc, acc.type);
                yield call("Math.min", acc.type, acc, v);
            }
        };
        line(name(reg) + " = " + r.text + ";");
        invalidate(reg);
    }

    /** Values computed from {@code reg} before an update of it are stale now. */
    private void invalidate(Slot reg) {
        for (Map<Object, Expr> scope : scopes) scope.keySet().removeIf(k -> registersRead(k instanceof Form f ? f.node() : (UOp) k).contains(reg));
    }

    private Set<Slot> registersRead(UOp u) {
        Set<Slot> known = registersRead.get(u);
        if (known != null) return known;
        Set<Slot> regs = new HashSet<>();
        if (u.op() == Op.DEFINE_VAR && u.arg() instanceof Slot s && s.kind() == Slot.Kind.REGISTER) regs.add(s);
        for (UOp s : u.src()) regs.addAll(registersRead(s));
        registersRead.put(u, regs);
        return regs;
    }

    // ---------------------------------------------------------------- names and types

    private String name(Variable v) {
        return varNames.computeIfAbsent(v, k -> {
            String base = k.name().replaceAll("[^A-Za-z0-9_]", "_");
            if (base.isEmpty() || !Character.isJavaIdentifierStart(base.charAt(0))) base = "x" + base;
            // never collide with parameters, registers, values, the method's own names or keywords
            if (base.matches("(p|acc|v)\\d+|JAVA_.*|[FI](32|64)X\\d+") || RESERVED.contains(base) || SourceVersion.isKeyword(base)) base = base + "_";
            String n = base;
            for (int i = 2; !usedNames.add(n); i++) n = base + "_" + i;
            return n;
        });
    }

    /** A register's Java name: {@code acc0}, {@code acc1}, ... in the order the code declares them. */
    private String name(Slot register) {
        return registerNames.computeIfAbsent(register, r -> "acc" + registerNames.size());
    }

    private static JType varType(Variable v) {
        return v.min() >= Integer.MIN_VALUE && v.max() < Integer.MAX_VALUE ? JType.INT : JType.LONG;
    }

    private JType jtype(UOp u) {
        return switch (u.dtype()) {
            case BOOL -> JType.BOOLEAN;
            case I8, U8, I16, U16, I32 -> JType.INT;
            case U32, U64 -> JType.LONG;
            case I64 -> isNarrow(u) ? JType.INT : JType.LONG;
            case F16, BF16, F32 -> JType.FLOAT;
            case F64 -> JType.DOUBLE;
            case Q8_0, Q4_0 -> throw new IllegalArgumentException("kernel " + program.name() + " computes with packed dtype " + u.dtype());
        };
    }

    /**
     * Whether an i64 node can be computed exactly in {@code int}: it and every i64 node below it lie in
     * int range (range analysis is sound), so int arithmetic cannot overflow.
     */
    private boolean isNarrow(UOp u) {
        Boolean known = narrow.get(u);
        if (known != null) return known;
        boolean fits = u.vmin() >= Integer.MIN_VALUE && u.vmax() <= Integer.MAX_VALUE && switch (u.op()) {
            case CONST -> true;
            case DEFINE_VAR -> u.arg() instanceof Variable v && varType(v) == JType.INT;
            case ADD, MUL, NEG, DIV, MOD, FLOORDIV, FLOORMOD, MAX -> u.src().stream().allMatch(this::isNarrow);
            case WHERE -> isNarrow(u.src(1)) && isNarrow(u.src(2));
            case CAST -> switch (u.src(0).dtype()) {
                case BOOL, I8, U8, I16, U16, I32 -> true;
                case I64 -> isNarrow(u.src(0));
                default -> false;
            };
            default -> false;
        };
        narrow.put(u, fits);
        return fits;
    }

    // ---------------------------------------------------------------- expressions

    /** The expression for {@code u}: a literal, a variable or register, or a named local computed now. */
    private Expr ref(UOp u) {
        Expr known = known(u);
        if (known != null) return known;
        Expr e = switch (u.op()) {
            case CONST -> literal(u);
            case DEFINE_VAR -> switch (u.arg()) {
                case Variable v -> new Expr(name(v), varType(v), ATOM);
                case Slot s when s.kind() == Slot.Kind.REGISTER -> new Expr(name(s), jtype(u), ATOM);
                default -> throw new IllegalArgumentException("kernel " + program.name() + " reads parameter " + u.arg() + " outside a LOAD");
            };
            case LOAD -> local(load(u));
            case WHERE -> u.src(0).isConst() ? ref(u.src(0).constLong() != 0 ? u.src(1) : u.src(2)) : local(compute(u));
            default -> {
                Expr x = compute(u);
                yield inlinable(u) && x.text.length() <= INLINE_LIMIT ? x : local(x);
            }
        };
        if (u.op() != Op.CONST) scopes.peek().put(u, e);
        return e;
    }

    /** The value computed for {@code key} in an enclosing block, or null. */
    private Expr known(Object key) {
        for (Map<Object, Expr> scope : scopes) {
            Expr e = scope.get(key);
            if (e != null) return e;
        }
        return null;
    }

    /** Index-style arithmetic that needs no wrapping stays inline, so index math reads as one formula. */
    private boolean inlinable(UOp u) {
        if (u.dtype() != DType.I64 && u.dtype() != DType.I32) return false;
        return switch (u.op()) {
            case ADD, MUL, NEG -> true;
            case FLOORDIV, FLOORMOD -> u.src(0).vmin() >= 0 && u.src(1).vmin() > 0;
            default -> false;
        };
    }

    private Expr local(Expr e) {
        String n = "v" + values++;
        line(e.type.name + " " + n + " = " + e.text + ";");
        return new Expr(n, e.type, ATOM);
    }

    private Expr literal(UOp u) {
        JType t = jtype(u);
        return switch (t) {
            case BOOLEAN -> new Expr(u.constLong() != 0 ? "true" : "false", t, ATOM);
            case INT -> number(Long.toString(u.constLong()), t);
            case LONG -> number(u.dtype() == DType.U64 && u.constLong() < 0 ? "0x" + Long.toHexString(u.constLong()) + "L" : u.constLong() + "L", t);
            case FLOAT -> {
                float f = (float) u.constDouble();
                yield Float.isNaN(f) ? new Expr("Float.NaN", t, ATOM) : Float.isInfinite(f)
                        ? new Expr(f > 0 ? "Float.POSITIVE_INFINITY" : "Float.NEGATIVE_INFINITY", t, ATOM) : number(f + "f", t);
            }
            case DOUBLE -> {
                double d = u.constDouble();
                yield Double.isNaN(d) ? new Expr("Double.NaN", t, ATOM) : Double.isInfinite(d)
                        ? new Expr(d > 0 ? "Double.POSITIVE_INFINITY" : "Double.NEGATIVE_INFINITY", t, ATOM) : number(Double.toString(d), t);
            }
            default -> throw new IllegalStateException("a constant is a scalar");
        };
    }

    private static Expr number(String text, JType t) {
        return new Expr(text.startsWith("-") ? "(" + text + ")" : text, t, ATOM);
    }

    private static Expr lit(long v, JType t) {
        return number(t == JType.LONG ? v + "L" : Long.toString(v), t);
    }

    private static Expr zero(JType t) {
        return switch (t) {
            case BOOLEAN -> new Expr("false", t, ATOM);
            case INT -> new Expr("0", t, ATOM);
            case LONG -> new Expr("0L", t, ATOM);
            case FLOAT -> new Expr("0f", t, ATOM);
            case DOUBLE -> new Expr("0.0", t, ATOM);
            default -> throw new IllegalStateException("zero(" + t + "): not a scalar type");
        };
    }

    private Expr load(UOp u) {
        Slot p = (Slot) u.src(0).arg();
        DType dt = u.dtype();
        if (dt != p.dtype()) throw new IllegalArgumentException("kernel " + program.name() + " loads " + dt + " from " + p.name() + " of " + p.dtype());
        Expr index = index(u.src(1));
        String get = p.name() + ".get(" + layout(dt) + ", " + offset(index, dt) + ")";
        Expr read = switch (dt) {
            case BOOL -> new Expr(get + " != 0", JType.BOOLEAN, EQ);
            case I8, I16, I32, I64, U64, F32, F64 -> new Expr(get, jtype(u), ATOM);
            case U8 -> new Expr("Byte.toUnsignedInt(" + get + ")", JType.INT, ATOM);
            case U16 -> new Expr("Short.toUnsignedInt(" + get + ")", JType.INT, ATOM);
            case U32 -> new Expr("Integer.toUnsignedLong(" + get + ")", JType.LONG, ATOM);
            case F16 -> new Expr("Float.float16ToFloat(" + get + ")", JType.FLOAT, ATOM);
            case BF16 -> helperCall(Helper.BF16_TO_FLOAT, JType.FLOAT, new Expr(get, JType.INT, ATOM));
            case Q8_0, Q4_0 -> throw new IllegalArgumentException("kernel " + program.name() + " loads packed dtype " + dt);
        };
        if (u.src().size() < 3 || u.src(2).isConst() && u.src(2).constLong() != 0) return read;
        if (u.src(2).isConst()) return zero(read.type);
        Expr gate = ref(u.src(2)); // a false gate yields 0 without reading
        return cond(gate, read, zero(read.type), read.type);
    }

    private static String layout(DType dt) {
        return switch (dt) {
            case BOOL, I8, U8 -> "JAVA_BYTE";
            case I16, U16, F16, BF16 -> "JAVA_SHORT_UNALIGNED";
            case I32, U32 -> "JAVA_INT_UNALIGNED";
            case I64, U64 -> "JAVA_LONG_UNALIGNED";
            case F32 -> "JAVA_FLOAT_UNALIGNED";
            case F64 -> "JAVA_DOUBLE_UNALIGNED";
            case Q8_0, Q4_0 -> throw new IllegalArgumentException("packed dtype " + dt + " has no element layout");
        };
    }

    /**
     * An element index for a load or store. Its linear part (i64 +, * and negation) is computed in long,
     * each int term widened first, even where range analysis would allow int: a memory offset that is a
     * long linear function of the loop counters lets the JIT hoist the segment's bounds checks out of
     * loops (an int sum widened at the end would have to be checked on every access).
     */
    private Expr index(UOp u) {
        boolean linear = u.dtype() == DType.I64 && (u.op() == Op.ADD || u.op() == Op.MUL || u.op() == Op.NEG);
        if (!linear || jtype(u) == JType.LONG) return ref(u);
        Form key = new Form(u, JType.LONG);
        Expr known = known(key);
        if (known != null) return known;
        Expr e;
        if (u.op() == Op.NEG) {
            e = new Expr("-" + paren(widen(index(u.src(0))), ATOM), JType.LONG, UNARY);
        } else {
            boolean minus = u.op() == Op.ADD && u.src(1).op() == Op.NEG;
            Expr a = index(u.src(0)), b = index(minus ? u.src(1).src(0) : u.src(1));
            if (a.type == JType.INT && b.type == JType.INT) { // one long operand makes the operation long
                if (isLiteral(a)) b = widen(b);
                else a = widen(a);
            }
            e = minus ? bin(a, "-", b, ADD) : u.op() == Op.ADD ? addText(a, b, JType.LONG) : bin(a, "*", b, MUL);
        }
        if (e.text.length() > INLINE_LIMIT) e = local(e);
        scopes.peek().put(key, e);
        return e;
    }

    private static Expr widen(Expr e) { return e.type == JType.INT ? cast("long", e) : e; }

    private static boolean isLiteral(Expr e) { return e.text.matches("\\(?-?\\d+L?\\)?"); }

    /** The byte offset of element {@code index} (a long expression). */
    private static String offset(Expr index, DType dt) {
        int size = dt.itemSize();
        if (size == 1) return index.text;
        return bin(index, "*", new Expr(size + "L", JType.LONG, ATOM), MUL).text;
    }

    private String storeValue(Expr v, DType dt) {
        return switch (dt) {
            case BOOL -> "(byte) (" + v.text + " ? 1 : 0)";
            case I8, U8 -> cast("byte", v).text;
            case I16, U16 -> cast("short", v).text;
            case U32 -> cast("int", v).text;
            case I32, I64, U64, F32, F64 -> v.text;
            case F16 -> "Float.floatToFloat16(" + v.text + ")";
            case BF16 -> helperCall(Helper.BF16_BITS, JType.INT, v).text;
            case Q8_0, Q4_0 -> throw new IllegalArgumentException("packed dtype " + dt + " has no element values");
        };
    }

    private Expr compute(UOp u) {
        Op op = u.op();
        DType dt = u.dtype();
        JType t = jtype(u);
        return switch (op) {
            case CAST -> cast(ref(u.src(0)), u.src(0).dtype(), dt, t);
            case BITCAST -> bitcast(ref(u.src(0)), u.src(0).dtype(), dt);
            case WHERE -> dt.isBool() && (u.src(1).isConst() || u.src(2).isConst()) ? boolWhere(u)
                    : cond(ref(u.src(0)), ref(u.src(1)), ref(u.src(2)), t);
            case ADD -> {
                UOp x = dt.isBool() ? null : negated(u.src(1));
                if (x == null) yield binary(op, dt, t, ref(u.src(0)), ref(u.src(1)), u.src(0), u.src(1));
                Expr a = ref(u.src(0)), b = ref(x); // a + (-b) is a - b, bit for bit, in floats and in wrapping integers
                if (dt.isFloat()) yield round(dt, bin(a, "-", b, ADD));
                if (t == JType.LONG && a.type == JType.INT && b.type == JType.INT) a = cast("long", a);
                yield wrap(dt, t, bin(a, "-", b, ADD));
            }
            default -> switch (op.group()) {
                case UNARY -> unary(op, dt, t, ref(u.src(0)));
                case BINARY -> binary(op, u.src(0).dtype(), t, ref(u.src(0)), ref(u.src(1)), u.src(0), u.src(1));
                default -> throw new IllegalArgumentException("kernel " + program.name() + " has a " + op + " node inside an expression");
            };
        };
    }

    /** The {@code x} of {@code -x} (a NEG, or for integers a multiplication by -1), else null. */
    private static UOp negated(UOp u) {
        if (u.op() == Op.NEG) return u.src(0);
        if (u.op() == Op.MUL && !u.dtype().isFloat() && u.src(1).isConst() && u.src(1).constLong() == -1) return u.src(0);
        return null;
    }

    /** A bool WHERE with a constant branch is plain logic. */
    private Expr boolWhere(UOp u) {
        Expr c = ref(u.src(0));
        Expr notC = new Expr("!" + paren(c, ATOM), JType.BOOLEAN, UNARY);
        boolean constTrue = u.src(1).isConst();
        UOp other = u.src(constTrue ? 2 : 1);
        boolean k = u.src(constTrue ? 1 : 2).constLong() != 0;
        if (other.isConst()) return (other.constLong() != 0) == k ? ref(other) : constTrue == k ? c : notC;
        Expr x = ref(other);
        // c ? k : x  is  c | x (k true) or !c & x;   c ? x : k  is  !c | x (k true) or c & x
        return k ? bin(constTrue ? c : notC, "|", x, OR) : bin(constTrue ? notC : c, "&", x, AND);
    }

    // ---------------------------------------------------------------- elementwise ops

    private Expr unary(Op op, DType dt, JType t, Expr a) {
        if (dt.isBool()) {
            return switch (op) {
                case NEG, TRUNC -> a; // wrap(bool, -x) == x
                default -> throw notDefined(op, dt);
            };
        }
        if (!dt.isFloat()) {
            return switch (op) {
                case NEG -> wrap(dt, t, new Expr("-" + paren(a, ATOM), t, UNARY));
                case TRUNC -> a;
                default -> throw new IllegalArgumentException("kernel " + program.name() + ": " + op + " is not defined on " + dt + "; cast to a float first");
            };
        }
        return switch (op) {
            case EXP2 -> dt == DType.F32 ? helperCall(Helper.EXP2F, JType.FLOAT, a)
                    : fromDouble(dt, call("Math.pow", JType.DOUBLE, new Expr("2", JType.INT, ATOM), a));
            case LOG2 -> fromDouble(dt, helperCall(Helper.LOG2, JType.DOUBLE, a));
            case SIN -> fromDouble(dt, call("Math.sin", JType.DOUBLE, a));
            case SQRT -> fromDouble(dt, call("Math.sqrt", JType.DOUBLE, a));
            // 1/x in float equals 1.0/x in double rounded to float (division rounds innocuously twice)
            case RECIP -> round(dt, bin(t == JType.DOUBLE ? new Expr("1.0", t, ATOM) : new Expr("1f", t, ATOM), "/", a, MUL));
            case NEG -> new Expr("-" + paren(a, ATOM), t, UNARY);
            case TRUNC -> fromDouble(dt, helperCall(Helper.TRUNC, JType.DOUBLE, a));
            default -> throw notDefined(op, dt);
        };
    }

    /**
     * A binary op on operands of dtype {@code in}, giving Java type {@code t}. The operands' nodes (or null)
     * let range analysis drop zero tests and use plain {@code /} and {@code %} where they are exact.
     */
    private Expr binary(Op op, DType in, JType t, Expr a, Expr b, UOp an, UOp bn) {
        if (in.isBool()) return boolBinary(op, a, b);
        if (in.isFloat()) return floatBinary(op, in, t, a, b);
        boolean u64 = in == DType.U64;
        if (t == JType.LONG && a.type == JType.INT && b.type == JType.INT) a = cast("long", a); // i64 math on int operands
        boolean nonZero = bn != null && (bn.vmin() > 0 || bn.vmax() < 0);
        // unsigned values below 64 bits are held non-negative, where Java's / and % are floor division
        boolean plain = in.isUnsigned() && !u64 || an != null && bn != null && an.vmin() >= 0 && bn.vmin() > 0;
        int bits = in.bits();
        return switch (op) {
            case ADD -> wrap(in, t, addText(a, b, t));
            case MUL -> wrap(in, t, isMinusOne(b) ? new Expr("-" + paren(a, ATOM), t, UNARY) : bin(a, "*", b, MUL));
            case DIV -> divide(b, nonZero, t, u64 ? call("Long.divideUnsigned", t, a, b) : wrapSmall(in, t, bin(a, "/", b, MUL)));
            case MOD -> divide(b, nonZero, t, u64 ? call("Long.remainderUnsigned", t, a, b) : bin(a, "%", b, MUL));
            case FLOORDIV -> divide(b, nonZero, t, u64 ? call("Long.divideUnsigned", t, a, b)
                    : plain ? bin(a, "/", b, MUL) : wrapSmall(in, t, call("Math.floorDiv", t, a, b)));
            case FLOORMOD -> divide(b, nonZero, t, u64 ? call("Long.remainderUnsigned", t, a, b)
                    : plain ? bin(a, "%", b, MUL) : call("Math.floorMod", t, a, b));
            case MAX -> u64 ? cond(new Expr("Long.compareUnsigned(" + a.text + ", " + b.text + ") >= 0", JType.BOOLEAN, REL), a, b, t)
                    : call("Math.max", t, a, b);
            case CMPLT -> u64 ? new Expr("Long.compareUnsigned(" + a.text + ", " + b.text + ") < 0", JType.BOOLEAN, REL) : bin(a, "<", b, REL);
            case CMPNE -> bin(a, "!=", b, EQ);
            case CMPEQ -> bin(a, "==", b, EQ);
            case AND -> bin(a, "&", b, AND); // normalised operands give a normalised result
            case OR -> bin(a, "|", b, OR);
            case XOR -> isMinusOne(b) ? new Expr("~" + paren(a, ATOM), t, UNARY) : bin(a, "^", b, XOR);
            case SHL -> shift(b, bits, bn, zero(t), wrap(in, t, bin(a, "<<", b, SHIFT)));
            case SHR -> shift(b, bits, bn, in.isUnsigned() ? zero(t) : cond(bin(a, "<", zero(a.type), REL), lit(-1, t), zero(t), t),
                    bin(a, in.isUnsigned() ? ">>>" : ">>", b, SHIFT));
            case THREEFRY -> wrap(in, t, helperCall(Helper.THREEFRY, JType.LONG, a, b));
            default -> throw notDefined(op, in);
        };
    }

    private static boolean isMinusOne(Expr e) { return e.text.equals("(-1)") || e.text.equals("(-1L)"); }

    /** {@code a + b}, written {@code a - c} when {@code b} is a negative literal (the same bits in two's complement). */
    private static Expr addText(Expr a, Expr b, JType t) {
        boolean negLiteral = b.prec == ATOM && b.text.startsWith("(-");
        if (negLiteral && !b.text.equals("(" + Long.MIN_VALUE + "L)") && !b.text.equals("(" + Integer.MIN_VALUE + ")")) {
            return bin(a, "-", new Expr(b.text.substring(2, b.text.length() - 1), t, ATOM), ADD);
        }
        return bin(a, "+", b, ADD);
    }

    /** floorDiv(MIN, -1) overflows i8 and i16 in int arithmetic; wrap as Alu does. */
    private static Expr wrapSmall(DType in, JType t, Expr e) {
        return in == DType.I8 || in == DType.I16 ? wrap(in, t, e) : e;
    }

    /** Integer division or remainder, 0 when the divisor is 0 (unless range analysis excludes it). */
    private static Expr divide(Expr b, boolean nonZero, JType t, Expr quotient) {
        return nonZero ? quotient : cond(bin(b, "==", zero(b.type), EQ), zero(t), quotient, t);
    }

    /** A shift, {@code outOfRange} when the amount is negative or at least the width. */
    private static Expr shift(Expr b, int bits, UOp amount, Expr outOfRange, Expr shifted) {
        if (amount != null && amount.vmin() >= 0 && amount.vmax() < bits) return shifted;
        Expr bad = new Expr(paren(b, REL + 1) + " < 0 || " + paren(b, REL + 1) + " >= " + bits, JType.BOOLEAN, COND + 2);
        return cond(bad, outOfRange, shifted, shifted.type);
    }

    private Expr boolBinary(Op op, Expr a, Expr b) {
        return switch (op) {
            case ADD, OR, MAX -> bin(a, "|", b, OR); // bool arithmetic wraps to 0/1: a + b != 0
            case MUL, AND, DIV, FLOORDIV -> bin(a, "&", b, AND); // division by true is identity, by false 0
            case XOR -> bin(a, "^", b, XOR);
            case CMPNE -> bin(a, "!=", b, EQ);
            case CMPEQ -> bin(a, "==", b, EQ);
            case CMPLT -> bin(new Expr("!" + paren(a, ATOM), JType.BOOLEAN, UNARY), "&", b, AND);
            case MOD, FLOORMOD -> zero(JType.BOOLEAN); // x % 1 == 0 and x % 0 == 0
            case SHL, SHR -> bin(a, "&", new Expr("!" + paren(b, ATOM), JType.BOOLEAN, UNARY), AND); // shifting by 1 >= width gives 0
            case THREEFRY -> new Expr(helperCall(Helper.THREEFRY, JType.LONG, cond(a, lit(1, JType.LONG), zero(JType.LONG), JType.LONG),
                    cond(b, lit(1, JType.LONG), zero(JType.LONG), JType.LONG)).text + " != 0", JType.BOOLEAN, EQ);
            default -> throw notDefined(op, DType.BOOL);
        };
    }

    private Expr floatBinary(Op op, DType dt, JType t, Expr a, Expr b) {
        return switch (op) {
            // in float these round once, exactly like Alu's double result rounded to the dtype
            case ADD -> round(dt, bin(a, "+", b, ADD));
            case MUL -> round(dt, bin(a, "*", b, MUL));
            case DIV -> round(dt, bin(a, "/", b, MUL));
            case MOD -> round(dt, bin(a, "%", b, MUL)); // fmod is exact
            case FLOORDIV -> fromDouble(dt, helperCall(Helper.FLOOR_DIV, JType.DOUBLE, a, b));
            case FLOORMOD -> fromDouble(dt, helperCall(Helper.FLOOR_MOD, JType.DOUBLE, a, b));
            case MAX -> call("Math.max", t, a, b); // NaN wins, +0 > -0
            case CMPLT -> bin(a, "<", b, REL);
            case CMPNE -> bin(a, "!=", b, EQ);
            case CMPEQ -> bin(a, "==", b, EQ);
            default -> throw notDefined(op, dt);
        };
    }

    private IllegalArgumentException notDefined(Op op, DType dt) {
        return new IllegalArgumentException("kernel " + program.name() + ": " + op + " is not defined on " + dt);
    }

    // ---------------------------------------------------------------- vector lanes

    /** A node's value in another form than its scalar one: a vector or mask of {@code type}, or (type null) an array of its lanes. */
    private record Form(UOp node, JType type) {}

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
                        yield plus(access(vector, st.index(), null), cost(st.value(), seen));
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
        scopes.push(new HashMap<>());
        for (Stmt s : l.body().body()) stmt(s);
        scopes.pop();
        lanes = null;
    }

    /** {@code u} as a vector (or mask) of type {@code t}: its lanes if they differ, else its value in every lane. */
    private Expr vec(UOp u, JType t) {
        Form key = new Form(u, t);
        Expr known = known(key);
        if (known != null) return known;
        Expr e;
        if (!dependent(u)) {
            e = local(new Expr(broadcast(ref(u), t), t, ATOM));
        } else {
            Expr v = vref(u);
            if (v.type == t) return v;
            if (v.type.isMask() && t.isMask()) {
                e = local(new Expr(paren(v, ATOM) + ".cast(" + species(t.element()) + ")", t, ATOM));
            } else if (v.type == JType.INT_VECTOR && t == JType.LONG_VECTOR) {
                e = local(new Expr("(LongVector) " + paren(v, ATOM) + ".convertShape(VectorOperators.I2L, " + species(JType.LONG) + ", 0)", t, UNARY));
            } else {
                throw new IllegalStateException("kernel " + program.name() + ": no conversion from " + v.type.name + " to " + t.name);
            }
        }
        scopes.peek().put(key, e);
        return e;
    }

    /** A scalar's value in every lane of a vector (or mask) of type {@code t}. */
    private String broadcast(Expr scalar, JType t) {
        String value = scalar.text.startsWith("(-") && scalar.prec == ATOM ? scalar.text.substring(1, scalar.text.length() - 1) : scalar.text;
        return t.isMask() ? species(t.element()) + ".maskAll(" + value + ")" : t.name + ".broadcast(" + species(t.element()) + ", " + value + ")";
    }

    /** The vector of a lane-dependent node, in its own {@link #vectorType}, computed once per block. */
    private Expr vref(UOp u) {
        JType t = vectorType(u);
        Form key = new Form(u, t);
        Expr known = known(key);
        if (known != null) return known;
        Expr e = switch (u.op()) {
            case DEFINE_VAR -> u.arg() instanceof Slot r ? new Expr(name(r), t, ATOM)
                    : local(new Expr(t.name + ".zero(" + species(t.element()) + ").addIndex(1)", t, ATOM)); // the lane numbers
            case LOAD -> local(vectorLoad(u, t));
            default -> local(vectorCompute(u, t));
        };
        scopes.peek().put(key, e);
        return e;
    }

    /** {@code e} with the lane variable replaced by lane {@code l}'s number: that lane's scalar expression. */
    private UOp atLane(UOp e, int l) { return Optimizer.substitute(e, Map.of(lanes.index(), UOp.index(l))); }

    /** Lane {@code l} of a lane-dependent node, from an array of its lanes (made once per block). */
    private Expr laneOf(UOp u, String l) {
        Form key = new Form(u, null);
        Expr array = known(key);
        if (array == null) {
            Expr v = vref(u);
            String name = "v" + values++;
            line(v.type.lane().name + "[] " + name + " = " + paren(v, ATOM) + ".toArray();");
            array = new Expr(name, v.type, ATOM);
            scopes.peek().put(key, array);
        }
        return new Expr(array.text + "[" + l + "]", array.type.lane(), ATOM);
    }

    private Expr zeroVector(JType t) {
        return new Expr(t.isMask() ? species(t.element()) + ".maskAll(false)" : t.name + ".zero(" + species(t.element()) + ")", t, ATOM);
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

    private boolean contiguous(UOp index) {
        OptionalLong s = Heuristics.stride(index, lanes.index());
        return s.isPresent() && s.getAsLong() == 1;
    }

    /**
     * A lane-dependent load: one vector load where the index is contiguous in the lanes (masked where
     * the gate differs between lanes: masked-off lanes are 0 and never read), else each lane's scalar load.
     */
    private Expr vectorLoad(UOp u, JType t) {
        Slot p = (Slot) u.src(0).arg();
        DType dt = u.dtype();
        UOp gate = u.src().size() > 2 ? u.src(2) : null;
        if (gate != null && gate.isConst()) {
            if (gate.constLong() == 0) return zeroVector(t);
            gate = null;
        }
        if (memoryVector(dt) == t && contiguous(u.src(1))) {
            String at = p.name() + ", " + offset(index(atLane(u.src(1), 0)), dt) + ", ORDER";
            if (gate == null) return new Expr(t.name + ".fromMemorySegment(" + species(t.element()) + ", " + at + ")", t, ATOM);
            if (dependent(gate)) {
                return new Expr(t.name + ".fromMemorySegment(" + species(t.element()) + ", " + at + ", " + vec(gate, t.mask()).text + ")", t, ATOM);
            }
            Expr g = ref(gate);
            return cond(g, new Expr(t.name + ".fromMemorySegment(" + species(t.element()) + ", " + at + ")", t, ATOM), zeroVector(t), t);
        }
        StringBuilder lanesText = new StringBuilder();
        for (int l = 0; l < lanes.count(); l++) lanesText.append(l == 0 ? "" : ", ").append(ref(atLane(u, l)).text);
        return new Expr(fromArray(t, "new " + t.lane().name + "[] {" + lanesText + "}"), t, ATOM);
    }

    /** A store of lane-dependent values: one vector store where the index is contiguous in the lanes, else lane by lane in order. */
    private void vectorStore(Stmt.Store st) {
        Slot p = st.param();
        DType dt = p.dtype();
        JType memory = memoryVector(dt);
        if (memory != null && fits(memory.element()) && contiguous(st.index())) {
            Expr first = index(atLane(st.index(), 0));
            line(paren(vec(st.value(), memory), ATOM) + ".intoMemorySegment(" + p.name() + ", " + offset(first, dt) + ", ORDER);");
            return;
        }
        Expr same = dependent(st.value()) ? null : ref(st.value());
        for (int l = 0; l < lanes.count(); l++) {
            Expr value = same != null ? same : laneOf(st.value(), Integer.toString(l));
            Expr index = index(atLane(st.index(), l));
            line(p.name() + ".set(" + layout(dt) + ", " + offset(index, dt) + ", " + storeValue(value, dt) + ");");
        }
    }

    private void vectorAccumulate(Stmt.Accumulate a) {
        Slot reg = a.register();
        JType t = vectorType(reg.uop());
        Expr v = vec(a.value(), t);
        String method = switch (a.kind()) {
            case SUM -> t.isMask() ? "or" : "add";
            case PROD -> t.isMask() ? "and" : "mul";
            // lanewise max and min are Math.max and Math.min: NaN wins, -0.0 is below 0.0 (as the scalar update)
            case MAX -> t.isMask() ? "or" : "max";
            case MIN -> t.isMask() ? "and" : "min";
        };
        line(name(reg) + " = " + name(reg) + "." + method + "(" + v.text + ");");
        invalidate(reg);
    }

    /** A method call on a vector. */
    private static Expr on(Expr receiver, String method, JType t, Expr... args) {
        StringBuilder s = new StringBuilder(paren(receiver, ATOM)).append('.').append(method).append('(');
        for (int i = 0; i < args.length; i++) s.append(i > 0 ? ", " : "").append(args[i].text);
        return new Expr(s.append(')').toString(), t, ATOM);
    }

    /**
     * A lane-dependent op of vector type {@code t}: lanewise vector operations where they are exactly the
     * scalar semantics (IEEE +, -, *, /, sqrt, Math.max; wrapping integer +, *, &, |, ^; comparisons;
     * exact conversions), else {@link #laneWise}.
     */
    private Expr vectorCompute(UOp u, JType t) {
        Op op = u.op();
        DType dt = u.dtype();
        if (op == Op.CAST) return vectorCast(u, t);
        if (op == Op.WHERE) {
            UOp c = u.src(0), x = u.src(1), y = u.src(2);
            if (!dependent(c)) return cond(ref(c), vec(x, t), vec(y, t), t);
            if (!t.isMask()) return on(vec(y, t), "blend", t, vec(x, t), vec(c, t.mask()));
            Expr m = vec(c, t);
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
            return on(vec(u.src(0), e), "compare", t, new Expr("VectorOperators." + cmp, t, ATOM), vec(u.src(1), e));
        }
        if (t.isMask()) { // bool ops on masks, as the scalar bool ops
            List<Expr> m = new ArrayList<>();
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
            case XOR -> on(vec(u.src(0), t), "lanewise", t, new Expr("VectorOperators.XOR", t, ATOM), vec(u.src(1), t));
            case DIV -> f ? on(vec(u.src(0), t), "div", t, vec(u.src(1), t)) : laneWise(u, t);
            // sqrt in float rounds like Alu's sqrt in double rounded to float (double has over 2p + 2 bits)
            case SQRT -> f ? on(vec(u.src(0), t), "sqrt", t) : laneWise(u, t);
            case RECIP -> f ? on(vec(UOp.constant(dt, 1), t), "div", t, vec(u.src(0), t)) : laneWise(u, t);
            case TRUNC -> f ? laneWise(u, t) : vec(u.src(0), t);
            default -> laneWise(u, t);
        };
    }

    /**
     * A lane-dependent cast: lanewise conversions where Java's conversion is Alu's (int and long to float
     * round once; float to long truncates and saturates, NaN to 0; widening is exact; long to int wraps),
     * bool masks by blending 0 and 1 and comparing with 0, the rest (float to int wraps through long) lane by lane.
     */
    private Expr vectorCast(UOp u, JType t) {
        UOp s = u.src(0);
        DType from = s.dtype(), to = u.dtype();
        if (from == to) return vec(s, t);
        if (to.isBool()) {
            if (from.isBool()) return vec(s, t);
            JType e = numericElement(s).vector();
            return on(vec(s, e), "compare", t, new Expr("VectorOperators.NE", t, ATOM), zero(e.lane())); // NaN is true
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
        return new Expr("(" + t.name + ") " + paren(vec(s, fe.vector()), ATOM) + ".convertShape(VectorOperators." + conversion + ", "
                + species(te) + ", 0)", t, UNARY);
    }

    /**
     * Any lane-dependent op, lane by lane with the scalar rendering (so exactly its semantics): the
     * operands' lanes from arrays, the results into an array, back into a vector.
     */
    private Expr laneWise(UOp u, JType t) {
        Op op = u.op();
        DType dt = u.dtype();
        JType lane = t.lane();
        List<Expr> a = new ArrayList<>();
        for (UOp s : u.src()) a.add(dependent(s) ? laneOf(s, "lane") : ref(s));
        Expr x = switch (op) {
            case WHERE -> cond(a.get(0), a.get(1), a.get(2), lane);
            case CAST -> cast(a.get(0), u.src(0).dtype(), dt, lane);
            case BITCAST -> bitcast(a.get(0), u.src(0).dtype(), dt);
            default -> switch (op.group()) {
                case UNARY -> unary(op, dt, lane, a.get(0));
                case BINARY -> binary(op, u.src(0).dtype(), lane, a.get(0), a.get(1), u.src(0), u.src(1));
                default -> throw new IllegalArgumentException("kernel " + program.name() + " has a " + op + " node inside an expression");
            };
        };
        String array = "v" + values++;
        line(lane.name + "[] " + array + " = new " + lane.name + "[" + lanes.count() + "];");
        line("for (int lane = 0; lane < " + lanes.count() + "; lane++) " + array + "[lane] = " + x.text + ";");
        return new Expr(fromArray(t, array), t, ATOM);
    }

    /** The name of the species constant for {@link #lanes} lanes of {@code element}, declared on first use. */
    private String species(JType element) {
        int n = lanes.count();
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

    // ---------------------------------------------------------------- rounding and wrapping

    /** A float-typed expression rounded to a float dtype (f32 and f64 values are already rounded). */
    private Expr round(DType dt, Expr e) {
        return switch (dt) {
            case F16 -> helperCall(Helper.F16, JType.FLOAT, e);
            case BF16 -> helperCall(Helper.BF16, JType.FLOAT, e);
            default -> e;
        };
    }

    /** A double-typed expression rounded to a float dtype as {@code Alu.round}: to float first, then narrower. */
    private Expr fromDouble(DType dt, Expr d) {
        return switch (dt) {
            case F64 -> d;
            case F32 -> cast("float", d);
            // to float rounding to odd, so the final rounding to f16/bf16 is the only one (as Alu)
            default -> round(dt, helperCall(Helper.ROUND_ODD, JType.FLOAT, d));
        };
    }

    /** An integer expression wrapped to {@code dt} held in Java type {@code t} ({@code Alu.wrap}). */
    private static Expr wrap(DType dt, JType t, Expr e) {
        return switch (dt) {
            case I8 -> cast("byte", e);
            case I16 -> cast("short", e);
            case U8 -> maskInt(e, "0xFF");
            case U16 -> maskInt(e, "0xFFFF");
            case I32 -> e.type == JType.LONG ? cast("int", e) : e;
            case U32 -> bin(e, "&", new Expr("0xFFFFFFFFL", JType.LONG, ATOM), AND);
            case I64 -> t == JType.INT && e.type == JType.LONG ? cast("int", e) : e; // int i64 is range-checked: no overflow
            case U64 -> e;
            default -> throw new IllegalArgumentException(dt + " is not an integer dtype");
        };
    }

    private static Expr maskInt(Expr e, String mask) {
        Expr m = bin(e, "&", new Expr(mask, e.type, ATOM), AND);
        return e.type == JType.LONG ? cast("int", m) : m;
    }

    // ---------------------------------------------------------------- casts

    /** {@code Alu.castToLong/castToDouble} from {@code from} to {@code to} (held in {@code t}). */
    private Expr cast(Expr a, DType from, DType to, JType t) {
        if (from == to) return a;
        if (to.isBool()) return from.isBool() ? a : bin(a, "!=", zero(a.type), EQ); // NaN != 0 is true, as in Alu
        if (!to.isFloat()) {
            if (from.isBool()) return cond(a, lit(1, t), zero(t), t);
            if (!from.isFloat()) return wrapTo(to, t, a);
            if (to == DType.U64) return helperCall(Helper.F2U64, JType.LONG, a);
            return wrapTo(to, t, cast("long", a)); // (long) truncates toward zero, NaN -> 0, saturates; then wrap
        }
        if (from.isBool()) return cond(a, t == JType.DOUBLE ? new Expr("1.0", t, ATOM) : new Expr("1f", t, ATOM), zero(t), t);
        if (!from.isFloat()) {
            if (to == DType.F16 || to == DType.BF16) {
                // up to 16 bits the value is exact in float, so rounding it to f16/bf16 is the only rounding
                if (a.type == JType.INT && from.bits() <= 16) return round(to, cast("float", a));
                // wider magnitudes: to double and float rounding to odd, then the one real rounding (as Alu)
                Expr odd = helperCall(from == DType.U64 ? Helper.U64_ODD : Helper.S64_ODD, JType.DOUBLE, a);
                return round(to, helperCall(Helper.ROUND_ODD, JType.FLOAT, odd));
            }
            if (from == DType.U64) {
                if (to == DType.F32) return helperCall(Helper.U64_TO_FLOAT, JType.FLOAT, a);
                return helperCall(Helper.U64_TO_DOUBLE, JType.DOUBLE, a);
            }
            return switch (to) {
                case F64 -> cast("double", a);
                default -> cast("float", a); // one rounding from int or long, as Alu
            };
        }
        return switch (to) {
            case F64 -> cast("double", a);
            case F32 -> from == DType.F64 ? cast("float", a) : a;
            default -> from == DType.F64 ? fromDouble(to, a) : round(to, a);
        };
    }

    /** An integer (int or long) expression wrapped to integer dtype {@code to}. */
    private static Expr wrapTo(DType to, JType t, Expr a) {
        if (to == DType.I64 || to == DType.U64) return t == JType.INT && a.type == JType.LONG ? cast("int", a) : a;
        return wrap(to, t, a);
    }

    /** {@code Alu.bitsOf} then {@code wrap} or {@code floatFromBits}. */
    private Expr bitcast(Expr a, DType from, DType to) {
        Expr bits = switch (from) {
            case BOOL -> cond(a, lit(1, JType.INT), zero(JType.INT), JType.INT);
            case F16 -> new Expr("Float.floatToFloat16(" + a.text + ")", JType.INT, ATOM);
            case BF16 -> helperCall(Helper.BF16_BITS, JType.INT, a);
            case F32 -> new Expr("Float.floatToRawIntBits(" + a.text + ")", JType.INT, ATOM);
            case F64 -> new Expr("Double.doubleToRawLongBits(" + a.text + ")", JType.LONG, ATOM);
            default -> a;
        };
        return switch (to) {
            case BOOL -> bin(bits, "!=", zero(bits.type), EQ);
            case F16 -> new Expr("Float.float16ToFloat(" + cast("short", bits).text + ")", JType.FLOAT, ATOM);
            case BF16 -> helperCall(Helper.BF16_TO_FLOAT, JType.FLOAT, cast("short", bits));
            case F32 -> new Expr("Float.intBitsToFloat(" + (bits.type == JType.LONG ? cast("int", bits) : bits).text + ")", JType.FLOAT, ATOM);
            case F64 -> new Expr("Double.longBitsToDouble(" + bits.text + ")", JType.DOUBLE, ATOM);
            default -> wrapTo(to, to == DType.I64 || to == DType.U32 || to == DType.U64 ? JType.LONG : JType.INT, bits);
        };
    }

    // ---------------------------------------------------------------- text

    private static String paren(Expr e, int prec) { return e.prec >= prec ? e.text : "(" + e.text + ")"; }

    /** A left-associative binary operator. */
    private static Expr bin(Expr a, String op, Expr b, int prec) {
        JType t = switch (prec) {
            case REL, EQ -> JType.BOOLEAN;
            default -> a.type == JType.BOOLEAN ? JType.BOOLEAN : wider(a.type, b.type);
        };
        if (op.equals("<<") || op.equals(">>") || op.equals(">>>")) t = a.type;
        return new Expr(paren(a, prec) + " " + op + " " + paren(b, prec + 1), t, prec);
    }

    private static JType wider(JType a, JType b) { return a.ordinal() >= b.ordinal() ? a : b; }

    private static Expr cast(String type, Expr e) {
        JType t = switch (type) {
            case "long" -> JType.LONG;
            case "float" -> JType.FLOAT;
            case "double" -> JType.DOUBLE;
            default -> JType.INT; // byte, short and int all widen to int
        };
        return new Expr("(" + type + ") " + paren(e, UNARY), t, UNARY);
    }

    private static Expr cond(Expr c, Expr a, Expr b, JType t) {
        return new Expr(paren(c, COND + 1) + " ? " + paren(a, COND + 1) + " : " + paren(b, COND), t, COND);
    }

    private static Expr call(String fn, JType t, Expr... args) {
        StringBuilder s = new StringBuilder(fn).append('(');
        for (int i = 0; i < args.length; i++) s.append(i > 0 ? ", " : "").append(args[i].text);
        return new Expr(s.append(')').toString(), t, ATOM);
    }

    private Expr helperCall(Helper h, JType t, Expr... args) {
        helpers.add(h);
        if (h == Helper.BF16) helpers.addAll(List.of(Helper.BF16_BITS, Helper.BF16_TO_FLOAT)); // bf16 is built on them
        if (h == Helper.S64_ODD) helpers.add(Helper.U64_ODD); // the signed form is built on the unsigned one
        return call(h.method, t, args);
    }

    private void line(String s) {
        out.append("    ".repeat(indent)).append(s).append('\n');
    }

    private static String javaString(String s) {
        return s.replace("\\", "\\\\").replace("\"", "\\\"").replaceAll("[\\p{Cntrl}]", "?");
    }

    private static String javaComment(String s) {
        return s.replace("*/", "*_/").replaceAll("[\\p{Cntrl}]", "?");
    }

    // ---------------------------------------------------------------- helpers (copies of Alu's definitions)

    private static String helperSource(Helper h) {
        return switch (h) {
            case EXP2F -> """
                        /**
                         * (float) Math.pow(2, x), bit for bit, about 2.5 times faster. In the normal range
                         * 2^x = 2^n * 2^f with n = rint(x) and f = x - n in [-1/2, 1/2] (exact), 2^f by its Taylor
                         * polynomial of degree 11: relative error below 2^-46, Math.pow's below 2^-52 (1 ulp), so
                         * both round to the same float unless the value lies within 2^-40 of a rounding midpoint
                         * between two floats, where Math.pow decides. Checked for every float by Exp2Verifier.
                         */
                        private static float exp2f(float x) {
                            if (!(x >= -126f && x < 128f)) return (float) Math.pow(2, x); // NaN, infinities, overflow, subnormal results
                            double n = Math.rint(x), f = x - n;
                            double p = 1 + f * (0.6931471805599453 + f * (0.24022650695910072 + f * (0.05550410866482158
                                    + f * (0.009618129107628477 + f * (0.0013333558146428443 + f * (1.540353039338161E-4
                                    + f * (1.5252733804059841E-5 + f * (1.321548679014431E-6 + f * (1.01780860092397E-7
                                    + f * (7.054911620801123E-9 + f * 4.4455382718708116E-10))))))))));
                            double d = p * Double.longBitsToDouble((long) (n + 1023) << 52);
                            long dropped = Double.doubleToRawLongBits(d) & 0x1FFFFFFFL; // the 29 bits rounding to float drops
                            if (Math.abs(dropped - 0x10000000L) < 4096) return (float) Math.pow(2, x);
                            return (float) d;
                        }
                    """;
            case F16 -> """
                        /** Rounds to the nearest f16 value (ties to even). */
                        private static float f16(float f) { return Float.float16ToFloat(Float.floatToFloat16(f)); }
                    """;
            case BF16 -> """
                        /** Rounds to the nearest bf16 value (ties to even). */
                        private static float bf16(float f) { return bf16ToFloat(bf16Bits(f)); }
                    """;
            case BF16_BITS -> """
                        /** bf16 bits of a float, rounded to nearest even; NaN stays NaN. */
                        private static short bf16Bits(float f) {
                            int bits = Float.floatToRawIntBits(f);
                            if (Float.isNaN(f)) return (short) ((bits >>> 16) | 0x40);
                            return (short) ((bits + 0x7FFF + ((bits >>> 16) & 1)) >>> 16);
                        }
                    """;
            case BF16_TO_FLOAT -> """
                        private static float bf16ToFloat(int bits) { return Float.intBitsToFloat((bits & 0xFFFF) << 16); }
                    """;
            case FLOOR_DIV -> """
                        /** Float floor division as Alu (NumPy's divmod): exact quotients stay exact, inf // x is NaN. */
                        private static double floorDiv(double a, double b) {
                            if (b == 0) return a / b;
                            double mod = a % b;
                            double div = (a - mod) / b;
                            if (mod != 0 && (b < 0) != (mod < 0)) div -= 1;
                            if (div == 0) return Math.copySign(0.0, a / b);
                            double floor = Math.floor(div);
                            return div - floor > 0.5 ? floor + 1 : floor;
                        }
                    """;
            case FLOOR_MOD -> """
                        /** Float remainder with the divisor's sign; a zero result takes the divisor's sign too. */
                        private static double floorMod(double a, double b) {
                            double r = a % b;
                            if (r != 0 && (r < 0) != (b < 0)) r += b;
                            return r == 0 ? Math.copySign(0.0, b) : r;
                        }
                    """;
            case LOG2 -> """
                        private static final double LN2 = Math.log(2);

                        private static double log2(double x) {
                            double r = Math.log(x) / LN2;
                            double n = Math.rint(r);
                            // exact for powers of two, which the division above can miss by an ulp
                            return n == r || Math.abs(n - r) > 1e-9 || Math.scalb(1.0, (int) n) != x ? r : n;
                        }
                    """;
            case TRUNC -> """
                        private static double trunc(double x) { return x < 0 ? Math.ceil(x) : Math.floor(x); }
                    """;
            case F2U64 -> """
                        /** Float to u64: NaN is 0, truncation toward zero, values from 2^63 up keep their top bit. */
                        private static long f2u64(double v) { return v >= 0x1p63 ? (long) (v - 0x1p63) ^ Long.MIN_VALUE : (long) v; }
                    """;
            case U64_TO_DOUBLE -> """
                        /** u64 bits to double, rounding once (above 2^63: halve keeping the sticky bit). */
                        private static double u64ToDouble(long v) { return v < 0 ? 2.0 * ((v >>> 1) | (v & 1)) : (double) v; }
                    """;
            case ROUND_ODD -> """
                        /** double to float rounding to odd: exact values stay, inexact ones get an odd last bit (Alu). */
                        private static float toFloatRoundOdd(double v) {
                            float f = (float) v;
                            if (f == v || !Float.isFinite(f) || (Float.floatToRawIntBits(f) & 1) != 0) return f;
                            return Math.nextAfter(f, v);
                        }
                    """;
            case S64_ODD -> """
                        /** A signed long as a double rounded to odd (the sticky bit survives). */
                        private static double s64ToDoubleOdd(long v) {
                            boolean negative = v < 0;
                            double odd = u64ToDoubleOdd(negative ? -v : v);
                            return negative ? -odd : odd;
                        }
                    """;
            case U64_ODD -> """
                        /** An unsigned 64-bit magnitude as a double rounded to odd (the sticky bit survives). */
                        private static double u64ToDoubleOdd(long m) {
                            int drop = Math.max(0, 64 - Long.numberOfLeadingZeros(m) - 53);
                            long kept = m >>> drop;
                            if ((m & ((1L << drop) - 1)) != 0) kept |= 1;
                            return Math.scalb((double) kept, drop);
                        }
                    """;
            case U64_TO_FLOAT -> """
                        /** u64 bits to float, rounding once (above 2^63: halve keeping the sticky bit). */
                        private static float u64ToFloat(long v) { return v < 0 ? 2f * (float) ((v >>> 1) | (v & 1)) : (float) v; }
                    """;
            case THREEFRY -> """
                        private static final int[] ROTATIONS = {13, 15, 26, 6, 17, 29, 16, 24};

                        /** Threefry-2x32, 20 rounds; the low 32 bits of counter and key are word 0. */
                        private static long threefry(long counter, long key) {
                            int k0 = (int) key, k1 = (int) (key >>> 32);
                            int[] ks = {k0, k1, 0x1BD11BDA ^ k0 ^ k1};
                            int x0 = (int) counter + ks[0], x1 = (int) (counter >>> 32) + ks[1];
                            for (int round = 0; round < 20; round++) {
                                x0 += x1;
                                x1 = Integer.rotateLeft(x1, ROTATIONS[round % 8]);
                                x1 ^= x0;
                                if (round % 4 == 3) {
                                    int s = round / 4 + 1;
                                    x0 += ks[s % 3];
                                    x1 += ks[(s + 1) % 3] + s;
                                }
                            }
                            return (x0 & 0xFFFF_FFFFL) | ((long) x1 << 32);
                        }
                    """;
            case CHECK_VAR -> """
                        private static long checkVar(long value, long min, long max, String name) {
                            if (value < min || value > max) {
                                throw new IllegalArgumentException("variable '" + name + "' bound to " + value + ", outside its range [" + min + ", " + max + "]");
                            }
                            return value;
                        }
                    """;
        };
    }
}

package dev.kiln.clang;

import dev.kiln.types.DType;
import dev.kiln.types.Variable;
import dev.kiln.codegen.KernelProgram;
import dev.kiln.codegen.Optimizer;
import dev.kiln.codegen.Stmt;
import dev.kiln.ir.Op;
import dev.kiln.ir.Slot;
import dev.kiln.ir.UOp;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Deque;
import java.util.HashMap;
import java.util.HashSet;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.regex.Pattern;

/**
 * Renders a {@link KernelProgram} as a C11 function
 * {@code void name(void** bufs, const int64_t* vars, int64_t start, int64_t end)} that executes the
 * program with exactly the semantics of {@link dev.kiln.ir.Alu}, as {@link dev.kiln.cpu.JavaRenderer}
 * does for Java. The functions of one batch share one translation unit that starts with
 * {@link #prelude()}: the helpers that give C the semantics Java has built in.
 *
 * <p>{@code bufs} are the parameters (output first), {@code vars} the values of
 * {@link KernelProgram#variables()} in order; when the body is one output loop only its iterations
 * {@code [start, end)} run, otherwise the kernel is the single iteration 0 (see {@link KernelProgram#outerExtent}).
 * The caller ({@link CKernel}) checks buffer sizes, the range and the variables before every call. The
 * lowering keeps every index of an in-range iteration in range (a load whose index may be out of range
 * is gated, and a false gate never reads); range analysis proves that for almost every access, and the
 * rest are checked at run time: {@code bufs} has one more pointer, {@code bufs[params]}, to an
 * {@code int64_t[3]} where a kernel reports the first index out of range (1, parameter, index) and skips
 * the access, so even a lowering bug cannot make a kernel touch memory outside its buffers.
 *
 * <p>C has undefined behaviour where Alu has answers, so the code never relies on it: signed integer
 * arithmetic that range analysis cannot prove free of overflow is done in unsigned arithmetic and
 * converted back (two's complement wrap, as GCC and Clang define the conversion), division and
 * remainder by zero or by -1 and shifts by the width or more go through helpers, and float-to-integer
 * conversions saturate like Java's {@code (long)} before wrapping. Floats follow Alu's rounding: f16 and
 * bf16 values are held in {@code float} and rounded back after every operation with ports of Java's
 * conversions, ops that Alu computes in double (floor division and modulo, exp2, log2, sin, sqrt,
 * trunc) are computed in double and rounded to float through round-to-odd when the dtype is narrower.
 * Multiply-add is two roundings; the compiler must not contract it ({@code -ffp-contract=off}).
 *
 * <p>Vectorisation: output loops (GLOBAL, THREAD) carry {@code KILN_INDEPENDENT}, which tells the
 * compiler their iterations do not depend on each other, so it needs no runtime alias checks. An
 * {@link Stmt.LoopKind#UPCAST} loop is distributed over its statements ("lanes"): each statement runs
 * for all lanes in a short loop of its own, and registers become arrays with one element per lane, so a
 * reduction per output lane (matmul) becomes one vector operation per reduction step while every lane
 * still accumulates in program order.
 *
 * <p>The CUDA renderer ({@link dev.kiln.cuda.CudaRenderer}) shares all of this, expressions and statements
 * alike, and replaces only what makes a C function a GPU kernel: the signature, the output loop and the
 * pragmas (see the protected methods).
 */
public sealed class CRenderer permits dev.kiln.cuda.CudaRenderer {
    // C operator precedences (higher binds tighter); casts and unary operators are UNARY.
    private static final int COND = 3, LOR = 4, OR = 6, XOR = 7, AND = 8, EQ = 9, REL = 10, SHIFT = 11, ADD = 12, MUL = 13,
            UNARY = 14, ATOM = 15;

    /** Expressions longer than this go to a named local even when they could be inlined. */
    private static final int INLINE_LIMIT = 60;

    private static final Pattern INT_LITERAL = Pattern.compile("\\(?-?\\d+\\)?");

    /** A rendered C expression: its text and precedence. */
    private record Expr(String text, int prec) {}

    private static final Set<String> C_WORDS = Set.of("auto", "break", "case", "char", "const", "continue", "default", "do",
            "double", "else", "enum", "extern", "float", "for", "goto", "if", "inline", "int", "long", "register", "restrict",
            "return", "short", "signed", "sizeof", "static", "struct", "switch", "typedef", "union", "unsigned", "void",
            "volatile", "while", "bool", "true", "false", "asm", "typeof",
            // C++ (CUDA) words and CUDA's built-in variables
            "and", "or", "not", "xor", "bitand", "bitor", "compl", "class", "new", "delete", "this", "template", "typename",
            "namespace", "using", "operator", "private", "protected", "public", "virtual", "friend", "try", "catch", "throw",
            "explicit", "mutable", "nullptr", "decltype", "constexpr", "noexcept", "static_assert", "alignas", "alignof",
            "threadIdx", "blockIdx", "blockDim", "gridDim", "warpSize",
            "bufs", "vars", "start", "end"); // the function's parameters

    /** The program being rendered. */
    protected final KernelProgram program;
    private final StringBuilder out = new StringBuilder();
    private int indent;
    private int values;
    private final Map<Variable, String> varNames = new HashMap<>();
    private final Set<String> usedNames = new HashSet<>();
    private final Deque<Map<UOp, Expr>> scopes = new ArrayDeque<>();
    private final Map<UOp, Set<Slot>> registersRead = new IdentityHashMap<>();
    /** UPCAST loops whose statements are being distributed, outermost first. */
    private final List<Stmt.Loop> lanes = new ArrayList<>();
    /** Registers defined inside distributed UPCAST loops: one array element per lane, by this index. */
    private final Map<Slot, String> lanedRegisters = new HashMap<>();
    /** Whether some access needs a run-time index check (and so the status pointer). */
    private boolean checked;

    /** A renderer of {@code program}; {@link #renderFunction} renders it once. */
    protected CRenderer(KernelProgram program) { this.program = program; }

    /**
     * The C function of {@code program} named {@code functionName} (without the prelude).
     *
     * @throws IllegalArgumentException if the name is not a C identifier, or the program uses an op on a
     *                                  dtype that has no meaning for it (as {@link dev.kiln.ir.Alu} would)
     */
    public static String render(KernelProgram program, String functionName) {
        checkFunctionName(functionName);
        return new CRenderer(program).renderFunction(functionName);
    }

    /** @throws IllegalArgumentException if {@code functionName} is not a C identifier */
    protected static void checkFunctionName(String functionName) {
        if (!functionName.matches("[A-Za-z_][A-Za-z0-9_]*") || C_WORDS.contains(functionName)) {
            throw new IllegalArgumentException("render: function name '" + functionName + "' is not a C identifier");
        }
    }

    /** The helpers every C-family prelude holds after its header (see {@code CPrelude.HELPERS}). */
    protected static String helpers() { return CPrelude.HELPERS; }

    /** The prelude every translation unit starts with (headers, helper functions). */
    public static String prelude() { return CPrelude.TEXT; }

    /** One translation unit: the prelude, then {@code functions}. */
    public static String translationUnit(List<String> functions) {
        StringBuilder s = new StringBuilder(CPrelude.TEXT);
        for (String f : functions) s.append('\n').append(f);
        return s.toString();
    }

    // ---------------------------------------------------------------- function and statements

    /** The whole function: its body first (which decides what it needs), then {@link #function} around it. */
    protected final String renderFunction(String functionName) {
        Stmt.Loop split = program.outputLoop();
        for (Variable v : program.variables()) name(v); // symbolic variables choose their names first
        indent = 1;
        scopes.push(new HashMap<>());
        if (split != null) {
            outputLoop(split);
        } else if (!program.body().body().isEmpty()) {
            singleIteration(program.body());
        }
        String body = out.toString();
        out.setLength(0);
        Set<Slot> written = new HashSet<>();
        collectStores(program.body(), written);
        return function(functionName, written, body);
    }

    /** Where the output loop {@code split} stops: {@code end}, or a symbolic axis's size if smaller. */
    protected final String stop(Stmt.Loop split) {
        return split.limit() == null ? "end" : "(end < " + name(split.limit()) + " ? end : " + name(split.limit()) + ")";
    }

    /** The output loop {@code split}, its iterations {@code [start, stop)} (see {@link #stop}). */
    protected void outputLoop(Stmt.Loop split) {
        String i = name(split.index());
        line("KILN_INDEPENDENT");
        line("for (int64_t " + i + " = start; " + i + " < " + stop(split) + "; " + i + "++) {");
        block(split.body());
        line("}");
    }

    /** A body without an output loop: the single iteration 0, run when {@code start < end}. */
    protected void singleIteration(Stmt.Block body) {
        line("if (start < end) {");
        block(body);
        line("}");
    }

    /** The pragma before an UNROLL loop of {@code extent} iterations. */
    protected String unrollPragma(long extent) { return "#pragma GCC unroll " + Math.min(extent, 64); }

    /**
     * The function around {@code body} (rendered at indent 1): its signature and the declarations of the
     * parameters (those in {@code written} are stored to) and variables.
     */
    protected String function(String functionName, Set<Slot> written, String body) {
        for (int i = 0; i < program.params().size(); i++) {
            Slot p = program.params().get(i);
            String t = storageType(p.dtype());
            String ptr = written.contains(p) ? t + "*" : "const " + t + "*";
            line(ptr + " " + p.name() + " = (" + ptr + ") bufs[" + i + "]; /* " + p.dtype() + "[" + program.sizes().get(i) + "]"
                    + (i == 0 ? ", output" : "") + " */");
        }
        if (checked) {
            line("int64_t* kiln_status = (int64_t*) bufs[" + program.params().size() + "]; /* where an index out of range is reported */");
        }
        for (int i = 0; i < program.variables().size(); i++) {
            Variable v = program.variables().get(i);
            line("const int64_t " + name(v) + " = vars[" + i + "]; /* " + comment(v.name()) + " in [" + v.min() + ", " + v.max() + "] */");
        }
        return "/* Kiln kernel " + comment(program.name()) + " (generated) */\n"
                + "KILN_EXPORT void " + functionName + "(void** bufs, const int64_t* vars, int64_t start, int64_t end) {\n"
                + out + body + "}\n";
    }

    private static void collectStores(Stmt s, Set<Slot> into) {
        switch (s) {
            case Stmt.Block b -> b.body().forEach(x -> collectStores(x, into));
            case Stmt.Loop l -> collectStores(l.body(), into);
            case Stmt.Store st -> into.add(st.param());
            default -> { }
        }
    }

    /** Statements of {@code b} one level deeper, in a scope of their own. */
    protected final void block(Stmt.Block b) {
        indent++;
        scopes.push(new HashMap<>());
        for (Stmt s : b.body()) stmt(s);
        scopes.pop();
        indent--;
    }

    private void stmt(Stmt s) {
        switch (s) {
            case Stmt.Block b -> b.body().forEach(this::stmt);
            case Stmt.Loop l when l.kind() == Stmt.LoopKind.UPCAST && distributable(l) -> {
                boolean outermost = lanes.isEmpty();
                if (outermost) { // a block of its own: its lane registers cannot clash with a sibling's
                    line("{");
                    indent++;
                }
                lanes.add(l);
                stmt(l.body());
                lanes.removeLast();
                if (outermost) {
                    indent--;
                    line("}");
                }
            }
            case Stmt.Loop l -> {
                String i = name(l.index());
                switch (l.kind()) {
                    case GLOBAL, THREAD, UPCAST -> line("KILN_INDEPENDENT");
                    case UNROLL -> line(unrollPragma(l.extent()));
                    case REDUCE -> { }
                }
                line("for (int64_t " + i + " = 0; " + i + " < " + (l.limit() != null ? name(l.limit()) : l.extent()) + "; " + i + "++) {");
                block(l.body());
                line("}");
            }
            case Stmt.Define d -> {
                if (!lanes.isEmpty()) declareLaned(d.register());
                inLanes(() -> define(d));
            }
            case Stmt.Accumulate a -> inLanes(() -> accumulate(a));
            case Stmt.Store st -> inLanes(() -> store(st));
        }
    }

    /**
     * Whether an UPCAST loop can be distributed over its statements: every register it accumulates into
     * is defined inside it (the lanes then never share a register, as UPCAST promises), or is read by no
     * statement of the loop (a GROUP's combine, which distributed runs lane by lane in order).
     */
    private static boolean distributable(Stmt.Loop l) {
        Set<Slot> defined = new HashSet<>(), accumulated = new HashSet<>();
        registers(l.body(), defined, accumulated);
        accumulated.removeAll(defined);
        return accumulated.isEmpty() || Collections.disjoint(accumulated, Optimizer.registersRead(l.body()));
    }

    private static void registers(Stmt s, Set<Slot> defined, Set<Slot> accumulated) {
        switch (s) {
            case Stmt.Block b -> b.body().forEach(x -> registers(x, defined, accumulated));
            case Stmt.Loop l -> registers(l.body(), defined, accumulated);
            case Stmt.Define d -> defined.add(d.register());
            case Stmt.Accumulate a -> accumulated.add(a.register());
            case Stmt.Store st -> { }
        }
    }

    /** Runs {@code body} once per lane of the UPCAST loops being distributed (directly when there are none). */
    private void inLanes(Runnable body) {
        if (lanes.isEmpty()) {
            body.run();
            return;
        }
        for (Stmt.Loop l : lanes) {
            String i = name(l.index());
            line("KILN_INDEPENDENT");
            line("for (int64_t " + i + " = 0; " + i + " < " + l.extent() + "; " + i + "++) {");
            indent++;
        }
        scopes.push(new HashMap<>());
        body.run();
        scopes.pop();
        for (int k = 0; k < lanes.size(); k++) {
            indent--;
            line("}");
        }
    }

    /** Declares a register defined inside distributed UPCAST loops: one element per lane, before the lane loops. */
    private void declareLaned(Slot reg) {
        long count = 1;
        String index = null;
        for (Stmt.Loop l : lanes) {
            count *= l.extent();
            index = index == null ? name(l.index()) : "(" + index + ") * " + l.extent() + " + " + name(l.index());
        }
        lanedRegisters.put(reg, index);
        line(valueType(reg.dtype()) + " " + reg.name() + "[" + count + "];");
    }

    private void define(Stmt.Define d) {
        if (lanes.isEmpty()) lanedRegisters.remove(d.register());
        Expr init = ref(d.init());
        Expr reg = register(d.register());
        line((lanedRegisters.containsKey(d.register()) ? "" : valueType(d.register().dtype()) + " ") + reg.text + " = " + init.text + ";");
    }

    private void store(Stmt.Store st) {
        Slot p = st.param();
        if (st.value().dtype() != p.dtype()) {
            throw new IllegalArgumentException("kernel " + program.name() + " stores " + st.value().dtype() + " into " + p.name() + " of " + p.dtype());
        }
        Expr index = ref(st.index());
        Expr value = ref(st.value());
        String store = p.name() + "[" + index.text + "] = " + storeValue(value, p.dtype()) + ";";
        line(inRange(st.index(), p) ? store : "if (" + rangeCheck(index, p).text + ") " + store);
    }

    private void accumulate(Stmt.Accumulate a) {
        Slot reg = a.register();
        DType dt = reg.dtype();
        Expr acc = register(reg);
        Expr v = ref(a.value());
        Expr r = switch (a.kind()) {
            case SUM -> binary(Op.ADD, dt, acc, v, null, null, null);
            case PROD -> binary(Op.MUL, dt, acc, v, null, null, null);
            case MAX -> binary(Op.MAX, dt, acc, v, null, null, null);
            case MIN -> { // as KernelEvaluator: NaN wins, else the smaller (the new value only if strictly smaller)
                if (dt.isBool()) yield bin(acc, "&", v, AND);
                if (dt.isFloat()) yield call(dt == DType.F64 ? "kiln_min_f64" : "kiln_min_f32", acc, v);
                yield cond(bin(v, "<", acc, REL), v, acc);
            }
        };
        line(acc.text + " = " + r.text + ";");
        // values computed from the register before this update are stale now
        for (Map<UOp, Expr> scope : scopes) scope.keySet().removeIf(u -> registersRead(u).contains(reg));
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

    private Expr register(Slot reg) {
        String index = lanedRegisters.get(reg);
        return new Expr(index == null ? reg.name() : reg.name() + "[" + index + "]", ATOM);
    }

    // ---------------------------------------------------------------- names and types

    /** The C name of {@code v}, unique in the function. */
    protected final String name(Variable v) {
        return varNames.computeIfAbsent(v, k -> {
            String base = k.name().replaceAll("[^A-Za-z0-9_]", "_");
            if (base.isEmpty() || !Character.isLetter(base.charAt(0))) base = "x" + base;
            // never collide with parameters, registers, values, helpers, C keywords, typedefs or macros
            if (base.matches("(p|acc|v)\\d+|kiln_.*|u?int\\d+_t|[A-Z][A-Z0-9_]*") || C_WORDS.contains(base)) base = "x_" + base;
            String n = base;
            for (int i = 2; !usedNames.add(n); i++) n = base + "_" + i;
            return n;
        });
    }

    /** The C type values of {@code dt} are computed in (f16 and bf16 in float). */
    static String valueType(DType dt) {
        return switch (dt) {
            case BOOL -> "bool";
            case I8 -> "int8_t";
            case U8 -> "uint8_t";
            case I16 -> "int16_t";
            case U16 -> "uint16_t";
            case I32 -> "int32_t";
            case U32 -> "uint32_t";
            case I64 -> "int64_t";
            case U64 -> "uint64_t";
            case F16, BF16, F32 -> "float";
            case F64 -> "double";
            case Q8_0, Q4_0 -> throw new IllegalArgumentException("packed dtype " + dt + " has no element values");
        };
    }

    /** The C type elements of {@code dt} are stored as (bool as a byte 0 or 1, f16 and bf16 as their bits). */
    protected static String storageType(DType dt) {
        return switch (dt) {
            case BOOL -> "uint8_t";
            case F16, BF16 -> "uint16_t";
            default -> valueType(dt);
        };
    }

    /** The unsigned type wrapping arithmetic of an integer dtype runs in (never promoted to signed int). */
    private static String wideUnsigned(DType dt) { return dt.bits() == 64 ? "uint64_t" : "uint32_t"; }

    private static String signedHelperSuffix(DType dt) { return "i" + dt.bits(); }

    // ---------------------------------------------------------------- expressions

    /** The expression for {@code u}: a literal, a variable or register, or a named local computed now. */
    private Expr ref(UOp u) {
        for (Map<UOp, Expr> scope : scopes) {
            Expr e = scope.get(u);
            if (e != null) return e;
        }
        Expr e = switch (u.op()) {
            case CONST -> literal(u);
            case DEFINE_VAR -> switch (u.arg()) {
                case Variable v -> new Expr(name(v), ATOM);
                case Slot s when s.kind() == Slot.Kind.REGISTER -> register(s);
                default -> throw new IllegalArgumentException("kernel " + program.name() + " reads parameter " + u.arg() + " outside a LOAD");
            };
            case LOAD -> local(u, load(u));
            case WHERE -> u.src(0).isConst() ? ref(u.src(0).constLong() != 0 ? u.src(1) : u.src(2)) : local(u, compute(u));
            default -> {
                Expr x = compute(u);
                yield inlinable(u) && x.text.length() <= INLINE_LIMIT ? x : local(u, x);
            }
        };
        if (u.op() != Op.CONST) scopes.peek().put(u, e);
        return e;
    }

    /** Index-style arithmetic that needs no wrapping stays inline, so index math reads as one formula. */
    private static boolean inlinable(UOp u) {
        if (u.dtype() != DType.I64 && u.dtype() != DType.I32) return false;
        return switch (u.op()) {
            case ADD, MUL, NEG -> noOverflow(u);
            case FLOORDIV, FLOORMOD -> u.src(0).vmin() >= 0 && u.src(1).vmin() > 0;
            default -> false;
        };
    }

    /**
     * Whether the exact result of a signed i32 or i64 node provably fits its dtype, so plain C arithmetic
     * (undefined on overflow) computes it: range analysis widens the bounds of anything that might
     * overflow to the whole dtype.
     */
    private static boolean noOverflow(UOp u) {
        DType dt = u.dtype();
        return (dt == DType.I32 || dt == DType.I64) && !(u.vmin() == dt.minInt() && u.vmax() == dt.maxInt());
    }

    private Expr local(UOp u, Expr e) {
        String n = "v" + values++;
        line(valueType(u.dtype()) + " " + n + " = " + e.text + ";");
        return new Expr(n, ATOM);
    }

    private Expr literal(UOp u) {
        DType dt = u.dtype();
        return switch (dt) {
            case BOOL -> new Expr(u.constLong() != 0 ? "true" : "false", ATOM);
            case I8, I16, U8, U16 -> number(Long.toString(u.constLong()));
            case I32 -> u.constLong() == Integer.MIN_VALUE ? new Expr("INT32_MIN", ATOM) : number(Long.toString(u.constLong()));
            case U32 -> new Expr(u.constLong() + "u", ATOM);
            case I64 -> u.constLong() == Long.MIN_VALUE ? new Expr("INT64_MIN", ATOM)
                    : u.constLong() >= Integer.MIN_VALUE && u.constLong() <= Integer.MAX_VALUE ? number(Long.toString(u.constLong()))
                    : new Expr("INT64_C(" + u.constLong() + ")", ATOM);
            case U64 -> new Expr("UINT64_C(0x" + Long.toHexString(u.constLong()) + ")", ATOM);
            case F16, BF16, F32 -> {
                float f = (float) u.constDouble();
                yield Float.isNaN(f) ? new Expr("NAN", ATOM) : Float.isInfinite(f)
                        ? new Expr(f > 0 ? "INFINITY" : "(-INFINITY)", ATOM) : number(f + "f");
            }
            case F64 -> {
                double d = u.constDouble();
                yield Double.isNaN(d) ? new Expr("((double) NAN)", ATOM) : Double.isInfinite(d)
                        ? new Expr(d > 0 ? "((double) INFINITY)" : "((double) -INFINITY)", ATOM) : number(Double.toString(d));
            }
            case Q8_0, Q4_0 -> throw new IllegalArgumentException("kernel " + program.name() + " has a constant of packed dtype " + dt);
        };
    }

    private static Expr number(String text) {
        return new Expr(text.startsWith("-") ? "(" + text + ")" : text, ATOM);
    }

    private static Expr zero(DType dt) {
        return switch (dt) {
            case BOOL -> new Expr("false", ATOM);
            case F16, BF16, F32 -> new Expr("0.0f", ATOM);
            case F64 -> new Expr("0.0", ATOM);
            default -> new Expr("0", ATOM);
        };
    }

    private Expr load(UOp u) {
        Slot p = (Slot) u.src(0).arg();
        DType dt = u.dtype();
        if (dt != p.dtype()) throw new IllegalArgumentException("kernel " + program.name() + " loads " + dt + " from " + p.name() + " of " + p.dtype());
        Expr index = ref(u.src(1));
        String get = p.name() + "[" + index.text + "]";
        Expr read = switch (dt) {
            case BOOL -> new Expr(get + " != 0", EQ);
            case F16 -> new Expr("kiln_f16_to_f32(" + get + ")", ATOM);
            case BF16 -> new Expr("kiln_bf16_to_f32(" + get + ")", ATOM);
            case Q8_0, Q4_0 -> throw new IllegalArgumentException("kernel " + program.name() + " loads packed dtype " + dt);
            default -> new Expr(get, ATOM);
        };
        if (!inRange(u.src(1), p)) read = cond(rangeCheck(index, p), read, zero(dt));
        if (u.src().size() < 3 || u.src(2).isConst() && u.src(2).constLong() != 0) return read;
        if (u.src(2).isConst()) return zero(dt);
        Expr gate = ref(u.src(2)); // one conditional expression: a false gate yields 0 and never reads
        return cond(gate, read, zero(dt));
    }

    /** Whether range analysis proves {@code index} within {@code p} for every iteration (then it needs no check). */
    private boolean inRange(UOp index, Slot p) {
        return index.vmin() >= 0 && index.vmax() < program.sizes().get(p.index());
    }

    /**
     * The run-time test of an index range analysis cannot bound: out of range, the access is skipped and
     * the first such index is reported to the caller, which throws. Lowered kernels never fail it.
     */
    private Expr rangeCheck(Expr index, Slot p) {
        checked = true;
        return call("kiln_in_range", index, new Expr(program.sizes().get(p.index()) + "", ATOM), new Expr("kiln_status", ATOM),
                new Expr(Integer.toString(p.index()), ATOM));
    }

    private static String storeValue(Expr v, DType dt) {
        return switch (dt) {
            case BOOL -> "(uint8_t) " + paren(v, UNARY);
            case F16 -> "kiln_f32_to_f16(" + v.text + ")";
            case BF16 -> "kiln_f32_to_bf16(" + v.text + ")";
            default -> v.text;
        };
    }

    private Expr compute(UOp u) {
        Op op = u.op();
        DType dt = u.dtype();
        return switch (op) {
            case CAST -> cast(ref(u.src(0)), u.src(0).dtype(), dt);
            case BITCAST -> bitcast(ref(u.src(0)), u.src(0).dtype(), dt);
            case WHERE -> dt.isBool() && (u.src(1).isConst() || u.src(2).isConst()) ? boolWhere(u)
                    : cond(ref(u.src(0)), ref(u.src(1)), ref(u.src(2)));
            case ADD -> {
                UOp x = dt.isBool() ? null : negated(u.src(1));
                if (x == null) yield binary(op, dt, ref(u.src(0)), ref(u.src(1)), u.src(0), u.src(1), u);
                Expr a = ref(u.src(0)), b = ref(x); // a + (-b) is a - b, bit for bit, in floats and in wrapping integers
                if (dt.isFloat()) yield round(dt, bin(a, "-", b, ADD));
                yield arith(dt, a, "-", b, ADD, u);
            }
            default -> switch (op.group()) {
                case UNARY -> unary(op, dt, ref(u.src(0)), u);
                case BINARY -> binary(op, u.src(0).dtype(), ref(u.src(0)), ref(u.src(1)), u.src(0), u.src(1), u);
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
        Expr notC = new Expr("!" + paren(c, ATOM), UNARY);
        boolean constTrue = u.src(1).isConst();
        UOp other = u.src(constTrue ? 2 : 1);
        boolean k = u.src(constTrue ? 1 : 2).constLong() != 0;
        if (other.isConst()) return (other.constLong() != 0) == k ? ref(other) : constTrue == k ? c : notC;
        Expr x = ref(other);
        // c ? k : x  is  c | x (k true) or !c & x;   c ? x : k  is  !c | x (k true) or c & x
        return k ? bin(constTrue ? c : notC, "|", x, OR) : bin(constTrue ? notC : c, "&", x, AND);
    }

    // ---------------------------------------------------------------- elementwise ops

    private Expr unary(Op op, DType dt, Expr a, UOp node) {
        if (dt.isBool()) {
            return switch (op) {
                case NEG, TRUNC -> a; // wrap(bool, -x) == x
                default -> throw notDefined(op, dt);
            };
        }
        if (!dt.isFloat()) {
            return switch (op) {
                case NEG -> noOverflow(node) ? new Expr("-" + paren(a, UNARY), UNARY)
                        : castTo(valueType(dt), new Expr("0 - " + paren(castTo(wideUnsigned(dt), a), ADD + 1), ADD));
                case TRUNC -> a;
                default -> throw new IllegalArgumentException("kernel " + program.name() + ": " + op + " is not defined on " + dt + "; cast to a float first");
            };
        }
        return switch (op) {
            case EXP2 -> fromDouble(dt, call("kiln_exp2", a));
            case LOG2 -> fromDouble(dt, call("kiln_log2", a));
            case SIN -> fromDouble(dt, call("kiln_sin", a));
            case SQRT -> fromDouble(dt, call("kiln_sqrt", a));
            // 1/x in float equals 1.0/x in double rounded to float (division rounds innocuously twice)
            case RECIP -> round(dt, bin(dt == DType.F64 ? new Expr("1.0", ATOM) : new Expr("1.0f", ATOM), "/", a, MUL));
            case NEG -> new Expr("-" + paren(a, UNARY), UNARY);
            case TRUNC -> fromDouble(dt, call("kiln_trunc", a));
            default -> throw notDefined(op, dt);
        };
    }

    /**
     * A binary op on operands of dtype {@code in}. The operands' nodes (or null) let range analysis drop
     * zero tests and use plain {@code /} and {@code %} where they are exact; {@code node} (or null) is the
     * op's own node, whose range may prove that plain signed arithmetic cannot overflow.
     */
    private Expr binary(Op op, DType in, Expr a, Expr b, UOp an, UOp bn, UOp node) {
        if (in.isBool()) return boolBinary(op, a, b);
        if (in.isFloat()) return floatBinary(op, in, a, b);
        boolean signed = !in.isUnsigned();
        boolean nonZero = bn != null && (bn.vmin() > 0 || bn.vmax() < 0);
        boolean positive = an != null && bn != null && an.vmin() >= 0 && bn.vmin() > 0; // C's / and % are floor division here
        String s = signedHelperSuffix(in);
        int bits = in.bits();
        return switch (op) {
            case ADD -> arith(in, a, "+", b, ADD, node);
            case MUL -> arith(in, a, "*", b, MUL, node);
            case DIV -> signed ? (bn != null && bn.vmin() > 0 ? bin(a, "/", b, MUL) : call("kiln_div_" + s, a, b))
                    : divide(b, nonZero, bin(a, "/", b, MUL));
            case MOD -> signed ? (bn != null && bn.vmin() > 0 ? bin(a, "%", b, MUL) : call("kiln_mod_" + s, a, b))
                    : divide(b, nonZero, bin(a, "%", b, MUL));
            case FLOORDIV -> signed ? (positive ? bin(a, "/", b, MUL) : call("kiln_floordiv_" + s, a, b))
                    : divide(b, nonZero, bin(a, "/", b, MUL));
            case FLOORMOD -> signed ? (positive ? bin(a, "%", b, MUL) : call("kiln_floormod_" + s, a, b))
                    : divide(b, nonZero, bin(a, "%", b, MUL));
            case MAX -> cond(bin(a, ">=", b, REL), a, b);
            case CMPLT -> bin(a, "<", b, REL);
            case CMPNE -> bin(a, "!=", b, EQ);
            case CMPEQ -> bin(a, "==", b, EQ);
            case AND -> bin(a, "&", b, AND); // normalised operands give a normalised result
            case OR -> bin(a, "|", b, OR);
            case XOR -> bin(a, "^", b, XOR);
            case SHL -> shift(b, bits, bn, zero(in), castTo(valueType(in), bin(castTo(wideUnsigned(in), a), "<<", b, SHIFT)));
            case SHR -> shift(b, bits, bn, signed ? cond(bin(a, "<", zero(in), REL), number("-1"), zero(in)) : zero(in),
                    bin(a, ">>", b, SHIFT)); // >> of a negative value is arithmetic in GCC and Clang
            case THREEFRY -> castTo(valueType(in), call("kiln_threefry", castTo("uint64_t", a), castTo("uint64_t", b)));
            default -> throw notDefined(op, in);
        };
    }

    /**
     * {@code a op b} wrapped to {@code dt}: plain C when range analysis proves the exact result fits
     * (only then is signed arithmetic defined), else in unsigned arithmetic converted back.
     */
    private static Expr arith(DType dt, Expr a, String op, Expr b, int prec, UOp node) {
        if (node != null && noOverflow(node)) {
            // two int literals would be computed in int: make one an int64_t first
            if (dt == DType.I64 && INT_LITERAL.matcher(a.text).matches() && INT_LITERAL.matcher(b.text).matches()) a = castTo("int64_t", a);
            return bin(a, op, b, prec);
        }
        if (dt == DType.U32 || dt == DType.U64) return bin(a, op, b, prec); // unsigned int and wider never promote to int
        String w = wideUnsigned(dt);
        return castTo(valueType(dt), bin(castTo(w, a), op, castTo(w, b), prec));
    }

    /** Unsigned division or remainder, 0 when the divisor is 0 (unless range analysis excludes it). */
    private static Expr divide(Expr b, boolean nonZero, Expr quotient) {
        return nonZero ? quotient : cond(bin(b, "==", new Expr("0", ATOM), EQ), new Expr("0", ATOM), quotient);
    }

    /** A shift, {@code outOfRange} when the amount is negative or at least the width. */
    private static Expr shift(Expr b, int bits, UOp amount, Expr outOfRange, Expr shifted) {
        if (amount != null && amount.vmin() >= 0 && amount.vmax() < bits) return shifted;
        // negative amounts become huge as uint64_t
        return cond(bin(castTo("uint64_t", b), ">=", new Expr(bits + "u", ATOM), REL), outOfRange, shifted);
    }

    private static Expr boolBinary(Op op, Expr a, Expr b) {
        return switch (op) {
            case ADD, OR, MAX -> bin(a, "|", b, OR); // bool arithmetic wraps to 0/1: a + b != 0
            case MUL, AND, DIV, FLOORDIV -> bin(a, "&", b, AND); // division by true is identity, by false 0
            case XOR -> bin(a, "^", b, XOR);
            case CMPNE -> bin(a, "!=", b, EQ);
            case CMPEQ -> bin(a, "==", b, EQ);
            case CMPLT -> bin(new Expr("!" + paren(a, ATOM), UNARY), "&", b, AND);
            case MOD, FLOORMOD -> new Expr("false", ATOM); // x % 1 == 0 and x % 0 == 0
            case SHL, SHR -> bin(a, "&", new Expr("!" + paren(b, ATOM), UNARY), AND); // shifting by 1 >= width gives 0
            case THREEFRY -> bin(call("kiln_threefry", castTo("uint64_t", a), castTo("uint64_t", b)), "!=", new Expr("0", ATOM), EQ);
            default -> throw new IllegalArgumentException(op + " is not defined on " + DType.BOOL);
        };
    }

    private Expr floatBinary(Op op, DType dt, Expr a, Expr b) {
        boolean f64 = dt == DType.F64;
        return switch (op) {
            // in float these round once, exactly like Alu's double result rounded to the dtype
            case ADD -> round(dt, bin(a, "+", b, ADD));
            case MUL -> round(dt, bin(a, "*", b, MUL));
            case DIV -> round(dt, bin(a, "/", b, MUL));
            case MOD -> round(dt, call(f64 ? "kiln_fmod" : "kiln_fmodf", a, b)); // fmod is exact
            case FLOORDIV -> fromDouble(dt, call("kiln_floordiv", a, b));
            case FLOORMOD -> fromDouble(dt, call("kiln_floormod", a, b));
            case MAX -> call(f64 ? "kiln_max_f64" : "kiln_max_f32", a, b); // NaN wins, +0 > -0
            case CMPLT -> bin(a, "<", b, REL);
            case CMPNE -> bin(a, "!=", b, EQ);
            case CMPEQ -> bin(a, "==", b, EQ);
            default -> throw notDefined(op, dt);
        };
    }

    private IllegalArgumentException notDefined(Op op, DType dt) {
        return new IllegalArgumentException("kernel " + program.name() + ": " + op + " is not defined on " + dt);
    }

    // ---------------------------------------------------------------- rounding

    /** A float-typed expression rounded to a float dtype (f32 and f64 values are already rounded). */
    private static Expr round(DType dt, Expr e) {
        return switch (dt) {
            case F16 -> call("kiln_round_f16", e);
            case BF16 -> call("kiln_round_bf16", e);
            default -> e;
        };
    }

    /** A double-typed expression rounded to a float dtype as {@code Alu.round}: to float first, then narrower. */
    private static Expr fromDouble(DType dt, Expr d) {
        return switch (dt) {
            case F64 -> d;
            case F32 -> castTo("float", d);
            // to float rounding to odd, so the final rounding to f16/bf16 is the only one (as Alu)
            default -> round(dt, call("kiln_round_odd", d));
        };
    }

    // ---------------------------------------------------------------- casts

    /** {@code Alu.castToLong/castToDouble} from {@code from} to {@code to}. */
    private static Expr cast(Expr a, DType from, DType to) {
        if (from == to) return a;
        if (to.isBool()) return from.isBool() ? a : bin(a, "!=", zero(from), EQ); // NaN != 0 is true, as in Alu
        if (!to.isFloat()) {
            if (!from.isFloat()) return castTo(valueType(to), a); // bool is 0 or 1; integers wrap
            if (to == DType.U64) return call("kiln_f2u64", a);
            return castTo(valueType(to), call("kiln_f2i64", a)); // truncates, NaN -> 0, saturates like Java; then wraps
        }
        if (!from.isFloat()) {
            if (from.isBool()) return castTo(valueType(to), a);
            if (to == DType.F16 || to == DType.BF16) {
                // the integer as a double rounded to odd, then to float rounding to odd, then the one real rounding (as Alu)
                Expr odd = from == DType.U64 ? call("kiln_u64_odd", a) : call("kiln_s64_odd", a);
                return round(to, call("kiln_round_odd", odd));
            }
            return castTo(valueType(to), a); // one rounding from any integer width, as Alu
        }
        return switch (to) {
            case F64 -> castTo("double", a);
            case F32 -> from == DType.F64 ? castTo("float", a) : a;
            default -> from == DType.F64 ? fromDouble(to, a) : round(to, a);
        };
    }

    /** {@code Alu.bitsOf} then {@code wrap} or {@code floatFromBits}. */
    private static Expr bitcast(Expr a, DType from, DType to) {
        Expr bits = switch (from) {
            case BOOL -> castTo("uint8_t", a);
            case F16 -> call("kiln_f32_to_f16", a);
            case BF16 -> call("kiln_f32_to_bf16", a);
            case F32 -> call("kiln_f32_bits", a);
            case F64 -> call("kiln_f64_bits", a);
            default -> a;
        };
        return switch (to) {
            case BOOL -> bin(bits, "!=", new Expr("0", ATOM), EQ);
            case F16 -> call("kiln_f16_to_f32", castTo("uint16_t", bits));
            case BF16 -> call("kiln_bf16_to_f32", castTo("uint16_t", bits));
            case F32 -> call("kiln_f32_from_bits", castTo("uint32_t", bits));
            case F64 -> call("kiln_f64_from_bits", castTo("uint64_t", bits));
            default -> castTo(valueType(to), bits);
        };
    }

    // ---------------------------------------------------------------- text

    private static String paren(Expr e, int prec) { return e.prec >= prec ? e.text : "(" + e.text + ")"; }

    /** A left-associative binary operator. */
    private static Expr bin(Expr a, String op, Expr b, int prec) {
        return new Expr(paren(a, prec) + " " + op + " " + paren(b, prec + 1), prec);
    }

    private static Expr castTo(String type, Expr e) { return new Expr("(" + type + ") " + paren(e, UNARY), UNARY); }

    private static Expr cond(Expr c, Expr a, Expr b) {
        return new Expr(paren(c, LOR) + " ? " + paren(a, LOR) + " : " + paren(b, COND), COND);
    }

    private static Expr call(String fn, Expr... args) {
        StringBuilder s = new StringBuilder(fn).append('(');
        for (int i = 0; i < args.length; i++) s.append(i > 0 ? ", " : "").append(args[i].text);
        return new Expr(s.append(')').toString(), ATOM);
    }

    /** Appends one line at the current indent. */
    protected final void line(String s) {
        out.append("    ".repeat(indent)).append(s).append('\n');
    }

    /** {@code s} safe inside a C comment. */
    protected static String comment(String s) {
        return s.replace("*/", "*_/").replaceAll("[\\p{Cntrl}]", "?");
    }
}

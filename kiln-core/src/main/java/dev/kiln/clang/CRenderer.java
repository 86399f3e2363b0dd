package dev.kiln.clang;

import dev.kiln.codegen.GatedBounds;
import dev.kiln.codegen.Heuristics;
import dev.kiln.codegen.KernelProgram;
import dev.kiln.codegen.Optimizer;
import dev.kiln.codegen.Stmt;
import dev.kiln.codegen.render.CFamilyRenderer;
import dev.kiln.ir.IndexCheck;
import dev.kiln.ir.Op;
import dev.kiln.ir.Slot;
import dev.kiln.ir.UOp;
import dev.kiln.types.DType;
import dev.kiln.types.Variable;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.HashMap;
import java.util.HashSet;
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
 * the access, so even a lowering bug cannot make a kernel touch memory outside its buffers. The same block
 * takes the first failed {@link dev.kiln.ir.Op#CHECK} of an index from data (2, site, index); the kernel goes on
 * with the index (every read it reaches is gated or clamped) and the caller throws.
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
 * <p>The statements, expressions and common subexpressions are {@link CFamilyRenderer}'s; this class
 * supplies C's types, literals, element access, wrapping integer arithmetic, helper spellings, lanes and
 * function. A subclass (the CUDA renderer) may replace what makes a C function a GPU kernel: the
 * signature, the output loop and the pragmas (see the protected methods).
 */
public class CRenderer extends CFamilyRenderer<Void> {
    private static final Pattern INT_LITERAL = Pattern.compile("\\(?-?\\d+\\)?");

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

    /** UPCAST loops whose statements are being distributed, outermost first. */
    private final List<Stmt.Loop> lanes = new ArrayList<>();
    /** Registers defined inside distributed UPCAST loops: one array element per lane, by this index. */
    private final Map<Slot, String> lanedRegisters = new HashMap<>();
    /** Whether some access needs a run-time index check (and so the status pointer). */
    private boolean checked;

    /** A renderer of {@code program}; {@link #renderFunction} renders it once. */
    protected CRenderer(KernelProgram program) { super(program); }

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
        String body = renderBody(1);
        Set<Slot> written = new HashSet<>();
        Optimizer.walk(program.body(), s -> {
            if (s instanceof Stmt.Store st) written.add(st.param());
        });
        return function(functionName, written, body);
    }

    @Override
    protected void prologue() {
        for (Variable v : program.variables()) name(v); // symbolic variables choose their names first
    }

    /** Where the output loop {@code split} stops: {@code end}, or a symbolic axis's size if smaller. */
    protected final String stop(Stmt.Loop split) {
        return split.limit() == null ? "end" : "(end < " + limit(split) + " ? end : " + limit(split) + ")";
    }

    /** The output loop {@code split}, its iterations {@code [start, stop)} (see {@link #stop}). */
    @Override
    protected List<String> outputLoopHead(Stmt.Loop split) {
        return List.of("KILN_INDEPENDENT", forLoop("int64_t", name(split.index()), "start", stop(split)));
    }

    /** GCC vectorises the whole groups of a loop over a symbolic size only without their lanes' gates. */
    @Override
    protected boolean peelsLastGroup() { return true; }

    /** The pragma before an UNROLL loop of {@code extent} iterations. */
    protected String unrollPragma(long extent) { return "#pragma GCC unroll " + Math.min(extent, 64); }

    @Override
    protected final String loopHint(Stmt.LoopKind kind, long extent) {
        return switch (kind) {
            case GLOBAL, THREAD, UPCAST -> "KILN_INDEPENDENT";
            case UNROLL -> unrollPragma(extent);
            case REDUCE -> null;
        };
    }

    @Override
    protected final String indexType(Variable index) { return "int64_t"; }

    @Override
    protected final String extentLiteral(long extent, Variable index) { return Long.toString(extent); }

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
                + drain() + body + "}\n";
    }

    /**
     * Whether an UPCAST loop can be distributed over its statements: every register it accumulates into
     * is defined inside it (the lanes then never share a register, as UPCAST promises), or is read by no
     * statement of the loop (a GROUP's combine, which distributed runs lane by lane in order).
     */
    @Override
    protected final boolean inLanes(Stmt.Loop l) {
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

    /** Distributes an UPCAST loop over its statements: each runs for all lanes in a loop of its own. */
    @Override
    protected final void lanes(Stmt.Loop l) {
        boolean outermost = lanes.isEmpty();
        if (outermost) { // a block of its own: its lane registers cannot clash with a sibling's
            line("{");
            indent(1);
        }
        lanes.add(l);
        // the values computed here live in the block opened above (or a lane loop's): forget them after it
        if (outermost) scoped(() -> stmt(l.body()));
        else stmt(l.body());
        lanes.removeLast();
        if (outermost) {
            indent(-1);
            line("}");
        }
    }

    /**
     * Runs {@code body}, a statement over {@code expressions}, once per lane of the UPCAST loops being distributed
     * (directly when there are none).
     */
    private void perLane(List<UOp> expressions, Runnable body) {
        if (lanes.isEmpty()) {
            body.run();
            return;
        }
        hoistIndexChecks(expressions);
        fetchEveryOther(expressions);
        for (Stmt.Loop l : lanes) {
            line("KILN_INDEPENDENT");
            line(forLoop("int64_t", name(l.index()), "0", Long.toString(l.extent())));
            indent(1);
        }
        scoped(body);
        for (int k = 0; k < lanes.size(); k++) {
            indent(-1);
            line("}");
        }
    }

    /**
     * Computes, before the lane loops, the index checks of {@code expressions} that are the same in every lane (a
     * gather's row index, read once per row): a check may store into the status block, and a loop holding a store
     * the compiler cannot prove independent of the lanes is not vectorised (an embedding lookup ran 30% slower).
     */
    private void hoistIndexChecks(List<UOp> expressions) {
        Set<Variable> laneVariables = new HashSet<>();
        for (Stmt.Loop l : lanes) laneVariables.add(l.index());
        for (UOp e : expressions) {
            for (UOp u : e.toposort()) {
                if (u.op() == Op.CHECK && known(u) == null && registersRead(u).isEmpty() && Collections.disjoint(u.variables(), laneVariables)) ref(u);
            }
        }
    }

    /**
     * Fetches, before the lane loop, each load of {@code expressions} that reads every other element in the lanes (a
     * stride-2 window: pooling, a strided convolution) into an array of one element per lane ({@code
     * kiln_every_other_*}, two vector loads and a permute); the lane loop then reads the array. GCC leaves a loop with
     * such a load scalar (its vector loads would read past the last lane's element), and a 3 x 3 stride-2 max pooling
     * ran six times slower than the Java renderer's. Only for one lane loop of 4, 8 or 16 f32 or f64 lanes, an index
     * range analysis keeps within the buffer for every lane where the load's gate holds (the elements between two
     * lanes' are then in it too), and a gate the same in every lane (a padded window's rows), under which the fetch
     * reads the buffer's start instead.
     */
    private void fetchEveryOther(List<UOp> expressions) {
        if (lanes.size() != 1 || !vectorisedLanes()) return;
        Stmt.Loop lane = lanes.getFirst();
        int n = (int) lane.extent();
        if (Arrays.stream(CPrelude.EVERY_OTHER_LANES).noneMatch(c -> c == n)) return;
        for (UOp e : expressions) {
            for (UOp u : e.toposort()) {
                if (u.op() != Op.LOAD || known(u) != null || u.dtype() != DType.F32 && u.dtype() != DType.F64) continue;
                Slot p = u.src(0).slotArg();
                UOp gate = gateOf(u);
                if (p.dtype() != u.dtype() || !registersRead(u).isEmpty() || gate != null && gate.variables().contains(lane.index())
                        || !inRange(u.src(1), p, gate) || Heuristics.stride(u.src(1), lane.index()).orElse(0) != 2
                        || gate != null && program.sizes().get(p.index()) < 2L * n - 1) continue;
                Expr<Void> first = ref(Optimizer.substitute(u.src(1), Map.of(lane.index(), UOp.index(0))));
                // under a false gate (a padded window's rows above the image) the fetch reads from the buffer's start
                Expr<Void> g = gate == null ? null : ref(gate);
                String from = g == null ? first.text() : "(" + g.text() + " ? " + first.text() + " : 0)";
                String array = valueName();
                line(valueType(u.dtype()) + " " + array + "[" + n + "];");
                line(CPrelude.everyOther(u.dtype(), n) + "(" + array + ", " + p.name() + " + " + from + ");");
                Expr<Void> fetched = atom(array + "[" + name(lane.index()) + "]");
                remember(u, g == null ? fetched : cond(g, fetched, zero(u.dtype()), null));
            }
        }
    }

    /**
     * Whether a host C compiler vectorises the lane loops, so they may call the prelude's lane helpers
     * ({@code kiln_every_other_*}, {@code kiln_vmax_*}); the CUDA renderer's lanes run in one GPU thread.
     */
    protected boolean vectorisedLanes() { return true; }

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

    @Override
    protected final void define(Stmt.Define d) {
        if (!lanes.isEmpty()) declareLaned(d.register());
        perLane(List.of(d.init()), () -> {
            if (lanes.isEmpty()) lanedRegisters.remove(d.register());
            Expr<Void> init = ref(d.init());
            Expr<Void> reg = register(d.register());
            line((lanedRegisters.containsKey(d.register()) ? "" : valueType(d.register().dtype()) + " ") + reg.text() + " = " + init.text() + ";");
        });
    }

    @Override
    protected final void store(Stmt.Store st) {
        perLane(st.gate() == null ? List.of(st.index(), st.value()) : List.of(st.index(), st.value(), st.gate()), () -> {
            Slot p = st.param();
            Expr<Void> index = ref(st.index());
            Expr<Void> value = ref(st.value());
            String store = p.name() + "[" + index.text() + "] = " + storeValue(value, p.dtype()) + ";";
            if (!inRange(st.index(), p)) store = "if (" + rangeCheck(index, p).text() + ") " + store;
            line(st.gate() == null ? store : "if (" + ref(st.gate()).text() + ") { " + store + " }");
        });
    }

    @Override
    protected final void accumulate(Stmt.Accumulate a) {
        perLane(List.of(a.value()), () -> accumulate(a.register(), a.kind(), register(a.register()), ref(a.value())));
    }

    @Override
    protected final Expr<Void> minimum(DType dt, Expr<Void> acc, Expr<Void> v) {
        if (dt.isFloat()) return helper(minMaxHelper("min", dt), acc, v);
        return cond(bin(v, "<", acc, REL), v, acc);
    }

    private Expr<Void> register(Slot reg) {
        String index = lanedRegisters.get(reg);
        return atom(index == null ? reg.name() : reg.name() + "[" + index + "]");
    }

    @Override
    protected final Expr<Void> register(Slot reg, UOp u) { return register(reg); }

    // ---------------------------------------------------------------- names and types

    @Override
    protected final boolean isIdentifierStart(char c) { return Character.isLetter(c); }

    @Override
    protected final String unreserved(String name) {
        // parameters, registers, values, helpers, C keywords, typedefs and macros
        return name.matches("(p|acc|v)\\d+|kiln_.*|u?int\\d+_t|[A-Z][A-Z0-9_]*") || C_WORDS.contains(name) ? "x_" + name : name;
    }

    @Override
    protected final Expr<Void> variable(Variable v) { return atom(name(v)); }

    @Override
    protected final Void typeOf(DType dt) { return null; }

    @Override
    protected final Void binaryType(Expr<Void> a, String op, Expr<Void> b, int prec) { return null; }

    @Override
    protected final String localType(UOp u, Expr<Void> e) { return valueType(u.dtype()); }

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

    // ---------------------------------------------------------------- values

    /** Index-style arithmetic that needs no wrapping stays inline, so index math reads as one formula. */
    @Override
    protected final boolean inlinable(UOp u) {
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

    @Override
    protected final Expr<Void> literal(UOp u) {
        DType dt = u.dtype();
        return switch (dt) {
            case BOOL -> atom(u.constLong() != 0 ? "true" : "false");
            case I8, I16, U8, U16 -> number(Long.toString(u.constLong()));
            case I32 -> u.constLong() == Integer.MIN_VALUE ? atom("INT32_MIN") : number(Long.toString(u.constLong()));
            case U32 -> atom(u.constLong() + "u");
            case I64 -> u.constLong() == Long.MIN_VALUE ? atom("INT64_MIN")
                    : u.constLong() >= Integer.MIN_VALUE && u.constLong() <= Integer.MAX_VALUE ? number(Long.toString(u.constLong()))
                    : atom("INT64_C(" + u.constLong() + ")");
            case U64 -> atom("UINT64_C(0x" + Long.toHexString(u.constLong()) + ")");
            case F16, BF16, F32, F64 -> floatLiteral(u, null);
            case Q8_0, Q4_0 -> throw new IllegalArgumentException("kernel " + program.name() + " has a constant of packed dtype " + dt);
        };
    }

    @Override
    protected final Expr<Void> nonFinite(boolean f64, double value, Void t) {
        String name = Double.isNaN(value) ? "NAN" : value > 0 ? "INFINITY" : f64 ? "-INFINITY" : "(-INFINITY)";
        return atom(f64 ? "((double) " + name + ")" : name);
    }

    private static Expr<Void> atom(String text) { return new Expr<>(text, null, ATOM); }

    private static Expr<Void> number(String text) { return number(text, null); }

    @Override
    protected final Expr<Void> zero(DType dt, Void t) { return zero(dt); }

    private static Expr<Void> zero(DType dt) {
        return switch (dt) {
            case BOOL -> atom("false");
            case F16, BF16, F32 -> atom("0.0f");
            case F64 -> atom("0.0");
            default -> atom("0");
        };
    }

    @Override
    protected final Expr<Void> read(UOp u, Slot p, Expr<Void> index) {
        DType dt = u.dtype();
        String get = p.name() + "[" + index.text() + "]";
        Expr<Void> read = switch (dt) {
            case BOOL -> new Expr<>(get + " != 0", null, EQ);
            case F16 -> atom("kiln_f16_to_f32(" + get + ")");
            case BF16 -> atom("kiln_bf16_to_f32(" + get + ")");
            case Q8_0, Q4_0 -> throw new IllegalArgumentException("kernel " + program.name() + " loads packed dtype " + dt);
            default -> atom(get);
        };
        return inRange(u.src(1), p, gateOf(u)) ? read : cond(rangeCheck(index, p), read, zero(dt));
    }

    /**
     * Whether range analysis proves {@code index} within {@code p} for every iteration where {@code gate} holds (then
     * it needs no check: a gated read happens only there).
     */
    private boolean inRange(UOp index, Slot p, UOp gate) {
        long[] bounds = GatedBounds.of(index, gate);
        return bounds[0] >= 0 && bounds[1] < program.sizes().get(p.index());
    }

    private boolean inRange(UOp index, Slot p) { return inRange(index, p, null); }

    /**
     * The run-time test of an index range analysis cannot bound: out of range, the access is skipped and
     * the first such index is reported to the caller, which throws. Lowered kernels never fail it.
     */
    private Expr<Void> rangeCheck(Expr<Void> index, Slot p) {
        checked = true;
        return helper("kiln_in_range", index, atom(program.sizes().get(p.index()) + ""), atom("kiln_status"), atom(Integer.toString(p.index())));
    }

    /** {@code kiln_check_index}: out of range, the first such index is reported in the status block (2, site, index). */
    @Override
    protected final Expr<Void> indexCheck(IndexCheck check, Expr<Void> index, Expr<Void> size, Expr<Void> gate, UOp node) {
        checked = true;
        Expr<Void> wraps = atom(check.negativeWraps() ? "true" : "false"), site = atom(Integer.toString(check.site()));
        return gate == null ? helper("kiln_check_index", index, size, wraps, atom("kiln_status"), site)
                : helper("kiln_check_index_if", gate, index, size, wraps, atom("kiln_status"), site);
    }

    private static String storeValue(Expr<Void> v, DType dt) {
        return switch (dt) {
            case BOOL -> "(uint8_t) " + paren(v, UNARY);
            case F16 -> "kiln_f32_to_f16(" + v.text() + ")";
            case BF16 -> "kiln_f32_to_bf16(" + v.text() + ")";
            default -> v.text();
        };
    }

    // ---------------------------------------------------------------- elementwise ops

    @Override
    protected final Expr<Void> negate(Expr<Void> a, Void t) { return new Expr<>("-" + paren(a, UNARY), null, UNARY); }

    @Override
    protected final Expr<Void> integerNegate(DType dt, Void t, Expr<Void> a, UOp node) {
        return noOverflow(node) ? negate(a, t) : castTo(valueType(dt), new Expr<>("0 - " + paren(castTo(wideUnsigned(dt), a), ADD + 1), null, ADD));
    }

    @Override
    protected final Expr<Void> subtract(DType dt, Void t, Expr<Void> a, Expr<Void> b, UOp node) { return arith(dt, a, "-", b, ADD, node); }

    @Override
    protected final Expr<Void> transcendental(Op op, DType dt, Expr<Void> a) {
        if (op == Op.EXP2 && dt == DType.F32) return helper("kiln_exp2f", a); // softmax's exponentials, in vector lanes
        return fromDouble(dt, helper(switch (op) {
            case EXP2 -> "kiln_exp2";
            case LOG2 -> "kiln_log2";
            case SIN -> "kiln_sin";
            case SQRT -> "kiln_sqrt";
            default -> "kiln_trunc";
        }, a));
    }

    @Override
    protected final Expr<Void> one(DType dt, Void t) { return atom(dt == DType.F64 ? "1.0" : "1.0f"); }

    @Override
    protected final Expr<Void> integerBinary(Op op, DType in, Void t, Expr<Void> a, Expr<Void> b, UOp an, UOp bn, UOp node) {
        boolean signed = !in.isUnsigned();
        boolean nonZero = bn != null && (bn.vmin() > 0 || bn.vmax() < 0);
        boolean positive = an != null && bn != null && an.vmin() >= 0 && bn.vmin() > 0; // C's / and % are floor division here
        String s = signedHelperSuffix(in);
        int bits = in.bits();
        return switch (op) {
            case ADD -> arith(in, a, "+", b, ADD, node);
            case MUL -> arith(in, a, "*", b, MUL, node);
            case DIV -> signed ? (bn != null && bn.vmin() > 0 ? bin(a, "/", b, MUL) : helper("kiln_div_" + s, a, b))
                    : divide(b, nonZero, bin(a, "/", b, MUL));
            case MOD -> signed ? (bn != null && bn.vmin() > 0 ? bin(a, "%", b, MUL) : helper("kiln_mod_" + s, a, b))
                    : divide(b, nonZero, bin(a, "%", b, MUL));
            case FLOORDIV -> signed ? (positive ? bin(a, "/", b, MUL) : helper("kiln_floordiv_" + s, a, b))
                    : divide(b, nonZero, bin(a, "/", b, MUL));
            case FLOORMOD -> signed ? (positive ? bin(a, "%", b, MUL) : helper("kiln_floormod_" + s, a, b))
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
            case THREEFRY -> castTo(valueType(in), threefry(a, b));
            default -> throw notDefined(op, in);
        };
    }

    /**
     * {@code a op b} wrapped to {@code dt}: plain C when range analysis proves the exact result fits
     * (only then is signed arithmetic defined), else in unsigned arithmetic converted back.
     */
    private Expr<Void> arith(DType dt, Expr<Void> a, String op, Expr<Void> b, int prec, UOp node) {
        if (node != null && noOverflow(node)) {
            // two int literals would be computed in int: make one an int64_t first
            if (dt == DType.I64 && INT_LITERAL.matcher(a.text()).matches() && INT_LITERAL.matcher(b.text()).matches()) a = castTo("int64_t", a);
            return bin(a, op, b, prec);
        }
        if (dt == DType.U32 || dt == DType.U64) return bin(a, op, b, prec); // unsigned int and wider never promote to int
        String w = wideUnsigned(dt);
        return castTo(valueType(dt), bin(castTo(w, a), op, castTo(w, b), prec));
    }

    /** Unsigned division or remainder, 0 when the divisor is 0 (unless range analysis excludes it). */
    private Expr<Void> divide(Expr<Void> b, boolean nonZero, Expr<Void> quotient) {
        return nonZero ? quotient : cond(bin(b, "==", atom("0"), EQ), atom("0"), quotient);
    }

    /** A shift, {@code outOfRange} when the amount is negative or at least the width. */
    private Expr<Void> shift(Expr<Void> b, int bits, UOp amount, Expr<Void> outOfRange, Expr<Void> shifted) {
        if (amount != null && amount.vmin() >= 0 && amount.vmax() < bits) return shifted;
        // negative amounts become huge as uint64_t
        return cond(bin(castTo("uint64_t", b), ">=", atom(bits + "u"), REL), outOfRange, shifted);
    }

    private static Expr<Void> threefry(Expr<Void> a, Expr<Void> b) {
        return helper("kiln_threefry", castTo("uint64_t", a), castTo("uint64_t", b));
    }

    @Override
    protected final Expr<Void> boolThreefry(Expr<Void> a, Expr<Void> b) { return bin(threefry(a, b), "!=", atom("0"), EQ); }

    @Override
    protected final Expr<Void> floatRemainder(DType dt, Expr<Void> a, Expr<Void> b) {
        return helper(dt == DType.F64 ? "kiln_fmod" : "kiln_fmodf", a, b);
    }

    @Override
    protected final Expr<Void> floatFloor(Op op, Expr<Void> a, Expr<Void> b) {
        return helper(op == Op.FLOORDIV ? "kiln_floordiv" : "kiln_floormod", a, b);
    }

    @Override
    protected final Expr<Void> floatMax(DType dt, Void t, Expr<Void> a, Expr<Void> b) {
        return helper(minMaxHelper("max", dt), a, b); // NaN wins, +0 > -0
    }

    /** {@code kiln_max_f32} and its kin: in the lanes of a vectorised loop the branch-free {@code kiln_vmax_f32}. */
    private String minMaxHelper(String op, DType dt) {
        return "kiln_" + (lanes.isEmpty() || !vectorisedLanes() ? "" : "v") + op + (dt == DType.F64 ? "_f64" : "_f32");
    }

    // ---------------------------------------------------------------- rounding and casts

    @Override
    protected final Expr<Void> roundNarrow(DType dt, Expr<Void> e) {
        return helper(dt == DType.F16 ? "kiln_round_f16" : "kiln_round_bf16", e);
    }

    @Override
    protected final Expr<Void> roundToOdd(Expr<Void> d) { return helper("kiln_round_odd", d); }

    @Override
    protected final Expr<Void> castToInteger(Expr<Void> a, DType from, DType to, Void t) {
        if (!from.isFloat()) return castTo(valueType(to), a); // bool is 0 or 1; integers wrap
        if (to == DType.U64) return helper("kiln_f2u64", a);
        return castTo(valueType(to), helper("kiln_f2i64", a)); // truncates, NaN -> 0, saturates like Java; then wraps
    }

    @Override
    protected final Expr<Void> castToFloat(Expr<Void> a, DType from, DType to, Void t) {
        if (!from.isBool() && (to == DType.F16 || to == DType.BF16)) {
            // the integer as a double rounded to odd, then to float rounding to odd, then the one real rounding (as Alu)
            Expr<Void> odd = from == DType.U64 ? helper("kiln_u64_odd", a) : helper("kiln_s64_odd", a);
            return round(to, helper("kiln_round_odd", odd));
        }
        return castTo(valueType(to), a); // one rounding from any integer width, as Alu
    }

    @Override
    protected final Expr<Void> bitcast(Expr<Void> a, DType from, DType to) {
        Expr<Void> bits = switch (from) {
            case BOOL -> castTo("uint8_t", a);
            case F16 -> helper("kiln_f32_to_f16", a);
            case BF16 -> helper("kiln_f32_to_bf16", a);
            case F32 -> helper("kiln_f32_bits", a);
            case F64 -> helper("kiln_f64_bits", a);
            default -> a;
        };
        return switch (to) {
            case BOOL -> bin(bits, "!=", atom("0"), EQ);
            case F16 -> helper("kiln_f16_to_f32", castTo("uint16_t", bits));
            case BF16 -> helper("kiln_bf16_to_f32", castTo("uint16_t", bits));
            case F32 -> helper("kiln_f32_from_bits", castTo("uint32_t", bits));
            case F64 -> helper("kiln_f64_from_bits", castTo("uint64_t", bits));
            default -> castTo(valueType(to), bits);
        };
    }

    // ---------------------------------------------------------------- text

    private static Expr<Void> castTo(String type, Expr<Void> e) { return castTo(type, null, e); }

    private static Expr<Void> cond(Expr<Void> c, Expr<Void> a, Expr<Void> b) { return cond(c, a, b, null); }

    /** A call of a prelude helper. */
    @SafeVarargs
    private static Expr<Void> helper(String fn, Expr<Void>... args) { return call(fn, null, args); }
}

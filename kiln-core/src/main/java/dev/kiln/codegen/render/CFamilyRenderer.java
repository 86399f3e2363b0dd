package dev.kiln.codegen.render;

import dev.kiln.codegen.KernelProgram;
import dev.kiln.codegen.Stmt;
import dev.kiln.ir.IndexCheck;
import dev.kiln.ir.Op;
import dev.kiln.ir.ReduceArg;
import dev.kiln.ir.Slot;
import dev.kiln.ir.UOp;
import dev.kiln.types.DType;
import dev.kiln.types.Variable;

import java.util.ArrayDeque;
import java.util.Deque;
import java.util.HashMap;
import java.util.HashSet;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * The printer every C-family target shares (Java with the Vector API, C11, CUDA C++), after tinygrad's
 * {@code renderer/cstyle.py}: it owns the statements (the output loop or single iteration, loops,
 * accumulation), the expressions (operator precedence and parentheses, per-op dispatch, bool WHERE as
 * logic, float rounding, the casts every target spells alike) and the common subexpressions (each value
 * computed once per block into a named local {@code v0, v1, ...}, index arithmetic inline, values read
 * from a register dropped when it is updated). A target supplies only what differs: its types, literals,
 * element access, integer arithmetic (wrapping is where C and Java part ways), the spelling of its
 * helper functions, its lanes (UPCAST loops) and the function or class around the body.
 *
 * <p>Every rendering has exactly the semantics of {@link dev.kiln.ir.Alu}; the comments at each op say
 * why the text computes Alu's value.
 *
 * @param <T> the target's type of a value (the Java renderer tracks primitive and vector types; the C
 *            renderers track none, C's conversions being implicit, and use {@link Void})
 */
public abstract class CFamilyRenderer<T> {
    // Operator precedences (higher binds tighter), the same in C and Java; casts and unary operators are UNARY.
    protected static final int COND = 3, LOR = 4, OR = 6, XOR = 7, AND = 8, EQ = 9, REL = 10, SHIFT = 11, ADD = 12, MUL = 13,
            UNARY = 14, ATOM = 15;

    /** Expressions longer than this go to a named local even when they could be inlined. */
    protected static final int INLINE_LIMIT = 60;

    /**
     * A rendered expression: its text, its type in the target (null where the target tracks none) and its
     * precedence.
     */
    public record Expr<V>(String text, V type, int prec) {}

    /** The program being rendered. */
    protected final KernelProgram program;
    private final StringBuilder out = new StringBuilder();
    private int indent;
    private int values;
    private final Map<Variable, String> varNames = new HashMap<>();
    private final Set<String> usedNames = new HashSet<>();
    /** Values already computed, innermost block first: keyed by node, or by a target's key for another form of one. */
    private final Deque<Map<Object, Expr<T>>> scopes = new ArrayDeque<>();
    private final Map<UOp, Set<Slot>> registersRead = new IdentityHashMap<>();

    protected CFamilyRenderer(KernelProgram program) { this.program = program; }

    // ---------------------------------------------------------------- what a target supplies

    /** The target's type of values of {@code dt}. */
    protected abstract T typeOf(DType dt);

    /** The target's type of {@code u}'s value (by default its dtype's). */
    protected T typeOf(UOp u) { return typeOf(u.dtype()); }

    /** The type of {@code a op b} at precedence {@code prec}. */
    protected abstract T binaryType(Expr<T> a, String op, Expr<T> b, int prec);

    /** The type a local holding {@code e}, the value of {@code u}, is declared with. */
    protected abstract String localType(UOp u, Expr<T> e);

    /** A constant node's literal. */
    protected abstract Expr<T> literal(UOp u);

    /** A NaN or infinite constant of a float dtype ({@code f64} or narrower, held in float) by the target's name. */
    protected abstract Expr<T> nonFinite(boolean f64, double value, T t);

    /** Zero of {@code dt} held in {@code t} (a false gate's value). */
    protected abstract Expr<T> zero(DType dt, T t);

    /** A symbolic variable's value. */
    protected abstract Expr<T> variable(Variable v);

    /** A register's value, read by node {@code u}. */
    protected abstract Expr<T> register(Slot reg, UOp u);

    /** Whether {@code u}'s value stays inline (index-style arithmetic that needs no wrapping). */
    protected abstract boolean inlinable(UOp u);

    /** The expression of an element index (by default the index node's value). */
    protected Expr<T> elementIndex(UOp index) { return ref(index); }

    /** The element {@code load} reads from parameter {@code p} at {@code index}, ungated. */
    protected abstract Expr<T> read(UOp load, Slot p, Expr<T> index);

    /** {@code -a} of a float. */
    protected abstract Expr<T> negate(Expr<T> a, T t);

    /** {@code -a} of integer dtype {@code dt}, wrapped; {@code node} is the NEG node (for its range). */
    protected abstract Expr<T> integerNegate(DType dt, T t, Expr<T> a, UOp node);

    /** {@code a - b} of integer dtype {@code dt}, wrapped; {@code node} is the ADD node (for its range). */
    protected abstract Expr<T> subtract(DType dt, T t, Expr<T> a, Expr<T> b, UOp node);

    /** EXP2, LOG2, SIN, SQRT or TRUNC of a float, rounded to {@code dt}. */
    protected abstract Expr<T> transcendental(Op op, DType dt, Expr<T> a);

    /** The float 1 of {@code dt} held in {@code t}. */
    protected abstract Expr<T> one(DType dt, T t);

    /**
     * An integer binary op on operands of dtype {@code in}; the operands' nodes (or null) let range
     * analysis drop zero tests, {@code node} (or null) is the op's own node.
     */
    protected abstract Expr<T> integerBinary(Op op, DType in, T t, Expr<T> a, Expr<T> b, UOp an, UOp bn, UOp node);

    /** The exact float remainder {@code fmod(a, b)}, unrounded. */
    protected abstract Expr<T> floatRemainder(DType dt, Expr<T> a, Expr<T> b);

    /** FLOORDIV or FLOORMOD of floats as Alu's, in double. */
    protected abstract Expr<T> floatFloor(Op op, Expr<T> a, Expr<T> b);

    /** The float maximum as Alu's (NaN wins, +0 above -0). */
    protected abstract Expr<T> floatMax(DType dt, T t, Expr<T> a, Expr<T> b);

    /** The minimum update of a non-bool register as KernelEvaluator's (NaN wins, else the smaller; the new value only if strictly smaller). */
    protected abstract Expr<T> minimum(DType dt, Expr<T> acc, Expr<T> v);

    /** THREEFRY of two bools, as a bool. */
    protected abstract Expr<T> boolThreefry(Expr<T> a, Expr<T> b);

    /** A float-typed value of f16 or bf16 rounded to {@code dt}. */
    protected abstract Expr<T> roundNarrow(DType dt, Expr<T> e);

    /** A double-typed value rounded to float, rounding to odd. */
    protected abstract Expr<T> roundToOdd(Expr<T> d);

    /** A cast from {@code from} to integer dtype {@code to} (held in {@code t}). */
    protected abstract Expr<T> castToInteger(Expr<T> a, DType from, DType to, T t);

    /** A cast from integer or bool dtype {@code from} to float dtype {@code to} (held in {@code t}). */
    protected abstract Expr<T> castToFloat(Expr<T> a, DType from, DType to, T t);

    /** {@code Alu.bitsOf} then {@code wrap} or {@code floatFromBits}. */
    protected abstract Expr<T> bitcast(Expr<T> a, DType from, DType to);

    /**
     * The index {@code index} (the value of {@code node}, a CHECK) checked against an axis of {@code size} elements
     * as {@code check} says, where {@code gate} holds (null: everywhere), its value unchanged: a failed check is
     * reported to the caller, who throws. The code may stop or go on, never touch memory: the index's reads are
     * gated or clamped.
     */
    protected abstract Expr<T> indexCheck(IndexCheck check, Expr<T> index, Expr<T> size, Expr<T> gate, UOp node);

    /** The type loop counter {@code index} is declared with. */
    protected abstract String indexType(Variable index);

    /** The literal of a loop's constant {@code extent}, in {@code index}'s type. */
    protected abstract String extentLiteral(long extent, Variable index);

    /** The line before a loop of {@code kind} (a pragma or hint), or null. */
    protected abstract String loopHint(Stmt.LoopKind kind, long extent);

    /** The lines that open the output loop {@code split} (its {@code for}, ending in an open brace). */
    protected abstract List<String> outputLoopHead(Stmt.Loop split);

    /** Whether {@code upcast} renders in the target's lanes ({@link #lanes}) rather than as a plain loop. */
    protected abstract boolean inLanes(Stmt.Loop upcast);

    /** Renders UPCAST loop {@code upcast} in the target's lanes. */
    protected abstract void lanes(Stmt.Loop upcast);

    protected abstract void define(Stmt.Define d);

    protected abstract void accumulate(Stmt.Accumulate a);

    /** A store whose value's dtype is the parameter's. */
    protected abstract void store(Stmt.Store st);

    /** Lines before the body: declarations, checks, names to choose first. */
    protected void prologue() { }

    /** The block a loop body (output loop or single iteration) is rendered as; the target may transform it. */
    protected Stmt.Block prepare(Stmt.Block body) { return body; }

    /** The line that opens the single iteration 0 of a kernel without an output loop. */
    protected String singleIterationGuard() { return "if (start < end) {"; }

    /** Whether {@code c} may start a name. */
    protected abstract boolean isIdentifierStart(char c);

    /** {@code name}, changed if it is a keyword or could collide with a name the renderer or the target uses. */
    protected abstract String unreserved(String name);

    /** The node a CSE key belongs to: the key itself, or the node of a target's key. */
    protected UOp nodeOf(Object key) { return (UOp) key; }

    // ---------------------------------------------------------------- body and statements

    /**
     * The kernel's body at indent {@code startIndent}: the {@link #prologue}, then the output loop, or the
     * single iteration 0 run when {@code start < end} (see {@link KernelProgram#outerExtent}).
     */
    protected final String renderBody(int startIndent) {
        indent = startIndent;
        scopes.push(new HashMap<>());
        prologue();
        Stmt.Loop split = program.outputLoop();
        if (split != null) {
            outputLoop(split);
        } else if (!program.body().body().isEmpty()) {
            line(singleIterationGuard());
            block(prepare(program.body()));
            line("}");
        }
        return drain();
    }

    /** The lines written so far, which are removed from the output. */
    protected final String drain() {
        String text = out.toString();
        out.setLength(0);
        return text;
    }

    private void outputLoop(Stmt.Loop split) {
        for (String head : outputLoopHead(split)) line(head);
        block(prepare(split.body()));
        line("}");
    }

    /** Statements of {@code b} one level deeper, in a scope of their own. */
    protected final void block(Stmt.Block b) {
        indent++;
        scopes.push(new HashMap<>());
        for (Stmt s : b.body()) stmt(s);
        scopes.pop();
        indent--;
    }

    protected final void stmt(Stmt s) {
        switch (s) {
            case Stmt.Block b -> b.body().forEach(this::stmt);
            case Stmt.Loop l when l.kind() == Stmt.LoopKind.UPCAST && inLanes(l) -> lanes(l);
            case Stmt.Loop l -> {
                String i = name(l.index()), stop = l.limit() != null ? limit(l) : extentLiteral(l.extent(), l.index());
                LastGroupPeeling peel = peelsLastGroup() ? LastGroupPeeling.of(l) : null;
                if (peel == null) {
                    loop(l, l.index(), i, "0", stop, l.body());
                    return;
                }
                // the groups whose lanes are all below the end run without the lanes' gates, so a compiler vectorises
                // them (GCC does not vectorise a loop with conditional loads); the last group keeps them
                String whole = peel.limit() != null ? "(" + name(peel.limit()) + " / " + peel.step() + ")" : Long.toString(peel.groups());
                loop(l, peel.index(), name(peel.index()), "0", whole, peel.whole());
                loop(l, l.index(), i, whole, stop, l.body());
            }
            case Stmt.Define d -> define(d);
            case Stmt.Accumulate a -> accumulate(a);
            case Stmt.Store st -> {
                Slot p = st.param();
                if (st.value().dtype() != p.dtype()) {
                    throw new IllegalArgumentException("kernel " + program.name() + " stores " + st.value().dtype() + " into " + p.name() + " of " + p.dtype());
                }
                store(st);
            }
        }
    }

    /** {@code body} in a counting loop over {@code index} (named {@code i}) from {@code from} to {@code stop}, with {@code l}'s hint. */
    private void loop(Stmt.Loop l, Variable index, String i, String from, String stop, Stmt.Block body) {
        String hint = loopHint(l.kind(), l.extent());
        if (hint != null) line(hint);
        line(forLoop(indexType(index), i, from, stop));
        block(body);
        line("}");
    }

    /**
     * Whether a loop split in groups whose last one runs past a symbolic limit or a constant extent is rendered as its
     * whole groups, without the gates of the lanes past the end, then its last group ({@link LastGroupPeeling}). No by
     * default: the Java renderer masks the lanes in vector registers, and the CUDA renderer's loops have not run
     * peeled on a GPU.
     */
    protected boolean peelsLastGroup() { return false; }

    /**
     * Where a loop with a limit stops: the limit's variable, or for a loop split in groups of {@code limitStep}
     * iterations the groups that hold an iteration below it, {@code ceil(limit / limitStep)} (see {@link Stmt.Loop}).
     */
    protected String limit(Stmt.Loop l) {
        String v = name(l.limit());
        return l.limitStep() == 1 ? v : "((" + v + " + " + (l.limitStep() - 1) + ") / " + l.limitStep() + ")";
    }

    /** The head of a counting loop, {@code for (type i = from; i < stop; i++)} and its opening brace. */
    protected static String forLoop(String type, String i, String from, String stop) {
        return "for (" + type + " " + i + " = " + from + "; " + i + " < " + stop + "; " + i + "++) {";
    }

    /** {@code acc = acc (kind) v}, then forgets the values computed from the register before. */
    protected final void accumulate(Slot reg, ReduceArg.Kind kind, Expr<T> acc, Expr<T> v) {
        DType dt = reg.dtype();
        Expr<T> r = switch (kind) {
            case SUM -> binary(Op.ADD, dt, acc.type(), acc, v, null, null, null);
            case PROD -> binary(Op.MUL, dt, acc.type(), acc, v, null, null, null);
            case MAX -> binary(Op.MAX, dt, acc.type(), acc, v, null, null, null);
            case MIN -> dt.isBool() ? bin(acc, "&", v, AND) : minimum(dt, acc, v);
        };
        line(acc.text() + " = " + r.text() + ";");
        invalidate(reg);
    }

    /** Values computed from {@code reg} before an update of it are stale now. */
    protected final void invalidate(Slot reg) {
        for (Map<Object, Expr<T>> scope : scopes) scope.keySet().removeIf(k -> registersRead(nodeOf(k)).contains(reg));
    }

    /** The registers {@code u} reads. */
    protected final Set<Slot> registersRead(UOp u) {
        Set<Slot> known = registersRead.get(u);
        if (known != null) return known;
        Set<Slot> regs = new HashSet<>();
        if (u.op() == Op.DEFINE_VAR && u.arg() instanceof Slot s && s.kind() == Slot.Kind.REGISTER) regs.add(s);
        for (UOp s : u.src()) regs.addAll(registersRead(s));
        registersRead.put(u, regs);
        return regs;
    }

    // ---------------------------------------------------------------- names and values

    /** The name of {@code v}, unique in the function. */
    protected final String name(Variable v) {
        return varNames.computeIfAbsent(v, k -> {
            String base = k.name().replaceAll("[^A-Za-z0-9_]", "_");
            if (base.isEmpty() || !isIdentifierStart(base.charAt(0))) base = "x" + base;
            base = unreserved(base); // never collide with parameters, registers, values, helpers or keywords
            String n = base;
            for (int i = 2; !usedNames.add(n); i++) n = base + "_" + i;
            return n;
        });
    }

    /** The expression for {@code u}: a literal, a variable or register, or a named local computed now. */
    protected final Expr<T> ref(UOp u) {
        Expr<T> known = known(u);
        if (known != null) return known;
        Expr<T> e = switch (u.op()) {
            case CONST -> literal(u);
            case DEFINE_VAR -> switch (u.arg()) {
                case Variable v -> variable(v);
                case Slot s when s.kind() == Slot.Kind.REGISTER -> register(s, u);
                default -> throw new IllegalArgumentException("kernel " + program.name() + " reads parameter " + u.arg() + " outside a LOAD");
            };
            case LOAD -> localOf(u, load(u));
            case WHERE -> u.src(0).isConst() ? ref(u.src(0).constLong() != 0 ? u.src(1) : u.src(2)) : localOf(u, compute(u));
            default -> {
                Expr<T> x = compute(u);
                yield inlinable(u) && x.text().length() <= INLINE_LIMIT ? x : localOf(u, x);
            }
        };
        if (u.op() != Op.CONST) remember(u, e);
        return e;
    }

    /** A float constant held in {@code t}: f64 as a double literal, narrower dtypes as a float literal. */
    protected final Expr<T> floatLiteral(UOp u, T t) {
        boolean f64 = u.dtype() == DType.F64;
        double v = f64 ? u.constDouble() : (float) u.constDouble();
        if (Double.isNaN(v) || Double.isInfinite(v)) return nonFinite(f64, v, t);
        return number(f64 ? Double.toString(v) : (float) v + "f", t);
    }

    private Expr<T> localOf(UOp u, Expr<T> e) { return local(localType(u, e), e); }

    /** The value computed for {@code key} in an enclosing block, or null. */
    protected final Expr<T> known(Object key) {
        for (Map<Object, Expr<T>> scope : scopes) {
            Expr<T> e = scope.get(key);
            if (e != null) return e;
        }
        return null;
    }

    /** Remembers {@code e} as the value of {@code key} for the rest of the current block. */
    protected final void remember(Object key, Expr<T> e) { scopes.peek().put(key, e); }

    /** Runs {@code body} in a scope of its own (its values are forgotten after it). */
    protected final void scoped(Runnable body) {
        scopes.push(new HashMap<>());
        body.run();
        scopes.pop();
    }

    /** A fresh local's name. */
    protected final String valueName() { return "v" + values++; }

    /** {@code e} in a new local of {@code type}. */
    protected final Expr<T> local(String type, Expr<T> e) {
        String n = valueName();
        line(type + " " + n + " = " + e.text() + ";");
        return new Expr<>(n, e.type(), ATOM);
    }

    /** A load's gate, or null for none or one that is always true. */
    protected static UOp gateOf(UOp load) {
        return load.src().size() > 2 && !(load.src(2).isConst() && load.src(2).constLong() != 0) ? load.src(2) : null;
    }

    private Expr<T> load(UOp u) {
        Slot p = u.src(0).slotArg();
        DType dt = u.dtype();
        if (dt != p.dtype()) throw new IllegalArgumentException("kernel " + program.name() + " loads " + dt + " from " + p.name() + " of " + p.dtype());
        Expr<T> index = elementIndex(u.src(1));
        Expr<T> read = read(u, p, index);
        UOp g = gateOf(u);
        if (g == null) return read;
        if (g.isConst()) return zero(dt, read.type());
        Expr<T> gate = ref(g);
        if (readsAtSafeIndex(p)) {
            // the read always happens, at element 0 where the gate is false, and its value is then dropped
            read = local(localType(u, read), read(u, p, cond(gate, index, zero(DType.I64, index.type()), index.type())));
        }
        return cond(gate, read, zero(dt, read.type()), read.type()); // else one conditional expression: a false gate never reads
    }

    /**
     * Whether a gated read of {@code p} is rendered as an unconditional read at an index that is the element's
     * where the gate holds and 0 elsewhere (the value then dropped), instead of a read only where the gate holds.
     * Only for a parameter with at least one element.
     */
    protected boolean readsAtSafeIndex(Slot p) { return false; }

    // ---------------------------------------------------------------- expressions

    private Expr<T> compute(UOp u) {
        Op op = u.op();
        DType dt = u.dtype();
        T t = typeOf(u);
        return switch (op) {
            case CAST -> cast(ref(u.src(0)), u.src(0).dtype(), dt, t);
            case BITCAST -> bitcast(ref(u.src(0)), u.src(0).dtype(), dt);
            case CHECK -> {
                Expr<T> index = ref(u.src(0));
                UOp gate = u.src().size() > 2 ? u.src(2) : null;
                if (gate != null && gate.isConst() && gate.constLong() == 0) yield index; // checks nothing
                yield indexCheck(u.indexCheckArg(), index, ref(u.src(1)), gate == null || gate.isConst() ? null : ref(gate), u);
            }
            case WHERE -> dt.isBool() && (u.src(1).isConst() || u.src(2).isConst()) ? boolWhere(u)
                    : cond(ref(u.src(0)), ref(u.src(1)), ref(u.src(2)), t);
            case ADD -> {
                UOp x = dt.isBool() ? null : negated(u.src(1));
                if (x == null) yield binary(op, dt, t, ref(u.src(0)), ref(u.src(1)), u.src(0), u.src(1), u);
                Expr<T> a = ref(u.src(0)), b = ref(x); // a + (-b) is a - b, bit for bit, in floats and in wrapping integers
                if (dt.isFloat()) yield round(dt, bin(a, "-", b, ADD));
                yield subtract(dt, t, a, b, u);
            }
            default -> switch (op.group()) {
                case UNARY -> unary(op, dt, t, ref(u.src(0)), u);
                case BINARY -> binary(op, u.src(0).dtype(), t, ref(u.src(0)), ref(u.src(1)), u.src(0), u.src(1), u);
                default -> throw new IllegalArgumentException("kernel " + program.name() + " has a " + op + " node inside an expression");
            };
        };
    }

    /** The {@code x} of {@code -x} (a NEG, or for integers a multiplication by -1), else null. */
    protected static UOp negated(UOp u) {
        if (u.op() == Op.NEG) return u.src(0);
        if (u.op() == Op.MUL && !u.dtype().isFloat() && u.src(1).isConst() && u.src(1).constLong() == -1) return u.src(0);
        return null;
    }

    /** A bool WHERE with a constant branch is plain logic. */
    private Expr<T> boolWhere(UOp u) {
        Expr<T> c = ref(u.src(0));
        Expr<T> notC = not(c);
        boolean constTrue = u.src(1).isConst();
        UOp other = u.src(constTrue ? 2 : 1);
        boolean k = u.src(constTrue ? 1 : 2).constLong() != 0;
        if (other.isConst()) return (other.constLong() != 0) == k ? ref(other) : constTrue == k ? c : notC;
        Expr<T> x = ref(other);
        // c ? k : x  is  c | x (k true) or !c & x;   c ? x : k  is  !c | x (k true) or c & x
        return k ? bin(constTrue ? c : notC, "|", x, OR) : bin(constTrue ? notC : c, "&", x, AND);
    }

    /** A unary op on dtype {@code dt}, held in {@code t}; {@code node} (or null) is the op's node. */
    protected final Expr<T> unary(Op op, DType dt, T t, Expr<T> a, UOp node) {
        if (dt.isBool()) {
            return switch (op) {
                case NEG, TRUNC -> a; // wrap(bool, -x) == x
                default -> throw notDefined(op, dt);
            };
        }
        if (!dt.isFloat()) {
            return switch (op) {
                case NEG -> integerNegate(dt, t, a, node);
                case TRUNC -> a;
                default -> throw new IllegalArgumentException("kernel " + program.name() + ": " + op + " is not defined on " + dt + "; cast to a float first");
            };
        }
        return switch (op) {
            case EXP2, LOG2, SIN, SQRT, TRUNC -> transcendental(op, dt, a);
            // 1/x in float equals 1.0/x in double rounded to float (division rounds innocuously twice)
            case RECIP -> round(dt, bin(one(dt, t), "/", a, MUL));
            case NEG -> negate(a, t);
            default -> throw notDefined(op, dt);
        };
    }

    /**
     * A binary op on operands of dtype {@code in}, giving type {@code t}. The operands' nodes (or null)
     * let range analysis drop zero tests and use plain {@code /} and {@code %} where they are exact;
     * {@code node} (or null) is the op's own node, whose range may prove that plain arithmetic cannot overflow.
     */
    protected final Expr<T> binary(Op op, DType in, T t, Expr<T> a, Expr<T> b, UOp an, UOp bn, UOp node) {
        if (in.isBool()) return boolBinary(op, a, b);
        if (in.isFloat()) return floatBinary(op, in, t, a, b);
        return integerBinary(op, in, t, a, b, an, bn, node);
    }

    private Expr<T> boolBinary(Op op, Expr<T> a, Expr<T> b) {
        return switch (op) {
            case ADD, OR, MAX -> bin(a, "|", b, OR); // bool arithmetic wraps to 0/1: a + b != 0
            case MUL, AND, DIV, FLOORDIV -> bin(a, "&", b, AND); // division by true is identity, by false 0
            case XOR -> bin(a, "^", b, XOR);
            case CMPNE -> bin(a, "!=", b, EQ);
            case CMPEQ -> bin(a, "==", b, EQ);
            case CMPLT -> bin(not(a), "&", b, AND);
            case MOD, FLOORMOD -> new Expr<>("false", typeOf(DType.BOOL), ATOM); // x % 1 == 0 and x % 0 == 0
            case SHL, SHR -> bin(a, "&", not(b), AND); // shifting by 1 >= width gives 0
            case THREEFRY -> boolThreefry(a, b);
            default -> throw notDefined(op, DType.BOOL);
        };
    }

    private Expr<T> floatBinary(Op op, DType dt, T t, Expr<T> a, Expr<T> b) {
        return switch (op) {
            // in float these round once, exactly like Alu's double result rounded to the dtype
            case ADD -> round(dt, bin(a, "+", b, ADD));
            case MUL -> round(dt, bin(a, "*", b, MUL));
            case DIV -> round(dt, bin(a, "/", b, MUL));
            case MOD -> round(dt, floatRemainder(dt, a, b)); // fmod is exact
            case FLOORDIV, FLOORMOD -> fromDouble(dt, floatFloor(op, a, b));
            case MAX -> floatMax(dt, t, a, b);
            case CMPLT -> bin(a, "<", b, REL);
            case CMPNE -> bin(a, "!=", b, EQ);
            case CMPEQ -> bin(a, "==", b, EQ);
            default -> throw notDefined(op, dt);
        };
    }

    protected final IllegalArgumentException notDefined(Op op, DType dt) {
        return new IllegalArgumentException("kernel " + program.name() + ": " + op + " is not defined on " + dt);
    }

    /** A float-typed expression rounded to a float dtype (f32 and f64 values are already rounded). */
    protected final Expr<T> round(DType dt, Expr<T> e) {
        return dt == DType.F16 || dt == DType.BF16 ? roundNarrow(dt, e) : e;
    }

    /** A double-typed expression rounded to a float dtype as {@code Alu.round}: to float first, then narrower. */
    protected final Expr<T> fromDouble(DType dt, Expr<T> d) {
        return switch (dt) {
            case F64 -> d;
            case F32 -> castTo("float", typeOf(DType.F32), d);
            // to float rounding to odd, so the final rounding to f16/bf16 is the only one (as Alu)
            default -> round(dt, roundToOdd(d));
        };
    }

    /** {@code Alu.castToLong/castToDouble} from {@code from} to {@code to} (held in {@code t}). */
    protected final Expr<T> cast(Expr<T> a, DType from, DType to, T t) {
        if (from == to) return a;
        if (to.isBool()) return from.isBool() ? a : bin(a, "!=", zero(from, a.type()), EQ); // NaN != 0 is true, as in Alu
        if (!to.isFloat()) return castToInteger(a, from, to, t);
        if (!from.isFloat()) return castToFloat(a, from, to, t);
        return switch (to) {
            case F64 -> castTo("double", typeOf(DType.F64), a);
            case F32 -> from == DType.F64 ? castTo("float", typeOf(DType.F32), a) : a;
            default -> from == DType.F64 ? fromDouble(to, a) : round(to, a);
        };
    }

    // ---------------------------------------------------------------- text

    protected static String paren(Expr<?> e, int prec) { return e.prec() >= prec ? e.text() : "(" + e.text() + ")"; }

    /** A left-associative binary operator. */
    protected final Expr<T> bin(Expr<T> a, String op, Expr<T> b, int prec) {
        return new Expr<>(paren(a, prec) + " " + op + " " + paren(b, prec + 1), binaryType(a, op, b, prec), prec);
    }

    /** {@code !a}. */
    protected final Expr<T> not(Expr<T> a) { return new Expr<>("!" + paren(a, ATOM), typeOf(DType.BOOL), UNARY); }

    /** A C-style cast to {@code type} (the target's {@code t}). */
    protected static <V> Expr<V> castTo(String type, V t, Expr<V> e) { return new Expr<>("(" + type + ") " + paren(e, UNARY), t, UNARY); }

    protected static <V> Expr<V> cond(Expr<V> c, Expr<V> a, Expr<V> b, V t) {
        return new Expr<>(paren(c, LOR) + " ? " + paren(a, LOR) + " : " + paren(b, COND), t, COND);
    }

    /** A call of {@code fn} giving type {@code t}. */
    @SafeVarargs
    protected static <V> Expr<V> call(String fn, V t, Expr<V>... args) {
        StringBuilder s = new StringBuilder(fn).append('(');
        for (int i = 0; i < args.length; i++) s.append(i > 0 ? ", " : "").append(args[i].text());
        return new Expr<>(s.append(')').toString(), t, ATOM);
    }

    /** A number literal, parenthesised when negative (so it never meets another minus). */
    protected static <V> Expr<V> number(String text, V t) {
        return new Expr<>(text.startsWith("-") ? "(" + text + ")" : text, t, ATOM);
    }

    /** Appends one line at the current indent. */
    protected final void line(String s) {
        out.append("    ".repeat(indent)).append(s).append('\n');
    }

    /** One level deeper (or, negative, shallower) for the lines that follow. */
    protected final void indent(int levels) { indent += levels; }

    /** {@code s} safe inside a block comment. */
    protected static String comment(String s) {
        return s.replace("*/", "*_/").replaceAll("[\\p{Cntrl}]", "?");
    }
}

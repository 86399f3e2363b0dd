package dev.kiln.cpu;

import dev.kiln.codegen.KernelProgram;
import dev.kiln.codegen.Stmt;
import dev.kiln.codegen.render.CFamilyRenderer;
import dev.kiln.ir.IndexCheck;
import dev.kiln.ir.Op;
import dev.kiln.ir.ReduceArg;
import dev.kiln.ir.Slot;
import dev.kiln.ir.UOp;
import dev.kiln.types.DType;
import dev.kiln.types.Variable;

import javax.lang.model.SourceVersion;
import java.util.EnumSet;
import java.util.HashMap;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * The Java table of the C-family printer for scalar values: Java's types (bool as {@code boolean},
 * i8/u8/i16/u16/i32 as {@code int}, u32/i64/u64 as {@code long} with i64 index math in {@code int} where
 * range analysis allows, floats as {@code float} or {@code double}), literals, element access through
 * {@code MemorySegment} with long offsets, wrapping integer arithmetic, {@code Math} and the generated
 * class's helpers ({@link JavaHelper}). {@link JavaRenderer} adds the vector lanes and the class.
 */
abstract class JavaScalarRenderer extends CFamilyRenderer<JType> {
    private static final Set<String> RESERVED = Set.of("bufs", "vars", "start", "end", "run", "MemorySegment", "Objects",
            "Math", "Float", "Double", "Long", "Integer", "Short", "Byte", "String", "lane", "ORDER", "ByteOrder", "FloatVector",
            "DoubleVector", "IntVector", "LongVector", "VectorMask", "VectorOperators", "VectorSpecies");

    /** A node's value in another form than its scalar one: a vector or mask of {@code type}, or (type null) an array of its lanes; or a long index. */
    record Form(UOp node, JType type) {}

    private final Map<Slot, String> registerNames = new HashMap<>();
    private final Map<UOp, Boolean> narrow = new IdentityHashMap<>();
    /** The helper methods the class needs, in declaration order. */
    final Set<JavaHelper> helpers = EnumSet.noneOf(JavaHelper.class);

    JavaScalarRenderer(KernelProgram program) { super(program); }

    // ---------------------------------------------------------------- statements

    @Override
    protected void define(Stmt.Define d) {
        Expr<JType> init = ref(d.init());
        line(jtype(d.register().uop()).name + " " + name(d.register()) + " = " + init.text() + ";");
    }

    @Override
    protected void accumulate(Stmt.Accumulate a) { accumulate(a.register(), a.kind(), ref(a.value())); }

    final void accumulate(Slot reg, ReduceArg.Kind kind, Expr<JType> v) {
        accumulate(reg, kind, new Expr<>(name(reg), jtype(reg.uop()), ATOM), v);
    }

    @Override
    protected final Expr<JType> minimum(DType dt, Expr<JType> acc, Expr<JType> v) {
        if (dt == DType.U64) return cond(new Expr<>("Long.compareUnsigned(" + v.text() + ", " + acc.text() + ") < 0", JType.BOOLEAN, REL), v, acc, acc.type());
        return call("Math.min", acc.type(), acc, v);
    }

    @Override
    protected void store(Stmt.Store st) {
        Slot p = st.param();
        Expr<JType> index = index(st.index());
        Expr<JType> value = ref(st.value());
        String store = p.name() + ".set(" + layout(p.dtype()) + ", " + offset(index, p.dtype()) + ", " + storeValue(value, p.dtype()) + ");";
        line(st.gate() == null ? store : "if (" + ref(st.gate()).text() + ") " + store);
    }

    @Override
    protected final UOp nodeOf(Object key) { return key instanceof Form f ? f.node() : (UOp) key; }

    @Override
    protected final String loopHint(Stmt.LoopKind kind, long extent) { return null; }

    @Override
    protected final String indexType(Variable index) { return varType(index).name; }

    @Override
    protected final String extentLiteral(long extent, Variable index) { return extent + (varType(index) == JType.LONG ? "L" : ""); }

    /** {@code Math.ceilDiv}: {@code limit + step - 1} could overflow an int limit near its type's maximum. */
    @Override
    protected final String limit(Stmt.Loop l) {
        return l.limitStep() == 1 ? name(l.limit()) : "Math.ceilDiv(" + name(l.limit()) + ", " + l.limitStep() + ")";
    }

    // ---------------------------------------------------------------- names and types

    @Override
    protected final boolean isIdentifierStart(char c) { return Character.isJavaIdentifierStart(c); }

    @Override
    protected final String unreserved(String name) {
        // parameters, registers, values, the method's own names or keywords
        boolean taken = name.matches("(p|acc|v)\\d+|JAVA_.*|[FI](32|64)X\\d+") || RESERVED.contains(name) || SourceVersion.isKeyword(name);
        return taken ? name + "_" : name;
    }

    /** A register's Java name: {@code acc0}, {@code acc1}, ... in the order the code declares them. */
    final String name(Slot register) {
        return registerNames.computeIfAbsent(register, r -> "acc" + registerNames.size());
    }

    static JType varType(Variable v) {
        return v.min() >= Integer.MIN_VALUE && v.max() < Integer.MAX_VALUE ? JType.INT : JType.LONG;
    }

    @Override
    protected final Expr<JType> variable(Variable v) { return new Expr<>(name(v), varType(v), ATOM); }

    @Override
    protected final Expr<JType> register(Slot reg, UOp u) { return new Expr<>(name(reg), jtype(u), ATOM); }

    @Override
    protected final JType typeOf(DType dt) {
        return switch (dt) {
            case BOOL -> JType.BOOLEAN;
            case I8, U8, I16, U16, I32 -> JType.INT;
            case U32, U64, I64 -> JType.LONG;
            case F16, BF16, F32 -> JType.FLOAT;
            case F64 -> JType.DOUBLE;
            case Q8_0, Q4_0 -> throw new IllegalArgumentException("packed dtype " + dt + " has no element values");
        };
    }

    @Override
    protected final JType typeOf(UOp u) { return jtype(u); }

    final JType jtype(UOp u) {
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

    // ---------------------------------------------------------------- values

    @Override
    protected final String localType(UOp u, Expr<JType> e) { return e.type().name; }

    /** {@code e} in a new local of its own type. */
    final Expr<JType> local(Expr<JType> e) { return local(e.type().name, e); }

    /** Index-style arithmetic that needs no wrapping stays inline, so index math reads as one formula. */
    @Override
    protected final boolean inlinable(UOp u) {
        if (u.dtype() != DType.I64 && u.dtype() != DType.I32) return false;
        return switch (u.op()) {
            case ADD, MUL, NEG -> true;
            case FLOORDIV, FLOORMOD -> u.src(0).vmin() >= 0 && u.src(1).vmin() > 0;
            default -> false;
        };
    }

    @Override
    protected final Expr<JType> literal(UOp u) {
        JType t = jtype(u);
        return switch (t) {
            case BOOLEAN -> new Expr<>(u.constLong() != 0 ? "true" : "false", t, ATOM);
            case INT -> number(Long.toString(u.constLong()), t);
            case LONG -> number(u.dtype() == DType.U64 && u.constLong() < 0 ? "0x" + Long.toHexString(u.constLong()) + "L" : u.constLong() + "L", t);
            case FLOAT, DOUBLE -> floatLiteral(u, t);
            default -> throw new IllegalStateException("a constant is a scalar");
        };
    }

    @Override
    protected final Expr<JType> nonFinite(boolean f64, double value, JType t) {
        String box = f64 ? "Double" : "Float";
        return new Expr<>(box + (Double.isNaN(value) ? ".NaN" : value > 0 ? ".POSITIVE_INFINITY" : ".NEGATIVE_INFINITY"), t, ATOM);
    }

    static Expr<JType> lit(long v, JType t) {
        return number(t == JType.LONG ? v + "L" : Long.toString(v), t);
    }

    @Override
    protected final Expr<JType> zero(DType dt, JType t) { return zero(t); }

    static Expr<JType> zero(JType t) {
        return switch (t) {
            case BOOLEAN -> new Expr<>("false", t, ATOM);
            case INT -> new Expr<>("0", t, ATOM);
            case LONG -> new Expr<>("0L", t, ATOM);
            case FLOAT -> new Expr<>("0f", t, ATOM);
            case DOUBLE -> new Expr<>("0.0", t, ATOM);
            default -> throw new IllegalStateException("zero(" + t + "): not a scalar type");
        };
    }

    /**
     * Always for a non-empty parameter: a read only where a gate holds lets C2 hoist the read's bounds check out of
     * the loop on the profile's word (profiled loop predication), and the padded iterations where the hoisted
     * check fails then deoptimise and recompile the kernel over and over (a 3x3 max pool with padding ran 5x
     * slower, in C1 code, for its first thousand runs).
     */
    @Override
    protected final boolean readsAtSafeIndex(Slot p) { return program.sizes().get(program.params().indexOf(p)) > 0; }

    @Override
    protected final Expr<JType> read(UOp u, Slot p, Expr<JType> index) {
        DType dt = u.dtype();
        String get = p.name() + ".get(" + layout(dt) + ", " + offset(index, dt) + ")";
        return switch (dt) {
            case BOOL -> new Expr<>(get + " != 0", JType.BOOLEAN, EQ);
            case I8, I16, I32, I64, U64, F32, F64 -> new Expr<>(get, jtype(u), ATOM);
            case U8 -> new Expr<>("Byte.toUnsignedInt(" + get + ")", JType.INT, ATOM);
            case U16 -> new Expr<>("Short.toUnsignedInt(" + get + ")", JType.INT, ATOM);
            case U32 -> new Expr<>("Integer.toUnsignedLong(" + get + ")", JType.LONG, ATOM);
            case F16 -> new Expr<>("Float.float16ToFloat(" + get + ")", JType.FLOAT, ATOM);
            case BF16 -> helperCall(JavaHelper.BF16_TO_FLOAT, JType.FLOAT, new Expr<>(get, JType.INT, ATOM));
            case Q8_0, Q4_0 -> throw new IllegalArgumentException("kernel " + program.name() + " loads packed dtype " + dt);
        };
    }

    static String layout(DType dt) {
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

    @Override
    protected final Expr<JType> elementIndex(UOp u) { return index(u); }

    /**
     * An element index for a load or store. Its linear part (i64 +, * and negation) is computed in long,
     * each int term widened first, even where range analysis would allow int: a memory offset that is a
     * long linear function of the loop counters lets the JIT hoist the segment's bounds checks out of
     * loops (an int sum widened at the end would have to be checked on every access).
     */
    final Expr<JType> index(UOp u) {
        boolean linear = u.dtype() == DType.I64 && (u.op() == Op.ADD || u.op() == Op.MUL || u.op() == Op.NEG);
        if (!linear || jtype(u) == JType.LONG) return ref(u);
        Form key = new Form(u, JType.LONG);
        Expr<JType> known = known(key);
        if (known != null) return known;
        Expr<JType> e;
        if (u.op() == Op.NEG) {
            e = new Expr<>("-" + paren(widen(index(u.src(0))), ATOM), JType.LONG, UNARY);
        } else {
            boolean minus = u.op() == Op.ADD && u.src(1).op() == Op.NEG;
            Expr<JType> a = index(u.src(0)), b = index(minus ? u.src(1).src(0) : u.src(1));
            if (a.type() == JType.INT && b.type() == JType.INT) { // one long operand makes the operation long
                if (isLiteral(a)) b = widen(b);
                else a = widen(a);
            }
            e = minus ? bin(a, "-", b, ADD) : u.op() == Op.ADD ? addText(a, b, JType.LONG) : bin(a, "*", b, MUL);
        }
        if (e.text().length() > INLINE_LIMIT) e = local(e);
        remember(key, e);
        return e;
    }

    private static Expr<JType> widen(Expr<JType> e) { return e.type() == JType.INT ? cast("long", e) : e; }

    private static boolean isLiteral(Expr<JType> e) { return e.text().matches("\\(?-?\\d+L?\\)?"); }

    /** The byte offset of element {@code index} (a long expression). */
    final String offset(Expr<JType> index, DType dt) {
        int size = dt.itemSize();
        if (size == 1) return index.text();
        return bin(index, "*", new Expr<>(size + "L", JType.LONG, ATOM), MUL).text();
    }

    final String storeValue(Expr<JType> v, DType dt) {
        return switch (dt) {
            case BOOL -> "(byte) (" + v.text() + " ? 1 : 0)";
            case I8, U8 -> cast("byte", v).text();
            case I16, U16 -> cast("short", v).text();
            case U32 -> cast("int", v).text();
            case I32, I64, U64, F32, F64 -> v.text();
            case F16 -> "Float.floatToFloat16(" + v.text() + ")";
            case BF16 -> helperCall(JavaHelper.BF16_BITS, JType.INT, v).text();
            case Q8_0, Q4_0 -> throw new IllegalArgumentException("packed dtype " + dt + " has no element values");
        };
    }

    // ---------------------------------------------------------------- elementwise ops

    @Override
    protected final Expr<JType> negate(Expr<JType> a, JType t) { return new Expr<>("-" + paren(a, ATOM), t, UNARY); }

    @Override
    protected final Expr<JType> integerNegate(DType dt, JType t, Expr<JType> a, UOp node) { return wrap(dt, t, negate(a, t)); }

    @Override
    protected final Expr<JType> subtract(DType dt, JType t, Expr<JType> a, Expr<JType> b, UOp node) {
        if (t == JType.LONG && a.type() == JType.INT && b.type() == JType.INT) a = cast("long", a);
        return wrap(dt, t, bin(a, "-", b, ADD));
    }

    @Override
    protected final Expr<JType> transcendental(Op op, DType dt, Expr<JType> a) {
        return switch (op) {
            case EXP2 -> dt == DType.F32 ? helperCall(JavaHelper.EXP2F, JType.FLOAT, a)
                    : fromDouble(dt, call("Math.pow", JType.DOUBLE, new Expr<>("2", JType.INT, ATOM), a));
            case LOG2 -> fromDouble(dt, helperCall(JavaHelper.LOG2, JType.DOUBLE, a));
            case SIN -> fromDouble(dt, call("Math.sin", JType.DOUBLE, a));
            case SQRT -> fromDouble(dt, call("Math.sqrt", JType.DOUBLE, a));
            default -> fromDouble(dt, helperCall(JavaHelper.TRUNC, JType.DOUBLE, a));
        };
    }

    @Override
    protected final Expr<JType> one(DType dt, JType t) { return t == JType.DOUBLE ? new Expr<>("1.0", t, ATOM) : new Expr<>("1f", t, ATOM); }

    /**
     * An integer binary op on operands of dtype {@code in}, giving Java type {@code t}. The operands'
     * nodes (or null) let range analysis drop zero tests and use plain {@code /} and {@code %} where they are exact.
     */
    @Override
    protected final Expr<JType> integerBinary(Op op, DType in, JType t, Expr<JType> a, Expr<JType> b, UOp an, UOp bn, UOp node) {
        boolean u64 = in == DType.U64;
        if (t == JType.LONG && a.type() == JType.INT && b.type() == JType.INT) a = cast("long", a); // i64 math on int operands
        boolean nonZero = bn != null && (bn.vmin() > 0 || bn.vmax() < 0);
        // unsigned values below 64 bits are held non-negative, where Java's / and % are floor division
        boolean plain = in.isUnsigned() && !u64 || an != null && bn != null && an.vmin() >= 0 && bn.vmin() > 0;
        int bits = in.bits();
        return switch (op) {
            case ADD -> wrap(in, t, addText(a, b, t));
            case MUL -> wrap(in, t, isMinusOne(b) ? new Expr<>("-" + paren(a, ATOM), t, UNARY) : bin(a, "*", b, MUL));
            case DIV -> divide(b, nonZero, t, u64 ? call("Long.divideUnsigned", t, a, b) : wrapSmall(in, t, bin(a, "/", b, MUL)));
            case MOD -> divide(b, nonZero, t, u64 ? call("Long.remainderUnsigned", t, a, b) : bin(a, "%", b, MUL));
            case FLOORDIV -> divide(b, nonZero, t, u64 ? call("Long.divideUnsigned", t, a, b)
                    : plain ? bin(a, "/", b, MUL) : wrapSmall(in, t, call("Math.floorDiv", t, a, b)));
            case FLOORMOD -> divide(b, nonZero, t, u64 ? call("Long.remainderUnsigned", t, a, b)
                    : plain ? bin(a, "%", b, MUL) : call("Math.floorMod", t, a, b));
            case MAX -> u64 ? cond(new Expr<>("Long.compareUnsigned(" + a.text() + ", " + b.text() + ") >= 0", JType.BOOLEAN, REL), a, b, t)
                    : call("Math.max", t, a, b);
            case CMPLT -> u64 ? new Expr<>("Long.compareUnsigned(" + a.text() + ", " + b.text() + ") < 0", JType.BOOLEAN, REL) : bin(a, "<", b, REL);
            case CMPNE -> bin(a, "!=", b, EQ);
            case CMPEQ -> bin(a, "==", b, EQ);
            case AND -> bin(a, "&", b, AND); // normalised operands give a normalised result
            case OR -> bin(a, "|", b, OR);
            case XOR -> isMinusOne(b) ? new Expr<>("~" + paren(a, ATOM), t, UNARY) : bin(a, "^", b, XOR);
            case SHL -> shift(b, bits, bn, zero(t), wrap(in, t, bin(a, "<<", b, SHIFT)));
            case SHR -> shift(b, bits, bn, in.isUnsigned() ? zero(t) : cond(bin(a, "<", zero(a.type()), REL), lit(-1, t), zero(t), t),
                    bin(a, in.isUnsigned() ? ">>>" : ">>", b, SHIFT));
            case THREEFRY -> wrap(in, t, helperCall(JavaHelper.THREEFRY, JType.LONG, a, b));
            default -> throw notDefined(op, in);
        };
    }

    private static boolean isMinusOne(Expr<JType> e) { return e.text().equals("(-1)") || e.text().equals("(-1L)"); }

    /** {@code a + b}, written {@code a - c} when {@code b} is a negative literal (the same bits in two's complement). */
    private Expr<JType> addText(Expr<JType> a, Expr<JType> b, JType t) {
        boolean negLiteral = b.prec() == ATOM && b.text().startsWith("(-");
        if (negLiteral && !b.text().equals("(" + Long.MIN_VALUE + "L)") && !b.text().equals("(" + Integer.MIN_VALUE + ")")) {
            return bin(a, "-", new Expr<>(b.text().substring(2, b.text().length() - 1), t, ATOM), ADD);
        }
        return bin(a, "+", b, ADD);
    }

    /** floorDiv(MIN, -1) overflows i8 and i16 in int arithmetic; wrap as Alu does. */
    private Expr<JType> wrapSmall(DType in, JType t, Expr<JType> e) {
        return in == DType.I8 || in == DType.I16 ? wrap(in, t, e) : e;
    }

    /** Integer division or remainder, 0 when the divisor is 0 (unless range analysis excludes it). */
    private Expr<JType> divide(Expr<JType> b, boolean nonZero, JType t, Expr<JType> quotient) {
        return nonZero ? quotient : cond(bin(b, "==", zero(b.type()), EQ), zero(t), quotient, t);
    }

    /** A shift, {@code outOfRange} when the amount is negative or at least the width. */
    private static Expr<JType> shift(Expr<JType> b, int bits, UOp amount, Expr<JType> outOfRange, Expr<JType> shifted) {
        if (amount != null && amount.vmin() >= 0 && amount.vmax() < bits) return shifted;
        Expr<JType> bad = new Expr<>(paren(b, REL + 1) + " < 0 || " + paren(b, REL + 1) + " >= " + bits, JType.BOOLEAN, LOR);
        return cond(bad, outOfRange, shifted, shifted.type());
    }

    @Override
    protected final Expr<JType> boolThreefry(Expr<JType> a, Expr<JType> b) {
        return new Expr<>(helperCall(JavaHelper.THREEFRY, JType.LONG, cond(a, lit(1, JType.LONG), zero(JType.LONG), JType.LONG),
                cond(b, lit(1, JType.LONG), zero(JType.LONG), JType.LONG)).text() + " != 0", JType.BOOLEAN, EQ);
    }

    @Override
    protected final Expr<JType> floatRemainder(DType dt, Expr<JType> a, Expr<JType> b) { return bin(a, "%", b, MUL); }

    @Override
    protected final Expr<JType> floatFloor(Op op, Expr<JType> a, Expr<JType> b) {
        return helperCall(op == Op.FLOORDIV ? JavaHelper.FLOOR_DIV : JavaHelper.FLOOR_MOD, JType.DOUBLE, a, b);
    }

    @Override
    protected final Expr<JType> floatMax(DType dt, JType t, Expr<JType> a, Expr<JType> b) { return call("Math.max", t, a, b); } // NaN wins, +0 > -0

    // ---------------------------------------------------------------- rounding and wrapping

    @Override
    protected final Expr<JType> roundNarrow(DType dt, Expr<JType> e) {
        return helperCall(dt == DType.F16 ? JavaHelper.F16 : JavaHelper.BF16, JType.FLOAT, e);
    }

    @Override
    protected final Expr<JType> roundToOdd(Expr<JType> d) { return helperCall(JavaHelper.ROUND_ODD, JType.FLOAT, d); }

    /** An integer expression wrapped to {@code dt} held in Java type {@code t} ({@code Alu.wrap}). */
    final Expr<JType> wrap(DType dt, JType t, Expr<JType> e) {
        return switch (dt) {
            case I8 -> cast("byte", e);
            case I16 -> cast("short", e);
            case U8 -> maskInt(e, "0xFF");
            case U16 -> maskInt(e, "0xFFFF");
            case I32 -> e.type() == JType.LONG ? cast("int", e) : e;
            case U32 -> bin(e, "&", new Expr<>("0xFFFFFFFFL", JType.LONG, ATOM), AND);
            case I64 -> t == JType.INT && e.type() == JType.LONG ? cast("int", e) : e; // int i64 is range-checked: no overflow
            case U64 -> e;
            default -> throw new IllegalArgumentException(dt + " is not an integer dtype");
        };
    }

    private Expr<JType> maskInt(Expr<JType> e, String mask) {
        Expr<JType> m = bin(e, "&", new Expr<>(mask, e.type(), ATOM), AND);
        return e.type() == JType.LONG ? cast("int", m) : m;
    }

    // ---------------------------------------------------------------- casts

    @Override
    protected final Expr<JType> castToInteger(Expr<JType> a, DType from, DType to, JType t) {
        if (from.isBool()) return cond(a, lit(1, t), zero(t), t);
        if (!from.isFloat()) return wrapTo(to, t, a);
        if (to == DType.U64) return helperCall(JavaHelper.F2U64, JType.LONG, a);
        return wrapTo(to, t, cast("long", a)); // (long) truncates toward zero, NaN -> 0, saturates; then wrap
    }

    @Override
    protected final Expr<JType> castToFloat(Expr<JType> a, DType from, DType to, JType t) {
        if (from.isBool()) return cond(a, one(to, t), zero(t), t);
        if (to == DType.F16 || to == DType.BF16) {
            // up to 16 bits the value is exact in float, so rounding it to f16/bf16 is the only rounding
            if (a.type() == JType.INT && from.bits() <= 16) return round(to, cast("float", a));
            // wider magnitudes: to double and float rounding to odd, then the one real rounding (as Alu)
            Expr<JType> odd = helperCall(from == DType.U64 ? JavaHelper.U64_ODD : JavaHelper.S64_ODD, JType.DOUBLE, a);
            return round(to, helperCall(JavaHelper.ROUND_ODD, JType.FLOAT, odd));
        }
        if (from == DType.U64) {
            if (to == DType.F32) return helperCall(JavaHelper.U64_TO_FLOAT, JType.FLOAT, a);
            return helperCall(JavaHelper.U64_TO_DOUBLE, JType.DOUBLE, a);
        }
        return switch (to) {
            case F64 -> cast("double", a);
            default -> cast("float", a); // one rounding from int or long, as Alu
        };
    }

    /** An integer (int or long) expression wrapped to integer dtype {@code to}. */
    private Expr<JType> wrapTo(DType to, JType t, Expr<JType> a) {
        if (to == DType.I64 || to == DType.U64) return t == JType.INT && a.type() == JType.LONG ? cast("int", a) : a;
        return wrap(to, t, a);
    }

    @Override
    protected final Expr<JType> bitcast(Expr<JType> a, DType from, DType to) {
        Expr<JType> bits = switch (from) {
            case BOOL -> cond(a, lit(1, JType.INT), zero(JType.INT), JType.INT);
            case F16 -> new Expr<>("Float.floatToFloat16(" + a.text() + ")", JType.INT, ATOM);
            case BF16 -> helperCall(JavaHelper.BF16_BITS, JType.INT, a);
            case F32 -> new Expr<>("Float.floatToRawIntBits(" + a.text() + ")", JType.INT, ATOM);
            case F64 -> new Expr<>("Double.doubleToRawLongBits(" + a.text() + ")", JType.LONG, ATOM);
            default -> a;
        };
        return switch (to) {
            case BOOL -> bin(bits, "!=", zero(bits.type()), EQ);
            case F16 -> new Expr<>("Float.float16ToFloat(" + cast("short", bits).text() + ")", JType.FLOAT, ATOM);
            case BF16 -> helperCall(JavaHelper.BF16_TO_FLOAT, JType.FLOAT, cast("short", bits));
            case F32 -> new Expr<>("Float.intBitsToFloat(" + (bits.type() == JType.LONG ? cast("int", bits) : bits).text() + ")", JType.FLOAT, ATOM);
            case F64 -> new Expr<>("Double.longBitsToDouble(" + bits.text() + ")", JType.DOUBLE, ATOM);
            default -> wrapTo(to, to == DType.I64 || to == DType.U32 || to == DType.U64 ? JType.LONG : JType.INT, bits);
        };
    }

    // ---------------------------------------------------------------- text

    /** Comparisons are boolean, shifts keep the left operand's type, the rest widen (int, long, float, double). */
    @Override
    protected final JType binaryType(Expr<JType> a, String op, Expr<JType> b, int prec) {
        if (op.equals("<<") || op.equals(">>") || op.equals(">>>")) return a.type();
        return switch (prec) {
            case REL, EQ -> JType.BOOLEAN;
            default -> a.type() == JType.BOOLEAN ? JType.BOOLEAN : wider(a.type(), b.type());
        };
    }

    private static JType wider(JType a, JType b) { return a.ordinal() >= b.ordinal() ? a : b; }

    /** A Java cast to primitive {@code type}. */
    static Expr<JType> cast(String type, Expr<JType> e) {
        JType t = switch (type) {
            case "long" -> JType.LONG;
            case "float" -> JType.FLOAT;
            case "double" -> JType.DOUBLE;
            default -> JType.INT; // byte, short and int all widen to int
        };
        return castTo(type, t, e);
    }

    /**
     * {@code checkIndex}: out of range, the kernel throws at once (the Java way to stop mid-kernel); {@link CpuKernel}
     * turns that into the failure the runtime names.
     */
    @Override
    protected final Expr<JType> indexCheck(IndexCheck check, Expr<JType> index, Expr<JType> size, Expr<JType> gate, UOp node) {
        Expr<JType> wraps = new Expr<>(Boolean.toString(check.negativeWraps()), JType.BOOLEAN, ATOM), site = new Expr<>(Integer.toString(check.site()), JType.INT, ATOM);
        Expr<JType> checked = gate == null ? helperCall(JavaHelper.CHECK_INDEX, JType.LONG, index, size, wraps, site)
                : helperCall(JavaHelper.CHECK_INDEX_IF, JType.LONG, gate, index, size, wraps, site);
        return jtype(node) == JType.INT ? cast("int", checked) : checked;
    }

    @SafeVarargs
    final Expr<JType> helperCall(JavaHelper h, JType t, Expr<JType>... args) {
        helpers.add(h);
        if (h == JavaHelper.CHECK_INDEX || h == JavaHelper.CHECK_INDEX_IF) helpers.add(JavaHelper.INDEX_CHECK_FAILED);
        if (h == JavaHelper.BF16) helpers.addAll(List.of(JavaHelper.BF16_BITS, JavaHelper.BF16_TO_FLOAT)); // bf16 is built on them
        if (h == JavaHelper.S64_ODD) helpers.add(JavaHelper.U64_ODD); // the signed form is built on the unsigned one
        return call(h.method, t, args);
    }
}

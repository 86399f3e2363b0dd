package dev.kiln.ir;

import dev.kiln.types.DType;

import java.util.ArrayList;
import java.util.EnumSet;
import java.util.IdentityHashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

import static dev.kiln.ir.PatternMatcher.rule;

/**
 * The simplifier for integer index math, built on the shared rewrite engine: constant folding (with
 * {@link Alu}, so folding and execution agree), algebraic identities, collection of like terms,
 * division folding and range analysis. Float expressions are only constant-folded: reassociating
 * them would change results.
 */
public final class Symbolic {
    private Symbolic() {}

    private static final Set<DType> SIGNED_INDEX = EnumSet.of(DType.I8, DType.I16, DType.I32, DType.I64);

    private static boolean isIndex(UOp u) { return SIGNED_INDEX.contains(u.dtype()); }

    /** Whether {@code u} is the integer or boolean constant {@code v}. */
    private static boolean isConst(UOp u, long v) { return u.isConst() && !u.dtype().isFloat() && u.constLong() == v; }

    /** Whether a CHECK provably passes: its index and size are single values and the index is valid. */
    private static boolean admitted(UOp check) {
        UOp size = check.src(1);
        return size.vmin() == size.vmax() && check.indexCheckArg().admits(check.vmin(), size.vmin());
    }

    private static boolean foldable(UOp u) {
        if (!u.op().isElementwise() || u.src().isEmpty() || u.dtype().isPacked()) return false;
        for (UOp s : u.src()) if (!s.isConst()) return false;
        return true;
    }

    /** The constant value of an elementwise op over constant sources. */
    static UOp fold(UOp u) {
        DType dt = u.dtype();
        UOp a = u.src(0);
        DType in = a.dtype();
        return switch (u.op()) {
            case CAST -> dt.isFloat() ? UOp.constant(dt, Alu.castToDouble(in, dt, a.constLong(), a.constDouble()))
                    : UOp.constant(dt, Alu.castToLong(in, dt, a.constLong(), a.constDouble()));
            case BITCAST -> {
                long bits = Alu.bitsOf(in, a.constLong(), a.constDouble());
                yield dt.isFloat() ? UOp.constant(dt, Alu.floatFromBits(dt, bits)) : UOp.constant(dt, bits);
            }
            case WHERE -> a.constLong() != 0 ? u.src(1) : u.src(2);
            // a constant index in range needs no check; one out of range keeps it, to fail when the kernel runs
            case CHECK -> u.indexCheckArg().admits(a.constLong(), u.src(1).constLong()) || u.src().size() == 3 && u.src(2).constLong() == 0 ? a : null;
            default -> {
                if (u.src().size() == 1) {
                    yield in.isFloat() ? UOp.constant(dt, Alu.unary(u.op(), in, a.constDouble()))
                            : UOp.constant(dt, Alu.unary(u.op(), in, a.constLong()));
                }
                UOp b = u.src(1);
                yield in.isFloat()
                        ? (u.op().isComparison() ? UOp.constant(dt, (long) Alu.binary(u.op(), in, a.constDouble(), b.constDouble()))
                        : UOp.constant(dt, Alu.binary(u.op(), in, a.constDouble(), b.constDouble())))
                        : UOp.constant(dt, Alu.binary(u.op(), in, a.constLong(), b.constLong()));
            }
        };
    }

    private static final PatternMatcher RULES = new PatternMatcher(List.of(
            // constants
            rule(UPat.anyOf(EnumSet.allOf(Op.class)).where(Symbolic::foldable).named("x"), b -> fold(b.get("x"))),
            // a range that holds one value is that value
            rule(UPat.anyOf(EnumSet.allOf(Op.class)).where(u -> u.op() != Op.CONST && (isIndex(u) || u.dtype().isBool())
                    && u.shape().rank() == 0 && u.vmin() == u.vmax() && (u.op() != Op.CHECK || admitted(u))).named("x"),
                    b -> UOp.constant(b.get("x").dtype(), b.get("x").vmin())),
            // identities (for floats only those exact for every value: x * 1 == x, x + -0.0 == x; not x + 0.0, which
            // turns -0.0 into +0.0)
            rule(UPat.op(Op.MUL, UPat.var("x"), UPat.cvar("c")).where(u -> u.dtype().isFloat() && u.src(1).isConst() && u.src(1).constDouble() == 1.0),
                    b -> b.get("x")),
            rule(UPat.op(Op.ADD, UPat.var("x"), UPat.cvar("c")).where(u -> u.dtype().isFloat() && u.src(1).isConst()
                    && Double.doubleToRawLongBits(u.src(1).constDouble()) == Double.doubleToRawLongBits(-0.0)), b -> b.get("x")),
            rule(UPat.op(Op.WHERE, UPat.cvar("c"), UPat.var("t"), UPat.var("f")), b -> b.get("c").constLong() != 0 ? b.get("t") : b.get("f")),
            rule(UPat.op(Op.WHERE, UPat.var("c"), UPat.var("t"), UPat.var("t")), b -> b.get("t")),
            // a select under the same condition: c ? (c ? x : y) : z == c ? x : z, and likewise on the false side
            rule(UPat.op(Op.WHERE, UPat.var("c"), UPat.op(Op.WHERE, UPat.var("c"), UPat.var("x"), UPat.var("y")), UPat.var("z")),
                    b -> b.get("c").where(b.get("x"), b.get("z"))),
            rule(UPat.op(Op.WHERE, UPat.var("c"), UPat.var("x"), UPat.op(Op.WHERE, UPat.var("c"), UPat.var("y"), UPat.var("z"))),
                    b -> b.get("c").where(b.get("x"), b.get("z"))),
            // boolean selects, the form padding masks come in: c ? true : false == c;  c ? x : false == c && x;
            // (i < k) ? false : x == (k - 1 < i) && x for an integer i
            rule(UPat.op(Op.WHERE, UPat.var("c"), UPat.cvar("t"), UPat.cvar("f")).where(u -> u.dtype().isBool()
                    && isConst(u.src(1), 1) && isConst(u.src(2), 0)), b -> b.get("c")),
            rule(UPat.op(Op.WHERE, UPat.var("c"), UPat.var("x"), UPat.cvar("f")).where(u -> u.dtype().isBool()
                    && !u.src(1).isConst() && isConst(u.src(2), 0)), b -> UOp.of(Op.AND, DType.BOOL, null, b.get("c"), b.get("x"))),
            rule(UPat.op(Op.WHERE, UPat.op(Op.CMPLT, UPat.var("i"), UPat.cvar("k")), UPat.cvar("f"), UPat.var("x"))
                            .where(u -> u.dtype().isBool() && isConst(u.src(1), 0) && u.src(0).op() == Op.CMPLT && isIndex(u.src(0).src(0))
                                    && u.src(0).src(1).isConst() && u.src(0).src(1).constLong() > Long.MIN_VALUE),
                    b -> {
                        UOp notBelow = UOp.of(Op.CMPLT, DType.BOOL, null, UOp.constant(b.get("i").dtype(), b.get("k").constLong() - 1), b.get("i"));
                        UOp x = b.get("x");
                        return x.isConst() ? (x.constLong() != 0 ? notBelow : x) : UOp.of(Op.AND, DType.BOOL, null, notBelow, x);
                    }),
            rule(UPat.op(Op.MUL, UPat.var("x"), UPat.cvar("c")).where(Symbolic::isIndex),
                    b -> b.get("c").constLong() == 1 ? b.get("x") : b.get("c").constLong() == 0 ? b.get("c") : null),
            rule(UPat.op(Op.NEG, UPat.op(Op.NEG, UPat.var("x"))), b -> b.get("x")),
            rule(UPat.op(Op.NEG, UPat.op(Op.MUL, UPat.var("x"), UPat.cvar("c"))).where(Symbolic::isIndex),
                    b -> b.get("x").mul(-b.get("c").constLong())),
            rule(UPat.op(Op.MUL, UPat.op(Op.NEG, UPat.var("x")), UPat.cvar("c")).where(Symbolic::isIndex),
                    b -> b.get("x").mul(-b.get("c").constLong())),
            rule(UPat.op(Op.MUL, UPat.op(Op.MUL, UPat.var("x"), UPat.cvar("c1")), UPat.cvar("c2")).where(Symbolic::isIndex),
                    b -> b.get("x").mul(b.get("c1").constLong() * b.get("c2").constLong())),
            rule(UPat.op(Op.ADD, UPat.var("a"), UPat.var("b")).where(Symbolic::isIndex).named("x"), b -> collectTerms(b.get("x"))),
            // truncating division of non-negative values is floor division
            rule(UPat.op(Op.DIV, UPat.var("x"), UPat.var("d")).where(Symbolic::isIndex),
                    b -> b.get("x").vmin() >= 0 && b.get("d").vmin() > 0 ? b.get("x").floorDiv(b.get("d")) : null),
            rule(UPat.op(Op.MOD, UPat.var("x"), UPat.var("d")).where(Symbolic::isIndex),
                    b -> b.get("x").vmin() >= 0 && b.get("d").vmin() > 0 ? b.get("x").floorMod(b.get("d")) : null),
            rule(UPat.op(Op.FLOORDIV, UPat.var("x"), UPat.cvar("c")).where(Symbolic::isIndex).named("d"),
                    b -> foldDiv(b.get("d"), b.get("x"), b.get("c").constLong(), false)),
            rule(UPat.op(Op.FLOORMOD, UPat.var("x"), UPat.cvar("c")).where(Symbolic::isIndex).named("d"),
                    b -> foldDiv(b.get("d"), b.get("x"), b.get("c").constLong(), true)),
            // max decided by ranges
            rule(UPat.op(Op.MAX, UPat.var("a"), UPat.var("b")).where(Symbolic::isIndex),
                    b -> b.get("a").vmin() >= b.get("b").vmax() ? b.get("a") : b.get("b").vmin() >= b.get("a").vmax() ? b.get("b") : null)));

    /**
     * {@code expr} simplified: an equivalent expression for every value of its variables within their
     * bounds, with no more nodes than {@code expr}. Sums come out with like terms collected and the
     * constant last, unless collecting (which distributes constant factors over sums) would make them
     * larger.
     */
    public static UOp simplify(UOp expr) {
        UOp out = GraphRewriter.rewrite(expr, RULES);
        // No rule makes the expression larger as a tree (see treeSize), but a rewritten node may stop
        // sharing subterms with the rest of the graph, so the graph itself can grow: keep the input then.
        return out.toposort().size() <= expr.toposort().size() ? out : expr;
    }

    /**
     * The rules. None of them makes an expression larger as a tree ({@link #treeSize}); {@link #simplify}
     * applies them and also guarantees no growth of the shared graph.
     */
    public static PatternMatcher rules() { return RULES; }

    // ---------------------------------------------------------------- sums of terms

    /**
     * Splits a sum into coefficients per term, looking through negation and constant factors (so
     * {@code (a + b) * c} gives {@code a*c + b*c}); the constant is under the key {@code 1}.
     */
    private static LinkedHashMap<UOp, Long> terms(UOp sum) {
        LinkedHashMap<UOp, Long> out = new LinkedHashMap<>();
        addTerms(sum, 1, out);
        while (recombineDivMod(out)) { /* until no pair is left */ }
        return out;
    }

    /**
     * {@code k*c*(y // c) + k*(y % c)} is {@code k*y} for every integer y (floor division and modulo by a
     * positive c): a reshape that splits an index and merges it back leaves this pair. Recombines one pair;
     * false if there is none.
     */
    private static boolean recombineDivMod(Map<UOp, Long> terms) {
        for (var e : terms.entrySet()) {
            UOp m = e.getKey();
            if (m.op() != Op.FLOORMOD || !m.src(1).isConst() || m.src(1).constLong() <= 0) continue;
            long c = m.src(1).constLong(), k = e.getValue();
            UOp d = UOp.of(Op.FLOORDIV, m.dtype(), null, m.src(0), m.src(1));
            Long kd = terms.get(d);
            if (kd == null || kd != k * c || k == 0) continue;
            terms.remove(m);
            terms.remove(d);
            addTerms(m.src(0), k, terms);
            return true;
        }
        return false;
    }

    private static void addTerms(UOp u, long scale, Map<UOp, Long> out) {
        switch (u.op()) {
            case ADD -> {
                addTerms(u.src(0), scale, out);
                addTerms(u.src(1), scale, out);
            }
            case CONST -> out.merge(UOp.constant(u.dtype(), 1), scale * u.constLong(), Long::sum);
            case MUL -> {
                if (u.src(1).isConst()) addTerms(u.src(0), scale * u.src(1).constLong(), out);
                else out.merge(u, scale, Long::sum);
            }
            case NEG -> addTerms(u.src(0), -scale, out);
            default -> out.merge(u, scale, Long::sum);
        }
    }

    private static UOp build(DType dt, Map<UOp, Long> terms) {
        UOp one = UOp.constant(dt, 1);
        UOp acc = null;
        for (var e : terms.entrySet()) {
            if (e.getKey() == one || e.getValue() == 0) continue;
            long k = e.getValue();
            UOp t = k == 1 ? e.getKey() : k == -1 ? e.getKey().neg() : UOp.of(Op.MUL, dt, null, e.getKey(), UOp.constant(dt, k));
            acc = acc == null ? t : UOp.of(Op.ADD, dt, null, acc, t);
        }
        long c = terms.getOrDefault(one, 0L);
        if (acc == null) return UOp.constant(dt, c);
        return c == 0 ? acc : UOp.of(Op.ADD, dt, null, acc, UOp.constant(dt, c));
    }

    private static UOp collectTerms(UOp sum) { return notLarger(sum, build(sum.dtype(), terms(sum))); }

    /** {@code candidate} if it is no larger than {@code original} as a tree, else null (keep the original). */
    private static UOp notLarger(UOp original, UOp candidate) {
        return candidate != original && treeSize(candidate) <= treeSize(original) ? candidate : null;
    }

    /**
     * The number of nodes of {@code expr} written out as a tree (shared subterms counted once per use,
     * saturating at {@link Long#MAX_VALUE}). Unlike the node count of the shared graph, this measure
     * only depends on the node itself, so rewrites that keep it from growing keep every expression
     * containing the node from growing too.
     */
    public static long treeSize(UOp expr) {
        Map<UOp, Long> size = new IdentityHashMap<>();
        for (UOp u : expr.toposort()) {
            long s = 1;
            for (UOp x : u.src()) s = s + size.get(x) < 0 ? Long.MAX_VALUE : s + size.get(x);
            size.put(u, s);
        }
        return size.get(expr);
    }

    /**
     * Floor division or modulo of a sum by a positive constant: terms whose coefficient the divisor
     * divides leave the remainder unchanged, and a remainder whose range lies within one multiple of
     * the divisor divides to a constant. {@code div} is the node {@code x // c} or {@code x % c} itself.
     */
    private static UOp foldDiv(UOp div, UOp x, long c, boolean mod) {
        if (c <= 0) return null;
        DType dt = x.dtype();
        if (c == 1) return mod ? UOp.constant(dt, 0) : x;
        if (mod && x.vmin() >= 0 && x.vmax() < c) return x;
        if (!mod && Math.floorDiv(x.vmin(), c) == Math.floorDiv(x.vmax(), c)) return UOp.constant(dt, Math.floorDiv(x.vmin(), c));
        // (x // a) // b -> x // (a*b);  (x % (k*c)) % c -> x % c
        if (!mod && x.op() == Op.FLOORDIV && x.src(1).isConst() && x.src(1).constLong() > 0) {
            return x.src(0).floorDiv(Math.multiplyExact(x.src(1).constLong(), c));
        }
        if (mod && x.op() == Op.FLOORMOD && x.src(1).isConst() && x.src(1).constLong() % c == 0) {
            return x.src(0).floorMod(c);
        }
        LinkedHashMap<UOp, Long> t = terms(x);
        UOp factored = foldSmallRemainder(div, t, dt, c, mod);
        if (factored != null) return factored;
        LinkedHashMap<UOp, Long> quotient = new LinkedHashMap<>(), remainder = new LinkedHashMap<>();
        boolean progress = false;
        for (var e : t.entrySet()) {
            long q = Math.floorDiv(e.getValue(), c), r = Math.floorMod(e.getValue(), c);
            if (q != 0) {
                quotient.put(e.getKey(), q);
                progress = true;
            }
            if (r != 0) remainder.put(e.getKey(), r);
        }
        if (!progress) return null;
        UOp rem = build(dt, remainder);
        // splitting off the quotient pays when the remainder part folds further; keep it only if smaller
        UOp split = mod ? rem.floorMod(c) : build(dt, quotient).add(rem.floorDiv(c));
        return notLarger(div, GraphRewriter.rewrite(split, RULES));
    }

    /**
     * {@code (k*y + s) // c == y // (c/k)} and {@code (k*y + s) % c == k*(y % (c/k)) + s} when {@code k} divides
     * {@code c} and the small part {@code s} lies in {@code [0, k)}: the flat index of a row-major block split
     * at a coarser boundary ({@code (100*i + 10*j + l) // 800} is {@code i // 8} for digits j and l). Tries the
     * largest such {@code k} among the coefficients first; null if none applies or the result is not smaller.
     */
    private static UOp foldSmallRemainder(UOp div, Map<UOp, Long> terms, DType dt, long c, boolean mod) {
        UOp one = UOp.constant(dt, 1);
        List<Long> ks = terms.entrySet().stream().filter(e -> e.getKey() != one).map(Map.Entry::getValue)
                .filter(k -> k > 1 && k < c && c % k == 0).distinct().sorted(java.util.Comparator.reverseOrder()).toList();
        for (long k : ks) {
            LinkedHashMap<UOp, Long> big = new LinkedHashMap<>(), small = new LinkedHashMap<>();
            for (var e : terms.entrySet()) {
                if (e.getKey() != one && e.getValue() % k == 0) big.put(e.getKey(), e.getValue() / k);
                else small.put(e.getKey(), e.getValue());
            }
            UOp s = build(dt, small);
            if (s.vmin() < 0 || s.vmax() >= k) continue;
            UOp y = build(dt, big);
            UOp out = mod ? y.floorMod(c / k).mul(k).add(s) : y.floorDiv(c / k);
            return notLarger(div, GraphRewriter.rewrite(out, RULES));
        }
        return null;
    }

    /**
     * The narrowest signed index dtype that holds every intermediate value of {@code expr}: i32 when
     * all of them fit in 32 bits, else i64.
     */
    public static DType indexDType(UOp expr) {
        for (UOp u : expr.toposort()) {
            if (u.dtype().isInt() && (u.vmin() < Integer.MIN_VALUE || u.vmax() > Integer.MAX_VALUE)) return DType.I64;
        }
        return DType.I32;
    }

    /** {@code expr} (integer index math) rebuilt in {@link #indexDType(UOp)}. */
    public static UOp narrowIndex(UOp expr) {
        DType target = indexDType(expr);
        Map<UOp, UOp> out = new IdentityHashMap<>();
        for (UOp u : expr.toposort()) {
            List<UOp> src = new ArrayList<>();
            for (UOp s : u.src()) src.add(out.get(s));
            UOp n;
            if (!isIndex(u)) n = u.withSrc(src);
            else if (u.op() == Op.CONST) n = UOp.constant(target, u.constLong());
            else if (u.op() == Op.DEFINE_VAR) n = u.dtype() == target ? u : UOp.of(Op.CAST, target, null, u);
            else n = UOp.of(u.op(), target, u.arg(), src);
            out.put(u, n);
        }
        return out.get(expr);
    }
}

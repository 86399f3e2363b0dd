package dev.kiln.ir;

import dev.kiln.types.Variable;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.Combinators;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import net.jqwik.api.Tuple;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Random integer index expressions over two or three bounded variables: the simplifier must keep their
 * value, range analysis must bound every subexpression, and simplification must not grow them.
 * Magnitudes stay far below 2^63 (variables within [-50, 100], constants within [-20, 20], depth at
 * most 5, products only with a variable or a constant), so no operation overflows.
 */
class SymbolicPropertyTest {

    // ---------------------------------------------------------------- expressions

    /** An expression tree, turned into IR over the scenario's variables. */
    sealed interface Expr {
        UOp build(UOp[] vars);
    }

    record Var(int index) implements Expr {
        public UOp build(UOp[] vars) { return vars[index % vars.length]; }
    }

    record Const(long value) implements Expr {
        public UOp build(UOp[] vars) { return UOp.index(value); }
    }

    record Add(Expr a, Expr b) implements Expr {
        public UOp build(UOp[] vars) { return a.build(vars).add(b.build(vars)); }
    }

    record MulConst(Expr a, long c) implements Expr {
        public UOp build(UOp[] vars) { return a.build(vars).mul(c); }
    }

    record MulVar(Expr a, int var) implements Expr {
        public UOp build(UOp[] vars) { return a.build(vars).mul(vars[var % vars.length]); }
    }

    record Neg(Expr a) implements Expr {
        public UOp build(UOp[] vars) { return a.build(vars).neg(); }
    }

    /** Division or remainder by a positive constant. */
    record DivBy(Op op, Expr a, long c) implements Expr {
        public UOp build(UOp[] vars) { return UOp.of(op, a.build(vars).dtype(), null, a.build(vars), UOp.index(c)); }
    }

    record Max(Expr a, Expr b) implements Expr {
        public UOp build(UOp[] vars) { return a.build(vars).max(b.build(vars)); }
    }

    record Min(Expr a, Expr b) implements Expr {
        public UOp build(UOp[] vars) { return a.build(vars).min(b.build(vars)); }
    }

    /** {@code lhs < rhs ? ifLess : otherwise}. */
    record Select(Expr lhs, Expr rhs, Expr ifLess, Expr otherwise) implements Expr {
        public UOp build(UOp[] vars) { return lhs.build(vars).lt(rhs.build(vars)).where(ifLess.build(vars), otherwise.build(vars)); }
    }

    private static final Arbitrary<Integer> VAR = Arbitraries.integers().between(0, 2);
    private static final Arbitrary<Long> CONSTANT = Arbitraries.longs().between(-20, 20);
    private static final Arbitrary<Long> DIVISOR = Arbitraries.longs().between(1, 20);

    /** Expressions of at most {@code depth} levels of operations above the leaves. */
    @SuppressWarnings("unchecked")
    static Arbitrary<Expr> expressions(int depth) {
        Arbitrary<Expr> leaf = Arbitraries.frequencyOf(Tuple.of(2, VAR.map(Var::new)), Tuple.of(1, CONSTANT.map(Const::new)));
        if (depth == 0) return leaf;
        Arbitrary<Expr> e = Arbitraries.lazy(() -> expressions(depth - 1));
        return Arbitraries.frequencyOf(
                Tuple.of(1, leaf),
                Tuple.of(2, Combinators.combine(e, e).as(Add::new)),
                Tuple.of(1, Combinators.combine(e, CONSTANT).as(MulConst::new)),
                Tuple.of(1, Combinators.combine(e, VAR).as(MulVar::new)),
                Tuple.of(1, e.map(Neg::new)),
                Tuple.of(3, Combinators.combine(Arbitraries.of(Op.FLOORDIV, Op.FLOORMOD, Op.DIV, Op.MOD), e, DIVISOR).as(DivBy::new)),
                Tuple.of(1, Combinators.combine(e, e).as(Max::new)),
                Tuple.of(1, Combinators.combine(e, e).as(Min::new)),
                Tuple.of(1, Combinators.combine(e, e, e, e).as(Select::new)));
    }

    // ---------------------------------------------------------------- scenarios

    /** Variables with their bounds, an expression over them and points within the bounds. */
    record Scenario(List<Variable> vars, Expr expr, List<Map<Variable, Long>> points) {
        UOp uop() { return expr.build(vars.stream().map(UOp::variable).toArray(UOp[]::new)); }

        @Override
        public String toString() { return "vars " + vars + ", expr " + expr + " = " + uop(); }
    }

    @Provide
    Arbitrary<Scenario> scenarios() {
        Arbitrary<long[]> bounds = Combinators.combine(Arbitraries.longs().between(-50, 100), Arbitraries.longs().between(-50, 100))
                .as((a, b) -> new long[] {Math.min(a, b), Math.max(a, b)});
        Arbitrary<List<Variable>> vars = Arbitraries.integers().between(2, 3).flatMap(n -> bounds.list().ofSize(n).map(bs -> {
            List<Variable> out = new ArrayList<>();
            for (int i = 0; i < bs.size(); i++) out.add(new Variable("v" + i, bs.get(i)[0], bs.get(i)[1]));
            return out;
        }));
        Arbitrary<List<List<Integer>>> picks = Arbitraries.integers().between(0, 1_000_000).list().ofSize(3).list().ofSize(8);
        return Combinators.combine(vars, expressions(5), picks).as((vs, e, ps) -> new Scenario(vs, e, points(vs, ps)));
    }

    /** Every corner of the variables' box plus points picked inside it. */
    private static List<Map<Variable, Long>> points(List<Variable> vars, List<List<Integer>> picks) {
        List<Map<Variable, Long>> out = new ArrayList<>();
        for (int corner = 0; corner < 1 << vars.size(); corner++) {
            Map<Variable, Long> p = new HashMap<>();
            for (int i = 0; i < vars.size(); i++) p.put(vars.get(i), (corner >> i & 1) == 0 ? vars.get(i).min() : vars.get(i).max());
            out.add(p);
        }
        for (List<Integer> pick : picks) {
            Map<Variable, Long> p = new HashMap<>();
            for (int i = 0; i < vars.size(); i++) {
                Variable v = vars.get(i);
                p.put(v, v.min() + pick.get(i) % (v.max() - v.min() + 1));
            }
            out.add(p);
        }
        return out;
    }

    // ---------------------------------------------------------------- properties

    @Property(tries = 2000)
    void simplifyPreservesValue(@ForAll("scenarios") Scenario s) {
        UOp expr = s.uop(), simple = Symbolic.simplify(expr);
        for (Map<Variable, Long> p : s.points()) {
            assertThat(Eval.value(simple, p)).as("%s simplified to %s at %s", expr, simple, p).isEqualTo(Eval.value(expr, p));
        }
    }

    @Property(tries = 2000)
    void rangesBoundEverySubexpression(@ForAll("scenarios") Scenario s) {
        UOp expr = s.uop();
        for (UOp root : List.of(expr, Symbolic.simplify(expr))) {
            for (Map<Variable, Long> p : s.points()) {
                for (var e : Eval.all(root, p).entrySet()) {
                    UOp u = e.getKey();
                    assertThat(e.getValue()).as("%s in [%d, %d] at %s (inside %s)", u, u.vmin(), u.vmax(), p, root)
                            .isBetween(u.vmin(), u.vmax());
                }
            }
        }
    }

    @Property(tries = 2000)
    void simplifyNeverGrowsTheGraph(@ForAll("scenarios") Scenario s) {
        UOp expr = s.uop(), simple = Symbolic.simplify(expr);
        assertThat(simple.toposort().size()).as("%s simplified to %s", expr, simple).isLessThanOrEqualTo(expr.toposort().size());
    }

    /** The rules alone (without simplify's final guard) never grow an expression written out as a tree. */
    @Property(tries = 2000)
    void rulesNeverGrowTheTree(@ForAll("scenarios") Scenario s) {
        UOp expr = s.uop(), rewritten = GraphRewriter.rewrite(expr, Symbolic.rules());
        assertThat(Symbolic.treeSize(rewritten)).as("%s rewritten to %s", expr, rewritten).isLessThanOrEqualTo(Symbolic.treeSize(expr));
    }
}

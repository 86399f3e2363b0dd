package dev.kiln.ir;

import dev.kiln.types.DType;
import dev.kiln.types.Variable;
import org.junit.jupiter.api.Test;

import java.util.List;
import java.util.Map;

import static dev.kiln.ir.PatternMatcher.rule;
import static org.assertj.core.api.Assertions.assertThat;

/** The rewrite engine: pattern matching, bindings, commutativity, fixed-point rewriting and substitution. */
class PatternMatcherTest {
    private final UOp x = UOp.variable(new Variable("x", 0, 100)), y = UOp.variable(new Variable("y", 0, 100));

    @Test
    void commutativeOpsMatchEitherOrder() {
        UPat p = UPat.op(Op.ADD, UPat.cvar("c"), UPat.var("v"));
        var b = p.match(x.add(5));
        assertThat(b).isNotNull();
        assertThat(b.get("c").constLong()).isEqualTo(5);
        assertThat(b.get("v")).isSameAs(x);
        // FLOORDIV is not commutative: the constant must be where the pattern says
        assertThat(UPat.op(Op.FLOORDIV, UPat.cvar("c"), UPat.var("v")).match(x.floorDiv(5))).isNull();
    }

    @Test
    void aNameBoundTwiceMustBindTheSameNode() {
        UPat same = UPat.op(Op.ADD, UPat.var("a"), UPat.var("a"));
        assertThat(same.match(x.add(x))).isNotNull();
        assertThat(same.match(x.add(y))).isNull();
    }

    @Test
    void rewritingReachesAFixedPointBottomUp() {
        // x * 2 -> x + x, and (a + a) + (a + a) is left alone: the rewrite must terminate
        PatternMatcher pm = new PatternMatcher(List.of(
                rule(UPat.op(Op.MUL, UPat.var("v"), UPat.cvar("c")).where(u -> u.src(1).constLong() == 2), b -> b.get("v").add(b.get("v")))));
        UOp e = x.mul(2).mul(2);
        UOp r = GraphRewriter.rewrite(e, pm);
        UOp xx = x.add(x);
        assertThat(r).isSameAs(xx.add(xx));
    }

    @Test
    void declinedRulesFallThroughToLaterOnes() {
        PatternMatcher pm = new PatternMatcher(List.of(
                rule(UPat.var("any"), b -> null),
                rule(UPat.op(Op.NEG, UPat.var("v")), b -> b.get("v"))));
        assertThat(pm.rewrite(x.neg())).isSameAs(x);
        assertThat(pm.rewrite(x)).isNull();
    }

    @Test
    void constantsFoldWithTheSameSemanticsAsExecution() {
        UOp seven = UOp.constant(DType.I32, 7), minus2 = UOp.constant(DType.I32, -2);
        assertThat(Symbolic.simplify(seven.floorDiv(minus2)).constLong()).isEqualTo(-4);
        assertThat(Symbolic.simplify(seven.div(minus2)).constLong()).isEqualTo(-3);
        assertThat(Symbolic.simplify(seven.floorMod(minus2)).constLong()).isEqualTo(-1);
        assertThat(Symbolic.simplify(seven.mod(minus2)).constLong()).isEqualTo(1);
        UOp big = UOp.constant(DType.I8, 127);
        assertThat(Symbolic.simplify(big.add(1)).constLong()).isEqualTo(-128);
    }

    @Test
    void substitutionReplacesTopDownAndKeepsWhatItDoesNotTouch() {
        UOp z = UOp.variable(new Variable("z", 0, 100));
        UOp inner = x.add(y), untouched = y.mul(3);
        UOp e = inner.mul(7).add(untouched);
        // inner is replaced whole: its source x is not visited, so the x -> z rule never fires inside it
        PatternMatcher pm = PatternMatcher.replacing(Map.of(inner, z, x, y));
        UOp r = GraphRewriter.substitute(e, pm);
        assertThat(r).isSameAs(z.mul(7).add(untouched));
        assertThat(r.src(1)).isSameAs(untouched);
        // the replacement is taken as it is: a key inside a value is not replaced again
        assertThat(GraphRewriter.substitute(x.add(1), PatternMatcher.replacing(Map.of(x, y.add(x))))).isSameAs(y.add(x).add(1));
        // several roots share one memo; a graph with no match is returned as it was
        assertThat(GraphRewriter.substitute(List.of(e, inner), pm)).containsExactly(r, z);
        assertThat(GraphRewriter.substitute(e, PatternMatcher.replacing(Map.of()))).isSameAs(e);
    }

    @Test
    void substitutionOfADeepGraphDoesNotOverflowTheStack() {
        UOp e = x;
        for (int i = 0; i < 100_000; i++) e = e.add(1);
        UOp r = GraphRewriter.substitute(e, PatternMatcher.replacing(Map.of(x, y)));
        UOp expected = y;
        for (int i = 0; i < 100_000; i++) expected = expected.add(1);
        assertThat(r).isSameAs(expected);
    }
}

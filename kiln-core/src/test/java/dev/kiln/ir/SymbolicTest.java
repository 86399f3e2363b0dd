package dev.kiln.ir;

import dev.kiln.types.DType;
import dev.kiln.types.Variable;
import org.junit.jupiter.api.Test;

import java.util.HashMap;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;

class SymbolicTest {
    private static final Variable I = new Variable("i", 0, 99), J = new Variable("j", 0, 3), X = new Variable("x", -50, 50);
    private static final UOp i = UOp.variable(I), j = UOp.variable(J), x = UOp.variable(X);

    private static UOp simplify(UOp u) { return Symbolic.simplify(u); }

    private static int nodes(UOp u) { return u.toposort().size(); }

    // ---------------------------------------------------------------- division folding

    @Test
    void floorDivAndModOfAnUnpackedIndex() {
        UOp flat = i.mul(4).add(j);
        assertThat(simplify(flat.floorDiv(4))).isSameAs(i);
        assertThat(simplify(flat.floorMod(4))).isSameAs(j);
        // truncating forms agree on non-negative values
        assertThat(simplify(flat.div(4))).isSameAs(i);
        assertThat(simplify(flat.mod(4))).isSameAs(j);
    }

    @Test
    void divisionSplitsOffMultiplesOfTheDivisor() {
        // j + 8 lies in [8, 11], so (4*i + j + 8) // 4 = i + 2
        assertThat(simplify(i.mul(4).add(j).add(8).floorDiv(4))).isSameAs(i.add(2));
        // terms under a constant factor count too: (4*(i + 2*x) + j) // 4 = i + 2*x
        UOp sum = simplify(i.add(x.mul(2)).mul(4).add(j).floorDiv(4));
        for (long iv : new long[] {0, 7, 99}) {
            for (long xv : new long[] {-50, 3, 50}) {
                assertThat(Eval.value(sum, Map.of(I, iv, X, xv))).isEqualTo(iv + 2 * xv);
            }
        }
        assertThat(sum.variables()).containsExactlyInAnyOrder(I, X);
    }

    @Test
    void aBlockBoundaryCoarserThanTheDigitsFoldsToTheLeadingIndex() {
        // (100*g + 10*a + b) // 800 for digits a, b: the group index of a grouped convolution's flat index
        Variable g = new Variable("g", 0, 15), a = new Variable("a", 0, 9), b = new Variable("b", 0, 9);
        UOp flat = UOp.variable(g).mul(100).add(UOp.variable(a).mul(10)).add(UOp.variable(b));
        assertThat(simplify(flat.floorDiv(800))).isSameAs(UOp.variable(g).floorDiv(8));
        UOp mod = simplify(flat.floorMod(800));
        for (long gv = 0; gv <= 15; gv++) {
            for (long av : new long[] {0, 9}) {
                assertThat(Eval.value(mod, Map.of(g, gv, a, av, b, 7L))).isEqualTo(Math.floorMod(100 * gv + 10 * av + 7, 800));
            }
        }
        // a remainder that can reach the next multiple must not fold: b up to 10 here
        Variable wide = new Variable("w", 0, 10);
        UOp overlapping = UOp.variable(g).mul(10).add(UOp.variable(wide));
        assertThat(simplify(overlapping.floorDiv(80))).isNotEqualTo(UOp.variable(g).floorDiv(8));
    }

    @Test
    void paddingMasksBecomeConjunctionsOfComparisons() {
        UOp t = UOp.constant(DType.BOOL, 1), f = UOp.constant(DType.BOOL, 0);
        UOp below = i.lt(UOp.index(1)), above = i.lt(UOp.index(11));
        assertThat(simplify(below.where(t, f))).isSameAs(below);
        // i < 1 ? false : i < 11  ==  0 < i && i < 11
        UOp inside = simplify(below.where(f, above));
        assertThat(inside).isEqualTo(UOp.of(Op.AND, DType.BOOL, null, UOp.index(0).lt(i), above));
        for (long v = 0; v <= 99; v++) assertThat(Eval.value(inside, Map.of(I, v))).isEqualTo(v >= 1 && v < 11 ? 1 : 0);
        // a select under the condition it is already under
        UOp a = UOp.constant(DType.F32, 1.0), b = UOp.constant(DType.F32, 2.0), c = UOp.constant(DType.F32, 3.0);
        assertThat(simplify(above.where(above.where(a, b), c))).isEqualTo(above.where(a, c));
        assertThat(simplify(above.where(a, above.where(b, c)))).isEqualTo(above.where(a, c));
    }

    @Test
    void aSplitIndexMergedBackIsTheIndex() {
        // what a reshape that splits r into (r // 16, r % 16) and merges them again leaves behind
        UOp r = UOp.variable(new Variable("r", 0, 63));
        assertThat(simplify(r.floorDiv(16).mul(16).add(r.floorMod(16)))).isSameAs(r);
        assertThat(simplify(x.add(r.floorMod(16).mul(3)).add(r.floorDiv(16).mul(48)))).isSameAs(simplify(x.add(r.mul(3))));
        // only the exact pair recombines
        assertThat(simplify(r.floorDiv(16).mul(8).add(r.floorMod(16)))).isNotSameAs(r);
    }

    @Test
    void identities() {
        assertThat(simplify(x.floorDiv(1))).isSameAs(x);
        assertThat(simplify(x.floorMod(1))).isSameAs(UOp.index(0));
        assertThat(simplify(x.mul(0))).isSameAs(UOp.index(0));
        assertThat(simplify(x.mul(1))).isSameAs(x);
        assertThat(simplify(x.add(0))).isSameAs(x);
        assertThat(simplify(x.neg().neg())).isSameAs(x);
        assertThat(simplify(x.sub(x))).isSameAs(UOp.index(0));
        assertThat(simplify(x.add(3).add(x.mul(2)).add(-3))).isSameAs(x.mul(3));
    }

    @Test
    void nestedFloorDivision() {
        assertThat(simplify(x.floorDiv(2).floorDiv(3))).isSameAs(x.floorDiv(6));
        UOp n = UOp.variable(new Variable("n", 0, 10_000));
        assertThat(simplify(n.floorDiv(4).floorDiv(5).floorDiv(5))).isSameAs(n.floorDiv(100));
        assertThat(simplify(i.floorDiv(4).floorDiv(5).floorDiv(5))).isSameAs(UOp.index(0)); // i < 100
        assertThat(simplify(x.floorMod(12).floorMod(4))).isSameAs(x.floorMod(4));
    }

    @Test
    void rangesDecideComparisonsAndMax() {
        assertThat(simplify(j.lt(UOp.index(4)))).isSameAs(UOp.constant(DType.BOOL, 1));
        assertThat(simplify(j.max(UOp.index(3)))).isSameAs(UOp.index(3));
        assertThat(simplify(i.max(j.add(-10)))).isSameAs(i);
        assertThat(simplify(j.lt(i.add(4)).where(x, i))).isSameAs(x);
        assertThat(simplify(x.lt(i).where(j, j))).isSameAs(j);
    }

    @Test
    void constantsFoldWithAluSemantics() {
        assertThat(simplify(UOp.index(-7).floorDiv(2))).isSameAs(UOp.index(-4));
        assertThat(simplify(UOp.index(-7).div(2))).isSameAs(UOp.index(-3));
        assertThat(simplify(UOp.index(-7).floorMod(2))).isSameAs(UOp.index(1));
        assertThat(simplify(UOp.index(-7).mod(2))).isSameAs(UOp.index(-1));
        assertThat(simplify(UOp.index(5).div(0))).isSameAs(UOp.index(0));
    }

    // ---------------------------------------------------------------- size (shrunk counterexamples)

    @Test
    void negationIsNotRewrittenIntoALargerProduct() {
        // was NEG(x) -> MUL(x, -1), one node more
        assertThat(simplify(x.neg())).isSameAs(x.neg());
        assertThat(simplify(x.min(i))).matches(u -> nodes(u) <= nodes(x.min(i)));
        assertThat(simplify(x.mul(3).neg())).isSameAs(x.mul(-3));
    }

    @Test
    void simplifyKeepsTheInputWhenRewritingLosesSharing() {
        // (v1 + 19 + v0) % 10 -> (v1 + v0 + 9) % 10 is no larger as a tree, but 19 was shared with the divisor
        Variable v0 = new Variable("v0", 0, 1), v1 = new Variable("v1", 0, 3);
        UOp expr = UOp.variable(v1).add(19).add(UOp.variable(v0)).floorMod(10).mul(UOp.variable(v1)).floorDiv(19);
        UOp out = simplify(expr);
        assertThat(nodes(out)).isLessThanOrEqualTo(nodes(expr));
        for (long a = 0; a <= 1; a++) {
            for (long b = 0; b <= 3; b++) {
                Map<Variable, Long> p = Map.of(v0, a, v1, b);
                assertThat(Eval.value(out, p)).isEqualTo(Eval.value(expr, p));
            }
        }
    }

    @Test
    void distributionThatDoesNotPayIsNotDone() {
        UOp expr = x.add(i.add(j).mul(3));
        assertThat(Symbolic.treeSize(simplify(expr))).isLessThanOrEqualTo(Symbolic.treeSize(expr));
        assertThat(simplify(x.mul(6).floorDiv(4))).matches(u -> Symbolic.treeSize(u) <= Symbolic.treeSize(x.mul(6).floorDiv(4)));
    }

    @Test
    void treeSizeCountsSharedSubtermsPerUse() {
        UOp s = x.add(1);
        assertThat(Symbolic.treeSize(x)).isEqualTo(1);
        assertThat(Symbolic.treeSize(s)).isEqualTo(3);
        assertThat(Symbolic.treeSize(s.mul(s))).isEqualTo(7);
        assertThat(nodes(s.mul(s))).isEqualTo(4);
    }

    // ---------------------------------------------------------------- index dtypes

    @Test
    void smallIndexMathFitsI32() {
        UOp idx = i.mul(100).add(j).mul(4);
        assertThat(Symbolic.indexDType(idx)).isEqualTo(DType.I32);
        UOp narrow = Symbolic.narrowIndex(idx);
        assertThat(narrow.dtype()).isEqualTo(DType.I32);
        for (UOp u : narrow.toposort()) {
            if (u.op() != Op.DEFINE_VAR) assertThat(u.dtype()).as(u.toString()).isEqualTo(DType.I32);
        }
        Map<Variable, Long> p = new HashMap<>(Map.of(I, 99L, J, 3L));
        assertThat(Eval.value(narrow, p)).isEqualTo(Eval.value(idx, p)).isEqualTo((99 * 100 + 3) * 4);
    }

    @Test
    void largeIntermediatesNeedI64() {
        UOp big = i.mul(100_000).mul(100_000);
        assertThat(Symbolic.indexDType(big)).isEqualTo(DType.I64);
        // the result is small but an intermediate is not
        assertThat(Symbolic.indexDType(big.floorDiv(1_000_000_000L))).isEqualTo(DType.I64);
        assertThat(Symbolic.narrowIndex(big)).isSameAs(big);
        assertThat(Symbolic.indexDType(i.mul(21_000_000))).isEqualTo(DType.I32);
        assertThat(Symbolic.indexDType(i.mul(22_000_000))).isEqualTo(DType.I64);
    }

    @Test
    void floatIdentitiesAreOnlyTheExactOnes() {
        UOp x = UOp.of(Op.DEFINE_VAR, dev.kiln.types.DType.F32, new Slot(Slot.Kind.REGISTER, 0, dev.kiln.types.DType.F32));
        UOp one = UOp.constant(dev.kiln.types.DType.F32, 1.0), negZero = UOp.constant(dev.kiln.types.DType.F32, -0.0), zero = UOp.constant(dev.kiln.types.DType.F32, 0.0);
        org.assertj.core.api.Assertions.assertThat(Symbolic.simplify(UOp.of(Op.MUL, dev.kiln.types.DType.F32, null, x, one))).isSameAs(x);
        org.assertj.core.api.Assertions.assertThat(Symbolic.simplify(UOp.of(Op.ADD, dev.kiln.types.DType.F32, null, x, negZero))).isSameAs(x);
        UOp plusZero = UOp.of(Op.ADD, dev.kiln.types.DType.F32, null, x, zero);
        org.assertj.core.api.Assertions.assertThat(Symbolic.simplify(plusZero)).as("-0.0 + 0.0 is +0.0: not an identity").isSameAs(plusZero);
    }
}

package dev.kiln.codegen;

import dev.kiln.ir.Op;
import dev.kiln.ir.UOp;
import dev.kiln.types.DType;
import dev.kiln.types.Variable;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;

import static org.assertj.core.api.Assertions.assertThat;

class GatedBoundsTest {
    private static UOp and(UOp a, UOp b) { return UOp.of(Op.AND, DType.BOOL, null, a, b); }

    private static UOp v(Variable x) { return UOp.variable(x); }

    /** A 3 x 3 stride-2 window over rows padded by one: the row above the image is read only where the gate fails. */
    @Test
    void aPaddedWindowsGateKeepsItsIndexInTheImage() {
        Variable c = new Variable("c", 0, 63), oh = new Variable("oh", 0, 55), r = new Variable("r", 0, 2), ow = new Variable("ow", 0, 54);
        UOp row = v(r).add(v(oh).mul(2)); // padded row: image row + 1
        UOp index = v(c).mul(12544).add(row.add(-1).mul(112)).add(v(ow).mul(2));
        UOp top = UOp.index(0).lt(row), bottom = row.lt(UOp.index(113));
        assertThat(index.vmin()).as("without the gate the first row reads above the image").isNegative();
        assertThat(GatedBounds.of(index, and(UOp.of(Op.CONST, DType.BOOL, 1L), top))[0]).isEqualTo(0);
        long[] both = GatedBounds.of(index, and(top, bottom));
        assertThat(both[0]).isEqualTo(0);
        assertThat(both[1]).as("the last image row").isEqualTo(63L * 12544 + 111 * 112 + 108);
        assertThat(GatedBounds.of(index, null)).containsExactly(index.vmin(), index.vmax());
    }

    /**
     * At a corner a padded window's row and column conditions bound its index only together: the last channel's
     * last row and column read one past the buffer where either gate is dropped.
     */
    @Test
    void rowAndColumnGatesBoundTheIndexTogether() {
        Variable c = new Variable("c", 0, 5), oh = new Variable("oh", 0, 18), r = new Variable("r", 0, 2),
                ow = new Variable("ow", 0, 18), s = new Variable("s", 0, 2);
        UOp row = v(r).add(v(oh).mul(2)), col = v(s).add(v(ow).mul(2)); // padded coordinates of a 37 x 37 image
        UOp index = v(c).mul(37 * 37).add(row.add(-1).mul(37)).add(col.add(-1));
        UOp rows = and(UOp.index(0).lt(row), row.lt(UOp.index(38))), cols = and(UOp.index(0).lt(col), col.lt(UOp.index(38)));
        long last = 6L * 37 * 37 - 1;
        assertThat(GatedBounds.of(index, rows)[1]).as("rows alone").isGreaterThan(last);
        assertThat(GatedBounds.of(index, cols)[1]).as("columns alone").isGreaterThan(last);
        assertThat(GatedBounds.of(index, and(rows, cols))).containsExactly(0L, last);
    }

    /**
     * Soundness: over random linear indices and gates (comparisons of linear expressions, often a multiple of the
     * index's own terms, with a constant), every index value an iteration with a true gate takes lies within the
     * bounds, by enumeration; and the gates do tighten them often (else the test would prove nothing).
     */
    @Test
    void theBoundsHoldEveryIndexAGateLetsThrough() {
        Random rnd = new Random(5);
        int tightened = 0;
        for (int trial = 0; trial < 400; trial++) {
            List<Variable> vars = new ArrayList<>();
            for (int i = 0; i < 3; i++) vars.add(new Variable("x" + i, rnd.nextInt(2), 2 + rnd.nextInt(4)));
            long[] a = new long[3];
            UOp index = UOp.index(rnd.nextInt(41) - 20);
            for (int i = 0; i < 3; i++) {
                a[i] = rnd.nextInt(13) - 6;
                index = index.add(v(vars.get(i)).mul(a[i]));
            }
            UOp gate = null;
            for (int g = 0; g < 1 + rnd.nextInt(2); g++) {
                long k = 1 + rnd.nextInt(3);
                UOp e = UOp.index(rnd.nextInt(7) - 3);
                for (int i = 0; i < 3; i++) {
                    boolean ownMultiple = rnd.nextInt(4) > 0 && a[i] % k == 0;
                    long b = ownMultiple ? a[i] / k : rnd.nextInt(5) - 2;
                    if (rnd.nextInt(3) > 0 || ownMultiple) e = e.add(v(vars.get(i)).mul(b));
                }
                UOp cmp = rnd.nextBoolean() ? UOp.index(rnd.nextInt(21) - 10).lt(e) : e.lt(UOp.index(rnd.nextInt(21) - 10));
                gate = gate == null ? cmp : and(gate, cmp);
            }
            long[] bounds = GatedBounds.of(index, gate);
            if (bounds[0] > index.vmin() || bounds[1] < index.vmax()) tightened++;
            for (long x0 = vars.get(0).min(); x0 <= vars.get(0).max(); x0++) {
                for (long x1 = vars.get(1).min(); x1 <= vars.get(1).max(); x1++) {
                    for (long x2 = vars.get(2).min(); x2 <= vars.get(2).max(); x2++) {
                        Map<Object, UOp> at = new HashMap<>();
                        at.put(vars.get(0), UOp.index(x0));
                        at.put(vars.get(1), UOp.index(x1));
                        at.put(vars.get(2), UOp.index(x2));
                        UOp open = Optimizer.substitute(gate, at), value = Optimizer.substitute(index, at);
                        assertThat(open.isConst() && value.isConst()).as("%s and %s at %s", gate, index, at).isTrue();
                        if (open.constLong() == 0) continue;
                        assertThat(value.constLong()).as("trial %d: %s under %s at (%d, %d, %d)", trial, index, gate, x0, x1, x2)
                                .isBetween(bounds[0], bounds[1]);
                    }
                }
            }
        }
        assertThat(tightened).as("gates that tightened the bounds").isGreaterThan(40);
    }
}

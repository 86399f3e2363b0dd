package dev.kiln.ir;

import dev.kiln.types.DType;
import dev.kiln.types.Shape;
import dev.kiln.types.Variable;
import org.junit.jupiter.api.Test;

import java.lang.ref.WeakReference;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class UOpTest {
    /** A tensor-shaped node without a buffer: a constant broadcast to {@code dims}. */
    private static UOp filled(DType dt, double v, int... dims) {
        int[] ones = new int[dims.length];
        java.util.Arrays.fill(ones, 1);
        UOp c = UOp.of(Op.RESHAPE, dt, Shape.of(ones), UOp.constant(dt, v));
        return UOp.of(Op.EXPAND, dt, Shape.of(dims), c);
    }

    @Test
    void toposortWithinABoundaryStopsThere() {
        UOp a = filled(DType.F32, 1.0, 4), b = filled(DType.F32, 2.0, 4);
        UOp sum = UOp.of(Op.ADD, DType.F32, null, a, b);
        UOp top = UOp.of(Op.MUL, DType.F32, null, sum, a);
        assertThat(top.toposort(java.util.Set.of(sum))).containsExactly(a.src(0).src(0), a.src(0), a, top);
        assertThat(top.toposort(java.util.Set.of(sum, a))).containsExactly(top);
        assertThat(top.toposort(java.util.Set.of(top))).isEmpty();
        assertThat(top.toposort(java.util.Set.of())).isEqualTo(top.toposort());
    }

    // ---------------------------------------------------------------- interning and hashing

    @Test
    void equalStructureIsTheSameNode() {
        Variable n = new Variable("n", 0, 10);
        UOp a = UOp.of(Op.ADD, DType.I64, null, UOp.variable(n), UOp.index(3));
        UOp b = UOp.of(Op.ADD, DType.I64, null, UOp.variable(new Variable("n", 0, 10)), UOp.constant(DType.I64, 3));
        assertThat(b).isSameAs(a).isEqualTo(a);
        assertThat(UOp.variable(n).add(3)).isSameAs(a);
        assertThat(filled(DType.F32, 1.5, 2, 3)).isSameAs(filled(DType.F32, 1.5, 2, 3));
        // constants are normalised before interning: an i32 constant from a long or a double is one node
        assertThat(UOp.constant(DType.I32, 7.9)).isSameAs(UOp.constant(DType.I32, 7L));
        assertThat(UOp.constant(DType.F16, 1.0001)).isSameAs(UOp.constant(DType.F16, 1.0));
    }

    @Test
    void anyDifferenceIsADifferentNode() {
        UOp x = filled(DType.F32, 1.0, 6);
        assertThat(UOp.of(Op.RESHAPE, DType.F32, Shape.of(2, 3), x)).isNotSameAs(UOp.of(Op.RESHAPE, DType.F32, Shape.of(3, 2), x));
        assertThat(UOp.constant(DType.I32, 1)).isNotSameAs(UOp.constant(DType.I64, 1));
        assertThat(UOp.constant(DType.F32, 0.0)).isNotSameAs(UOp.constant(DType.F32, -0.0));
        assertThat(UOp.index(1).add(UOp.index(2))).isNotSameAs(UOp.index(2).add(UOp.index(1)));
        assertThat(UOp.variable(new Variable("n", 0, 10))).isNotSameAs(UOp.variable(new Variable("n", 0, 11)));
    }

    @Test
    void hashIsStructuralAndSurvivesCollection() {
        int hash = nodeHash();
        WeakReference<UOp> ref = new WeakReference<>(buildNode());
        for (int i = 0; i < 50 && ref.get() != null; i++) {
            System.gc();
            byte[][] pressure = new byte[64][];
            for (int k = 0; k < pressure.length; k++) pressure[k] = new byte[1 << 16];
        }
        // whether or not the node was collected and rebuilt, its hash is the same
        assertThat(buildNode().hashCode()).isEqualTo(hash);
        assertThat(buildNode().hashCode()).isEqualTo(UOp.of(Op.MUL, DType.I64, null, UOp.variable(new Variable("hq", 1, 5)), UOp.index(12345)).hashCode());
    }

    private static UOp buildNode() { return UOp.variable(new Variable("hq", 1, 5)).mul(12345); }

    private static int nodeHash() { return buildNode().hashCode(); }

    // ---------------------------------------------------------------- shape inference

    @Test
    void binaryOperandsMustHaveOneShape() {
        assertThatThrownBy(() -> UOp.of(Op.ADD, DType.F32, null, filled(DType.F32, 1, 2, 3), filled(DType.F32, 1, 3, 2)))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("ADD").hasMessageContaining("[2, 3]").hasMessageContaining("[3, 2]");
        assertThatThrownBy(() -> UOp.of(Op.ADD, DType.F32, null, filled(DType.F32, 1, 2), filled(DType.F64, 1, 2)))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("f32").hasMessageContaining("f64");
        assertThatThrownBy(() -> UOp.of(Op.CMPLT, DType.F32, null, UOp.index(1), UOp.index(2)))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("bool");
        assertThatThrownBy(() -> UOp.of(Op.THREEFRY, DType.I64, null, UOp.index(1), UOp.index(2)))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("THREEFRY").hasMessageContaining("u64");
    }

    @Test
    void reshapeMustKeepTheElementCount() {
        UOp x = filled(DType.F32, 0, 2, 3);
        assertThat(UOp.of(Op.RESHAPE, DType.F32, Shape.of(3, 2), x).shape()).isEqualTo(Shape.of(3, 2));
        assertThatThrownBy(() -> UOp.of(Op.RESHAPE, DType.F32, Shape.of(4, 2), x)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("[2, 3]").hasMessageContaining("[4, 2]").hasMessageContaining("6").hasMessageContaining("8");
    }

    @Test
    void otherShapeErrors() {
        UOp x = filled(DType.F32, 0, 2, 3);
        assertThatThrownBy(() -> UOp.of(Op.PERMUTE, DType.F32, Ints.of(0, 0), x)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("PERMUTE").hasMessageContaining("[2, 3]");
        assertThatThrownBy(() -> UOp.of(Op.EXPAND, DType.F32, Shape.of(4, 3), x)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("EXPAND").hasMessageContaining("axis 0");
        assertThatThrownBy(() -> UOp.of(Op.SHRINK, DType.F32, Ints.of(0, 3, 0, 3), x)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("SHRINK").hasMessageContaining("axis 0");
        assertThatThrownBy(() -> UOp.of(Op.REDUCE, DType.F32, new ReduceArg(ReduceArg.Kind.SUM, Ints.of(2)), x))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("axis 2");
        assertThatThrownBy(() -> UOp.of(Op.WHERE, DType.F32, null, x, x, x)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("bool");
        assertThatThrownBy(() -> UOp.of(Op.NEG, DType.F32, null, x, x)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("1 sources");
        assertThatThrownBy(() -> UOp.of(Op.BITCAST, DType.I16, null, x)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("f32").hasMessageContaining("i16");
        assertThat(UOp.of(Op.PAD, DType.F32, Ints.of(1, 0, 0, 2), x).shape()).isEqualTo(Shape.of(3, 5));
        assertThat(UOp.of(Op.REDUCE, DType.F32, new ReduceArg(ReduceArg.Kind.MAX, Ints.of(1)), x).shape()).isEqualTo(Shape.of(2, 1));
    }

    // ---------------------------------------------------------------- traversal

    @Test
    void toposortListsSourcesBeforeUsersOnce() {
        Variable i = new Variable("ti", 0, 7), j = new Variable("tj", 0, 7);
        UOp shared = UOp.variable(i).mul(8);
        UOp root = shared.add(UOp.variable(j)).max(shared);
        List<UOp> order = root.toposort();
        assertThat(order).doesNotHaveDuplicates();
        assertThat(order.getLast()).isSameAs(root);
        assertThat(order).hasSize(6); // i, 8, i*8, j, i*8+j, max
        for (UOp u : order) {
            for (UOp s : u.src()) assertThat(order.indexOf(s)).as("%s before %s", s, u).isLessThan(order.indexOf(u));
        }
        assertThat(UOp.index(4).toposort()).containsExactly(UOp.index(4));
    }

    @Test
    void toposortHandlesDeepGraphsWithoutRecursion() {
        UOp u = UOp.variable(new Variable("deep", 0, 1));
        for (int k = 0; k < 100_000; k++) u = u.add(1);
        assertThat(u.toposort()).hasSize(100_002);
    }

    @Test
    void variablesAreCollectedOnce() {
        Variable a = new Variable("va", 0, 3), b = new Variable("vb", -2, 2);
        UOp e = UOp.variable(a).mul(UOp.variable(b)).add(UOp.variable(a)).floorDiv(2);
        assertThat(e.variables()).containsExactlyInAnyOrder(a, b);
        assertThat(UOp.index(3).variables()).isEmpty();
    }

    @Test
    void rangesOfNodes() {
        Variable a = new Variable("ra", -3, 5);
        assertThat(UOp.variable(a).mul(-2).vmin()).isEqualTo(-10);
        assertThat(UOp.variable(a).mul(-2).vmax()).isEqualTo(6);
        assertThat(UOp.variable(a).floorMod(4).vmin()).isZero();
        assertThat(UOp.variable(a).floorMod(4).vmax()).isEqualTo(3);
        assertThat(UOp.variable(a).lt(UOp.index(6)).vmin()).isEqualTo(1);
        assertThat(UOp.constant(DType.U8, 200).vmax()).isEqualTo(200);
    }

    @Test
    void toStringIsReadable() {
        Variable a = new Variable("sa", 0, 3);
        assertThat(UOp.variable(a).add(2).toString()).isEqualTo("ADD(sa, 2)");
        assertThat(filled(DType.F32, 1, 2).toString()).contains("EXPAND").contains("[2]");
    }

    @Test
    void typedArgumentAccessorsNameTheTypeTheirOpFixes() {
        UOp v = UOp.variable(new Variable("n", 1, 8));
        assertThat(v.variableArg()).isEqualTo(new Variable("n", 1, 8));
        UOp slot = new Slot(Slot.Kind.PARAM, 1, DType.F32).uop();
        assertThat(slot.slotArg().index()).isEqualTo(1);
        UOp permuted = UOp.of(Op.PERMUTE, DType.F32, Ints.of(1, 0), UOp.of(Op.EXPAND, DType.F32, Shape.of(2, 3),
                UOp.of(Op.RESHAPE, DType.F32, Shape.of(1, 1), UOp.constant(DType.F32, 1.0))));
        assertThat(permuted.intsArg()).isEqualTo(Ints.of(1, 0));
        assertThatThrownBy(v::slotArg).isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("DEFINE_VAR node has no Slot argument");
        assertThatThrownBy(permuted::reduceArg).isInstanceOf(IllegalStateException.class).hasMessageContaining("PERMUTE");
        assertThatThrownBy(v::deviceArg).isInstanceOf(IllegalStateException.class).hasMessageContaining("not a COPY");
    }
}

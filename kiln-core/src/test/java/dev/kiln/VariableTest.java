package dev.kiln;

import dev.kiln.ir.UOp;
import dev.kiln.types.Variable;
import dev.kiln.types.DType;
import dev.kiln.ir.Op;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class VariableTest {
    private final Variable n = new Variable("n", 1, 64);

    @Test
    void bindsWithinInclusiveBounds() {
        assertThat(n.bind(1).value()).isEqualTo(1);
        assertThat(n.bind(64).value()).isEqualTo(64);
        assertThat(n.bind(17)).isEqualTo(new Variable.Bound(n, 17));
        assertThat(new Variable("k", 5, 5).bind(5).value()).isEqualTo(5);
    }

    @Test
    void outOfRangeNamesVariableValueAndRange() {
        assertThatThrownBy(() -> n.bind(0)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("'n'").hasMessageContaining("0").hasMessageContaining("[1, 64]");
        assertThatThrownBy(() -> n.bind(65)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("'n'").hasMessageContaining("65").hasMessageContaining("[1, 64]");
    }

    @Test
    void invalidDefinitions() {
        assertThatThrownBy(() -> new Variable("m", 3, 2)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("'m'").hasMessageContaining("min 3").hasMessageContaining("max 2");
        assertThatThrownBy(() -> new Variable(" ", 0, 1)).isInstanceOf(IllegalArgumentException.class).hasMessageContaining("blank");
        assertThatThrownBy(() -> new Variable(null, 0, 1)).isInstanceOf(NullPointerException.class);
    }

    @Test
    void equalVariablesAreOneNode() {
        assertThat(UOp.variable(new Variable("n", 1, 64))).isSameAs(UOp.variable(n));
        assertThat(UOp.variable(new Variable("n", 1, 65))).isNotSameAs(UOp.variable(n));
        assertThat(UOp.variable(n).op()).isEqualTo(Op.DEFINE_VAR);
        assertThat(UOp.variable(n).dtype()).isEqualTo(DType.I64);
        assertThat(UOp.variable(n).vmin()).isEqualTo(1);
        assertThat(UOp.variable(n).vmax()).isEqualTo(64);
    }
}

package dev.kiln;

import dev.kiln.runtime.DeviceSpec;

import dev.kiln.types.DType;
import dev.kiln.runtime.DeviceRegistry;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** Bad input to the core Tensor API: an IllegalArgumentException naming the op, the operands and the value. */
class TensorErrorsTest {
    private final Tensor a23 = Tensor.zeros(2, 3), a32 = Tensor.zeros(3, 2);

    @Test
    void broadcastMismatch() {
        assertThatThrownBy(() -> a23.add(a32)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("add").hasMessageContaining("[2, 3]").hasMessageContaining("[3, 2]");
        assertThatThrownBy(() -> a23.mul(Tensor.zeros(4))).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("mul").hasMessageContaining("[2, 3]").hasMessageContaining("[4]");
        assertThatThrownBy(() -> Tensor.where(Tensor.zeros(DType.BOOL, 5), a23, 0.0)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("where").hasMessageContaining("[5]");
    }

    @Test
    void axisOutOfRange() {
        assertThatThrownBy(() -> a23.sum(2)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("sum").hasMessageContaining("axis 2").hasMessageContaining("[2, 3]");
        assertThatThrownBy(() -> a23.sum(-3)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("sum").hasMessageContaining("-3").hasMessageContaining("[2, 3]");
        assertThatThrownBy(() -> a23.max(0, 0)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("max").hasMessageContaining("twice");
        assertThatThrownBy(() -> a23.softmax(5)).isInstanceOf(IllegalArgumentException.class).hasMessageContaining("axis 5");
    }

    @Test
    void dtypeMismatch() {
        assertThatThrownBy(() -> a23.bitwiseAnd(a23)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("bitwiseAnd").hasMessageContaining("f32");
        assertThatThrownBy(() -> Tensor.ones(DType.I32, 2).shl(1.5)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("shl").hasMessageContaining("f32");
        assertThatThrownBy(() -> Tensor.ones(DType.BOOL, 2).neg()).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("neg").hasMessageContaining("bool");
        assertThatThrownBy(() -> a23.bitcast(DType.I16)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("bitcast").hasMessageContaining("f32").hasMessageContaining("i16");
        assertThatThrownBy(() -> a23.cast(DType.Q8_0)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("cast").hasMessageContaining("q8_0");
    }

    @Test
    void reshapeToADifferentCount() {
        assertThatThrownBy(() -> a23.reshape(4, 2)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("reshape").hasMessageContaining("[2, 3]").hasMessageContaining("[4, 2]")
                .hasMessageContaining("6 elements").hasMessageContaining("8 elements");
        assertThatThrownBy(() -> a23.reshape(-1, 4)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("reshape").hasMessageContaining("-1").hasMessageContaining("[2, 3]");
        assertThatThrownBy(() -> a23.reshape(-1, -1)).isInstanceOf(IllegalArgumentException.class).hasMessageContaining("more than one -1");
        assertThatThrownBy(() -> a23.reshape(-2, -3)).isInstanceOf(IllegalArgumentException.class).hasMessageContaining("negative dimension");
    }

    @Test
    void movementErrors() {
        assertThatThrownBy(() -> a23.permute(1, 1)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("permute").hasMessageContaining("repeated").hasMessageContaining("[1, 1]");
        assertThatThrownBy(() -> a23.permute(0)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("permute").hasMessageContaining("[2, 3]");
        assertThatThrownBy(() -> a23.expand(4, 3)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("expand").hasMessageContaining("axis 0").hasMessageContaining("size 2").hasMessageContaining("4");
        assertThatThrownBy(() -> a23.expand(3)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("expand").hasMessageContaining("fewer axes");
        assertThatThrownBy(() -> a23.squeeze(0)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("squeeze").hasMessageContaining("size 2");
        assertThatThrownBy(() -> a23.broadcastTo(2, 4)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("[2, 3]").hasMessageContaining("[2, 4]");
    }

    @Test
    void sliceStepZero() {
        assertThatThrownBy(() -> a23.slice(1, 0, 3, 0)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("slice").hasMessageContaining("step").hasMessageContaining("[2, 3]");
    }

    @Test
    void padErrors() {
        assertThatThrownBy(() -> a23.pad(new int[][] {{1, 1}})).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("pad").hasMessageContaining("[2, 3]").hasMessageContaining("rank 2");
        assertThatThrownBy(() -> a23.pad(new int[][] {{1, 1}, {1}})).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("pad").hasMessageContaining("axis 1");
        assertThatThrownBy(() -> a23.pad(new int[][] {{0, 0}, {3, 0}}, Tensor.PadMode.REFLECT, 0)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("reflect").hasMessageContaining("3");
    }

    @Test
    void catErrors() {
        assertThatThrownBy(() -> Tensor.cat(0, a23, a32)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("cat").hasMessageContaining("[2, 3]").hasMessageContaining("[3, 2]");
        assertThatThrownBy(() -> Tensor.cat(0, a23, Tensor.zeros(6))).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("cat").hasMessageContaining("ranks");
        assertThatThrownBy(() -> Tensor.cat(0)).isInstanceOf(IllegalArgumentException.class).hasMessageContaining("cat");
        assertThatThrownBy(() -> Tensor.stack(0, a23, a32)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("stack").hasMessageContaining("[2, 3]").hasMessageContaining("[3, 2]");
    }

    @Test
    void itemOfANonScalar() {
        assertThatThrownBy(a23::item).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("item").hasMessageContaining("[2, 3]").hasMessageContaining("6 elements");
        assertThat(Tensor.full(2.5, DType.F32, 1, 1).item()).isEqualTo(2.5);
    }

    @Test
    void creationErrors() {
        assertThatThrownBy(() -> Tensor.of(new float[] {1, 2, 3}, 2, 2)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("of").hasMessageContaining("3 values").hasMessageContaining("[2, 2]");
        assertThatThrownBy(() -> Tensor.zeros(2, -1)).isInstanceOf(IllegalArgumentException.class).hasMessageContaining("-1");
        assertThatThrownBy(() -> Tensor.arange(0, 5, 0)).isInstanceOf(IllegalArgumentException.class).hasMessageContaining("arange");
        assertThatThrownBy(() -> a23.matmul(a23)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("matmul").hasMessageContaining("[2, 3]");
    }

    @Test
    void deviceNames() {
        assertThatThrownBy(() -> DeviceSpec.parse("gpu!")).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("'gpu!'").hasMessageContaining("KIND:INDEX");
        assertThatThrownBy(() -> DeviceRegistry.get("NOPE")).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("NOPE").hasMessageContaining("INTERP");
        assertThatThrownBy(() -> a23.to("NOPE:1")).isInstanceOf(IllegalArgumentException.class).hasMessageContaining("NOPE:1");
        assertThat(DeviceSpec.parse(" cuda:1 ")).isEqualTo(new DeviceSpec("CUDA", 1));
        assertThat(DeviceSpec.parse("interp")).isEqualTo(DeviceSpec.INTERP);
    }
}

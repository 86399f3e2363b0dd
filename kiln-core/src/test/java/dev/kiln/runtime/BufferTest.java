package dev.kiln.runtime;

import dev.kiln.types.DType;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** A buffer's element accessors: the dtype's storage rules, checked indices. */
class BufferTest {
    @Test
    void integersWrapToTheirWidthAndBoolsAreZeroOrOne() {
        Buffer u8 = Buffer.allocateHeap("CPU", DType.U8, 3);
        u8.setLong(0, 300);
        u8.setLong(1, -1);
        assertThat(u8.getLong(0)).isEqualTo(44);
        assertThat(u8.getLong(1)).isEqualTo(255);
        assertThat(u8.getDouble(1)).isEqualTo(255.0);
        Buffer b = Buffer.allocateHeap("CPU", DType.BOOL, 2);
        b.setLong(0, 2);
        assertThat(b.getLong(0)).isEqualTo(1);
        Buffer u64 = Buffer.allocateHeap("CPU", DType.U64, 1);
        u64.setLong(0, -1);
        assertThat(u64.getDouble(0)).isEqualTo(0x1p64); // read as unsigned
    }

    @Test
    void floatsRoundToTheirDtype() {
        Buffer h = Buffer.allocateHeap("CPU", DType.F16, 1);
        h.setDouble(0, 1.0 + 0x1p-11); // a tie between 1 and 1 + 2^-10: to even
        assertThat(h.getDouble(0)).isEqualTo(1.0);
        Buffer f = Buffer.allocateHeap("CPU", DType.F32, 1);
        f.setDouble(0, 0.1);
        assertThat(f.getDouble(0)).isEqualTo((double) 0.1f);
    }

    @Test
    void wrongIndexOrKindIsAnError() {
        Buffer f = Buffer.allocateHeap("CPU", DType.F32, 2);
        assertThatThrownBy(() -> f.getDouble(2)).isInstanceOf(IndexOutOfBoundsException.class);
        assertThatThrownBy(() -> f.setDouble(-1, 0)).isInstanceOf(IndexOutOfBoundsException.class);
        assertThatThrownBy(() -> f.setLong(0, 1)).isInstanceOf(IllegalArgumentException.class).hasMessageContaining("f32");
        assertThatThrownBy(() -> f.getLong(0)).isInstanceOf(IllegalArgumentException.class).hasMessageContaining("f32");
        Buffer i = Buffer.allocateHeap("CPU", DType.I32, 1);
        assertThatThrownBy(() -> i.setDouble(0, 1)).isInstanceOf(IllegalArgumentException.class).hasMessageContaining("i32");
    }
}

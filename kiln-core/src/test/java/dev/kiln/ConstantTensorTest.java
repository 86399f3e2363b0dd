package dev.kiln;

import dev.kiln.runtime.Buffer;
import dev.kiln.runtime.ExecutionPlan;
import dev.kiln.types.DType;
import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * {@link Tensor#asConstant()}: an immutable view of the same values, which plans may pack once; {@link Tensor#wrapConstant}: a
 * constant over memory the caller owns.
 */
class ConstantTensorTest {
    @Test
    void aConstantIsTheSameValuesAndRefusesWrites() {
        Tensor w = Tensor.randn(1, 3, 4).realize();
        Tensor c = w.asConstant();
        assertThat(c.dims()).containsExactly(3, 4);
        assertThat(c.toFloatArray()).containsExactly(w.toFloatArray());
        Buffer b = c.buffer();
        assertThat(b.isImmutable()).isTrue();
        assertThat(w.buffer().isImmutable()).isFalse();
        assertThat(b.segment().isReadOnly()).isTrue();
        assertThatThrownBy(() -> b.setDouble(0, 1.0)).isInstanceOf(RuntimeException.class);
        assertThat(c.asConstant()).isSameAs(c);
    }

    private static float[] floats(Buffer b) { return b.segment().asSlice(0, 4 * b.count()).toArray(java.lang.foreign.ValueLayout.JAVA_FLOAT); }

    @Test
    void productsWithConstantWeightsEqualThoseWithoutBitForBit() {
        // the packed GEMM packs constant weights once, when the plan is bound: same sums, same order, same bits
        for (int[] s : new int[][] {{70, 130, 90}, {40, 300, 600}, {130, 40, 1100}}) {
            Tensor x = Tensor.randn(2, s[0], s[1]).realize(), w = Tensor.randn(3, s[1], s[2]).realize(), bias = Tensor.randn(4, s[2]).realize();
            Tensor img = Tensor.randn(5, 1, 8, 11, 11).realize(), k = Tensor.randn(6, 12, 8, 3, 3).realize();
            try (ExecutionPlan plain = Tensor.prepare(x.matmul(w).add(bias).relu(), x.matmul(w.permute(1, 0).realize().permute(1, 0)),
                    img.conv2d(k, null, new int[] {2, 2}, new int[] {1, 1}, null, 1));
                 ExecutionPlan constant = Tensor.prepare(x.matmul(w.asConstant()).add(bias).relu(),
                         x.matmul(w.permute(1, 0).realize().asConstant().permute(1, 0)),
                         img.conv2d(k.asConstant(), null, new int[] {2, 2}, new int[] {1, 1}, null, 1))) {
                plain.execute();
                constant.execute();
                constant.execute();
                for (int o = 0; o < 3; o++) {
                    assertThat(floats(constant.outputBuffer(o))).as("output %d of %s", o, java.util.Arrays.toString(s))
                            .containsExactly(floats(plain.outputBuffer(o)));
                }
                // breaking the promise shows the packing happened once: the constant plan still uses the first values
                float[] first = floats(constant.outputBuffer(0));
                w.buffer().segment().fill((byte) 0);
                constant.execute();
                plain.execute();
                assertThat(floats(constant.outputBuffer(0))).containsExactly(first);
                assertThat(floats(plain.outputBuffer(0))).isNotEqualTo(first);
            }
        }
    }

    @Test
    void wrapConstantUsesTheGivenMemoryInPlace() {
        try (Arena arena = Arena.ofShared()) {
            MemorySegment data = arena.allocate(4 * 6 + 4, 4).asSlice(4); // behind 4 bytes: in place needs natural alignment only
            for (int i = 0; i < 6; i++) data.setAtIndex(ValueLayout.JAVA_FLOAT, i, i + 1);
            Tensor w = Tensor.wrapConstant(data, DType.F32, 2, 3);
            Buffer b = w.buffer();
            assertThat(b.segment().address()).isEqualTo(data.address());
            assertThat(b.isImmutable()).isTrue();
            assertThat(b.segment().isReadOnly()).isTrue();
            assertThat(w.asConstant()).isSameAs(w);
            assertThat(w.dims()).containsExactly(2, 3);
            assertThat(w.add(1).toFloatArray()).containsExactly(2, 3, 4, 5, 6, 7);
            try (ExecutionPlan plan = Tensor.prepare(Tensor.ones(4, 2).matmul(w))) {
                plan.execute();
                assertThat(floats(plan.outputBuffer(0))).containsExactly(5, 7, 9, 5, 7, 9, 5, 7, 9, 5, 7, 9);
            }
        }
    }

    @Test
    void wrapConstantRefusesTooFewBytesAndMisalignedNativeMemory() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment data = arena.allocate(16, 8);
            assertThatThrownBy(() -> Tensor.wrapConstant(data, DType.F32, 5)).isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("needs 20 bytes, segment has 16");
            assertThatThrownBy(() -> Tensor.wrapConstant(data.asSlice(2), DType.F32, 2)).isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("f32 elements need an address that is a multiple of 4");
        }
    }
}

package dev.kiln;

import dev.kiln.runtime.IndexOutOfRangeException;
import dev.kiln.types.DType;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * Behaviour the golden cases cannot show: out-of-range indices (an error, as PyTorch raises; {@link IndexCheckTest}
 * covers every operation and device) and exact signed zeros.
 */
class IndexingTest {
    @Test
    void outOfRangeIndicesFailTheRun() {
        Tensor x = Tensor.of(new float[] {1, 2, 3, 4}, 2, 2);
        Tensor bad = Tensor.of(new long[] {2, -1, 0, 7}, 2, 2);
        assertThatThrownBy(() -> x.gather(1, bad).toFloatArray()).isInstanceOf(IndexOutOfRangeException.class).hasMessageStartingWith("gather: index ");
        assertThatThrownBy(() -> x.scatter(1, bad, Tensor.full(9, DType.F32, 2, 2)).toFloatArray()).isInstanceOf(IndexOutOfRangeException.class);
        assertThatThrownBy(() -> x.scatter(1, bad, 9).toFloatArray()).isInstanceOf(IndexOutOfRangeException.class);
        assertThatThrownBy(() -> x.scatterAdd(1, bad, Tensor.ones(2, 2)).toFloatArray()).isInstanceOf(IndexOutOfRangeException.class);
        assertThatThrownBy(() -> x.indexSelect(0, Tensor.of(new long[] {-3, 2}, 2)).toFloatArray()).isInstanceOf(IndexOutOfRangeException.class);
    }

    @Test
    void oneHotOfAnIndexOutOfRangeFailsAsPytorchButNotAsOnnx() {
        assertThatThrownBy(() -> Tensor.of(new long[] {1, 3, 1}, 3).oneHot(3).toLongArray()).isInstanceOf(IndexOutOfRangeException.class)
                .hasMessage("oneHot: index 3 is out of range for axis 1 of size 3; valid are 0 to 2");
        // ONNX OneHot defines the all-off row for indices outside [-depth, depth)
        Tensor onOff = Tensor.of(new long[] {0, 1}, 2);
        assertThat(Tensor.of(new long[] {-4, 3, 1}, 3).oneHot(3, -1, onOff).toLongArray()).containsExactly(0, 0, 0, 0, 0, 0, 0, 1, 0);
    }

    @Test
    void selectedValuesKeepTheSignOfZero() {
        Tensor x = Tensor.of(new float[] {-0.0f, 0.0f, Float.NaN}, 3);
        Tensor picked = x.gather(0, Tensor.of(new long[] {0, 1, 0}, 3));
        assertThat(picked.toFloatArray()).usingElementComparator(Float::compare).containsExactly(-0.0f, 0.0f, -0.0f);
        Tensor sorted = x.sort(0, true).values();
        assertThat(sorted.toFloatArray()).usingElementComparator(Float::compare).containsExactly(Float.NaN, -0.0f, 0.0f);
        Tensor kept = x.scatterAdd(0, Tensor.of(new long[] {1}, 1), Tensor.of(new float[] {-0.0f}, 1));
        assertThat(kept.toFloatArray()).usingElementComparator(Float::compare).containsExactly(-0.0f, 0.0f, Float.NaN);
    }
}

package dev.kiln;

import dev.kiln.types.DType;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/** Behaviour the golden cases cannot show: out-of-range indices (PyTorch raises) and exact signed zeros. */
class IndexingTest {
    @Test
    void outOfRangeIndicesSelectNothing() {
        Tensor x = Tensor.of(new float[] {1, 2, 3, 4}, 2, 2);
        Tensor bad = Tensor.of(new long[] {2, -1, 0, 7}, 2, 2);
        assertThat(x.gather(1, bad).toFloatArray()).usingElementComparator(Float::compare).containsExactly(-0.0f, -0.0f, 3, -0.0f);
        assertThat(x.scatter(1, bad, Tensor.full(9, DType.F32, 2, 2)).toFloatArray()).containsExactly(1, 2, 9, 4);
        assertThat(x.scatter(1, bad, 9).toFloatArray()).containsExactly(1, 2, 9, 4);
        assertThat(x.scatterAdd(1, bad, Tensor.ones(2, 2)).toFloatArray()).containsExactly(1, 2, 4, 4);
        assertThat(Tensor.of(new long[] {-1, 3, 1}, 3).oneHot(3).toLongArray()).containsExactly(0, 0, 0, 0, 0, 0, 0, 1, 0);
        assertThat(x.indexSelect(0, Tensor.of(new long[] {-3, 2}, 2)).cast(DType.I32).toLongArray()).containsExactly(0, 0, 0, 0);
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

package dev.kiln;

import dev.kiln.types.DType;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** Bad arguments to the indexing ops fail when the op is built, with a message naming op, operands and value. */
class IndexingErrorsTest {
    private final Tensor x = Tensor.zeros(2, 3);
    private final Tensor index = Tensor.of(new long[] {0, 1, 1, 0, 0, 1}, 2, 3);

    @Test
    void indexMustBeInteger() {
        assertThatThrownBy(() -> x.gather(1, Tensor.zeros(2, 3)))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("gather: index must have an integer dtype, got f32");
        assertThatThrownBy(() -> x.scatter(0, Tensor.ones(DType.BOOL, 2, 3), 1.0))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("scatter: index must have an integer dtype, got bool");
        assertThatThrownBy(() -> x.indexSelect(0, Tensor.of(new double[] {0}, 1)))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("indexSelect: index must have an integer dtype, got f64");
        assertThatThrownBy(() -> x.oneHot(3))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("oneHot: index must have an integer dtype, got f32");
    }

    @Test
    void indexRankMustMatch() {
        assertThatThrownBy(() -> x.gather(0, Tensor.of(new long[] {0, 1}, 2)))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("gather: index [2] has rank 1, input [2, 3] has rank 2");
        assertThatThrownBy(() -> x.scatterAdd(0, Tensor.of(new long[] {0, 1}, 2), Tensor.zeros(2)))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("scatterAdd: index [2] has rank 1, input [2, 3] has rank 2");
        assertThatThrownBy(() -> x.scatter(0, index, Tensor.zeros(6)))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("scatter: src [6] has rank 1, index [2, 3] has rank 2");
        assertThatThrownBy(() -> x.takeAlongAxis(Tensor.of(new long[] {0}, 1), 1))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("takeAlongAxis: indices [1] has rank 1, input [2, 3] has rank 2");
        assertThatThrownBy(() -> x.indexSelect(0, index))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("indexSelect: index must be 1-D, got shape [2, 3]");
    }

    @Test
    void indexMustFitTheInput() {
        assertThatThrownBy(() -> x.gather(1, Tensor.zeros(DType.I64, 3, 1)))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("gather: index [3, 1] is larger than input [2, 3] at axis 0");
        assertThatThrownBy(() -> x.scatter(0, Tensor.zeros(DType.I64, 1, 4), 2.0))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("scatter: index [1, 4] is larger than input [2, 3] at axis 1");
        assertThatThrownBy(() -> x.takeAlongAxis(Tensor.zeros(DType.I64, 3, 2), 1))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("takeAlongAxis: indices [3, 2] do not broadcast with input [2, 3] at axis 0");
    }

    @Test
    void scatterSourceMustCoverTheIndex() {
        assertThatThrownBy(() -> x.scatter(1, index, Tensor.zeros(2, 2)))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("scatter: src [2, 2] is smaller than index [2, 3] at axis 1 (2 < 3)");
        assertThatThrownBy(() -> x.scatterAdd(0, index, Tensor.zeros(1, 3)))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("scatterAdd: src [1, 3] is smaller than index [2, 3] at axis 0");
    }

    @Test
    void axisMustBeInRange() {
        assertThatThrownBy(() -> x.gather(2, index))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("gather: axis 2 out of range for shape [2, 3]");
        assertThatThrownBy(() -> x.scatter(-3, index, x))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("scatter: axis -3 out of range for shape [2, 3]");
        assertThatThrownBy(() -> x.indexSelect(5, Tensor.of(new long[] {0}, 1)))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("indexSelect: axis 5 out of range");
        assertThatThrownBy(() -> x.sort(2, false))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("sort: axis 2 out of range for shape [2, 3]");
        assertThatThrownBy(() -> x.argsort(-3, true))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("argsort: axis -3 out of range");
        assertThatThrownBy(() -> x.topk(1, 2, true))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("topk: axis 2 out of range");
    }

    @Test
    void topkNeedsKWithinTheAxis() {
        assertThatThrownBy(() -> x.topk(4, 1, true))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("topk: k 4 out of range for axis 1 of shape [2, 3] (size 3)");
        assertThatThrownBy(() -> x.topk(-1, -1, false))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("topk: k -1 out of range");
    }

    @Test
    void oneHotNeedsPositiveClassCount() {
        assertThatThrownBy(() -> index.oneHot(-1))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("oneHot: numClasses must be > 0").hasMessageContaining("got -1");
        assertThatThrownBy(() -> index.oneHot(0))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("got 0");
    }
}

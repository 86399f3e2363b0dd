package dev.kiln;

import dev.kiln.types.DType;
import org.assertj.core.api.ThrowableAssert.ThrowingCallable;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** Bad inputs to normalisation, embedding, attention, rotary and interpolation raise clear errors. */
class NormalizationErrorsTest {
    private static void fails(ThrowingCallable call, String... parts) {
        var a = assertThatThrownBy(call).isInstanceOf(IllegalArgumentException.class);
        for (String p : parts) a.hasMessageContaining(p);
    }

    private static final Tensor X = Tensor.zeros(2, 3, 4);
    private static final Tensor C3 = Tensor.ones(3);

    @Test
    void batchNorm() {
        fails(() -> Tensor.zeros(3).batchNorm(C3, C3, null, null, 1e-5), "batchNorm", "[3]", "at least 2 axes");
        fails(() -> X.batchNorm(Tensor.ones(4), C3, null, null, 1e-5), "batchNorm", "runningMean [4]", "3 channels", "[2, 3, 4]");
        fails(() -> X.batchNorm(C3, C3, Tensor.ones(3, 1), null, 1e-5), "batchNorm", "weight [3, 1]");
        fails(() -> X.batchNorm(C3, C3, null, Tensor.ones(2), 1e-5), "batchNorm", "bias [2]");
        fails(() -> X.batchNorm(null, C3, null, null, 1e-5), "batchNorm", "runningMean and runningVar are required");
        fails(() -> X.batchNormTraining(Tensor.ones(4), null, 1e-5), "batchNormTraining", "weight [4]", "3 channels");
    }

    @Test
    void layerAndRmsNorm() {
        fails(() -> X.layerNorm(new int[] {3}, null, null, 1e-5), "layerNorm", "normalizedShape [3]", "trailing dimensions", "[2, 3, 4]");
        fails(() -> X.layerNorm(new int[] {1, 2, 3, 4}, null, null, 1e-5), "layerNorm", "[1, 2, 3, 4]");
        fails(() -> X.layerNorm(new int[0], null, null, 1e-5), "layerNorm", "at least one axis");
        fails(() -> X.layerNorm(new int[] {3, 4}, Tensor.ones(4), null, 1e-5), "layerNorm", "weight [4]", "[3, 4]");
        fails(() -> X.layerNorm(new int[] {4}, null, Tensor.ones(3), 1e-5), "layerNorm", "bias [3]", "[4]");
        fails(() -> X.rmsNorm(new int[] {2}, null, 1e-6), "rmsNorm", "normalizedShape [2]", "[2, 3, 4]");
        fails(() -> X.rmsNorm(new int[] {4}, Tensor.ones(1, 4), 1e-6), "rmsNorm", "weight [1, 4]");
    }

    @Test
    void groupAndInstanceNorm() {
        fails(() -> X.groupNorm(2, null, null, 1e-5), "groupNorm", "2 groups", "3 channels", "[2, 3, 4]");
        fails(() -> X.groupNorm(0, null, null, 1e-5), "groupNorm", "0 groups");
        fails(() -> Tensor.zeros(4).groupNorm(1, null, null, 1e-5), "groupNorm", "[4]", "at least 2 axes");
        fails(() -> X.groupNorm(3, Tensor.ones(6), null, 1e-5), "groupNorm", "weight [6]");
        fails(() -> Tensor.zeros(2, 3).instanceNorm(null, null, 1e-5), "instanceNorm", "[2, 3]", "at least 3 axes");
        fails(() -> X.instanceNorm(null, Tensor.ones(2), 1e-5), "instanceNorm", "bias [2]", "3 channels");
    }

    @Test
    void embedding() {
        fails(() -> Tensor.embedding(Tensor.of(0f, 1f), Tensor.ones(3, 2)), "embedding", "integer dtype", "f32");
        fails(() -> Tensor.embedding(Tensor.of(new int[] {0}), Tensor.ones(3)), "embedding", "2-D", "[3]");
    }

    @Test
    void attention() {
        Tensor q = Tensor.zeros(2, 3, 4), k = Tensor.zeros(2, 5, 4), v = Tensor.zeros(2, 5, 6);
        fails(() -> Tensor.scaledDotProductAttention(q, Tensor.zeros(2, 5, 3), v, null, false, null),
                "scaledDotProductAttention", "feature sizes 4 and 3", "[2, 5, 3]");
        fails(() -> Tensor.scaledDotProductAttention(q, k, Tensor.zeros(2, 4, 6), null, false, null),
                "scaledDotProductAttention", "source lengths 5 and 4");
        fails(() -> Tensor.scaledDotProductAttention(Tensor.zeros(4), k, v, null, false, null), "scaledDotProductAttention", "at least 2 axes");
        fails(() -> Tensor.scaledDotProductAttention(q, k, v, Tensor.ones(3, 4).cast(DType.BOOL), false, null),
                "scaledDotProductAttention", "mask [3, 4]", "not broadcastable", "[2, 3, 5]");
        fails(() -> Tensor.scaledDotProductAttention(q, k, v, Tensor.zeros(DType.I32, 3, 5), false, null),
                "scaledDotProductAttention", "mask must be bool", "i32");
        fails(() -> Tensor.scaledDotProductAttention(q, Tensor.zeros(3, 5, 4), Tensor.zeros(3, 5, 6), null, false, null),
                "scaledDotProductAttention", "batch dimensions");
        fails(() -> Tensor.scaledDotProductAttention(q.cast(DType.I32), k, v, null, false, null), "scaledDotProductAttention", "float dtypes");
    }

    @Test
    void rotary() {
        Tensor x = Tensor.zeros(2, 4, 6);
        fails(() -> Tensor.zeros(2, 5).rotaryEmbedding(Tensor.ones(2, 5), Tensor.ones(2, 5), false), "rotaryEmbedding", "[2, 5]", "even");
        fails(() -> x.rotaryEmbedding(Tensor.ones(4, 6), Tensor.ones(4, 3), false), "rotaryEmbedding", "cos [4, 6]", "sin [4, 3]");
        fails(() -> x.rotaryEmbedding(Tensor.ones(4, 4), Tensor.ones(4, 4), true), "rotaryEmbedding", "[4, 4]", "do not broadcast", "[2, 4, 6]");
        fails(() -> x.rotaryEmbedding(Tensor.ones(5, 6), Tensor.ones(5, 6), false), "rotaryEmbedding", "[5, 6]");
        fails(() -> Tensor.rotaryTables(4, 5, 10000), "rotaryTables", "even", "5");
        fails(() -> Tensor.rotaryTables(4, 4, -1), "rotaryTables", "base", "-1");
        fails(() -> Tensor.rotaryTables(-1, 4, 10000), "rotaryTables", "seqLen", "-1");
    }

    @Test
    void interpolate() {
        Tensor x = Tensor.zeros(1, 2, 3, 4);
        fails(() -> x.interpolate(new int[] {5}, "nearest", false), "interpolate", "size [5]", "2 spatial axes", "[1, 2, 3, 4]");
        fails(() -> x.interpolate(new int[] {5, 6}, "cubic", false), "interpolate", "'cubic'", "'nearest', 'linear'");
        fails(() -> x.interpolate(new int[] {5, 6}, null, false), "interpolate", "null", "'nearest', 'linear'");
        fails(() -> Tensor.zeros(2, 3).interpolate(new int[0], "linear", false), "interpolate", "[2, 3]", "spatial");
        fails(() -> x.interpolate(new int[] {0, 6}, "linear", false), "interpolate", "[0, 6]", "positive");
        fails(() -> x.interpolate(new int[] {5, 6}, "nearest", true), "interpolate", "alignCorners", "'linear'");
    }

    @Test
    void fullyMaskedQueryGivesNaN() {
        Tensor q = Tensor.ones(1, 2, 2), mask = Tensor.of(new boolean[] {false, false, true, true}, 2, 2);
        double[] out = Tensor.scaledDotProductAttention(q, q, q, mask, false, null).toDoubleArray();
        assertThat(out[0]).isNaN();
        assertThat(out[2]).isEqualTo(1.0);
    }
}

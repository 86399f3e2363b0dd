package dev.kiln.onnx;

import dev.kiln.Tensor;
import dev.kiln.onnxspec.MelWeightMatrix;
import dev.kiln.onnxspec.RecurrentLayers;
import dev.kiln.onnxspec.Resize;
import dev.kiln.onnxspec.TfIdfVectorizer;
import dev.kiln.types.DType;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** Bad arguments to the operators only ONNX has (dev.kiln.onnxspec) fail when the op is built, naming the op, the operands and the value. */
class OnnxSpecErrorsTest {
    private static void fails(Runnable r, String message) {
        assertThatThrownBy(r::run).isInstanceOf(IllegalArgumentException.class).hasMessageContaining(message);
    }

    @Test
    void resize() {
        Tensor img = Tensor.zeros(1, 1, 4, 4);
        fails(() -> Resize.apply(img, new int[] {8, 8}, null, null, "linear", "half_pixel", "floor", -0.75, false, 0),
                "resize: sizes [8, 8] must give one output size per axis of input [1, 1, 4, 4]");
        fails(() -> Resize.apply(img, new int[] {1, 1, 8, 8}, null, null, "bilinear", "half_pixel", "floor", -0.75, false, 0),
                "resize: unknown mode 'bilinear'; valid are 'nearest', 'linear', 'cubic'");
        fails(() -> Resize.apply(img, new int[] {1, 1, 8, 8}, null, null, "linear", "corners", "floor", -0.75, false, 0),
                "resize: unknown coordinate transformation mode 'corners'");
        fails(() -> Resize.apply(img, new int[] {1, 1, 8, 8}, null, null, "nearest", "half_pixel", "round", -0.75, false, 0),
                "resize: unknown nearest mode 'round'");
        fails(() -> Resize.apply(img, new int[] {1, 1, 8, 8}, null, new double[] {0, 1}, "linear", "tf_crop_and_resize", "floor", -0.75, false, 0),
                "resize: tf_crop_and_resize needs roi with 8 values (starts, then ends) for input [1, 1, 4, 4], got [0.0, 1.0]");
    }

    @Test
    void tfIdfVectorizer() {
        Tensor seq = Tensor.of(new long[] {1, 2, 3}, 3);
        fails(() -> TfIdfVectorizer.apply(Tensor.zeros(3), 1, 1, 0, "TF", new long[] {1}, new int[] {0}, new int[] {0}, null),
                "tfIdfVectorizer: input must be 1-D or 2-D integers, got f32[3]");
        fails(() -> TfIdfVectorizer.apply(seq, 1, 1, 0, "BM25", new long[] {1}, new int[] {0}, new int[] {0}, null), "tfIdfVectorizer: unknown mode 'BM25'");
        fails(() -> TfIdfVectorizer.apply(seq, 1, 2, 0, "TF", new long[] {1, 2, 3, 4}, new int[] {0, 1}, new int[] {0, 1}, null),
                "tfIdfVectorizer: pool level 2 holds 3 items, not a multiple of 2");
        fails(() -> TfIdfVectorizer.apply(seq, 1, 1, 0, "TF", new long[] {1, 2}, new int[] {0}, new int[] {0}, null),
                "tfIdfVectorizer: 2 pool n-grams need as many ngram_indexes (got 1)");
    }

    @Test
    void recurrentAndMel() {
        Tensor seq = Tensor.zeros(3, 2, 4);
        fails(() -> RecurrentLayers.rnn(seq, Tensor.zeros(1, 5, 4), Tensor.zeros(1, 5, 4), null, null, null, "forward", null, null, null, null, 0),
                "rnn: R [1, 5, 4] must be (1, 1*hidden, hidden) for direction forward");
        fails(() -> RecurrentLayers.gru(seq, Tensor.zeros(1, 9, 3), Tensor.zeros(1, 9, 3), null, null, null, "forward", null, null, null, null, false, 0),
                "gru: W [1, 9, 3] must have shape [1, 9, 4]");
        fails(() -> RecurrentLayers.lstm(seq, Tensor.zeros(2, 12, 4), Tensor.zeros(2, 12, 3), null, null, null, null, null, "sideways", null, null, null, null,
                false, 0), "lstm: unknown direction 'sideways'");
        fails(() -> RecurrentLayers.rnn(seq, Tensor.zeros(1, 3, 4), Tensor.zeros(1, 3, 3), null, null, null, "forward", new String[] {"Swish"}, null, null, null, 0),
                "rnn: unknown activation 'Swish'");
        fails(() -> RecurrentLayers.lstm(seq, Tensor.zeros(1, 12, 4), Tensor.zeros(1, 12, 3), null, Tensor.zeros(DType.I64, 3), null, null, null, "forward", null,
                null, null, null, false, 0), "lstm: sequence_lens i64[3] must be 1-D integers of the batch size 2");
        fails(() -> MelWeightMatrix.of(8, 16, 8000, 100, 5000, DType.F32), "melWeightMatrix: edges 100.0 Hz and 5000.0 Hz must satisfy");
    }
}

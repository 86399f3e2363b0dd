package dev.kiln.onnx;

import dev.kiln.Tensor;
import dev.kiln.types.DType;

import java.util.List;

/**
 * A value of an ONNX graph other than the plain tensor path: a sequence of tensors or an optional. The builder holds
 * these beside its tensors as host values known when the graph is built (a sequence's length and its elements'
 * shapes); each element is a tensor, lazy or constant, like any other.
 */
sealed interface OnnxValue permits OnnxValue.TensorValue, OnnxValue.SequenceValue, OnnxValue.OptionalValue {

    /** What the value is, for messages: {@code a tensor f32[2, 3]}, {@code a sequence of 3 f32 tensors}, {@code an empty optional}. */
    String describe();

    /** A tensor where a sequence or an optional may also stand (a subgraph's output, an optional's element). */
    record TensorValue(Tensor tensor) implements OnnxValue {
        public String describe() { return "a tensor " + tensor.dtype() + tensor.shape(); }
    }

    /**
     * An ordered list of tensors of one dtype; their shapes may differ.
     *
     * @param elements the tensors, in order
     * @param dtype    their dtype (an empty sequence keeps the one it was declared with)
     */
    record SequenceValue(List<Tensor> elements, DType dtype) implements OnnxValue {
        public SequenceValue {
            elements = List.copyOf(elements);
            for (Tensor t : elements) {
                if (t.dtype() != dtype) throw new IllegalArgumentException("a sequence of " + dtype + " tensors cannot hold a " + t.dtype() + " tensor");
            }
        }

        public String describe() { return "a sequence of " + elements.size() + " " + dtype + " tensors"; }
    }

    /**
     * An optional: a tensor or a sequence, or nothing.
     *
     * @param value the element, or null when empty
     */
    record OptionalValue(OnnxValue value) implements OnnxValue {
        public OptionalValue {
            if (value instanceof OptionalValue) throw new IllegalArgumentException("an optional cannot hold an optional");
        }

        public boolean isPresent() { return value != null; }

        public String describe() { return value == null ? "an empty optional" : "an optional holding " + value.describe(); }
    }
}

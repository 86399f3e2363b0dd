package dev.kiln.onnx;

import dev.kiln.Tensor;
import dev.kiln.types.DType;

import java.util.List;

/**
 * A value of an ONNX graph other than the plain tensor path: a sequence of tensors, an optional, or a tensor of strings. The
 * builder holds these beside its tensors as host values known when the graph is built (a sequence's length and its elements'
 * shapes, a string tensor's strings); a sequence's or optional's element is a tensor, lazy or constant, like any other.
 */
sealed interface OnnxValue permits OnnxValue.TensorValue, OnnxValue.SequenceValue, OnnxValue.StackedSequence, OnnxValue.OptionalValue,
        OnnxValue.StringValue {

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
     * @param rows     where the elements are the rows of one tensor along its first axis (the list a Loop appended one tensor to
     *                 per iteration, {@link ListAccumulators}), that tensor, so that what reads the list whole (ConcatFromSequence)
     *                 reads it as one, not as a join of as many pieces as iterations; else null
     */
    record SequenceValue(List<Tensor> elements, DType dtype, Tensor rows) implements OnnxValue {
        public SequenceValue {
            elements = List.copyOf(elements);
            for (Tensor t : elements) {
                if (t.dtype() != dtype) throw new IllegalArgumentException("a sequence of " + dtype + " tensors cannot hold a " + t.dtype() + " tensor");
            }
            if (rows != null && (rows.ndim() == 0 || rows.dtype() != dtype || rows.shape().isSymbolic() || rows.dim(0) != elements.size())) {
                throw new IllegalArgumentException("a sequence of " + elements.size() + " " + dtype + " tensors cannot be the rows of " + rows.dtype() + rows.shape());
            }
        }

        /** A sequence of {@code elements}, not known as the rows of one tensor. */
        public SequenceValue(List<Tensor> elements, DType dtype) { this(elements, dtype, null); }

        /** The sequence of the rows of {@code rows} along its first axis, a static size. */
        static SequenceValue ofRows(Tensor rows) {
            List<Tensor> elements = new java.util.ArrayList<>();
            for (int t = 0; t < rows.dim(0); t++) elements.add(rows.slice(0, t, t + 1, 1).squeeze(0));
            return new SequenceValue(elements, rows.dtype(), rows);
        }

        public String describe() { return "a sequence of " + elements.size() + " " + dtype + " tensors"; }
    }

    /**
     * A sequence whose length is known only when a prepared plan runs: the list a Loop appended one tensor to per iteration
     * ({@link ListAccumulators}), its elements the rows of {@code rows} along its first axis, which is symbolic, bound by
     * the plan to the iterations that ran. Only what reads it whole takes it (ConcatFromSequence, SequenceLength); an
     * operator that needs its length while the graph is built refuses it, naming the node.
     *
     * @param rows  the elements stacked along a new first axis
     * @param dtype their dtype
     */
    record StackedSequence(Tensor rows, DType dtype) implements OnnxValue {
        public StackedSequence {
            if (rows.ndim() == 0 || rows.dtype() != dtype) throw new IllegalArgumentException("a stacked sequence of " + dtype + " tensors, got " + rows.dtype() + rows.shape());
        }

        public String describe() {
            int[] element = java.util.Arrays.copyOfRange(rows.dims(), 1, rows.ndim());
            return "a sequence of " + dtype + java.util.Arrays.toString(element) + " tensors whose length is known only when the plan runs";
        }
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

    /**
     * A tensor of strings (ONNX's STRING element type), which has no Kiln dtype: its strings are host values, known when
     * the graph is built, that only string operators (Cast, CastLike, StringNormalizer) read and give.
     *
     * @param values the strings in C order
     * @param shape  the tensor's shape
     */
    record StringValue(List<String> values, dev.kiln.types.Shape shape) implements OnnxValue {
        public StringValue {
            values = List.copyOf(values);
            if (values.size() != shape.numel()) {
                throw new IllegalArgumentException("a string tensor of shape " + shape + " holds " + shape.numel() + " strings, got " + values.size());
            }
        }

        public String describe() { return "a string tensor " + shape; }
    }
}

package dev.kiln.onnx;

import dev.kiln.Tensor;
import dev.kiln.runtime.Device;

/** Moving sequences, optionals and strings between devices, and checking them against the kinds a model declares. */
final class HostValues {
    private HostValues() {}

    /** {@code v} with every tensor it holds on {@code d}. */
    static OnnxValue to(OnnxValue v, Device d) {
        return switch (v) {
            case OnnxValue.TensorValue(Tensor t) -> new OnnxValue.TensorValue(t.to(d));
            case OnnxValue.SequenceValue(var elements, var dtype, Tensor rows) ->
                    rows != null ? OnnxValue.SequenceValue.ofRows(rows.to(d)) : new OnnxValue.SequenceValue(elements.stream().map(t -> t.to(d)).toList(), dtype);
            case OnnxValue.StackedSequence(Tensor rows, var dtype) -> new OnnxValue.StackedSequence(rows.to(d), dtype);
            case OnnxValue.OptionalValue(OnnxValue e) -> new OnnxValue.OptionalValue(e == null ? null : to(e, d));
            case OnnxValue.StringValue s -> s; // strings live on the host, on every device
        };
    }

    /**
     * Checks that {@code v} has the kind and element dtype {@code declared} says.
     *
     * @throws IllegalArgumentException naming {@code what} of {@code source} otherwise
     */
    static void checkKind(String source, String what, ValueInfo declared, OnnxValue v) {
        boolean ok = switch (declared.kind()) {
            case TENSOR -> v instanceof OnnxValue.TensorValue;
            case SEQUENCE -> v instanceof OnnxValue.SequenceValue || v instanceof OnnxValue.StackedSequence;
            case OPTIONAL_TENSOR -> v instanceof OnnxValue.OptionalValue(OnnxValue e) && (e == null || e instanceof OnnxValue.TensorValue);
            case OPTIONAL_SEQUENCE -> v instanceof OnnxValue.OptionalValue(OnnxValue e) && (e == null || e instanceof OnnxValue.SequenceValue
                    || e instanceof OnnxValue.StackedSequence);
            case STRING -> v instanceof OnnxValue.StringValue;
        };
        if (!ok) throw new IllegalArgumentException(what + " of " + source + " must be " + declared + ", got " + v.describe());
        if (dtypeOf(v) != null && dtypeOf(v) != declared.dtype()) {
            throw new IllegalArgumentException(what + " of " + source + " must be " + declared + ", got " + v.describe());
        }
    }

    /** The dtype of the tensors {@code v} holds, or null for an empty optional or strings. */
    static dev.kiln.types.DType dtypeOf(OnnxValue v) {
        return switch (v) {
            case OnnxValue.TensorValue(Tensor t) -> t.dtype();
            case OnnxValue.SequenceValue s -> s.dtype();
            case OnnxValue.StackedSequence s -> s.dtype();
            case OnnxValue.OptionalValue(OnnxValue e) -> e == null ? null : dtypeOf(e);
            case OnnxValue.StringValue s -> null;
        };
    }
}

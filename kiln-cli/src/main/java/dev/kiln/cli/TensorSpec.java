package dev.kiln.cli;

import dev.kiln.types.DType;

import java.util.Arrays;
import java.util.Objects;
import java.util.stream.Collectors;

/**
 * A named model input or output: its dtype and dimensions, where a negative dimension is one the
 * model leaves open (an ONNX symbolic dimension) and any size matches it; null dims mean the model
 * declares no shape at all (any rank matches).
 */
record TensorSpec(String name, DType dtype, int[] dims) {
    /** An open dimension. */
    static final int ANY = -1;

    TensorSpec {
        Objects.requireNonNull(name);
        Objects.requireNonNull(dtype);
        dims = dims == null ? null : dims.clone();
    }

    @Override public int[] dims() { return dims == null ? null : dims.clone(); }

    /** Whether a tensor of {@code dtype} and {@code shape} fits this spec. */
    boolean accepts(DType dtype, int[] shape) {
        if (dtype != this.dtype) return false;
        if (dims == null) return true;
        if (shape.length != dims.length) return false;
        for (int i = 0; i < dims.length; i++) if (dims[i] >= 0 && dims[i] != shape[i]) return false;
        return true;
    }

    /**
     * The dims with open dimensions set to 1 (the shape of a generated input).
     *
     * @throws IllegalArgumentException if the model declares no shape for this input
     */
    int[] concreteDims() {
        if (dims == null) throw new IllegalArgumentException("input '" + name + "': the model declares no shape, so it cannot be generated; give it with --input");
        return Arrays.stream(dims).map(d -> d < 0 ? 1 : d).toArray();
    }

    /** E.g. {@code f32 [?, 16]}. */
    String describe() {
        if (dims == null) return dtype + " [any shape]";
        return dtype + " " + Arrays.stream(dims).mapToObj(d -> d < 0 ? "?" : Integer.toString(d)).collect(Collectors.joining(", ", "[", "]"));
    }

    @Override
    public String toString() { return name + " " + describe(); }
}

package dev.kiln.onnx;

import dev.kiln.types.DType;

import java.util.List;

/**
 * A graph input or output as the model declares it: its name, element dtype and dimensions, each either a
 * fixed size or a symbolic name (such as {@code batch}), and its kind: a tensor, or a sequence or optional of tensors
 * (whose dtype and dimensions are then the elements').
 *
 * @param name the value's name in the graph
 * @param dtype its element type (of the tensors a sequence or optional holds)
 * @param dims its dimensions (of each tensor a sequence or optional holds), or null when the model declares no shape
 * @param kind what the value is
 */
public record ValueInfo(String name, DType dtype, List<Dim> dims, Kind kind) {
    /** What a graph value is. */
    public enum Kind {
        /** A tensor. */
        TENSOR,
        /** A sequence of tensors. */
        SEQUENCE,
        /** An optional tensor: a tensor or nothing. */
        OPTIONAL_TENSOR,
        /** An optional sequence of tensors: a sequence or nothing. */
        OPTIONAL_SEQUENCE,
        /** A tensor of strings (its {@link ValueInfo#dtype() dtype} is null: no Kiln dtype holds strings). */
        STRING
    }

    /** A tensor value. */
    public ValueInfo(String name, DType dtype, List<Dim> dims) { this(name, dtype, dims, Kind.TENSOR); }

    /** True for a plain tensor. */
    public boolean isTensor() { return kind == Kind.TENSOR; }

    /**
     * One dimension: a fixed size, a symbolic name, or neither (unknown).
     *
     * @param size the fixed size, or -1 when the dimension is symbolic or unknown
     * @param symbol the symbolic name, or null
     */
    public record Dim(long size, String symbol) {
        /** True for a named symbolic dimension. */
        public boolean isSymbolic() { return symbol != null; }

        /** True when the model fixes the size. */
        public boolean isFixed() { return size >= 0; }

        @Override
        public String toString() { return symbol != null ? symbol : size >= 0 ? Long.toString(size) : "?"; }
    }

    public ValueInfo {
        dims = dims == null ? null : List.copyOf(dims);
        java.util.Objects.requireNonNull(kind, "kind");
    }

    @Override
    public String toString() {
        String t = (kind == Kind.STRING ? "string" : String.valueOf(dtype)) + (dims == null ? "[unknown shape]" : dims.toString());
        return name + ": " + switch (kind) {
            case TENSOR, STRING -> t;
            case SEQUENCE -> "sequence<" + t + ">";
            case OPTIONAL_TENSOR -> "optional<" + t + ">";
            case OPTIONAL_SEQUENCE -> "optional<sequence<" + t + ">>";
        };
    }
}

package dev.kiln.onnx;

import dev.kiln.types.DType;

import java.util.List;

/**
 * A graph input or output as the model declares it: its name, element dtype and dimensions, each either a
 * fixed size or a symbolic name (such as {@code batch}).
 *
 * @param name the value's name in the graph
 * @param dtype its element type
 * @param dims its dimensions, or null when the model declares no shape
 */
public record ValueInfo(String name, DType dtype, List<Dim> dims) {
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
    }

    @Override
    public String toString() { return name + ": " + dtype + (dims == null ? "[unknown shape]" : dims.toString()); }
}

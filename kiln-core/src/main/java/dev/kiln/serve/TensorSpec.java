package dev.kiln.serve;

import dev.kiln.types.DType;
import dev.kiln.types.Shape;

import java.util.Objects;

/**
 * The name, dtype and shape of a graph input, parameter or output.
 *
 * @param name  the name it is fed or read by (outputs are named {@code output0}, {@code output1}, ...)
 * @param dtype its element type
 * @param shape its shape
 */
public record TensorSpec(String name, DType dtype, Shape shape) {
    public TensorSpec {
        Objects.requireNonNull(name, "name");
        Objects.requireNonNull(dtype, "dtype");
        Objects.requireNonNull(shape, "shape");
    }

    /** Number of elements. */
    public long numel() { return shape.numel(); }

    /** Bytes of one value of this spec in a buffer. */
    public long byteSize() { return dtype.byteSize(shape.numel()); }

    @Override
    public String toString() { return name + ": " + dtype + shape; }
}

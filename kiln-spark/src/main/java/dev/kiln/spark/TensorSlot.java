package dev.kiln.spark;

import dev.kiln.types.DType;

import java.io.Serial;
import java.io.Serializable;
import java.util.Arrays;

/**
 * One model input or output as a row sees it: its name, dtype and the shape of one row (the dims after the batch axis).
 *
 * @param name    the model's name for it
 * @param dtype   its element type
 * @param rowDims the dims of one row
 */
record TensorSlot(String name, DType dtype, int[] rowDims) implements Serializable {
    @Serial
    private static final long serialVersionUID = 1L;

    TensorSlot {
        rowDims = rowDims.clone();
    }

    /** Elements in one row. */
    int rowSize() {
        int n = 1;
        for (int d : rowDims) n = Math.multiplyExact(n, d);
        return n;
    }

    /** {@code 'x' f32[batch, 8]}, as messages name a model input. */
    String describe() {
        StringBuilder s = new StringBuilder("'" + name + "' " + dtype + "[batch");
        for (int d : rowDims) s.append(", ").append(d);
        return s.append(']').toString();
    }

    @Override
    public int[] rowDims() { return rowDims.clone(); }

    @Override
    public boolean equals(Object o) {
        return o instanceof TensorSlot t && name.equals(t.name) && dtype == t.dtype && Arrays.equals(rowDims, t.rowDims);
    }

    @Override
    public int hashCode() { return name.hashCode() * 31 + Arrays.hashCode(rowDims); }

    @Override
    public String toString() { return describe(); }
}

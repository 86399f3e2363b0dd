package dev.kiln.spark;

import dev.kiln.types.DType;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;

import java.io.Serial;
import java.io.Serializable;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.Map;

/**
 * A model output as a DataFrame column: {@code array<T>} of the output's row (flattened row-major), or a scalar
 * {@code T} when a row of the output is one value with no axes, {@code T} the Spark type of the output's dtype.
 *
 * @param column the column's name
 * @param output the model output
 */
record OutputColumn(String column, TensorSlot output) implements Serializable {
    @Serial
    private static final long serialVersionUID = 1L;

    private static final Map<DType, DataType> TYPES = Map.of(DType.F32, DataTypes.FloatType, DType.F64, DataTypes.DoubleType,
            DType.I32, DataTypes.IntegerType, DType.I64, DataTypes.LongType, DType.I16, DataTypes.ShortType, DType.I8, DataTypes.ByteType,
            DType.BOOL, DataTypes.BooleanType);

    /**
     * Binds {@code output} to a column named {@code column}.
     *
     * @throws IllegalArgumentException if Spark has no type for the output's dtype
     */
    static OutputColumn bind(String column, TensorSlot output, String model) {
        if (!TYPES.containsKey(output.dtype())) {
            throw new IllegalArgumentException("model output " + output.describe() + " of " + model + " has dtype " + output.dtype()
                    + ", which kiln-spark does not return; it returns " + TYPES.keySet());
        }
        return new OutputColumn(column, output);
    }

    boolean scalar() { return output.rowDims().length == 0; }

    /** The column's Spark type. */
    DataType dataType() {
        DataType element = TYPES.get(output.dtype());
        return scalar() ? element : DataTypes.createArrayType(element, false);
    }

    /** Row {@code r} of a run's output bytes (little-endian, the output's dtype) as this column's value. */
    Object value(byte[] bytes, int r) {
        int n = output.rowSize();
        ByteBuffer b = ByteBuffer.wrap(bytes).order(ByteOrder.LITTLE_ENDIAN);
        int at = Math.toIntExact(output.dtype().byteSize((long) r * n));
        b.position(at);
        return switch (output.dtype()) {
            case F32 -> { float[] v = new float[n]; b.asFloatBuffer().get(v); yield scalar() ? (Object) v[0] : v; }
            case F64 -> { double[] v = new double[n]; b.asDoubleBuffer().get(v); yield scalar() ? (Object) v[0] : v; }
            case I32 -> { int[] v = new int[n]; b.asIntBuffer().get(v); yield scalar() ? (Object) v[0] : v; }
            case I64 -> { long[] v = new long[n]; b.asLongBuffer().get(v); yield scalar() ? (Object) v[0] : v; }
            case I16 -> { short[] v = new short[n]; b.asShortBuffer().get(v); yield scalar() ? (Object) v[0] : v; }
            case I8 -> { byte[] v = new byte[n]; b.get(v); yield scalar() ? (Object) v[0] : v; }
            case BOOL -> {
                boolean[] v = new boolean[n];
                for (int k = 0; k < n; k++) v[k] = b.get() != 0;
                yield scalar() ? (Object) v[0] : v;
            }
            default -> throw new IllegalStateException("bind admits no output of " + output.dtype());
        };
    }
}

package dev.kiln.spark;

import dev.kiln.types.DType;
import org.apache.spark.ml.attribute.AttributeGroup;
import org.apache.spark.ml.linalg.Vector;
import org.apache.spark.ml.linalg.VectorUDT;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.types.ArrayType;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;

import scala.jdk.javaapi.CollectionConverters;

import java.io.Serial;
import java.io.Serializable;
import java.nio.ByteBuffer;
import java.util.Arrays;
import java.util.List;
import java.util.Set;

/**
 * A DataFrame column (or a function's argument) bound to a model input: an array column or an ml {@link Vector} column holding one row of the
 * input, flattened in row-major order. {@link #bind} checks what a schema can show (the column exists, its element type
 * fits the input's dtype, a Vector column's size when its metadata declares one); {@link #write} checks each row's
 * values (nulls, length).
 *
 * @param column the column's name
 * @param index  its position in the input schema
 * @param input  the model input it feeds
 */
record InputColumn(String column, int index, TensorSlot input) implements Serializable {
    @Serial
    private static final long serialVersionUID = 1L;

    private static final Set<DType> FLOATS = Set.of(DType.F32, DType.F64), INTEGERS = Set.of(DType.I32, DType.I64);
    private static final List<DataType> FLOAT_ELEMENTS = List.of(DataTypes.FloatType, DataTypes.DoubleType),
            INTEGER_ELEMENTS = List.of(DataTypes.ByteType, DataTypes.ShortType, DataTypes.IntegerType, DataTypes.LongType);

    /**
     * Binds {@code column} of {@code schema} to {@code input}.
     *
     * @throws IllegalArgumentException naming the column and the model input if the column is missing, of a type that
     *                                  cannot feed the input, or a Vector column whose declared size differs
     */
    static InputColumn bind(StructType schema, String column, TensorSlot input, String model) {
        if (!Arrays.asList(schema.fieldNames()).contains(column)) {
            throw new IllegalArgumentException("column '" + column + "' for model input " + input.describe() + " of " + model
                    + " is not in the DataFrame; its columns are " + Arrays.toString(schema.fieldNames()));
        }
        StructField field = schema.apply(column);
        int declared = field.dataType() instanceof VectorUDT ? AttributeGroup.fromStructField(field).size() : -1;
        check(column, field.dataType(), declared, input, model);
        return new InputColumn(column, schema.fieldIndex(column), input);
    }

    /**
     * Checks that a value of {@code type} can feed {@code input}; {@code declaredSize} is a Vector's size from its
     * metadata (VectorSizeHint, VectorAssembler), or -1.
     *
     * @throws IllegalArgumentException naming the column and the model input if it cannot
     */
    static void check(String column, DataType type, int declaredSize, TensorSlot input, String model) {
        String what = "column '" + column + "' for model input " + input.describe() + " of " + model;
        if (!FLOATS.contains(input.dtype()) && !INTEGERS.contains(input.dtype())) {
            throw new IllegalArgumentException("model input " + input.describe() + " of " + model + " has dtype " + input.dtype()
                    + "; kiln-spark feeds inputs of " + FLOATS + " and " + INTEGERS);
        }
        List<DataType> allowed = FLOATS.contains(input.dtype()) ? FLOAT_ELEMENTS : INTEGER_ELEMENTS;
        if (type instanceof VectorUDT) {
            if (!FLOATS.contains(input.dtype())) {
                throw new IllegalArgumentException(what + " is an ml Vector (doubles); the input is " + input.dtype() + ": give an array of "
                        + INTEGER_ELEMENTS.stream().map(DataType::simpleString).toList());
            }
            if (declaredSize >= 0 && declaredSize != input.rowSize()) {
                throw new IllegalArgumentException(what + " is a Vector of size " + declaredSize + " (its metadata); the input needs "
                        + input.rowSize() + " values per row");
            }
            return;
        }
        if (type instanceof ArrayType a && allowed.contains(a.elementType())) return;
        throw new IllegalArgumentException(what + " is " + type.simpleString() + "; the input needs an array of "
                + allowed.stream().map(DataType::simpleString).toList() + (FLOATS.contains(input.dtype()) ? " or an ml Vector" : "")
                + " with " + input.rowSize() + " values per row");
    }

    /** Bytes of one row of the input. */
    int rowBytes() { return Math.toIntExact(input.dtype().byteSize(input.rowSize())); }

    /**
     * Writes this column of {@code row} into {@code into} (little-endian, the model's dtype) at its current position.
     *
     * @throws InvalidRowException if the value is null, holds a null, or has the wrong number of values
     */
    void write(Row row, ByteBuffer into) {
        if (row.isNullAt(index)) throw invalid("is null");
        int n = input.rowSize();
        DType dt = input.dtype();
        Object value = row.get(index);
        if (value instanceof Vector v) {
            if (v.size() != n) throw invalid("has " + v.size() + " values");
            for (int k = 0; k < n; k++) putDouble(into, dt, v.apply(k));
            return;
        }
        // a Row from a Dataset holds a Scala Seq (an ArraySeq); one made by hand may hold a java.util.List. Read in order,
        // never by index: a linear Seq would make that quadratic
        Iterable<?> values = switch (value) {
            case scala.collection.Seq<?> seq -> {
                if (seq.size() != n) throw invalid("has " + seq.size() + " values");
                yield CollectionConverters.asJava(seq);
            }
            case List<?> list -> {
                if (list.size() != n) throw invalid("has " + list.size() + " values");
                yield list;
            }
            default -> throw invalid("is a " + value.getClass().getName() + ", not an array");
        };
        int k = 0;
        for (Object o : values) {
            if (o == null) throw invalid("has a null at index " + k);
            Number x = (Number) o;
            switch (dt) {
                case F32 -> into.putFloat(x.floatValue());
                case F64 -> into.putDouble(x.doubleValue());
                case I32 -> into.putInt(x.intValue());
                case I64 -> into.putLong(x.longValue());
                default -> throw new IllegalStateException("bind admits no input of " + dt);
            }
            k++;
        }
    }

    private static void putDouble(ByteBuffer into, DType dt, double x) {
        if (dt == DType.F32) into.putFloat((float) x);
        else into.putDouble(x);
    }

    private InvalidRowException invalid(String what) {
        return new InvalidRowException("column '" + column + "' " + what + "; model input " + input.describe() + " needs " + input.rowSize()
                + " non-null values per row");
    }
}

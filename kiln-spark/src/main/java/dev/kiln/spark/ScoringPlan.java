package dev.kiln.spark;

import org.apache.spark.sql.types.Metadata;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;

import java.io.Serial;
import java.io.Serializable;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * A model bound to a DataFrame's schema, decided on the driver before any task runs: which column feeds each model
 * input, which column each output becomes, and the options. Every schema mismatch is found here
 * ({@link #bind}), so a job that would fail on its first row fails at plan time instead.
 *
 * @param signature the model's inputs and outputs
 * @param inputs    one column per model input, in model order
 * @param outputs   the output columns, in model output order
 * @param options   device, batch size, what a bad row does
 */
record ScoringPlan(ModelSignature signature, List<InputColumn> inputs, List<OutputColumn> outputs, ScoringOptions options) implements Serializable {
    @Serial
    private static final long serialVersionUID = 1L;

    ScoringPlan {
        inputs = List.copyOf(inputs);
        outputs = List.copyOf(outputs);
    }

    /**
     * Binds the model to {@code schema}.
     *
     * @param inputColumns  one column per model input, in model order
     * @param outputColumns one new column per model output, in model order (empty: the model's output names)
     * @throws IllegalArgumentException naming the column and model value on any mismatch
     */
    static ScoringPlan bind(ModelSignature sig, StructType schema, List<String> inputColumns, List<String> outputColumns, ScoringOptions options) {
        String model = sig.source();
        if (inputColumns.size() != sig.inputs().size()) {
            throw new IllegalArgumentException("model " + model + " has " + sig.inputs().size() + " inputs " + sig.inputs() + "; given "
                    + inputColumns.size() + " input columns " + inputColumns);
        }
        List<InputColumn> ins = new ArrayList<>();
        for (int i = 0; i < inputColumns.size(); i++) ins.add(InputColumn.bind(schema, inputColumns.get(i), sig.inputs().get(i), model));
        List<String> names = outputColumns.isEmpty() ? sig.outputs().stream().map(TensorSlot::name).toList() : outputColumns;
        if (names.size() != sig.outputs().size()) {
            throw new IllegalArgumentException("model " + model + " has " + sig.outputs().size() + " outputs " + sig.outputs() + "; given "
                    + names.size() + " output columns " + names);
        }
        List<String> taken = Arrays.asList(schema.fieldNames());
        List<OutputColumn> outs = new ArrayList<>();
        for (int i = 0; i < names.size(); i++) {
            String c = names.get(i);
            if (taken.contains(c) || names.subList(0, i).contains(c)) {
                throw new IllegalArgumentException("output column '" + c + "' for model output " + sig.outputs().get(i).describe()
                        + " is already a column; choose another name (outputCols)");
            }
            outs.add(OutputColumn.bind(c, sig.outputs().get(i), model));
        }
        return new ScoringPlan(sig, ins, outs, options);
    }

    /**
     * The plan of a SQL function {@code name}: its arguments feed the model's inputs in order (checked, where the session
     * has {@link KilnSparkExtensions}, when a query is analysed), its outputs are the fields of its result.
     */
    static ScoringPlan forFunction(String name, ModelSignature sig, ScoringOptions options) {
        List<InputColumn> ins = new ArrayList<>();
        for (int i = 0; i < sig.inputs().size(); i++) ins.add(new InputColumn("argument " + (i + 1) + " of " + name, i, sig.inputs().get(i)));
        List<OutputColumn> outs = new ArrayList<>();
        for (TensorSlot o : sig.outputs()) outs.add(OutputColumn.bind(o.name(), o, sig.source()));
        return new ScoringPlan(sig, ins, outs, options);
    }

    /** The input schema with the output columns appended (nullable: with handleInvalid=keep a bad row's outputs are null). */
    StructType outputSchema(StructType input) {
        StructType s = input;
        for (OutputColumn o : outputs) s = s.add(new StructField(o.column(), o.dataType(), true, Metadata.empty()));
        return s;
    }
}

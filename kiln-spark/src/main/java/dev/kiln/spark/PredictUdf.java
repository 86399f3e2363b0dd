package dev.kiln.spark;

import org.apache.spark.TaskContext;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;

import java.io.Serial;
import java.io.Serializable;
import java.util.List;

/**
 * The body of a {@code kiln_predict} SQL function: its arguments, one per model input, are scored as one row through
 * this executor's compiled model (Spark calls a UDF a row at a time, so there is no batch to gather), and the outputs
 * come back as a struct with a field per model output, or null for a bad row under handleInvalid=keep. Spark
 * deserialises the function for every task, so the runner and the row count below belong to one task.
 */
final class PredictUdf implements Serializable {
    @Serial
    private static final long serialVersionUID = 1L;

    /** The most model inputs a function takes (KilnFunctions adapts it to Spark's Java UDF interface of each arity). */
    static final int MAX_INPUTS = 5;

    private final ShippedModel model;
    private final ScoringPlan plan;
    private transient BatchRunner runner;
    private transient long position;

    PredictUdf(ShippedModel model, ScoringPlan plan) {
        this.model = model;
        this.plan = plan;
    }

    /** The outputs for one row of arguments, one per model input. */
    Row score(Object... args) {
        if (runner == null) runner = new BatchRunner(plan, model.open(plan.options()));
        TaskContext task = TaskContext.get();
        Row scored = runner.score(List.of(RowFactory.create(args)), position++, task == null ? -1 : task.partitionId())[0];
        int outputs = plan.outputs().size(), first = scored.length() - outputs;
        if (scored.isNullAt(first)) return null; // kept bad row: every output is null, so the struct is
        Object[] values = new Object[outputs];
        for (int k = 0; k < outputs; k++) values[k] = scored.get(first + k);
        return RowFactory.create(values);
    }
}

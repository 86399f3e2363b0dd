package dev.kiln.spark;

import dev.kiln.serve.CompiledGraph;
import dev.kiln.serve.TypedValues;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Scores rows a batch at a time for one task: each input column is written into one buffer of the batch size (the
 * rows past the batch's real size are left as they are and never computed: the batch axis's active extent is set
 * to the real size), one replica of the executor's compiled plan runs it, and each output row becomes a column value.
 * Not thread-safe: one per task.
 */
final class BatchRunner {
    private final ScoringPlan plan;
    private final ServingModel model;
    private final byte[][] inputBytes;
    private final ByteBuffer[] inputBuffers;
    private final Map<String, TypedValues> feed = new LinkedHashMap<>();
    private final boolean[] invalid;

    BatchRunner(ScoringPlan plan, ServingModel model) {
        this.plan = plan;
        this.model = model;
        int rows = model.batchSize();
        List<InputColumn> ins = plan.inputs();
        inputBytes = new byte[ins.size()][];
        inputBuffers = new ByteBuffer[ins.size()];
        for (int i = 0; i < ins.size(); i++) {
            inputBytes[i] = new byte[Math.multiplyExact(ins.get(i).rowBytes(), rows)];
            inputBuffers[i] = ByteBuffer.wrap(inputBytes[i]).order(ByteOrder.LITTLE_ENDIAN);
            feed.put(ins.get(i).input().name(), new TypedValues(ins.get(i).input().dtype(), inputBytes[i]));
        }
        invalid = new boolean[rows];
    }

    /** Rows per batch. */
    int batchSize() { return model.batchSize(); }

    /**
     * Scores {@code rows} (at most {@link #batchSize()}) and returns each with the output columns appended, in order.
     * {@code firstPosition} is the first row's position in its partition, for messages.
     *
     * @throws InvalidRowException naming the row's position, unless handleInvalid is keep (its outputs are then null)
     */
    Row[] score(List<Row> rows, long firstPosition, int partition) {
        int n = rows.size();
        int valid = 0;
        for (ByteBuffer b : inputBuffers) b.clear();
        for (int r = 0; r < n; r++) {
            invalid[r] = false;
            int at = valid;
            try {
                for (int i = 0; i < inputBuffers.length; i++) {
                    inputBuffers[i].position(at * plan.inputs().get(i).rowBytes());
                    plan.inputs().get(i).write(rows.get(r), inputBuffers[i]);
                }
                valid++;
            } catch (InvalidRowException e) {
                if (!plan.options().keepInvalid()) {
                    throw new InvalidRowException("row " + (firstPosition + r) + " of partition " + partition + ": " + e.getMessage()
                            + " (handleInvalid=keep passes such rows through with null outputs)");
                }
                invalid[r] = true; // its slot is reused by the next row: the model sees only the valid rows
            }
        }
        List<TypedValues> outs = valid == 0 ? List.of() : run(valid);
        Row[] scored = new Row[n];
        List<OutputColumn> oc = plan.outputs();
        for (int r = 0, v = 0; r < n; r++) {
            Row in = rows.get(r);
            Object[] values = new Object[in.length() + oc.size()];
            for (int c = 0; c < in.length(); c++) values[c] = in.get(c);
            if (!invalid[r]) {
                for (int k = 0; k < oc.size(); k++) values[in.length() + k] = oc.get(k).value(outs.get(k).bytes(), v);
                v++;
            }
            scored[r] = RowFactory.create(values);
        }
        return scored;
    }

    private List<TypedValues> run(int valid) {
        CompiledGraph replica = model.borrow();
        try {
            if (model.signature().batched()) replica.setActiveExtent(valid, model.batchSize());
            return ExecutorModels.exclusively(() -> replica.runTyped(feed));
        } finally {
            model.release(replica);
        }
    }

    @Override
    public String toString() { return "BatchRunner[" + model.signature().source() + ", batch " + model.batchSize() + "]"; }
}

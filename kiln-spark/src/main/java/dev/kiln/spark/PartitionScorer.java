package dev.kiln.spark;

import org.apache.spark.TaskContext;
import org.apache.spark.api.java.function.MapPartitionsFunction;
import org.apache.spark.sql.Row;

import java.io.Serial;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.NoSuchElementException;

/**
 * The task side of scoring: turns a partition's rows into fixed-size batches (the last one at its real size), scores
 * each through this executor's compiled model, and yields the rows with the output columns appended, lazily, so a
 * partition is never held in memory whole.
 *
 * @param model the broadcast model
 * @param plan  the columns and options decided on the driver
 */
record PartitionScorer(ShippedModel model, ScoringPlan plan) implements MapPartitionsFunction<Row, Row> {
    @Serial
    private static final long serialVersionUID = 1L;

    @Override
    public Iterator<Row> call(Iterator<Row> rows) {
        TaskContext task = TaskContext.get();
        int partition = task == null ? -1 : task.partitionId();
        return new Iterator<>() {
            private BatchRunner runner; // made on the first row: an empty partition compiles nothing
            private final ArrayDeque<Row> ready = new ArrayDeque<>();
            private long position;

            @Override
            public boolean hasNext() {
                if (!ready.isEmpty()) return true;
                if (!rows.hasNext()) return false;
                if (runner == null) runner = new BatchRunner(plan, model.open(plan.options()));
                List<Row> batch = new ArrayList<>(runner.batchSize());
                while (batch.size() < runner.batchSize() && rows.hasNext()) batch.add(rows.next());
                for (Row r : runner.score(batch, position, partition)) ready.add(r);
                position += batch.size();
                return true;
            }

            @Override
            public Row next() {
                if (!hasNext()) throw new NoSuchElementException();
                return ready.poll();
            }
        };
    }
}

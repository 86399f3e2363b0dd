package dev.kiln.spark;

import dev.kiln.llm.generate.ContextOverflowException;
import org.apache.spark.TaskContext;
import org.apache.spark.sql.Row;

import java.io.Serial;
import java.io.Serializable;

/**
 * The body of a {@code kiln_generate} SQL function: the continuation of a prompt by a language model that every executor
 * reads itself (a GGUF file may be gigabytes: see {@link RemoteFile}) and opens once per executor JVM. The options are the
 * registration's defaults, overridden by the call's options struct where it has one ({@link GenerateOptions}); a row's
 * generator is seeded from the seed and the prompt alone, so a prompt's text is the same on every executor, task thread and
 * partitioning, and in every run: the function is deterministic, as Spark assumes of a UDF it may evaluate again (a
 * retried task, a re-used plan). A null prompt, one too long for the context, or options whose values are out of range
 * in a row whose options are not a constant (constant options are checked when the query is analysed) is a bad row: it
 * fails its task naming its position, or, under handleInvalid=keep, gives null. Spark deserialises the function for every
 * task, so the row count belongs to one task.
 */
final class GenerateUdf implements Serializable {
    @Serial
    private static final long serialVersionUID = 2L;

    private final String name;
    private final RemoteFile model;
    private final GenerateOptions defaults;
    private final boolean keep;
    private transient long position;

    /**
     * @param name     the function's name, for messages
     * @param model    the GGUF file, read by each executor
     * @param defaults the options of a call without an options argument, and of the fields an options argument leaves out
     * @param keep     whether a bad row gives null rather than failing its task
     */
    GenerateUdf(String name, RemoteFile model, GenerateOptions defaults, boolean keep) {
        this.name = name;
        this.model = model;
        this.defaults = defaults;
        this.keep = keep;
    }

    /** {@code kiln_generate(prompt)}: the prompt's continuation (the generated text only) under the defaults. */
    String generate(String prompt) { return run(prompt, null, false); }

    /** {@code kiln_generate(prompt, options)}: the same, under the defaults overridden by {@code options} (a struct; may be null). */
    String generate(String prompt, Row options) { return run(prompt, options, true); }

    private String run(String prompt, Row options, boolean withOptions) {
        long row = position++;
        try {
            if (prompt == null) throw new InvalidRowException("the prompt is null");
            GenerateOptions o;
            try {
                o = withOptions ? defaults.with("argument 2 (options)", options) : defaults;
            } catch (IllegalArgumentException e) {
                throw new InvalidRowException(e.getMessage());
            }
            return ExecutorLanguageModels.get(model).generate(prompt, o.forPrompt(prompt)).text();
        } catch (InvalidRowException | ContextOverflowException e) {
            if (keep) return null;
            TaskContext task = TaskContext.get();
            throw new InvalidRowException("row " + row + " of partition " + (task == null ? -1 : task.partitionId()) + ": " + name + ": "
                    + e.getMessage() + " (handleInvalid=keep gives null for such rows)");
        }
    }
}

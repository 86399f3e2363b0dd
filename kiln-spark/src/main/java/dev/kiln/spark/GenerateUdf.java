package dev.kiln.spark;

import dev.kiln.llm.generate.ContextOverflowException;
import dev.kiln.llm.generate.GenerationOptions;
import org.apache.spark.TaskContext;

import java.io.Serial;
import java.io.Serializable;

/**
 * The body of a {@code kiln_generate} SQL function: the continuation of a prompt by a language model that every executor
 * reads itself (a GGUF file may be gigabytes: see {@link RemoteFile}) and opens once per executor JVM. Greedy decoding, so a prompt's text is the same on
 * every executor and in every run. A null prompt, or one too long for the context, is a bad row: it fails its task
 * naming its position, or, under handleInvalid=keep, gives null. Spark deserialises the function for every task, so the
 * row count belongs to one task.
 */
final class GenerateUdf implements Serializable {
    @Serial
    private static final long serialVersionUID = 1L;

    private final String name;
    private final RemoteFile model;
    private final int maxTokens;
    private final boolean keep;
    private transient long position;

    /**
     * @param name      the function's name, for messages
     * @param model     the GGUF file, read by each executor
     * @param maxTokens tokens generated at most per prompt
     * @param keep      whether a bad row gives null rather than failing its task
     */
    GenerateUdf(String name, RemoteFile model, int maxTokens, boolean keep) {
        this.name = name;
        this.model = model;
        this.maxTokens = maxTokens;
        this.keep = keep;
    }

    /** The prompt's continuation (the generated text only). */
    String generate(String prompt) {
        long row = position++;
        try {
            if (prompt == null) throw new InvalidRowException("the prompt is null");
            return ExecutorLanguageModels.get(model).generate(prompt, GenerationOptions.greedy().withMaxTokens(maxTokens)).text();
        } catch (InvalidRowException | ContextOverflowException e) {
            if (keep) return null;
            TaskContext task = TaskContext.get();
            throw new InvalidRowException("row " + row + " of partition " + (task == null ? -1 : task.partitionId()) + ": " + name + ": "
                    + e.getMessage() + " (handleInvalid=keep gives null for such rows)");
        }
    }
}

package dev.kiln.runtime;

/**
 * A second thread entered a run of an object that runs one execution at a time (an {@link ExecutionPlan},
 * a {@link dev.kiln.serve.CompiledGraph}) while a run was in progress. Nothing of the second call ran; the
 * first is unaffected. Give each thread its own replica instead ({@link ExecutionPlan#replicate},
 * {@link dev.kiln.serve.CompiledGraph#copy()}).
 */
public final class ConcurrentUseException extends IllegalStateException {
    /** An exception with the one-line {@code message}, which names the object and the replica API to use. */
    public ConcurrentUseException(String message) {
        super(message);
    }
}

package dev.kiln.runtime;

/**
 * Where a plan's variable gets its value in a run ({@link ExecutionPlan#variableSource}): given by the caller before the
 * run, or produced by one of its steps while it runs.
 */
public sealed interface VariableSource {
    /** Given by the caller: {@link ExecutionPlan#executeWithVars} or {@link ExecutionPlan#setVariable}. */
    record Caller() implements VariableSource {}

    /**
     * Produced by step {@code step} of {@link ExecutionPlan#preparedOps()}, a sized host step
     * ({@link dev.kiln.Tensor#hostSized}) named {@code name}: bound from the extent it returns, for every step after it
     * in the same run; the caller cannot set it.
     */
    record Step(int step, String name) implements VariableSource {}
}

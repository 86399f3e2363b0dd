package dev.kiln.runtime;

import java.util.List;

/**
 * One step of an {@link ExecutionPlan}, in schedule order. Buffers are named by their index in
 * {@link ExecutionPlan#buffers()}; {@link #output()} is the buffer the step writes.
 */
public sealed interface PreparedOp permits PreparedKernel, PreparedCopy, PreparedBufferView, PreparedCustomFunction {
    /** A readable name, unique within the plan. */
    String name();

    /** Index of the buffer this step writes (or, for a view, the buffer it defines). */
    int output();

    /** Indices of the buffers this step reads. */
    List<Integer> inputs();
}

package dev.kiln.codegen;

import dev.kiln.DType;
import dev.kiln.Variable;
import dev.kiln.ir.Slot;

import java.util.List;

/**
 * One kernel lowered to loops: buffer parameters (output first), the symbolic variables it reads, and
 * its statements. Backends render it to source; the {@link KernelEvaluator} runs it directly.
 *
 * @param name      a readable, stable name such as {@code k_add_exp_4x4}
 * @param params    buffer parameters; index 0 is the output
 * @param sizes     element count of each parameter's buffer
 * @param variables symbolic variables the kernel reads (bound at launch)
 * @param body      the statements
 */
public record KernelProgram(String name, List<Slot> params, List<Long> sizes, List<Variable> variables, Stmt.Block body) {
    public KernelProgram {
        params = List.copyOf(params);
        sizes = List.copyOf(sizes);
        variables = List.copyOf(variables);
    }

    /** The output's element type. */
    public DType outputDType() { return params.getFirst().dtype(); }
}

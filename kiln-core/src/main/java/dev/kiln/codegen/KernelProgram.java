package dev.kiln.codegen;

import dev.kiln.types.DType;
import dev.kiln.types.Variable;
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
 * @param opts      the {@link Optimizer} actions that made {@code body} from the lowered loops, in order
 *                  (empty for a kernel as lowered)
 */
public record KernelProgram(String name, List<Slot> params, List<Long> sizes, List<Variable> variables, Stmt.Block body,
                            List<Opt> opts) {
    public KernelProgram {
        params = List.copyOf(params);
        sizes = List.copyOf(sizes);
        variables = List.copyOf(variables);
        opts = List.copyOf(opts);
    }

    /** A kernel as lowered, with no optimisation actions applied. */
    public KernelProgram(String name, List<Slot> params, List<Long> sizes, List<Variable> variables, Stmt.Block body) {
        this(name, params, sizes, variables, body, List.of());
    }

    /** The same program under another name. */
    public KernelProgram withName(String newName) { return new KernelProgram(newName, params, sizes, variables, body, opts); }

    /**
     * The program without its plan-specific name: the key of every per-structure cache (equal
     * computations share one optimisation, one source and one compiled binary).
     */
    public KernelProgram anonymous() { return withName("kernel"); }

    /** The output's element type. */
    public DType outputDType() { return params.getFirst().dtype(); }

    /**
     * The number of worker threads suggested for the {@link Stmt.LoopKind#THREAD} loop, or 1 when the
     * kernel has none (a hint: the runtime may use fewer, e.g. when its pool is smaller).
     */
    public int workers() {
        for (Opt o : opts) if (o instanceof Opt.Thread t) return t.workers();
        return 1;
    }
}

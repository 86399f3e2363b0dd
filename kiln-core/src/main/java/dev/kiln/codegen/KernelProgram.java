package dev.kiln.codegen;

import dev.kiln.types.DType;
import dev.kiln.types.Variable;
import dev.kiln.ir.IndexCheck;
import dev.kiln.ir.Op;
import dev.kiln.ir.Slot;
import dev.kiln.ir.UOp;

import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;

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

    /** The {@link Op#CHECK}s of the body by site (computed on each call: used when a check has failed). */
    public Map<Integer, IndexCheck> indexChecks() {
        Map<Integer, IndexCheck> out = new TreeMap<>();
        Set<UOp> seen = new HashSet<>();
        Optimizer.walk(body, s -> {
            for (UOp e : Optimizer.expressions(s)) {
                for (UOp u : e.toposort(seen)) {
                    seen.add(u);
                    if (u.op() == Op.CHECK) out.put(u.indexCheckArg().site(), u.indexCheckArg());
                }
            }
        });
        return out;
    }

    /** The output's element type. */
    public DType outputDType() { return params.getFirst().dtype(); }

    /**
     * The output loop whose iterations a kernel's {@code start} and {@code end} arguments select: the
     * body's only statement when that is a loop other than {@link Stmt.LoopKind#REDUCE}, else null (the
     * kernel is then the single iteration 0). Every renderer and the runtime's splitting agree on this.
     */
    public Stmt.Loop outputLoop() {
        return body.body().size() == 1 && body.body().getFirst() instanceof Stmt.Loop l && l.kind() != Stmt.LoopKind.REDUCE ? l : null;
    }

    /**
     * The number of iterations {@code [0, extent)} that a kernel's {@code start} and {@code end} select:
     * the extent of the {@link #outputLoop()}, else 1 (the whole kernel is iteration 0).
     */
    public long outerExtent() {
        Stmt.Loop l = outputLoop();
        return l == null ? 1 : l.extent();
    }

    /**
     * The iterations of the {@link #outputLoop()} at the given values of the kernel's {@link #variables()}: a loop
     * over a symbolic axis runs only to its size.
     */
    public long activeExtent(long[] values) {
        Stmt.Loop l = outputLoop();
        if (l == null) return 1;
        return l.limit() == null ? l.extent() : l.stop(values[variables.indexOf(l.limit())]);
    }

    /** Whether the runtime splits the {@link #outputLoop()} across worker threads (it is {@link Stmt.LoopKind#THREAD}). */
    public boolean threaded() {
        Stmt.Loop l = outputLoop();
        return l != null && l.kind() == Stmt.LoopKind.THREAD;
    }

    /**
     * The number of worker threads suggested for the {@link Stmt.LoopKind#THREAD} loop, or 1 when the
     * kernel has none (a hint: the runtime may use fewer, e.g. when its pool is smaller).
     */
    public int workers() {
        for (Opt o : opts) if (o instanceof Opt.Thread t) return t.workers();
        return 1;
    }
}

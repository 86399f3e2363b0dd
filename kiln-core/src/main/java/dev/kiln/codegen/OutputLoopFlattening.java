package dev.kiln.codegen;

import dev.kiln.ir.UOp;
import dev.kiln.types.Variable;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * A lowered kernel's nest of output loops as one loop over all their iterations, for a target that spreads the
 * {@linkplain KernelProgram#outputLoop() output loop} over many threads (a GPU grid): lowered, a kernel over
 * {@code [1, 64, 56, 56]} has an output loop of one iteration, and its three inner loops would run in one thread.
 *
 * <p>The perfect nest of output loops (each the only statement of the one above, none a reduction, none with a
 * symbolic limit) becomes one loop of the product of their extents; each former index is read back from the new
 * one by division and remainder (C order, so consecutive iterations are consecutive in the innermost former
 * loop and a grid's neighbouring threads touch neighbouring elements). A kernel whose outermost loop has a
 * symbolic limit keeps its loops: the runtime runs that loop only to the limit.
 */
public final class OutputLoopFlattening {
    private OutputLoopFlattening() {}

    /** {@code program} with its output loop nest flattened, or {@code program} itself when there is no nest. */
    public static KernelProgram flatten(KernelProgram program) {
        Stmt.Loop outer = program.outputLoop();
        if (outer == null || outer.limit() != null) return program;
        List<Stmt.Loop> nest = new ArrayList<>(List.of(outer));
        Stmt.Loop l = outer;
        while (l.body().body().size() == 1 && l.body().body().getFirst() instanceof Stmt.Loop in
                && in.kind() == outer.kind() && in.limit() == null) {
            nest.add(in);
            l = in;
        }
        if (nest.size() == 1) return program;
        long total = 1;
        for (Stmt.Loop n : nest) total = Math.multiplyExact(total, n.extent());
        Variable flat = new Variable(outer.index().name() + "_flat", 0, total - 1);
        Map<Object, UOp> map = new HashMap<>();
        long stride = 1;
        for (int k = nest.size() - 1; k >= 0; k--) {
            Stmt.Loop n = nest.get(k);
            UOp index = UOp.variable(flat);
            if (stride > 1) index = index.div(stride);
            if (k > 0) index = index.mod(n.extent());
            map.put(n.index(), index);
            stride *= n.extent();
        }
        Stmt.Block body = Optimizer.substitute(l.body(), map);
        Stmt.Block flattened = new Stmt.Block(List.of(new Stmt.Loop(flat, outer.kind(), body)));
        return new KernelProgram(program.name(), program.params(), program.sizes(), program.variables(), flattened, program.opts());
    }
}

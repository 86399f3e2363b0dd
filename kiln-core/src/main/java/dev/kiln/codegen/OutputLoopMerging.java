package dev.kiln.codegen;

import dev.kiln.ir.Op;
import dev.kiln.ir.UOp;
import dev.kiln.types.Variable;

import java.util.ArrayList;
import java.util.EnumSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * Merges neighbouring output loops that every expression reads only as one run, so the inner loop gets longer
 * without any division: in a kernel over {@code [256, 56, 56]} whose loads and stores address
 * {@code 3136 i1 + 56 i2 + i3} (and nothing reads {@code i2} or {@code i3} alone), {@code i2} and {@code i3}
 * become one loop of 3136 iterations addressed {@code 3136 i1 + j}. A loop of 56 is no multiple of a 16-lane
 * vector and would stay scalar; one of 3136 is.
 *
 * <p>A pair merges only when it is exact: after substituting {@code a = j / Eb, b = j % Eb}, the simplifier must
 * have removed every division and remainder of the new index, in every expression of the body (indices, gates,
 * values). Anything else (a window's strided read, a gate on one of the two, a broadcast along one) keeps the
 * pair apart. Loops with a symbolic limit and reductions never merge; the iterations run in the same order.
 */
public final class OutputLoopMerging {
    private static final Set<Op> DIVISIONS = EnumSet.of(Op.DIV, Op.MOD, Op.FLOORDIV, Op.FLOORMOD);

    private OutputLoopMerging() {}

    /** {@code program} with its mergeable output loops merged, or {@code program} itself when none merge. */
    public static KernelProgram merge(KernelProgram program) {
        List<Stmt.Loop> nest = new ArrayList<>();
        Stmt.Block b = program.body();
        while (b.body().size() == 1 && b.body().getFirst() instanceof Stmt.Loop l && l.kind() != Stmt.LoopKind.REDUCE) {
            nest.add(l);
            b = l.body();
        }
        if (nest.size() < 2) return program;
        Stmt.Block inner = b;
        // loops as (index, kind) from the outside in; merging from the inside out lets a merged run grow outwards
        List<Variable> indices = new ArrayList<>();
        List<Stmt.LoopKind> kinds = new ArrayList<>();
        List<Variable> limits = new ArrayList<>();
        List<Integer> steps = new ArrayList<>();
        for (Stmt.Loop l : nest) {
            indices.add(l.index());
            kinds.add(l.kind());
            limits.add(l.limit());
            steps.add(l.limitStep());
        }
        boolean changed = false;
        for (int k = indices.size() - 1; k >= 1; k--) {
            Variable a = indices.get(k - 1), in = indices.get(k);
            if (limits.get(k - 1) != null || limits.get(k) != null || kinds.get(k - 1) != kinds.get(k)) continue;
            long ea = a.max() + 1, eb = in.max() + 1;
            long total;
            try {
                total = Math.multiplyExact(ea, eb);
            } catch (ArithmeticException e) {
                continue;
            }
            Variable j = new Variable(a.name() + "_" + in.name(), 0, total - 1);
            UOp jv = UOp.variable(j);
            Stmt.Block merged = Optimizer.substitute(inner, Map.of(a, jv.div(eb), in, jv.mod(eb)));
            if (!exact(merged, j)) continue;
            inner = merged;
            indices.remove(k);
            kinds.remove(k);
            limits.remove(k);
            steps.remove(k);
            indices.set(k - 1, j);
            changed = true;
        }
        if (!changed) return program;
        for (int k = indices.size() - 1; k >= 0; k--) {
            inner = new Stmt.Block(List.of(new Stmt.Loop(indices.get(k), kinds.get(k), inner, limits.get(k), steps.get(k))));
        }
        return new KernelProgram(program.name(), program.params(), program.sizes(), program.variables(), inner, program.opts());
    }

    /** Whether no expression of {@code body} divides {@code j} or takes its remainder. */
    static boolean exact(Stmt.Block body, Variable j) {
        boolean[] ok = {true};
        Optimizer.walk(body, s -> {
            for (UOp e : Optimizer.expressions(s)) {
                for (UOp u : e.toposort()) {
                    if (DIVISIONS.contains(u.op()) && u.src(0).variables().contains(j)) ok[0] = false;
                }
            }
        });
        return ok[0];
    }
}

package dev.kiln.codegen;

import dev.kiln.ir.UOp;
import dev.kiln.types.Variable;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * Merges a reduce loop with the reduce loop that is its whole body where every expression reads the two only as one
 * run: a global average pool over {@code [1000, 13, 13]} sums {@code 169 i + 13 r0 + r1} in two loops of 13, which
 * no vector width divides, and becomes one loop of 169 read at {@code 169 i + r}, which GROUP vectorises. The
 * iterations run in the same order, so every sum is the same, bit for bit.
 *
 * <p>A pair merges only when it is exact, as {@link OutputLoopMerging} decides it: after substituting
 * {@code a = r / Eb, b = r % Eb}, no division or remainder of {@code r} is left. A window's reads (a convolution's
 * {@code (y + ky) W + x + kx}), a gate on one of the two, or a symbolic limit keep the pair apart.
 */
public final class ReduceLoopMerging {
    private ReduceLoopMerging() {}

    /** {@code program} with its mergeable reduce loops merged, or {@code program} itself when none merge. */
    public static KernelProgram merge(KernelProgram program) {
        Stmt.Block body = block(program.body());
        return body.equals(program.body()) ? program
                : new KernelProgram(program.name(), program.params(), program.sizes(), program.variables(), body, program.opts());
    }

    private static Stmt.Block block(Stmt.Block b) {
        List<Stmt> out = new ArrayList<>(b.body().size());
        boolean changed = false;
        for (Stmt s : b.body()) {
            Stmt t = s instanceof Stmt.Loop l ? loop(l) : s;
            out.add(t);
            changed |= t != s;
        }
        return changed ? new Stmt.Block(out) : b;
    }

    private static Stmt.Loop loop(Stmt.Loop l) {
        Stmt.Block body = block(l.body());
        if (l.kind() == Stmt.LoopKind.REDUCE && l.limit() == null && body.body().size() == 1 && body.body().getFirst() instanceof Stmt.Loop in
                && in.kind() == Stmt.LoopKind.REDUCE && in.limit() == null) {
            long ea = l.extent(), eb = in.extent();
            if (ea <= Long.MAX_VALUE / eb) {
                Variable r = new Variable(l.index().name() + "_" + in.index().name(), 0, ea * eb - 1);
                UOp rv = UOp.variable(r);
                Stmt.Block merged = Optimizer.substitute(in.body(), Map.of(l.index(), rv.div(eb), in.index(), rv.mod(eb)));
                if (OutputLoopMerging.exact(merged, r)) return new Stmt.Loop(r, Stmt.LoopKind.REDUCE, merged);
            }
        }
        return body == l.body() ? l : l.with(l.kind(), body);
    }
}

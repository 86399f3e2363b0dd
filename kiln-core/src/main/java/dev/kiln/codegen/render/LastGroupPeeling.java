package dev.kiln.codegen.render;

import dev.kiln.codegen.Optimizer;
import dev.kiln.codegen.Stmt;
import dev.kiln.ir.GraphRewriter;
import dev.kiln.ir.Op;
import dev.kiln.ir.PatternMatcher;
import dev.kiln.ir.Symbolic;
import dev.kiln.ir.UOp;
import dev.kiln.types.DType;
import dev.kiln.types.Variable;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * A loop split in groups of {@code s} lanes whose last group runs past where the lanes end: up to a symbolic limit
 * {@code n} (UPCAST or GROUP of a loop over a symbolic size; the loop's {@code limitStep} is s), or past a constant
 * extent n that s does not divide (GROUP with a remainder). In the groups below {@code n / s} every lane
 * {@code i * s + g} ({@code g < s}) is below n, so the gates {@code i * s + g < n} the optimiser put on the lanes'
 * loads, checks and stores ({@code Optimizer}'s live lanes) hold there and are replaced by true. A renderer runs those
 * groups with that body and the last group with the gated one.
 *
 * @param index  the whole groups' loop variable, whose range stops before the last group (so range analysis proves
 *               the reads the last group's gates guarded in bounds, and the C code has no check left to stop a compiler)
 * @param whole  the body with the lane gates true, over {@code index}
 * @param groups where the whole groups end: a symbolic limit's {@code n / s} is {@code limit} divided by {@code step}
 *               at run time ({@code limit} not null), a constant extent's is {@code groups}
 */
record LastGroupPeeling(Variable index, Stmt.Block whole, Variable limit, int step, long groups) {
    /** The peeling of {@code l}, or null when its last group has no lane gates to drop. */
    static LastGroupPeeling of(Stmt.Loop l) {
        // groups past a constant extent come from GROUP only (its outer loop is a reduce loop): other loops are not read
        if (l.limit() == null ? l.kind() != Stmt.LoopKind.REDUCE : l.limitStep() <= 1) return null;
        Map<UOp, UOp> gates = new HashMap<>();
        long[] end = {-1, -1}; // a constant end: n and s
        collect(l.body(), l, gates, end);
        if (gates.isEmpty()) return null;
        PatternMatcher pm = PatternMatcher.replacing(gates);
        Map<UOp, UOp> memo = new HashMap<>();
        Stmt.Block whole = map(l.body(), e -> memo.computeIfAbsent(e, x -> Symbolic.simplify(GraphRewriter.substitute(x, pm))));
        long lastWhole = l.limit() != null ? l.limit().max() / l.limitStep() - 1 : end[0] / end[1] - 1;
        if (lastWhole < 0) return null; // no group is ever whole
        Variable index = new Variable(l.index().name(), 0, Math.min(lastWhole, l.extent() - 1));
        whole = Optimizer.substitute(whole, Map.of(l.index(), UOp.variable(index)));
        return l.limit() != null ? new LastGroupPeeling(index, whole, l.limit(), l.limitStep(), -1)
                : new LastGroupPeeling(index, whole, null, (int) end[1], end[0] / end[1]);
    }

    /** Adds each lane gate of the loop's index read in {@code b} (the same constant end for all, else none). */
    private static void collect(Stmt.Block b, Stmt.Loop l, Map<UOp, UOp> gates, long[] end) {
        UOp yes = UOp.constant(DType.BOOL, 1);
        for (Stmt s : b.body()) {
            switch (s) {
                case Stmt.Block x -> collect(x, l, gates, end);
                case Stmt.Loop x -> collect(x.body(), l, gates, end);
                default -> {
                    for (UOp e : Optimizer.expressions(s)) for (UOp u : e.toposort()) if (isLaneGate(u, l, end)) gates.put(u, yes);
                }
            }
        }
    }

    /**
     * Whether {@code u} is {@code CMPLT(i * s + g, n)} of the loop's index i, g a variable below s, and n the loop's
     * symbolic limit (s its limit step) or a constant that the loop's groups run past ({@code (extent - 1) s < n <
     * extent s}, recorded in {@code end}; a second, different end makes no gate).
     */
    private static boolean isLaneGate(UOp u, Stmt.Loop l, long[] end) {
        if (u.op() != Op.CMPLT || u.src(0).op() != Op.ADD) return false;
        boolean symbolic = l.limit() != null && l.limitStep() > 1 && u.src(1).op() == Op.DEFINE_VAR && l.limit().equals(u.src(1).arg());
        boolean constant = l.limit() == null && u.src(1).isConst() && u.src(1).dtype().isInt();
        if (!symbolic && !constant) return false;
        UOp lane = u.src(0);
        for (int k = 0; k < 2; k++) {
            UOp scaled = lane.src(k), g = lane.src(1 - k);
            if (g.op() != Op.DEFINE_VAR || !(g.arg() instanceof Variable v) || v.min() < 0 || scaled.op() != Op.MUL || !scaled.src(1).isConst()
                    || scaled.src(0).op() != Op.DEFINE_VAR || !l.index().equals(scaled.src(0).arg())) continue;
            long s = scaled.src(1).constLong();
            if (v.max() >= s) continue;
            if (symbolic) return s == l.limitStep();
            long n = u.src(1).constLong();
            if (s < 2 || n % s == 0 || n <= (l.extent() - 1) * s || n >= l.extent() * s) continue;
            if (end[0] >= 0 && (end[0] != n || end[1] != s)) return false;
            end[0] = n;
            end[1] = s;
            return true;
        }
        return false;
    }

    private static Stmt.Block map(Stmt.Block b, java.util.function.UnaryOperator<UOp> f) {
        List<Stmt> out = new ArrayList<>(b.body().size());
        for (Stmt s : b.body()) {
            out.add(switch (s) {
                case Stmt.Block x -> map(x, f);
                case Stmt.Loop x -> x.with(x.kind(), map(x.body(), f));
                case Stmt.Define d -> new Stmt.Define(d.register(), f.apply(d.init()));
                case Stmt.Accumulate a -> new Stmt.Accumulate(a.register(), a.kind(), f.apply(a.value()));
                case Stmt.Store st -> {
                    UOp gate = st.gate() == null ? null : f.apply(st.gate());
                    yield new Stmt.Store(st.param(), f.apply(st.index()), f.apply(st.value()), gate != null && gate.isConst() && gate.constLong() != 0 ? null : gate);
                }
            });
        }
        return new Stmt.Block(out);
    }
}

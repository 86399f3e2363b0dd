package dev.kiln.codegen.render;

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
 * The body of a loop split in groups of {@code s} lanes up to a symbolic limit {@code n} (UPCAST or GROUP of a loop
 * over a symbolic size), for the groups below {@code n / s}: there every lane {@code i * s + g} ({@code g < s}) is below
 * the limit, so the gates {@code i * s + g < n} the optimiser put on the lanes' loads, checks and stores
 * ({@code Optimizer}'s live lanes) hold, and are replaced by true. A renderer runs those groups with this body and
 * the last group with the gated one.
 */
final class LastGroupPeeling {
    private LastGroupPeeling() {}

    /** {@code l}'s body with its lane gates true, or null when {@code l} has no limit, no groups or no such gate. */
    static Stmt.Block wholeGroups(Stmt.Loop l) {
        if (l.limit() == null || l.limitStep() <= 1) return null;
        Map<UOp, UOp> gates = new HashMap<>();
        UOp yes = UOp.constant(DType.BOOL, 1);
        collect(l.body(), l, gates, yes);
        if (gates.isEmpty()) return null;
        PatternMatcher pm = PatternMatcher.replacing(gates);
        Map<UOp, UOp> memo = new HashMap<>();
        return map(l.body(), e -> memo.computeIfAbsent(e, x -> Symbolic.simplify(GraphRewriter.substitute(x, pm))));
    }

    /** Adds each lane gate {@code CMPLT(i * s + g, n)} of the loop's index i (g a variable below s) read in {@code b}. */
    private static void collect(Stmt.Block b, Stmt.Loop l, Map<UOp, UOp> gates, UOp yes) {
        for (Stmt s : b.body()) {
            switch (s) {
                case Stmt.Block x -> collect(x, l, gates, yes);
                case Stmt.Loop x -> collect(x.body(), l, gates, yes);
                default -> {
                    for (UOp e : expressions(s)) for (UOp u : e.toposort()) if (isLaneGate(u, l)) gates.put(u, yes);
                }
            }
        }
    }

    private static boolean isLaneGate(UOp u, Stmt.Loop l) {
        if (u.op() != Op.CMPLT || !(u.src(1).op() == Op.DEFINE_VAR && l.limit().equals(u.src(1).arg()))) return false;
        UOp lane = u.src(0);
        if (lane.op() != Op.ADD) return false;
        for (int k = 0; k < 2; k++) {
            UOp scaled = lane.src(k), g = lane.src(1 - k);
            if (g.op() == Op.DEFINE_VAR && g.arg() instanceof Variable v && v.min() >= 0 && v.max() < l.limitStep()
                    && scaled.op() == Op.MUL && scaled.src(1).isConst() && scaled.src(1).constLong() == l.limitStep()
                    && scaled.src(0).op() == Op.DEFINE_VAR && l.index().equals(scaled.src(0).arg())) return true;
        }
        return false;
    }

    private static List<UOp> expressions(Stmt s) {
        return switch (s) {
            case Stmt.Define d -> List.of(d.init());
            case Stmt.Accumulate a -> List.of(a.value());
            case Stmt.Store st -> st.gate() == null ? List.of(st.index(), st.value()) : List.of(st.index(), st.value(), st.gate());
            default -> List.of();
        };
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

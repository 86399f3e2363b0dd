package dev.kiln.codegen;

import dev.kiln.ir.Op;
import dev.kiln.ir.UOp;
import dev.kiln.types.Variable;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.OptionalLong;

/**
 * The range of an index over the iterations where its load's gate holds. Range analysis alone bounds an index over
 * every iteration, and a padded window's index reaches below the buffer exactly where its gate is false (the row
 * above the image: {@code row = r0 + 2 * oh - 1} is -1 at the first output row, and the gate is {@code 0 < r0 + 2 * oh}),
 * so a renderer that must prove its reads in range would check each one at run time, and a C compiler vectorises no
 * loop with such checks (a padded 3 x 3 max pooling ran 30 times slower on CLANG than on the CPU device).
 *
 * <p>A gate is read as a conjunction; each conjunct {@code c < e} or {@code e < c} with a constant {@code c} and an
 * expression {@code e} in which every variable moves by a constant stride bounds {@code e}. Where the index moves
 * with each of {@code e}'s variables by the same multiple {@code k} of {@code e}'s stride, the index is {@code k * e}
 * plus a part that does not depend on those variables, and {@code e}'s bound gives the index one; conjuncts over
 * disjoint variables (a window's row and column) bound it together. Other conjuncts are ignored, which only loses
 * precision.
 */
public final class GatedBounds {
    private GatedBounds() {}

    /** {@code [min, max]} of {@code index} where {@code gate} holds (every iteration for a null gate). */
    public static long[] of(UOp index, UOp gate) {
        long lo = index.vmin(), hi = index.vmax();
        if (gate == null) return new long[] {lo, hi};
        List<Bound> lower = new ArrayList<>(), upper = new ArrayList<>();
        for (UOp c : conjuncts(gate)) {
            if (c.op() != Op.CMPLT || !c.src(0).dtype().isInt()) continue; // an index condition, not a comparison of values
            boolean below = c.src(0).isConst(); // c < e: e >= c + 1; else e < c: e <= c - 1
            if (below == c.src(1).isConst()) continue;
            UOp e = below ? c.src(1) : c.src(0);
            OptionalLong k = multiple(index, e);
            if (k.isEmpty() || k.getAsLong() == 0) continue;
            long c0 = below ? c.src(0).constLong() : c.src(1).constLong();
            if (c0 == (below ? Long.MAX_VALUE : Long.MIN_VALUE)) continue; // no e passes it: nothing to bound by
            Bound b = new Bound(e, k.getAsLong(), below ? c0 + 1 : c0 - 1);
            // k * e is at least (at most) k * bound when k and the side agree in sign
            (below == b.k > 0 ? lower : upper).add(b);
        }
        lo = Math.max(lo, combined(index, lower, true));
        hi = Math.min(hi, combined(index, upper, false));
        return new long[] {lo, hi};
    }

    /** A conjunct's expression {@code e}, the index's multiple {@code k} of it, and the bound the gate puts on {@code e}. */
    private record Bound(UOp e, long k, long bound) {}

    /**
     * The least (greatest) value of {@code index} where the bounds hold: with the bounds whose expressions share no
     * variable, {@code index = sum(k * e) + rest}, rest free of their variables (the index moves with each of them
     * by a constant, the matching multiple of e's stride, so it is affine in them); so a padded window's row and
     * column conditions bound it together, as neither alone does at a corner.
     */
    private static long combined(UOp index, List<Bound> bounds, boolean least) {
        Map<Object, UOp> atZero = new HashMap<>();
        long sum = 0;
        for (Bound b : bounds) {
            if (b.e.variables().stream().anyMatch(atZero::containsKey)) continue;
            Map<Object, UOp> own = new HashMap<>();
            for (Variable v : b.e.variables()) own.put(v, UOp.index(0));
            UOp e0 = Optimizer.substitute(b.e, own);
            if (!e0.isConst()) continue;
            try {
                sum = Math.addExact(sum, Math.multiplyExact(b.k, Math.subtractExact(b.bound, e0.constLong())));
            } catch (ArithmeticException overflow) {
                continue; // a bound past the range of long bounds nothing
            }
            atZero.putAll(own);
        }
        long none = least ? Long.MIN_VALUE : Long.MAX_VALUE;
        if (atZero.isEmpty()) return none;
        UOp rest = Optimizer.substitute(index, atZero);
        try {
            return Math.addExact(sum, least ? rest.vmin() : rest.vmax());
        } catch (ArithmeticException overflow) {
            return none;
        }
    }

    /** {@code k} where {@code index} moves by {@code k} times {@code e}'s stride with each of {@code e}'s variables. */
    private static OptionalLong multiple(UOp index, UOp e) {
        Long k = null;
        for (Variable v : e.variables()) {
            OptionalLong se = Heuristics.stride(e, v), si = Heuristics.stride(index, v);
            if (se.isEmpty() || si.isEmpty() || se.getAsLong() == 0 || si.getAsLong() % se.getAsLong() != 0) return OptionalLong.empty();
            long m = si.getAsLong() / se.getAsLong();
            if (k != null && k != m) return OptionalLong.empty();
            k = m;
        }
        return k == null ? OptionalLong.empty() : OptionalLong.of(k);
    }

    private static List<UOp> conjuncts(UOp gate) {
        List<UOp> out = new ArrayList<>();
        List<UOp> todo = new ArrayList<>(List.of(gate));
        while (!todo.isEmpty()) {
            UOp g = todo.removeLast();
            if (g.op() == Op.AND && g.dtype().isBool()) todo.addAll(g.src());
            else out.add(g);
        }
        return out;
    }
}

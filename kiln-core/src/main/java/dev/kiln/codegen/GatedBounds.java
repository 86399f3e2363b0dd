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
 * plus a part that does not depend on those variables, and {@code e}'s bound gives the index one. Other conjuncts
 * are ignored, which only loses precision.
 */
public final class GatedBounds {
    private GatedBounds() {}

    /** {@code [min, max]} of {@code index} where {@code gate} holds (every iteration for a null gate). */
    public static long[] of(UOp index, UOp gate) {
        long lo = index.vmin(), hi = index.vmax();
        if (gate == null) return new long[] {lo, hi};
        for (UOp c : conjuncts(gate)) {
            if (c.op() != Op.CMPLT) continue;
            boolean below = c.src(0).isConst(); // c < e: e >= c + 1; else e < c: e <= c - 1
            if (below == c.src(1).isConst()) continue;
            UOp e = below ? c.src(1) : c.src(0);
            long bound = below ? c.src(0).constLong() + 1 : c.src(1).constLong() - 1;
            OptionalLong k = multiple(index, e);
            if (k.isEmpty() || k.getAsLong() == 0) continue;
            // index = k * e + rest, rest free of e's variables: its range with them at 0, less k * e there
            Map<Object, UOp> atZero = new HashMap<>();
            for (Variable v : e.variables()) atZero.put(v, UOp.index(0));
            UOp e0 = Optimizer.substitute(e, atZero);
            if (!e0.isConst()) continue;
            UOp rest = Optimizer.substitute(index, atZero);
            long kk = k.getAsLong(), shift = kk * e0.constLong();
            // k * e is at least (at most) k * bound when k and the side agree in sign
            if (below == kk > 0) lo = Math.max(lo, kk * bound + rest.vmin() - shift);
            else hi = Math.min(hi, kk * bound + rest.vmax() - shift);
        }
        return new long[] {lo, hi};
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

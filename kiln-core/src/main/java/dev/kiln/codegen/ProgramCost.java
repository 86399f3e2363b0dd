package dev.kiln.codegen;

import dev.kiln.ir.Op;
import dev.kiln.ir.UOp;

import java.util.Collections;
import java.util.IdentityHashMap;
import java.util.Set;

/**
 * Work and traffic of a kernel program, for the profiler's GFLOP/s and GB/s: arithmetic ops executed
 * (each arithmetic op counts one, a multiply-add two; selects, comparisons and logic on masks count nothing, so a
 * padded convolution's gates do not inflate its rate) and bytes of every parameter buffer (each read or
 * written once — the ideal traffic, not cache behaviour).
 */
public final class ProgramCost {
    /** Ops that move or select values or compute masks: no floating-point or integer arithmetic. */
    private static final Set<Op> NOT_ARITHMETIC = java.util.EnumSet.of(Op.CAST, Op.BITCAST, Op.WHERE, Op.CMPLT, Op.CMPNE, Op.CMPEQ, Op.CHECK);

    private ProgramCost() {}

    public static long flops(KernelProgram p) { return flops(p.body(), 1); }

    public static long bytes(KernelProgram p) {
        long b = 0;
        for (int i = 0; i < p.params().size(); i++) b += p.params().get(i).dtype().byteSize(p.sizes().get(i));
        return b;
    }

    private static long flops(Stmt s, long trips) {
        return switch (s) {
            case Stmt.Block b -> b.body().stream().mapToLong(x -> flops(x, trips)).sum();
            case Stmt.Loop l -> flops(l.body(), trips * l.extent());
            case Stmt.Define d -> trips * ops(d.init());
            case Stmt.Accumulate a -> trips * (ops(a.value()) + 1);
            case Stmt.Store st -> trips * ops(st.value());
        };
    }

    /** Arithmetic nodes of an expression (shared subexpressions once; index math and loads excluded). */
    private static long ops(UOp value) {
        Set<UOp> seen = Collections.newSetFromMap(new IdentityHashMap<>());
        long n = 0;
        for (UOp u : value.toposort()) {
            if (!seen.add(u) || !u.op().isElementwise() || NOT_ARITHMETIC.contains(u.op()) || u.dtype().isBool()) continue;
            if (u.shape().rank() == 0 && !u.dtype().isFloat() && isIndexMath(u)) continue;
            n++;
        }
        return n;
    }

    private static boolean isIndexMath(UOp u) {
        for (UOp s : u.toposort()) if (s.op() == Op.LOAD) return false;
        return true;
    }
}

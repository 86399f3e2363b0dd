package dev.kiln.cpu;

import dev.kiln.codegen.Contraction;
import dev.kiln.codegen.StoreEpilogue;

/**
 * A {@link StoreEpilogue} at fixed extents for {@link PlaneStencil}, which applies it to each row of sums as it stores
 * them: each addend's element for outer point {@code o} and row {@code r} is {@code outer[o] + row[r]}, the same along
 * the row (a bias per channel: one scalar per row). Saves the generated epilogue's separate pass over the output.
 * Bounds given as tensors (ONNX Clip's inputs) are read when each run begins.
 */
final class StencilEpilogue {
    final int terms;
    final int param0, param1;
    final long[] outer0, row0, outer1, row1;
    final boolean perRow0, perRow1;
    final boolean hasLower, hasUpper;
    final float lower, upper;
    /** Where a bound is read when the run begins, or null where it is the constant above. */
    final StoreEpilogue.Bound lowerFrom, upperFrom;

    private StencilEpilogue(StoreEpilogue e, long[][] outer, long[][] row, boolean[] perRow) {
        terms = e.addends().size();
        param0 = terms > 0 ? e.addends().get(0).param() : -1;
        param1 = terms > 1 ? e.addends().get(1).param() : -1;
        outer0 = outer[0];
        outer1 = outer[1];
        row0 = row[0];
        row1 = row[1];
        perRow0 = perRow[0];
        perRow1 = perRow[1];
        hasLower = e.hasLower();
        hasUpper = e.hasUpper();
        lower = e.lower();
        upper = e.upper();
        lowerFrom = e.lowerFrom();
        upperFrom = e.upperFrom();
    }

    /** The lower bound for a run over {@code buffers}, -inf where there is none (max with it changes no value). */
    float lower(java.lang.foreign.MemorySegment[] buffers) {
        if (!hasLower) return Float.NEGATIVE_INFINITY;
        return lowerFrom == null ? lower : buffers[lowerFrom.param()].getAtIndex(java.lang.foreign.ValueLayout.JAVA_FLOAT_UNALIGNED, lowerFrom.element());
    }

    /**
     * The upper bound for a run over {@code buffers}, +inf where there is none, or NaN where one read from a buffer is
     * not {@code Math.min}'s ({@link StoreEpilogue#boundsApply}): then the generated epilogue runs instead.
     */
    float upper(java.lang.foreign.MemorySegment[] buffers) {
        if (!hasUpper) return Float.POSITIVE_INFINITY;
        if (upperFrom == null) return upper;
        float u = buffers[upperFrom.param()].getAtIndex(java.lang.foreign.ValueLayout.JAVA_FLOAT_UNALIGNED, upperFrom.element());
        return StoreEpilogue.boundsApply(u) ? u : Float.NaN;
    }

    /** What {@link #of} found: the epilogue, or why it is not applied as the stencil stores. */
    record Found(StencilEpilogue epilogue, String whyNot) {}

    /** {@code e} at extents {@code ext}, whose addends must step by 0 or 1 along the stencil's {@code column}. */
    static Found of(StoreEpilogue e, long[] ext, int column, int[] outerVars, int[] rowVars) {
        long[][] outer = new long[2][], row = new long[2][];
        boolean[] perRow = new boolean[2];
        for (int i = 0; i < e.addends().size(); i++) {
            Contraction.Operand a = e.addends().get(i);
            long step = a.stride(column);
            // a residual: its vectors would be chosen at a branch in the store (boxed), so the epilogue runs after
            if (step != 0) return new Found(null, "an addend that varies along the output's columns (a residual)");
            perRow[i] = true;
            outer[i] = GemmSide.table(outerVars, ext, a.strides());
            for (int o = 0; o < outer[i].length; o++) outer[i][o] += a.offset();
            row[i] = GemmSide.table(rowVars, ext, a.strides());
        }
        return new Found(new StencilEpilogue(e, outer, row, perRow), null);
    }
}

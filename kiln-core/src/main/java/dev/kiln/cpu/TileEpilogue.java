package dev.kiln.cpu;

import dev.kiln.codegen.Contraction;
import dev.kiln.codegen.StoreEpilogue;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.VectorMask;
import jdk.incubator.vector.VectorSpecies;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.util.List;

/**
 * A {@link StoreEpilogue} at fixed run-time extents, applied by the GEMM as it stores a tile's last K block: each
 * addend's address tables (as C's: batch, row, column parts), and per column how many columns from it on the addend
 * reads adjacent elements. A bias per output channel is one scalar per row of C; a bias per column or a residual is
 * one vector per vector of C. Saves the separate pass over the output that the generated epilogue makes.
 */
final class TileEpilogue {
    private static final VectorSpecies<Float> S = GemmMicroKernel.S;
    private static final int L = GemmMicroKernel.L, NR = GemmMicroKernel.NR;
    private static final ValueLayout.OfFloat F = ValueLayout.JAVA_FLOAT_UNALIGNED;
    private static final ByteOrder LE = ByteOrder.LITTLE_ENDIAN;

    private final int terms;
    private final int param0, param1;
    private final long[] batch0, row0, col0, batch1, row1, col1;
    /** {@code contiguous[n]}: columns n, n+1, ... whose addend addresses step by 1 (0 where the addend is one per row). */
    private final int[] contiguous0, contiguous1;
    private final boolean perRow0, perRow1;
    /** The addend {@link GemmMicroKernel#wideIntoRun} reads along the columns after a per-row one: 0 or 1, or -1 for none. */
    private final int runTerm;
    private final boolean hasLower, hasUpper;
    private final float lower, upper;
    /** Where the bounds are read when a run begins ({@link #withBounds}), or null where they are the constants above. */
    private final StoreEpilogue.Bound lowerFrom, upperFrom;
    private final long[] min, max;

    TileEpilogue(StoreEpilogue e, int[] batchVars, int[] mVars, int[] nVars, long[] ext) {
        terms = e.addends().size();
        hasLower = e.hasLower();
        hasUpper = e.hasUpper();
        lower = e.lower();
        upper = e.upper();
        lowerFrom = e.lowerFrom();
        upperFrom = e.upperFrom();
        min = new long[2];
        max = new long[2];
        Contraction.Operand a0 = terms > 0 ? e.addends().get(0) : null, a1 = terms > 1 ? e.addends().get(1) : null;
        param0 = a0 == null ? -1 : a0.param();
        param1 = a1 == null ? -1 : a1.param();
        batch0 = a0 == null ? null : withOffset(GemmSide.table(batchVars, ext, a0.strides()), a0.offset());
        row0 = a0 == null ? null : GemmSide.table(mVars, ext, a0.strides());
        col0 = a0 == null ? null : GemmSide.table(nVars, ext, a0.strides());
        batch1 = a1 == null ? null : withOffset(GemmSide.table(batchVars, ext, a1.strides()), a1.offset());
        row1 = a1 == null ? null : GemmSide.table(mVars, ext, a1.strides());
        col1 = a1 == null ? null : GemmSide.table(nVars, ext, a1.strides());
        perRow0 = col0 != null && allZero(col0);
        perRow1 = col1 != null && allZero(col1);
        runTerm = terms == 1 && !perRow0 ? 0 : terms == 2 && perRow0 && !perRow1 ? 1 : -1;
        contiguous0 = contiguous(col0);
        contiguous1 = contiguous(col1);
        if (a0 != null) extremes(0, batch0, row0, col0);
        if (a1 != null) extremes(1, batch1, row1, col1);
    }

    /** {@code t} with the bounds {@code lower} and {@code upper} (where it has them), read from buffers when a run begins. */
    private TileEpilogue(TileEpilogue t, float lower, float upper) {
        terms = t.terms;
        param0 = t.param0;
        param1 = t.param1;
        batch0 = t.batch0;
        row0 = t.row0;
        col0 = t.col0;
        batch1 = t.batch1;
        row1 = t.row1;
        col1 = t.col1;
        contiguous0 = t.contiguous0;
        contiguous1 = t.contiguous1;
        perRow0 = t.perRow0;
        perRow1 = t.perRow1;
        runTerm = t.runTerm;
        hasLower = t.hasLower;
        hasUpper = t.hasUpper;
        this.lower = lower;
        this.upper = upper;
        lowerFrom = null;
        upperFrom = null;
        min = t.min;
        max = t.max;
    }

    /** Whether a bound is read from a buffer when a run begins ({@link GemmPlan#forRun}). */
    boolean readsBounds() { return lowerFrom != null || upperFrom != null; }

    /** The lower bound for a run over {@code buffers}, negative infinity without one. */
    float lowerOf(MemorySegment[] buffers) {
        if (!hasLower) return Float.NEGATIVE_INFINITY;
        return lowerFrom == null ? lower : buffers[lowerFrom.param()].getAtIndex(F, lowerFrom.element());
    }

    /**
     * The upper bound for a run over {@code buffers}, positive infinity without one, or NaN where one read from a buffer
     * is not {@code Math.min}'s ({@link StoreEpilogue#boundsApply}).
     */
    float upperOf(MemorySegment[] buffers) {
        if (!hasUpper) return Float.POSITIVE_INFINITY;
        if (upperFrom == null) return upper;
        float u = buffers[upperFrom.param()].getAtIndex(F, upperFrom.element());
        return StoreEpilogue.boundsApply(u) ? u : Float.NaN;
    }

    /** This epilogue with its bounds as given (from {@link #lowerOf} and {@link #upperOf}). */
    TileEpilogue withBounds(float lower, float upper) { return new TileEpilogue(this, lower, upper); }

    private static long[] withOffset(long[] t, long offset) {
        for (int i = 0; i < t.length; i++) t[i] += offset;
        return t;
    }

    /** The epilogue that adds nothing and clamps nothing: a plain store. */
    static final TileEpilogue NONE = new TileEpilogue(new StoreEpilogue(List.of(), false, 0, false, 0), new int[0], new int[0], new int[0], new long[0]);

    private static boolean allZero(long[] t) {
        for (long x : t) if (x != 0) return false;
        return true;
    }

    private static int[] contiguous(long[] col) {
        if (col == null) return null;
        int[] c = new int[col.length];
        for (int j = col.length - 1; j >= 0; j--) c[j] = j + 1 < col.length && col[j + 1] == col[j] + 1 ? c[j + 1] + 1 : 1;
        return c;
    }

    private void extremes(int a, long[] b, long[] r, long[] c) {
        if (b.length == 0 || r.length == 0 || c.length == 0) {
            min[a] = Long.MAX_VALUE;
            max[a] = Long.MIN_VALUE;
            return;
        }
        min[a] = GemmSide.min(b) + GemmSide.min(r) + GemmSide.min(c);
        max[a] = GemmSide.max(b) + GemmSide.max(r) + GemmSide.max(c);
    }

    /**
     * Whether a full row of a tile, NR columns from column {@code n}, can be stored from the registers
     * ({@link GemmMicroKernel#wideInto}): the epilogue adds at most a value per row of C (a bias per output channel)
     * and then at most one addend whose elements are adjacent along those columns (a residual), in that order.
     */
    boolean storableFromRegisters(int n) {
        if (runTerm >= 0) return (runTerm == 0 ? contiguous0 : contiguous1)[n] >= NR;
        return terms == 0 || terms == 1 && perRow0;
    }

    /** The value added to row {@code r} of batch {@code batch} by a per-row addend: -0.0 (nothing) without one. */
    float rowAddend(int batch, int r, MemorySegment[] buffers) {
        return terms > 0 && perRow0 ? buffers[param0].get(F, 4 * (batch0[batch] + row0[r] + col0[0])) : -0.0f;
    }

    /** The addend read along the columns ({@link #storableFromRegisters}: a residual), or null without one. */
    MemorySegment runAddend(MemorySegment[] buffers) {
        return runTerm < 0 ? null : buffers[runTerm == 0 ? param0 : param1];
    }

    /**
     * The byte offset of {@link #runAddend}'s element for row {@code r} of batch {@code batch}, column 0's place: add
     * {@link #runAddendColumn} for column n.
     */
    long runAddendRow(int batch, int r) {
        return runTerm == 1 ? 4 * (batch1[batch] + row1[r]) : 4 * (batch0[batch] + row0[r]);
    }

    /** The bytes column {@code n} adds to {@link #runAddendRow}. */
    long runAddendColumn(int n) { return 4 * (runTerm == 1 ? col1[n] : col0[n]); }

    /** The lower bound, or negative infinity (which clamps nothing) without one. */
    float lowerOrNone() { return hasLower ? lower : Float.NEGATIVE_INFINITY; }

    /** The upper bound, or positive infinity without one. */
    float upperOrNone() { return hasUpper ? upper : Float.POSITIVE_INFINITY; }

    /** Throws {@link IndexOutOfBoundsException} when an addend's element lies outside its buffer. */
    void checkBounds(MemorySegment[] buffers) {
        for (int a = 0; a < terms; a++) {
            if (min[a] > max[a]) continue;
            int param = a == 0 ? param0 : param1;
            long size = buffers[param].byteSize() / 4;
            if (min[a] < 0 || max[a] >= size) {
                throw new IndexOutOfBoundsException("contraction epilogue (parameter " + param + ") reads elements " + min[a] + ".." + max[a]
                        + " of a buffer of " + size + " floats");
            }
        }
    }

    /**
     * Columns {@code [j, j + len)} of the tile's {@code mr} rows in {@code tmp} (row i at {@code i * NR}), C columns
     * {@code cCol[n..n+len)} of rows {@code cRow[m..m+mr)}: the sums (plus C's, after the first K block), the addends,
     * the bounds, stored. Whole vectors where C and every addend read along the columns are adjacent, the rest one by
     * one, in the same order of operations either way.
     */
    void store(float[] tmp, int j, MemorySegment c, long cBase, long[] cRow, int m, int mr, long[] cCol, int n, int len, boolean cContiguous,
               boolean first, int batch, MemorySegment[] buffers) {
        MemorySegment s0 = terms > 0 ? buffers[param0] : null, s1 = terms > 1 ? buffers[param1] : null;
        boolean vectors = cContiguous && (terms < 1 || perRow0 || contiguous0[n] >= len) && (terms < 2 || perRow1 || contiguous1[n] >= len);
        // the row loops are methods of their own: with them inline, C1 once ran out of registers on this method, C2
        // did not compile it in time, and every vector of the tiles was boxed (ZeroAllocationTest: 80 KB a run)
        for (int i = 0; i < mr; i++) {
            int r = m + i, t = i * NR + j;
            long row = cBase + cRow[r];
            long base0 = terms > 0 ? batch0[batch] + row0[r] : 0, base1 = terms > 1 ? batch1[batch] + row1[r] : 0;
            if (vectors) {
                storeVectors(tmp, t, c, 4 * (row + cCol[n]), len, first, s0, terms > 0 ? 4 * (base0 + col0[n]) : 0, s1,
                        terms > 1 ? 4 * (base1 + col1[n]) : 0);
            } else {
                storeElements(tmp, t, c, row, cCol, n, len, first, s0, base0, s1, base1);
            }
        }
    }

    /**
     * Whether {@link #storeCompressed} may store {@code count} columns from column {@code n}: every addend read along the
     * columns is adjacent there (C's columns are the caller's to check).
     */
    boolean storesCompressed(int n, int count) {
        return (terms < 1 || perRow0 || contiguous0[n] >= count) && (terms < 2 || perRow1 || contiguous1[n] >= count);
    }

    /**
     * A padded-image tile's {@code mr} rows in {@code tmp} (row i at {@code i * NR}), stored as the first K block into C
     * columns {@code cCol[n..n+c0+c1)}, which must be adjacent: the lanes of the tile's two vectors set in {@code lanes}
     * (the first vector's in the low bits; {@code c0} and {@code c1} of them) are compressed to one run and stored under
     * masks, instead of one run per output row through the staging floats (a 55-wide image: two runs of 15 a row, each
     * staged). The same operations per element as {@link #store}.
     */
    void storeCompressed(float[] tmp, int mr, long lanes, int c0, int c1, MemorySegment c, long cBase, long[] cRow, int m, long[] cCol,
                         int n, int batch, MemorySegment[] buffers) {
        MemorySegment s0 = terms > 0 ? buffers[param0] : null, s1 = terms > 1 ? buffers[param1] : null;
        long skip0 = perRow0 ? 0 : 4L * c0, skip1 = perRow1 ? 0 : 4L * c0;
        // vectors and masks are made within the row method: one passed to a method C2 does not inline is boxed
        for (int i = 0; i < mr; i++) {
            int r = m + i;
            long off = 4 * (cBase + cRow[r] + cCol[n]);
            long o0 = terms > 0 ? 4 * (batch0[batch] + row0[r] + col0[n]) : 0, o1 = terms > 1 ? 4 * (batch1[batch] + row1[r] + col1[n]) : 0;
            compressedRun(tmp, i * NR, lanes, c0, c, off, s0, o0, s1, o1);
            if (c1 > 0) compressedRun(tmp, i * NR + L, lanes >>> L, c1, c, off + 4L * c0, s0, o0 + skip0, s1, o1 + skip1);
        }
    }

    /**
     * The lanes of {@code tmp[t..t+L)} set in {@code lanes}, {@code count} of them, compressed, through the epilogue and
     * into C's adjacent floats from byte {@code off}.
     */
    private void compressedRun(float[] tmp, int t, long lanes, int count, MemorySegment c, long off, MemorySegment s0, long o0,
                               MemorySegment s1, long o1) {
        VectorMask<Float> k = S.indexInRange(0, count);
        FloatVector v = FloatVector.fromArray(S, tmp, t).compress(VectorMask.fromLong(S, lanes));
        if (terms > 0) v = perRow0 ? v.add(s0.get(F, o0)) : v.add(FloatVector.fromMemorySegment(S, s0, o0, LE, k));
        if (terms > 1) v = perRow1 ? v.add(s1.get(F, o1)) : v.add(FloatVector.fromMemorySegment(S, s1, o1, LE, k));
        if (hasLower) v = v.max(lower);
        if (hasUpper) v = v.min(upper);
        v.intoMemorySegment(c, off, LE, k);
    }

    /** One row's {@code len} adjacent columns from {@code tmp[t..]} into C at byte {@code off}, addends at bytes {@code o0}, {@code o1}. */
    private void storeVectors(float[] tmp, int t, MemorySegment c, long off, int len, boolean first, MemorySegment s0, long o0,
                              MemorySegment s1, long o1) {
        float k0 = terms > 0 && perRow0 ? s0.get(F, o0) : 0, k1 = terms > 1 && perRow1 ? s1.get(F, o1) : 0;
        int x = 0;
        for (; x <= len - L; x += L) {
            FloatVector v = FloatVector.fromArray(S, tmp, t + x);
            if (!first) v = FloatVector.fromMemorySegment(S, c, off + 4L * x, LE).add(v);
            if (terms > 0) v = perRow0 ? v.add(k0) : v.add(FloatVector.fromMemorySegment(S, s0, o0 + 4L * x, LE));
            if (terms > 1) v = perRow1 ? v.add(k1) : v.add(FloatVector.fromMemorySegment(S, s1, o1 + 4L * x, LE));
            if (hasLower) v = v.max(lower);
            if (hasUpper) v = v.min(upper);
            v.intoMemorySegment(c, off + 4L * x, LE);
        }
        if (x < len) {
            // the rest as one vector through the tile's staging floats (see GemmMicroKernel.storeRow), the same
            // operations lane by lane as storeElements
            int n = len - x;
            FloatVector v = FloatVector.fromArray(S, tmp, t + x);
            if (!first) v = GemmMicroKernel.loadStaged(c, off + 4L * x, n, tmp).add(v);
            if (terms > 0) v = perRow0 ? v.add(k0) : v.add(GemmMicroKernel.loadStaged(s0, o0 + 4L * x, n, tmp));
            if (terms > 1) v = perRow1 ? v.add(k1) : v.add(GemmMicroKernel.loadStaged(s1, o1 + 4L * x, n, tmp));
            if (hasLower) v = v.max(lower);
            if (hasUpper) v = v.min(upper);
            GemmMicroKernel.storeStaged(v, c, off + 4L * x, n, tmp);
        }
    }

    /** One row's columns {@code cCol[n..n+len)} element by element (C or an addend not adjacent along them). */
    private void storeElements(float[] tmp, int t, MemorySegment c, long row, long[] cCol, int n, int len, boolean first, MemorySegment s0,
                               long base0, MemorySegment s1, long base1) {
        for (int x = 0; x < len; x++) {
            long at = 4 * (row + cCol[n + x]);
            float v = first ? tmp[t + x] : c.get(F, at) + tmp[t + x];
            if (terms > 0) v += s0.get(F, 4 * (base0 + col0[n + x]));
            if (terms > 1) v += s1.get(F, 4 * (base1 + col1[n + x]));
            if (hasLower) v = Math.max(v, lower);
            if (hasUpper) v = Math.min(v, upper);
            c.set(F, at, v);
        }
    }
}

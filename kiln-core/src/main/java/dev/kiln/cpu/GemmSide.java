package dev.kiln.cpu;

import dev.kiln.codegen.Contraction;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.VectorSpecies;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.util.Arrays;
import java.util.List;

/**
 * One input of a contraction at fixed run-time extents, seen as a batch of gated, strided matrices
 * (rows x cols): A as M x K, B as K x N. Element (b, r, c) lives at {@code batchAddr[b] + rowAddr[r] + colAddr[c]}
 * when every gate holds ({@code lo <= gBatch[b] + gRow[r] + gCol[c] < hi}) and is 0 otherwise.
 *
 * <p>Packing walks a row in runs of the innermost column variable: inside a run the address moves by one
 * stride and each gate's sum by one coefficient, so the valid part of a run is one interval, solved once
 * (not per element), and copied as a strided (usually contiguous) block.
 */
final class GemmSide {
    private static final VectorSpecies<Float> S = FloatVector.SPECIES_PREFERRED;
    private static final int L = S.length();
    private static final ValueLayout.OfFloat F = ValueLayout.JAVA_FLOAT_UNALIGNED;

    final int param;
    final int batches, rows, cols;
    private final long[] batchAddr, rowAddr, colAddr;
    private final int nGates;
    private final long[][] gBatch, gRow, gCol;
    private final long[] lo, hi;
    /** Length of a run (extent of the innermost column variable), the address step and each gate's step inside it. */
    private final int runLen;
    private final long runStride;
    private final long[] runCoef;
    /** Extreme element addresses over the valid elements; {@code minAddr > maxAddr} when none is read. */
    final long minAddr, maxAddr;

    /**
     * @param ext run-time extent of every variable
     */
    GemmSide(Contraction.Operand op, int[] batchVars, int[] rowVars, int[] colVars, long[] ext) {
        param = op.param();
        long[] strides = op.strides();
        batchAddr = table(batchVars, ext, strides);
        for (int i = 0; i < batchAddr.length; i++) batchAddr[i] += op.offset();
        rowAddr = table(rowVars, ext, strides);
        colAddr = table(colVars, ext, strides);
        batches = batchAddr.length;
        rows = rowAddr.length;
        cols = colAddr.length;
        List<Contraction.Gate> gates = op.gates();
        nGates = gates.size();
        gBatch = new long[nGates][];
        gRow = new long[nGates][];
        gCol = new long[nGates][];
        lo = new long[nGates];
        hi = new long[nGates];
        runCoef = new long[nGates];
        int inner = colVars.length == 0 ? -1 : colVars[colVars.length - 1];
        for (int g = 0; g < nGates; g++) {
            Contraction.Gate gate = gates.get(g);
            long[] co = gate.coeffs();
            gBatch[g] = table(batchVars, ext, co);
            gRow[g] = table(rowVars, ext, co);
            gCol[g] = table(colVars, ext, co);
            lo[g] = gate.lo();
            hi[g] = gate.hi();
            runCoef[g] = inner < 0 ? 0 : co[inner];
        }
        runLen = inner < 0 ? 1 : (int) ext[inner];
        runStride = inner < 0 ? 0 : strides[inner];
        long[] mm = extremes();
        minAddr = mm[0];
        maxAddr = mm[1];
    }

    /**
     * {@code sum(coeffs[v] * v)} for every multi-index of {@code vars} (last varies fastest), so a role's
     * contribution to an address or a gate is one table look-up.
     */
    static long[] table(int[] vars, long[] ext, long[] coeffs) {
        long size = 1;
        for (int v : vars) size *= ext[v];
        if (size > Integer.MAX_VALUE - 16) throw new IllegalArgumentException("a contraction role spans " + size + " points");
        long[] t = new long[(int) size];
        if (size == 0) return t;
        int filled = 1;
        // Expand one variable at a time: the entries so far become the outer index, the new variable the inner one.
        for (int v : vars) {
            int e = (int) ext[v];
            for (int f = filled - 1; f >= 0; f--) {
                long base = t[f];
                for (int i = e - 1; i >= 0; i--) t[f * e + i] = base + coeffs[v] * i;
            }
            filled *= e;
        }
        return t;
    }

    /**
     * The valid part {@code [t0, t1)} of the run of {@code len} columns from {@code c} in row {@code r} of batch
     * {@code b}, as {@code t0 << 32 | t1} (0 when empty). The run must stay inside one run of the innermost variable.
     */
    private long validRange(int b, int r, int c, int len) {
        long t0 = 0, t1 = len;
        for (int g = 0; g < nGates; g++) {
            long base = gBatch[g][b] + gRow[g][r] + gCol[g][c];
            long k = runCoef[g];
            // lo <= base + k*t < hi, solved for integer t
            if (k == 0) {
                if (base < lo[g] || base >= hi[g]) return 0;
            } else if (k > 0) {
                t0 = Math.max(t0, Math.ceilDiv(lo[g] - base, k));
                t1 = Math.min(t1, Math.floorDiv(hi[g] - 1 - base, k) + 1);
            } else {
                t0 = Math.max(t0, Math.ceilDiv(base - hi[g] + 1, -k));
                t1 = Math.min(t1, Math.floorDiv(base - lo[g], -k) + 1);
            }
            if (t0 >= t1) return 0;
        }
        return t0 << 32 | t1;
    }

    /** Smallest and largest address read, from the tables (exact without gates; run by run with them). */
    private long[] extremes() {
        if (batches == 0 || rows == 0 || cols == 0) return new long[] {Long.MAX_VALUE, Long.MIN_VALUE};
        if (nGates == 0) {
            return new long[] {min(batchAddr) + min(rowAddr) + min(colAddr), max(batchAddr) + max(rowAddr) + max(colAddr)};
        }
        long mn = Long.MAX_VALUE, mx = Long.MIN_VALUE;
        for (int b = 0; b < batches; b++) {
            for (int r = 0; r < rows; r++) {
                long base = batchAddr[b] + rowAddr[r];
                for (int c = 0; c < cols; c += runLen) {
                    long vr = validRange(b, r, c, runLen);
                    if (vr == 0) continue;
                    long first = base + colAddr[c] + (vr >>> 32) * runStride;
                    long last = base + colAddr[c] + ((vr & 0xffffffffL) - 1) * runStride;
                    mn = Math.min(mn, Math.min(first, last));
                    mx = Math.max(mx, Math.max(first, last));
                }
            }
        }
        return new long[] {mn, mx};
    }

    private static long min(long[] t) { return Arrays.stream(t).min().orElseThrow(); }

    private static long max(long[] t) { return Arrays.stream(t).max().orElseThrow(); }

    /** Throws when a valid element lies outside {@code seg} (a float buffer). */
    void checkBounds(MemorySegment seg, String what) {
        if (minAddr > maxAddr) return;
        long size = seg.byteSize() / 4;
        if (minAddr < 0 || maxAddr >= size) {
            throw new IndexOutOfBoundsException("contraction " + what + " (parameter " + param + ") reads elements "
                    + minAddr + ".." + maxAddr + " of a buffer of " + size + " floats");
        }
    }

    /**
     * Packs rows {@code [r0, r0+nr)} x columns {@code [c0, c0+nc)} of batch {@code b} into column panels {@code w}
     * wide: {@code dst[(c / w) * nr * w + r * w + c % w]} (local r, c), the last panel padded with zeros. This is B's
     * layout (rows K, columns N): the micro-kernel reads one row of a panel per step.
     */
    void packColPanels(MemorySegment seg, int b, int r0, int nr, int c0, int nc, int w, float[] dst) {
        int panels = (nc + w - 1) / w;
        int pad = panels * w - nc;
        if (pad > 0) {
            int p = (panels - 1) * nr * w;
            for (int r = 0; r < nr; r++) Arrays.fill(dst, p + r * w + w - pad, p + r * w + w, 0f);
        }
        for (int r = 0; r < nr; r++) {
            long rowBase = batchAddr[b] + rowAddr[r0 + r];
            int c = c0, end = c0 + nc;
            while (c < end) {
                int len = Math.min(runLen - c % runLen, end - c);
                int t0 = 0, t1 = len;
                if (nGates > 0) {
                    long vr = validRange(b, r0 + r, c, len);
                    t0 = (int) (vr >>> 32);
                    t1 = (int) vr;
                }
                int local = c - c0;
                if (t0 > 0) zeroPanels(dst, local, t0, r, nr, w);
                if (t1 > t0) copyPanels(seg, rowBase + colAddr[c] + t0 * runStride, local + t0, t1 - t0, dst, r, nr, w);
                if (t1 < len) zeroPanels(dst, local + Math.max(t1, t0), len - Math.max(t1, t0), r, nr, w);
                c += len;
            }
        }
    }

    private void copyPanels(MemorySegment seg, long addr, int local, int n, float[] dst, int r, int nr, int w) {
        while (n > 0) {
            int j = local % w;
            int chunk = Math.min(n, w - j);
            copy(seg, addr, runStride, chunk, dst, (local / w) * nr * w + r * w + j);
            addr += chunk * runStride;
            local += chunk;
            n -= chunk;
        }
    }

    private static void zeroPanels(float[] dst, int local, int n, int r, int nr, int w) {
        while (n > 0) {
            int j = local % w;
            int chunk = Math.min(n, w - j);
            int d = (local / w) * nr * w + r * w + j;
            Arrays.fill(dst, d, d + chunk, 0f);
            local += chunk;
            n -= chunk;
        }
    }

    /** Copies {@code n} elements {@code stride} apart from {@code seg} to {@code dst[d..]}; stride 1 by whole vectors. */
    private static void copy(MemorySegment seg, long addr, long stride, int n, float[] dst, int d) {
        long off = addr * 4;
        if (stride == 1) {
            int i = 0;
            for (; i <= n - L; i += L) FloatVector.fromMemorySegment(S, seg, off + 4L * i, ByteOrder.LITTLE_ENDIAN).intoArray(dst, d + i);
            for (; i < n; i++) dst[d + i] = seg.get(F, off + 4L * i);
        } else {
            for (int i = 0; i < n; i++) dst[d + i] = seg.get(F, off + 4L * stride * i);
        }
    }

    /**
     * Packs rows {@code [r0, r0+nr)} x columns {@code [c0, c0+nc)} of batch {@code b} into row panels {@code h}
     * tall: {@code dst[(r / h) * nc * h + c * h + r % h]} (local r, c), the last panel padded with zeros. This is A's
     * layout (rows M, columns K): the micro-kernel reads one column of a panel per step.
     */
    void packRowPanels(MemorySegment seg, int b, int r0, int nr, int c0, int nc, int h, float[] dst) {
        int panels = (nr + h - 1) / h;
        for (int r = nr; r < panels * h; r++) {
            int d = (r / h) * nc * h + r % h;
            for (int c = 0; c < nc; c++) dst[d + c * h] = 0f;
        }
        for (int r = 0; r < nr; r++) {
            long rowBase = batchAddr[b] + rowAddr[r0 + r];
            int rowDst = (r / h) * nc * h + r % h;
            int c = c0, end = c0 + nc;
            while (c < end) {
                int len = Math.min(runLen - c % runLen, end - c);
                int t0 = 0, t1 = len;
                if (nGates > 0) {
                    long vr = validRange(b, r0 + r, c, len);
                    t0 = (int) (vr >>> 32);
                    t1 = (int) vr;
                    if (t1 <= t0) t0 = t1 = len;
                }
                int d = rowDst + (c - c0) * h;
                for (int t = 0; t < t0; t++) dst[d + t * h] = 0f;
                long off = (rowBase + colAddr[c]) * 4;
                long step = runStride * 4;
                for (int t = t0; t < t1; t++) dst[d + t * h] = seg.get(F, off + t * step);
                for (int t = t1; t < len; t++) dst[d + t * h] = 0f;
                c += len;
            }
        }
    }
}

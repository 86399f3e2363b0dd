package dev.kiln.cpu;

import dev.kiln.codegen.Contraction;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.VectorShuffle;
import jdk.incubator.vector.VectorSpecies;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

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
    /** Per-thread gate sums of the row being packed, so packing allocates nothing. */
    private static final ThreadLocal<long[][]> GATE_SCRATCH = ThreadLocal.withInitial(() -> new long[][] {new long[8]});
    private static final int L = S.length();
    private static final ValueLayout.OfFloat F = ValueLayout.JAVA_FLOAT_UNALIGNED;
    private static final int NR = GemmMicroKernel.NR, MR = GemmMicroKernel.MR;
    /** Runs at least this long are copied in bulk ({@link MemorySegment#copy}), shorter ones by vectors. */
    private static final int BULK_COPY = 64;

    final int param;
    final int batches, rows, cols;
    private final long[] batchAddr, rowAddr, colAddr;
    private final int nGates;
    private final long[][] gBatch, gRow;
    /** Column part of gate g's sum at column c: {@code gColFlat[c * nGates + g]} (one array: a run reads all gates at once). */
    private final long[] gColFlat;
    private final long[] lo, hi;
    /** Length of a run (the innermost column variables that continue one another), the address step and each gate's step inside it. */
    private final int runLen;
    private final long runStride;
    private final long[] runCoef;
    /** Runs along the rows (ungated sides only): a transposed operand is packed column by column along them. */
    private final int rowRunLen;
    private final long rowRunStride;
    /** Whether gate g is moved, among the column variables, by the innermost one only; whether any gate is not. */
    private final boolean[] innerOnly;
    private final boolean hasOuterGates;
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
        gColFlat = new long[cols * nGates];
        lo = new long[nGates];
        hi = new long[nGates];
        runCoef = new long[nGates];
        int inner = colVars.length == 0 ? -1 : colVars[colVars.length - 1];
        for (int g = 0; g < nGates; g++) {
            Contraction.Gate gate = gates.get(g);
            long[] co = gate.coeffs();
            gBatch[g] = table(batchVars, ext, co);
            gRow[g] = table(rowVars, ext, co);
            long[] gc = table(colVars, ext, co);
            for (int c = 0; c < cols; c++) gColFlat[c * nGates + g] = gc[c];
            lo[g] = gate.lo();
            hi[g] = gate.hi();
            runCoef[g] = inner < 0 ? 0 : co[inner];
        }
        // A run spans the innermost column variable and every next-outer one that continues it: stride (and each
        // gate coefficient) equal to the run's extent times the innermost's, as in a contiguous row-major block
        // (a convolution's weights over (ci, kh, kw), an unpadded 1x1 convolution's pixels).
        long len = inner < 0 ? 1 : ext[inner];
        int merged = colVars.length - 1;  // colVars[merged..] form the run
        while (merged > 0) {
            int v = colVars[merged - 1];
            boolean continues = strides[v] == len * strides[inner];
            for (Contraction.Gate gate : gates) continues &= gate.coeff(v) == len * gate.coeff(inner);
            if (!continues) break;
            len *= ext[v];
            merged--;
        }
        runLen = (int) Math.max(1, len);
        runStride = inner < 0 ? 0 : strides[inner];
        int rowInner = rowVars.length == 0 ? -1 : rowVars[rowVars.length - 1];
        long rowLen = rowInner < 0 ? 1 : ext[rowInner];
        for (int i = rowVars.length - 2; i >= 0 && strides[rowVars[i]] == rowLen * strides[rowInner]; i--) rowLen *= ext[rowVars[i]];
        rowRunLen = (int) Math.max(1, rowLen);
        rowRunStride = rowInner < 0 ? 0 : strides[rowInner];
        innerOnly = new boolean[nGates];
        boolean outer = false;
        for (int g = 0; g < nGates; g++) {
            innerOnly[g] = runCoef[g] != 0;
            for (int i = 0; i < merged; i++) if (gates.get(g).coeff(colVars[i]) != 0) innerOnly[g] = false;
            outer |= !innerOnly[g];
        }
        hasOuterGates = outer;
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
     * Narrows {@code [t0, t1)} to the t where {@code lo[g] <= s0 + k*t < hi[g]} (k the gate's step along a run), as
     * {@code t0 << 32 | t1}, 0 when empty. Solved without division for the steps convolutions have (0 and 1).
     */
    private long narrow(int g, long s0, long t0, long t1) {
        long k = runCoef[g], from = lo[g] - s0, to = hi[g] - s0;  // from <= k*t < to
        if (k == 1) {
            t0 = Math.max(t0, from);
            t1 = Math.min(t1, to);
        } else if (k == 0) {
            if (from > 0 || to <= 0) return 0;
        } else if (k > 0) {
            t0 = Math.max(t0, Math.ceilDiv(from, k));
            t1 = Math.min(t1, Math.floorDiv(to - 1, k) + 1);
        } else {
            t0 = Math.max(t0, Math.ceilDiv(to - 1, k));
            t1 = Math.min(t1, Math.floorDiv(from, k) + 1);
        }
        return t0 >= t1 ? 0 : t0 << 32 | t1;
    }

    /**
     * The valid part of {@code [t0, t1)} of the run from column {@code c}, in a row whose batch and row gate sums are
     * {@code rowGate}, by every gate ({@code all}) or by those not moved by the innermost column alone.
     */
    private long validRange(long[] rowGate, int c, long t0, long t1, boolean all) {
        for (int g = 0; g < nGates; g++) {
            if (!all && innerOnly[g]) continue;
            long vr = narrow(g, rowGate[g] + gColFlat[c * nGates + g], t0, t1);
            if (vr == 0) return 0;
            t0 = vr >>> 32;
            t1 = (int) vr;
        }
        return t0 << 32 | t1;
    }

    /** Fills {@code rowGate} with the batch and row part of each gate's sum. */
    private void rowGates(int b, int r, long[] rowGate) {
        for (int g = 0; g < nGates; g++) rowGate[g] = gBatch[g][b] + gRow[g][r];
    }

    /**
     * Smallest and largest address read, from the tables (exact without gates; run by run with them). Which parts of the
     * column runs are valid depends on a row only through its gate sums, so each distinct set of sums is scanned once
     * and its nearest and farthest offsets added to the row's start: a convolution's K rows share the sums of their
     * window position (kh x kw sets, not ci x kh x kw rows; every row scanned was a tenth of ResNet-50's warm prepare).
     */
    private long[] extremes() {
        if (batches == 0 || rows == 0 || cols == 0) return new long[] {Long.MAX_VALUE, Long.MIN_VALUE};
        if (nGates == 0) {
            return new long[] {min(batchAddr) + min(rowAddr) + min(colAddr), max(batchAddr) + max(rowAddr) + max(colAddr)};
        }
        long mn = Long.MAX_VALUE, mx = Long.MIN_VALUE;
        Map<GateSums, long[]> spans = new HashMap<>();
        for (int b = 0; b < batches; b++) {
            for (int r = 0; r < rows; r++) {
                long[] gateBase = new long[nGates];
                rowGates(b, r, gateBase);
                long[] span = spans.computeIfAbsent(new GateSums(gateBase), g -> columnSpan(g.sums()));
                if (span.length == 0) continue;
                long base = batchAddr[b] + rowAddr[r];
                mn = Math.min(mn, base + span[0]);
                mx = Math.max(mx, base + span[1]);
            }
        }
        return new long[] {mn, mx};
    }

    /** A row's gate sums ({@link #rowGates}) as a key: equal when the sums are. */
    private record GateSums(long[] sums) {
        @Override
        public boolean equals(Object o) { return o instanceof GateSums g && Arrays.equals(sums, g.sums); }

        @Override
        public int hashCode() { return Arrays.hashCode(sums); }
    }

    /**
     * The smallest and largest offset from a row's start that a row with gate sums {@code gateBase} reads, over every
     * valid part of its column runs; no elements when it reads none.
     */
    private long[] columnSpan(long[] gateBase) {
        long mn = Long.MAX_VALUE, mx = Long.MIN_VALUE;
        for (int c = 0; c < cols; c += runLen) {
            long vr = validRange(gateBase, c, 0, runLen, true);
            if (vr == 0) continue;
            long first = colAddr[c] + (vr >>> 32) * runStride;
            long last = colAddr[c] + ((vr & 0xffffffffL) - 1) * runStride;
            mn = Math.min(mn, Math.min(first, last));
            mx = Math.max(mx, Math.max(first, last));
        }
        return mn > mx ? new long[0] : new long[] {mn, mx};
    }

    // plain loops, not streams: these run at every plan's link, mostly before the JIT has compiled anything, where a
    // LongStream's pipeline classes cost more than the tables they scan
    static long min(long[] t) {
        if (t.length == 0) throw new java.util.NoSuchElementException("min of an empty table");
        long m = t[0];
        for (long x : t) m = Math.min(m, x);
        return m;
    }

    static long max(long[] t) {
        if (t.length == 0) throw new java.util.NoSuchElementException("max of an empty table");
        long m = t[0];
        for (long x : t) m = Math.max(m, x);
        return m;
    }

    /** Whether every row's elements follow one another in memory, ungated: A's rows along K, each one dot product's operand. */
    boolean rowsContiguous() { return nGates == 0 && (cols <= 1 || runStride == 1 && runLen >= cols); }

    /** Whether every column's elements follow one another in memory, ungated: a transposed B's columns along K. */
    boolean columnsContiguous() { return nGates == 0 && (rows <= 1 || rowRunStride == 1 && rowRunLen >= rows); }

    /** The element index where row {@code r} of batch {@code b} starts. */
    long rowStart(int b, int r) { return batchAddr[b] + rowAddr[r]; }

    /** The element index where column {@code c} of batch {@code b} starts. */
    long columnStart(int b, int c) { return batchAddr[b] + colAddr[c]; }

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
     * Packs rows {@code [r0, r0+nr)} x columns {@code [c0, c0+nc)} of batch {@code b} into column panels NR
     * wide: {@code dst[at + (c / NR) * nr * NR + r * NR + c % NR]} (local r, c), the last panel padded with zeros. This
     * is B's layout (rows K, columns N): the micro-kernel reads one row of a panel per step.
     *
     * <p>Each row is first gathered into {@code row} (whole runs: one gate solution and one strided copy each),
     * then dealt out to the panels in whole vectors: splitting runs at panel edges cost more than the copy itself.
     *
     * @param row scratch of at least {@code roundUp(nc, NR)} floats
     */
    void packColPanels(MemorySegment seg, int b, int r0, int nr, int c0, int nc, float[] dst, int at, float[] row) {
        if (byColumns()) {
            packColPanelsByColumns(seg, b, r0, nr, c0, nc, dst, at, row);
            return;
        }
        if (nGates == 0 && runStride == 1 && c0 % runLen + nc <= runLen) {
            packContiguousRows(seg, b, r0, nr, c0, nc, dst, at);
            return;
        }
        final int w = NR;
        int panels = (nc + w - 1) / w, pitch = panels * w;
        // rows gathered a group at a time, then dealt out panel by panel: each panel's rows of the group are one run
        // of its floats (dealt row by row, the stores went a panel apart, 4 KB or more, and an unpadded 1 x 1
        // convolution's packing, which has the same pattern, took twice as long)
        int group = Math.max(1, Math.min(nr, row.length / pitch));
        for (int g = 0; g < group; g++) Arrays.fill(row, g * pitch + nc, (g + 1) * pitch, 0f);
        long[] gateBase = gateScratch();
        int firstLen = runLen - c0 % runLen;
        for (int r0g = 0; r0g < nr; r0g += group) {
            int rows = Math.min(group, nr - r0g);
            for (int g = 0; g < rows; g++) gatherRow(seg, b, r0 + r0g + g, c0, nc, firstLen, row, g * pitch, gateBase);
            for (int p = 0; p < panels; p++) {
                int d = at + p * nr * w + r0g * w;
                for (int g = 0, src = p * w; g < rows; g++, d += w, src += pitch) {
                    FloatVector.fromArray(S, row, src).intoArray(dst, d);
                    FloatVector.fromArray(S, row, src + L).intoArray(dst, d + L);
                }
            }
        }
    }

    /**
     * {@link #packColPanels} where each row's columns are one contiguous run (an unpadded 1 x 1 convolution's pixels, a
     * row-major B): vectors straight from the segment into the panels, no staging row; the last panel's part by a bulk
     * copy and zeros. Staged, B of SqueezeNet's 512 -> 64 convolution at 13 x 13 was written twice, and packing it
     * took a third of the kernel. Panel by panel, so the stores run on: row by row, each store went a panel (4 KB at
     * K = 32) past the one before, and MobileNet-v2's 32 -> 16 convolution at 112 x 112 took 205 us on one thread, 110
     * this way.
     */
    private void packContiguousRows(MemorySegment seg, int b, int r0, int nr, int c0, int nc, float[] dst, int at) {
        final int w = NR;
        int full = nc / w, rest = nc - full * w;
        long first = batchAddr[b] + colAddr[c0];
        int d = at;
        for (int p = 0; p < full; p++) {
            for (int r = 0; r < nr; r++, d += w) {
                long off = 4 * (first + rowAddr[r0 + r] + (long) p * w);
                FloatVector.fromMemorySegment(S, seg, off, ByteOrder.LITTLE_ENDIAN).intoArray(dst, d);
                FloatVector.fromMemorySegment(S, seg, off + 4L * L, ByteOrder.LITTLE_ENDIAN).intoArray(dst, d + L);
            }
        }
        if (rest > 0) {
            for (int r = 0; r < nr; r++, d += w) {
                MemorySegment.copy(seg, F, 4 * (first + rowAddr[r0 + r] + (long) full * w), dst, d, rest);
                Arrays.fill(dst, d + rest, d + w, 0f);
            }
        }
    }

    /**
     * {@link #packColPanels} for a transposed operand (contiguous down its columns, as the weights of x W^T):
     * each column is copied in bulk along its row runs, then written down its panel. Element-wise strided reads
     * measured several times slower.
     *
     * @param col scratch of at least {@code nr} floats
     */
    private void packColPanelsByColumns(MemorySegment seg, int b, int r0, int nr, int c0, int nc, float[] dst, int at, float[] col) {
        final int w = NR;
        int panels = (nc + w - 1) / w;
        int pad = panels * w - nc;
        if (pad > 0) {
            int p = at + (panels - 1) * nr * w;
            for (int r = 0; r < nr; r++) Arrays.fill(dst, p + r * w + w - pad, p + r * w + w, 0f);
        }
        int firstLen = rowRunLen - r0 % rowRunLen, end = r0 + nr;
        for (int c = 0; c < nc; c++) {
            long base = batchAddr[b] + colAddr[c0 + c];
            for (int r = r0, len = Math.min(firstLen, nr); r < end; r += len, len = Math.min(rowRunLen, end - r)) {
                copy(seg, base + rowAddr[r], 1, len, col, r - r0);
            }
            int d = at + (c / w) * nr * w + c % w;
            for (int r = 0; r < nr; r++) dst[d + r * w] = col[r];
        }
    }

    /**
     * Whether this side is packed column by column: a transposed operand, contiguous down its columns in runs of at
     * least a vector, while its rows are not contiguous. Not a stride-2 convolution's input without padding: its
     * column runs are 3 or 7 wide, its row runs (the output pixels) as long as a row of the image and copied by
     * vectors at stride 2 (the first conv of SqueezeNet 1.1, K 27, N 12321: packing by columns took 3/4 of its time).
     */
    private boolean byColumns() {
        return nGates == 0 && runStride != 1 && rowRunStride == 1 && (runStride > 2 || rowRunLen >= L);
    }

    /** Columns {@code [c0, c0+nc)} of row {@code r} of batch {@code b} into {@code row[at..at+nc)}, 0 where a gate fails. */
    private void gatherRow(MemorySegment seg, int b, int r, int c0, int nc, int firstLen, float[] row, int at, long[] gateBase) {
        long rowBase = batchAddr[b] + rowAddr[r];
        int end = c0 + nc;
        // Gates moved by the innermost column variable alone (a convolution's window column) leave the same valid
        // positions in every run of the row: solved once here. The others are solved run by run.
        long u0 = 0, u1 = runLen;
        if (nGates > 0) {
            rowGates(b, r, gateBase);
            for (int g = 0; g < nGates && u0 < u1; g++) {
                if (!innerOnly[g]) continue;
                long vr = narrow(g, gateBase[g], u0, u1);
                u0 = vr >>> 32;
                u1 = (int) vr;
            }
        }
        int p0 = runLen - firstLen;  // inner position of the first run's start
        for (int c = c0, len = Math.min(firstLen, nc); c < end; c += len, len = Math.min(runLen, end - c), p0 = 0) {
            int t0 = (int) Math.max(0, u0 - p0), t1 = (int) Math.min(len, u1 - p0);
            if (t0 < t1 && hasOuterGates) {
                long vr = validRange(gateBase, c, t0, t1, false);
                t0 = (int) (vr >>> 32);
                t1 = (int) vr;
            }
            if (t1 <= t0) t0 = t1 = len;
            int d = at + c - c0;
            if (t0 > 0) zero(row, d, t0);
            if (t1 > t0) copy(seg, rowBase + colAddr[c] + t0 * runStride, runStride, t1 - t0, row, d + t0);
            if (t1 < len) zero(row, d + t1, len - t1);
        }
    }

    /** This thread's scratch for at least {@code nGates} gate sums. */
    private long[] gateScratch() {
        long[][] holder = GATE_SCRATCH.get();
        if (holder[0].length < nGates) holder[0] = new long[nGates];
        return holder[0];
    }

    /**
     * {@code row[d..d+n) = 0} by vectors, the last few elements one by one. (No masks in this file: a masked load or
     * store C2 does not intrinsify takes the Vector API's slow path, which allocates every vector and mask, and whether
     * it does depended on the JIT's timing: 152 KB a run of a small GEMM in some runs, ZeroAllocationTest.)
     */
    private static void zero(float[] row, int d, int n) {
        FloatVector z = FloatVector.zero(S);
        int i = 0;
        for (; i <= n - L; i += L) z.intoArray(row, d + i);
        for (; i < n; i++) row[d + i] = 0;
    }

    /** Copies {@code n} elements {@code stride} apart from {@code seg} to {@code dst[d..]}; strides 1 and 2 by vectors. */
    private static void copy(MemorySegment seg, long addr, long stride, int n, float[] dst, int d) {
        long off = addr * 4;
        if (stride == 1 && n >= BULK_COPY) {
            // a bulk copy: as fast as the vector loop on long runs, and fast before the JIT has compiled anything
            // (prepacking a model's weights runs once, at prepare: ResNet-50's took 0.45 s in interpreted vector code)
            MemorySegment.copy(seg, F, off, dst, d, n);
        } else if (stride == 1) {
            int i = 0;
            for (; i <= n - L; i += L) FloatVector.fromMemorySegment(S, seg, off + 4L * i, ByteOrder.LITTLE_ENDIAN).intoArray(dst, d + i);
            // the rest in bulk: one check of the segment, not one per element (a 7 x 7 or 14 x 14 image's rows are all rest)
            if (i < n) MemorySegment.copy(seg, F, off + 4L * i, dst, d + i, n - i);
        } else if (stride == 2) { // a stride-2 convolution's columns: two overlapping vectors, the even lanes picked
            int i = 0;
            for (; i <= n - L; i += L) {
                FloatVector even = FloatVector.fromMemorySegment(S, seg, off + 8L * i, ByteOrder.LITTLE_ENDIAN);
                FloatVector odd = FloatVector.fromMemorySegment(S, seg, off + 8L * i + 4L * (L - 1), ByteOrder.LITTLE_ENDIAN);
                even.rearrange(EVERY_OTHER, odd).intoArray(dst, d + i);
            }
            for (; i < n; i++) dst[d + i] = seg.get(F, off + 8L * i); // the rest (a 7-pixel row), one by one
        } else {
            for (int i = 0; i < n; i++) dst[d + i] = seg.get(F, off + 4L * stride * i);
        }
    }

    /**
     * Lane k of {@code even.rearrange(EVERY_OTHER, odd)} is element 2k of a vector loaded at element 0 and, through a
     * negative index, one loaded at element L - 1 (a two-table {@code selectFrom} took twice as long).
     */
    private static final VectorShuffle<Float> EVERY_OTHER = VectorShuffle.fromOp(S, k -> 2 * k < L ? 2 * k : 2 * k + 1 - 2 * L);

    /**
     * Packs rows {@code [r0, r0+nr)} x columns {@code [c0, c0+nc)} of batch {@code b} as A's panels:
     * {@code dst[at + GemmMicroKernel.packedA(r, c, nc)]} (local r, c), rows up to the next multiple of MR zero. Each
     * row is gathered (one strided, usually contiguous, copy per run) and then dealt to its panel MR floats apart.
     *
     * @param col scratch of at least {@code max(nr, nc)} floats
     */
    void packRows(MemorySegment seg, int b, int r0, int nr, int c0, int nc, float[] dst, int at, float[] col) {
        int padded = (nr + MR - 1) / MR * MR;
        // the last panel's rows past nr are interleaved with its valid ones: the whole panel zeroed first
        if (padded > nr) Arrays.fill(dst, at + (nr / MR) * MR * nc, at + padded * nc, 0f);
        if (byColumns()) {
            // a transposed A (contiguous down its columns): each column in bulk along its row runs, then across
            int firstLen = rowRunLen - r0 % rowRunLen, end = r0 + nr;
            for (int c = 0; c < nc; c++) {
                long base = batchAddr[b] + colAddr[c0 + c];
                for (int r = r0, len = Math.min(firstLen, nr); r < end; r += len, len = Math.min(rowRunLen, end - r)) {
                    copy(seg, base + rowAddr[r], 1, len, col, r - r0);
                }
                for (int r = 0; r < nr; r++) dst[at + GemmMicroKernel.packedA(r, c, nc)] = col[r];
            }
            return;
        }
        long[] gateBase = gateScratch();
        int firstLen = runLen - c0 % runLen;
        for (int r = 0; r < nr; r++) {
            gatherRow(seg, b, r0 + r, c0, nc, firstLen, col, 0, gateBase);
            GemmMicroKernel.dealRow(col, 0, nc, dst, at + GemmMicroKernel.packedA(r, 0, nc));
        }
    }
}

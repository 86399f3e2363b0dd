package dev.kiln.cpu;

import dev.kiln.codegen.Contraction;
import dev.kiln.codegen.Contraction.Gate;
import dev.kiln.codegen.Contraction.Role;
import dev.kiln.codegen.ContractionMatcher;
import dev.kiln.codegen.StoreEpilogue;
import dev.kiln.runtime.WorkerPool;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.VectorMask;
import jdk.incubator.vector.VectorShuffle;
import jdk.incubator.vector.VectorSpecies;

import java.lang.foreign.MemorySegment;
import java.nio.ByteOrder;
import java.util.Arrays;
import java.util.List;
import java.util.stream.IntStream;

import static java.lang.foreign.ValueLayout.JAVA_FLOAT_UNALIGNED;

/**
 * Runs a {@link ContractionMatcher.Kind#STENCIL} contraction: few rows of A (a depthwise convolution has one per
 * channel) and a short window (K taps). For each row of C (a batch/M point and every N variable but the column one),
 * each tap's weight multiplies a run of B along the column variable, contiguous or every other element (stride 2),
 * and the taps are summed in vector registers, one vector of columns at a time.
 *
 * <p>Padding is where B's gates fail. For a row and a tap, the columns where every gate holds form one interval
 * (each gate is linear in the column). Columns inside every tap's interval, the interior, run as vectors with no
 * test; the few columns outside it (a padding's width at each end) run one at a time, each tap tested, except in a row
within one vector, which is one strip whose loads are masked tap by tap to the tap's columns. A tap whose
 * gates fail for the whole row is left out of the row. Non-finite weights make the row exact: their products
 * with the padding's zeros (NaN) must reach the sums, so such rows add every tap at every column.
 *
 * <p>The sums are reassociated (taps in order, with FMA), as the numerics policy allows for reductions.
 *
 * <p>Where the contraction is a 2-D window over planes ({@link PlaneGeometry}: depthwise convolutions and depth
 * multipliers, stride 1 or 2, any padding and dilation), it runs over zero-padded copies of the planes instead
 * ({@link PlaneStencil}), which also applies a bias and ReLU/clamp epilogue as it stores; what follows describes the
 * row-by-row kernel the rest run on (why is logged once per reason).
 */
final class StencilKernel {
    private static final VectorSpecies<Float> F = FloatVector.SPECIES_PREFERRED;
    private static final int L = F.length();
    private static final ByteOrder ORDER = ByteOrder.nativeOrder();
    /**
     * Lane i of {@code v0.rearrange(EVERY_OTHER, v1)} is element 2i of a run loaded as v0 at element 0 and v1 at element
     * L - 1 (an overlapping load that ends at the last element read): from v0 below L, else from v1 (negative index).
     */
    private static final VectorShuffle<Float> EVERY_OTHER;
    /** Below this many multiply-adds the work stays on the calling thread. */
    private static final long PARALLEL_MIN = 1L << 18;
    /**
     * The same over padded planes, whose work per multiply-add is less (a 576-channel 7 x 7 depthwise convolution,
     * 254k multiply-adds, took twice as long on one thread as on two).
     */
    private static final long PLANE_PARALLEL_MIN = 1L << 16;
    /**
     * Output columns from which a stride-2 stencil runs row by row rather than over planes (see {@link PlaneStencil}).
     * Planes won at 28 and 56 columns once their split masked only its last vector (MobileNet-v2: its 112 -> 56 and
     * 56 -> 28 depthwise convolutions, the whole model 3 % faster); wider rows were not measured and stay row by row.
     */
    static final int WIDE_STRIDED_COLUMNS = 57;

    static {
        int[] lanes = new int[L];
        for (int i = 0; i < L; i++) lanes[i] = 2 * i < L ? 2 * i : 2 * i + 1 - 2 * L;
        EVERY_OTHER = VectorShuffle.fromValues(F, lanes);
    }

    /** Why a stencil runs row by row, said once per reason. */
    private static final dev.kiln.ir.OnceLog LOG = new dev.kiln.ir.OnceLog(StencilKernel.class);

    private final Contraction contraction;
    private final StoreEpilogue storeEpilogue;
    private final int column;
    private final int[] outerVars, rowVars, tapVars;
    private final long columnStrideB;
    private final ExtentPlans<Tables> plans;

    private static final ThreadLocal<Scratch> SCRATCH = ThreadLocal.withInitial(Scratch::new);

    /** Per-thread weights, tap intervals of the current row, rows of a group and their strips, grown on demand. */
    private static final class Scratch {
        float[] weights = new float[0];
        Intervals intervals = new Intervals(0);
        final long[] cRows = new long[GROUP], bRows = new long[GROUP];
        long[] stripB = new long[0], stripC = new long[0], masks = new long[0];

        void ensure(int taps) {
            if (weights.length >= taps) return;
            weights = new float[taps];
            masks = new long[taps];
            intervals = new Intervals(taps);
        }

        void ensureStrips(int n) {
            if (stripB.length >= n) return;
            stripB = new long[n];
            stripC = new long[n];
        }
    }

    /**
     * The taps of one row whose gates hold somewhere in it ({@code n} of them, or every tap when exact), each with
     * its interval of columns, and the interval every one of them reads ({@code [inner0, inner1)}; empty as
     * {@code columns, columns}).
     */
    private static final class Intervals {
        final int[] taps, from, to;
        int n, inner0, inner1;

        Intervals(int capacity) {
            taps = new int[capacity];
            from = new int[capacity];
            to = new int[capacity];
        }

        void of(Tables t, int o, int r, boolean exact) {
            int columns = t.columns;
            n = 0;
            inner0 = 0;
            inner1 = columns;
            for (int k = 0; k < t.taps; k++) {
                // the columns where every gate of B holds: lo <= base + coeff * x < hi for each
                long lo = 0, hi = columns;
                for (int g = t.gatesA; g < t.gateLo.length && lo < hi; g++) {
                    long base = t.gateOuter[g][o] + t.gateRow[g][r] + t.gateTap[g][k], cx = t.gateColumn[g];
                    if (cx == 0) {
                        if (base < t.gateLo[g] || base >= t.gateHi[g]) hi = lo;
                    } else if (cx > 0) {
                        lo = Math.max(lo, ceilDiv(t.gateLo[g] - base, cx));
                        hi = Math.min(hi, ceilDiv(t.gateHi[g] - base, cx));
                    } else {
                        lo = Math.max(lo, Math.floorDiv(base - t.gateHi[g], -cx) + 1);
                        hi = Math.min(hi, Math.floorDiv(base - t.gateLo[g], -cx) + 1);
                    }
                }
                if (lo >= hi && !exact) continue;
                taps[n] = k;
                from[n] = (int) Math.max(0, Math.min(lo, columns));
                to[n] = (int) Math.max(from[n], Math.min(hi, columns));
                inner0 = Math.max(inner0, from[n]);
                inner1 = Math.min(inner1, to[n]);
                n++;
            }
            if (inner0 >= inner1) inner0 = inner1 = columns;
        }
    }

    StencilKernel(Contraction c) { this(c, null); }

    /** @param storeEpilogue the match's epilogue, applied as the sums are stored where the kernel can, or null */
    StencilKernel(Contraction c, StoreEpilogue storeEpilogue) {
        contraction = c;
        this.storeEpilogue = storeEpilogue;
        column = ContractionMatcher.stencilColumn(c);
        if (column < 0) throw new IllegalArgumentException("not a stencil contraction (no unit-stride column variable): " + c);
        outerVars = IntStream.range(0, c.vars().size()).filter(v -> role(v) == Role.BATCH || role(v) == Role.M).toArray();
        rowVars = IntStream.range(0, c.vars().size()).filter(v -> role(v) == Role.N && v != column).toArray();
        tapVars = IntStream.range(0, c.vars().size()).filter(v -> role(v) == Role.K).toArray();
        columnStrideB = c.b().stride(column);
        plans = new ExtentPlans<>(c, Tables::new);
    }

    private Role role(int v) { return contraction.vars().get(v).role(); }

    /** Whether a run at the full extents reads padded planes ({@link PlaneStencil}), and applies the epilogue as it stores. */
    boolean readsPlanes() { return plans.full().planes != null; }

    boolean appliesEpilogue() { return plans.full().planes != null && plans.full().epilogueApplied; }

    /**
     * The contraction at fixed extents: each role's contribution to every address and gate as one table look-up
     * (outer points: batch and M variables; rows: N variables but the column; taps: K variables).
     */
    private final class Tables {
        final int outer, rows, columns, taps;
        final long[] outerA, outerB, outerC, rowB, rowC, tapA, tapB;
        /** Per gate of A (then of B): its value's part from the outer points, the rows and the taps. */
        final long[][] gateOuter, gateRow, gateTap;
        final long[] gateLo, gateHi, gateColumn;
        final int gatesA;

        Tables(long[] ext) {
            Contraction c = contraction;
            outerA = offset(GemmSide.table(outerVars, ext, c.a().strides()), c.a().offset());
            outerB = offset(GemmSide.table(outerVars, ext, c.b().strides()), c.b().offset());
            outerC = offset(GemmSide.table(outerVars, ext, c.c().strides()), c.c().offset());
            rowB = GemmSide.table(rowVars, ext, c.b().strides());
            rowC = GemmSide.table(rowVars, ext, c.c().strides());
            tapA = GemmSide.table(tapVars, ext, c.a().strides());
            tapB = GemmSide.table(tapVars, ext, c.b().strides());
            outer = outerA.length;
            rows = rowB.length;
            columns = (int) ext[column];
            taps = tapA.length;
            List<Gate> gates = new java.util.ArrayList<>(c.a().gates());
            gatesA = gates.size();
            gates.addAll(c.b().gates());
            int g = gates.size();
            gateOuter = new long[g][];
            gateRow = new long[g][];
            gateTap = new long[g][];
            gateLo = new long[g];
            gateHi = new long[g];
            gateColumn = new long[g];
            for (int i = 0; i < g; i++) {
                long[] coeffs = gates.get(i).coeffs();
                gateOuter[i] = GemmSide.table(outerVars, ext, coeffs);
                gateRow[i] = GemmSide.table(rowVars, ext, coeffs);
                gateTap[i] = GemmSide.table(tapVars, ext, coeffs);
                gateLo[i] = gates.get(i).lo();
                gateHi[i] = gates.get(i).hi();
                gateColumn[i] = coeffs[column];
            }
            precomputeRows();
            planes = planes(ext);
        }

        /** The kernel over zero-padded planes, when the contraction is a 2-D window over planes; else null (why is logged). */
        final PlaneStencil planes;
        /** Whether {@link #planes} applies the epilogue as it stores. */
        boolean epilogueApplied;

        private PlaneStencil planes(long[] ext) {
            if (outer == 0 || rows == 0 || columns == 0 || taps == 0) return null;
            Contraction c = contraction;
            PlaneGeometry.Found found = PlaneGeometry.of(c, ext, column, outerVars, rowVars, tapVars);
            if (found.geometry() == null) {
                logOnce("a stencil of " + outer + " x " + rows + " x " + columns + " outputs and " + taps + " taps runs row by row, not over padded planes: "
                        + found.whyNot());
                return null;
            }
            PlaneGeometry g = found.geometry();
            if (g.sx == 2 && g.outColumns >= WIDE_STRIDED_COLUMNS) {
                logOnce("a stencil of " + outer + " x " + rows + " x " + columns + " outputs runs row by row, not over padded planes: a stride-2 row of " + g.outColumns
                        + " outputs (planes were measured faster only below " + WIDE_STRIDED_COLUMNS + " columns)");
                return null;
            }
            int[] ky = new int[taps], kx = new int[taps];
            int inner = (int) ext[tapVars[1]];
            for (int k = 0; k < taps; k++) {
                int major = k / inner, minor = k % inner;
                ky[k] = g.kyVar == tapVars[0] ? major : minor;
                kx[k] = g.kyVar == tapVars[0] ? minor : major;
            }
            StencilEpilogue epilogue = null;
            if (storeEpilogue != null) {
                StencilEpilogue.Found e = StencilEpilogue.of(storeEpilogue, ext, column, outerVars, rowVars);
                if (e.epilogue() == null) logOnce("a stencil of " + outer + " x " + rows + " x " + columns + " outputs runs its epilogue as a pass of its own: " + e.whyNot());
                epilogue = e.epilogue();
            }
            epilogueApplied = epilogue != null;
            return new PlaneStencil(g, outerB.clone(), outerC, rowC, ky, kx, epilogue);
        }

        /**
         * Where no gate of B moves with the outer points (convolutions: padding depends on pixels and taps only), each
         * row's taps and intervals, computed once: {@code rowTaps[r]} (the taps whose gates hold somewhere in the row),
         * {@code rowFrom[r][i]} and {@code rowTo[r][i]} (tap i's columns), {@code rowInner[r]} (the columns every tap
         * reads: {from, to}). Null where they move with the outer points (computed per row).
         */
        int[][] rowTaps, rowFrom, rowTo, rowInner;

        long work() { return (long) outer * rows * columns * taps; }

        void precomputeRows() {
            if (outer == 0 || rows == 0) return;
            for (int g = gatesA; g < gateLo.length; g++) for (long v : gateOuter[g]) if (v != 0) return;
            rowTaps = new int[rows][];
            rowFrom = new int[rows][];
            rowTo = new int[rows][];
            rowInner = new int[rows][];
            Intervals in = new Intervals(taps);
            for (int r = 0; r < rows; r++) {
                in.of(this, 0, r, false);
                int[] taps = Arrays.copyOf(in.taps, in.n), from = Arrays.copyOf(in.from, in.n), to = Arrays.copyOf(in.to, in.n);
                int[] inner = {in.inner0, in.inner1};
                // a row like the one before shares its arrays: rows() groups rows by identity
                boolean same = r > 0 && Arrays.equals(taps, rowTaps[r - 1]) && Arrays.equals(from, rowFrom[r - 1])
                        && Arrays.equals(to, rowTo[r - 1]) && Arrays.equals(inner, rowInner[r - 1]);
                rowTaps[r] = same ? rowTaps[r - 1] : taps;
                rowFrom[r] = same ? rowFrom[r - 1] : from;
                rowTo[r] = same ? rowTo[r - 1] : to;
                rowInner[r] = same ? rowInner[r - 1] : inner;
            }
        }

        private static long[] offset(long[] t, long by) {
            for (int i = 0; i < t.length; i++) t[i] += by;
            return t;
        }
    }

    /**
     * Writes {@code C = A B} for every point of the variables ({@code vars} bound the variables with a limit), and
     * returns whether the store epilogue given at construction was applied too (else C holds the sums).
     *
     * @throws IndexOutOfBoundsException when an element read or written lies outside its buffer
     */
    boolean run(MemorySegment[] buffers, long[] vars) { return run(buffers, vars, null); }

    /** A's parameter: the weights. */
    int aParam() { return contraction.a().param(); }

    /**
     * The weights of every outer point at the full extents, {@code [o * taps + k]}, read once from A when A is a constant
     * ({@code aImmutable}) and the stencil reads padded planes; else null. Read per plane from A's buffer (a gate check and
     * a load a tap), they took 9 % of a 576 x 14 x 14 depthwise convolution and 18 % of a 960 x 7 x 7 one.
     */
    float[] packWeights(MemorySegment[] buffers, boolean aImmutable) {
        Tables t = plans.full();
        if (!aImmutable || t.planes == null || t.outer == 0 || (long) t.outer * t.taps > Integer.MAX_VALUE) return null;
        MemorySegment a = buffers[aParam()];
        float[] all = new float[t.outer * t.taps], one = new float[t.taps];
        for (int o = 0; o < t.outer; o++) {
            weights(t, a, o, one);
            System.arraycopy(one, 0, all, o * t.taps, t.taps);
        }
        return all;
    }

    /** {@link #run(MemorySegment[], long[])} with the weights from {@link #packWeights} (null: read from A). */
    boolean run(MemorySegment[] buffers, long[] vars, float[] packedWeights) {
        Tables t = plans.at(vars);
        if (t.outer == 0 || t.rows == 0 || t.columns == 0) return false;
        MemorySegment a = buffers[contraction.a().param()], b = buffers[contraction.b().param()], c = buffers[0];
        int workers = WorkerPool.size();
        if (t.planes != null) {
            PlaneStencil p = t.planes;
            int taps = t.taps;
            PlaneStencil.Weights w = packedWeights != null && t == plans.full() ? (o, into) -> System.arraycopy(packedWeights, o * taps, into, 0, taps)
                    : (o, into) -> weights(t, a, o, into);
            float[] bounds = p.bounds(buffers);
            long units = p.units();
            if (workers < 2 || t.work() < PLANE_PARALLEL_MIN || units < 2) p.run(b, c, buffers, w, bounds, 0, units);
            else WorkerPool.forRanges(units, WorkerPool.balancedShares(units), (start, end) -> p.run(b, c, buffers, w, bounds, start, end));
            return bounds != null;
        }
        long jobs = (long) t.outer * t.rows;
        if (workers < 2 || t.work() < PARALLEL_MIN || jobs < 2) {
            rows(t, a, b, c, 0, jobs);
            return false;
        }
        WorkerPool.forRanges(jobs, WorkerPool.balancedShares(jobs), (start, end) -> rows(t, a, b, c, start, end));
        return false;
    }

    private static void logOnce(String message) { LOG.info(message); }

    /** Most rows computed side by side (one vector strip each) when their rows are short. */
    private static final int GROUP = 4;

    /**
     * Rows {@code [start, end)} of C, numbered outer point major. Consecutive rows of one outer point that read the
     * same taps over the same columns (a convolution's rows away from the top and bottom padding) go in groups of up
     * to {@code GROUP} when short, so each tap's weight serves two strips side by side.
     */
    private void rows(Tables t, MemorySegment a, MemorySegment b, MemorySegment c, long start, long end) {
        Scratch s = SCRATCH.get();
        s.ensure(t.taps);
        s.ensureStrips(GROUP * (t.columns / L + 3));
        Intervals in = s.intervals;
        int outerNow = -1;
        boolean exact = false;
        long job = start;
        while (job < end) {
            int o = (int) (job / t.rows), r = (int) (job % t.rows);
            if (o != outerNow) {
                exact = weights(t, a, o, s.weights);
                outerNow = o;
            }
            int group = 1;
            if (t.rowTaps == null || exact) {
                // exact: every tap, even one whose gates fail for the whole row (a NaN weight times 0 is NaN, as the loops compute it)
                in.of(t, o, r, exact);
                s.bRows[0] = t.outerB[o] + t.rowB[r];
                s.cRows[0] = t.outerC[o] + t.rowC[r];
                columns(t, b, c, s, 1, in.taps, in.from, in.to, in.n, exact ? t.columns : in.inner0, exact ? t.columns : in.inner1);
            } else {
                int[] taps = t.rowTaps[r], inner = t.rowInner[r];
                if (inner[1] - inner[0] < GROUP * L) {
                    while (group < GROUP && job + group < end && r + group < t.rows && t.rowTaps[r + group] == taps
                            && t.rowInner[r + group] == inner) group++;
                }
                for (int i = 0; i < group; i++) {
                    s.bRows[i] = t.outerB[o] + t.rowB[r + i];
                    s.cRows[i] = t.outerC[o] + t.rowC[r + i];
                }
                columns(t, b, c, s, group, taps, t.rowFrom[r], t.rowTo[r], taps.length, inner[0], inner[1]);
            }
            job += group;
        }
    }

    /** The weights of outer point {@code o}, 0 where A's gates fail; whether one is not finite. */
    private static boolean weights(Tables t, MemorySegment a, int o, float[] w) {
        boolean nonFinite = false;
        for (int k = 0; k < t.taps; k++) {
            boolean read = true;
            for (int g = 0; g < t.gatesA; g++) {
                long v = t.gateOuter[g][o] + t.gateTap[g][k];
                read &= v >= t.gateLo[g] && v < t.gateHi[g];
            }
            w[k] = read ? a.getAtIndex(JAVA_FLOAT_UNALIGNED, t.outerA[o] + t.tapA[k]) : 0f;
            nonFinite |= !Float.isFinite(w[k]);
        }
        return nonFinite;
    }

    /**
     * The {@code rows} rows at {@code s.bRows} and {@code s.cRows}, which read taps {@code taps[0..n)} over columns
     * {@code [from[i], to[i])} each, every tap over {@code [inner0, inner1)}. Those inner columns are cut into strips
     * of one vector of columns, computed several at a time, each strip's sums in a register of its own so that several
     * chains of dependent multiply-adds are in flight: whole strips (the last one overlapping the one before rather than
     * running past the inner columns), or, for a row narrower than a vector, one strip masked to the inner columns (the
     * same mask for every tap). The columns outside, a padding's width at each end, go one by one.
     */
    private void columns(Tables t, MemorySegment b, MemorySegment c, Scratch s, int rows, int[] taps, int[] from, int[] to, int n,
                         int inner0, int inner1) {
        int columns = t.columns, strips = 0, width = inner1 - inner0;
        float[] w = s.weights;
        long[] tapB = t.tapB, sb = s.stripB, sc = s.stripC;
        if (columnStrideB == 1 && columns <= L && width < L) {
            // a row within one vector: one strip each, every tap's loads masked to its columns (its edges too)
            long[] masks = s.masks;
            for (int i = 0; i < n; i++) masks[i] = lanes(from[i], Math.min(to[i], columns));
            for (int i = 0; i < rows; i += 2) {
                int k = Math.min(i + 1, rows - 1);
                rowsMasked2(b, c, s.bRows[i], s.bRows[k], s.cRows[i], s.cRows[k], columns, masks, w, tapB, taps, n);
            }
            return;
        }
        for (int i = 0; i < rows; i++) {
            long bRow = s.bRows[i], cRow = s.cRows[i];
            for (int x = inner0; x < inner1; x += L) {
                int at = width >= L ? Math.min(x, inner1 - L) : x;
                sb[strips] = bRow + columnStrideB * at;
                sc[strips++] = cRow + at;
            }
            for (int x = 0; x < inner0; x++) c.setAtIndex(JAVA_FLOAT_UNALIGNED, cRow + x, column(b, bRow, x, w, tapB, taps, from, to, n));
            for (int x = inner1; x < columns; x++) c.setAtIndex(JAVA_FLOAT_UNALIGNED, cRow + x, column(b, bRow, x, w, tapB, taps, from, to, n));
        }
        int j = 0, cols = Math.min(width, L);
        if (columnStrideB == 1 && cols == L) {
            for (; j + 4 <= strips; j += 4) contiguous4(b, c, sb[j], sb[j + 1], sb[j + 2], sb[j + 3], sc[j], sc[j + 1], sc[j + 2], sc[j + 3], w, tapB, taps, n);
        }
        for (; j < strips; j += 2) {
            int k = Math.min(j + 1, strips - 1); // an odd strip out is computed twice (the same sums, stored twice)
            if (columnStrideB == 1) {
                if (cols == L) contiguous2(b, c, sb[j], sb[k], sc[j], sc[k], w, tapB, taps, n);
                else narrow2(b, c, sb[j], sb[k], sc[j], sc[k], cols, w, tapB, taps, n);
            } else {
                if (cols == L) everyOther2(b, c, sb[j], sb[k], sc[j], sc[k], w, tapB, taps, n);
                else everyOtherNarrow2(b, c, sb[j], sb[k], sc[j], sc[k], cols, w, tapB, taps, n);
            }
        }
    }

    /**
     * The sum at column {@code x} of a row: each tap's product, with 0 where its columns do not include x (so a
     * non-finite weight still makes NaN there, as the loops compute it).
     */
    private float column(MemorySegment b, long bRow, int x, float[] w, long[] tapB, int[] taps, int[] from, int[] to, int n) {
        float acc = -0.0f;
        long at = bRow + columnStrideB * x;
        for (int i = 0; i < n; i++) {
            float v = x >= from[i] && x < to[i] ? b.getAtIndex(JAVA_FLOAT_UNALIGNED, at + tapB[taps[i]]) : 0f;
            acc = Math.fma(w[taps[i]], v, acc);
        }
        return acc;
    }

    // Each form of strip is a small method of its own, its loads, masks and stores inline, with one loop and no branch.
    // HotSpot keeps a vector in registers only while every Vector API call on it is inlined and intrinsified in one
    // compiled method; a vector passed to a helper it does not inline, merged at a branch, or computed past the
    // method's inlining budget (a few dozen vector operations, each a deep call tree; four loads a tap each masked by
    // its own mask are past it) is boxed on the heap, ten times slower. Masks are leading lanes, made once per call:
    // a mask with a negative offset or per tap took slow paths (a depthwise 3x3 conv over 144 x 56 x 56: 1.1 ms with
    // per-tap masks at the edges, 0.65 ms with the edges one column at a time, one thread). Several strips at once: a
    // strip's taps are one chain of dependent multiply-adds (4 cycles each), so one strip at a time waits on its latency.

    /** Four whole strips of a run of unit stride: B's runs from elements {@code b0..b3}, C's from {@code c0..c3}. */
    private static void contiguous4(MemorySegment b, MemorySegment c, long b0, long b1, long b2, long b3, long c0, long c1, long c2, long c3,
                                    float[] w, long[] tapB, int[] taps, int n) {
        FloatVector acc0 = FloatVector.broadcast(F, -0.0f), acc1 = acc0, acc2 = acc0, acc3 = acc0;
        for (int i = 0; i < n; i++) {
            int k = taps[i];
            long tb = tapB[k];
            FloatVector wk = FloatVector.broadcast(F, w[k]);
            acc0 = FloatVector.fromMemorySegment(F, b, (b0 + tb) * 4, ORDER).fma(wk, acc0);
            acc1 = FloatVector.fromMemorySegment(F, b, (b1 + tb) * 4, ORDER).fma(wk, acc1);
            acc2 = FloatVector.fromMemorySegment(F, b, (b2 + tb) * 4, ORDER).fma(wk, acc2);
            acc3 = FloatVector.fromMemorySegment(F, b, (b3 + tb) * 4, ORDER).fma(wk, acc3);
        }
        acc0.intoMemorySegment(c, c0 * 4, ORDER);
        acc1.intoMemorySegment(c, c1 * 4, ORDER);
        acc2.intoMemorySegment(c, c2 * 4, ORDER);
        acc3.intoMemorySegment(c, c3 * 4, ORDER);
    }

    /** Two whole strips of a run of unit stride. */
    private static void contiguous2(MemorySegment b, MemorySegment c, long b0, long b1, long c0, long c1, float[] w, long[] tapB, int[] taps, int n) {
        FloatVector acc0 = FloatVector.broadcast(F, -0.0f), acc1 = acc0;
        for (int i = 0; i < n; i++) {
            int k = taps[i];
            FloatVector wk = FloatVector.broadcast(F, w[k]);
            acc0 = FloatVector.fromMemorySegment(F, b, (b0 + tapB[k]) * 4, ORDER).fma(wk, acc0);
            acc1 = FloatVector.fromMemorySegment(F, b, (b1 + tapB[k]) * 4, ORDER).fma(wk, acc1);
        }
        acc0.intoMemorySegment(c, c0 * 4, ORDER);
        acc1.intoMemorySegment(c, c1 * 4, ORDER);
    }

    /** Two whole strips of a run of stride 2: lane i is element 2i, read by two overlapping loads ending at the last element read and one permute. */
    private static void everyOther2(MemorySegment b, MemorySegment c, long b0, long b1, long c0, long c1, float[] w, long[] tapB, int[] taps, int n) {
        FloatVector acc0 = FloatVector.broadcast(F, -0.0f), acc1 = acc0;
        for (int i = 0; i < n; i++) {
            int k = taps[i];
            FloatVector wk = FloatVector.broadcast(F, w[k]);
            long at0 = (b0 + tapB[k]) * 4, at1 = (b1 + tapB[k]) * 4;
            acc0 = FloatVector.fromMemorySegment(F, b, at0, ORDER).rearrange(EVERY_OTHER, FloatVector.fromMemorySegment(F, b, at0 + (L - 1) * 4L, ORDER))
                    .fma(wk, acc0);
            acc1 = FloatVector.fromMemorySegment(F, b, at1, ORDER).rearrange(EVERY_OTHER, FloatVector.fromMemorySegment(F, b, at1 + (L - 1) * 4L, ORDER))
                    .fma(wk, acc1);
        }
        acc0.intoMemorySegment(c, c0 * 4, ORDER);
        acc1.intoMemorySegment(c, c1 * 4, ORDER);
    }

    /**
     * Two strips of {@code cols < L} columns of a run of unit stride (a row narrower than a vector), the loads masked to
     * them (four strips' masked loads would be past the inlining budget).
     */
    private static void narrow2(MemorySegment b, MemorySegment c, long b0, long b1, long c0, long c1, int cols, float[] w, long[] tapB,
                                int[] taps, int n) {
        VectorMask<Float> m = F.indexInRange(0, cols);
        FloatVector acc0 = FloatVector.broadcast(F, -0.0f), acc1 = acc0;
        for (int i = 0; i < n; i++) {
            int k = taps[i];
            FloatVector wk = FloatVector.broadcast(F, w[k]);
            acc0 = FloatVector.fromMemorySegment(F, b, (b0 + tapB[k]) * 4, ORDER, m).fma(wk, acc0);
            acc1 = FloatVector.fromMemorySegment(F, b, (b1 + tapB[k]) * 4, ORDER, m).fma(wk, acc1);
        }
        acc0.intoMemorySegment(c, c0 * 4, ORDER, m);
        acc1.intoMemorySegment(c, c1 * 4, ORDER, m);
    }

    /** Two rows of {@code cols <= L} columns of a run of unit stride, the loads of tap i masked by {@code masks[i]}. */
    private static void rowsMasked2(MemorySegment b, MemorySegment c, long b0, long b1, long c0, long c1, int cols, long[] masks, float[] w,
                                    long[] tapB, int[] taps, int n) {
        FloatVector acc0 = FloatVector.broadcast(F, -0.0f), acc1 = acc0;
        for (int i = 0; i < n; i++) {
            int k = taps[i];
            VectorMask<Float> m = VectorMask.fromLong(F, masks[i]);
            FloatVector wk = FloatVector.broadcast(F, w[k]);
            acc0 = FloatVector.fromMemorySegment(F, b, (b0 + tapB[k]) * 4, ORDER, m).fma(wk, acc0);
            acc1 = FloatVector.fromMemorySegment(F, b, (b1 + tapB[k]) * 4, ORDER, m).fma(wk, acc1);
        }
        VectorMask<Float> out = F.indexInRange(0, cols);
        acc0.intoMemorySegment(c, c0 * 4, ORDER, out);
        acc1.intoMemorySegment(c, c1 * 4, ORDER, out);
    }

    /** The bits of lanes {@code [lo, hi)} within {@code [0, L)}. */
    private static long lanes(int lo, int hi) {
        int l = Math.max(lo, 0), h = Math.min(hi, L);
        if (h <= l) return 0;
        return (h >= 64 ? -1L : (1L << h) - 1) & (-1L << l);
    }

    /** Two strips of {@code cols < L} columns of a run of stride 2: the loads masked to elements {@code [0, 2 cols - 1)}. */
    private static void everyOtherNarrow2(MemorySegment b, MemorySegment c, long b0, long b1, long c0, long c1, int cols, float[] w, long[] tapB,
                                          int[] taps, int n) {
        int end = 2 * cols - 1;
        VectorMask<Float> even = F.indexInRange(0, end), odd = F.indexInRange(0, end - L + 1), out = F.indexInRange(0, cols);
        FloatVector acc0 = FloatVector.broadcast(F, -0.0f), acc1 = acc0;
        for (int i = 0; i < n; i++) {
            int k = taps[i];
            FloatVector wk = FloatVector.broadcast(F, w[k]);
            long at0 = (b0 + tapB[k]) * 4, at1 = (b1 + tapB[k]) * 4;
            acc0 = FloatVector.fromMemorySegment(F, b, at0, ORDER, even)
                    .rearrange(EVERY_OTHER, FloatVector.fromMemorySegment(F, b, at0 + (L - 1) * 4L, ORDER, odd)).fma(wk, acc0);
            acc1 = FloatVector.fromMemorySegment(F, b, at1, ORDER, even)
                    .rearrange(EVERY_OTHER, FloatVector.fromMemorySegment(F, b, at1 + (L - 1) * 4L, ORDER, odd)).fma(wk, acc1);
        }
        acc0.intoMemorySegment(c, c0 * 4, ORDER, out);
        acc1.intoMemorySegment(c, c1 * 4, ORDER, out);
    }

    private static long ceilDiv(long a, long b) { return -Math.floorDiv(-a, b); }
}

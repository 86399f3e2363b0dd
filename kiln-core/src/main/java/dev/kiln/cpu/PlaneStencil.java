package dev.kiln.cpu;

import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.VectorMask;
import jdk.incubator.vector.VectorSpecies;

import java.lang.foreign.MemorySegment;
import java.nio.ByteOrder;
import java.util.Arrays;

import static java.lang.foreign.ValueLayout.JAVA_FLOAT_UNALIGNED;

/**
 * A 2-D stencil ({@link PlaneGeometry}: depthwise and small-group convolutions) over zero-padded copies of its planes.
 * The work is cut into units, a band of output rows of one outer point (channel) each, numbered outer point major. For
 * a unit, the band's plane rows are copied into a scratch of {@code sy * sx} phases ({@link PlaneGeometry}), zeros where
 * B's gates fail, so that each tap reads one contiguous run per band: output {@code q = r * width + x} of the band
 * (row {@code r}, column {@code x}; columns from {@code outColumns} to {@code width} are junk) is
 * {@code sum_k w[k] * scratch[tapOffset[k] + q]}. The band's sums are computed as flat runs of vectors, eight at a
 * time, with no mask, no gate and no per-row set-up, so a 7 x 7 plane is 4 vectors per tap, not 7 masked ones; the
 * junk columns are dropped as the rows are stored, the epilogue (a bias per channel, ReLU/clamp: {@link StencilEpilogue})
 * applied on the way. A stride-2 band's rows wider than a vector are split into even and odd columns as they are read
 * from B; narrower ones are copied whole, then split by one pass of whole vectors over each row phase (a masked split
 * per row cost twice as much on 14 x 14 planes).
 *
 * <p>Every tap multiplies every output, padding zeros included, as the loops do, so a non-finite weight reaches every
 * sum it would there. The sums are reassociated (taps in order, with FMA), as the numerics policy allows.
 */
final class PlaneStencil {
    private static final VectorSpecies<Float> F = FloatVector.SPECIES_PREFERRED;
    private static final int L = F.length();
    private static final ByteOrder ORDER = ByteOrder.nativeOrder();
    /**
     * Plane columns read from which a stride-2 band's rows are split as they are read ({@link #fill}): rows wider
     * than a vector (28-wide rows 7 % faster, 56-wide 4 %; 14-wide ones, one masked pair of vectors each, 9 % slower).
     */
    static final int SPLIT_ROWS_FROM = L + 1;
    /** Sums per band at most (outputs and junk columns): a band's scratch and sums stay in the L1 cache. */
    private static final int BAND_OUTPUTS = 1024;
    /**
     * Most pixels of a plane read flat ({@link #runFlat}): four output vectors. A 7 x 7 plane took 46 ns flat against 66
     * banded (one thread, 960 channels); a 14 x 14 plane, 13 vectors each loading every tap under its mask, 156 against
     * 125 ns.
     */
    static final int FLAT_MAX_PIXELS = 4 * L;

    /** The weights of an outer point, every tap, 0 where A's gates fail. */
    @FunctionalInterface
    interface Weights {
        void of(int outer, float[] w);
    }

    private final PlaneGeometry g;
    private final long[] outerB, outerC, rowC;
    private final int outer, taps, width, bandRows, bands, phaseSize, planeSize, rowsSize, outSize;
    /** Where tap k's run starts in a band's scratch. */
    private final int[] tapOffset;
    /** Per row phase: the phase rows read, {@code [rowLo, rowHi + band rows)} (empty where {@code rowLo > rowHi}). */
    private final int[] rowLo, rowHi;
    /** The least {@code rowLo} and the greatest {@code rowHi} of the phases read. */
    private final int minRowLo, maxRowHi;
    /** The plane columns B has and some tap reads, {@code [columnsLo, columnsHi)}: each column phase's copied ones. */
    private final int columnsLo, columnsHi;
    /** Per column phase: the phase columns read, {@code [hullLo, hullHi)}, of which {@code [copyLo, copyHi)} exist in B. */
    private final int[] hullLo, hullHi, copyLo, copyHi;
    private final StencilEpilogue epilogue;
    /**
     * Whether the window is 3 x 3 at stride 1 and dilation 1, its taps in row-major order, on rows at least a vector wide:
     * then four output rows are summed at a time ({@link #rows4}).
     */
    private final boolean window3x3;
    /**
     * Whether output row y + 1 follows row y in C and each addend is the same for every row, so that a band's
     * outputs are one run.
     */
    private final boolean contiguous;
    /**
     * A small plane at stride 1 whose output is the size of its input (a "same" padding), read flat ({@link #runFlat}):
     * its {@link #flatSize} pixels copied after {@link #flatMargin} zeros, output pixel {@code o} reads pixel
     * {@code o + flatTap[k]} for tap k, and {@code flatLanes[j * taps + k]} are the lanes of output vector j whose tap k
     * stays within its row (the others read a neighbouring row's pixel, masked to 0). Null where it is not read so.
     */
    private final long[] flatLanes;
    private final int[] flatTap;
    private final int flatSize, flatMargin;

    private static final ThreadLocal<Scratch> SCRATCH = ThreadLocal.withInitial(Scratch::new);

    private static final class Scratch {
        float[] plane = new float[0], rows = new float[0], sums = new float[0], stage = new float[0], weights = new float[0];

        void ensure(int planeSize, int rowsSize, int outSize, int taps) {
            if (plane.length < planeSize) plane = new float[planeSize];
            if (rows.length < rowsSize) rows = new float[rowsSize];
            if (sums.length < outSize) sums = new float[outSize];
            if (stage.length < outSize) stage = new float[outSize];
            if (weights.length < taps) weights = new float[taps];
        }
    }

    /**
     * @param outerB    B's element of plane pixel (0, 0) per outer point
     * @param outerC    C's element of output (0, 0) per outer point
     * @param rowC      C's offset of output row y
     * @param tapKy     window row of tap k (the order of the weights)
     * @param tapKx     window column of tap k
     * @param epilogue  applied as the rows are stored, or null
     */
    PlaneStencil(PlaneGeometry g, long[] outerB, long[] outerC, long[] rowC, int[] tapKy, int[] tapKx, StencilEpilogue epilogue) {
        this.g = g;
        this.outerB = outerB;
        this.outerC = outerC;
        this.rowC = rowC;
        this.epilogue = epilogue;
        outer = outerB.length;
        taps = tapKy.length;
        width = g.width;
        bandRows = Math.max(1, Math.min(g.outRows, BAND_OUTPUTS / width));
        bands = (g.outRows + bandRows - 1) / bandRows;
        phaseSize = (bandRows + g.haloRows) * width;
        int bandedSize = g.phases() * phaseSize + width + 4 * L;
        outSize = bandRows * width + 4 * L;
        // stride 2: each row phase's rows whole, 2 * width columns a row, read two vectors past the last
        rowsSize = g.sx == 2 ? g.sy * 2 * phaseSize + 4 * L : 0;
        tapOffset = new int[taps];
        rowLo = new int[g.sy];
        rowHi = new int[g.sy];
        Arrays.fill(rowLo, Integer.MAX_VALUE);
        Arrays.fill(rowHi, -1);
        hullLo = new int[g.sx];
        hullHi = new int[g.sx];
        Arrays.fill(hullLo, Integer.MAX_VALUE);
        for (int k = 0; k < taps; k++) {
            int ky = tapKy[k], kx = tapKx[k];
            tapOffset[k] = g.phase(ky, kx) * phaseSize + g.offsetInPhase(ky, kx);
            int a = g.dy * ky % g.sy, i = g.dy * ky / g.sy, b = g.dx * kx % g.sx, j = g.dx * kx / g.sx;
            rowLo[a] = Math.min(rowLo[a], i);
            rowHi[a] = Math.max(rowHi[a], i);
            hullLo[b] = Math.min(hullLo[b], j);
            hullHi[b] = Math.max(hullHi[b], j + g.outColumns);
        }
        boolean rowMajor3x3 = taps == 9;
        for (int k = 0; k < taps && rowMajor3x3; k++) rowMajor3x3 = tapKy[k] == k / 3 && tapKx[k] == k % 3;
        window3x3 = rowMajor3x3 && g.sy == 1 && g.sx == 1 && g.dy == 1 && g.dx == 1 && width >= L;
        contiguous = follows(rowC, g.outColumns) && (epilogue == null
                || (epilogue.terms < 1 || follows(epilogue.row0, 0)) && (epilogue.terms < 2 || follows(epilogue.row1, 0)));
        int least = Integer.MAX_VALUE, greatest = -1;
        for (int a = 0; a < g.sy; a++) {
            if (rowLo[a] > rowHi[a]) continue;
            least = Math.min(least, rowLo[a]);
            greatest = Math.max(greatest, rowHi[a]);
        }
        minRowLo = least;
        maxRowHi = greatest;
        copyLo = new int[g.sx];
        copyHi = new int[g.sx];
        for (int b = 0; b < g.sx; b++) {
            if (hullLo[b] > hullHi[b]) hullLo[b] = hullHi[b] = 0;
            // phase column j is plane column v = sx j + b, which exists for xlo <= v < xhi
            long lo = Math.max(hullLo[b], ceilDiv(g.xlo - b, g.sx)), hi = Math.min(hullHi[b], ceilDiv(g.xhi - b, g.sx));
            copyLo[b] = (int) Math.min(lo, hullHi[b]);
            copyHi[b] = (int) Math.max(copyLo[b], hi);
        }
        // the plane columns copied for stride 2: the column phases' copied columns, interleaved
        int cl = Integer.MAX_VALUE, ch = 0;
        for (int b = 0; b < g.sx; b++) {
            if (copyLo[b] >= copyHi[b]) continue;
            cl = Math.min(cl, g.sx * copyLo[b] + b);
            ch = Math.max(ch, g.sx * (copyHi[b] - 1) + b + 1);
        }
        columnsLo = Math.min(cl, ch);
        columnsHi = ch;
        int h = (int) Math.min(Integer.MAX_VALUE, g.yhi - g.ylo), wd = (int) Math.min(Integer.MAX_VALUE, g.xhi - g.xlo);
        boolean flat = g.sy == 1 && g.sx == 1 && (g.dy == 1 || g.kh == 1) && (g.dx == 1 || g.kw == 1) && contiguous && bands == 1
                && g.ylo >= 0 && g.xlo >= 0 && g.ylo < g.kh && g.xlo < g.kw && h == g.outRows && wd == g.outColumns && g.rowStride == wd
                && (long) h * wd >= L && (long) h * wd <= FLAT_MAX_PIXELS;
        if (flat) {
            flatSize = h * wd;
            flatMargin = (int) (g.ylo * wd + g.xlo);
            flatTap = new int[taps];
            int vectors = (flatSize + L - 1) / L;
            flatLanes = new long[vectors * taps];
            for (int k = 0; k < taps; k++) {
                int dyk = tapKy[k] - (int) g.ylo, dxk = tapKx[k] - (int) g.xlo;
                flatTap[k] = dyk * wd + dxk;
                for (int j = 0; j < vectors; j++) {
                    int pos = Math.min(j * L, flatSize - L);
                    long bits = 0;
                    for (int i = 0; i < L; i++) {
                        int x = (pos + i) % wd + dxk;
                        if (x >= 0 && x < wd) bits |= 1L << i;
                    }
                    flatLanes[j * taps + k] = bits;
                }
            }
            // zeros before the plane for the window's rows above it, after it for those below and a vector's overrun
            planeSize = Math.max(bandedSize, flatMargin + flatSize + (g.kh - 1 - (int) g.ylo) * wd + g.kw + L);
        } else {
            flatLanes = null;
            flatTap = null;
            flatSize = flatMargin = 0;
            planeSize = bandedSize;
        }
    }

    /** Units of work: bands of rows of each outer point. */
    long units() { return (long) outer * bands; }

    /**
     * The epilogue's bounds for a run over {@code buffers}, {@code {lower, upper}}, infinite where it has none (max with
     * -inf and min with +inf leave every value as it is, NaN and -0.0 too), or null where it is not applied in this run:
     * there is none, or a bound read from a buffer is not one {@code Math.min} applies ({@link StencilEpilogue#upper}).
     */
    float[] bounds(MemorySegment[] buffers) {
        if (epilogue == null) return null;
        float lower = epilogue.lower(buffers), upper = epilogue.upper(buffers);
        return Float.isNaN(upper) && epilogue.upperFrom != null ? null : new float[]{lower, upper};
    }

    /**
     * Units {@code [start, end)}: their sums stored in C, through the epilogue where {@code bounds} (from
     * {@link #bounds}) is not null.
     */
    void run(MemorySegment b, MemorySegment c, MemorySegment[] buffers, Weights weights, float[] bounds, long start, long end) {
        boolean apply = bounds != null;
        float lower = apply ? bounds[0] : Float.NEGATIVE_INFINITY, upper = apply ? bounds[1] : Float.POSITIVE_INFINITY;
        Scratch s = SCRATCH.get();
        s.ensure(planeSize, rowsSize, outSize, taps);
        float[] plane = s.plane, planeRows = s.rows, sums = s.sums, w = s.weights;
        // the padding columns: no copy writes them (the scratch is the thread's, shared by every stencil it runs)
        Arrays.fill(plane, 0, planeSize, 0f);
        Arrays.fill(planeRows, 0, rowsSize, 0f);
        if (flatLanes != null) {
            runFlat(b, c, buffers, weights, apply, lower, upper, plane, w, start, end);
            return;
        }
        int weightsOf = -1;
        for (long unit = start; unit < end; unit++) {
            int o = (int) (unit / bands), y0 = (int) (unit % bands) * bandRows, rows = Math.min(bandRows, g.outRows - y0);
            if (o != weightsOf) {
                weights.of(o, w);
                weightsOf = o;
            }
            fill(b, plane, planeRows, outerB[o], y0, rows);
            sums(plane, sums, rows, w);
            float k0 = apply ? addend(buffers, 0, o, y0) : -0.0f, k1 = apply ? addend(buffers, 1, o, y0) : -0.0f;
            if (contiguous) storeRun(c, sums, s.stage, o, y0, rows, k0, k1, lower, upper);
            else store(c, buffers, apply, sums, o, y0, rows, lower, upper);
        }
    }

    /**
     * Planes {@code [start, end)} read flat: each plane copied after its zero margin (the first vector and a last one
     * ending at the plane's end), then its output vectors four at a time, each tap a load masked to the lanes whose tap
     * stays in the row, and stored through the epilogue into C, whose plane is one run. Each sum is the taps in order
     * from -0.0, a padding tap adding 0 times its weight, so the floats are those of the banded scratch; with no copy into
     * phases, no staging of the rows and no junk columns, a 7 x 7 plane took a third of the time.
     */
    private void runFlat(MemorySegment b, MemorySegment c, MemorySegment[] buffers, Weights weights, boolean apply, float lower, float upper,
                         float[] plane, float[] w, long start, long end) {
        int n = flatSize, m = flatMargin, vectors = (n + L - 1) / L;
        long skip = g.rowStride * g.ylo + g.xlo;
        for (long unit = start; unit < end; unit++) {
            int o = (int) unit;
            weights.of(o, w);
            long src = 4 * (outerB[o] + skip);
            for (int i = 0; i < n; i += L) {
                int at = Math.min(i, n - L);
                FloatVector.fromMemorySegment(F, b, src + 4L * at, ORDER).intoArray(plane, m + at);
            }
            float k0 = apply ? addend(buffers, 0, o, 0) : -0.0f, k1 = apply ? addend(buffers, 1, o, 0) : -0.0f;
            long cAt = 4 * (outerC[o] + rowC[0]);
            for (int j = 0; j < vectors; j += 4) {
                int last = vectors - 1;
                flat4(plane, w, Math.min(j, last), Math.min(j + 1, last), Math.min(j + 2, last), Math.min(j + 3, last), c, cAt, k0, k1, lower, upper);
            }
        }
    }

    /** Output vectors j0..j3 of a flat plane (repeats allowed: the same floats stored twice), into C from byte {@code cAt}. */
    private void flat4(float[] plane, float[] w, int j0, int j1, int j2, int j3, MemorySegment c, long cAt, float k0, float k1, float lower,
                       float upper) {
        int n = flatSize, m = flatMargin, taps = this.taps;
        int p0 = Math.min(j0 * L, n - L), p1 = Math.min(j1 * L, n - L), p2 = Math.min(j2 * L, n - L), p3 = Math.min(j3 * L, n - L);
        long[] lanes = flatLanes;
        int[] tap = flatTap;
        FloatVector a0 = FloatVector.broadcast(F, -0.0f), a1 = a0, a2 = a0, a3 = a0;
        for (int k = 0; k < taps; k++) {
            FloatVector wk = FloatVector.broadcast(F, w[k]);
            int t = m + tap[k];
            a0 = FloatVector.fromArray(F, plane, t + p0, VectorMask.fromLong(F, lanes[j0 * taps + k])).fma(wk, a0);
            a1 = FloatVector.fromArray(F, plane, t + p1, VectorMask.fromLong(F, lanes[j1 * taps + k])).fma(wk, a1);
            a2 = FloatVector.fromArray(F, plane, t + p2, VectorMask.fromLong(F, lanes[j2 * taps + k])).fma(wk, a2);
            a3 = FloatVector.fromArray(F, plane, t + p3, VectorMask.fromLong(F, lanes[j3 * taps + k])).fma(wk, a3);
        }
        a0.add(k0).add(k1).max(lower).min(upper).intoMemorySegment(c, cAt + 4L * p0, ORDER);
        a1.add(k0).add(k1).max(lower).min(upper).intoMemorySegment(c, cAt + 4L * p1, ORDER);
        a2.add(k0).add(k1).max(lower).min(upper).intoMemorySegment(c, cAt + 4L * p2, ORDER);
        a3.add(k0).add(k1).max(lower).min(upper).intoMemorySegment(c, cAt + 4L * p3, ORDER);
    }

    /**
     * The band's phases: rows {@code [y0, y0 + rows)} of output read the phase rows written here, from B where its
     * gates hold, else 0: each plane row copied into its phase, or at stride 2 split into its two column phases as it is
     * read ({@link EvenOdd#split}; rows narrower than {@link #SPLIT_ROWS_FROM} copied whole and split after,
     * {@link #fillRows}). The padding columns were zeroed when the run began and no copy writes them; so were rows of
     * padding, which are zeroed again only where another band may have copied rows there.
     */
    private void fill(MemorySegment b, float[] plane, float[] planeRows, long base, int y0, int rows) {
        int sy = g.sy, sx = g.sx;
        boolean splitAsRead = sx == 2 && columnsHi - columnsLo >= SPLIT_ROWS_FROM;
        if (sx == 2 && !splitAsRead) {
            fillRows(b, planeRows, base, y0, rows);
            for (int a = 0; a < sy; a++) if (rowLo[a] <= rowHi[a]) split(planeRows, plane, a, rowLo[a], rowHi[a] + rows);
            return;
        }
        if (sx == 1 && sy == 1) {
            fillRows1(b, plane, base, y0, rows);
            return;
        }
        VectorMask<Float> tail = lanes(0, (copyHi[0] - copyLo[0]) % L);
        int evenPhase = columnsLo & 1, evenAt = columnsLo >> 1, oddAt = (columnsLo + 1) >> 1;
        // plane rows in B's order (each row phase's rows interleaved with the others'), so B is read as one stream
        for (int i = minRowLo, last = maxRowHi + rows; i < last; i++) {
            for (int a = 0; a < sy; a++) {
                if (i < rowLo[a] || i >= rowHi[a] + rows) continue;
                long u = (long) sy * (y0 + i) + a;
                int row = a * sx * phaseSize + i * width;
                if (u < g.ylo || u >= g.yhi) {
                    // with one band, rows of padding are the same for every unit: zero since the run began
                    if (bands > 1) for (int p = 0; p < sx; p++) Arrays.fill(plane, row + p * phaseSize + hullLo[p], row + p * phaseSize + hullHi[p], 0f);
                    continue;
                }
                if (splitAsRead) {
                    EvenOdd.split(b, base + g.rowStride * u + columnsLo, columnsHi - columnsLo, plane, row + evenPhase * phaseSize + evenAt,
                            row + (1 - evenPhase) * phaseSize + oddAt);
                } else {
                    copy(b, base + g.rowStride * u + copyLo[0], plane, row + copyLo[0], copyHi[0] - copyLo[0], tail);
                }
            }
        }
    }

    /**
     * {@link #fill} with stride 1 along both axes: one phase, its rows copied in order, the partial vector's mask made
     * once per band (the general loop's phase checks per row made a 14 x 14 depthwise convolution 22-30 % slower). Rows
     * narrower than a vector (a 14 x 14 plane's) are one masked load and store each.
     */
    private void fillRows1(MemorySegment b, float[] plane, long base, int y0, int rows) {
        int n = copyHi[0] - copyLo[0], lo = copyLo[0];
        long ylo = g.ylo, yhi = g.yhi, rowStride = g.rowStride;
        VectorMask<Float> tail = lanes(0, n % L);
        for (int i = rowLo[0], last = rowHi[0] + rows; i < last; i++) {
            long u = y0 + i;
            int row = i * width;
            if (u < ylo || u >= yhi) {
                if (bands > 1) Arrays.fill(plane, row + hullLo[0], row + hullHi[0], 0f);
                continue;
            }
            copy(b, base + rowStride * u + lo, plane, row + lo, n, tail);
        }
    }

    /**
     * For stride 2: the band's plane rows whole ({@code 2 * width} columns, zero where B has none) into {@code rows},
     * row phase by row phase, for {@link #split}.
     */
    private void fillRows(MemorySegment b, float[] rows, long base, int y0, int bandRows) {
        int sy = g.sy, pitch = 2 * width;
        VectorMask<Float> tail = lanes(0, (columnsHi - columnsLo) % L);
        for (int i = minRowLo, last = maxRowHi + bandRows; i < last; i++) {
            for (int a = 0; a < sy; a++) {
                if (i < rowLo[a] || i >= rowHi[a] + bandRows) continue;
                long u = (long) sy * (y0 + i) + a;
                int row = a * 2 * phaseSize + i * pitch;
                if (u < g.ylo || u >= g.yhi) {
                    if (bands > 1) Arrays.fill(rows, row, row + pitch, 0f);
                    continue;
                }
                copy(b, base + g.rowStride * u + columnsLo, rows, row + columnsLo, columnsHi - columnsLo, tail);
            }
        }
    }

    /**
     * B's elements {@code [src, src + n)} into {@code plane} at {@code dst}, by vectors; a run shorter than a vector by one
     * load and store masked by {@code tail} (the lanes of {@code n % L}, made once by the caller).
     */
    private static void copy(MemorySegment b, long src, float[] plane, int dst, int n, VectorMask<Float> tail) {
        if (n < L) {
            FloatVector.fromMemorySegment(F, b, 4 * src, ORDER, tail).intoArray(plane, dst, tail);
            return;
        }
        // a row of at least a vector: its last vector ends at the row's end, unmasked (the same floats copied again);
        // small, so that the row loops inline it (called once a row, a stride-1 band's copy took 5-8 % longer)
        for (int j = 0; j < n; j += L) {
            int at = Math.min(j, n - L);
            FloatVector.fromMemorySegment(F, b, 4 * (src + at), ORDER).intoArray(plane, dst + at);
        }
    }

    /**
     * Row phase {@code a}'s rows {@code [from, to)}, copied whole into {@code rows} (at {@code 2 * width} columns a row:
     * plane column v at v), split into its two column phases: the rows are one run, so the split is one pass of whole
     * vectors, two loads and a permute for each of the phases' vectors, whatever the rows' width.
     */
    private void split(float[] rows, float[] plane, int a, int from, int to) {
        int src = a * 2 * phaseSize, even = a * 2 * phaseSize, odd = even + phaseSize, end = to * width, k = from * width;
        // whole vectors unmasked, then the last one masked (8 % faster at 14 x 14 -> 7 x 7 than a mask per vector)
        for (; k + L <= end; k += L) {
            FloatVector v0 = FloatVector.fromArray(F, rows, src + 2 * k), v1 = FloatVector.fromArray(F, rows, src + 2 * k + L);
            v0.rearrange(EvenOdd.EVEN).blend(v1.rearrange(EvenOdd.EVEN), EvenOdd.HIGH).intoArray(plane, even + k);
            v0.rearrange(EvenOdd.ODD).blend(v1.rearrange(EvenOdd.ODD), EvenOdd.HIGH).intoArray(plane, odd + k);
        }
        if (k < end) {
            FloatVector v0 = FloatVector.fromArray(F, rows, src + 2 * k), v1 = FloatVector.fromArray(F, rows, src + 2 * k + L);
            VectorMask<Float> m = lanes(0, end - k);
            v0.rearrange(EvenOdd.EVEN).blend(v1.rearrange(EvenOdd.EVEN), EvenOdd.HIGH).intoArray(plane, even + k, m);
            v0.rearrange(EvenOdd.ODD).blend(v1.rearrange(EvenOdd.ODD), EvenOdd.HIGH).intoArray(plane, odd + k, m);
        }
    }

    /** The lanes {@code [lo, hi)} (either may lie outside {@code [0, L)}). */
    private static VectorMask<Float> lanes(int lo, int hi) {
        int l = Math.max(lo, 0), h = Math.min(hi, L);
        return VectorMask.fromLong(F, h <= l ? 0 : (-1L >>> (64 - h)) & (-1L << l));
    }

    // The sums: a method per block size, its loads and multiply-adds inline, so that HotSpot keeps the vectors in
    // registers (see StencilKernel). Independent chains hide the multiply-add's latency.

    /**
     * The sums of the band's {@code rows} rows (with their junk columns): for a 3 x 3 window at stride 1, four rows at a
     * time ({@link #rows4}), each row's last vector overlapping the one before; the rest as a flat run of vectors, eight
     * at a time where it has eight: eight chains keep both FMA units busy where four waited on the multiply-add's latency
     * (a 576-channel 14 x 14 plane's sums took a third less time). A last group of fewer than eight is computed as the
     * run's last eight vectors, overlapping the group before: those sums are the same floats, written twice.
     */
    private void sums(float[] plane, float[] sums, int rows, float[] w) {
        int from = 0, n = rows * width;
        if (window3x3) {
            for (; from + 4 * width <= n; from += 4 * width) {
                // whole vectors from the row's start, then the last one ending at its end (overlapping the one before)
                rows4(plane, sums, from, width / L, width, w);
                if (width % L != 0) rows4(plane, sums, from + width - L, 1, width, w);
            }
            if (from == n) return;
        }
        int vectors = (n - from + L - 1) / L;
        if (vectors >= 8) {
            for (int v = 0; v < vectors; v += 8) sums8(plane, sums, from + Math.min(v, vectors - 8) * L, w, tapOffset, taps);
            return;
        }
        int q = from;
        for (; q < n - 2 * L; q += 4 * L) sums4(plane, sums, q, w, tapOffset, taps);
        for (; q < n; q += L) sums1(plane, sums, q, w, tapOffset, taps);
    }

    /**
     * For each of {@code count} vectors from {@code from} on ({@code L} apart), a vector of outputs in each of four rows
     * ({@code width} apart) of a 3 x 3 window at stride 1:
     * the six plane rows they read are loaded once each (three vectors a row), each feeding the outputs whose window
     * covers it, 18 loads for 36 multiply-adds where {@link #sums8} loads once per multiply-add. Each output's sum is
     * still the taps in order (a plane row's taps before the next row's), so the floats are {@code sums8}'s.
     */
    private static void rows4(float[] p, float[] sums, int from, int count, int width, float[] w) {
        FloatVector w0 = FloatVector.broadcast(F, w[0]), w1 = FloatVector.broadcast(F, w[1]), w2 = FloatVector.broadcast(F, w[2]);
        FloatVector w3 = FloatVector.broadcast(F, w[3]), w4 = FloatVector.broadcast(F, w[4]), w5 = FloatVector.broadcast(F, w[5]);
        FloatVector w6 = FloatVector.broadcast(F, w[6]), w7 = FloatVector.broadcast(F, w[7]), w8 = FloatVector.broadcast(F, w[8]);
        // the weights broadcast once for the row's vectors; q affine in the loop, so its loads' index checks can be hoisted
        for (int i = 0; i < count; i++) {
            int q = from + i * L;
            FloatVector acc0 = FloatVector.broadcast(F, -0.0f), acc1 = acc0, acc2 = acc0, acc3 = acc0;
            // plane row 0: output row 0's window row 0
            int at = q;
            FloatVector x0 = FloatVector.fromArray(F, p, at), x1 = FloatVector.fromArray(F, p, at + 1), x2 = FloatVector.fromArray(F, p, at + 2);
            acc0 = x2.fma(w2, x1.fma(w1, x0.fma(w0, acc0)));
            // plane row 1: row 0's window row 1, row 1's window row 0
            at += width;
            x0 = FloatVector.fromArray(F, p, at);
            x1 = FloatVector.fromArray(F, p, at + 1);
            x2 = FloatVector.fromArray(F, p, at + 2);
            acc0 = x2.fma(w5, x1.fma(w4, x0.fma(w3, acc0)));
            acc1 = x2.fma(w2, x1.fma(w1, x0.fma(w0, acc1)));
            // plane row 2
            at += width;
            x0 = FloatVector.fromArray(F, p, at);
            x1 = FloatVector.fromArray(F, p, at + 1);
            x2 = FloatVector.fromArray(F, p, at + 2);
            acc0 = x2.fma(w8, x1.fma(w7, x0.fma(w6, acc0)));
            acc1 = x2.fma(w5, x1.fma(w4, x0.fma(w3, acc1)));
            acc2 = x2.fma(w2, x1.fma(w1, x0.fma(w0, acc2)));
            // plane row 3
            at += width;
            x0 = FloatVector.fromArray(F, p, at);
            x1 = FloatVector.fromArray(F, p, at + 1);
            x2 = FloatVector.fromArray(F, p, at + 2);
            acc1 = x2.fma(w8, x1.fma(w7, x0.fma(w6, acc1)));
            acc2 = x2.fma(w5, x1.fma(w4, x0.fma(w3, acc2)));
            acc3 = x2.fma(w2, x1.fma(w1, x0.fma(w0, acc3)));
            // plane row 4
            at += width;
            x0 = FloatVector.fromArray(F, p, at);
            x1 = FloatVector.fromArray(F, p, at + 1);
            x2 = FloatVector.fromArray(F, p, at + 2);
            acc2 = x2.fma(w8, x1.fma(w7, x0.fma(w6, acc2)));
            acc3 = x2.fma(w5, x1.fma(w4, x0.fma(w3, acc3)));
            // plane row 5
            at += width;
            x0 = FloatVector.fromArray(F, p, at);
            x1 = FloatVector.fromArray(F, p, at + 1);
            x2 = FloatVector.fromArray(F, p, at + 2);
            acc3 = x2.fma(w8, x1.fma(w7, x0.fma(w6, acc3)));
            acc0.intoArray(sums, q);
            acc1.intoArray(sums, q + width);
            acc2.intoArray(sums, q + 2 * width);
            acc3.intoArray(sums, q + 3 * width);
        }
    }

    private static void sums8(float[] plane, float[] sums, int q, float[] w, int[] tapOffset, int taps) {
        FloatVector acc0 = FloatVector.broadcast(F, -0.0f), acc1 = acc0, acc2 = acc0, acc3 = acc0, acc4 = acc0, acc5 = acc0, acc6 = acc0, acc7 = acc0;
        for (int k = 0; k < taps; k++) {
            FloatVector wk = FloatVector.broadcast(F, w[k]);
            int at = tapOffset[k] + q;
            acc0 = FloatVector.fromArray(F, plane, at).fma(wk, acc0);
            acc1 = FloatVector.fromArray(F, plane, at + L).fma(wk, acc1);
            acc2 = FloatVector.fromArray(F, plane, at + 2 * L).fma(wk, acc2);
            acc3 = FloatVector.fromArray(F, plane, at + 3 * L).fma(wk, acc3);
            acc4 = FloatVector.fromArray(F, plane, at + 4 * L).fma(wk, acc4);
            acc5 = FloatVector.fromArray(F, plane, at + 5 * L).fma(wk, acc5);
            acc6 = FloatVector.fromArray(F, plane, at + 6 * L).fma(wk, acc6);
            acc7 = FloatVector.fromArray(F, plane, at + 7 * L).fma(wk, acc7);
        }
        acc0.intoArray(sums, q);
        acc1.intoArray(sums, q + L);
        acc2.intoArray(sums, q + 2 * L);
        acc3.intoArray(sums, q + 3 * L);
        acc4.intoArray(sums, q + 4 * L);
        acc5.intoArray(sums, q + 5 * L);
        acc6.intoArray(sums, q + 6 * L);
        acc7.intoArray(sums, q + 7 * L);
    }

    private static void sums4(float[] plane, float[] sums, int q, float[] w, int[] tapOffset, int taps) {
        FloatVector acc0 = FloatVector.broadcast(F, -0.0f), acc1 = acc0, acc2 = acc0, acc3 = acc0;
        for (int k = 0; k < taps; k++) {
            FloatVector wk = FloatVector.broadcast(F, w[k]);
            int at = tapOffset[k] + q;
            acc0 = FloatVector.fromArray(F, plane, at).fma(wk, acc0);
            acc1 = FloatVector.fromArray(F, plane, at + L).fma(wk, acc1);
            acc2 = FloatVector.fromArray(F, plane, at + 2 * L).fma(wk, acc2);
            acc3 = FloatVector.fromArray(F, plane, at + 3 * L).fma(wk, acc3);
        }
        acc0.intoArray(sums, q);
        acc1.intoArray(sums, q + L);
        acc2.intoArray(sums, q + 2 * L);
        acc3.intoArray(sums, q + 3 * L);
    }

    private static void sums1(float[] plane, float[] sums, int q, float[] w, int[] tapOffset, int taps) {
        FloatVector acc = FloatVector.broadcast(F, -0.0f);
        for (int k = 0; k < taps; k++) acc = FloatVector.fromArray(F, plane, tapOffset[k] + q).fma(FloatVector.broadcast(F, w[k]), acc);
        acc.intoArray(sums, q);
    }

    /**
     * The band's rows of sums without the junk columns, through the epilogue, into C, where C's rows follow one another:
     * the rows gathered into {@code stage}, then stored as one run of whole vectors, the last one ending at the run's
     * end (overlapping the one before).
     */
    private void storeRun(MemorySegment c, float[] sums, float[] stage, int o, int y0, int rows, float k0, float k1, float lower, float upper) {
        int columns = g.outColumns, n = rows * columns;
        long cAt = outerC[o] + rowC[y0];
        if (columns >= 3 * L) {
            // wide rows: each row's vectors straight from the sums, its last one ending at the row's end (one thread, 144
            // x 56 x 56: 198 -> 181-189 us, 32 x 112 x 112: 142-150 -> 132-137); 28-column rows measured no better so
            // (their last vector repeats 4 of 16 lanes), and narrower ones are one run through the staging floats
            // below, not a masked vector a row
            for (int r = 0; r < rows; r++) {
                long rowAt = 4 * (cAt + (long) r * columns);
                for (int x = 0; x < columns; x += L) {
                    int at = Math.min(x, columns - L);
                    FloatVector.fromArray(F, sums, r * width + at).add(k0).add(k1).max(lower).min(upper).intoMemorySegment(c, rowAt + 4L * at, ORDER);
                }
            }
            return;
        }
        for (int r = 0; r < rows; r++) {
            // each vector may run past its row: the next row's vectors, stored after it, overwrite that
            for (int x = 0; x < columns; x += L) FloatVector.fromArray(F, sums, r * width + x).intoArray(stage, r * columns + x);
        }
        if (n < L) {
            VectorMask<Float> m = F.indexInRange(0, n);
            FloatVector.fromArray(F, stage, 0).add(k0).add(k1).max(lower).min(upper).intoMemorySegment(c, 4 * cAt, ORDER, m);
            return;
        }
        for (int x = 0; x < n; x += L) {
            int at = Math.min(x, n - L);
            FloatVector.fromArray(F, stage, at).add(k0).add(k1).max(lower).min(upper).intoMemorySegment(c, 4 * (cAt + at), ORDER);
        }
    }

    /** The band's rows of sums without the junk columns, through the epilogue, into C, a row at a time. */
    private void store(MemorySegment c, MemorySegment[] buffers, boolean apply, float[] sums, int o, int y0, int rows, float lower, float upper) {
        int columns = g.outColumns;
        VectorMask<Float> m = F.indexInRange(0, Math.min(columns, L));
        for (int r = 0; r < rows; r++) {
            int y = y0 + r;
            long cRow = outerC[o] + rowC[y];
            float k0 = apply ? addend(buffers, 0, o, y) : -0.0f, k1 = apply ? addend(buffers, 1, o, y) : -0.0f;
            if (columns < L) {
                FloatVector.fromArray(F, sums, r * width).add(k0).add(k1).max(lower).min(upper).intoMemorySegment(c, 4 * cRow, ORDER, m);
                continue;
            }
            for (int x = 0; x < columns; x += L) {
                // the last vector of a row ends at the row's end, overlapping the one before
                int at = Math.min(x, columns - L);
                FloatVector.fromArray(F, sums, r * width + at).add(k0).add(k1).max(lower).min(upper).intoMemorySegment(c, 4 * (cRow + at), ORDER);
            }
        }
    }

    /**
     * Addend {@code i} of the epilogue at outer point {@code o} and row {@code y} (one value along the row), or -0.0,
     * which added leaves every value as it is, where there is none: the store adds both, so it has no branch (a vector
     * chosen at a branch is boxed).
     */
    private float addend(MemorySegment[] buffers, int i, int o, int y) {
        StencilEpilogue e = epilogue;
        if (e == null || e.terms <= i) return -0.0f;
        return i == 0 ? buffers[e.param0].getAtIndex(JAVA_FLOAT_UNALIGNED, e.outer0[o] + e.row0[y])
                : buffers[e.param1].getAtIndex(JAVA_FLOAT_UNALIGNED, e.outer1[o] + e.row1[y]);
    }

    /** Whether {@code rows[y] = rows[0] + y * step}. */
    private static boolean follows(long[] rows, long step) {
        for (int y = 1; y < rows.length; y++) if (rows[y] != rows[0] + y * step) return false;
        return true;
    }

    private static long ceilDiv(long a, long b) { return -Math.floorDiv(-a, b); }
}

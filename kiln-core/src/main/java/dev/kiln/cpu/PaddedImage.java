package dev.kiln.cpu;

import dev.kiln.codegen.Contraction;
import dev.kiln.runtime.WorkerPool;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.Arrays;
import java.util.List;
import java.util.stream.LongStream;

/**
 * B of a convolution, read by the register tiles straight from a zero-padded copy of its image instead of being
 * packed (an implicit im2col). Packing a 3 x 3 convolution's B writes every input element nine times, in runs as
 * short as a row of the image, and took a third of SqueezeNet's 3 x 3 convolutions; the padded copy writes each
 * element once.
 *
 * <p>The copy holds one plane per point of the operand's free variables (batch, the N variables before the image's
 * rows, and the K variables the gates do not move: input channels), in that order, zero where a gate fails. A plane
 * is the padded image ({@code hp x wp}) split into its stride phases: with strides {@code sh x sw}, phase
 * {@code (t mod sh, u mod sw)} holds the padded pixels (t, u) at row {@code t / sh}, column {@code u / sw}, each
 * phase {@code phaseRows x pitch}; with unit strides the one phase is the padded image. Element (batch b, reduction
 * k, column (outer o, row oh, column ow)) of B is then {@code img[imageBase(b, o) + kOff[k] + oh * pitch + ow]}: a
 * window offset picks its phase and its place in it, and output pixels one apart read phase pixels one apart. For a
 * fixed k, consecutive output columns are consecutive floats across rows too, if the columns
 * {@code outW <= ow < pitch} in between are computed as well. The tiles do that and drop them when they store
 * ({@code pitch - outW} of every {@code pitch} columns: 1 of 56 for a 3 x 3 convolution of a 55-wide image, 1 of 8
 * for a stride-2 one of a 14-wide image).
 *
 * <p>With unit column strides, a row's right padding and the next row's left padding are the same zeros: the pitch is
 * {@code wp} less the {@link #sharedColumns shared} columns (a 13-wide image padded by 1 has pitch 14, not 15: its
 * 169 output pixels take 181 columns of the padded numbering, 192 lanes of the tiles instead of 208), and a plane ends
 * with that many zeros, read past its last row.
 *
 * <p>It applies when B has exactly two gates (the image's rows and columns), the last two N variables are the
 * output's row and column with a positive coefficient (the stride) in one gate each, the image's columns are
 * adjacent in memory, every other variable moving a gate is a K variable (the window) whose address moves with the
 * gates alone, and the copy is at most {@link #MAX_FLOATS} floats. A convolution without padding has no gates: its
 * window is then read from the addresses alone ({@link #windowGates}).
 */
final class PaddedImage {
    /** Most floats of a padded copy: larger images are packed as usual. */
    static final long MAX_FLOATS = 1L << 22;
    /** Floats read past the last plane by the last tile's full-width loads. */
    private static final int SLACK = 4 * GemmMicroKernel.NR;
    private static final ValueLayout.OfFloat F = ValueLayout.JAVA_FLOAT_UNALIGNED;

    final int hp, wp, outH, outW;
    /** The strides: the output row's and column's coefficients in their gates. */
    private final int sh, sw;
    /** Rows of a phase ({@code ceil(hp / sh)}), and its columns: the row pitch of the padded numbering ({@code ceil(wp / sw)}). */
    private final int phaseRows;
    final int pitch;
    /** Floats of one plane: its {@code sh * sw} phases. */
    private final int planeFloats;
    /** Columns of one image in the padded numbering: {@code (outH - 1) * pitch + outW}. */
    final int qPerImage;
    /** Images: points of the N variables before the output's row. */
    final int outers;
    /** Planes per image: points of the free K variables. */
    final int planesPerImage;
    /** Offset of reduction index k (the K variables' multi-index, last fastest) within an image. */
    final int[] kOff;
    /** Floats the copy takes, slack included. */
    final int floats;
    /**
     * Per register tile of an image (its columns from {@code t * NR} in the padded numbering): the bits of its lanes that
     * are output columns (lane j, bit j; the others are dropped columns or past the image), and the output column,
     * within the image, of its first such lane (-1 for none). The lanes' output columns are consecutive: a row's last
     * column is followed by the next row's first.
     */
    final long[] tileLanes;
    final int[] tileFirst;
    /** Source address of element (t = 0, u = 0) of each plane, [batch][outer][free K]. */
    private final long[] planeSource;
    private final long loH, hiH, loW, hiW, rowStride;

    private PaddedImage(int hp, int wp, int sh, int sw, int pitch, int outH, int outW, int outers, int planesPerImage, int[] kOff, long[] planeSource,
                        long loH, long hiH, long loW, long hiW, long rowStride) {
        this.hp = hp;
        this.wp = wp;
        this.sh = sh;
        this.sw = sw;
        this.phaseRows = phaseRows(hp, sh);
        this.pitch = pitch;
        this.planeFloats = (int) planeFloats(hp, wp, sh, sw, pitch);
        this.outH = outH;
        this.outW = outW;
        this.qPerImage = (outH - 1) * pitch + outW;
        this.outers = outers;
        this.planesPerImage = planesPerImage;
        this.kOff = kOff;
        this.planeSource = planeSource;
        this.loH = loH;
        this.hiH = hiH;
        this.loW = loW;
        this.hiW = hiW;
        this.rowStride = rowStride;
        this.floats = Math.toIntExact((long) planeSource.length * planeFloats + SLACK);
        int nr = GemmMicroKernel.NR, tiles = (qPerImage + nr - 1) / nr;
        this.tileLanes = new long[tiles];
        this.tileFirst = new int[tiles];
        Arrays.fill(tileFirst, -1);
        for (int q = 0; q < qPerImage; q++) {
            int oh = q / pitch, ow = q - oh * pitch, t = q / nr;
            if (ow >= outW) continue;
            tileLanes[t] |= 1L << (q - t * nr);
            if (tileFirst[t] < 0) tileFirst[t] = oh * outW + ow;
        }
    }

    /** Rows (or columns) of a phase: {@code ceil(extent / stride)}. */
    private static int phaseRows(long extent, long stride) { return Math.toIntExact((extent + stride - 1) / stride); }

    /**
     * Floats of a plane of {@code hp x wp} padded pixels in {@code sh x sw} phases of rows {@code pitch} apart: the
     * phases, and the columns the last row shares with what would follow it.
     */
    private static long planeFloats(long hp, long wp, long sh, long sw, long pitch) {
        return sh * sw * phaseRows(hp, sh) * pitch + (phaseRows(wp, sw) - pitch);
    }

    /**
     * How many of a row's last columns may also be the next row's first ones: with unit column strides, the zeros both
     * sides of the image that every row has ({@code u0} on the left, {@code wp - u1} on the right), but no more than
     * keeps a row's output columns apart from the next row's ({@code wp - outW}). Strided columns are dealt to phases
     * whose rows have no such common zeros.
     */
    private static int sharedColumns(long sw, long wp, long outW, long loW, long hiW) {
        if (sw != 1) return 0;
        long u0 = Math.clamp(loW, 0, wp), u1 = Math.clamp(hiW, u0, wp);
        return (int) Math.max(0, Math.min(Math.min(u0, wp - u1), wp - outW));
    }

    /**
     * Per B element, what packing costs beside the multiply-adds of {@code m} rows, as that many rows' worth. Packing
     * a convolution's B gathers each row through its padding gates: for ResNet-50's 256 -> 256 3 x 3 convolution at
     * 14 x 14 it was 30 % of the samples (rows' worth: about 100). Measured on an Intel Xeon (AVX-512, the 12-row
     * tile; padded image against packed panels, alternating in one JVM, 2 threads): 512 -> 512 at 7 x 7 3.16 -> 2.42 ms
     * with the image, 256 -> 256 at 14 x 14 3.58 -> 2.53, 128 -> 128 at 28 x 28 3.68 -> 2.32, 16 -> 64 at 55 x 55 0.71 ->
     * 0.61 (an AMD Zen 4 had measured the 28 x 28 one slower with the image, when the image tile still kept general
     * registers in vector registers). Raised from 48 to 96 when the image's K became one block and its tiles stored
     * one compressed run a row: SqueezeNet 1.1's 64 -> 256 at 13 x 13 (m 256: 208 image lanes against 176 packed) then
     * ran 15-30 % faster from the image (10th percentiles, two pairs of processes), and was packed at 48.
     */
    private static final double PACK_COST_ROWS = 96;
    /** The margin by which the image must win: a tie packs. */
    private static final double MARGIN = 1.02;

    /**
     * Whether reading B from this copy beats packing it, for a GEMM of {@code m} rows and {@code n} columns: the
     * copy's tiles also compute the dropped columns, so a narrow image (13 wide: 2 of 15 dropped, and its last tile
     * nearly empty) pays only when packing would cost more, that is when few rows share each packed panel.
     */
    boolean pays(int m, int n) {
        return outers * lanes(qPerImage) * MARGIN < lanes(n) * (1 + PACK_COST_ROWS / m);
    }

    /** Lanes the register tiles compute for {@code cols} columns: whole tiles, and a last one of one vector or two. */
    private static long lanes(long cols) {
        int nr = GemmMicroKernel.NR, l = GemmMicroKernel.L;
        long rest = cols % nr;
        return cols - rest + (rest == 0 ? 0 : rest <= l ? l : nr);
    }

    /** Where image (batch {@code b}, outer point {@code o}) starts in the copy. */
    int imageBase(int b, int o) { return (b * outers + o) * planesPerImage * planeFloats; }

    /**
     * The padded-image view of B ({@code op}, with the GEMM's batch, K and N variables at extents {@code ext}), or null
     * when B is not a unit-stride convolution's image of a size worth copying.
     */
    static PaddedImage of(Contraction.Operand op, int[] batchVars, int[] kVars, int[] nVars, long[] ext) {
        if (nVars.length < 2) return null;
        for (long e : ext) if (e < 1) return null; // an empty run (a symbolic size of 0) computes nothing
        if (op.gates().isEmpty()) {
            List<Contraction.Gate> window = windowGates(op, kVars, nVars, ext);
            if (window == null) return null;
            op = new Contraction.Operand(op.param(), op.offset(), op.strides(), window);
        }
        List<Contraction.Gate> gates = op.gates();
        if (gates.size() != 2) return null;
        int ow = nVars[nVars.length - 1], oh = nVars[nVars.length - 2];
        Contraction.Gate gw = gates.get(0).coeff(ow) > 0 ? gates.get(0) : gates.get(1), gh = gw == gates.get(0) ? gates.get(1) : gates.get(0);
        long sh = gh.coeff(oh), sw = gw.coeff(ow);
        if (sw < 1 || gw.coeff(oh) != 0 || sh < 1 || gh.coeff(ow) != 0) return null;
        // the source's row pitch: the output row moves sh image rows (each variable's address is checked below)
        if (op.stride(oh) % sh != 0) return null;
        long rowStride = op.stride(oh) / sh;
        if (rowStride < 1) return null;
        int[] outer = Arrays.copyOf(nVars, nVars.length - 2);
        // every variable either moves no gate (free: a plane of its own) or is a window variable of the reduction
        int nv = ext.length;
        long[] kStrides = new long[nv];
        long hSpan = 0, wSpan = 0;
        int[] freeK = Arrays.stream(kVars).filter(v -> gh.coeff(v) == 0 && gw.coeff(v) == 0).toArray();
        for (int v = 0; v < nv; v++) {
            long ch = gh.coeff(v), cw = gw.coeff(v);
            if (ch < 0 || cw < 0) return null;
            if (ch == 0 && cw == 0) continue;
            boolean window = contains(kVars, v), image = v == oh || v == ow;
            if (!window && !image) return null;
            if (op.stride(v) != ch * rowStride + cw) return null;
            hSpan += ch * (ext[v] - 1);
            wSpan += cw * (ext[v] - 1);
        }
        long hp = hSpan + 1, wp = wSpan + 1;
        long planes = 1;
        for (int v : batchVars) planes *= ext[v];
        long outers = 1;
        for (int v : outer) outers *= ext[v];
        long perImage = 1;
        for (int v : freeK) perImage *= ext[v];
        planes *= outers * perImage;
        int pitch = phaseRows(wp, sw) - sharedColumns(sw, wp, ext[ow], gw.lo(), gw.hi());
        if (planes * (double) planeFloats(hp, wp, sh, sw, pitch) + SLACK > MAX_FLOATS) return null;
        int planeFloats = (int) planeFloats(hp, wp, sh, sw, pitch), phaseRows = phaseRows(hp, sh);
        // reduction offsets: free K variables pick the plane, window variables a padded pixel (t, u) of it, which lies
        // in phase (t mod sh, u mod sw) at (t / sh, u / sw)
        long radix = planeFloats;
        for (int i = freeK.length - 1; i >= 0; i--) {
            kStrides[freeK[i]] = radix;
            radix *= ext[freeK[i]];
        }
        long[] tStrides = new long[nv], uStrides = new long[nv];
        for (int v : kVars) {
            if (contains(freeK, v)) continue;
            tStrides[v] = gh.coeff(v);
            uStrides[v] = gw.coeff(v);
        }
        long[] plane = GemmSide.table(kVars, ext, kStrides), t = GemmSide.table(kVars, ext, tStrides), u = GemmSide.table(kVars, ext, uStrides);
        int[] kOff = new int[plane.length];
        for (int i = 0; i < kOff.length; i++) {
            long phase = (t[i] % sh) * sw + u[i] % sw;
            kOff[i] = Math.toIntExact(plane[i] + phase * phaseRows * pitch + (t[i] / sh) * pitch + u[i] / sw);
        }
        long[] strides = op.strides();
        long[] sb = GemmSide.table(batchVars, ext, strides), so = GemmSide.table(outer, ext, strides), sf = GemmSide.table(freeK, ext, strides);
        long[] planeSource = new long[(int) planes];
        int p = 0;
        for (long b : sb) for (long o : so) for (long f : sf) planeSource[p++] = op.offset() + b + o + f;
        return new PaddedImage((int) hp, (int) wp, (int) sh, (int) sw, pitch, (int) ext[oh], (int) ext[ow], (int) outers, (int) perImage, kOff, planeSource,
                gh.lo(), gh.hi(), gw.lo(), gw.hi(), rowStride);
    }

    /**
     * The row and column gates an ungated B would have as a convolution's image, always true ({@code [0, MAX)}), read
     * from its addresses; or null when they do not read as one. The output's row ({@code oh}, the next-to-last N
     * variable) and column ({@code ow}, the last) step {@code R * sh} and {@code sw} floats, for an image row of
     * {@code R} floats. Window variables are the K variables that move less than the output's rows span; the others
     * (input channels) are free, a plane each. A window variable's stride is {@code ch * R + cw}: {@code ch} image
     * rows and {@code cw} columns. Any such split reads the same floats (the copy of pixel (t, u) is the source's
     * {@code t * R + u}); it must only not read a column twice ({@code wp <= R}), and the window must move along every
     * strided dimension, else most of the phases would be copied for nothing (a strided 1 x 1 convolution is packed).
     * {@code R} is the largest candidate that splits so: {@code oh}'s stride (unit row stride), or a window variable's
     * stride that divides it (a strided window's row step; a dilated one's row step is {@code oh}'s stride times the
     * dilation, and divides nothing).
     */
    static List<Contraction.Gate> windowGates(Contraction.Operand op, int[] kVars, int[] nVars, long[] ext) {
        int oh = nVars[nVars.length - 2], ow = nVars[nVars.length - 1];
        long sOh = op.stride(oh), sw = op.stride(ow);
        if (sOh < 1 || sw < 1) return null;
        long rows = sOh * ext[oh];
        long[] candidates = LongStream.concat(LongStream.of(sOh),
                Arrays.stream(kVars).filter(v -> ext[v] > 1).mapToLong(op::stride).filter(s -> s >= 1 && s < rows && sOh % s == 0))
                .distinct().sorted().toArray();
        for (int i = candidates.length - 1; i >= 0; i--) {
            List<Contraction.Gate> gates = windowGates(op, kVars, oh, ow, ext, rows, candidates[i]);
            if (gates != null) return gates;
        }
        return null;
    }

    /** {@link #windowGates} for image rows of {@code r} floats, or null when B does not split so. */
    private static List<Contraction.Gate> windowGates(Contraction.Operand op, int[] kVars, int oh, int ow, long[] ext, long rows, long r) {
        long sw = op.stride(ow);
        if (r <= sw) return null;
        int nv = ext.length;
        long[] ch = new long[nv], cw = new long[nv];
        ch[oh] = op.stride(oh) / r;
        cw[ow] = sw;
        boolean rowsMove = ch[oh] == 1, columnsMove = sw == 1, window = false;
        for (int v : kVars) {
            long s = op.stride(v);
            if (s < 0 || s >= rows || ext[v] == 1) continue;
            ch[v] = s / r;
            cw[v] = s % r;
            rowsMove |= ch[v] > 0;
            columnsMove |= cw[v] > 0;
            window = true;
        }
        long wSpan = 0;
        for (int v = 0; v < nv; v++) wSpan += cw[v] * (ext[v] - 1);
        if (!window || !rowsMove || !columnsMove || wSpan + 1 > r) return null;
        return List.of(new Contraction.Gate(ch, 0, Long.MAX_VALUE), new Contraction.Gate(cw, 0, Long.MAX_VALUE));
    }

    private static boolean contains(int[] a, int v) {
        for (int x : a) if (x == v) return true;
        return false;
    }

    /**
     * Writes the padded copy of every plane from {@code seg} into {@code img} (at least {@link #floats} long), ranges of
     * planes side by side on the workers: the copy runs before the products are split, and on one thread it was a
     * sixth of a stride-2 convolution's time on two.
     *
     * @throws IndexOutOfBoundsException when an element inside the gates lies outside {@code seg}
     */
    void fill(MemorySegment seg, float[] img) {
        int planes = planeSource.length, parts = WorkerPool.size();
        if (parts < 2 || floats < PARALLEL_FILL_MIN) fill(seg, img, 0, planes);
        else WorkerPool.forRanges(planes, parts, (p0, p1) -> fill(seg, img, (int) p0, (int) p1));
    }

    /**
     * Below this many floats an image is copied on the calling thread alone. At 64 K, SqueezeNet's 3 x 3 convolutions
     * (16 planes of 57 x 57, 64 of 15 x 15) copied on one thread while the other waited: 13 % of the 55 x 55 one's
     * samples; at 8 K they ran 2-3 % faster (147-149 -> 144-145 us, 152-155 -> 149-153 us, three pairs each).
     */
    private static final int PARALLEL_FILL_MIN = 1 << 13;

    /**
     * {@link #fill} of planes {@code [p0, p1)}, and of the slack after the last plane when {@code p1} is the last: ranges
     * write disjoint floats, so they may run side by side.
     */
    private void fill(MemorySegment seg, float[] img, int p0, int p1) {
        int u0 = (int) Math.clamp(loW, 0, wp), u1 = (int) Math.clamp(hiW, u0, wp);
        if (sh != 1 || sw != 1) {
            fillPhases(seg, img, u0, u1, p0, p1);
            return;
        }
        for (int p = p0; p < p1; p++) {
            long source = planeSource[p];
            int at = p * planeFloats;
            for (int t = 0; t < hp; t++, at += pitch) {
                if (t < loH || t >= hiH || u0 == u1) {
                    Arrays.fill(img, at, at + wp, 0f);
                    continue;
                }
                if (u0 > 0) Arrays.fill(img, at, at + u0, 0f);
                MemorySegment.copy(seg, F, 4 * (source + t * rowStride + u0), img, at + u0, u1 - u0);
                if (u1 < wp) Arrays.fill(img, at + u1, at + wp, 0f);
            }
        }
        // the plane's last shared columns (written with its last row), then the slack
        if (p1 == planeSource.length) Arrays.fill(img, p1 * planeFloats, floats, 0f);
    }

    /** A source row, staged for {@link #fillPhases}; grown on demand. */
    private static final ThreadLocal<float[][]> ROW = ThreadLocal.withInitial(() -> new float[][] {new float[0]});

    /** {@link #fill} with strides: each source row copied once, then dealt to its phases, every {@code sw}-th pixel to each. */
    private void fillPhases(MemorySegment seg, float[] img, int u0, int u1, int p0, int p1) {
        Arrays.fill(img, p0 * planeFloats, p1 == planeSource.length ? floats : p1 * planeFloats, 0f);
        if (u0 == u1) return;
        float[][] holder = ROW.get();
        if (holder[0].length < u1 - u0) holder[0] = new float[u1 - u0];
        float[] row = holder[0];
        int t0 = (int) Math.clamp(loH, 0, hp), t1 = (int) Math.clamp(hiH, t0, hp), phase = phaseRows * pitch;
        for (int p = p0; p < p1; p++) {
            long source = planeSource[p];
            for (int t = t0; t < t1; t++) {
                int rowAt = p * planeFloats + (t % sh) * sw * phase + (t / sh) * pitch;
                if (sw == 2) {
                    // straight from the segment into the two phases (staged and dealt by compresses and half-vector
                    // masked stores, MobileNet-v2's first convolution's 672 rows of 224 took three times as long)
                    EvenOdd.split(seg, source + t * rowStride + u0, u1 - u0, img, rowAt + (u0 & 1) * phase + u0 / 2,
                            rowAt + (1 - (u0 & 1)) * phase + (u0 + 1) / 2);
                    continue;
                }
                MemorySegment.copy(seg, F, 4 * (source + t * rowStride + u0), row, 0, u1 - u0);
                for (int px = 0; px < sw; px++) {
                    int first = u0 + Math.floorMod(px - u0, sw);
                    for (int u = first - u0, x = rowAt + px * phase + first / sw; u < u1 - u0; u += sw, x++) img[x] = row[u];
                }
            }
        }
    }
}

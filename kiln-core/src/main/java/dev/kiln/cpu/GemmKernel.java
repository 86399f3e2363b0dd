package dev.kiln.cpu;

import dev.kiln.codegen.Contraction;
import dev.kiln.codegen.StoreEpilogue;
import dev.kiln.ir.BoundedCache;
import dev.kiln.runtime.WorkerPool;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.List;

import static dev.kiln.cpu.GemmMicroKernel.MR;
import static dev.kiln.cpu.GemmMicroKernel.NR;

/**
 * Runs a {@link Contraction} as a packed, cache-blocked GEMM (the BLIS loop nest): for each block of at most
 * {@link #NC} columns and {@link #KC} reduction steps, B is packed into NR-wide panels; for each block of at most
 * {@link #MC} rows, A is packed in panels of MR rows side by side ({@link GemmMicroKernel#packedA}); the
 * {@link GemmMicroKernel} then sweeps the register tiles, storing into C after the first K block and adding after
 * the others. Work is split between the {@link WorkerPool} workers by batch, or else by the longer of M and N
 * (single GEMMs, or batches that do not share out evenly); each worker packs into its own scratch, so no packed
 * panel is shared and no barrier is needed.
 *
 * <p>Address tables, gate tables and bounds are computed once per set of run-time extents ({@link GemmPlan}).
 */
final class GemmKernel {
    /**
     * Most reduction steps per packed block. Long K blocks amortise each tile's C load and store (measured on the
     * 1024^3 matmul, one thread: 256 -> 85, 512 -> 93 GFLOP/s); a tile's B panel (KC x NR) then lives in L2.
     */
    static final int KC = 512;
    /**
     * Most reduction steps per block when B is read from a padded image: the whole K of the convolutions of real
     * networks (512 channels x 3 x 3). A tile's image reads stay within a few rows of each plane, so a long block costs
     * the tile nothing (scratch probe, one thread: 7 x 7 image of 512 channels, K 512 and 4608 alike), while each
     * further block loads every tile of C back, in runs as short as the output's rows (ResNet-50's 3 x 3 convolution at
     * 7 x 7: 20 % of its samples in reloading and storing C across its nine blocks of 512).
     */
    static final int KC_IMAGE = 4608;
    /** Most rows of A packed at once (a multiple of MR): the MC x KC block stays in L2 while B panels sweep it. */
    static final int MC = 8 * MR;
    /**
     * Most columns of B packed at once (a multiple of NR): the KC x NC block lives in L3. Smaller blocks repack A
     * more often and measured slower.
     */
    static final int NC = 64 * NR;
    /** Rows of B a thread gathers before dealing them out to the panels ({@link GemmSide#packColPanels}). */
    static final int PACK_GROUP_ROWS = 4;
    /** Below this many multiply-adds the work stays on the calling thread. */
    private static final long PARALLEL_MIN = 1L << 20;
    /**
     * Bytes of a padded image's columns that a group of column tiles reads ({@code kc * NR} floats a tile), computed row
     * tile by row tile ({@link #computeImage}): the group's image stays in L2 while each row tile writes its MR rows of
     * C, instead of every row of the block at each column tile (MobileNet's first convolution, 3 -> 32 channels, K = 27,
     * with the caches cold as in a model: 202-219 -> 183-203 us). Only for K up to {@link #TILE_GROUP_MAX_K} (measured
     * at 27): each row tile reads the group's image again, from L2, where the column-tile-major order that longer K keeps
     * reads each tile's image once, from L1. Packed B panels of so short a K go the same way ({@link #compute}): an
     * unpadded 1 x 1 convolution from 16 channels to 96 at 112 x 112, whose 4.8 MB output bounds it, 300 -> 287 us on one
     * thread.
     */
    private static final int TILE_GROUP_BYTES = 128 << 10;
    /** Longest K for which column tiles are grouped ({@link #TILE_GROUP_BYTES}). */
    private static final int TILE_GROUP_MAX_K = 32;

    /** Column tiles (or B panels) of a K block {@code kc} deep taken row tile by row tile together: 1 past {@link #TILE_GROUP_MAX_K}. */
    private static int tileGroup(int kc) { return kc <= TILE_GROUP_MAX_K ? Math.max(1, TILE_GROUP_BYTES / (4 * NR * kc)) : 1; }

    private final ExtentPlans<GemmPlan> plans;

    private static final ThreadLocal<Scratch> SCRATCH = ThreadLocal.withInitial(Scratch::new);
    /** The padded image of B ({@link PaddedImage}) of the run a thread started, grown on demand and reused. */
    private static final ThreadLocal<float[][]> IMAGE = ThreadLocal.withInitial(() -> new float[][] {new float[0]});

    /** Per-thread packed panels, grown on demand and reused. */
    private static final class Scratch {
        float[] a = new float[0], b = new float[0];
        final float[] tmp = new float[GemmMicroKernel.TILE_FLOATS], row = new float[Math.max(KC_IMAGE, PACK_GROUP_ROWS * NC)];
        /** A padded-image tile's B offsets, one a reduction step of the K block ({@link GemmMicroKernel#imageTile}). */
        final int[] offsets = new int[KC_IMAGE];
        /** A tile's rows as byte offsets into C and into a run addend, and what its epilogue adds to each ({@link GemmMicroKernel#wideInto}). */
        final long[] rowOff = new long[MR], runOff = new long[MR];
        final float[] rowAdd = new float[MR];
        /** The same for every row of an MC block, without the column's part ({@link #compute}). */
        final long[] blockRowOff = new long[MC], blockRunOff = new long[MC];
        final float[] blockRowAdd = new float[MC];

        void ensure(int aSize, int bSize) {
            if (a.length < aSize) a = new float[aSize];
            if (b.length < bSize) b = new float[bSize];
        }

        /**
         * What the tiles stored from the registers need per row of the block of {@code mc} rows from {@code ic}, once
         * for all the block's columns (a tile of 16 steps took as long as finding its rows' addresses and addends anew):
         * C's byte offsets, the epilogue's value per row, and the run addend's byte offsets (0 without {@code run}).
         */
        void blockRows(GemmPlan p, int batch, long cBase, int ic, int mc, TileEpilogue epilogue, MemorySegment run, MemorySegment[] buffers) {
            for (int i = 0; i < mc; i++) {
                blockRowOff[i] = 4 * (cBase + p.cRow[ic + i]);
                blockRowAdd[i] = epilogue == null ? -0.0f : epilogue.rowAddend(batch, ic + i, buffers);
                blockRunOff[i] = run == null ? 0 : epilogue.runAddendRow(batch, ic + i);
            }
        }

        /** {@link #blockRows} of the tile from block row {@code ir}, at C's column {@code col} and the run's {@code runCol} (bytes). */
        void tileRows(int ir, long col, long runCol) {
            for (int i = 0; i < MR; i++) {
                rowOff[i] = blockRowOff[ir + i] + col;
                runOff[i] = blockRunOff[ir + i] + runCol;
            }
            System.arraycopy(blockRowAdd, ir, rowAdd, 0, MR);
        }
    }

    /** A GEMM whose caller runs the epilogue, if any, after {@link #run}. */
    GemmKernel(Contraction c) { this(c, null); }

    private record Key(Contraction contraction, StoreEpilogue epilogue, String paddedImageMode) {}

    /** GEMMs by what their plans are made of: a few hundred contractions per network, most repeated layer after layer. */
    private static final BoundedCache<Key, GemmKernel> SHARED = new BoundedCache<>(1024);

    /**
     * The GEMM of {@code c} with {@code epilogue} (null: the caller runs it), shared by every kernel of that contraction:
     * a GEMM holds only its plans, which runs and prepacking read, and its address tables took a tenth of ResNet-50's
     * prepare with a warm kernel cache, made again for each of the 16 bottleneck blocks' convolutions.
     */
    static GemmKernel of(Contraction c, StoreEpilogue epilogue) {
        return SHARED.get(new Key(c, epilogue, GemmPlan.paddedImageMode()), k -> new GemmKernel(k.contraction(), k.epilogue()));
    }

    /** @param epilogue the epilogue the tiles apply as they store (null: the caller runs it after {@link #run}) */
    GemmKernel(Contraction c, StoreEpilogue epilogue) {
        int[] batchVars = vars(c, Contraction.Role.BATCH), mVars = vars(c, Contraction.Role.M), nVars = vars(c, Contraction.Role.N),
                kVars = vars(c, Contraction.Role.K);
        plans = new ExtentPlans<>(c, ext -> new GemmPlan(c, epilogue, batchVars, mVars, nVars, kVars, ext));
    }

    /** Whether a run at the full extents reads B from a padded image ({@link PaddedImage}) instead of packing it. */
    boolean readsPaddedImage() { return plans.full().image != null; }

    /** Whether a run at the full extents computes dot products ({@link GemmDots}) instead of packing. */
    boolean runsAsDots() { return plans.full().dots && plans.full().m <= GemmDots.MAX_ROWS; }

    /** The plan at the full extents. */
    GemmPlan fullPlan() { return plans.full(); }

    /** The kernel parameter A is read from. */
    int aParam() { return plans.full().a.param; }

    /** The kernel parameter B is read from. */
    int bParam() { return plans.full().b.param; }

    private static int[] vars(Contraction c, Contraction.Role role) {
        return java.util.stream.IntStream.range(0, c.vars().size()).filter(v -> c.vars().get(v).role() == role).toArray();
    }

    /**
     * Writes {@code C = A B} for every point of the variables ({@code vars} are the kernel's variable values,
     * which bound variables with a limit); returns whether the epilogue was applied too (else the caller runs it).
     *
     * @throws IndexOutOfBoundsException when an element read or written lies outside its buffer
     */
    boolean run(MemorySegment[] buffers, long[] vars) { return run(buffers, vars, null); }

    /**
     * {@link #run(MemorySegment[], long[])} with constant operands already packed ({@code prepacked}, for the full
     * extents: used when the run's extents are the full ones, ignored otherwise).
     */
    boolean run(MemorySegment[] buffers, long[] vars, Prepacked prepacked) {
        GemmPlan at = plans.at(vars), p = at.forRun(buffers);
        Prepacked pre = at == plans.full() ? prepacked : null;
        boolean applies = p.epilogue != null;
        p.checkAllBounds(buffers);
        if (p.batches == 0 || p.m == 0 || p.n == 0) return applies;
        MemorySegment cs = buffers[0];
        if (p.k == 0) {
            // an empty sum is the identity -0.0; the caller runs the epilogue over it
            for (long cb : p.cBatch) for (long r : p.cRow) for (long col : p.cCol) cs.set(ValueLayout.JAVA_FLOAT_UNALIGNED, 4 * (cb + r + col), -0.0f);
            return false;
        }
        MemorySegment as = buffers[p.a.param], bs = buffers[p.b.param];
        // B as a padded image: copied once here, before the split, and read by every worker's tiles
        float[] img = null;
        if (p.image != null && (pre == null || pre.b() == null)) {
            float[][] holder = IMAGE.get();
            if (holder[0].length < p.image.floats) holder[0] = new float[p.image.floats];
            img = holder[0];
            p.image.fill(bs, img);
        }
        // the N side is cut in columns, or in tiles of the padded image's columns
        int nUnits = img != null ? p.image.outers * tiles(p.image) : p.n, nAlign = img != null ? 1 : NR;
        int workers = WorkerPool.size();
        long work = (long) p.batches * p.m * p.n * p.k;
        if (workers < 2 || work < PARALLEL_MIN) {
            compute(p, pre, as, bs, img, cs, 0, p.batches, 0, p.m, 0, nUnits, buffers);
            return applies;
        }
        List<Runnable> tasks = new ArrayList<>();
        if (p.batches % workers == 0 || p.batches >= 8 * workers) {
            // whole GEMMs per worker (at most one more for some when the batches do not divide evenly)
            for (int t = 0; t < workers; t++) {
                int b0 = (int) ((long) p.batches * t / workers), b1 = (int) ((long) p.batches * (t + 1) / workers);
                tasks.add(task(p, pre, as, bs, img, cs, b0, b1, 0, p.m, 0, nUnits, buffers));
            }
        } else {
            // fewer (or unevenly many) batches: each GEMM cut in as many slices as workers, stolen as they free up
            // By N unless N is wide and M wider (a large GEMM) or N has no more panels than workers: each worker then
            // packs only its own columns of B, the costly side of a convolution (gated, short runs), and all of A,
            // whose rows are long contiguous runs (ResNet-50's 3x3 conv at 7x7, M 512, N 49: 3.16 -> 2.63 ms, when
            // A was packed on every run). With N in one or two panels, by M: N = 49 is 32 + 17 columns, and the
            // worker with 32 would wait for nothing while the other has 17 (the same conv, weights prepacked:
            // 2.35 -> 2.28 ms; M 2048, N 49, K 512: 0.81 -> 0.79 ms).
            int nPanels = (nUnits + nAlign - 1) / nAlign;
            boolean byM = p.m >= workers * MR && (nPanels <= workers || p.m >= p.n && nPanels >= 4 * workers || unevenPanels(p, img != null || sharesPackedB(p, pre), nPanels, workers));
            if (byM && img == null && (pre == null || pre.b() == null)) pre = packSharedB(p, pre, bs, workers);
            // balanced shares (WorkerPool.balancedShares) where no share packs what another packs too: by M with B
            // packed once, by N with A prepacked; else one share a worker
            boolean nothingRepacked = byM ? pre != null && pre.b() != null : pre != null && pre.a() != null;
            int parts = nothingRepacked ? WorkerPool.balancedShares(byM ? (p.m + MR - 1) / MR : nPanels) : workers;
            int[] cuts = byM ? cuts(p.m, parts, MR) : cuts(nUnits, parts, nAlign);
            for (int b = 0; b < p.batches; b++) {
                for (int t = 0; t < parts; t++) {
                    if (cuts[t] == cuts[t + 1]) continue;
                    tasks.add(byM ? task(p, pre, as, bs, img, cs, b, b + 1, cuts[t], cuts[t + 1], 0, nUnits, buffers)
                            : task(p, pre, as, bs, img, cs, b, b + 1, 0, p.m, cuts[t], cuts[t + 1], buffers));
                }
            }
        }
        WorkerPool.runAll(tasks);
        return applies;
    }

    /**
     * Whether B's few panels (of packed columns, or a padded image's tiles) would fall unevenly on the workers while the
     * rows would not, and a split by rows packs nothing twice ({@code shared}: B read from one image or one packed copy).
     * ResNet-50's convolutions at 14 x 14 have 7 panels of 32 columns, 4 for one worker and 3 for the other, and 22 or
     * more panels of rows. Split by rows, each worker also reads only half of the weights: in the whole model (two
     * pairs, alternating) its 3 x 3 convolutions there went from 690-720 to 580-606 us each, its 1 x 1 ones from
     * 433-482 to 364-394 us.
     */
    static boolean unevenPanels(GemmPlan p, boolean shared, int panels, int workers) {
        return shared && panels % workers != 0 && panels < 4 * workers && p.m >= 2 * workers * MR;
    }

    /** Whether the workers of a split by rows read one packed B: prepacked, or packed once per run ({@link #packSharedB}). */
    private static boolean sharesPackedB(GemmPlan p, Prepacked pre) { return pre != null && pre.b() != null || sharedBFits(p); }

    /** Whether B is small enough to be packed once per run for all workers ({@link #packSharedB}). */
    private static boolean sharedBFits(GemmPlan p) {
        return (long) p.batches * roundUp(p.n, NR) * p.k <= SHARED_B_MAX && roundUp(p.n, NR) <= Math.max(KC, NC);
    }

    /**
     * Most floats of B packed once per run for all workers ({@link #packSharedB}); larger B is packed by each worker,
     * a block at a time, as before. Where B is large its packing is a small share of the products (and a whole packed
     * B would stay allocated per calling thread: 16 MB for a 2048^3 matmul, with no gain measurable on this host);
     * a convolution's B at 7 x 7, where packing twice cost most, is 0.3 M floats.
     */
    static final int SHARED_B_MAX = 1 << 19;
    /** The B the workers of the calling thread's run share ({@link #packSharedB}), grown on demand and reused. */
    private static final ThreadLocal<float[][]> SHARED_B = ThreadLocal.withInitial(() -> new float[][] {new float[0]});

    /**
     * With the rows split between the workers, each would pack all of B for itself (ResNet-50's 3 x 3 convolutions
     * at 7 x 7: 37 % of their samples in packing B twice). Instead B is packed once, K blocks shared out between the
     * workers, in the prepacked layout, and every worker's tiles read it. Returns {@code pre} with that B, or
     * {@code pre} unchanged when B is too large for it.
     */
    private static Prepacked packSharedB(GemmPlan p, Prepacked pre, MemorySegment bs, int workers) {
        if (!sharedBFits(p)) return pre;
        long size = (long) p.batches * roundUp(p.n, NR) * p.k;
        float[][] holder = SHARED_B.get();
        if (holder[0].length < size) holder[0] = new float[(int) size];
        float[] b = holder[0];
        // pieces of (batch, K block, columns): a single K block (K <= 512) is cut by columns, whole panels each
        int kcStep = kcStep(p), kBlocks = (p.k + kcStep - 1) / kcStep, units = p.batches * kBlocks;
        int groups = Math.max(1, Math.min((workers + units - 1) / units, (p.n + NR - 1) / NR)), cols = step(p.n, (p.n + groups - 1) / groups, NR);
        groups = (p.n + cols - 1) / cols;
        int perUnit = groups;
        WorkerPool.forRanges((long) units * perUnit, workers, (u0, u1) -> {
            float[] row = SCRATCH.get().row;
            for (int u = (int) u0; u < u1; u++) {
                int unit = u / perUnit, jc = (u % perUnit) * cols;
                int batch = unit / kBlocks, pc = (unit % kBlocks) * kcStep, kc = Math.min(kcStep, p.k - pc);
                p.b.packColPanels(bs, batch, pc, kc, jc, Math.min(cols, p.n - jc), b, bBase(p, batch, pc) + jc * kc, row);
            }
        });
        return new Prepacked(pre == null ? null : pre.a(), b);
    }

    /** {@code parts + 1} cut points of {@code [0, n)} at multiples of {@code align} (the last at n). */
    private static int[] cuts(int n, int parts, int align) {
        int units = (n + align - 1) / align;
        int[] cuts = new int[parts + 1];
        for (int t = 1; t <= parts; t++) cuts[t] = Math.min(n, (int) ((long) units * t / parts) * align);
        cuts[parts] = n;
        return cuts;
    }

    private static Runnable task(GemmPlan p, Prepacked pre, MemorySegment as, MemorySegment bs, float[] img, MemorySegment cs,
                                 int b0, int b1, int m0, int m1, int n0, int n1, MemorySegment[] buffers) {
        return () -> compute(p, pre, as, bs, img, cs, b0, b1, m0, m1, n0, n1, buffers);
    }

    /** Register tiles across one image's columns in the padded numbering. */
    private static int tiles(PaddedImage image) { return (image.qPerImage + NR - 1) / NR; }

    /** Columns {@code [n0, n1)} of C, or with B as a padded image ({@code img} not null) tiles {@code [n0, n1)} of its columns. */
    private static void compute(GemmPlan p, Prepacked pre, MemorySegment as, MemorySegment bs, float[] img, MemorySegment cs,
                                int b0, int b1, int m0, int m1, int n0, int n1, MemorySegment[] buffers) {
        if (img != null) computeImage(p, pre, as, img, cs, b0, b1, m0, m1, n0, n1, buffers);
        else compute(p, pre, as, bs, cs, b0, b1, m0, m1, n0, n1, buffers);
    }

    /**
     * The loop nest with B read from its padded image ({@link PaddedImage}) over batches {@code [b0, b1)}, rows
     * {@code [m0, m1)} and tiles {@code [u0, u1)} (image {@code u / tiles}, columns from {@code NR * (u % tiles)} in
     * the padded numbering): no B panel is packed; each tile's {@code NR} columns are consecutive floats of the image.
     */
    private static void computeImage(GemmPlan p, Prepacked pre, MemorySegment as, float[] img, MemorySegment cs,
                                     int b0, int b1, int m0, int m1, int u0, int u1, MemorySegment[] buffers) {
        if (m1 <= m0 || u1 <= u0) return;
        PaddedImage im = p.image;
        int tiles = tiles(im);
        Scratch s = SCRATCH.get();
        int kcStep = kcStep(p), mcStep = step(m1 - m0, MC, MR), ucStep = NC / NR;
        float[] preA = pre == null ? null : pre.a();
        s.ensure(preA != null ? 0 : roundUp(mcStep, MR) * kcStep, 0);
        float[] ap = preA != null ? preA : s.a;
        for (int b = b0; b < b1; b++) {
            long cBase = p.cBatch[b];
            for (int uc = u0; uc < u1; uc += ucStep) {
                int ue = Math.min(u1, uc + ucStep);
                for (int pc = 0; pc < p.k; pc += kcStep) {
                    int kc = Math.min(kcStep, p.k - pc);
                    boolean first = pc == 0;
                    TileEpilogue epilogue = pc + kc == p.k ? p.epilogue : null;
                    // one K block and an epilogue of at most a value per row: full tiles go from the registers into C
                    boolean direct = first && pc + kc == p.k && (epilogue == null || epilogue.runAddend(buffers) == null);
                    float lower = epilogue == null ? Float.NEGATIVE_INFINITY : epilogue.lowerOrNone();
                    float upper = epilogue == null ? Float.POSITIVE_INFINITY : epilogue.upperOrNone();
                    int group = tileGroup(kc);
                    for (int ic = m0; ic < m1; ic += mcStep) {
                        int mc = Math.min(mcStep, m1 - ic);
                        int aAt = 0;
                        if (preA == null) p.a.packRows(as, b, ic, mc, pc, kc, ap, 0, s.row);
                        else aAt = aBase(p, b, pc) + ic * kc;
                        if (direct) s.blockRows(p, b, cBase, ic, mc, epilogue, null, buffers);
                        // a group of column tiles row tile by row tile: the group's image columns stay in L2 while
                        // each row tile writes its MR rows of C, not all the block's rows at once
                        for (int ug = uc; ug < ue; ug += group) {
                            int uge = Math.min(ue, ug + group);
                            for (int ir = 0; ir < mc; ir += MR) {
                                for (int u = ug; u < uge; u++) {
                                    int o = u / tiles, q = (u - o * tiles) * NR;
                                    int at = im.imageBase(b, o) + q;
                                    int[] offs = s.offsets;
                                    // a group of one keeps its tile's offsets from the first row tile (K up to 4608 of them)
                                    if (group > 1 || ir == 0) for (int k = 0; k < kc; k++) offs[k] = im.kOff[pc + k] + at;
                                    int n = fullTileColumn(p, o, q / NR, epilogue);
                                    if (direct && n >= 0 && mc - ir >= MR) {
                                        s.tileRows(ir, 4 * p.cCol[n], 0);
                                        GemmMicroKernel.imageTileInto(ap, aAt + ir * kc, img, offs, kc, cs, s.rowOff, s.rowAdd, lower, upper);
                                        continue;
                                    }
                                    boolean narrow = im.qPerImage - q <= GemmMicroKernel.L;
                                    GemmMicroKernel.imageSums(ap, aAt + ir * kc, img, offs, kc, Math.min(MR, mc - ir), narrow, s.tmp);
                                    storeImageTile(p, cs, cBase, ic + ir, Math.min(MR, mc - ir), o, q, first, s.tmp, epilogue, b, buffers);
                                }
                            }
                        }
                    }
                }
            }
        }
    }

    /**
     * The output column of tile {@code t} of image {@code o} when the tile's {@code NR} lanes are all output columns,
     * adjacent in C and storable from the registers by the epilogue (if any): else -1.
     */
    private static int fullTileColumn(GemmPlan p, int o, int t, TileEpilogue epilogue) {
        PaddedImage im = p.image;
        if (im.tileLanes[t] != FULL_TILE) return -1;
        int n = o * im.outH * im.outW + im.tileFirst[t];
        return p.contiguous[n] >= NR && (epilogue == null || epilogue.storableFromRegisters(n)) ? n : -1;
    }

    /** The lanes of a tile whose columns are all output columns. */
    private static final long FULL_TILE = NR == 64 ? -1L : (1L << NR) - 1;

    /**
     * Stores (or adds) a tile of padded-image columns {@code [q, q + NR)} of image {@code o} into C, dropping the
     * columns past the output's width: each row of the output in the tile is one run of C.
     */
    private static void storeImageTile(GemmPlan p, MemorySegment cs, long cBase, int m, int mr, int o, int q, boolean first, float[] tmp,
                                       TileEpilogue epilogue, int batch, MemorySegment[] buffers) {
        PaddedImage im = p.image;
        int t = q / NR, firstN = im.tileFirst[t];
        if (firstN < 0) return; // only dropped columns
        int n0 = o * im.outH * im.outW + firstN;
        long lanes = im.tileLanes[t];
        int c0 = Long.bitCount(lanes & ((1L << GemmMicroKernel.L) - 1)), c1 = Long.bitCount(lanes >>> GemmMicroKernel.L);
        TileEpilogue e = epilogue != null ? epilogue : TileEpilogue.NONE;
        if (first && p.contiguous[n0] >= c0 + c1 && e.storesCompressed(n0, c0 + c1)) {
            e.storeCompressed(tmp, mr, lanes, c0, c1, cs, cBase, p.cRow, m, p.cCol, n0, batch, buffers);
            return;
        }
        int end = Math.min(NR, im.qPerImage - q);
        for (int j = 0; j < end; ) {
            int oh = (q + j) / im.pitch, ow = q + j - oh * im.pitch;
            if (ow >= im.outW) {
                j += im.pitch - ow;
                continue;
            }
            int len = Math.min(end - j, im.outW - ow), n = (o * im.outH + oh) * im.outW + ow;
            if (epilogue != null) epilogue.store(tmp, j, cs, cBase, p.cRow, m, mr, p.cCol, n, len, p.contiguous[n] >= len, first, batch, buffers);
            else GemmMicroKernel.storeRun(tmp, j, cs, cBase, p.cRow, m, mr, p.cCol, n, len, p.contiguous[n] >= len, first);
            j += len;
        }
    }

    /**
     * Constant operands packed once, for the full extents, in the layouts the loop nest packs per block: A as
     * {@code [batch][K block][panel of MR rows][k][row]} (rows padded to MR), B as {@code [batch][K block][column panel][k][NR]}
     * (columns padded to NR), each K block {@code kcStep} deep (the last shorter). Null sides are packed per run.
     */
    record Prepacked(float[] a, float[] b) {}

    /** Most floats a side is prepacked into (the rest are packed per run, as any operand). */
    static final long PREPACK_MAX = 1L << 28;

    /**
     * Packs the constant operands among A ({@code packA}) and B ({@code packB}) from {@code buffers} for the full
     * extents, or returns null when neither is packed (a side larger than {@link #PREPACK_MAX} floats stays
     * packed per run).
     *
     * @throws IndexOutOfBoundsException when an element read lies outside its buffer
     */
    Prepacked prepack(MemorySegment[] buffers, boolean packA, boolean packB) { return prepack(buffers, packA, packB, 0); }

    /**
     * {@link #prepack(MemorySegment[], boolean, boolean)} in {@code shares} shares side by side on the workers (0: as
     * many as {@link WorkerPool#balancedShares} gives for the blocks, or 1 below {@link #PARALLEL_PREPACK_MIN} floats).
     */
    Prepacked prepack(MemorySegment[] buffers, boolean packA, boolean packB, int shares) {
        GemmPlan p = plans.full();
        if (p.batches == 0 || p.m == 0 || p.n == 0 || p.k == 0) return null;
        if (runsAsDots()) return null; // dot products read both operands as they are
        long aSize = (long) p.batches * roundUp(p.m, MR) * p.k, bSize = (long) p.batches * roundUp(p.n, NR) * p.k;
        packA &= aSize <= PREPACK_MAX;
        packB &= bSize <= PREPACK_MAX;
        if (!packA && !packB) return null;
        if (packA) p.a.checkBounds(buffers[p.a.param], "operand A");
        if (packB) p.b.checkBounds(buffers[p.b.param], "operand B");
        float[] a = packA ? new float[(int) aSize] : null, b = packB ? new float[(int) bSize] : null;
        List<PackBlock> blocks = packBlocks(p, packA, packB);
        long floats = (packA ? aSize : 0) + (packB ? bSize : 0);
        if (shares == 0) shares = WorkerPool.size() < 2 || floats < PARALLEL_PREPACK_MIN ? 1 : WorkerPool.balancedShares(blocks.size());
        shares = Math.max(1, Math.min(shares, blocks.size()));
        MemorySegment as = buffers[p.a.param], bs = buffers[p.b.param];
        if (shares == 1) {
            packBlocks(p, blocks, 0, blocks.size(), as, bs, a, b);
        } else {
            // ResNet-50's 100 MB of weights were packed on the calling thread, a sixth of its prepare with a warm cache
            WorkerPool.forRanges(blocks.size(), shares, (from, to) -> packBlocks(p, blocks, (int) from, (int) to, as, bs, a, b));
        }
        return new Prepacked(a, b);
    }

    /** Below this many floats prepacked, a kernel's constants are packed on the calling thread. */
    static final long PARALLEL_PREPACK_MIN = 1L << 16;

    /**
     * One block of a prepacked side: for batch {@code batch} and the K block from {@code pc}, {@code kc} deep, rows
     * ({@code a}) or columns of B {@code [from, from + count)}, {@code from} a multiple of MR or NR. Blocks write
     * disjoint ranges of the packed arrays, each in the layout the whole side's packing writes there (a block's rows
     * or columns lie at {@code from * kc} in their K block, as {@link #compute} reads them), so packing them in any
     * order or side by side gives the same floats.
     */
    private record PackBlock(boolean a, int batch, int pc, int kc, int from, int count) {}

    /** The blocks of the sides to prepack: per batch and K block, rows of A by {@link #MC}, columns of B by {@link #NC}. */
    private static List<PackBlock> packBlocks(GemmPlan p, boolean packA, boolean packB) {
        int kcStep = kcStep(p);
        List<PackBlock> out = new ArrayList<>();
        for (int batch = 0; batch < p.batches; batch++) {
            for (int pc = 0; pc < p.k; pc += kcStep) {
                int kc = Math.min(kcStep, p.k - pc);
                if (packA) for (int r = 0; r < p.m; r += MC) out.add(new PackBlock(true, batch, pc, kc, r, Math.min(MC, p.m - r)));
                if (packB) for (int c = 0; c < p.n; c += NC) out.add(new PackBlock(false, batch, pc, kc, c, Math.min(NC, p.n - c)));
            }
        }
        return out;
    }

    /** Packs {@code blocks[from, to)} into {@code a} and {@code b}, with the calling thread's scratch row. */
    private static void packBlocks(GemmPlan p, List<PackBlock> blocks, int from, int to, MemorySegment as, MemorySegment bs, float[] a, float[] b) {
        float[] row = SCRATCH.get().row; // at least max(KC_IMAGE, PACK_GROUP_ROWS * NC) floats: a block's K depth, MC rows, NC columns
        for (int i = from; i < to; i++) {
            PackBlock k = blocks.get(i);
            if (k.a()) p.a.packRows(as, k.batch(), k.from(), k.count(), k.pc(), k.kc(), a, aBase(p, k.batch(), k.pc()) + k.from() * k.kc(), row);
            else p.b.packColPanels(bs, k.batch(), k.pc(), k.kc(), k.from(), k.count(), b, bBase(p, k.batch(), k.pc()) + k.from() * k.kc(), row);
        }
    }

    /** Where K block {@code pc} of batch {@code b} starts in a prepacked A. */
    private static int aBase(GemmPlan p, int b, int pc) { return (b * p.k + pc) * roundUp(p.m, MR); }

    /** Where K block {@code pc} of batch {@code b} starts in a prepacked B. */
    private static int bBase(GemmPlan p, int b, int pc) { return (b * p.k + pc) * roundUp(p.n, NR); }

    /** The BLIS loop nest over batches {@code [b0, b1)}, rows {@code [m0, m1)} and columns {@code [n0, n1)} of C. */
    static void compute(GemmPlan p, Prepacked pre, MemorySegment as, MemorySegment bs, MemorySegment cs,
                        int b0, int b1, int m0, int m1, int n0, int n1, MemorySegment[] buffers) {
        if (m1 <= m0 || n1 <= n0) return;
        Scratch s = SCRATCH.get();
        if (p.dots && m1 - m0 <= GemmDots.MAX_ROWS) {
            GemmDots.compute(p, as, bs, cs, b0, b1, m0, m1, n0, n1, buffers, s.tmp);
            return;
        }
        // equal blocks no larger than the limits: K = 576 runs as 2 x 288, not 512 + 64
        int kcStep = kcStep(p), mcStep = step(m1 - m0, MC, MR), ncStep = step(n1 - n0, NC, NR);
        float[] preA = pre == null ? null : pre.a(), preB = pre == null ? null : pre.b();
        s.ensure(preA != null ? 0 : roundUp(mcStep, MR) * kcStep, preB != null ? 0 : roundUp(ncStep, NR) * kcStep);
        // a prepacked side is read where its block lies in the whole (m0 and n0 are multiples of MR and NR)
        float[] ap = preA != null ? preA : s.a, bp = preB != null ? preB : s.b;
        for (int b = b0; b < b1; b++) {
            long cBase = p.cBatch[b];
            for (int jc = n0; jc < n1; jc += ncStep) {
                int nc = Math.min(ncStep, n1 - jc);
                for (int pc = 0; pc < p.k; pc += kcStep) {
                    int kc = Math.min(kcStep, p.k - pc);
                    boolean first = pc == 0;
                    TileEpilogue epilogue = pc + kc == p.k ? p.epilogue : null;
                    // one K block: full tiles go from the registers straight into C where the epilogue allows
                    boolean direct = first && pc + kc == p.k;
                    MemorySegment run = direct && epilogue != null ? epilogue.runAddend(buffers) : null;
                    float lower = epilogue == null ? Float.NEGATIVE_INFINITY : epilogue.lowerOrNone();
                    float upper = epilogue == null ? Float.POSITIVE_INFINITY : epilogue.upperOrNone();
                    // a short K: groups of column panels, row tile by row tile, as computeImage's tiles
                    int groupColumns = tileGroup(kc) * NR;
                    int groupRows = groupColumns > NR ? MR : Integer.MAX_VALUE;
                    int bAt = 0;
                    if (preB == null) p.b.packColPanels(bs, b, pc, kc, jc, nc, bp, 0, s.row);
                    else bAt = bBase(p, b, pc) + jc * kc;
                    for (int ic = m0; ic < m1; ic += mcStep) {
                        int mc = Math.min(mcStep, m1 - ic);
                        int aAt = 0;
                        if (preA == null) p.a.packRows(as, b, ic, mc, pc, kc, ap, 0, s.row);
                        else aAt = aBase(p, b, pc) + ic * kc;
                        if (direct) s.blockRows(p, b, cBase, ic, mc, epilogue, run, buffers);
                        for (int jg = 0; jg < nc; jg += groupColumns) for (int ir0 = 0; ir0 < mc; ir0 += groupRows)
                        for (int jr = jg, jge = Math.min(nc, jg + groupColumns); jr < jge; jr += NR) {
                            int nr = Math.min(NR, nc - jr), n = jc + jr;
                            boolean contiguous = p.contiguous[n] >= nr;
                            for (int ir = ir0, ire = Math.min(mc, ir0 + groupRows); ir < ire; ir += MR) {
                                int mr = Math.min(MR, mc - ir);
                                if (direct && nr == NR && mr == MR && contiguous && (epilogue == null || epilogue.storableFromRegisters(n))) {
                                    s.tileRows(ir, 4 * p.cCol[n], run == null ? 0 : epilogue.runAddendColumn(n));
                                    if (run == null) GemmMicroKernel.wideInto(ap, aAt + ir * kc, bp, bAt + jr * kc, kc, cs, s.rowOff, s.rowAdd, lower, upper);
                                    else GemmMicroKernel.wideIntoRun(ap, aAt + ir * kc, bp, bAt + jr * kc, kc, cs, s.rowOff, s.rowAdd, run, s.runOff, lower, upper, s.tmp);
                                    continue;
                                }
                                GemmMicroKernel.sums(ap, aAt + ir * kc, bp, bAt + jr * kc, kc, mr, nr, s.tmp);
                                if (epilogue != null) epilogue.store(s.tmp, 0, cs, cBase, p.cRow, ic + ir, mr, p.cCol, n, nr, contiguous, first, b, buffers);
                                else GemmMicroKernel.store(cs, cBase, p.cRow, ic + ir, mr, p.cCol, n, nr, contiguous, first, s.tmp);
                            }
                        }
                    }
                }
            }
        }
    }

    /**
     * The depth of {@code p}'s K blocks, the same for every run and for prepacking (whose layout is per K block): at most
     * {@link #KC_IMAGE} where B is read from a padded image, else {@link #KC}.
     */
    static int kcStep(GemmPlan p) { return step(p.k, p.image != null ? KC_IMAGE : KC, 1); }

    /** The size of {@code ceil(n / max)} equal blocks covering n, rounded up to a multiple of {@code align}. */
    static int step(int n, int max, int align) {
        int blocks = (n + max - 1) / max;
        return roundUp((n + blocks - 1) / blocks, align);
    }

    private static int roundUp(int x, int to) { return (x + to - 1) / to * to; }
}

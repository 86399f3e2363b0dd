package dev.kiln.codegen;

import dev.kiln.types.DType;
import dev.kiln.types.Variable;
import dev.kiln.ir.Op;
import dev.kiln.ir.Slot;
import dev.kiln.ir.UOp;

import java.util.ArrayList;
import java.util.EnumSet;
import java.util.List;
import java.util.Map;
import java.util.OptionalLong;
import java.util.Set;

/**
 * The default optimisation actions for a kernel on a CPU: simple, explainable rules that BEAM search
 * will later tune. Applied in this order, each on the program the previous ones left:
 *
 * <ol>
 *   <li><b>Register tile</b> of matmul-like kernels (below) with f32, f64, i32 or i64 output whose
 *       columns {@code j} have a multiple of the lane count ({@code vectorBytes / itemSize}): UPCAST
 *       {@code j} by the lane count (vector lanes), its outer loop by {@link #TILE_VECTORS} and the rows
 *       {@code i} by {@link #TILE_ROWS}, so each step of the reduction updates a tile of vector
 *       accumulators from one load of its column vectors (see {@link #registerTile}). Such a kernel
 *       skips the next two rules.</li>
 *   <li><b>TILE</b> matmul-like kernels: when the two innermost GLOBAL loops {@code i, j} enclose a
 *       reduce loop {@code r} that loads one operand indexed by {@code (i, r)} but not {@code j} (rows)
 *       and another indexed by {@code (j, r)} but not {@code i} (columns), tile {@code i} then {@code j}
 *       by the largest of 32, 16, 8 that divides the extent and is smaller than it (both or neither),
 *       giving {@code i_o, j_o, i_t, j_t}: a tile of outputs reuses the same rows and columns. When the
 *       kernel will be threaded and {@code i} is the outermost loop, {@code i}'s tile is the largest that
 *       leaves a tile per core, else the smallest.</li>
 *   <li><b>UPCAST</b> the innermost GLOBAL loop by the lane count of the output dtype (f32, f64, i32
 *       or i64) when that divides the extent (also over a symbolic size: the lanes past it store nothing), every store is contiguous in the
 *       loop (stride 1) and every load is contiguous or the same for all lanes (stride 1 or 0), or reads every
 *       other element under a gate the same for all lanes: then the lanes are one vector load (two and a permute
 *       for every other element), operation and store.</li>
 *   <li>Each innermost reduce loop: <b>GROUP</b> it by the lane count of its accumulator when the kernel
 *       was not upcast (upcast lanes already give independent accumulators), the extent is at least 4
 *       lanes and divisible by them, and its loads are contiguous or invariant in it (a loop over a symbolic
 *       size too, its last group's lanes past the size masked: attention's softmax over the sequence); otherwise
 *       <b>UNROLL</b> it fully when its extent is at most {@link #UNROLL_MAX} (e.g. a 3x3 window) and fixed.</li>
 *   <li><b>THREAD</b> the outermost loop when it is a GLOBAL loop (the kernel's only top-level
 *       statement) and the kernel does at least {@link #THREAD_MIN_WORK} statement executions (about
 *       one multiply-add each), with {@code min(cores, extent)} workers.</li>
 * </ol>
 */
public final class Heuristics {
    /** The work (accumulates and stores executed) below which threads cost more than they save. */
    public static final long THREAD_MIN_WORK = 1 << 16;
    /** Reduce loops up to this extent that are not grouped are unrolled fully. */
    public static final int UNROLL_MAX = 8;
    private static final int[] TILE_SIZES = {32, 16, 8};
    /** Rows of a register tile (see {@link #registerTile}). */
    static final int TILE_ROWS = 4;
    /**
     * Vectors in a row of a register tile: with {@link #TILE_ROWS} rows, 8 accumulators of the 16 AVX2
     * vector registers. On a 2-core Zen 3 (AVX2), f32 1024^3, 2 threads: 4x2 vectors 55-60 GFLOP/s;
     * 4x1 and 2x2 (4 accumulators) 31-33; 4x4 and 8x2 (16 accumulators, some spilled) 52; 4x4 with a
     * 256-column cache tile 49.
     */
    static final int TILE_VECTORS = 2;
    /**
     * The dtypes the CPU renderer computes in vector lanes (jdk.incubator.vector). Kernels with other
     * output dtypes are not upcast: the renderer would only unroll them into scalar copies.
     */
    private static final Set<DType> VECTOR_DTYPES = EnumSet.of(DType.F32, DType.F64, DType.I32, DType.I64);

    private Heuristics() {}

    /** {@code program} with the default actions for {@code cpu} applied. */
    public static KernelProgram optimize(KernelProgram program, CpuInfo cpu) {
        KernelProgram anonymous = program.anonymous();
        return Optimizer.apply(anonymous, defaultOpts(anonymous, cpu)).withName(program.name());
    }

    /** The default actions for {@code program} on {@code cpu}; {@link Optimizer#apply} accepts them. */
    public static List<Opt> defaultOpts(KernelProgram program, CpuInfo cpu) {
        Plan plan = new Plan(program);
        boolean threads = cpu.cores() >= 2 && work(program.body(), 1) >= THREAD_MIN_WORK;
        boolean upcast = registerTile(plan, cpu);
        if (!upcast) {
            tile(plan, threads ? cpu.cores() : 1);
            upcast = upcast(plan, cpu);
        }
        reductions(plan, cpu, upcast);
        if (threads) thread(plan, cpu);
        return List.copyOf(plan.opts);
    }

    /** The program so far and the actions that made it. */
    private static final class Plan {
        KernelProgram program;
        final List<Opt> opts = new ArrayList<>();

        Plan(KernelProgram program) { this.program = program; }

        void add(Opt opt) {
            program = Optimizer.apply(program, opt);
            opts.add(opt);
        }

        int axis(Variable index) {
            List<Stmt.Loop> axes = Optimizer.axes(program);
            for (int k = 0; k < axes.size(); k++) if (axes.get(k).index().equals(index)) return k;
            throw new IllegalStateException("no loop over " + index.name());
        }

        /** The output nest's GLOBAL and THREAD loops, outermost first, and the block inside the nest. */
        List<Stmt.Loop> outputLoops() {
            List<Stmt.Loop> out = new ArrayList<>();
            Stmt.Block b = program.body();
            while (b.body().size() == 1 && b.body().getFirst() instanceof Stmt.Loop l && l.kind() != Stmt.LoopKind.REDUCE) {
                if (l.kind() == Stmt.LoopKind.GLOBAL || l.kind() == Stmt.LoopKind.THREAD) out.add(l);
                b = l.body();
            }
            return out;
        }
    }

    // ---------------------------------------------------------------- register tiles

    /**
     * A matmul-like kernel (see {@link #tile}) whose columns {@code j} can be vector lanes: UPCAST
     * {@code j} by the lane count, then its outer loop by {@link #TILE_VECTORS} (the vectors of a row of
     * the tile), then the rows {@code i} by {@link #TILE_ROWS}. The renderer interleaves the tile's
     * iterations inside the reduction loop, so each step of {@code k} loads the tile's column vectors
     * once, broadcasts one element of each row, and updates {@code rows x vectors} vector accumulators
     * with a multiply and an add each; every output element still sums its terms in order.
     */
    private static boolean registerTile(Plan plan, CpuInfo cpu) {
        List<Stmt.Loop> globals = plan.outputLoops();
        if (globals.size() < 2 || !VECTOR_DTYPES.contains(plan.program.outputDType())) return false;
        Stmt.Loop i = globals.get(globals.size() - 2), j = globals.getLast();
        int lanes = cpu.lanes(plan.program.outputDType().itemSize());
        if (lanes < 2 || j.limit() != null || j.extent() % lanes != 0 || !matmulLike(j.body(), i.index(), j.index()) || !vectorLanes(j, cpu)) return false;
        plan.add(new Opt.Upcast(plan.axis(j.index()), lanes));
        Stmt.Loop columns = plan.outputLoops().getLast();
        int vectors = largestDivisor(columns.extent(), TILE_VECTORS);
        if (vectors > 1) plan.add(new Opt.Upcast(plan.axis(columns.index()), vectors));
        int rows = i.limit() != null ? 1 : largestDivisor(i.extent(), TILE_ROWS); // a symbolic row loop cannot be split
        if (rows > 1) plan.add(new Opt.Upcast(plan.axis(i.index()), rows));
        return true;
    }

    /** The largest of {@code max}, {@code max / 2}, ..., 2 that divides {@code extent}, else 1. */
    private static int largestDivisor(long extent, int max) {
        for (int d = max; d >= 2; d /= 2) if (extent % d == 0) return d;
        return 1;
    }

    // ---------------------------------------------------------------- TILE

    private static void tile(Plan plan, int workers) {
        List<Stmt.Loop> globals = plan.outputLoops();
        if (globals.size() < 2) return;
        Stmt.Loop i = globals.get(globals.size() - 2), j = globals.getLast();
        // the outermost loop is the one THREAD splits: leave it a tile per worker where a tile size allows
        int ti = tileSize(i.extent(), globals.size() == 2 ? workers : 1), tj = tileSize(j.extent(), 1);
        if (ti == 0 || tj == 0 || i.limit() != null || j.limit() != null || !matmulLike(j.body(), i.index(), j.index())) return;
        plan.add(new Opt.Tile(plan.axis(i.index()), ti));
        plan.add(new Opt.Tile(plan.axis(j.index()), tj));
    }

    /**
     * The largest of {@link #TILE_SIZES} that divides {@code extent}, is smaller and leaves at least
     * {@code tiles} tiles; failing the last, the smallest that divides (most tiles); 0 if none divides.
     */
    private static int tileSize(long extent, int tiles) {
        int smallest = 0;
        for (int t : TILE_SIZES) {
            if (extent % t != 0 || t >= extent) continue;
            if (extent / t >= tiles) return t;
            smallest = t;
        }
        return smallest;
    }

    /** A reduce loop loads rows (indexed by i and r, not j) and columns (by j and r, not i). */
    private static boolean matmulLike(Stmt.Block body, Variable i, Variable j) {
        boolean[] found = {false};
        Optimizer.walk(body, s -> {
            if (!(s instanceof Stmt.Loop r) || r.kind() != Stmt.LoopKind.REDUCE) return;
            boolean rows = false, cols = false;
            for (UOp load : loads(r.body())) {
                Set<Variable> v = load.src(1).variables();
                if (v.contains(r.index()) && v.contains(i) && !v.contains(j)) rows = true;
                if (v.contains(r.index()) && v.contains(j) && !v.contains(i)) cols = true;
            }
            found[0] |= rows && cols;
        });
        return found[0];
    }

    // ---------------------------------------------------------------- UPCAST

    private static boolean upcast(Plan plan, CpuInfo cpu) {
        List<Stmt.Loop> globals = plan.outputLoops();
        if (globals.isEmpty() || !VECTOR_DTYPES.contains(plan.program.outputDType())) return false;
        Stmt.Loop v = globals.getLast();
        int lanes = cpu.lanes(plan.program.outputDType().itemSize());
        if (lanes < 2 || v.limitStep() != 1 || globals.size() < 2 && v.extent() % lanes != 0) return false;
        if (v.limit() != null) { // a symbolic size: whole vectors, the last one's lanes past the size masked off (Optimizer)
            if (v.extent() % lanes != 0 || laneGates(v) || !vectorLanes(v, cpu)) return false;
            plan.add(new Opt.Upcast(plan.axis(v.index()), lanes));
            return true;
        }
        // gates that differ between lanes (padding) are split off first where a stretch of the row is free of them
        if (globals.size() >= 2 && (laneGates(v) || !vectorLanes(v, cpu))) {
            Stmt.Loop middle = hoistGates(plan, v, cpu, MIN_WIDTH);
            if (middle != null) v = middle;
        }
        if (!vectorLanes(v, cpu)) return upcastInGroups(plan, v, lanes, cpu);
        if (v.extent() % lanes == 0) {
            plan.add(new Opt.Upcast(plan.axis(v.index()), lanes));
            return true;
        }
        // a row that is no multiple of the lanes (7, 13, 55, 196 pixels): vectors for the whole multiples, then one
        // more that ends at the row's end where computing some outputs twice is harmless, else the rest one by one;
        // a row shorter than the vector in narrower vectors. Loads masked by gates that differ between lanes keep whole
        // vectors and single iterations.
        int width = lanes;
        while (width > MIN_WIDTH && v.extent() < width) width /= 2;
        if (!laneGates(v) && v.extent() >= width && width >= MIN_WIDTH) {
            if (v.extent() % width == 0) {
                plan.add(new Opt.Upcast(plan.axis(v.index()), width));
                return true;
            }
            try {
                plan.add(new Opt.UpcastOverlap(plan.axis(v.index()), width));
                return true;
            } catch (IllegalArgumentException notRecomputable) {
                // the kernel reads what it stores (an epilogue in place)
            }
        }
        if (v.extent() < 2L * lanes) return false;
        plan.add(new Opt.UpcastRemainder(plan.axis(v.index()), lanes));
        return true;
    }

    /**
     * UPCAST of a loop whose loads are neither the same for every iteration nor contiguous, but are within each
     * aligned group of {@code lanes} iterations: an axis merged from several (heads times head size) reads a per-head
     * value at {@code i / 64}, the same for the lanes of a group, and a head's row at {@code i % 64}, contiguous in
     * them (attention's probabilities times values in a decode step, 10x faster in lanes). Tried on a copy of the
     * plan: kept when the lane loop it makes is vector lanes.
     */
    private static boolean upcastInGroups(Plan plan, Stmt.Loop v, int lanes, CpuInfo cpu) {
        if (v.extent() % lanes != 0 || v.extent() == lanes) return false;
        Plan trial = new Plan(plan.program);
        trial.add(new Opt.Upcast(plan.axis(v.index()), lanes));
        Stmt.Loop[] lane = {null};
        String name = v.index().name() + "_up";
        Optimizer.walk(trial.program.body(), s -> {
            if (s instanceof Stmt.Loop l && l.kind() == Stmt.LoopKind.UPCAST && l.index().name().equals(name)) lane[0] = l;
        });
        if (lane[0] == null || !vectorLanes(lane[0], cpu)) return false;
        trial.opts.forEach(plan::add);
        // a reduction inside: more vectors of the row side by side, so their sums are independent chains of adds
        Stmt.Loop outer = plan.outputLoops().getLast();
        int vectors = largestDivisor(outer.extent(), GROUP_VECTORS);
        if (containsReduce(lane[0].body()) && vectors > 1) plan.add(new Opt.Upcast(plan.axis(outer.index()), vectors));
        return true;
    }

    /** Vectors of a row computed side by side by {@link #upcastInGroups} around a reduction. */
    static final int GROUP_VECTORS = 4;

    /**
     * SPLIT an innermost output loop {@code v} whose lanes differ in a gate (a padded window's edge columns, a
     * concatenation's seam) so that its longest stretch of iterations on which every such gate is decided, and
     * decided alike, is a loop of its own, with the gates folded away; then that loop, if it is at least
     * {@code minLength} long and can be vector lanes, else null (and nothing applied). The stretch is found around the
     * middle iteration by bisection, which assumes gates monotonic in {@code v} (affine comparisons, as padding
     * and concatenation make), and is then checked over its whole range.
     */
    static Stmt.Loop hoistGates(Plan plan, Stmt.Loop v, CpuInfo cpu, int minLength) {
        if (expandedNodes(v.body(), 1) > SPLIT_MAX_NODES) return null;
        long[] stretch = gateFreeStretch(v);
        if (stretch == null || stretch[1] - stretch[0] + 1 < minLength) return null;
        long first = stretch[0], last = stretch[1], n = v.extent();
        Plan trial = new Plan(plan.program);
        Stmt.Loop middle = v;
        if (last < n - 1) middle = splitAt(trial, middle, last + 1, true); // [0, last] and the tail
        if (first > 0) middle = splitAt(trial, middle, first, false);     // [first, last] from [0, last]
        if (!vectorLanes(middle, cpu)) return null;
        trial.opts.forEach(plan::add);
        return middle;
    }

    /**
     * The first and last iteration of the longest stretch of loop {@code v} on which every gate that depends
     * on {@code v} is decided, and decided alike, if that is not the whole loop; else null. SPLIT at its ends
     * folds the gates away there.
     */
    public static long[] gateFreeStretch(Stmt.Loop v) {
        List<UOp> gates = gatesOn(v);
        long n = v.extent(), mid = n / 2;
        if (gates.isEmpty() || v.limit() != null || n < 3) return null;
        List<UOp> atMid = decided(gates, v.index(), UOp.index(mid));
        if (atMid == null) return null;
        long lo = 0, hi = mid;
        while (lo < hi) {
            long m = (lo + hi) / 2;
            if (atMid.equals(decided(gates, v.index(), UOp.index(m)))) hi = m;
            else lo = m + 1;
        }
        long first = lo;
        lo = mid;
        hi = n - 1;
        while (lo < hi) {
            long m = (lo + hi + 1) / 2;
            if (atMid.equals(decided(gates, v.index(), UOp.index(m)))) lo = m;
            else hi = m - 1;
        }
        long last = lo;
        Variable stretch = new Variable(v.index().name(), first, last);
        if (first == 0 && last == n - 1 || !atMid.equals(decided(gates, v.index(), UOp.variable(stretch)))) return null;
        return new long[] {first, last};
    }

    /** Applies SPLIT to {@code loop} at {@code at}: the first part when {@code head}, else the second. */
    private static Stmt.Loop splitAt(Plan plan, Stmt.Loop loop, long at, boolean head) {
        Set<Variable> before = new java.util.HashSet<>();
        for (Stmt.Loop l : Optimizer.axes(plan.program)) before.add(l.index());
        plan.add(new Opt.Split(plan.axis(loop.index()), Math.toIntExact(at)));
        List<Stmt.Loop> parts = new ArrayList<>();
        for (Stmt.Loop l : Optimizer.axes(plan.program)) if (!before.contains(l.index())) parts.add(l);
        return parts.get(head ? 0 : 1);
    }

    /** The gates' values with {@code v} replaced by {@code value}, or null if one is not a constant. */
    private static List<UOp> decided(List<UOp> gates, Variable v, UOp value) {
        List<UOp> out = new ArrayList<>();
        for (UOp g : gates) {
            UOp d = Optimizer.substitute(g, Map.of(v, value));
            if (!d.isConst()) return null;
            out.add(d);
        }
        return out;
    }

    /**
     * The conditions of {@code body}'s gated loads and WHEREs, split at their ANDs, that are index arithmetic
     * (they read no memory): a padded window's gate is one comparison per edge.
     */
    private static List<UOp> indexConditions(Stmt.Block body) {
        Set<UOp> out = new java.util.LinkedHashSet<>();
        Optimizer.walk(body, s -> {
            for (UOp e : Optimizer.expressions(s)) {
                for (UOp u : e.toposort()) {
                    if (u.op() == Op.LOAD && u.src().size() > 2) conjuncts(u.src(2), out);
                    else if (u.op() == Op.WHERE) conjuncts(u.src(0), out);
                }
            }
        });
        return new ArrayList<>(out);
    }

    private static void conjuncts(UOp c, Set<UOp> out) {
        if (c.op() == Op.AND && c.dtype().isBool()) {
            for (UOp x : c.src()) conjuncts(x, out);
        } else if (c.toposort().stream().noneMatch(x -> x.op() == Op.LOAD)) {
            out.add(c);
        }
    }

    /**
     * The largest body, in expression nodes once its small windows are unrolled, that SPLIT copies (up to three
     * parts, each vector lanes or single iterations). A padded 3x3 max pool (104) gains; a depthwise convolution with
     * its bias and ReLU6 (139) became a method of 2,600 bytecodes whose vector code C1 could not compile ("out of
     * virtual registers") and C2 reached only after seconds: it ran interpreted, a thousand times slower.
     */
    static final int SPLIT_MAX_NODES = 120;

    /** Expression nodes of {@code b} as the renderer expands it: innermost reduce loops up to {@link #UNROLL_MAX} unrolled. */
    static long expandedNodes(Stmt.Block b, long copies) {
        long n = 0;
        for (Stmt s : b.body()) {
            n += switch (s) {
                case Stmt.Loop l -> expandedNodes(l.body(),
                        l.kind() == Stmt.LoopKind.REDUCE && l.extent() <= UNROLL_MAX && !containsReduce(l.body()) ? copies * l.extent() : copies);
                case Stmt.Block inner -> expandedNodes(inner, copies);
                default -> copies * Optimizer.expressions(s).stream().mapToLong(e -> e.toposort().size()).sum();
            };
        }
        return n;
    }

    /** The narrowest vector a row is upcast to (4 lanes: 128 bits of f32). */
    private static final int MIN_WIDTH = 4;

    /**
     * Whether a load's gate or a WHERE in the loop depends on its variable: its lanes would need masked loads.
     * (Vector code with lane-dependent masks ran MobileNet's padded 14-pixel depthwise rows a thousand times slower
     * than scalar code.)
     */
    private static boolean laneGates(Stmt.Loop v) { return !gatesOn(v).isEmpty(); }

    /** The index conditions of the loop's body that depend on its variable. */
    private static List<UOp> gatesOn(Stmt.Loop v) {
        return indexConditions(v.body()).stream().filter(g -> g.variables().contains(v.index())).toList();
    }

    /** Every store in the loop is contiguous in its variable (stride 1), every load contiguous or the same for all iterations. */
    private static boolean vectorLanes(Stmt.Loop v, CpuInfo cpu) {
        List<Stmt.Store> stores = new ArrayList<>();
        Optimizer.walk(v.body(), s -> {
            if (s instanceof Stmt.Store st) stores.add(st);
        });
        for (Stmt.Store st : stores) if (!hasStride(st.index(), v.index(), 1)) return false;
        for (UOp load : loads(v.body())) {
            if (!hasStride(load.src(1), v.index(), 0) && !hasStride(load.src(1), v.index(), 1) && !(cpu.stridedLanes() && everyOther(load, v))) return false;
        }
        return true;
    }

    /**
     * A load of every other element (a stride-2 window: pooling, strided convolution) of a vector dtype, under no
     * gate or one the same for all lanes: two vector loads and a permute.
     */
    private static boolean everyOther(UOp load, Stmt.Loop v) {
        boolean gateInLanes = load.src().size() > 2 && load.src(2).variables().contains(v.index());
        return VECTOR_DTYPES.contains(load.dtype()) && !gateInLanes && hasStride(load.src(1), v.index(), 2);
    }

    // ---------------------------------------------------------------- GROUP and UNROLL

    private static void reductions(Plan plan, CpuInfo cpu, boolean upcast) {
        // GROUP and UNROLL of an innermost reduce loop leave every axis number as it was
        List<Stmt.Loop> axes = Optimizer.axes(plan.program);
        List<Opt> todo = new ArrayList<>();
        for (int k = 0; k < axes.size(); k++) {
            Stmt.Loop r = axes.get(k);
            // a loop over a symbolic size is grouped with its last group's lanes past the size masked off (Optimizer)
            if (r.kind() != Stmt.LoopKind.REDUCE || r.limitStep() != 1 || containsReduce(r.body()) || r.limit() != null && containsStore(r.body())) continue;
            Slot acc = accumulated(r.body());
            if (acc == null) continue;
            int lanes = cpu.lanes(acc.dtype().itemSize());
            boolean mayGroup = ReductionOrder.current().mayReorder() || !acc.dtype().isFloat(); // GROUP reorders float sums
            // a remainder is masked in the last group (a global average pool over 13 x 13 is 169 = 10 x 16 + 9)
            if (mayGroup && !upcast && lanes >= 2 && r.extent() >= 4L * lanes && contiguous(r)
                    && (r.extent() % lanes == 0 || cpu.maskedLanes() && !containsStore(r.body()))) {
                todo.add(new Opt.Group(k, lanes));
            } else if (r.limit() == null && r.extent() <= UNROLL_MAX) {
                todo.add(new Opt.Unroll(k, (int) r.extent()));
            }
        }
        todo.forEach(plan::add);
    }

    private static boolean containsReduce(Stmt.Block body) {
        boolean[] found = {false};
        Optimizer.walk(body, s -> found[0] |= s instanceof Stmt.Loop l && l.kind() == Stmt.LoopKind.REDUCE);
        return found[0];
    }

    private static boolean containsStore(Stmt.Block body) {
        boolean[] found = {false};
        Optimizer.walk(body, s -> found[0] |= s instanceof Stmt.Store);
        return found[0];
    }

    private static Slot accumulated(Stmt.Block body) {
        for (Stmt s : body.body()) if (s instanceof Stmt.Accumulate a) return a.register();
        return null;
    }

    /** Every load in the loop is contiguous (stride 1) or invariant (stride 0) in its variable, and one is contiguous. */
    private static boolean contiguous(Stmt.Loop r) {
        boolean any = false;
        for (UOp load : loads(r.body())) {
            boolean one = hasStride(load.src(1), r.index(), 1);
            if (!one && !hasStride(load.src(1), r.index(), 0)) return false;
            any |= one;
        }
        return any;
    }

    // ---------------------------------------------------------------- THREAD

    private static void thread(Plan plan, CpuInfo cpu) {
        List<Stmt> top = plan.program.body().body();
        if (top.size() != 1 || !(top.getFirst() instanceof Stmt.Loop l) || l.kind() != Stmt.LoopKind.GLOBAL || l.extent() < 2) return;
        plan.add(new Opt.Thread(0, (int) Math.min(cpu.cores(), l.extent())));
    }

    /**
     * Accumulates and stores executed: each statement times the iterations of its enclosing loops (times
     * {@code iterations}), saturating at {@link Long#MAX_VALUE}.
     */
    public static long work(Stmt s, long iterations) {
        return switch (s) {
            case Stmt.Block b -> b.body().stream().mapToLong(x -> work(x, iterations)).reduce(0, Heuristics::saturatingAdd);
            case Stmt.Loop l -> work(l.body(), Math.multiplyHigh(iterations, l.extent()) != 0 || iterations * l.extent() < 0
                    ? Long.MAX_VALUE : iterations * l.extent());
            case Stmt.Accumulate a -> iterations;
            case Stmt.Store st -> iterations;
            case Stmt.Define d -> 0;
        };
    }

    private static long saturatingAdd(long a, long b) { return a + b < 0 ? Long.MAX_VALUE : a + b; }

    // ---------------------------------------------------------------- index analysis

    /** The LOAD nodes of every expression in {@code body}. */
    private static List<UOp> loads(Stmt.Block body) {
        List<UOp> out = new ArrayList<>();
        Optimizer.walk(body, s -> {
            for (UOp e : Optimizer.expressions(s)) for (UOp u : e.toposort()) if (u.op() == Op.LOAD) out.add(u);
        });
        return out;
    }

    /** Whether {@code index} grows by exactly {@code stride} from every value of {@code v} to the next. */
    static boolean hasStride(UOp index, Variable v, long stride) {
        OptionalLong s = stride(index, v);
        return s.isPresent() && s.getAsLong() == stride;
    }

    /** {@code index(v + 1) - index(v)} when it is the same for every v (and other variables), else empty. */
    public static OptionalLong stride(UOp index, Variable v) {
        if (!index.variables().contains(v) || v.max() == v.min()) return OptionalLong.of(0);
        Variable w = new Variable(v.name() + "'", v.min(), v.max() - 1); // v + 1 stays within v's bounds
        UOp at = Optimizer.substitute(index, Map.of(v, UOp.variable(w))), next = Optimizer.substitute(index, Map.of(v, UOp.variable(w).add(1)));
        UOp diff = Optimizer.substitute(next.sub(at), Map.of());
        return diff.isConst() ? OptionalLong.of(diff.constLong()) : OptionalLong.empty();
    }
}

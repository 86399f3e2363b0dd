package dev.kiln.schedule;

import dev.kiln.ir.Op;
import dev.kiln.ir.UOp;
import dev.kiln.ir.BufferRef;
import dev.kiln.schedule.MemoryPlan.ByteRange;
import dev.kiln.schedule.MemoryPlan.Interval;
import dev.kiln.schedule.MemoryPlan.Storage;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.IdentityHashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * Packs the intermediates of a {@link Schedule} into one arena per device by liveness.
 *
 * <p>An intermediate is the output of a {@code Kernel}, {@code Copy} or {@code Custom} item that is not
 * a graph output. It is live from the item that produces it to the last item that reads it or any
 * view of it (a {@code View} item's output aliases its input, and a kernel computing an {@code ASSIGN}
 * writes into its target, so both extend their parent's life and share its bytes). Intermediates
 * whose intervals overlap get disjoint bytes; the others may reuse the same bytes.
 *
 * <p>Graph outputs live past the schedule and realised {@code BUFFER} inputs already have storage:
 * both own their storage outside the arena, and so does an intermediate a graph output is a view of.
 *
 * <p>Placement is greedy: blocks are taken largest first (and, in a second and third pass, by size
 * times lifetime and by start), each is put into the smallest gap between the already placed blocks
 * whose intervals overlap its own that fits it, or above them all; the smallest of the passes wins.
 * Offsets and block sizes are multiples of {@link #ALIGNMENT}.
 *
 * <p>Independent branches are not kept apart: their intermediates reuse each other's bytes whenever
 * their lifetimes allow it, which keeps the arena small. The reuse shows up as a
 * {@link MemoryPlan#conflicts conflict} between items of the two branches, so an executor that runs
 * items concurrently still orders them correctly; it merely loses that concurrency.
 */
public final class MemoryPlanner {
    /** Alignment of every offset and block size in an arena, in bytes (a cache line; fits AVX-512). */
    public static final long ALIGNMENT = 64;

    private MemoryPlanner() {}

    /**
     * The memory plan of {@code schedule} run on {@code device} (the name of a device, as
     * {@code DeviceSpec.toString()} writes it). The device of each intermediate is the target of a
     * {@code COPY}, otherwise the device of the item's first input, otherwise {@code device}.
     *
     * @throws IllegalArgumentException if an item reads a node before it is produced, a node is produced
     *     twice, an output is never produced, or an {@code ASSIGN} target is not realised
     */
    public static MemoryPlan plan(Schedule schedule, String device) {
        List<ScheduleItem> items = schedule.items();
        int n = items.size();
        Map<UOp, Integer> producer = new IdentityHashMap<>();
        Map<UOp, UOp> base = new IdentityHashMap<>(); // realised node -> the node whose storage it uses
        Map<UOp, String> devices = new IdentityHashMap<>();
        Map<UOp, Integer> lastRead = new IdentityHashMap<>();
        Set<UOp> externals = Collections.newSetFromMap(new IdentityHashMap<>());
        // a piece of a join lives in its join's bytes, at an offset (through joins of joins, to the outermost)
        Map<UOp, ScheduleItem.Join> joinOf = new IdentityHashMap<>();
        Map<UOp, Long> within = new IdentityHashMap<>(); // node -> byte offset in its base's storage
        for (ScheduleItem item : items) {
            if (item instanceof ScheduleItem.Join j) for (UOp piece : j.inputs()) joinOf.put(piece, j);
        }

        for (int i = 0; i < n; i++) {
            ScheduleItem item = items.get(i);
            for (UOp in : item.inputs()) {
                if (in.op() == Op.BUFFER) addExternal(in, base, devices, externals);
                if (!base.containsKey(in)) {
                    throw new IllegalArgumentException("memory plan: item " + i + " reads " + in.op() + in.shape() + " before it is produced");
                }
                lastRead.merge(in, i, Math::max);
            }
            UOp o = item.output();
            if (producer.putIfAbsent(o, i) != null) {
                throw new IllegalArgumentException("memory plan: " + o.op() + o.shape() + " is produced twice (item " + i + ")");
            }
            UOp b = switch (item) {
                case ScheduleItem.View v -> base.get(v.inputs().getFirst());
                case ScheduleItem.Kernel _ when o.op() == Op.ASSIGN -> base.get(assignTarget(o, base, devices, externals));
                default -> o;
            };
            long offset = item instanceof ScheduleItem.View v ? within.getOrDefault(v.inputs().getFirst(), 0L) : 0;
            for (UOp x = o; joinOf.containsKey(x); ) { // a piece: its join's storage, the joins' offsets added up
                ScheduleItem.Join j = joinOf.get(x);
                offset += j.offsets().get(j.inputs().indexOf(x));
                x = j.output();
                b = x;
            }
            base.put(o, b);
            if (offset != 0) within.put(o, offset);
            devices.put(o, switch (item) {
                case ScheduleItem.Copy _ -> o.deviceArg();
                case ScheduleItem.View _ -> devices.get(b);
                case ScheduleItem.Join j -> joinDevice(j, devices);
                case ScheduleItem.Kernel _ when o.op() == Op.ASSIGN -> devices.get(b);
                default -> item.inputs().isEmpty() ? device : devices.get(item.inputs().getFirst());
            });
        }

        Set<UOp> owners = Collections.newSetFromMap(new IdentityHashMap<>());
        for (UOp out : schedule.outputs()) {
            if (out.op() == Op.BUFFER) addExternal(out, base, devices, externals);
            UOp b = base.get(out);
            if (b == null) throw new IllegalArgumentException("memory plan: output " + out.op() + out.shape() + " is never produced");
            owners.add(b);
        }
        owners.addAll(externals);
        Set<UOp> outputs = Collections.newSetFromMap(new IdentityHashMap<>());
        outputs.addAll(schedule.outputs());

        // own intervals, then each storage base's interval spans all nodes sharing its bytes
        Map<UOp, Interval> intervals = new IdentityHashMap<>();
        Map<UOp, Interval> baseLife = new IdentityHashMap<>();
        int end = Math.max(n - 1, 0);
        for (UOp u : base.keySet()) {
            Interval own;
            if (externals.contains(u)) own = new Interval(0, end);
            else if (outputs.contains(u)) own = new Interval(producer.get(u), end);
            else own = new Interval(producer.get(u), Math.max(producer.get(u), lastRead.getOrDefault(u, -1)));
            intervals.put(u, own);
            baseLife.merge(base.get(u), own, (x, y) -> new Interval(Math.min(x.first(), y.first()), Math.max(x.last(), y.last())));
        }
        for (UOp u : base.keySet()) {
            if (base.get(u) == u) intervals.put(u, baseLife.get(u));
        }

        // pack the arena blocks of each device
        Map<String, List<UOp>> blocksByDevice = new LinkedHashMap<>();
        for (ScheduleItem item : items) { // in producer order: a deterministic order, whatever the maps'
            UOp u = item.output();
            if (base.get(u) == u && !owners.contains(u)) blocksByDevice.computeIfAbsent(devices.get(u), k -> new ArrayList<>()).add(u);
        }
        Map<UOp, Long> offsets = new IdentityHashMap<>();
        Map<String, Long> arenaSizes = new LinkedHashMap<>();
        for (var e : blocksByDevice.entrySet()) {
            List<UOp> blocks = e.getValue();
            long[] size = new long[blocks.size()];
            Interval[] life = new Interval[blocks.size()];
            for (int i = 0; i < size.length; i++) {
                size[i] = align(bytes(blocks.get(i)));
                life[i] = intervals.get(blocks.get(i));
            }
            long[] placed = pack(size, life);
            long arena = 0;
            for (int i = 0; i < size.length; i++) {
                offsets.put(blocks.get(i), placed[i]);
                arena = Math.max(arena, placed[i] + size[i]);
            }
            arenaSizes.put(e.getKey(), arena);
        }

        Map<UOp, ByteRange> ranges = new IdentityHashMap<>();
        for (UOp u : base.keySet()) {
            UOp b = base.get(u);
            long at = within.getOrDefault(u, 0L);
            ByteRange r = owners.contains(b)
                    ? new ByteRange(new Storage.Owned(b), at, bytes(u))
                    : new ByteRange(new Storage.Arena(devices.get(b)), offsets.get(b) + at, bytes(u));
            ranges.put(u, r);
        }
        return new MemoryPlan(device, items, arenaSizes, ranges, intervals, outputs, externals);
    }

    /** The device of a join's pieces, which share its storage and so must share one device. */
    private static String joinDevice(ScheduleItem.Join j, Map<UOp, String> devices) {
        String d = devices.get(j.inputs().getFirst());
        for (UOp piece : j.inputs()) {
            if (!d.equals(devices.get(piece))) {
                throw new IllegalArgumentException("memory plan: a join's pieces are on " + d + " and " + devices.get(piece) + "; they share one buffer");
            }
        }
        return d;
    }

    /** Bytes of a node's dense data. */
    static long bytes(UOp u) { return u.dtype().byteSize(u.shape().numel()); }

    static long align(long bytes) { return (bytes + ALIGNMENT - 1) / ALIGNMENT * ALIGNMENT; }

    private static void addExternal(UOp buffer, Map<UOp, UOp> base, Map<UOp, String> devices, Set<UOp> externals) {
        if (externals.add(buffer)) {
            base.put(buffer, buffer);
            devices.put(buffer, buffer.bufferArg().device());
        }
    }

    /** The realised node an {@code ASSIGN} writes into (its target, through reshapes). */
    private static UOp assignTarget(UOp assign, Map<UOp, UOp> base, Map<UOp, String> devices, Set<UOp> externals) {
        UOp t = assign.src(0);
        while (!base.containsKey(t) && t.op() == Op.RESHAPE) t = t.src(0);
        if (t.op() == Op.BUFFER) addExternal(t, base, devices, externals);
        if (!base.containsKey(t)) {
            throw new IllegalArgumentException("memory plan: ASSIGN target " + t.op() + t.shape() + " is not a realised buffer");
        }
        return t;
    }

    /**
     * Offsets for blocks of the given (aligned) sizes and lifetimes such that blocks with overlapping
     * lifetimes do not overlap: the best of three greedy orders.
     */
    static long[] pack(long[] size, Interval[] life) {
        int m = size.length;
        // each order as two sort keys per block (ties: block number), sorted without comparator objects
        long[] bySize = new long[m], byArea = new long[m], start = new long[m];
        for (int i = 0; i < m; i++) {
            bySize[i] = -size[i];
            byArea[i] = -size[i] * (life[i].last() - life[i].first() + 1);
            start[i] = life[i].first();
        }
        long[][][] orders = {{bySize, start}, {byArea, start}, {start, bySize}};
        long[] best = null;
        long bestArena = Long.MAX_VALUE;
        for (long[][] keys : orders) {
            int[] idx = new int[m];
            for (int i = 0; i < m; i++) idx[i] = i;
            sort(idx, new int[m], 0, m, keys[0], keys[1]);
            long[] offset = place(idx, size, life);
            long arena = 0;
            for (int i = 0; i < m; i++) arena = Math.max(arena, offset[i] + size[i]);
            if (arena < bestArena) {
                bestArena = arena;
                best = offset;
            }
        }
        return best;
    }

    /** Stable merge sort of {@code idx[from, to)} by {@code primary}, then {@code secondary}. */
    private static void sort(int[] idx, int[] tmp, int from, int to, long[] primary, long[] secondary) {
        if (to - from < 2) return;
        int mid = (from + to) >>> 1;
        sort(idx, tmp, from, mid, primary, secondary);
        sort(idx, tmp, mid, to, primary, secondary);
        System.arraycopy(idx, from, tmp, from, to - from);
        int a = from, b = mid, k = from;
        while (a < mid && b < to) {
            int x = tmp[a], y = tmp[b];
            boolean takeRight = primary[y] < primary[x] || primary[y] == primary[x] && secondary[y] < secondary[x];
            idx[k++] = takeRight ? tmp[b++] : tmp[a++];
        }
        while (a < mid) idx[k++] = tmp[a++];
        while (b < to) idx[k++] = tmp[b++];
    }

    /**
     * Places blocks in {@code order}, each into the tightest gap among its placed neighbours in time.
     * The blocks placed so far are kept sorted by offset (ties in placement order), so the neighbours of
     * a block come out in offset order without sorting. Planning runs once per prepared plan, mostly
     * before the JIT has compiled it, so packing stays on primitive arrays.
     */
    private static long[] place(int[] order, long[] size, Interval[] life) {
        int m = size.length;
        long[] offset = new long[m];
        int[] first = new int[m], last = new int[m];
        for (int i = 0; i < m; i++) {
            first[i] = life[i].first();
            last[i] = life[i].last();
        }
        int[] placed = new int[m]; // block numbers by offset
        int count = 0;
        for (int i : order) {
            if (size[i] == 0) continue; // occupies no bytes, collides with nothing
            long cursor = 0, at = -1, tightest = Long.MAX_VALUE;
            for (int k = 0; k < count; k++) {
                int j = placed[k];
                if (first[j] > last[i] || first[i] > last[j]) continue; // not live at the same time
                long gap = offset[j] - cursor;
                if (gap >= size[i] && gap < tightest) {
                    tightest = gap;
                    at = cursor;
                }
                cursor = Math.max(cursor, offset[j] + size[j]);
            }
            offset[i] = at >= 0 ? at : cursor;
            int k = count;
            while (k > 0 && offset[placed[k - 1]] > offset[i]) { // after every block at the same offset
                placed[k] = placed[k - 1];
                k--;
            }
            placed[k] = i;
            count++;
        }
        return offset;
    }
}

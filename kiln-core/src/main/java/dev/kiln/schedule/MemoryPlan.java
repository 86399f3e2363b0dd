package dev.kiln.schedule;

import dev.kiln.ir.UOp;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * Where every realised node of a {@link Schedule} lives, made by {@link MemoryPlanner#plan}.
 *
 * <p>Intermediates share one arena per device: {@link #offsetOf} gives a node's byte offset in the
 * arena of its device, and two intermediates whose {@link #interval live intervals} overlap never
 * share a byte. Graph outputs and realised {@code BUFFER} inputs own their storage
 * ({@link Storage.Owned}); so does a node that a graph output aliases through a view. A view (and an
 * {@code ASSIGN}, which writes into its target) shares its parent's storage and offset.
 *
 * <p>Hazards are tracked on bytes, not on buffer identities: {@link #reads} and {@link #writes} give the
 * byte ranges an item touches, and two items {@link #conflicts conflict} when one writes bytes the other
 * reads or writes — a producer and its consumer, but also two unrelated items whose buffers were packed
 * into the same arena bytes at different times. Items that do not conflict may run in either order.
 *
 * @param device the device the schedule runs on (the arena of items that read no device's data)
 * @param items the schedule's items, indexed as in {@link #reads}, {@link #writes} and {@link #interval}
 * @param arenaSizes bytes of each device's arena (a multiple of {@link MemoryPlanner#ALIGNMENT})
 * @param ranges the bytes of every realised node (the output of an item, or a {@code BUFFER} input)
 * @param intervals the live interval of every realised node
 * @param outputs the graph outputs
 * @param externalInputs the realised {@code BUFFER} inputs
 */
public record MemoryPlan(
        String device,
        List<ScheduleItem> items,
        Map<String, Long> arenaSizes,
        Map<UOp, ByteRange> ranges,
        Map<UOp, Interval> intervals,
        Set<UOp> outputs,
        Set<UOp> externalInputs) {

    public MemoryPlan {
        items = List.copyOf(items);
        arenaSizes = Map.copyOf(arenaSizes);
        ranges = Map.copyOf(ranges);
        intervals = Map.copyOf(intervals);
        outputs = Set.copyOf(outputs);
        externalInputs = Set.copyOf(externalInputs);
    }

    /** A block of memory that byte ranges are relative to. */
    public sealed interface Storage {
        /** The intermediate arena of a device. */
        record Arena(String device) implements Storage {}

        /** Storage of its own, outside every arena: a graph output's or a realised input's buffer. */
        record Owned(UOp owner) implements Storage {}
    }

    /** {@code length} bytes at {@code offset} in {@code storage}. */
    public record ByteRange(Storage storage, long offset, long length) {
        /** Whether the two ranges share at least one byte (empty ranges share none). */
        public boolean overlaps(ByteRange o) {
            return storage.equals(o.storage) && length > 0 && o.length > 0
                    && offset < o.offset + o.length && o.offset < offset + length;
        }

        /** The first byte past the range. */
        public long end() { return offset + length; }
    }

    /**
     * The items (inclusive) between which a node's bytes must be kept: from the item that produces it
     * to the last item that reads it or a view of it. Graph outputs stay live to the last item;
     * realised inputs are live over the whole schedule.
     */
    public record Interval(int first, int last) {
        /** Whether some item lies in both intervals. */
        public boolean overlaps(Interval o) { return first <= o.last && o.first <= last; }
    }

    /** Bytes of the arena of the schedule's own device. */
    public long arenaSize() { return arenaSize(device); }

    /** Bytes of the arena of {@code device} (0 if nothing is placed there). */
    public long arenaSize(String device) { return arenaSizes.getOrDefault(device, 0L); }

    /** The bytes {@code node} occupies. */
    public ByteRange rangeOf(UOp node) {
        ByteRange r = ranges.get(node);
        if (r == null) throw new IllegalArgumentException("memory plan: " + node.op() + node.shape() + " is not realised by the schedule");
        return r;
    }

    /** Whether {@code node} lives in a device arena (an intermediate or a view of one). */
    public boolean inArena(UOp node) { return rangeOf(node).storage() instanceof Storage.Arena; }

    /**
     * The byte offset of an intermediate in its device's arena.
     *
     * @throws IllegalArgumentException if {@code node} owns its storage or is not realised
     */
    public long offsetOf(UOp node) {
        ByteRange r = rangeOf(node);
        if (!(r.storage() instanceof Storage.Arena)) {
            throw new IllegalArgumentException("memory plan: " + node.op() + node.shape() + " owns its storage; it has no arena offset");
        }
        return r.offset();
    }

    /** The live interval of a realised node. */
    public Interval interval(UOp node) {
        Interval i = intervals.get(node);
        if (i == null) throw new IllegalArgumentException("memory plan: " + node.op() + node.shape() + " is not realised by the schedule");
        return i;
    }

    /** Whether {@code node} is a graph output. */
    public boolean isGraphOutput(UOp node) { return outputs.contains(node); }

    /** Whether {@code node} is a realised input buffer. */
    public boolean isExternalInput(UOp node) { return externalInputs.contains(node); }

    /** The bytes item {@code item} reads (none for a view or a join, which move no data). */
    public List<ByteRange> reads(int item) {
        ScheduleItem it = items.get(item);
        if (it instanceof ScheduleItem.View || it instanceof ScheduleItem.Join) return List.of();
        List<ByteRange> out = new ArrayList<>();
        for (UOp in : it.inputs()) {
            ByteRange r = rangeOf(in);
            if (!out.contains(r)) out.add(r);
        }
        return List.copyOf(out);
    }

    /** The bytes item {@code item} writes (none for a view or a join). */
    public List<ByteRange> writes(int item) {
        ScheduleItem it = items.get(item);
        return it instanceof ScheduleItem.View || it instanceof ScheduleItem.Join ? List.of() : List.of(rangeOf(it.output()));
    }

    /**
     * Whether the two items must keep their order: one writes bytes the other reads or writes.
     */
    public boolean conflicts(int itemA, int itemB) {
        List<ByteRange> wa = writes(itemA), wb = writes(itemB);
        return anyOverlap(wa, wb) || anyOverlap(wa, reads(itemB)) || anyOverlap(wb, reads(itemA));
    }

    /**
     * For every item, the earlier items it {@link #conflicts conflicts} with, in order. There are
     * quadratically many pairs and a plan computes them once, mostly before the JIT has compiled
     * anything, so each item's ranges are compared as primitive triples (storage, start, end).
     */
    public int[][] predecessors() {
        int n = items.size();
        Map<Storage, Integer> storages = new HashMap<>();
        long[][] writes = new long[n][], reads = new long[n][];
        for (int i = 0; i < n; i++) {
            writes[i] = triples(writes(i), storages);
            reads[i] = triples(reads(i), storages);
        }
        int[][] out = new int[n][];
        int[] found = new int[n];
        for (int j = 0; j < n; j++) {
            int count = 0;
            for (int i = 0; i < j; i++) {
                if (overlap(writes[i], writes[j]) || overlap(writes[i], reads[j]) || overlap(writes[j], reads[i])) found[count++] = i;
            }
            out[j] = Arrays.copyOf(found, count);
        }
        return out;
    }

    /** Non-empty ranges as (storage number, start, end) triples. */
    private static long[] triples(List<ByteRange> ranges, Map<Storage, Integer> storages) {
        long[] t = new long[3 * ranges.size()];
        int k = 0;
        for (ByteRange r : ranges) {
            if (r.length() <= 0) continue; // shares no byte with anything
            t[k++] = storages.computeIfAbsent(r.storage(), s -> storages.size());
            t[k++] = r.offset();
            t[k++] = r.end();
        }
        return k == t.length ? t : Arrays.copyOf(t, k);
    }

    private static boolean overlap(long[] a, long[] b) {
        for (int x = 0; x < a.length; x += 3) {
            for (int y = 0; y < b.length; y += 3) {
                if (a[x] == b[y] && a[x + 1] < b[y + 2] && b[y + 1] < a[x + 2]) return true;
            }
        }
        return false;
    }

    private static boolean anyOverlap(List<ByteRange> a, List<ByteRange> b) {
        for (ByteRange x : a) {
            for (ByteRange y : b) if (x.overlaps(y)) return true;
        }
        return false;
    }
}

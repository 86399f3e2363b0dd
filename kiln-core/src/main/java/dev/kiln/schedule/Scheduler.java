package dev.kiln.schedule;

import dev.kiln.ir.Op;
import dev.kiln.ir.UOp;

import java.util.ArrayList;
import java.util.Collections;
import java.util.IdentityHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * Cuts a tensor-level graph into kernels. Everything fuses unless one of these rules says a node must
 * be materialised:
 *
 * <ol>
 *   <li>graph outputs;</li>
 *   <li>{@code CONTIGUOUS}, {@code COPY}, {@code ASSIGN} and {@code CUSTOM} nodes, and the sources of
 *       {@code COPY} and {@code CUSTOM} (they need buffers to read);</li>
 *   <li>a {@code REDUCE} whose result is broadcast ({@code EXPAND}) or reduced again before it reaches
 *       the kernel it would fuse into — fusing it would recompute the reduction per broadcast element;</li>
 *   <li>a {@code REDUCE} read by more than one consumer (it is computed once, not per consumer);</li>
 *   <li>the value of an {@code ASSIGN} that reads the target's own buffer at other elements (through a
 *       movement op other than a reshape, or a reduction): the kernel writes in place, so such a value is
 *       computed into its own buffer first.</li>
 * </ol>
 *
 * <p>Elementwise and movement nodes read by several consumers are recomputed in each, which is cheaper
 * than a round trip through memory. Padding needs no rule: lowering masks the whole padded subtree,
 * not only its loads, so {@code PAD} of an op with {@code f(0) != 0} fuses correctly.
 */
public final class Scheduler {
    private Scheduler() {}

    /** The schedule of {@code roots}: the steps in execution order. */
    public static Schedule schedule(List<UOp> roots) {
        List<UOp> order = toposort(roots);
        Map<UOp, List<UOp>> consumers = new IdentityHashMap<>();
        for (UOp u : order) for (UOp s : u.src()) consumers.computeIfAbsent(s, k -> new ArrayList<>()).add(u);

        Set<UOp> realised = Collections.newSetFromMap(new IdentityHashMap<>());
        realised.addAll(roots);
        for (UOp u : order) {
            switch (u.op()) {
                case BUFFER, CONTIGUOUS, ASSIGN -> realised.add(u);
                case COPY, CUSTOM -> {
                    realised.add(u);
                    realised.addAll(u.src());
                }
                default -> { }
            }
        }
        for (UOp u : order) {
            if (u.op() == Op.ASSIGN && readsTargetElsewhere(u, realised)) realised.add(u.src(1));
        }
        // consumers before producers, so each walk below sees the final decisions above it
        for (UOp u : order.reversed()) {
            if (u.op() != Op.REDUCE || realised.contains(u)) continue;
            List<UOp> users = consumers.getOrDefault(u, List.of());
            if (users.size() > 1 || broadcastOrReducedAgain(u, consumers, realised)) realised.add(u);
        }

        List<ScheduleItem> items = new ArrayList<>();
        for (UOp u : order) {
            if (!realised.contains(u) || u.op() == Op.BUFFER) continue;
            items.add(switch (u.op()) {
                case COPY -> new ScheduleItem.Copy(u, List.of(u.src(0)));
                case CUSTOM -> new ScheduleItem.Custom(u, u.src());
                default -> {
                    UOp base = reshapeBase(u, realised);
                    yield base != null ? new ScheduleItem.View(u, List.of(base)) : new ScheduleItem.Kernel(u, kernelInputs(u, realised));
                }
            });
        }
        return new Schedule(List.copyOf(roots), List.copyOf(items));
    }

    private static boolean broadcastOrReducedAgain(UOp reduce, Map<UOp, List<UOp>> consumers, Set<UOp> realised) {
        List<UOp> work = new ArrayList<>(consumers.getOrDefault(reduce, List.of()));
        Set<UOp> seen = Collections.newSetFromMap(new IdentityHashMap<>());
        while (!work.isEmpty()) {
            UOp c = work.removeLast();
            if (!seen.add(c)) continue;
            if (c.op() == Op.REDUCE) return true;
            if (c.op() == Op.EXPAND && c.shape().numel() > c.src(0).shape().numel()) return true;
            if (realised.contains(c)) continue; // the kernel ends here
            work.addAll(consumers.getOrDefault(c, List.of()));
        }
        return false;
    }

    /** Whether an ASSIGN's value reads the target buffer other than element for element. */
    private static boolean readsTargetElsewhere(UOp assign, Set<UOp> realised) {
        UOp target = assign.src(0);
        while (target.op() == Op.RESHAPE) target = target.src(0);
        List<UOp> work = new ArrayList<>(List.of(assign.src(1)));
        List<Boolean> shifted = new ArrayList<>(List.of(false));
        List<Set<UOp>> seen = List.of(Collections.newSetFromMap(new IdentityHashMap<>()), Collections.newSetFromMap(new IdentityHashMap<>()));
        while (!work.isEmpty()) {
            UOp u = work.removeLast();
            boolean moved = shifted.removeLast();
            if (u == target) {
                if (moved) return true;
                continue;
            }
            if (realised.contains(u) || !seen.get(moved ? 1 : 0).add(u)) continue;
            boolean m = moved || (u.op().isMovement() && u.op() != Op.RESHAPE) || u.op() == Op.REDUCE;
            for (UOp s : u.src()) {
                work.add(s);
                shifted.add(m);
            }
        }
        return false;
    }

    /** The realised node {@code u} merely reshapes (through RESHAPE nodes only), or null. */
    private static UOp reshapeBase(UOp u, Set<UOp> realised) {
        if (u.op() != Op.RESHAPE) return null;
        UOp s = u.src(0);
        while (!realised.contains(s) && s.op() == Op.RESHAPE) s = s.src(0);
        return realised.contains(s) ? s : null;
    }

    /** The realised nodes a kernel computing {@code root} loads, in first-use order. */
    static List<UOp> kernelInputs(UOp root, Set<UOp> realised) {
        Set<UOp> inputs = new LinkedHashSet<>();
        List<UOp> work = new ArrayList<>(root.src().reversed());
        Set<UOp> seen = Collections.newSetFromMap(new IdentityHashMap<>());
        while (!work.isEmpty()) {
            UOp s = work.removeLast();
            if (!seen.add(s)) continue;
            if (realised.contains(s)) inputs.add(s);
            else work.addAll(s.src().reversed());
        }
        return List.copyOf(inputs);
    }

    private static List<UOp> toposort(List<UOp> roots) {
        List<UOp> order = new ArrayList<>();
        Set<UOp> seen = Collections.newSetFromMap(new IdentityHashMap<>());
        for (UOp r : roots) {
            for (UOp u : r.toposort()) if (seen.add(u)) order.add(u);
        }
        return order;
    }
}

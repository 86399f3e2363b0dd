package dev.kiln.schedule;

import dev.kiln.ir.Op;
import dev.kiln.ir.ReduceArg;
import dev.kiln.ir.UOp;

import java.util.ArrayList;
import java.util.Collections;
import java.util.HashSet;
import java.util.IdentityHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * Cuts a tensor-level graph into kernels. Everything fuses unless one of these rules says a node must
 * be materialised (realised):
 *
 * <ol>
 *   <li>graph outputs;</li>
 *   <li>{@code CONTIGUOUS}, {@code COPY}, {@code ASSIGN} and {@code CUSTOM} nodes, and the sources of
 *       {@code COPY} and {@code CUSTOM} (they need buffers to read);</li>
 *   <li><b>broadcast point</b>: the source of an {@code EXPAND} that replicates values (looking down
 *       through reshapes, pads, permutes and paddings with a constant), when a {@code REDUCE} is fused into that source — otherwise the reduction
 *       would be recomputed for every copy. Realising the source rather than the reduction keeps the
 *       elementwise ops between them (a bias, an activation, a normalisation's {@code rsqrt}) in the
 *       reduction's kernel, computed once per element. A broadcast point whose reductions all end up
 *       realised by other rules is fused again: it would only save elementwise work;</li>
 *   <li><b>shared reduction</b>: a {@code REDUCE} whose value would otherwise reach more than one kernel,
 *       or reach one kernel along paths with different movement or reduce ops (it would be read at
 *       different indices, each read a recomputation). It is computed once: the node realised is the
 *       last elementwise op of the chain of elementwise ops and reshapes above it in which each node
 *       has a single consumer (or the reduction itself), so that chain also runs once;</li>
 *   <li><b>in-place hazard</b>: the value of an {@code ASSIGN} when it reads the assigned buffer at
 *       other positions than it writes (through a movement op other than a reshape, or a reduction):
 *       the kernel writes in place, so it would read elements it has already overwritten;</li>
 *   <li><b>padded reduction</b>: the source of a {@code PAD} (looking down through reshapes) when a
 *       {@code REDUCE} is fused into it — a piece of a concatenation ({@code cat} pads each piece to the
 *       whole and adds them). Fused, every piece's reduction would run under a gate in one kernel of several
 *       reductions; realised, each is a kernel of one reduction (a contraction a device can run as a GEMM),
 *       and the concatenation is a copy;</li>
 *   <li><b>contraction alone</b>: a sum of products (the reduction of a matmul or a convolution) is not
 *       fused with another reduction, in either direction: a reduction inside its operands (a pooling
 *       before a convolution) and a contraction inside another reduction (a global average after the last
 *       convolution) are realised (as in rule 4, with their chain of elementwise ops), and so is an operand
 *       that computes rather than only reads (a concatenation, a softmax before the product with V; a cast
 *       stays fused); where two contractions meet in one elementwise op (the two branches of a residual block),
 *       every branch but the first is realised with its chain. A lone contraction over views of buffers, with
 *       elementwise ops after it, is what a device runs as a packed GEMM with a fused epilogue;</li>
 *   <li><b>bounded recomputation</b>: an elementwise node without a reduction in its kernel, read by several
 *       kernels, when recomputing it in each would read more memory than realising it once (see
 *       {@code recomputationCostsMore}): a residual stream's running sum, which fused would make every layer's
 *       kernels re-read every earlier layer's output.</li>
 * </ol>
 *
 * <p>Then a step may be dropped: a <b>concatenation computed in place</b> ({@code cat} pads each piece to the
 * whole and adds them) becomes a {@link ScheduleItem.Join} when each piece is an intermediate that a kernel
 * of its own produces and nothing but the concatenation reads, and occupies one contiguous range of the
 * result (every axis before the joined one has size 1: a batch-1 concatenation of channels) that starts aligned
 * as every buffer does ({@link MemoryPlanner#ALIGNMENT}). Each piece's
 * kernel then writes into its range of the result and the copy disappears (SqueezeNet's fire modules,
 * Inception's branches).
 *
 * <p>So a reduction of a fused reduction fuses (only {@code EXPAND} replicates values; every other
 * movement op reads each element at most once), and a reduction read twice at the same index in one
 * kernel fuses (lowering computes it once). Elementwise and movement nodes read by several consumers
 * are recomputed in each, which is cheaper than a round trip through memory while they read few buffers (rule 8). Padding needs no rule for
 * correctness: lowering masks the whole padded subtree, not only its loads, so {@code PAD} of an op with
 * {@code f(0) != 0} fuses correctly (rules 6 and 7 are for speed).
 */
public final class Scheduler {
    private Scheduler() {}

    /** The schedule of {@code roots}: the steps in execution order. */
    public static Schedule schedule(List<UOp> roots) {
        List<UOp> order = toposort(roots);
        Map<UOp, List<UOp>> consumers = new IdentityHashMap<>();
        for (UOp u : order) for (UOp s : u.src()) consumers.computeIfAbsent(s, k -> new ArrayList<>()).add(u);

        Set<UOp> realised = identitySet();
        realised.addAll(roots); // rule 1
        for (UOp u : order) { // rule 2
            switch (u.op()) {
                case BUFFER, CONTIGUOUS, ASSIGN -> realised.add(u);
                case COPY, CUSTOM -> {
                    realised.add(u);
                    realised.addAll(u.src());
                }
                default -> { }
            }
        }
        // rules 3 and 4, consumers before producers: every walk up from a node sees the final cut above it
        Set<UOp> broadcastPoints = identitySet();
        for (UOp u : order.reversed()) {
            if (u.op() == Op.EXPAND && replicates(u)) {
                UOp p = u.src(0);
                p = belowViews(p, realised);
                if (!realised.contains(p) && fusesReduce(p, realised)) {
                    realised.add(p);
                    broadcastPoints.add(p);
                }
            } else if (u.op() == Op.REDUCE && !realised.contains(u) && !readOnce(u, consumers, realised)) {
                realised.add(chainTop(u, consumers, realised));
            }
        }
        // producers first, so a point above sees whether the points below it stayed
        for (UOp p : order) {
            if (!broadcastPoints.contains(p)) continue;
            realised.remove(p);
            if (fusesReduce(p, realised)) realised.add(p);
        }
        for (UOp u : order) { // rule 6: a padded reduction (one piece of a concatenation) is realised unpadded
            if (u.op() != Op.PAD || realised.contains(u)) continue;
            UOp p = u.src(0);
            while (p.op() == Op.RESHAPE && !realised.contains(p)) p = p.src(0);
            if (!realised.contains(p) && fusesReduce(p, realised)) realised.add(p);
        }
        for (UOp u : order.reversed()) { // rule 7: a contraction runs alone (consumers first, as rules 3 and 4)
            if (u.op() != Op.REDUCE) continue;
            for (UOp inner : fusedReduces(u.src(0), realised)) {
                if (isContraction(u) || isContraction(inner)) realised.add(chainTop(inner, consumers, realised));
            }
            if (!isContraction(u)) continue;
            for (UOp operand : u.src(0).src()) { // an operand that computes (a concatenation, a softmax) is realised
                UOp p = belowMovement(operand, realised);
                if (!realised.contains(p) && (p.op().isElementwise() || p.op() == Op.REDUCE) && p.op() != Op.CAST) realised.add(p);
            }
        }
        for (UOp u : order.reversed()) { // rule 7: two contractions meeting in one op (a residual block's two branches)
            if (!u.op().isElementwise() || u.src().size() < 2) continue;
            Set<UOp> seen = identitySet();
            boolean first = true;
            for (UOp src : u.src()) {
                List<UOp> found = fusedReduces(src, realised).stream().filter(Scheduler::isContraction).filter(r -> !seen.contains(r)).toList();
                if (found.isEmpty()) continue;
                seen.addAll(found);
                if (first) {
                    first = false;
                    continue;
                }
                realised.add(belowMovement(src, realised)); // this branch with its epilogue; the first stays fused with the op
            }
        }
        for (UOp u : order) { // rule 5
            if (u.op() == Op.ASSIGN && !realised.contains(u.src(1)) && readsTargetElsewhere(u, realised)) realised.add(u.src(1));
        }
        for (UOp u : order) { // rule 8, producers first: a node realised here is one input to the nodes after it
            if (u.op().isElementwise() && !realised.contains(u) && recomputationCostsMore(u, consumers, realised)) realised.add(u);
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
        return new Schedule(List.copyOf(roots), List.copyOf(inPlaceJoins(items, roots, consumers, realised)));
    }

    /** {@code items} with each concatenation that can be computed in place a {@link ScheduleItem.Join}. */
    private static List<ScheduleItem> inPlaceJoins(List<ScheduleItem> items, List<UOp> roots, Map<UOp, List<UOp>> consumers, Set<UOp> realised) {
        Set<UOp> kernelOutputs = identitySet(), graphOutputs = identitySet(), joined = identitySet();
        graphOutputs.addAll(roots);
        for (ScheduleItem it : items) if (it instanceof ScheduleItem.Kernel k && k.output().op() != Op.ASSIGN) kernelOutputs.add(k.output());
        List<ScheduleItem> out = new ArrayList<>(items.size());
        for (ScheduleItem it : items) {
            if (it instanceof ScheduleItem.Kernel k && !graphOutputs.contains(k.output())) {
                List<Long> offsets = new ArrayList<>();
                List<UOp> pieces = joinPieces(k.output(), consumers, realised, offsets);
                if (pieces != null && pieces.stream().allMatch(p -> kernelOutputs.contains(p) && !graphOutputs.contains(p) && !joined.contains(p))) {
                    joined.addAll(pieces);
                    out.add(new ScheduleItem.Join(k.output(), pieces, offsets));
                    continue;
                }
            }
            out.add(it);
        }
        return out;
    }

    /**
     * The pieces of {@code u} if it is a concatenation each of whose pieces fills one contiguous byte range of
     * it (their byte offsets into {@code offsets}), read by nothing else; else null.
     */
    private static List<UOp> joinPieces(UOp u, Map<UOp, List<UOp>> consumers, Set<UOp> realised, List<Long> offsets) {
        UOp sum = u.op() == Op.CONTIGUOUS && !realised.contains(u.src(0)) ? u.src(0) : u;
        if (sum.op() != Op.ADD) return null;
        List<UOp> pads = new ArrayList<>();
        List<UOp> todo = new ArrayList<>(List.of(sum));
        while (!todo.isEmpty()) {
            UOp x = todo.removeLast();
            boolean inner = x == sum || !realised.contains(x) && consumers.getOrDefault(x, List.of()).size() == 1;
            if (x.op() == Op.ADD && inner) todo.addAll(x.src());
            else if (x.op() == Op.PAD && !realised.contains(x) && consumers.getOrDefault(x, List.of()).size() == 1) pads.add(x);
            else return null;
        }
        int[] whole = u.shape().toArray();
        int axis = -1;
        List<long[]> ranges = new ArrayList<>(); // (first element along the axis, size along it, piece number)
        List<UOp> pieces = new ArrayList<>();
        for (UOp pad : pads) {
            int[] amounts = pad.intsArg().toArray();
            UOp piece = pad.src(0);
            if (!realised.contains(piece) || piece.op() == Op.BUFFER || piece.dtype() != u.dtype()
                    || consumers.getOrDefault(piece, List.of()).size() != 1) return null;
            for (int d = 0; d < whole.length; d++) {
                if (amounts[2 * d] == 0 && amounts[2 * d + 1] == 0) continue;
                if (axis >= 0 && axis != d || amounts[2 * d] < 0 || amounts[2 * d + 1] < 0) return null;
                axis = d;
            }
            if (axis < 0) return null;
            int size = piece.shape().toArray()[axis];
            if (size == 0) return null;
            ranges.add(new long[] {amounts[2 * axis], size, pieces.size()});
            pieces.add(piece);
        }
        for (int d = 0; d < axis; d++) if (whole[d] != 1) return null; // each piece one contiguous range
        long inner = 1;
        for (int d = axis + 1; d < whole.length; d++) inner *= whole[d];
        ranges.sort((a, b) -> Long.compare(a[0], b[0]));
        long next = 0;
        List<UOp> ordered = new ArrayList<>();
        for (long[] r : ranges) {
            if (r[0] != next) return null; // a gap or an overlap: not a concatenation
            long offset = u.dtype().byteSize(r[0] * inner);
            if (offset % MemoryPlanner.ALIGNMENT != 0) return null; // every buffer starts aligned, as devices assume
            offsets.add(offset);
            ordered.add(pieces.get((int) r[2]));
            next += r[1];
        }
        return next == whole[axis] ? ordered : null;
    }

    /**
     * A movement op that reads each element of its source at most once and computes no element more than
     * the source has: realising below it (the unpadded, untransposed value) costs no more than at it, and
     * the consumer reads the view (a convolution's padding becomes its packing's gates).
     */
    private static boolean isView(UOp u) { return u.op() == Op.RESHAPE || u.op() == Op.PAD || u.op() == Op.PERMUTE; }

    /**
     * {@code u} with the views above its value looked through: reshapes, pads and permutes, and a padding with a
     * constant other than 0 ({@code where(inside, pad(x), c)}, as a max pooling pads with -inf), whose mask and
     * constant are computed from indices alone.
     */
    private static UOp belowViews(UOp u, Set<UOp> realised) {
        while (!realised.contains(u)) {
            if (isView(u)) u = u.src(0);
            else if (u.op() == Op.WHERE && fromIndicesAlone(u.src(0), realised) && fromIndicesAlone(u.src(2), realised)) u = u.src(1);
            else break;
        }
        return u;
    }

    /** Whether {@code u}'s value (cut at realised nodes) reads no buffer and reduces nothing: a mask or a constant. */
    private static boolean fromIndicesAlone(UOp u, Set<UOp> realised) {
        for (UOp s : u.toposort()) {
            if (realised.contains(s) || s.op() == Op.BUFFER || s.op() == Op.REDUCE || s.op() == Op.COPY || s.op() == Op.CUSTOM) return false;
        }
        return true;
    }

    /** {@code u} below its unrealised movement ops: the value they move. */
    private static UOp belowMovement(UOp u, Set<UOp> realised) {
        while (u.op().isMovement() && !realised.contains(u)) u = u.src(0);
        return u;
    }

    /** A sum of products of two different operands: the reductions of matmul and convolution, not of a variance. */
    private static boolean isContraction(UOp reduce) {
        UOp product = reduce.src(0);
        return reduce.reduceArg().kind() == ReduceArg.Kind.SUM && product.op() == Op.MUL && product.src(0) != product.src(1);
    }

    /** The reductions in the kernel computing {@code u} (cut at realised nodes), {@code u} included if it is one. */
    private static List<UOp> fusedReduces(UOp u, Set<UOp> realised) { return fusedReduces(u, realised, Integer.MAX_VALUE); }

    /** {@link #fusedReduces}, the walk stopped once {@code most} are found. */
    private static List<UOp> fusedReduces(UOp u, Set<UOp> realised, int most) {
        List<UOp> out = new ArrayList<>(), work = new ArrayList<>(List.of(u));
        Set<UOp> seen = identitySet();
        while (!work.isEmpty() && out.size() < most) {
            UOp s = work.removeLast();
            if (!seen.add(s) || realised.contains(s)) continue;
            if (s.op() == Op.REDUCE) out.add(s);
            work.addAll(s.src());
        }
        return out;
    }

    private static boolean replicates(UOp expand) { return expand.shape().numel() > expand.src(0).shape().numel(); }

    /**
     * Whether the kernel computing {@code u} (cut at realised nodes; {@code u} itself unrealised) contains a reduction:
     * the walk stops at the first. Rule 3 asks it of every broadcast before the cut is known, and walking each to the
     * graph's inputs was quadratic in the network (ResNet-50: 7 % of its prepare with a warm cache).
     */
    private static boolean fusesReduce(UOp u, Set<UOp> realised) { return !fusedReduces(u, realised, 1).isEmpty(); }

    /**
     * Whether fusing {@code reduce} computes it once: its value reaches a single kernel, along paths
     * that all pass the same movement and reduce ops (so it is read at one index per output element).
     */
    private static boolean readOnce(UOp reduce, Map<UOp, List<UOp>> consumers, Set<UOp> realised) {
        // the movement and reduce ops passed on the way from the reduction to each node
        Map<UOp, List<UOp>> path = new IdentityHashMap<>();
        List<UOp> work = new ArrayList<>(List.of(reduce));
        path.put(reduce, List.of());
        UOp kernel = null;
        while (!work.isEmpty()) {
            UOp u = work.removeLast();
            for (UOp c : consumers.getOrDefault(u, List.of())) {
                if (c.op() == Op.EXPAND && replicates(c)) return false; // rule 3 cuts below every such EXPAND first; a guard
                List<UOp> p = path.get(u);
                if (c.op().isMovement() || c.op() == Op.REDUCE) {
                    p = new ArrayList<>(p);
                    p.add(c);
                }
                List<UOp> known = path.putIfAbsent(c, p);
                if (known != null) {
                    if (!known.equals(p)) return false;
                    continue;
                }
                if (realised.contains(c)) {
                    if (kernel != null && kernel != c) return false;
                    kernel = c;
                } else {
                    work.add(c);
                }
            }
        }
        return true;
    }

    /**
     * Rule 8: whether recomputing the elementwise {@code u} in each kernel that reads it reads more than realising it
     * once would. Recomputed in {@code c} kernels, its {@code k} input buffers are read {@code c·k} times; realised,
     * {@code k} reads, one write and {@code c} reads. A residual stream is the case: {@code h = x + a₀ + f₀ + a₁ + …},
     * each term a product's output, each partial sum read by a layer's norm and by the next sum; never realised, every
     * layer's kernels re-read every term before them (a 30-layer decoder's norms read 60 buffers each).
     */
    private static boolean recomputationCostsMore(UOp u, Map<UOp, List<UOp>> consumers, Set<UOp> realised) {
        if (consumers.getOrDefault(u, List.of()).size() < 2 || fusesReduce(u, realised)) return false;
        int k = kernelInputs(u, realised).size();
        if (k < 2) return false; // one input: (c - 1)·k > c + 1 never holds
        int c = kernelsReading(u, consumers, realised);
        return (long) (c - 1) * k > c + 1;
    }

    /** The kernels whose value reads {@code u}: the realised nodes below it, through unrealised nodes. */
    private static int kernelsReading(UOp u, Map<UOp, List<UOp>> consumers, Set<UOp> realised) {
        Set<UOp> kernels = identitySet(), seen = identitySet();
        List<UOp> work = new ArrayList<>(List.of(u));
        while (!work.isEmpty()) {
            for (UOp c : consumers.getOrDefault(work.removeLast(), List.of())) {
                if (!seen.add(c)) continue;
                if (realised.contains(c)) kernels.add(c);
                else work.add(c);
            }
        }
        return kernels.size();
    }

    /**
     * The node to realise for a shared {@code reduce}: the last elementwise op of the chain of
     * unrealised elementwise ops and reshapes above it in which every node has a single consumer.
     */
    private static UOp chainTop(UOp reduce, Map<UOp, List<UOp>> consumers, Set<UOp> realised) {
        UOp top = reduce;
        UOp u = reduce;
        while (true) {
            List<UOp> users = consumers.getOrDefault(u, List.of());
            UOp c = users.isEmpty() ? null : users.getFirst();
            if (c == null || users.stream().anyMatch(x -> x != c) || realised.contains(c)) return top;
            if (!c.op().isElementwise() && c.op() != Op.RESHAPE) return top;
            if (c.op().isElementwise()) top = c;
            u = c;
        }
    }

    /**
     * Whether the value of {@code assign} reads the assigned buffer at other positions than the
     * kernel writes: through a movement op other than a reshape (reshapes keep the flat index), or a
     * reduction, before a realised node ends the kernel. Reshapes are followed even when realised:
     * they are views of the same storage.
     */
    private static boolean readsTargetElsewhere(UOp assign, Set<UOp> realised) {
        UOp target = assign.src(0);
        while (target.op() == Op.RESHAPE) target = target.src(0);
        record Visit(UOp node, boolean moved) {}
        List<Visit> work = new ArrayList<>(List.of(new Visit(assign.src(1), false)));
        Set<Visit> seen = new HashSet<>();
        while (!work.isEmpty()) {
            Visit v = work.removeLast();
            if (!seen.add(v)) continue;
            UOp u = v.node();
            if (u == target) {
                if (v.moved()) return true;
                continue;
            }
            if (u.op() != Op.RESHAPE && realised.contains(u)) continue;
            boolean moved = v.moved() || (u.op().isMovement() && u.op() != Op.RESHAPE) || u.op() == Op.REDUCE;
            for (UOp s : u.src()) work.add(new Visit(s, moved));
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
        Set<UOp> seen = identitySet();
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
        Set<UOp> seen = identitySet();
        for (UOp r : roots) {
            for (UOp u : r.toposort()) if (seen.add(u)) order.add(u);
        }
        return order;
    }

    private static Set<UOp> identitySet() { return Collections.newSetFromMap(new IdentityHashMap<>()); }
}

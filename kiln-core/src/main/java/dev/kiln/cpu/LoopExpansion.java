package dev.kiln.cpu;

import dev.kiln.types.Variable;
import dev.kiln.codegen.Heuristics;
import dev.kiln.codegen.Optimizer;
import dev.kiln.codegen.Stmt;
import dev.kiln.ir.Op;
import dev.kiln.ir.Slot;
import dev.kiln.ir.UOp;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.OptionalLong;
import java.util.Set;
import java.util.function.ToLongFunction;

/**
 * Expands the loops the renderer does not write as Java loops, on the loop IR, before rendering:
 *
 * <ul>
 *   <li>An UNROLL loop becomes its body once per iteration, in order, with the loop variable replaced
 *       by the iteration's constant (the iterations of a reduction stay in order).</li>
 *   <li>A nest of UPCAST loops keeps at most one loop, which the renderer computes as vector lanes
 *       (the {@code vectorise} test decides); every other UPCAST loop of the nest is interleaved: each
 *       statement of the body once per iteration, one after another, and a loop in the body once, with
 *       the copies of its own body inside. UPCAST iterations are independent (nothing one writes is
 *       read by another), so interleaving keeps every value; it is what puts a register tile's
 *       statements inside its reduction loop (for each {@code k}: load once, update every
 *       accumulator).</li>
 * </ul>
 *
 * Registers defined inside a copied body get one fresh register per copy (the first copy keeps the
 * body's names). Loops nested in copied bodies keep their variables: copies are either in separate
 * Java loops or share one loop. A loop of one iteration becomes its body.
 *
 * <p>Expansions are bounded by the size of the code: HotSpot does not compile a method above 8000 bytes
 * of bytecode at all, and a kernel's {@code run} is one method. Its estimated size ({@link #NODE_BYTES}
 * per scalar expression node, vector code as the renderer estimates it) may grow to {@link #MAX_BYTES};
 * an expansion that does not fit leaves its loops as loops, which is correct for every kind.
 */
final class LoopExpansion {
    /** The estimated bytecode a kernel may grow to by expansions (HotSpot compiles methods up to 8000 bytes). */
    static final long MAX_BYTES = 7000;
    /** Estimated bytecode per scalar expression node (13 to 16 bytes measured on the test graphs' kernels). */
    static final long NODE_BYTES = 15;

    private final ToLongFunction<Stmt.Loop> vectorCost;
    /** The estimated bytecode the kernel may grow to ({@link #MAX_BYTES} unless a measured kernel came out too large). */
    private final long maxBytes;
    private int registers;
    /** The kernel's estimated bytecode so far: the expansions done have added their copies. */
    private long size;

    private LoopExpansion(int registers, ToLongFunction<Stmt.Loop> vectorCost, long size, long maxBytes) {
        this.maxBytes = maxBytes;
        this.registers = registers;
        this.vectorCost = vectorCost;
        this.size = size;
    }

    /**
     * {@code body} with UNROLL loops expanded and every UPCAST nest reduced to at most one UPCAST loop,
     * one the renderer can write as vector lanes, as far as the code size allows.
     *
     * @param registers  a register number above every register of the kernel (fresh ones count up from it)
     * @param vectorCost the estimated bytecode of an UPCAST loop written as vector lanes, -1 if it has no vector form
     */
    static Stmt.Block expand(Stmt.Block body, int registers, ToLongFunction<Stmt.Loop> vectorCost) {
        return expand(body, registers, vectorCost, MAX_BYTES);
    }

    /** {@link #expand(Stmt.Block, int, ToLongFunction)} within an estimated {@code maxBytes} of bytecode. */
    static Stmt.Block expand(Stmt.Block body, int registers, ToLongFunction<Stmt.Loop> vectorCost, long maxBytes) {
        return new LoopExpansion(registers, vectorCost, bytes(body), maxBytes).block(body);
    }

    /** One above the highest register number {@code body} defines, accumulates or reads. */
    static int registerCount(Stmt.Block body) {
        int[] max = {0};
        Optimizer.walk(body, s -> {
            switch (s) {
                case Stmt.Define d -> max[0] = Math.max(max[0], d.register().index() + 1);
                case Stmt.Accumulate a -> max[0] = Math.max(max[0], a.register().index() + 1);
                default -> { }
            }
            for (UOp e : Optimizer.expressions(s)) {
                for (UOp u : e.toposort()) {
                    if (u.op() == Op.DEFINE_VAR && u.arg() instanceof Slot r && r.kind() == Slot.Kind.REGISTER) max[0] = Math.max(max[0], r.index() + 1);
                }
            }
        });
        return max[0];
    }

    private Stmt.Block block(Stmt.Block b) {
        List<Stmt> out = new ArrayList<>();
        for (Stmt s : b.body()) {
            switch (s) {
                case Stmt.Loop l when l.extent() == 1 && l.limit() == null -> out.addAll(block(Optimizer.substitute(l.body(), Map.of(l.index(), UOp.index(0)))).body());
                case Stmt.Loop l when l.kind() == Stmt.LoopKind.UNROLL -> {
                    if (!grow((l.extent() - 1) * bytes(l.body()))) {
                        out.add(new Stmt.Loop(l.index(), Stmt.LoopKind.REDUCE, block(l.body())));
                    } else {
                        for (Stmt.Block copy : copies(l.body(), l.index(), (int) l.extent())) out.addAll(block(copy).body());
                    }
                }
                case Stmt.Loop l when l.kind() == Stmt.LoopKind.UPCAST -> out.addAll(upcast(l));
                case Stmt.Loop l -> out.add(l.with(l.kind(), block(l.body())));
                default -> out.add(s);
            }
        }
        return new Stmt.Block(out);
    }

    /**
     * An UPCAST nest (the loop and the UPCAST loops that are, one inside the other, its whole body)
     * keeps as vector lanes the first loop that has a vector form with the others interleaved in its
     * body and fits the code budget, trying loops whose stores are all contiguous in them first,
     * innermost first. Else every loop is interleaved, or, if that does not fit, left a plain loop.
     */
    private List<Stmt> upcast(Stmt.Loop outer) {
        List<Stmt.Loop> nest = new ArrayList<>(List.of(outer));
        while (nest.getLast().body().body().size() == 1 && nest.getLast().body().body().getFirst() instanceof Stmt.Loop l
                && l.kind() == Stmt.LoopKind.UPCAST) {
            nest.add(l);
        }
        Stmt.Block inner = nest.getLast().body();
        List<Stmt.Loop> candidates = new ArrayList<>(nest.reversed());
        candidates.sort((a, b) -> Boolean.compare(!contiguousStores(inner, a.index()), !contiguousStores(inner, b.index())));
        Stmt.Block expanded = block(inner);
        long bytes = bytes(expanded), copies = 1;
        for (Stmt.Loop l : nest) copies *= l.extent();
        int saved = registers;
        for (Stmt.Loop lanes : candidates) {
            // vector code is smaller than scalar code per node; only copies far beyond the budget are not worth measuring
            if (bytes * (copies / lanes.extent()) > 4 * maxBytes) continue;
            registers = saved;
            Stmt.Block body = expanded;
            for (Stmt.Loop l : nest) if (l != lanes) body = interleave(body, l.index(), (int) l.extent());
            Stmt.Loop vector = new Stmt.Loop(lanes.index(), Stmt.LoopKind.UPCAST, body);
            long cost = vectorCost.applyAsLong(vector);
            if (cost >= 0 && grow(cost - bytes)) return List.of(vector);
        }
        registers = saved;
        if (!grow(bytes * (copies - 1))) { // too much code: plain loops, as the loop IR says
            Stmt.Block body = expanded;
            for (Stmt.Loop l : nest.reversed()) body = new Stmt.Block(List.of(new Stmt.Loop(l.index(), Stmt.LoopKind.GLOBAL, body)));
            return body.body();
        }
        Stmt.Block body = expanded;
        for (Stmt.Loop l : nest) body = interleave(body, l.index(), (int) l.extent());
        return body.body();
    }

    /** Adds {@code bytes} to the kernel's size if they fit in {@link #maxBytes}. */
    private boolean grow(long bytes) {
        if (size + bytes > maxBytes) return false;
        size += bytes;
        return true;
    }

    /** The estimated bytecode of a block's statements as scalar code. */
    private static long bytes(Stmt.Block b) {
        long[] n = {0};
        Optimizer.walk(b, s -> {
            for (UOp e : Optimizer.expressions(s)) n[0] += e.toposort().size();
        });
        return n[0] * NODE_BYTES;
    }

    private static boolean contiguousStores(Stmt.Block body, Variable v) {
        boolean[] all = {true};
        Optimizer.walk(body, s -> {
            if (s instanceof Stmt.Store st) {
                OptionalLong stride = Heuristics.stride(st.index(), v);
                all[0] &= stride.isPresent() && stride.getAsLong() == 1;
            }
        });
        return all[0];
    }

    /** The copies of {@code body} with {@code v} = 0, 1, ..., its own registers renamed in every copy but the first. */
    private List<Stmt.Block> copies(Stmt.Block body, Variable v, int n) {
        Set<Slot> local = new LinkedHashSet<>();
        Optimizer.walk(body, s -> {
            if (s instanceof Stmt.Define d) local.add(d.register());
        });
        List<Stmt.Block> out = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            Map<Object, UOp> map = new HashMap<>();
            map.put(v, UOp.index(i));
            if (i > 0) for (Slot r : local) map.put(r, new Slot(Slot.Kind.REGISTER, registers++, r.dtype()).uop());
            out.add(Optimizer.substitute(body, map));
        }
        return out;
    }

    /** The copies of {@code body} for {@code v} = 0 .. n-1, interleaved statement by statement. */
    private Stmt.Block interleave(Stmt.Block body, Variable v, int n) {
        return merge(copies(body, v, n));
    }

    /** Copies of one block (the same statements but for constants and registers) merged: loops once, the rest in copy order. */
    private static Stmt.Block merge(List<Stmt.Block> copies) {
        List<Stmt> out = new ArrayList<>();
        Stmt.Block first = copies.getFirst();
        for (int k = 0; k < first.body().size(); k++) {
            if (first.body().get(k) instanceof Stmt.Loop l) {
                List<Stmt.Block> bodies = new ArrayList<>();
                for (Stmt.Block c : copies) bodies.add(((Stmt.Loop) c.body().get(k)).body());
                out.add(l.with(l.kind(), merge(bodies)));
            } else {
                for (Stmt.Block c : copies) out.add(c.body().get(k));
            }
        }
        return new Stmt.Block(out);
    }
}

package dev.kiln.compile;

import dev.kiln.codegen.Heuristics;
import dev.kiln.codegen.KernelProgram;
import dev.kiln.codegen.Opt;
import dev.kiln.codegen.Optimizer;
import dev.kiln.codegen.Stmt;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * BEAM search over optimisation actions for one kernel (tinygrad's BEAM=n): the beam starts as the empty
 * action list and the heuristic's; each step extends every member by one valid action, times all new
 * candidates of the step in one batch, and keeps the fastest {@code width}; it stops when a step finds
 * nothing faster than the best so far, or the deadline passes. A step takes only as many candidates as the
 * last step's cost per candidate says fit before the deadline (a compile batch cannot be interrupted). The heuristic's choice is always timed, and
 * a winner other than it is timed against it again over a few alternating rounds and kept only when faster
 * by a margin, so the result is never slower than the heuristic as measured. The timing is the caller's ({@link Cost}): this class only
 * decides what to try.
 */
final class BeamSearch {
    /** Split amounts tried for UPCAST, UNROLL and GROUP (where they divide the loop). */
    private static final int[] AMOUNTS = {2, 3, 4, 8, 16};
    /** Tile sizes tried for TILE (where they divide the loop and are smaller than it). */
    private static final int[] TILES = {8, 16, 32};
    /** At most this many new candidates per step, so one step's compile batch stays short. */
    static final int MAX_CANDIDATES_PER_STEP = 48;
    /**
     * Rounds of the final comparison of the winner with the heuristic (outside the budget: two kernels
     * already compiled), and the margin by which the winner must be faster to be chosen.
     */
    static final int CONFIRM_ROUNDS = 3;
    static final double CONFIRM_MARGIN = 0.03;

    private BeamSearch() {}

    /** Times candidate action lists (each valid for the lowered program), in order. */
    @FunctionalInterface
    interface Cost {
        /** Median nanoseconds per candidate; {@link Long#MAX_VALUE} for one that failed or was not timed. */
        long[] nanos(List<List<Opt>> candidates, long deadlineNanos);
    }

    /**
     * What a search found.
     *
     * @param opts           the fastest action list measured (the heuristic's when nothing beat it)
     * @param nanos          its median time ({@link Long#MAX_VALUE} when nothing was timed)
     * @param heuristicNanos the heuristic's median time ({@link Long#MAX_VALUE} when not timed)
     * @param timed          candidates timed
     * @param steps          steps run after the first (extensions by one action)
     */
    record Result(List<Opt> opts, long nanos, long heuristicNanos, int timed, int steps) {}

    /**
     * The fastest action list for {@code lowered} found before {@code deadlineNanos} ({@link System#nanoTime()}).
     *
     * @param heuristic the device's default actions, always a candidate
     * @param workers   the workers a THREAD candidate asks for (1: no THREAD candidates)
     */
    static Result search(KernelProgram lowered, List<Opt> heuristic, int width, int workers, long deadlineNanos, Cost cost) {
        if (width < 1) throw new IllegalArgumentException("BEAM width must be >= 1, got " + width);
        if (System.nanoTime() >= deadlineNanos) return new Result(heuristic, Long.MAX_VALUE, Long.MAX_VALUE, 0, 0);
        Set<List<Opt>> seen = new HashSet<>();
        List<List<Opt>> first = new ArrayList<>();
        for (List<Opt> o : List.of(List.copyOf(heuristic), List.<Opt>of())) if (seen.add(o)) first.add(o);
        long stepStart = System.nanoTime();
        Map<List<Opt>, Long> timed = time(first, deadlineNanos, cost);
        // what one candidate of a step costs (compiling, warming up, timing), from the last step: it decides how
        // many candidates the next step can take before the deadline (the first step's few candidates bear the
        // compiler's fixed cost, so the estimate starts high: safe, not wasteful)
        long perCandidate = (System.nanoTime() - stepStart) / first.size();
        long heuristicNanos = timed.get(List.copyOf(heuristic));
        List<Map.Entry<List<Opt>, Long>> beam = fastest(timed, width);
        // the heuristic wins ties: it is what the device would run anyway
        List<Opt> best = List.copyOf(heuristic);
        long bestNanos = heuristicNanos;
        for (var e : beam) {
            if (e.getValue() < bestNanos) {
                best = e.getKey();
                bestNanos = e.getValue();
            }
        }
        int count = timed.size();
        int steps = 0;
        while (!beam.isEmpty() && System.nanoTime() < deadlineNanos) {
            List<List<Opt>> next = new ArrayList<>();
            for (var member : beam) {
                KernelProgram p = Optimizer.apply(lowered, member.getKey());
                for (Opt a : actions(p, workers)) {
                    List<Opt> extended = new ArrayList<>(member.getKey());
                    extended.add(a);
                    List<Opt> key = List.copyOf(extended);
                    if (!seen.add(key) || !valid(p, a)) continue;
                    next.add(key);
                }
            }
            long fits = (deadlineNanos - System.nanoTime()) / Math.max(1, perCandidate);
            int take = (int) Math.min(Math.min(next.size(), MAX_CANDIDATES_PER_STEP), fits);
            if (take < 1) break;
            next = next.subList(0, take);
            stepStart = System.nanoTime();
            Map<List<Opt>, Long> step = time(next, deadlineNanos, cost);
            perCandidate = (System.nanoTime() - stepStart) / next.size();
            count += step.size();
            steps++;
            beam = fastest(step, width);
            if (beam.isEmpty() || beam.getFirst().getValue() >= bestNanos) break;
            best = beam.getFirst().getKey();
            bestNanos = beam.getFirst().getValue();
        }
        if (!best.equals(heuristic) && heuristicNanos != Long.MAX_VALUE) {
            // confirm the winner against the heuristic, alternating rounds: one noisy step (a shared machine, a
            // kernel still warming up) must not make BEAM choose something slower than the default
            long[] confirmed = confirm(List.of(List.copyOf(heuristic), best), cost);
            count += 2 * CONFIRM_ROUNDS;
            if (confirmed[1] >= confirmed[0] * (1 - CONFIRM_MARGIN)) return new Result(List.copyOf(heuristic), confirmed[0], confirmed[0], count, steps);
            return new Result(best, confirmed[1], confirmed[0], count, steps);
        }
        return new Result(best, bestNanos, heuristicNanos, count, steps);
    }

    /** The fastest of {@link #CONFIRM_ROUNDS} timings of each candidate, the rounds alternating between them. */
    private static long[] confirm(List<List<Opt>> candidates, Cost cost) {
        long[] best = new long[candidates.size()];
        Arrays.fill(best, Long.MAX_VALUE);
        for (int round = 0; round < CONFIRM_ROUNDS; round++) {
            long[] t = cost.nanos(candidates, Long.MAX_VALUE);
            for (int i = 0; i < best.length; i++) best[i] = Math.min(best[i], t[i]);
        }
        return best;
    }

    /** The actions worth trying on {@code p} (some may not apply: {@link #valid} decides). */
    static List<Opt> actions(KernelProgram p, int workers) {
        List<Opt> out = new ArrayList<>();
        List<Stmt.Loop> axes = Optimizer.axes(p);
        boolean threaded = p.opts().stream().anyMatch(o -> o instanceof Opt.Thread);
        for (int i = 0; i < axes.size(); i++) {
            Stmt.Loop l = axes.get(i);
            if (l.limit() != null) continue; // a symbolic extent: splits would not divide it
            long e = l.extent();
            switch (l.kind()) {
                case GLOBAL, THREAD -> {
                    for (int a : AMOUNTS) if (a < e && e % a == 0) out.add(new Opt.Upcast(i, a));
                    for (int a : AMOUNTS) if (2L * a <= e && e % a != 0) out.add(new Opt.UpcastRemainder(i, a));
                    for (int a : AMOUNTS) if (a < e && e % a != 0) out.add(new Opt.UpcastOverlap(i, a));
                    long[] stretch = Heuristics.gateFreeStretch(l); // split where padding gates stop, so they fold away
                    if (stretch != null && stretch[1] < e - 1) out.add(new Opt.Split(i, (int) stretch[1] + 1));
                    if (stretch != null && stretch[0] > 0) out.add(new Opt.Split(i, (int) stretch[0]));
                    for (int t : TILES) if (t < e && e % t == 0) out.add(new Opt.Tile(i, t));
                }
                case REDUCE -> {
                    for (int a : AMOUNTS) {
                        if (a <= e && e % a == 0) {
                            out.add(new Opt.Unroll(i, a));
                            out.add(new Opt.Group(i, a));
                        }
                    }
                }
                default -> { }
            }
        }
        if (!threaded && workers > 1 && !axes.isEmpty() && axes.getFirst().kind() == Stmt.LoopKind.GLOBAL) {
            out.add(new Opt.Thread(0, (int) Math.min(workers, axes.getFirst().extent())));
        }
        return out;
    }

    private static boolean valid(KernelProgram p, Opt a) {
        try {
            Optimizer.apply(p, a);
            return true;
        } catch (IllegalArgumentException | IllegalStateException e) {
            return false;
        }
    }

    private static Map<List<Opt>, Long> time(List<List<Opt>> candidates, long deadlineNanos, Cost cost) {
        long[] nanos = cost.nanos(candidates, deadlineNanos);
        Map<List<Opt>, Long> out = new LinkedHashMap<>();
        for (int i = 0; i < candidates.size(); i++) out.put(candidates.get(i), nanos[i]);
        return out;
    }

    /** The {@code width} fastest timed candidates, fastest first (failed or untimed ones left out). */
    private static List<Map.Entry<List<Opt>, Long>> fastest(Map<List<Opt>, Long> timed, int width) {
        return timed.entrySet().stream().filter(e -> e.getValue() != Long.MAX_VALUE)
                .sorted(Map.Entry.comparingByValue(Comparator.naturalOrder())).limit(width).toList();
    }
}

package dev.kiln.onnx;

import dev.kiln.LoopLimit;
import dev.kiln.runtime.ExtentOutOfRangeException;
import dev.kiln.types.Variable;

import java.util.HashMap;
import java.util.IdentityHashMap;
import java.util.Map;

/**
 * The rows a prepared {@link OnnxPlan} reserves for values whose length is known only once a run has made them and that
 * have no static bound: the scan outputs (and accumulated sequences) of a Loop whose trip count is known only when the plan
 * runs (a TorchScript {@code while}, M = INT64_MAX; or M a graph input). Such an output is laid out at a capacity, its length
 * bound to the iterations that ran by a sized host step; a run with more iterations than the capacity fails that step with
 * an {@link ExtentOutOfRangeException} on one of the variables registered here, and the plan is then built again with room
 * for them ({@link #grow}) and the run repeated. The capacities outlive each build, so a plan grows at most about
 * log2(iterations) times and keeps its size afterwards.
 *
 * <p>It also holds the branch each If takes in a build where its branches give an output of different ranks, which no one
 * plan can hold (a tensor's rank, and with it everything built on the output, is fixed when the graph is built): the build
 * assumes one branch ({@link #branch}, then_branch at first) and checks the condition when the plan runs; a run that finds
 * the other fails with a {@link WrongBranch}, and the plan is built (or taken from the builds it keeps) with that branch
 * ({@link #choose}) and the run repeated.
 */
final class PlanCapacities {
    /** Rows reserved for a loop of unknown length before any run has told more. */
    static final int FIRST_ROWS = 64;

    /** A loop's rows, by the loop's name (its node, within its graph), across builds. */
    private final Map<String, Integer> rows = new HashMap<>();
    /** The variable each loop's length is bound to in the current build, and the loop it belongs to. */
    private final Map<Variable, String> growable = new IdentityHashMap<>();

    /** The rows to lay {@code loop}'s outputs out at in this build. */
    synchronized int rows(String loop) { return rows.getOrDefault(loop, (int) Math.min(FIRST_ROWS, LoopLimit.maxIterations())); }

    /** Records that {@code extent} binds the length of {@code loop}'s outputs in this build. */
    synchronized void register(String loop, Variable extent) { growable.put(extent, loop); }

    /** Forgets the previous build's variables (called before each build). */
    synchronized void newBuild() { growable.clear(); }

    /**
     * The growth {@code failure} asks for: where it is (or is caused by) a step's count past a capacity registered here, the
     * loop and its new rows (at least the count, and at least twice the old rows, so growing stays logarithmic); else null.
     */
    synchronized Growth growthFor(Throwable failure) {
        for (Throwable t = failure; t != null; t = t.getCause()) {
            if (t instanceof ExtentOutOfRangeException e && e.extent() > e.variable().max() && growable.containsKey(e.variable())) {
                String loop = growable.get(e.variable());
                long want = Math.max(e.extent(), 2 * e.variable().max());
                int next = (int) Math.min(want, Math.min(LoopLimit.maxIterations(), Integer.MAX_VALUE - 8));
                if (next < e.extent()) return null; // past what any capacity may hold: the step's own error stands
                return new Growth(loop, e.variable().max(), e.extent(), next);
            }
        }
        return null;
    }

    /** Applies {@code g}: the next build lays its loop out at the new rows. */
    synchronized void grow(Growth g) { rows.put(g.loop(), g.rows()); }

    /** The branch each If of outputs of different ranks takes, by the If's name (true: then_branch); absent: then_branch. */
    private final Map<String, Boolean> branches = new HashMap<>();

    /** Whether this build takes {@code node}'s then_branch (an If whose branches give outputs of different ranks). */
    synchronized boolean branch(String node) { return branches.getOrDefault(node, true); }

    /** The branches the next build takes, where any differs from then_branch: a build's key among the plan's builds. */
    synchronized Map<String, Boolean> branches() { return Map.copyOf(branches); }

    /** The If whose condition, in a run, chose the branch the build did not take, where {@code failure} is (or is caused by) one; else null. */
    static WrongBranch wrongBranchIn(Throwable failure) {
        for (Throwable t = failure; t != null; t = t.getCause()) if (t instanceof WrongBranch w) return w;
        return null;
    }

    /** Applies {@code w}: the next build takes the branch the run chose. */
    synchronized void choose(WrongBranch w) {
        // then_branch is every If's first choice, kept out of the map, so a build's key is the same however it was reached
        if (w.holds()) branches.remove(w.node());
        else branches.put(w.node(), false);
    }

    /**
     * A run's condition of If {@code node} chose the branch the plan was not built with ({@code holds}: then_branch): thrown
     * by the If's check, before any step reads the built branch's inputs, and answered by {@link OnnxPlan#execute()}.
     */
    static final class WrongBranch extends RuntimeException {
        private final String node;
        private final boolean holds;

        WrongBranch(String node, boolean holds) {
            super(node + ": the condition chose " + (holds ? "then_branch" : "else_branch") + ", and the plan was built with the other", null, false, false);
            this.node = node;
            this.holds = holds;
        }

        String node() { return node; }

        boolean holds() { return holds; }
    }

    /** A loop's outputs outgrew their capacity: from {@code was} rows to {@code rows}, after a run needed {@code needed}. */
    record Growth(String loop, long was, long needed, int rows) {}
}

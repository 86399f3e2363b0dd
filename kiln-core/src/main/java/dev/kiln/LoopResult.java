package dev.kiln;

import java.util.List;

/**
 * What a {@link Tensor#loop loop} gives: how many iterations ran, the final state, and each output stacked over the
 * iterations at the loop's capacity. All of them view one result, so {@link #realize()} runs the loop once for them all
 * (realising each tensor alone would run it once per tensor).
 */
public final class LoopResult {
    private final Tensor block;
    private final Tensor iterations;
    private final List<Tensor> states, outputs;

    LoopResult(Tensor block, Tensor iterations, List<Tensor> states, List<Tensor> outputs) {
        this.block = block;
        this.iterations = iterations;
        this.states = List.copyOf(states);
        this.outputs = List.copyOf(outputs);
    }

    /** The number of iterations that ran: an i64 scalar. */
    public Tensor iterations() { return iterations; }

    /** The final state (the initial state when no iteration ran). */
    public List<Tensor> states() { return states; }

    /**
     * Each output of the step stacked on a new first axis of the loop's capacity: row {@code t} is iteration {@code t}'s
     * output for {@code t} below both the capacity and {@link #iterations()}; the rows past the iterations that ran hold
     * no defined values, and iterations past the capacity are run but not recorded.
     */
    public List<Tensor> outputs() { return outputs; }

    /** Runs the loop now, once, so that the iterations, states and outputs all read its one result. */
    public LoopResult realize() {
        block.realize();
        return this;
    }
}

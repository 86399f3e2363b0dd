package dev.kiln;

import java.util.List;
import java.util.Objects;

/**
 * One iteration of a {@link Tensor#loop loop}: from the iteration number, the carried state and the loop's constants, the
 * condition to go on, the next state and this iteration's outputs. Like a {@link ScanStep} it is called once, with stand-in
 * tensors, when the loop is built; the tensors it returns are compiled into a plan of their own that runs once per
 * iteration.
 *
 * <p>{@code Tensor.loop(step, tripCount, condition, initial, constants, capacity, sizes...)} runs iteration {@code t} (from 0) while
 * {@code t < tripCount} and the condition holds: {@code condition} before the first iteration, the step's own after each.
 * The trip count (one integer element; negative runs none) and the condition (one element) may each be null: no limit
 * but the other, and yes. In a plan the loop is one host step that reads them when it runs, so one plan serves every
 * count. Each output is stacked at {@code capacity} rows, of which the first {@link LoopResult#iterations()} (at most)
 * are written: a caller that needs them at their length reads the count and slices them. A loop that would run more than
 * {@link LoopLimit#maxIterations()} iterations fails with a {@link LoopLimitException}. {@code Tensor.loop} throws an
 * {@link IllegalArgumentException} if the trip count or condition is not one value, a shape is symbolic, the step's
 * next states do not match the state, or it reads a value supplied from outside the loop (pass it as a constant).
 *
 * <p>A step whose work depends on a length its state carries (a decoder attending over the tokens it has made so far,
 * kept in a state laid out at the most it may hold) may size its values by that length: each {@link Size} of the
 * loop binds a {@link dev.kiln.types.Variable} to an i64 scalar state before every iteration, and the step may use the
 * variable in its values' shapes ({@link Tensor#withSymbolicDim}); its condition, next states and outputs stay
 * static. An iteration whose length falls outside the variable's range fails with an
 * {@link dev.kiln.runtime.ExtentOutOfRangeException} naming the variable, before the body runs.
 */
@FunctionalInterface
public interface LoopStep {
    /**
     * @param iteration the iteration number, an i64 scalar: 0 on the first iteration, then 1, 2, ...
     * @param state     the carried state, in the shapes and dtypes of the loop's initial state
     * @param constants the loop's constants, the same on every iteration
     * @return the condition, the next state and the outputs of this iteration
     */
    Next step(Tensor iteration, List<Tensor> state, List<Tensor> constants);

    /**
     * Variable {@code variable} bound, before every iteration, to the value of state {@code state} (an i64 scalar): the
     * step may size its values by it ({@link Tensor#withSymbolicDim}).
     */
    record Size(dev.kiln.types.Variable variable, int state) {
        public Size {
            Objects.requireNonNull(variable, "loop: a size's variable");
        }
    }

    /**
     * What an iteration gives.
     *
     * @param condition whether another iteration runs (one element, read as a boolean), or null for a loop that only its
     *                  trip count ends
     * @param state     the next state: one tensor per state, of its shape and dtype
     * @param outputs   this iteration's outputs, each stacked over the iterations on a new first axis
     */
    record Next(Tensor condition, List<Tensor> state, List<Tensor> outputs) {
        public Next {
            state = List.copyOf(Objects.requireNonNull(state, "loop: the step's next state"));
            outputs = List.copyOf(Objects.requireNonNull(outputs, "loop: the step's outputs"));
        }
    }
}

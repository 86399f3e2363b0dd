package dev.kiln;

import java.util.List;
import java.util.Objects;

/**
 * One iteration of a {@link Tensor#loop loop}: from the iteration number, the carried state and the loop's constants, the
 * condition to go on, the next state and this iteration's outputs. Like a {@link ScanStep} it is called once, with stand-in
 * tensors, when the loop is built; the tensors it returns are compiled into a plan of their own that runs once per
 * iteration.
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

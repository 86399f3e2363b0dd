package dev.kiln;

import java.util.List;

/**
 * One step of a {@link Tensor#scan scan}: from the carried state and this step's slices of the scanned
 * sequences, the next state and this step's outputs. It is called once, with stand-in tensors, when the scan
 * is built; the tensors it returns are compiled into a plan of their own that runs once per step.
 *
 * <p>A scan returns the final states (after the last step; the initial ones if there are none), then each per-step
 * output stacked over the steps on a new first axis. In a plan it is one host step that runs the step's own plan once per
 * step, on the plan's device when its memory is host memory, else on CPU (said once in the log).
 *
 * <p>The step must read only its arguments, realised tensors (weights already computed) and constants: a
 * tensor that stands for a value the scan does not know (another graph's input, say) is refused when the
 * scan is built. Pass such values as constants.
 */
@FunctionalInterface
public interface ScanStep {
    /**
     * @param state     the carried state, in the shapes and dtypes of the scan's initial state
     * @param slices    this step's slice of each sequence (the sequence without its first axis)
     * @param constants the scan's constants, the same on every step
     * @return the next state (one tensor per state, same shape and dtype), then any number of per-step outputs
     */
    List<Tensor> step(List<Tensor> state, List<Tensor> slices, List<Tensor> constants);
}

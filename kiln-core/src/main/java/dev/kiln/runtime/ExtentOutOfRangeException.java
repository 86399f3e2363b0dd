package dev.kiln.runtime;

import dev.kiln.types.Variable;

/**
 * A sized host step ({@link dev.kiln.Tensor#hostSized}) returned an extent outside its variable's range: negative, or
 * more rows than the capacity its output is laid out at. The step's own code is at fault (the capacity is a bound the
 * step was built with), so this is an {@link IllegalStateException}; no output of that run is a result.
 */
public final class ExtentOutOfRangeException extends IllegalStateException {
    private final String step;
    private final Variable variable;
    private final long extent;

    public ExtentOutOfRangeException(String step, Variable variable, long extent) {
        super(step + ": its host step gave the extent " + extent + " for '" + variable.name() + "', outside [" + variable.min() + ", "
                + variable.max() + "] (" + (extent < 0 ? "a negative count" : "more rows than the capacity " + variable.max()
                + " its output is laid out at") + ")");
        this.step = step;
        this.variable = variable;
        this.extent = extent;
    }

    /** An extent outside {@code variable}'s range that {@code step} found elsewhere than in a host step's count, as {@code message} says. */
    public ExtentOutOfRangeException(String step, Variable variable, long extent, String message) {
        super(message);
        this.step = step;
        this.variable = variable;
        this.extent = extent;
    }

    /** The name of the host step (an ONNX node's, as {@code NonZero node 'nz'}). */
    public String step() { return step; }

    /** The variable the step binds. */
    public Variable variable() { return variable; }

    /** The extent it returned. */
    public long extent() { return extent; }
}

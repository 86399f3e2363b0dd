package dev.kiln.ir;

import java.lang.foreign.MemorySegment;
import java.util.List;

/**
 * A user-supplied host function placed in a graph: it reads realised inputs and writes one output.
 * Equality is identity, so two graphs share a custom node only if they share the function object.
 *
 * @param name a readable name, used in errors and profiles
 * @param shape the shape of the output
 * @param body the function: read-only input segments in source order, then the output segment
 */
public record CustomFunction(String name, dev.kiln.types.Shape shape, Body body) {
    /** The host code of a custom function. */
    @FunctionalInterface
    public interface Body {
        void apply(List<MemorySegment> inputs, MemorySegment output);
    }

    /**
     * A body that keeps state between executions. An {@code ExecutionPlan} creates one state per stateful
     * step with {@link #newState()} (so a replica of a plan gets its own) and passes it to every call; the
     * plan runs one execution at a time, so a state is never used by two calls at once.
     *
     * @param <S> the state's type
     */
    public interface Stateful<S> extends Body {
        /** A fresh state, as a new plan starts with it. */
        S newState();

        /**
         * A fresh state for a plan step placed on {@code device} (a device spec, e.g. {@code "CPU"}); a state that
         * holds resources (memory, compiled code) implements {@link AutoCloseable} and is closed with its plan.
         */
        default S newState(String device) { return newState(); }

        void apply(List<MemorySegment> inputs, MemorySegment output, S state);

        /** A call outside a plan (e.g. interpreted evaluation) has no state to keep: it gets a fresh one. */
        @Override
        default void apply(List<MemorySegment> inputs, MemorySegment output) { apply(inputs, output, newState()); }
    }

    /**
     * A body that decides, each time it runs, the extent of its output along the one symbolic axis of the function's
     * shape: it writes up to that axis's capacity (the variable's maximum, the size the output is laid out at) and
     * returns how many it wrote. A plan binds the axis's {@link dev.kiln.types.Variable} to that count for every step
     * after it ({@link #producedVariable()}), so a data-dependent size (NonZero's count, a detector's selected boxes)
     * needs no re-compile and no value from the caller.
     */
    public interface Sized extends Body {
        /**
         * Computes the output and returns its extent along the produced axis.
         *
         * @param inputs the inputs' bytes, read-only, in C order at their full (maximum) shapes
         * @param output the output's bytes, laid out at the capacity; rows past the returned extent are never read
         * @return the extent written, within the produced variable's bounds
         */
        long applySized(List<MemorySegment> inputs, MemorySegment output);

        /** Refused: a caller that does not bind the returned extent would read the capacity's undefined rows as data. */
        @Override
        default void apply(List<MemorySegment> inputs, MemorySegment output) {
            throw new UnsupportedOperationException("a sized host step decides its output's extent when it runs; run it through applySized "
                    + "and bind the extent (an ExecutionPlan or the interpreter does)");
        }
    }

    /**
     * The variable this function binds when it runs: the one symbolic axis of its {@link #shape} when its body is
     * {@link Sized}, else null.
     */
    public dev.kiln.types.Variable producedVariable() {
        if (!(body instanceof Sized)) return null;
        for (int a = 0; a < shape.rank(); a++) if (shape.variable(a) != null) return shape.variable(a);
        throw new IllegalStateException("custom function " + name + " is sized but its shape " + shape + " has no symbolic axis");
    }

    /**
     * The body of a value supplied from outside when a graph is compiled (a graph's input, a scan step's argument): it
     * has no data of its own, and compiling replaces it by a buffer, which an {@code ASSIGN} may then write in place.
     */
    public interface Input extends Body {}

    @Override
    public boolean equals(Object o) { return this == o; }

    @Override
    public int hashCode() { return System.identityHashCode(this); }
}

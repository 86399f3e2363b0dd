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
     * The body of a value supplied from outside when a graph is compiled (a graph's input, a scan step's argument): it
     * has no data of its own, and compiling replaces it by a buffer, which an {@code ASSIGN} may then write in place.
     */
    public interface Input extends Body {}

    @Override
    public boolean equals(Object o) { return this == o; }

    @Override
    public int hashCode() { return System.identityHashCode(this); }
}

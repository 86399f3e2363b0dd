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
public record CustomFunction(String name, dev.kiln.Shape shape, Body body) {
    /** The host code of a custom function. */
    @FunctionalInterface
    public interface Body {
        void apply(List<MemorySegment> inputs, MemorySegment output);
    }

    @Override
    public boolean equals(Object o) { return this == o; }

    @Override
    public int hashCode() { return System.identityHashCode(this); }
}

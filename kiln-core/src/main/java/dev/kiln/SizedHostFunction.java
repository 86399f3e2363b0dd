package dev.kiln;

import java.lang.foreign.MemorySegment;
import java.util.List;

/**
 * Host code whose output's extent along one axis depends on its input values ({@link Tensor#hostSized}): NonZero's
 * count, the boxes a non-maximum suppression keeps. It writes at most the axis's capacity and returns how many it
 * wrote; the plan binds the axis's variable to that count for every step after it, within the same run.
 */
@FunctionalInterface
public interface SizedHostFunction {
    /**
     * @param inputs the inputs' bytes, read-only, in the order given, each in C order at its full (maximum) shape; an input
     *               with a symbolic axis holds values only below its variable's value, which the step reads from an input
     *               of its own ({@link Tensor#variable})
     * @param output the output's bytes, in C order laid out at the capacity: along the sized axis, row {@code k} of
     *               a capacity of {@code c} lies at the offset of index {@code k} in a shape whose axis is {@code c}
     * @return the extent written along the sized axis, from 0 to the capacity
     */
    long apply(List<MemorySegment> inputs, MemorySegment output);
}

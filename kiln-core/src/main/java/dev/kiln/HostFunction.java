package dev.kiln;

import java.lang.foreign.MemorySegment;
import java.util.List;

/**
 * Host code that computes a tensor from realised inputs ({@link Tensor#host}): a kernel written by hand in Java, such
 * as a product with weights in a packed format no compiled kernel reads. It runs as one step of a plan, on the host.
 */
@FunctionalInterface
public interface HostFunction {
    /**
     * @param inputs the inputs' bytes, read-only, in the order given, each in C order at its full (maximum) shape
     * @param output the output's bytes, to be written in C order
     */
    void apply(List<MemorySegment> inputs, MemorySegment output);
}

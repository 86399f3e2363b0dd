package dev.kiln.runtime;

import java.util.List;

/** A copy of one buffer into another, possibly on another device. */
public record PreparedCopy(String name, int output, List<Integer> inputs, String fromDevice, String toDevice, long bytes)
        implements PreparedOp {
    public PreparedCopy {
        inputs = List.copyOf(inputs);
    }
}

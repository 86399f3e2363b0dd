package dev.kiln.runtime;

import java.util.List;

/** A buffer that is other buffers' storage seen another way (a reshape, a concatenation written in place); it moves no data when run. */
public record PreparedBufferView(String name, int output, List<Integer> inputs) implements PreparedOp {
    public PreparedBufferView {
        inputs = List.copyOf(inputs);
    }
}

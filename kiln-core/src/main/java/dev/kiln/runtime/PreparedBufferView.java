package dev.kiln.runtime;

import java.util.List;

/** A buffer that is another buffer's storage seen with another shape; it moves no data when run. */
public record PreparedBufferView(String name, int output, List<Integer> inputs) implements PreparedOp {
    public PreparedBufferView {
        inputs = List.copyOf(inputs);
    }
}

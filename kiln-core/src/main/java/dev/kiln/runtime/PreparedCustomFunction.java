package dev.kiln.runtime;

import dev.kiln.ir.CustomFunction;

import java.util.List;

/** A user-supplied host function placed in the graph ({@link dev.kiln.Tensor#custom}). */
public record PreparedCustomFunction(String name, int output, List<Integer> inputs, CustomFunction function) implements PreparedOp {
    public PreparedCustomFunction {
        inputs = List.copyOf(inputs);
    }
}

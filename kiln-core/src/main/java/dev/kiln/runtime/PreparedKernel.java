package dev.kiln.runtime;

import dev.kiln.codegen.KernelProgram;

import java.util.List;

/**
 * A compiled, fused kernel.
 *
 * @param program the loop program it was generated from
 * @param source  the device's generated source
 * @param flops   arithmetic operations per run, counted from the program
 * @param bytes   bytes read and written per run (each buffer once)
 */
public record PreparedKernel(String name, int output, List<Integer> inputs, KernelProgram program, String source, long flops, long bytes)
        implements PreparedOp {
    public PreparedKernel {
        inputs = List.copyOf(inputs);
    }

    /**
     * The optimisation actions that made this kernel's program from its lowered loops, in order, each as
     * {@code KIND(axis=a, amount=n)}: the device's heuristic's, or BEAM search's when it tuned the kernel.
     */
    public List<String> actions() { return program.opts().stream().map(dev.kiln.codegen.Opt::describe).toList(); }
}

package dev.kiln.runtime;

import dev.kiln.codegen.KernelProgram;

/**
 * A kernel compiled for a device: the program it came from, the source the device generated for it
 * (shown by {@link ExecutionPlan#kernels()}), and how to run it.
 */
public record CompiledKernel(KernelProgram program, String source, KernelRunner runner) {}

package dev.kiln.cuda;

import dev.kiln.codegen.KernelProgram;

/**
 * A kernel compiled to PTX: what a CUDA context loads ({@code module}) and launches ({@code symbol}).
 *
 * @param program the kernel's program
 * @param symbol  its entry point in the module: a hash of its source, the same in every plan and process
 * @param source  its CUDA source (without the prelude, {@link CudaRenderer#prelude()})
 * @param module  the PTX module that holds it, with the other kernels of its batch
 */
public record PtxKernel(KernelProgram program, String symbol, String source, PtxModule module) {}

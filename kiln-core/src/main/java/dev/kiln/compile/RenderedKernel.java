package dev.kiln.compile;

import dev.kiln.codegen.KernelProgram;

import java.util.Objects;
import java.util.Optional;
import java.util.function.BiFunction;

/**
 * A kernel's source as a renderer made it, with the name of its entry point (a Java class, a C or CUDA
 * function) in that source. Pipelines name entry points by a hash of the computation, so a kernel
 * structure has one source in every plan and every process.
 *
 * @param entryPoint the class or function the source declares for the kernel
 * @param source     the source, as the device's compiler takes it
 * @param rendered   the program the source renders where that is not the kernel's own program (a contraction's
 *                   optimised epilogue), kept with the source, in memory and in the program cache, so that linking
 *                   need not derive it again: with a warm disk cache, deriving ResNet-50's took a tenth of its prepare
 */
public record RenderedKernel(String entryPoint, String source, Optional<KernelProgram> rendered) {
    public RenderedKernel {
        if (!source.contains(entryPoint)) throw new IllegalArgumentException("kernel source does not declare " + entryPoint);
        Objects.requireNonNull(rendered, "rendered");
    }

    /** A source that renders the kernel's own program. */
    public RenderedKernel(String entryPoint, String source) { this(entryPoint, source, Optional.empty()); }

    /** This source, as the rendering of {@code program} rather than of the kernel's own program. */
    public RenderedKernel rendering(KernelProgram program) { return new RenderedKernel(entryPoint, source, Optional.of(program)); }

    /**
     * {@code anonymous} rendered as a function named {@code kiln_} and 24 hex digits of the SHA-256 of its
     * source under the name {@code kernel}: one rendering to name it, one to declare it under that name.
     *
     * @param render the renderer: a program and a function name to the function's source
     */
    public static RenderedKernel namedByContent(KernelProgram anonymous, BiFunction<KernelProgram, String, String> render) {
        String symbol = "kiln_" + ContentStore.sha256(render.apply(anonymous, "kernel")).substring(0, 24);
        return new RenderedKernel(symbol, render.apply(anonymous, symbol));
    }
}

package dev.kiln.compile;

import dev.kiln.codegen.KernelProgram;
import dev.kiln.codegen.Opt;

import java.util.List;

/**
 * What a device supplies to its {@link KernelPipeline}: how it chooses a kernel's optimisation actions,
 * how it renders loop IR as source, and how it compiles sources and links the result. The pipeline owns
 * the rest: lowering, applying the actions, naming, and both cache layers.
 *
 * @param <A> the artifact a binary loads as (a class, a shared object, a PTX module)
 * @param <K> the compiled kernel the device runs (or, for a compile-only target, inspects)
 */
public interface KernelBackend<A, K> {
    /**
     * Everything besides a source that decides the binary compiled from it (compiler, version, flags,
     * render format): with the source, it keys the binary layer of the cache.
     */
    CompilerIdentity identity();

    /**
     * Everything besides a kernel's structure and Kiln's code that decides its optimised program and source:
     * {@link #identity()} plus what the heuristics read of the target (e.g. the core count). It keys the
     * program layer of the cache.
     */
    default CompilerIdentity programIdentity() { return identity(); }

    /**
     * The optimisation actions for a lowered program (anonymous: named {@code kernel}), which
     * {@link dev.kiln.codegen.Optimizer#apply} accepts. Today the device's default heuristic; this is the
     * seam where a search (BEAM) chooses instead. Must be a function of the program and
     * {@link #programIdentity()}, since its result is cached under them.
     */
    List<Opt> chooseOpts(KernelProgram lowered);

    /**
     * The target's rewrite of a lowered program before any optimisation action is chosen or applied (a GPU
     * flattens its output loops into one grid-wide loop); it must keep the program's meaning and be idempotent.
     * None by default.
     */
    default KernelProgram prepare(KernelProgram lowered) { return lowered; }

    /**
     * Whether BEAM search may choose {@code lowered}'s actions instead of {@link #chooseOpts}: not for a kernel
     * the device runs otherwise than as its loops (the CPU's contractions, a GEMM). All kernels by default.
     */
    default boolean tunable(KernelProgram lowered) { return true; }

    /** The source of an optimised anonymous program, its entry point named by a hash of the computation. */
    RenderedKernel render(KernelProgram anonymous);

    /**
     * Compiles distinct sources in one compiler run, one binary per source in order (a device that builds
     * one artifact from all of them returns that artifact, or a reference to it, for each).
     */
    List<byte[]> compile(List<RenderedKernel> sources);

    /** The runnable kernel of {@code program} (named), from its source and the artifact it was compiled into. */
    K link(KernelProgram program, RenderedKernel kernel, A artifact);

    /**
     * Whether {@link #link} may run for several kernels of a batch at once, on several threads. A backend whose
     * linking binds process-wide native state (a GPU context current on one thread) keeps the default.
     */
    default boolean linksConcurrently() { return false; }
}

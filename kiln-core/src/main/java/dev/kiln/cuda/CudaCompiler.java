package dev.kiln.cuda;

import dev.kiln.codegen.CpuInfo;
import dev.kiln.codegen.Heuristics;
import dev.kiln.codegen.KernelProgram;
import dev.kiln.clang.KernelFunctions;
import dev.kiln.runtime.CompilerIdentity;
import dev.kiln.runtime.KernelCache;

import java.util.List;

/**
 * The CUDA device's front half, which needs no GPU: kernels optimised ({@link #optimize}), rendered as
 * CUDA ({@link CudaRenderer}), compiled to PTX by {@link Nvcc} in one run per batch, and cached in
 * memory and on disk ({@link KernelCache}: one entry per kernel, pointing to its batch's module,
 * {@link PtxModules}).
 */
public final class CudaCompiler {
    /** Renderer output format: bump when generated code changes meaning, so stale disk entries miss. */
    private static final String RENDER_FORMAT = "1";

    /**
     * What the default heuristic is told of the target: one worker (the grid parallelises the output
     * loop, so no THREAD split) and 16-byte vectors (UPCAST lanes give a thread independent work).
     */
    private static final CpuInfo TARGET = new CpuInfo(1, 16);

    private static final KernelCache<PtxModule> CACHE = new KernelCache<>(PtxModules::resolve);

    /** The rendered CUDA kernel per kernel structure (programs without their names). */
    private static final KernelFunctions FUNCTIONS = new KernelFunctions(CudaRenderer::render);

    private final Nvcc nvcc;
    private final CompilerIdentity identity;

    /** A compiler that runs {@code nvcc}. */
    public CudaCompiler(Nvcc nvcc) {
        this.nvcc = nvcc;
        this.identity = nvcc.identity().with("render.format", RENDER_FORMAT);
    }

    /** The nvcc this compiler runs. */
    public Nvcc nvcc() { return nvcc; }

    /** The default heuristic's actions (upcasts, unrolls, tiles) for a CUDA kernel. */
    public static KernelProgram optimize(KernelProgram program) { return Heuristics.optimize(program, TARGET); }

    /**
     * Renders {@code programs} and compiles those not cached into one PTX module (one nvcc run).
     *
     * @throws IllegalStateException if nvcc rejects the generated code (a Kiln bug; the message holds the source)
     */
    public List<PtxKernel> compile(List<KernelProgram> programs) {
        return FUNCTIONS.compile(CACHE, identity, programs, sources -> PtxModules.publish(nvcc.compilePtx(CudaRenderer.translationUnit(sources))),
                (p, f, module) -> new PtxKernel(p, f.symbol(), f.source(), module));
    }

    /** Statistics of the process-wide PTX cache (memory and disk hits, compiles). */
    public static KernelCache.Stats cacheStats() { return CACHE.stats(); }
}

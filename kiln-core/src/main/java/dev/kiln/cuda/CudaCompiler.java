package dev.kiln.cuda;

import dev.kiln.codegen.CpuInfo;
import dev.kiln.codegen.Heuristics;
import dev.kiln.codegen.KernelProgram;
import dev.kiln.codegen.ContractionMatcher;
import dev.kiln.codegen.Opt;
import dev.kiln.codegen.OutputLoopFlattening;
import dev.kiln.compile.CompilerIdentity;
import dev.kiln.compile.KernelBackend;
import dev.kiln.compile.KernelCache;
import dev.kiln.compile.KernelPipeline;
import dev.kiln.compile.RenderedKernel;
import dev.kiln.schedule.ScheduleItem;

import java.util.Collections;
import java.util.List;

/**
 * The CUDA device's front half, which needs no GPU: kernels optimised ({@link #optimize}), rendered as
 * CUDA ({@link CudaRenderer}), compiled to PTX by {@link Nvcc} in one run per batch, through the
 * {@link KernelPipeline} (binaries cached in memory and on disk: one entry per kernel source, pointing to
 * its batch's module, {@link PtxModules}).
 */
public final class CudaCompiler {
    /** Renderer output format: bump when generated code changes meaning, so stale disk entries miss. */
    private static final String RENDER_FORMAT = "4";

    /**
     * What the default heuristic is told of the target: one worker (the grid parallelises the output loop, so no
     * THREAD split) and 4-byte "vectors", so f32 kernels are not upcast: a thread's lanes would be consecutive
     * elements, and a warp's loads 16 bytes apart instead of one coalesced line (an elementwise chain over 1 GiB
     * on an H200: 1.43 ms with 16-byte lanes).
     */
    private static final CpuInfo TARGET = new CpuInfo(1, 4);

    private static final KernelCache<PtxModule> CACHE = new KernelCache<>(PtxModules::resolve);

    private final Nvcc nvcc;
    private final KernelPipeline<PtxModule, PtxKernel> pipeline;

    /** A compiler that runs {@code nvcc}. */
    public CudaCompiler(Nvcc nvcc) {
        this.nvcc = nvcc;
        this.pipeline = new KernelPipeline<>(new CudaBackend(nvcc, nvcc.identity().with("render.format", RENDER_FORMAT)), CACHE);
    }

    /** What CUDA supplies to the pipeline: the default heuristic for {@link #TARGET}, the CUDA renderer, nvcc. */
    private record CudaBackend(Nvcc nvcc, CompilerIdentity identity) implements KernelBackend<PtxModule, PtxKernel> {
        @Override
        public List<Opt> chooseOpts(KernelProgram lowered) {
            return CudaGemm.match(lowered).isPresent() ? List.of() : Heuristics.defaultOpts(lowered, TARGET);
        }

        /** A contraction stays as lowered (its GEMM is generated from it); any other kernel's output loops become one. */
        @Override
        public KernelProgram prepare(KernelProgram lowered) {
            return CudaGemm.match(lowered).isPresent() ? lowered : OutputLoopFlattening.flatten(lowered);
        }

        @Override
        public boolean tunable(KernelProgram lowered) { return CudaGemm.match(lowered).isEmpty(); }

        @Override
        public RenderedKernel render(KernelProgram anonymous) { return RenderedKernel.namedByContent(anonymous, CudaCompiler::renderKernel); }

        @Override
        public List<byte[]> compile(List<RenderedKernel> sources) {
            byte[] module = PtxModules.publish(nvcc.compilePtx(CudaRenderer.translationUnit(sources.stream().map(RenderedKernel::source).toList())));
            return Collections.nCopies(sources.size(), module);
        }

        @Override
        public PtxKernel link(KernelProgram program, RenderedKernel kernel, PtxModule module) {
            return new PtxKernel(program, kernel.entryPoint(), kernel.source(), module);
        }
    }

    /** The nvcc this compiler runs. */
    public Nvcc nvcc() { return nvcc; }

    /**
     * The default heuristic's actions (upcasts, unrolls, tiles) for a CUDA kernel, its output loops flattened first; a
     * contraction stays as it is (its GEMM and epilogue are generated from it).
     */
    public static KernelProgram optimize(KernelProgram program) {
        return CudaGemm.match(program).isPresent() ? program : Heuristics.optimize(OutputLoopFlattening.flatten(program), TARGET);
    }

    /** A contraction's epilogue as it runs after the GEMM: flattened and optimised like any kernel (anonymous). */
    static KernelProgram epilogue(ContractionMatcher.Match match) { return optimize(match.epilogue().anonymous()); }

    /**
     * The CUDA source of a kernel: the kernel itself, or for a contraction its epilogue under {@code name} and its
     * GEMM under {@code name_gemm}.
     */
    static String renderKernel(KernelProgram program, String name) {
        var match = CudaGemm.match(program);
        if (match.isEmpty()) return CudaRenderer.render(program, name);
        return CudaGemm.render(match.get().contraction(), name + "_gemm") + "\n"
                + (match.get().identity() ? "/* the epilogue below is not run: the sums are the result */\n" : "")
                + CudaRenderer.render(epilogue(match.get()), name);
    }

    /**
     * Renders {@code programs} and compiles those not cached into one PTX module (one nvcc run).
     *
     * @throws IllegalStateException if nvcc rejects the generated code (a Kiln bug; the message holds the source)
     */
    public List<PtxKernel> compile(List<KernelProgram> programs) {
        return pipeline.compilePrograms(programs);
    }

    /**
     * Lowers, optimises, renders and compiles scheduled kernels (each structure once, from the cache when met
     * before), named as given, into one PTX module for the misses.
     */
    public List<PtxKernel> compileKernels(List<ScheduleItem.Kernel> kernels, List<String> names) {
        return pipeline.compile(kernels, names);
    }

    /** Statistics of the process-wide PTX cache (memory and disk hits, compiles). */
    public static KernelCache.Stats cacheStats() { return CACHE.stats(); }
}

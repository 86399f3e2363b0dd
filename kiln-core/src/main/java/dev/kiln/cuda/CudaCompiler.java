package dev.kiln.cuda;

import dev.kiln.codegen.CpuInfo;
import dev.kiln.codegen.Heuristics;
import dev.kiln.codegen.KernelProgram;
import dev.kiln.ir.BoundedCache;
import dev.kiln.runtime.CompilerIdentity;
import dev.kiln.runtime.KernelCache;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

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

    // per kernel structure (programs without their names): the rendered kernel
    private static final BoundedCache<KernelProgram, Function> FUNCTIONS = new BoundedCache<>(4096);

    private record Function(String symbol, String source) {}

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
        List<KernelCache.Request<KernelProgram>> requests = new ArrayList<>();
        List<Function> functions = new ArrayList<>();
        for (KernelProgram p : programs) {
            Function f = functionOf(p);
            functions.add(f);
            requests.add(new KernelCache.Request<>(p.anonymous(), f.source(), identity));
        }
        Map<KernelProgram, PtxModule> modules = CACHE.getOrCompileTogether(requests,
                sources -> PtxModules.publish(nvcc.compilePtx(CudaRenderer.translationUnit(sources))));
        List<PtxKernel> out = new ArrayList<>();
        for (int i = 0; i < programs.size(); i++) {
            KernelProgram p = programs.get(i);
            Function f = functions.get(i);
            out.add(new PtxKernel(p, f.symbol(), f.source(), modules.get(p.anonymous())));
        }
        return out;
    }

    /** The kernel whose name is a hash of the computation, so it is the same in every plan and JVM. */
    private static Function functionOf(KernelProgram p) {
        return FUNCTIONS.get(p.anonymous(), anon -> {
            String symbol = "kiln_" + Nvcc.sha256(CudaRenderer.render(anon, "kernel").getBytes(StandardCharsets.UTF_8)).substring(0, 24);
            return new Function(symbol, CudaRenderer.render(anon, symbol));
        });
    }

    /** Statistics of the process-wide PTX cache (memory and disk hits, compiles). */
    public static KernelCache.Stats cacheStats() { return CACHE.stats(); }
}

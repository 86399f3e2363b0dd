package dev.kiln.clang;

import dev.kiln.runtime.DeviceSpec;
import dev.kiln.codegen.ContractionMatcher;
import dev.kiln.codegen.CpuInfo;
import dev.kiln.codegen.ReductionOrder;
import dev.kiln.cpu.ContractionKernel;
import dev.kiln.codegen.Heuristics;
import dev.kiln.codegen.KernelProgram;
import dev.kiln.codegen.Opt;
import dev.kiln.runtime.CompiledKernel;
import dev.kiln.compile.CompilerIdentity;
import dev.kiln.compile.ContentStore;
import dev.kiln.runtime.CompilingDevice;
import dev.kiln.compile.KernelBackend;
import dev.kiln.compile.KernelCache;
import dev.kiln.compile.KernelPipeline;
import dev.kiln.compile.RenderedKernel;
import dev.kiln.runtime.WorkerPool;

import java.util.Collections;
import java.util.List;
import java.util.Optional;

/**
 * The native CPU device: kernels rendered as C ({@link CRenderer}), compiled by the system C compiler
 * ({@link CCompiler}) in one shared object per plan, loaded through the foreign function API
 * ({@link NativeLibrary}), cached in memory and on disk by the {@link KernelPipeline}, and run on the
 * {@link WorkerPool}, split across workers where the heuristic marks a kernel THREAD — the CPU device's
 * pipeline with C in place of Java.
 *
 * <p>Results equal INTERP's bit for bit, except exp2, log2 and sin on f64 (and, rarely, on narrower
 * floats), where the C library and Java's {@code Math} may differ by an ulp in double.
 *
 * <p>Tensor buffers on this device are off-heap, owned by the tensor that holds them (an automatic
 * arena). Native code cannot point into the Java heap, so kernels write off-heap memory only, and
 * inputs on the heap (INTERP buffers read by a mixed-device graph) are copied off-heap for each call.
 *
 * <p>The binary layer of the cache has one entry per kernel source; a batch's kernels share one shared
 * object, which their entries name by hash ({@link SharedObjects}): stored once, loaded once per process.
 */
public final class ClangDevice implements CompilingDevice {
    /** Renderer output format: bump when generated code changes meaning, so stale disk entries miss. */
    private static final String RENDER_FORMAT = "5";
    /** The same for {@link #library}'s hand-written sources (compiled as they are, without the kernels' prelude). */
    private static final String LIBRARY_FORMAT = "1";

    private static final KernelCache<NativeLibrary> CACHE = new KernelCache<>(SharedObjects::resolve);

    private final DeviceSpec spec;
    private final CCompiler compiler;
    private final KernelPipeline<NativeLibrary, CompiledKernel> pipeline;

    ClangDevice(DeviceSpec spec, CCompiler compiler) {
        this.spec = spec;
        this.compiler = compiler;
        this.pipeline = new KernelPipeline<>(new CBackend(compiler, compiler.identity().with("render.format", RENDER_FORMAT),
                new CpuInfo(WorkerPool.size(), compiler.vectorBytes(), true, true)), CACHE);
    }

    /** What the CLANG device supplies to the pipeline: the CPU heuristic for its vectors, the C renderer, the C compiler. */
    private record CBackend(CCompiler compiler, CompilerIdentity identity, CpuInfo cpu) implements KernelBackend<NativeLibrary, CompiledKernel> {
        @Override
        public CompilerIdentity programIdentity() { return identity.with("cpu.cores", String.valueOf(cpu.cores())).with("reductions", ReductionOrder.current().name()); }

        @Override
        public List<Opt> chooseOpts(KernelProgram lowered) {
            return ContractionKernel.asGemm(lowered).isPresent() ? List.of() : Heuristics.defaultOpts(lowered, cpu);
        }

        /** A contraction runs as the packed GEMM: there are no loop actions to search. */
        @Override
        public boolean tunable(KernelProgram lowered) { return ContractionKernel.asGemm(lowered).isEmpty(); }

        /**
         * The kernel as a C function; for a contraction, its epilogue's, under a comment that says what the
         * GEMM computes (see {@link ContractionKernel}).
         */
        @Override
        public RenderedKernel render(KernelProgram anonymous) {
            Optional<ContractionMatcher.Match> match = ContractionKernel.asGemm(anonymous);
            if (match.isEmpty()) return RenderedKernel.namedByContent(anonymous, CRenderer::render);
            String header = "/* " + ContractionKernel.describe(match.get()) + " */\n";
            KernelProgram epilogue = ContractionKernel.optimisedEpilogue(match.get(), cpu);
            return RenderedKernel.namedByContent(epilogue, (p, name) -> header + CRenderer.render(p, name)).rendering(epilogue);
        }

        @Override
        public List<byte[]> compile(List<RenderedKernel> sources) {
            byte[] library = SharedObjects.publish(compiler.compileShared(CRenderer.translationUnit(sources.stream().map(RenderedKernel::source).toList())));
            return Collections.nCopies(sources.size(), library);
        }

        @Override
        public CompiledKernel link(KernelProgram program, RenderedKernel kernel, NativeLibrary library) {
            Optional<ContractionMatcher.Match> match = ContractionKernel.asGemm(program);
            if (match.isPresent()) {
                // the epilogue the source renders, as render kept it (derived again only for a source made without it)
                KernelProgram epilogue = kernel.rendered().orElseGet(() -> ContractionKernel.optimisedEpilogue(match.get(), cpu))
                        .withName(program.name() + "_epilogue");
                CKernel e = new CKernel(epilogue, kernel.entryPoint(), kernel.source(), library.address(kernel.entryPoint()));
                return new CompiledKernel(program, kernel.source(), new ContractionKernel(program, match.get(), epilogue, e));
            }
            CKernel k = new CKernel(program, kernel.entryPoint(), kernel.source(), library.address(kernel.entryPoint()));
            return new CompiledKernel(program, k.source(), k);
        }
    }

    @Override
    public DeviceSpec spec() { return spec; }

    /** The C compiler this device uses. */
    public CCompiler compiler() { return compiler; }

    /** The CLANG pipeline: the default CPU heuristic for this CPU's vectors, the C renderer, this C compiler. */
    @Override
    public KernelPipeline<?, CompiledKernel> pipeline() { return pipeline; }

    /**
     * Hand-written C compiled by this device's compiler (see {@link CLibrary}): from the kernel cache, in memory or on
     * disk, when this compiler on this CPU compiled the same source before.
     *
     * @throws IllegalStateException if the source does not compile (the message holds the compiler's output)
     */
    public CLibrary library(String source) {
        CompilerIdentity id = compiler.identity().with("library.format", LIBRARY_FORMAT);
        return new CLibrary(CACHE.getOrCompile("library:" + ContentStore.sha256(source), source, id,
                s -> SharedObjects.publish(compiler.compileShared(s))));
    }

    /** Statistics of the process-wide kernel cache (memory and disk hits, compiles). */
    public static KernelCache.Stats cacheStats() { return CACHE.stats(); }

    @Override
    public String toString() { return spec.toString(); }
}

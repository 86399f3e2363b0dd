package dev.kiln.cpu;

import dev.kiln.codegen.ContractionMatcher;
import dev.kiln.codegen.CpuInfo;
import dev.kiln.codegen.ReductionOrder;
import dev.kiln.codegen.Heuristics;
import dev.kiln.codegen.KernelProgram;
import dev.kiln.codegen.Opt;
import dev.kiln.runtime.CompiledKernel;
import dev.kiln.compile.CompilerIdentity;
import dev.kiln.compile.ContentStore;
import dev.kiln.runtime.CompilingDevice;
import dev.kiln.runtime.DeviceSpec;
import dev.kiln.compile.KernelBackend;
import dev.kiln.compile.KernelCache;
import dev.kiln.compile.KernelPipeline;
import dev.kiln.compile.RenderedKernel;
import dev.kiln.runtime.Transfers;
import dev.kiln.runtime.WorkerPool;
import jdk.incubator.vector.FloatVector;

import java.lang.invoke.MethodHandle;
import java.util.List;
import java.util.Optional;

/**
 * The default device: kernels rendered as Java ({@link JavaRenderer}), compiled in process in one batch
 * per plan ({@link JavaKernelCompiler}), loaded as hidden classes, and run on the {@link WorkerPool}, split
 * across workers where the heuristic marks a kernel THREAD. Kernels go through the {@link KernelPipeline}
 * (programs per kernel structure, classes per source, in memory and on disk), so a kernel met before is
 * neither lowered, optimised nor rendered again.
 *
 * <p>Tensor buffers on this device are off-heap, owned by the tensor that holds them (an automatic
 * arena: freed when the tensor is unreachable). Plans own their own memory and free it on close.
 */
public final class CpuDevice implements CompilingDevice {
    /** Renderer output format: bump when generated code changes meaning, so stale disk entries miss. */
    private static final String RENDER_FORMAT = "8";

    /** A kernel class as the cache keeps it: its bytes (what goes to disk) and its loaded entry point. */
    private record Loaded(byte[] classBytes, MethodHandle run) {}

    private static final CpuInfo CPU = new CpuInfo(WorkerPool.size(), FloatVector.SPECIES_PREFERRED.vectorByteSize(), true, true);
    private static final CompilerIdentity IDENTITY = CompilerIdentity.of("kiln-java",
            "java.version", Runtime.version().toString(),
            "os.arch", System.getProperty("os.arch"),
            "vector.bytes", String.valueOf(CPU.vectorBytes()),
            "render.format", RENDER_FORMAT);

    /** What the CPU device supplies to the pipeline: the CPU heuristic, the Java renderer and javac. */
    private static final class JavaBackend implements KernelBackend<Loaded, CompiledKernel> {
        @Override
        public CompilerIdentity identity() { return IDENTITY; }

        @Override
        public CompilerIdentity programIdentity() { return IDENTITY.with("cpu.cores", String.valueOf(CPU.cores())).with("reductions", ReductionOrder.current().name()); }

        /** A contraction keeps its loops as lowered: it runs as a GEMM, and only its epilogue is optimised. */
        @Override
        public List<Opt> chooseOpts(KernelProgram lowered) {
            return ContractionKernel.asGemm(lowered).isPresent() ? List.of() : Heuristics.defaultOpts(lowered, CPU);
        }

        /** Not a contraction: its GEMM ignores the actions, and its epilogue keeps the heuristic's. */
        @Override
        public boolean tunable(KernelProgram lowered) { return ContractionKernel.asGemm(lowered).isEmpty(); }

        /**
         * Source whose class name is a hash of the computation, so it is the same in every plan and JVM. For a
         * contraction, the source of its epilogue, headed by what the GEMM computes.
         */
        @Override
        public RenderedKernel render(KernelProgram anonymous) {
            Optional<ContractionMatcher.Match> match = ContractionKernel.asGemm(anonymous);
            if (match.isEmpty()) return renderJava(anonymous, "");
            KernelProgram epilogue = ContractionKernel.optimisedEpilogue(match.get(), CPU);
            return renderJava(epilogue, "// " + ContractionKernel.describe(match.get()) + "\n").rendering(epilogue);
        }

        private static RenderedKernel renderJava(KernelProgram anonymous, String header) {
            // the class name appears only in its declaration: rendering once and renaming saves a second rendering
            String draft = header + HugeMethodGuard.render(anonymous, "Kernel", CPU.vectorBytes());
            String declaration = "\nfinal class Kernel {\n";
            int at = draft.indexOf(declaration);
            if (at < 0) throw new IllegalStateException("rendered kernel source declares no class Kernel:\n" + draft);
            String name = "K" + ContentStore.sha256(draft).substring(0, 20);
            return new RenderedKernel(name, draft.substring(0, at) + "\nfinal class " + name + " {\n"
                    + draft.substring(at + declaration.length()));
        }

        @Override
        public List<byte[]> compile(List<RenderedKernel> sources) {
            List<JavaKernelCompiler.Source> batch = sources.stream().map(k -> new JavaKernelCompiler.Source(k.entryPoint(), k.source())).toList();
            return JavaKernelCompiler.compile(batch).classes().stream().map(JavaKernelCompiler.Compiled::classBytes).toList();
        }

        /** Linking defines nothing: it wraps a loaded class, and derives a contraction's GEMM plan and epilogue (pure). */
        @Override
        public boolean linksConcurrently() { return true; }

        @Override
        public CompiledKernel link(KernelProgram program, RenderedKernel kernel, Loaded loaded) {
            Optional<ContractionMatcher.Match> match = ContractionKernel.asGemm(program);
            if (match.isPresent()) {
                // the epilogue the source renders, as render kept it (derived again only for a source made without it)
                KernelProgram epilogue = kernel.rendered().orElseGet(() -> ContractionKernel.optimisedEpilogue(match.get(), CPU))
                        .withName(program.name() + "_epilogue");
                CpuKernel e = new CpuKernel(epilogue.name(), kernel.source(), loaded.classBytes(), loaded.run(), epilogue.outerExtent());
                return new CompiledKernel(program, kernel.source(), new ContractionKernel(program, match.get(), epilogue, e::run));
            }
            CpuKernel k = new CpuKernel(program.name(), kernel.source(), loaded.classBytes(), loaded.run(), program.outerExtent());
            return new CompiledKernel(program, k.source(), k::run);
        }
    }

    private static final KernelPipeline<Loaded, CompiledKernel> PIPELINE = new KernelPipeline<>(new JavaBackend(),
            new KernelCache<>(KernelCache.Loader.concurrent(bytes -> new Loaded(bytes, JavaKernelCompiler.define(bytes)))));

    private final DeviceSpec spec;

    CpuDevice(DeviceSpec spec) {
        this.spec = spec;
        Transfers.linkHostMemoryInBackground(); // ready by the time the first graph built on this device is prepared
    }

    @Override
    public DeviceSpec spec() { return spec; }

    /** The pipeline every CPU device compiles through (one per process: the heuristic reads this machine). */
    @Override
    public KernelPipeline<?, CompiledKernel> pipeline() { return PIPELINE; }

    /** Statistics of the process-wide kernel cache (memory and disk hits, compiles). */
    public static KernelCache.Stats cacheStats() { return PIPELINE.binaryStats(); }

    /**
     * Statistics of the process-wide program cache: per kernel structure, the optimised program and its
     * source (memory and disk hits; "compiles" counts structures lowered, optimised and rendered).
     */
    public static KernelCache.Stats programCacheStats() { return PIPELINE.programStats(); }

    @Override
    public String toString() { return spec.toString(); }
}

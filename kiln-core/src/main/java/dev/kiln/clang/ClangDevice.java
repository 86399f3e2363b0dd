package dev.kiln.clang;

import dev.kiln.types.DType;
import dev.kiln.runtime.DeviceSpec;
import dev.kiln.types.Variable;
import dev.kiln.codegen.CpuInfo;
import dev.kiln.codegen.Heuristics;
import dev.kiln.codegen.KernelProgram;
import dev.kiln.ir.UOp;
import dev.kiln.runtime.Buffer;
import dev.kiln.runtime.CompiledKernel;
import dev.kiln.runtime.CompilerIdentity;
import dev.kiln.runtime.Device;
import dev.kiln.runtime.KernelCache;
import dev.kiln.runtime.PlanBuilder;
import dev.kiln.runtime.WorkerPool;

import java.util.List;
import java.util.Map;

/**
 * The native CPU device: kernels rendered as C ({@link CRenderer}), compiled by the system C compiler
 * ({@link CCompiler}) in one shared object per plan, loaded through the foreign function API
 * ({@link NativeLibrary}), cached in memory and on disk ({@link KernelCache}), and run on the
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
 * <p>The kernel cache has one entry per kernel; a batch's kernels share one shared object, which their
 * entries name by hash ({@link SharedObjects}): stored once, loaded once per process.
 */
public final class ClangDevice implements Device {
    /** Renderer output format: bump when generated code changes meaning, so stale disk entries miss. */
    private static final String RENDER_FORMAT = "1";

    private static final KernelCache<NativeLibrary> CACHE = new KernelCache<>(SharedObjects::resolve);

    /** The rendered C function per kernel structure (programs without their names). */
    private static final KernelFunctions FUNCTIONS = new KernelFunctions(CRenderer::render);

    private final DeviceSpec spec;
    private final CCompiler compiler;
    private final CompilerIdentity identity;
    private final CpuInfo cpu;

    ClangDevice(DeviceSpec spec, CCompiler compiler) {
        this.spec = spec;
        this.compiler = compiler;
        this.identity = compiler.identity().with("render.format", RENDER_FORMAT);
        this.cpu = new CpuInfo(WorkerPool.size(), compiler.vectorBytes());
    }

    @Override
    public DeviceSpec spec() { return spec; }

    /** The C compiler this device uses. */
    public CCompiler compiler() { return compiler; }

    @Override
    public Buffer allocate(DType dtype, long count) { return Buffer.allocateOffHeap(spec.toString(), dtype, count); }

    @Override
    public Buffer realize(UOp root, Map<Variable, Long> bindings) { return PlanBuilder.realize(this, root, bindings); }

    /** The default CPU heuristic's actions (threads, tiles, upcasts, grouped reductions) for this CPU's vectors. */
    @Override
    public KernelProgram optimize(KernelProgram program) {
        return Heuristics.optimize(program, cpu);
    }

    @Override
    public List<CompiledKernel> compile(List<KernelProgram> programs) {
        return FUNCTIONS.compile(CACHE, identity, programs, sources -> SharedObjects.publish(compiler.compileShared(CRenderer.translationUnit(sources))),
                (p, f, library) -> {
                    CKernel k = new CKernel(p, f.symbol(), f.source(), library.function(f.symbol()));
                    return new CompiledKernel(p, k.source(), k::run);
                });
    }

    /** Statistics of the process-wide kernel cache (memory and disk hits, compiles). */
    public static KernelCache.Stats cacheStats() { return CACHE.stats(); }

    @Override
    public String toString() { return spec.toString(); }
}

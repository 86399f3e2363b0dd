package dev.kiln.cpu;

import dev.kiln.types.DType;
import dev.kiln.runtime.DeviceSpec;
import dev.kiln.types.Variable;
import dev.kiln.codegen.CpuInfo;
import dev.kiln.codegen.Heuristics;
import dev.kiln.codegen.KernelProgram;
import dev.kiln.codegen.LoweringCache;
import dev.kiln.ir.BoundedCache;
import dev.kiln.ir.UOp;
import dev.kiln.runtime.Buffer;
import dev.kiln.runtime.CompiledKernel;
import dev.kiln.runtime.CompilerIdentity;
import dev.kiln.runtime.Device;
import dev.kiln.runtime.KernelCache;
import dev.kiln.runtime.PlanBuilder;
import dev.kiln.runtime.WorkerPool;
import dev.kiln.schedule.ScheduleItem;
import jdk.incubator.vector.FloatVector;

import java.lang.invoke.MethodHandle;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;

/**
 * The default device: kernels rendered as Java ({@link JavaRenderer}), compiled in process in one batch
 * per plan ({@link JavaKernelCompiler}), loaded as hidden classes, cached in memory and on disk
 * ({@link KernelCache}), and run on the {@link WorkerPool}, split across workers where the heuristic
 * marks a kernel THREAD. The programs and sources of kernel structures are cached too
 * ({@link ProgramCache}), so a kernel met before is neither lowered, optimised nor rendered again.
 *
 * <p>Tensor buffers on this device are off-heap, owned by the tensor that holds them (an automatic
 * arena: freed when the tensor is unreachable). Plans own their own memory and free it on close.
 */
public final class CpuDevice implements Device {
    /** Renderer output format: bump when generated code changes meaning, so stale disk entries miss. */
    private static final String RENDER_FORMAT = "2";

    /** A kernel class as the cache keeps it: its bytes (what goes to disk) and its loaded entry point. */
    private record Loaded(byte[] classBytes, MethodHandle run) {}

    private static final KernelCache<Loaded> CACHE = new KernelCache<>(bytes -> new Loaded(bytes, JavaKernelCompiler.define(bytes)));
    private static final CpuInfo CPU = new CpuInfo(WorkerPool.size(), FloatVector.SPECIES_PREFERRED.vectorByteSize());
    private static final CompilerIdentity IDENTITY = CompilerIdentity.of("kiln-java",
            "java.version", Runtime.version().toString(),
            "os.arch", System.getProperty("os.arch"),
            "vector.bytes", String.valueOf(CPU.vectorBytes()),
            "render.format", RENDER_FORMAT);

    // per kernel structure (programs without their names): the heuristic's choice and the rendered source
    private static final BoundedCache<KernelProgram, String> SOURCES = new BoundedCache<>(4096);

    /** Created on first use: fingerprinting Kiln's classes costs tens of milliseconds cold, which a process without kernels should not pay. */
    private static final class Programs {
        static final ProgramCache CACHE = ProgramCache.create(IDENTITY.with("cpu.cores", String.valueOf(CPU.cores())));
    }

    private final DeviceSpec spec;

    CpuDevice(DeviceSpec spec) { this.spec = spec; }

    @Override
    public DeviceSpec spec() { return spec; }

    @Override
    public Buffer allocate(DType dtype, long count) { return Buffer.allocateOffHeap(spec.toString(), dtype, count); }

    @Override
    public Buffer realize(UOp root, Map<Variable, Long> bindings) { return PlanBuilder.realize(this, root, bindings); }

    /** The default heuristic's actions (threads, tiles, unrolls, grouped reductions). */
    @Override
    public KernelProgram optimize(KernelProgram program) {
        return Heuristics.optimize(program, CPU);
    }

    /**
     * Lowers, optimises and renders only kernel structures met neither earlier in this process nor, with
     * the disk cache on, by an earlier process running the same Kiln build on this configuration
     * ({@link ProgramCache}); the others' programs and sources come from the cache. Then compiles as
     * {@link #compile}.
     */
    @Override
    public List<CompiledKernel> compileKernels(List<ScheduleItem.Kernel> kernels, List<String> names) {
        return compileKernels(kernels, names, Programs.CACHE);
    }

    /** {@link #compileKernels(List, List)} with the program cache given (tests use their own). */
    List<CompiledKernel> compileKernels(List<ScheduleItem.Kernel> kernels, List<String> names, ProgramCache programs) {
        List<ProgramCache.Entry> entries = programs.get(kernels, kernel -> {
            KernelProgram p = optimize(LoweringCache.lower(kernel, "kernel"));
            return new ProgramCache.Entry(p, sourceOf(p));
        });
        List<KernelProgram> named = new ArrayList<>();
        List<String> sources = new ArrayList<>();
        for (int i = 0; i < kernels.size(); i++) {
            named.add(entries.get(i).program().withName(names.get(i)));
            sources.add(entries.get(i).source());
        }
        return compile(named, sources);
    }

    @Override
    public List<CompiledKernel> compile(List<KernelProgram> programs) {
        return compile(programs, programs.stream().map(CpuDevice::sourceOf).toList());
    }

    private static List<CompiledKernel> compile(List<KernelProgram> programs, List<String> sources) {
        // keyed by source: it decides the class, and kernels of one structure share one source string,
        // whose hash is computed once (a program's hash walks all its statements, every time)
        List<KernelCache.Request<String>> requests = new ArrayList<>();
        for (String source : sources) requests.add(new KernelCache.Request<>(source, source, IDENTITY));
        Map<String, Loaded> loaded = CACHE.getOrCompileAll(requests, misses -> {
            List<JavaKernelCompiler.Source> batch = new ArrayList<>();
            for (var m : misses) batch.add(new JavaKernelCompiler.Source(classNameIn(m.source()), m.source()));
            return JavaKernelCompiler.compile(batch).classes().stream().map(JavaKernelCompiler.Compiled::classBytes).toList();
        });
        List<CompiledKernel> out = new ArrayList<>();
        for (int i = 0; i < programs.size(); i++) {
            KernelProgram p = programs.get(i);
            Loaded l = loaded.get(sources.get(i));
            CpuKernel k = new CpuKernel(p.name(), sources.get(i), l.classBytes(), l.run(), p.outerExtent());
            out.add(new CompiledKernel(p, k.source(), k::run));
        }
        return out;
    }

    /** Source whose class name is a hash of the computation, so it is the same in every plan and JVM. */
    private static String sourceOf(KernelProgram p) {
        return SOURCES.get(p.anonymous(), anon -> {
            // the class name appears only in its declaration: rendering once and renaming saves a second rendering
            String draft = JavaRenderer.render(anon, "Kernel", CPU.vectorBytes());
            String declaration = "\nfinal class Kernel {\n";
            int at = draft.indexOf(declaration);
            if (at < 0) throw new IllegalStateException("rendered kernel source declares no class Kernel:\n" + draft);
            return draft.substring(0, at) + "\nfinal class K" + sha256(draft).substring(0, 20) + " {\n"
                    + draft.substring(at + declaration.length());
        });
    }

    private static String classNameIn(String source) {
        int i = source.indexOf("final class ") + "final class ".length();
        int j = i;
        while (Character.isJavaIdentifierPart(source.charAt(j))) j++;
        return source.substring(i, j);
    }

    private static String sha256(String s) {
        try {
            return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(s.getBytes(StandardCharsets.UTF_8)));
        } catch (NoSuchAlgorithmException e) {
            throw new AssertionError("SHA-256 is required of every JVM", e);
        }
    }

    /** Statistics of the process-wide kernel cache (memory and disk hits, compiles). */
    public static KernelCache.Stats cacheStats() { return CACHE.stats(); }

    /**
     * Statistics of the process-wide program cache: per kernel structure, the optimised program and its
     * source (memory and disk hits; "compiles" counts structures lowered, optimised and rendered).
     */
    public static KernelCache.Stats programCacheStats() { return Programs.CACHE.stats(); }

    @Override
    public String toString() { return spec.toString(); }
}

package dev.kiln.compile;

import dev.kiln.codegen.KernelLowering;
import dev.kiln.codegen.KernelProgram;
import dev.kiln.codegen.Optimizer;
import dev.kiln.schedule.ScheduleItem;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * The one way a compiling device turns kernels into runnable code: lower, optimise, render, compile. The
 * device supplies what differs ({@link KernelBackend}: its choice of optimisation actions, its renderer,
 * its compiler); the pipeline owns the order of the steps and the cache, in two layers, each in memory for
 * the process and on disk across processes ({@link KernelCache}):
 *
 * <ol>
 *   <li><b>programs</b> ({@link ProgramCache}): kernel structure → optimised program and source, so a
 *       structure met before, in this process or an earlier one, is neither lowered, optimised nor
 *       rendered again;</li>
 *   <li><b>binaries</b>: source and compiler identity → binary, loaded as the device's artifact; the
 *       misses of a batch go to the compiler in one run.</li>
 * </ol>
 *
 * @param <A> the artifact a binary loads as
 * @param <K> the compiled kernel
 */
public final class KernelPipeline<A, K> {
    private final KernelBackend<A, K> backend;
    private final KernelCache<A> binaries;
    private volatile ProgramCache programs;

    /**
     * A pipeline through {@code backend}, its binaries kept in {@code binaries} (whose loader turns the
     * backend's binaries into artifacts). The program layer is created on first use: fingerprinting Kiln's
     * classes costs tens of milliseconds cold, which a process without kernels should not pay.
     */
    public KernelPipeline(KernelBackend<A, K> backend, KernelCache<A> binaries) {
        this(backend, binaries, null);
    }

    private KernelPipeline(KernelBackend<A, K> backend, KernelCache<A> binaries, ProgramCache programs) {
        this.backend = Objects.requireNonNull(backend, "backend");
        this.binaries = Objects.requireNonNull(binaries, "binaries");
        this.programs = programs;
    }

    /** This pipeline with another program layer (tests give each case its own folder). */
    KernelPipeline<A, K> withPrograms(ProgramCache programs) { return new KernelPipeline<>(backend, binaries, programs); }

    private ProgramCache programs() {
        ProgramCache p = programs;
        if (p == null) {
            synchronized (this) {
                p = programs;
                if (p == null) programs = p = ProgramCache.create(backend.programIdentity());
            }
        }
        return p;
    }

    /**
     * Compiles scheduled kernels as one batch, the result in the same order, each named as given. Only
     * structures found in neither cache layer are lowered, optimised and rendered; only sources without a
     * binary are compiled. The programs and sources are the same either way.
     */
    public List<K> compile(List<ScheduleItem.Kernel> kernels, List<String> names) {
        if (kernels.size() != names.size()) throw new IllegalArgumentException(kernels.size() + " kernels but " + names.size() + " names");
        // Distinct structures can lower to one program (the 12-block transformer of CompileBench: 14 structures,
        // 10 programs): misses of one batch share its optimisation and rendering. Without this, its cold
        // prepare() took 8% more main-thread time (-Xint: 1290 ms against 1195); with it, the same as the
        // process-wide memos of lowered, optimised and rendered programs it replaces.
        Map<KernelProgram, ProgramCache.Entry> byLowered = new HashMap<>();
        List<ProgramCache.Entry> entries = programs().get(kernels, kernel -> byLowered.computeIfAbsent(
                KernelLowering.lower(kernel.output(), kernel.inputs(), "kernel"), lowered -> {
                    KernelProgram p = optimize(lowered);
                    return new ProgramCache.Entry(p, backend.render(p));
                }));
        List<KernelProgram> named = new ArrayList<>();
        List<RenderedKernel> sources = new ArrayList<>();
        for (int i = 0; i < kernels.size(); i++) {
            named.add(entries.get(i).program().withName(names.get(i)));
            sources.add(entries.get(i).kernel());
        }
        return link(named, sources);
    }

    /**
     * Compiles programs already lowered and optimised, as one batch, the result in the same order: they are
     * rendered, and only sources without a binary are compiled. (The program layer is keyed by kernel
     * structure, which a program no longer shows, so it is not consulted.)
     */
    public List<K> compilePrograms(List<KernelProgram> programs) {
        return link(programs, programs.stream().map(p -> backend.render(p.anonymous())).toList());
    }

    /** {@code lowered} with the actions the backend chooses for it applied, keeping its name. */
    public KernelProgram optimize(KernelProgram lowered) {
        KernelProgram anonymous = lowered.anonymous();
        return Optimizer.apply(anonymous, backend.chooseOpts(anonymous)).withName(lowered.name());
    }

    private List<K> link(List<KernelProgram> programs, List<RenderedKernel> sources) {
        // keyed by source: it decides the binary, and kernels of one structure share one source string
        List<KernelCache.Request<String>> requests = new ArrayList<>();
        Map<String, RenderedKernel> bySource = new HashMap<>();
        for (RenderedKernel k : sources) {
            requests.add(new KernelCache.Request<>(k.source(), k.source(), backend.identity()));
            bySource.putIfAbsent(k.source(), k);
        }
        Map<String, A> artifacts = binaries.getOrCompileAll(requests,
                misses -> backend.compile(misses.stream().map(m -> bySource.get(m.source())).toList()));
        List<K> out = new ArrayList<>();
        for (int i = 0; i < programs.size(); i++) {
            out.add(backend.link(programs.get(i), sources.get(i), artifacts.get(sources.get(i).source())));
        }
        return out;
    }

    /** Statistics of the binary layer (memory and disk hits, compiles). */
    public KernelCache.Stats binaryStats() { return binaries.stats(); }

    /**
     * Statistics of the program layer (memory and disk hits; "compiles" counts structures lowered, optimised
     * and rendered).
     */
    public KernelCache.Stats programStats() { return programs().stats(); }
}

package dev.kiln.compile;

import dev.kiln.codegen.KernelLowering;
import dev.kiln.codegen.KernelProgram;
import dev.kiln.codegen.Opt;
import dev.kiln.codegen.Optimizer;
import dev.kiln.schedule.ScheduleItem;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Function;
import java.util.stream.IntStream;

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
 * <p><b>BEAM.</b> When the caller asks for it ({@link #compile(List, List, Beam)}: the runtime does when
 * BEAM is on), a kernel the backend calls {@linkplain KernelBackend#tunable
 * tunable} is optimised by {@link BeamSearch} instead of the heuristic alone: candidates are compiled here in
 * one batch per step and timed by the caller's {@link KernelTimer}. Its programs live in a program layer of
 * their own, keyed by {@code programIdentity().with("beam", width)}, so BEAM and default programs never mix
 * and a later process reuses a search's result without searching.
 *
 * @param <A> the artifact a binary loads as
 * @param <K> the compiled kernel
 */
public final class KernelPipeline<A, K> {
    /**
     * A request to tune kernels by BEAM search.
     *
     * @param width     the beam width (at least 1)
     * @param perKernel the time one kernel's search may take: no step starts after it, and a step takes only
     *                  the candidates that the last step's cost per candidate says fit; the final comparison of
     *                  a winner with the heuristic (two kernels, a few rounds) comes on top
     * @param perBatch  the time all searches of one {@link #compile} call may take together
     * @param timer     how candidates are timed
     * @param <K>       the compiled kernel
     */
    public record Beam<K>(int width, Duration perKernel, Duration perBatch, KernelTimer<K> timer) {
        public Beam {
            if (width < 1) throw new IllegalArgumentException("BEAM width must be >= 1, got " + width);
            Objects.requireNonNull(perKernel, "perKernel");
            Objects.requireNonNull(perBatch, "perBatch");
            Objects.requireNonNull(timer, "timer");
        }
    }

    private final KernelBackend<A, K> backend;
    private final KernelCache<A> binaries;
    private final Function<CompilerIdentity, ProgramCache> programFactory;
    private volatile ProgramCache programs;
    private final Map<Integer, ProgramCache> beamPrograms = new ConcurrentHashMap<>();
    private final AtomicLong beamSearches = new AtomicLong();
    private static final System.Logger LOGGER = System.getLogger(KernelPipeline.class.getName());

    /**
     * A pipeline through {@code backend}, its binaries kept in {@code binaries} (whose loader turns the
     * backend's binaries into artifacts). The program layer is created on first use: fingerprinting Kiln's
     * classes costs tens of milliseconds cold, which a process without kernels should not pay.
     */
    public KernelPipeline(KernelBackend<A, K> backend, KernelCache<A> binaries) {
        this(backend, binaries, null, ProgramCache::create);
    }

    private KernelPipeline(KernelBackend<A, K> backend, KernelCache<A> binaries, ProgramCache programs,
                           Function<CompilerIdentity, ProgramCache> programFactory) {
        this.backend = Objects.requireNonNull(backend, "backend");
        this.binaries = Objects.requireNonNull(binaries, "binaries");
        this.programs = programs;
        this.programFactory = programFactory;
    }

    /** This pipeline with another program layer (tests give each case its own folder). */
    KernelPipeline<A, K> withPrograms(ProgramCache programs) { return new KernelPipeline<>(backend, binaries, programs, programFactory); }

    /**
     * This pipeline with program layers made by {@code factory} from their identity (the default one and
     * BEAM's): tests give each case its own folder, and a second pipeline over it stands for a new process.
     */
    KernelPipeline<A, K> withProgramFactory(Function<CompilerIdentity, ProgramCache> factory) {
        return new KernelPipeline<>(backend, binaries, null, factory);
    }

    private ProgramCache programs() {
        ProgramCache p = programs;
        if (p == null) {
            synchronized (this) {
                p = programs;
                if (p == null) programs = p = programFactory.apply(backend.programIdentity());
            }
        }
        return p;
    }

    /** The program layer of BEAM results of {@code width}: an identity of its own, so they never mix with the default's. */
    private ProgramCache beamPrograms(int width) {
        return beamPrograms.computeIfAbsent(width, w -> programFactory.apply(backend.programIdentity().with("beam", String.valueOf(w))));
    }

    /**
     * Compiles scheduled kernels as one batch, the result in the same order, each named as given. Only
     * structures found in neither cache layer are lowered, optimised and rendered; only sources without a
     * binary are compiled. The programs and sources are the same either way.
     */
    public List<K> compile(List<ScheduleItem.Kernel> kernels, List<String> names) { return compile(kernels, names, null); }

    /**
     * {@link #compile(List, List)}, with kernels tuned by BEAM search per {@code beam} (null: not tuned).
     * Searches of this batch share its per-batch budget.
     */
    public List<K> compile(List<ScheduleItem.Kernel> kernels, List<String> names, Beam<K> beam) {
        if (kernels.size() != names.size()) throw new IllegalArgumentException(kernels.size() + " kernels but " + names.size() + " names");
        // Distinct structures can lower to one program (the 12-block transformer of CompileBench: 14 structures,
        // 10 programs): misses of one batch share its optimisation and rendering. Without this, its cold
        // prepare() took 8% more main-thread time (-Xint: 1290 ms against 1195); with it, the same as the
        // process-wide memos of lowered, optimised and rendered programs it replaces.
        Function<ScheduleItem.Kernel, ProgramCache.Entry> byDefault = builder(this::optimizePrepared); // the builder prepares
        List<ProgramCache.Entry> entries;
        if (beam == null) {
            entries = programs().get(kernels, byDefault);
        } else {
            // one kernel at a time: a kernel BEAM does not search (not tunable, or no time left) takes the default
            // layer's program, so that neither a default program nor an unsearched one is cached as a BEAM result
            long batchDeadline = deadline(System.nanoTime(), beam.perBatch().toNanos());
            ProgramCache layer = beamPrograms(beam.width());
            Function<ScheduleItem.Kernel, ProgramCache.Entry> byBeam = builder(lowered -> tune(lowered, beam, batchDeadline));
            entries = new ArrayList<>();
            for (ScheduleItem.Kernel kernel : kernels) {
                try {
                    entries.add(layer.get(List.of(kernel), byBeam).getFirst());
                } catch (NotSearched e) {
                    entries.add(programs().get(List.of(kernel), byDefault).getFirst());
                }
            }
        }
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

    /**
     * How a program-layer miss is built: lowered, optimised by {@code optimizer}, rendered; a structure once per call.
     * Thread-safe: the program layer builds its misses side by side.
     */
    private Function<ScheduleItem.Kernel, ProgramCache.Entry> builder(Function<KernelProgram, KernelProgram> optimizer) {
        Map<KernelProgram, ProgramCache.Entry> byLowered = new ConcurrentHashMap<>();
        return kernel -> byLowered.computeIfAbsent(KernelLowering.lower(kernel.output(), kernel.inputs(), "kernel"), lowered -> {
            KernelProgram p = optimizer.apply(backend.prepare(lowered));
            return new ProgramCache.Entry(p, backend.render(p));
        });
    }

    /** Thrown by a BEAM build for a kernel it does not search: nothing is cached under BEAM's identity for it. */
    private static final class NotSearched extends RuntimeException {
        NotSearched() { super("not searched", null, false, false); }
    }

    /** {@code lowered} with the actions the backend chooses for it applied, keeping its name. */
    public KernelProgram optimize(KernelProgram lowered) {
        return optimizePrepared(backend.prepare(lowered.anonymous())).withName(lowered.name());
    }

    /** A program the backend has prepared already, with the actions it chooses applied. */
    private KernelProgram optimizePrepared(KernelProgram prepared) {
        return Optimizer.apply(prepared, backend.chooseOpts(prepared));
    }

    /**
     * {@code lowered} optimised by BEAM search within the per-kernel budget and {@code batchDeadline}.
     *
     * @throws NotSearched if the backend or the timer rules the kernel out, or no candidate was timed in time
     */
    private KernelProgram tune(KernelProgram lowered, Beam<K> beam, long batchDeadline) {
        KernelTimer<K> timer = beam.timer();
        KernelProgram anonymous = lowered.anonymous();
        if (!backend.tunable(anonymous) || !timer.canTime(anonymous)) throw new NotSearched();
        long start = System.nanoTime();
        long deadline = Math.min(batchDeadline, deadline(start, beam.perKernel().toNanos()));
        if (start >= deadline) throw new NotSearched();
        List<Opt> heuristic = backend.chooseOpts(anonymous);
        beamSearches.incrementAndGet();
        BeamSearch.Result r = BeamSearch.search(anonymous, heuristic, beam.width(), Runtime.getRuntime().availableProcessors(), deadline,
                (candidates, until) -> time(anonymous, candidates, timer, until));
        if (r.timed() == 0) throw new NotSearched();
        LOGGER.log(System.Logger.Level.DEBUG, () -> "BEAM " + lowered.name() + ": " + r.timed() + " candidates in "
                + (System.nanoTime() - start) / 1_000_000 + " ms, heuristic " + micros(r.heuristicNanos()) + " us " + heuristic
                + ", chosen " + micros(r.nanos()) + " us " + r.opts());
        return Optimizer.apply(anonymous, r.opts()).withName(lowered.name());
    }

    private static String micros(long nanos) { return nanos == Long.MAX_VALUE ? "-" : String.valueOf(nanos / 1000.0); }

    private static long deadline(long start, long budget) { return budget > Long.MAX_VALUE - start ? Long.MAX_VALUE : start + budget; }

    /**
     * The candidates' times: each applied, rendered, the distinct sources compiled in one batch and timed
     * by {@code timer}. A candidate that fails to render, or a batch that fails to compile, is not timed.
     */
    long[] time(KernelProgram anonymous, List<List<Opt>> candidates, KernelTimer<K> timer, long deadline) {
        long[] out = new long[candidates.size()];
        Arrays.fill(out, Long.MAX_VALUE);
        List<KernelProgram> programs = new ArrayList<>();
        List<RenderedKernel> sources = new ArrayList<>();
        Map<String, Integer> bySource = new HashMap<>();
        int[] slot = new int[candidates.size()];
        for (int i = 0; i < candidates.size(); i++) {
            slot[i] = -1;
            try {
                KernelProgram p = Optimizer.apply(anonymous, candidates.get(i));
                RenderedKernel r = backend.render(p);
                // two action lists can give one source: compile and time it once
                Integer at = bySource.get(r.source());
                if (at == null) {
                    bySource.put(r.source(), at = programs.size());
                    programs.add(p);
                    sources.add(r);
                }
                slot[i] = at;
            } catch (RuntimeException e) {
                List<Opt> failed = candidates.get(i);
                LOGGER.log(System.Logger.Level.DEBUG, () -> "BEAM candidate " + failed + " failed: " + e.getMessage());
            }
        }
        long[] nanos = new long[programs.size()];
        timeBatch(anonymous, programs, sources, 0, programs.size(), timer, deadline, nanos);
        for (int i = 0; i < out.length; i++) if (slot[i] >= 0) out[i] = nanos[slot[i]];
        return out;
    }

    /**
     * Times {@code programs[from, to)} into {@code nanos}, compiled as one batch. A batch the compiler rejects
     * (one candidate can fail it all, e.g. a method too large for Java) is split in halves, so the failure costs
     * a few more compiler runs rather than the step; a single candidate that fails is not timed.
     */
    private void timeBatch(KernelProgram anonymous, List<KernelProgram> programs, List<RenderedKernel> sources, int from, int to,
                           KernelTimer<K> timer, long deadline, long[] nanos) {
        try {
            long[] t = timer.time(anonymous, link(programs.subList(from, to), sources.subList(from, to)), deadline);
            System.arraycopy(t, 0, nanos, from, to - from);
        } catch (RuntimeException e) {
            LOGGER.log(System.Logger.Level.DEBUG, () -> "BEAM batch of " + (to - from) + " candidates failed: " + e.getMessage());
            if (to - from == 1 || System.nanoTime() >= deadline) {
                Arrays.fill(nanos, from, to, Long.MAX_VALUE);
                return;
            }
            int mid = (from + to) >>> 1;
            timeBatch(anonymous, programs, sources, from, mid, timer, deadline, nanos);
            timeBatch(anonymous, programs, sources, mid, to, timer, deadline, nanos);
        }
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
        Function<Integer, K> linkOne = i -> backend.link(programs.get(i), sources.get(i), artifacts.get(sources.get(i).source()));
        // side by side where the backend allows: a contraction's link derives its GEMM plan and optimised epilogue,
        // which with a warm disk cache was a quarter of ResNet-50's prepare, one kernel after another
        List<Integer> indices = IntStream.range(0, programs.size()).boxed().toList();
        return backend.linksConcurrently() ? Concurrently.map(indices, linkOne) : indices.stream().map(linkOne).toList();
    }

    /** Statistics of the binary layer (memory and disk hits, compiles). */
    public KernelCache.Stats binaryStats() { return binaries.stats(); }

    /**
     * Statistics of the program layer (memory and disk hits; "compiles" counts structures lowered, optimised
     * and rendered).
     */
    public KernelCache.Stats programStats() { return programs().stats(); }

    /**
     * BEAM searches started by this pipeline (kernels found in a BEAM program layer are not searched again;
     * kernels BEAM leaves alone, or finds no time for, are not counted).
     */
    public long beamSearches() { return beamSearches.get(); }
}

package dev.kiln.cpu;

import dev.kiln.codegen.Contraction;
import dev.kiln.codegen.ContractionMatcher;
import dev.kiln.codegen.CpuInfo;
import dev.kiln.codegen.Heuristics;
import dev.kiln.codegen.KernelProgram;
import dev.kiln.codegen.Optimizer;
import dev.kiln.codegen.OutputLoopMerging;
import dev.kiln.codegen.ReductionOrder;
import dev.kiln.codegen.StoreEpilogue;
import dev.kiln.ir.BoundedCache;
import dev.kiln.runtime.KernelRunner;
import dev.kiln.runtime.WorkerPool;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.Optional;

/**
 * A kernel a host device runs as a packed GEMM ({@link GemmKernel}) or, for few rows and a short window (depthwise
 * convolutions), as a {@link StencilKernel}, followed by its generated epilogue (bias, activation, residual: the
 * kernel's store, reading the sums back in place), compiled by the device like any kernel (Java on CPU, C on
 * CLANG), unless the GEMM's tiles or the stencil applied it as they stored the sums. The plan calls it for its whole range; it splits the work across the {@link WorkerPool} itself.
 *
 * <p>When the output overlaps an input (an in-place update such as {@code x += x·W}), the sums and the
 * epilogue go to a scratch buffer first, so no input is overwritten before everything has read it.
 */
public final class ContractionKernel implements KernelRunner {
    private final KernelProgram program;
    /** One of the two is set, as the match's kind says. */
    private final GemmKernel gemm;
    private final StencilKernel stencil;
    private final KernelProgram epilogue;
    private final KernelRunner epilogueKernel;
    private final boolean identity;
    private final long outputBytes;

    /**
     * @param program        the kernel as the plan knows it (its loops unoptimised)
     * @param epilogue       the match's epilogue, optimised
     * @param epilogueKernel {@code epilogue} compiled
     */
    public ContractionKernel(KernelProgram program, ContractionMatcher.Match match, KernelProgram epilogue, KernelRunner epilogueKernel) {
        this.program = program;
        // dot products run in the GEMM, which computes them so for few rows contiguous along K (GemmDots)
        boolean asGemm = match.kind() != ContractionMatcher.Kind.STENCIL;
        this.gemm = asGemm ? GemmKernel.of(match.contraction(), fusable(match).orElse(null)) : null;
        this.stencil = asGemm ? null : new StencilKernel(match.contraction(), fusable(match).orElse(null));
        this.epilogue = epilogue;
        this.epilogueKernel = epilogueKernel;
        this.identity = match.identity();
        this.outputBytes = program.sizes().getFirst() * 4;
    }

    /**
     * The match's epilogue as parts the GEMM's tiles apply as they store ({@link TileEpilogue}), when it has one and is
     * not the identity. {@code -Dkiln.gemm.fuseEpilogue=false} runs every epilogue as its own kernel (to compare).
     */
    static Optional<StoreEpilogue> fusable(ContractionMatcher.Match match) {
        if (match.identity() || "false".equals(System.getProperty("kiln.gemm.fuseEpilogue"))) return Optional.empty();
        return match.storeEpilogue();
    }

    /**
     * {@code program} as a contraction for the packed GEMM, if it is one and the process's
     * {@link ReductionOrder} lets reductions reorder (the one test both host devices apply). A program the heuristic
     * or BEAM has optimised is not one: a contraction keeps its loops as lowered, so the device asks the same question
     * of the same loops when it chooses actions and when it links (a split output loop can read as strided views the
     * lowered merged loop did not, and the plan would split the GEMM's range across threads).
     */
    public static Optional<ContractionMatcher.Match> asGemm(KernelProgram program) {
        if (!program.opts().isEmpty()) return Optional.empty();
        // by structure: a device asks it of each kernel to choose actions, to render and to link, a network repeats its
        // layers, and reading a contraction back simplifies every index (ResNet-50's link: 7 % of a warm prepare)
        return MATCHES.get(program.anonymous(), ContractionMatcher::matchReorderable);
    }

    /** {@link #asGemm} by anonymous program (the match's parts are named by structure, never by the kernel's name). */
    private static final BoundedCache<KernelProgram, Optional<ContractionMatcher.Match>> MATCHES = new BoundedCache<>(1024);

    /**
     * The match's epilogue as the default heuristic optimises it for {@code cpu} (anonymous): what a device
     * renders and compiles for a contraction.
     */
    public static KernelProgram optimisedEpilogue(ContractionMatcher.Match match, CpuInfo cpu) {
        // a device asks once to render and once to link, and a network repeats its layers: ResNet-50's prepare spent
        // 18 % of its time here with a warm kernel cache
        return EPILOGUES.get(new EpilogueKey(match.epilogue().anonymous(), cpu), k -> {
            // merged output loops: a conv's 56 x 56 pixels are one run of 3136, which vectorises (56 lanes do not)
            KernelProgram e = OutputLoopMerging.merge(k.epilogue());
            return Optimizer.apply(e, Heuristics.defaultOpts(e, k.cpu()));
        });
    }

    private record EpilogueKey(KernelProgram epilogue, CpuInfo cpu) {}

    /** Optimised epilogues by structure: a few hundred small programs per network. */
    private static final BoundedCache<EpilogueKey, KernelProgram> EPILOGUES = new BoundedCache<>(4096);

    /** A line for the head of the epilogue's source, so {@code kernels()} shows what runs. */
    public static String describe(ContractionMatcher.Match match) {
        Contraction c = match.contraction();
        boolean gemm = match.kind() != ContractionMatcher.Kind.STENCIL;
        String how = switch (match.kind()) {
            case GEMM -> "packed GEMM";
            case DOTS -> "dot products";
            case STENCIL -> "stencil";
        };
        return how + " (batch " + c.extent(Contraction.Role.BATCH) + ", M " + c.extent(Contraction.Role.M) + ", N "
                + c.extent(Contraction.Role.N) + ", K " + c.extent(Contraction.Role.K) + "), then "
                + (match.identity() ? "the sums as they are (the code below is not run)"
                : gemm && fusable(match).map(StoreEpilogue::constantBounds).orElse(false) ? "the epilogue below, applied by the tiles as they store (the code below runs only for an empty K)"
                : gemm && fusable(match).isPresent() ? "the epilogue below, applied by the tiles as they store with the bounds read when the run begins (the code below runs for an empty K, or an upper bound of 0 or NaN)"
                : fusable(match).isPresent() ? "the epilogue below, applied as the rows store where the stencil reads padded planes, else in place"
                : "the epilogue below, in place");
    }

    @Override
    public boolean usesAllWorkers() { return true; }

    @Override
    public void run(MemorySegment[] buffers, long[] vars, long start, long end) {
        run(buffers, vars, start, end, overlapsAnInput(buffers), epilogueKernel, null, null);
    }

    /**
     * This kernel for a plan step's fixed buffers: whether the output overlaps an input is decided once, and the
     * epilogue is bound to the same buffers (when it runs on them, that is when nothing overlaps).
     */
    @Override
    public KernelRunner bind(MemorySegment[] buffers) { return bind(buffers, new boolean[buffers.length]); }

    /**
     * {@link #bind(MemorySegment[])}, with the operands among the constants packed now, once, for every later call
     * ({@link GemmKernel#prepack}): a convolution's weights, or the W of x W, are not packed again on each run.
     */
    @Override
    public KernelRunner bind(MemorySegment[] buffers, boolean[] immutable) {
        boolean overlaps = overlapsAnInput(buffers);
        KernelRunner boundEpilogue = overlaps ? epilogueKernel : epilogueKernel.bind(buffers);
        GemmKernel.Prepacked prepacked = gemm == null ? null : gemm.prepack(buffers, immutable[gemm.aParam()], immutable[gemm.bParam()]);
        float[] weights = stencil == null ? null : stencil.packWeights(buffers, immutable[stencil.aParam()]);
        return new KernelRunner() {
            @Override
            public void run(MemorySegment[] b, long[] vars, long start, long end) {
                if (b == buffers) ContractionKernel.this.run(b, vars, start, end, overlaps, boundEpilogue, prepacked, weights);
                else ContractionKernel.this.run(b, vars, start, end);
            }

            @Override
            public boolean usesAllWorkers() { return true; }
        };
    }

    private void run(MemorySegment[] buffers, long[] vars, long start, long end, boolean overlaps, KernelRunner epilogueOnBuffers,
                     GemmKernel.Prepacked prepacked, float[] stencilWeights) {
        long whole = program.activeExtent(vars);
        if (start != 0 || end != whole) {
            throw new UnsupportedOperationException("kernel " + program.name() + " runs as one GEMM: it takes its whole range [0, " + whole
                    + "), not [" + start + ", " + end + ")");
        }
        if (!overlaps) {
            compute(buffers, vars, epilogueOnBuffers, prepacked, stencilWeights);
            return;
        }
        try (Arena scratch = Arena.ofConfined()) {
            MemorySegment[] separate = buffers.clone();
            separate[0] = scratch.allocate(Math.max(4, outputBytes), 64);
            compute(separate, vars, epilogueKernel, prepacked, stencilWeights);
            buffers[0].asSlice(0, outputBytes).copyFrom(separate[0].asSlice(0, outputBytes));
        }
    }

    private void compute(MemorySegment[] buffers, long[] vars, KernelRunner epilogueRunner, GemmKernel.Prepacked prepacked, float[] stencilWeights) {
        boolean applied = gemm != null ? gemm.run(buffers, vars, prepacked) : stencil.run(buffers, vars, stencilWeights);
        if (!identity && !applied) KernelRunner.runAll(epilogueRunner, epilogue, buffers, vars);
    }

    private boolean overlapsAnInput(MemorySegment[] buffers) {
        MemorySegment out = buffers[0].asSlice(0, Math.min(buffers[0].byteSize(), outputBytes));
        for (int i = 1; i < buffers.length; i++) if (out.asOverlappingSlice(buffers[i]).isPresent()) return true;
        return false;
    }
}

package dev.kiln.runtime;

import dev.kiln.codegen.KernelProgram;
import dev.kiln.compile.KernelTimer;
import dev.kiln.ir.Slot;
import dev.kiln.types.DType;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.Arrays;
import java.util.List;
import java.util.SplittableRandom;

/**
 * The {@link KernelTimer} of the host devices (CPU, CLANG): variants of one kernel run on the same off-heap
 * buffers, inputs random, each as a plan would run it (split across the {@link WorkerPool} when THREAD),
 * timed by {@link Benchmark} with a short warm-up and a few repetitions.
 */
public final class KernelTiming implements KernelTimer<CompiledKernel> {
    /** The timer for host devices. */
    public static final KernelTiming HOST = new KernelTiming(new Benchmark.Config(0, 5, 100_000_000L), 20_000_000L);

    private final Benchmark.Config config;
    private final long warmupNanos;

    /** Timing per {@code config} after at least 3 warm-up runs and {@code warmupNanos} of them. */
    KernelTiming(Benchmark.Config config, long warmupNanos) {
        this.config = config;
        this.warmupNanos = warmupNanos;
    }

    /**
     * Only kernels without variables whose inputs are f32 or f64: random floats are safe inputs to any
     * arithmetic, whereas random integers could be out-of-bounds indices or zero divisors, which would crash
     * a native kernel.
     */
    @Override
    public boolean canTime(KernelProgram lowered) {
        if (!lowered.variables().isEmpty()) return false;
        List<Slot> params = lowered.params();
        for (int i = 1; i < params.size(); i++) {
            DType t = params.get(i).dtype();
            if (t != DType.F32 && t != DType.F64) return false;
        }
        return true;
    }

    @Override
    public long[] time(KernelProgram lowered, List<CompiledKernel> kernels, long deadlineNanos) {
        long[] out = new long[kernels.size()];
        Arrays.fill(out, Long.MAX_VALUE);
        // shared: a THREAD variant runs on the worker pool's threads
        try (Arena arena = Arena.ofShared()) {
            MemorySegment[] buffers = buffers(lowered, arena);
            long[] vars = new long[0];
            for (int i = 0; i < kernels.size() && System.nanoTime() < deadlineNanos; i++) {
                CompiledKernel k = kernels.get(i);
                try {
                    KernelRunner r = k.runner().bind(buffers);
                    long extent = k.program().activeExtent(vars);
                    int workers = k.program().threaded() ? (int) Math.min(extent, WorkerPool.size()) : 1;
                    Runnable run = workers <= 1 ? () -> r.run(buffers, vars, 0, extent)
                            : () -> WorkerPool.forRanges(extent, workers, (s, e) -> r.run(buffers, vars, s, e));
                    warmUp(run);
                    out[i] = Benchmark.run(run, config).medianNanos();
                } catch (RuntimeException e) {
                    out[i] = Long.MAX_VALUE; // a variant that fails is not a candidate
                }
            }
        }
        return out;
    }

    /**
     * Runs {@code run} at least 3 times and for at least the warm-up time (at most 1000 runs): a Java kernel is
     * interpreted until the JIT has compiled it, and timing that would measure the JIT, not the kernel.
     */
    private void warmUp(Runnable run) {
        long start = System.nanoTime();
        for (int n = 0; n < 1000 && (n < 3 || System.nanoTime() - start < warmupNanos); n++) run.run();
    }

    /** One buffer per parameter, of its size; inputs filled with random values in [-1, 1), the output zeroed. */
    private static MemorySegment[] buffers(KernelProgram p, Arena arena) {
        SplittableRandom random = new SplittableRandom(42);
        MemorySegment[] out = new MemorySegment[p.params().size()];
        for (int i = 0; i < out.length; i++) {
            DType t = p.params().get(i).dtype();
            long n = p.sizes().get(i);
            out[i] = arena.allocate(Math.max(1, t.byteSize(n)), 64);
            if (i == 0) continue;
            if (t == DType.F32) for (long j = 0; j < n; j++) out[i].setAtIndex(ValueLayout.JAVA_FLOAT, j, (float) (random.nextDouble() * 2 - 1));
            else if (t == DType.F64) for (long j = 0; j < n; j++) out[i].setAtIndex(ValueLayout.JAVA_DOUBLE, j, random.nextDouble() * 2 - 1);
        }
        return out;
    }
}

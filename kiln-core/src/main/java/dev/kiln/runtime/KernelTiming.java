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
    public static final KernelTiming HOST = new KernelTiming(new Benchmark.Config(0, 5, 100_000_000L), 250_000_000L);

    /** Warm-up runs per variant after which the JIT has compiled even a kernel of microseconds. */
    private static final int WARMUP_RUNS = 2000;

    private final Benchmark.Config config;
    private final long warmupNanos;

    /** Timing per {@code config} after a warm-up of at most {@code warmupNanos} for all variants together. */
    KernelTiming(Benchmark.Config config, long warmupNanos) {
        this.config = config;
        this.warmupNanos = warmupNanos;
    }

    /**
     * Only kernels without variables whose inputs are f32 or f64: random floats are safe inputs to any
     * arithmetic, whereas random integers could be out-of-bounds indices or zero divisors, which would crash
     * a native kernel; and no index checks (an index computed from random floats would fail its check).
     */
    @Override
    public boolean canTime(KernelProgram lowered) {
        if (!lowered.variables().isEmpty()) return false;
        if (!lowered.indexChecks().isEmpty()) return false;
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
            Runnable[] runs = new Runnable[kernels.size()];
            for (int i = 0; i < runs.length; i++) runs[i] = runnable(kernels.get(i), buffers);
            warmUp(runs, deadlineNanos);
            for (int i = 0; i < runs.length && System.nanoTime() < deadlineNanos; i++) {
                if (runs[i] == null) continue;
                try {
                    out[i] = Benchmark.run(runs[i], config).medianNanos();
                } catch (RuntimeException e) {
                    out[i] = Long.MAX_VALUE; // a variant that fails is not a candidate
                }
            }
        }
        return out;
    }

    /** One run of {@code k} on {@code buffers} as a plan runs it, or null if it cannot be bound. */
    private static Runnable runnable(CompiledKernel k, MemorySegment[] buffers) {
        try {
            KernelRunner r = k.runner().bind(buffers);
            long[] vars = new long[0];
            return () -> KernelRunner.runAll(r, k.program(), buffers, vars);
        } catch (RuntimeException e) {
            return null;
        }
    }

    /**
     * Runs the variants in turn, round after round, until each has run {@link #WARMUP_RUNS} times or the
     * warm-up time has passed (each at least 3 times): a Java kernel is interpreted until the JIT has compiled
     * it, and timing that would measure the JIT, not the kernel. Taking turns lets the JIT compile all of
     * them side by side instead of one after another. A variant that throws is dropped.
     */
    private void warmUp(Runnable[] runs, long deadlineNanos) {
        long start = System.nanoTime();
        for (int round = 0; round < WARMUP_RUNS; round++) {
            long now = System.nanoTime();
            if (round >= 3 && (now - start >= warmupNanos || now >= deadlineNanos)) return;
            for (int i = 0; i < runs.length; i++) {
                if (runs[i] == null) continue;
                try {
                    runs[i].run();
                } catch (RuntimeException e) {
                    runs[i] = null;
                }
            }
        }
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

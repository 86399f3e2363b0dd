package dev.kiln.runtime;

import dev.kiln.codegen.KernelProgram;

import java.lang.foreign.MemorySegment;

/**
 * A compiled kernel as the runtime calls it: the buffers (output first, then the inputs, as the
 * kernel's {@link dev.kiln.codegen.KernelProgram} orders its parameters), the values of its variables
 * (in the program's order), and the range of iterations of its outermost loop to run — the whole
 * range, or one worker's share when the kernel is split across threads.
 */
@FunctionalInterface
public interface KernelRunner {
    void run(MemorySegment[] buffers, long[] vars, long start, long end);

    /**
     * This kernel for a caller that passes the same {@code buffers} array, unmodified, to every call, as a
     * prepared plan does: a device may check once what cannot change between such calls (sizes, alignment,
     * where the memory lives) and only what can on each call. Called with any other array, the returned
     * runner must behave as this one. The default is this runner.
     */
    default KernelRunner bind(MemorySegment[] buffers) { return this; }

    /**
     * {@link #bind(MemorySegment[])}, told which of the buffers are constants ({@code immutable[i]}: an
     * {@linkplain Buffer#asImmutable() immutable} buffer, whose contents never change), so the runner may also
     * prepare data derived from them once (packed weights). The default ignores it.
     */
    default KernelRunner bind(MemorySegment[] buffers, boolean[] immutable) { return bind(buffers); }

    /**
     * Whether one call already spreads its work over every worker of the {@link WorkerPool} by itself (a packed
     * GEMM), so a plan gains nothing by running it beside other steps. The default is false.
     */
    default boolean usesAllWorkers() { return false; }

    /**
     * Runs {@code runner}, the compiled {@code program}, over the iterations of its output loop at the values
     * {@code vars}, split across the {@link WorkerPool}'s workers when that loop is THREAD (in its balanced shares,
     * {@link WorkerPool#balancedShares}). A single share runs on
     * the caller and creates no task, so it allocates nothing.
     */
    static void runAll(KernelRunner runner, KernelProgram program, MemorySegment[] buffers, long[] vars) {
        long extent = program.activeExtent(vars);
        int shares = program.threaded() && WorkerPool.size() >= 2 ? WorkerPool.balancedShares(extent) : 1;
        if (shares <= 1) runner.run(buffers, vars, 0, extent);
        else WorkerPool.forRanges(extent, shares, (start, end) -> runner.run(buffers, vars, start, end));
    }
}

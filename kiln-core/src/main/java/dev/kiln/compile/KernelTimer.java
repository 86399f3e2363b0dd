package dev.kiln.compile;

import dev.kiln.codegen.KernelProgram;

import java.util.List;

/**
 * How a device times compiled variants of one kernel for {@link BeamSearch}: the pipeline cannot run
 * kernels (it knows neither buffers nor threads), the device's runtime can.
 *
 * @param <K> the compiled kernel
 */
@FunctionalInterface
public interface KernelTimer<K> {
    /**
     * The median time in nanoseconds of each of {@code kernels}, in order, run on the same buffers of
     * {@code lowered}'s parameters (random inputs); {@link Long#MAX_VALUE} for a kernel that failed or was
     * not timed because {@code deadlineNanos} (of {@link System#nanoTime()}) had passed.
     *
     * @param lowered the kernel as lowered: every variant has its parameters, sizes and variables
     */
    long[] time(KernelProgram lowered, List<K> kernels, long deadlineNanos);

    /**
     * Whether this timer can run variants of {@code lowered} safely on made-up inputs (e.g. not when inputs
     * are indices or divisors, which random values would send out of bounds). All by default.
     */
    default boolean canTime(KernelProgram lowered) { return true; }
}

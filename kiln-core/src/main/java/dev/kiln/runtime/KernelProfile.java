package dev.kiln.runtime;

/**
 * The measured run of one prepared op.
 *
 * @param name      the op's name (kernel name, or {@code copy}, {@code view}, {@code custom:NAME})
 * @param startNanos start time, relative to the start of the plan's execution
 * @param elapsedNanos wall time of the op
 * @param flops     floating-point (or integer) operations the op performs, counted from its program
 * @param bytes     bytes the op reads and writes in its buffers
 * @param thread    the worker thread that ran it (for traces)
 * @param source    the generated source of a kernel, empty for other ops
 */
public record KernelProfile(String name, long startNanos, long elapsedNanos, long flops, long bytes, String thread, String source) {
    /** Achieved GFLOP/s (0 when the op took no measurable time). */
    public double gflops() { return elapsedNanos == 0 ? 0 : flops / (double) elapsedNanos; }

    /** Achieved memory bandwidth in GB/s (0 when the op took no measurable time). */
    public double gbPerSecond() { return elapsedNanos == 0 ? 0 : bytes / (double) elapsedNanos; }

    public double elapsedMillis() { return elapsedNanos / 1e6; }
}

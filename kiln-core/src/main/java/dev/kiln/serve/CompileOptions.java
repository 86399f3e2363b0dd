package dev.kiln.serve;

/**
 * How {@link Session#compile(Graph, CompileOptions)} builds a compiled graph.
 *
 * @param stagingSlots the depth of the input staging ring of asynchronous commits
 *                     ({@link ExecutableGraph#commitNoWait}): how many runs' inputs may wait while one
 *                     runs; a further commit blocks until a slot frees. At least 1.
 */
public record CompileOptions(int stagingSlots) {
    public CompileOptions {
        if (stagingSlots < 1) throw new IllegalArgumentException("CompileOptions: stagingSlots must be >= 1, got " + stagingSlots);
    }

    /** Two staging slots: the next run's inputs are copied while the current one runs. */
    public static CompileOptions defaults() { return new CompileOptions(2); }
}

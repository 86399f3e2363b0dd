package dev.kiln;

/**
 * A {@link Tensor#loop loop} that was still going after the most iterations it may run: a loop whose condition never
 * fails would otherwise never return. The limit is {@link LoopLimit#maxIterations()} unless the loop was given its own.
 * An {@link IllegalArgumentException}, as an index out of range is: the loop's data or its model is at fault, not Kiln.
 */
public final class LoopLimitException extends IllegalArgumentException {
    private final String loop;
    private final long limit;

    /**
     * @param loop  the loop's name, for the message
     * @param limit the most iterations it could run
     */
    public LoopLimitException(String loop, long limit) {
        super(loop + ": still running after " + limit + " iterations, the most it may run (its condition had not failed and its trip count "
                + "was not reached); raise the limit with -D" + LoopLimit.PROPERTY + "=N or " + LoopLimit.ENVIRONMENT + " if the loop is meant to run longer");
        this.loop = loop;
        this.limit = limit;
    }

    /** The loop's name (an operation such as an ONNX node, or {@code "loop"}). */
    public String loop() { return loop; }

    /** The most iterations the loop could run. */
    public long limit() { return limit; }
}

package dev.kiln;

/**
 * The most iterations a {@link Tensor#loop loop} runs before it fails with a {@link LoopLimitException}: the limit of an
 * enclosing {@link #with}, else {@code -Dkiln.loop.maxIterations=N}, else the environment's
 * {@code KILN_LOOP_MAX_ITERATIONS}, else {@value #DEFAULT}. Read when a loop is built, so a prepared plan keeps the limit
 * it was built with.
 */
public final class LoopLimit {
    /** The system property naming the limit. */
    public static final String PROPERTY = "kiln.loop.maxIterations";
    /** The environment variable naming the limit, read when the property is not set. */
    public static final String ENVIRONMENT = "KILN_LOOP_MAX_ITERATIONS";
    /** The limit when neither is set: far more than a loop of a model runs, far less than forever. */
    public static final long DEFAULT = 1_000_000;

    private static final ScopedValue<Long> SCOPED = ScopedValue.newInstance();

    private LoopLimit() {}

    /**
     * Builds with {@code maxIterations} as the limit of every loop {@code build} makes (on this thread, and threads it forks
     * in a structured scope), whatever the setting.
     *
     * @throws IllegalArgumentException if {@code maxIterations} is below 1
     */
    public static <T> T with(long maxIterations, java.util.function.Supplier<T> build) {
        if (maxIterations < 1) throw new IllegalArgumentException("loop limit: expected at least 1 iteration, got " + maxIterations);
        return ScopedValue.where(SCOPED, maxIterations).call(build::get);
    }

    /**
     * The limit now in force.
     *
     * @throws IllegalArgumentException if the property or variable is set to something other than a positive integer
     */
    public static long maxIterations() {
        if (SCOPED.isBound()) return SCOPED.get();
        String p = System.getProperty(PROPERTY);
        if (p != null) return parse(p, "-D" + PROPERTY);
        String e = System.getenv(ENVIRONMENT);
        return e != null ? parse(e, ENVIRONMENT) : DEFAULT;
    }

    private static long parse(String value, String setting) {
        try {
            long n = Long.parseLong(value.trim());
            if (n >= 1) return n;
        } catch (NumberFormatException ignored) {
            // reported below with the setting's name
        }
        throw new IllegalArgumentException(setting + " is '" + value + "', expected a positive number of iterations");
    }
}

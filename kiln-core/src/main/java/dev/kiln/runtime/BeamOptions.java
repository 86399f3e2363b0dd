package dev.kiln.runtime;

import dev.kiln.compile.KernelPipeline;
import dev.kiln.compile.KernelTimer;

import java.time.Duration;
import java.util.Objects;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Supplier;
import java.util.function.UnaryOperator;

/**
 * Whether and how kernels are autotuned by BEAM search: instead of taking the device's
 * heuristic actions as they are, the pipeline compiles and times variants of each kernel (the heuristic's
 * choice always among them) and keeps the fastest. Off by default; results are cached on disk per kernel
 * structure, device and width, so a later process reuses them without searching.
 *
 * <p>Turned on for a process by the environment variable {@value #ENV} or the system property
 * {@value #PROPERTY} (the width; unset or 0 is off), with the per-kernel budget in milliseconds from
 * {@value #BUDGET_ENV} / {@value #BUDGET_PROPERTY} and the per-prepare budget from {@value #TOTAL_ENV} /
 * {@value #TOTAL_PROPERTY}; or for one {@code prepare} by {@code Tensor.prepare(BeamOptions, Tensor...)}.
 *
 * @param width     the beam width n: how many action lists each step keeps (0 = off)
 * @param perKernel the time one kernel's search may take (compiling and timing its candidates)
 * @param perBatch  the time all searches of one prepare (one compile batch) may take together
 */
public record BeamOptions(int width, Duration perKernel, Duration perBatch) {
    public static final String ENV = "KILN_BEAM";
    public static final String PROPERTY = "kiln.beam";
    public static final String BUDGET_ENV = "KILN_BEAM_BUDGET_MS";
    public static final String BUDGET_PROPERTY = "kiln.beam.budget.ms";
    public static final String TOTAL_ENV = "KILN_BEAM_TOTAL_MS";
    public static final String TOTAL_PROPERTY = "kiln.beam.total.ms";
    /** Default search time per kernel. */
    public static final Duration DEFAULT_PER_KERNEL = Duration.ofSeconds(2);
    /** Default search time per prepare: a model of many distinct kernels is tuned over several runs (cached). */
    public static final Duration DEFAULT_PER_BATCH = Duration.ofSeconds(60);
    /** BEAM off. */
    public static final BeamOptions OFF = new BeamOptions(0, DEFAULT_PER_KERNEL, DEFAULT_PER_BATCH);

    private static final ScopedValue<BeamOptions> SCOPED = ScopedValue.newInstance();
    private static final System.Logger LOGGER = System.getLogger(BeamOptions.class.getName());
    private static final AtomicBoolean LOGGED = new AtomicBoolean();
    private static volatile BeamOptions fromEnvironment;

    public BeamOptions {
        Objects.requireNonNull(perKernel, "perKernel");
        Objects.requireNonNull(perBatch, "perBatch");
        if (width < 0) throw new IllegalArgumentException("BEAM width must be >= 0, got " + width);
        if (perKernel.isNegative() || perBatch.isNegative()) {
            throw new IllegalArgumentException("BEAM budgets must be >= 0, got " + perKernel + " and " + perBatch);
        }
    }

    /** BEAM of {@code width} with the default budgets. */
    public static BeamOptions width(int width) { return new BeamOptions(width, DEFAULT_PER_KERNEL, DEFAULT_PER_BATCH); }

    /** These options with another per-kernel budget. */
    public BeamOptions withPerKernel(Duration budget) { return new BeamOptions(width, budget, perBatch); }

    /** These options with another per-prepare budget. */
    public BeamOptions withPerBatch(Duration budget) { return new BeamOptions(width, perKernel, budget); }

    /** Whether BEAM is on (width above 0). */
    public boolean on() { return width > 0; }

    /** What the pipeline needs to tune with these options and {@code timer}, or null when BEAM is off. */
    public <K> KernelPipeline.Beam<K> tuning(KernelTimer<K> timer) {
        return on() ? new KernelPipeline.Beam<>(width, perKernel, perBatch, timer) : null;
    }

    /**
     * {@code work} run with these options in effect for the kernels compiled on this thread (it is how
     * {@code Tensor.prepare(BeamOptions, ...)} passes them down to the pipeline).
     */
    public <T> T during(Supplier<T> work) {
        return ScopedValue.where(SCOPED, this).call(work::get);
    }

    /**
     * The options in effect: those of an enclosing {@link #during}, else the process's from the environment
     * and system properties (read once). Logs once when BEAM is first found on.
     */
    public static BeamOptions current() {
        BeamOptions b = SCOPED.isBound() ? SCOPED.get() : environment();
        if (b.on() && LOGGED.compareAndSet(false, true)) {
            LOGGER.log(System.Logger.Level.INFO, "BEAM search on: width " + b.width + ", budget " + b.perKernel.toMillis()
                    + " ms per kernel, " + b.perBatch.toMillis() + " ms per prepare");
        }
        return b;
    }

    private static BeamOptions environment() {
        BeamOptions b = fromEnvironment;
        if (b == null) fromEnvironment = b = parse(System::getProperty, System::getenv);
        return b;
    }

    /**
     * The options {@code properties} (e.g. {@code System::getProperty}) and {@code environment} give (a property wins over the variable).
     *
     * @throws IllegalArgumentException if a value is not a non-negative integer
     */
    public static BeamOptions parse(UnaryOperator<String> properties, UnaryOperator<String> environment) {
        long width = number(properties, environment, PROPERTY, ENV, 0);
        long perKernel = number(properties, environment, BUDGET_PROPERTY, BUDGET_ENV, DEFAULT_PER_KERNEL.toMillis());
        long perBatch = number(properties, environment, TOTAL_PROPERTY, TOTAL_ENV, DEFAULT_PER_BATCH.toMillis());
        if (width > 64) throw new IllegalArgumentException("BEAM width " + width + " is above 64");
        return new BeamOptions((int) width, Duration.ofMillis(perKernel), Duration.ofMillis(perBatch));
    }

    private static long number(UnaryOperator<String> properties, UnaryOperator<String> environment, String property, String env, long otherwise) {
        String p = properties.apply(property);
        String raw = p != null && !p.isBlank() ? p : environment.apply(env);
        if (raw == null || raw.isBlank()) return otherwise;
        try {
            long v = Long.parseLong(raw.strip());
            if (v < 0) throw new NumberFormatException();
            return v;
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException((p != null && !p.isBlank() ? property : env) + " must be a non-negative integer, got '" + raw + "'");
        }
    }
}

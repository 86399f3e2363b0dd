package dev.kiln.codegen;

import java.util.Locale;

/**
 * Whether compiled float reductions may change their order of operations (docs/ARCHITECTURE.md, "Numerics
 * policy"). {@link #FAST} is the default: sums may be split into vector lanes (GROUP) and contractions run as a
 * packed GEMM (blocked, threaded, fused multiply-add), within the policy's error bound. {@link #EXACT} keeps
 * every reduction in INTERP's loop order, so compiled results equal INTERP's bit for bit (debugging,
 * reproducibility across machines), at the cost of speed.
 *
 * <p>Chosen once per process: the system property {@code kiln.reductions} or else the environment variable
 * {@code KILN_REDUCTIONS}, {@code fast} or {@code exact}. It is part of every compiling device's program
 * identity, so programs of the two orders never share a cache entry.
 */
public enum ReductionOrder {
    FAST, EXACT;

    private static final ReductionOrder CURRENT = parse(System.getProperty("kiln.reductions", System.getenv("KILN_REDUCTIONS")));

    /** The order of this process. */
    public static ReductionOrder current() { return CURRENT; }

    /**
     * The order a setting names; null or blank is {@link #FAST}.
     *
     * @throws IllegalArgumentException for any other value, naming the valid ones
     */
    public static ReductionOrder parse(String setting) {
        if (setting == null || setting.isBlank()) return FAST;
        return switch (setting.strip().toLowerCase(Locale.ROOT)) {
            case "fast" -> FAST;
            case "exact" -> EXACT;
            default -> throw new IllegalArgumentException("kiln.reductions / KILN_REDUCTIONS: expected 'fast' or 'exact', got '" + setting + "'");
        };
    }

    /** Whether a float reduction may be reordered (GROUP, packed GEMM). */
    public boolean mayReorder() { return this == FAST; }
}

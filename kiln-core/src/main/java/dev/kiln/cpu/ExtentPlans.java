package dev.kiln.cpu;

import dev.kiln.codegen.Contraction;

import java.util.Arrays;
import java.util.function.Function;

/**
 * A contraction kernel's plan (address and gate tables) at the contraction's full extents, made once, and at the
 * run-time extents of the last run whose symbolic sizes were smaller, reused while they stay: a decode loop runs at
 * one extent many times over.
 *
 * @param <P> the kernel's plan
 */
final class ExtentPlans<P> {
    private record Plan<P>(long[] extents, P plan) {}

    private final Contraction contraction;
    private final Function<long[], P> make;
    private final boolean limited;
    private final Plan<P> full;
    private volatile Plan<P> last;

    /** @param make the plan for extents, one per variable of {@code contraction} */
    ExtentPlans(Contraction contraction, Function<long[], P> make) {
        this.contraction = contraction;
        this.make = make;
        long[] ext = new long[contraction.vars().size()];
        boolean lim = false;
        for (int v = 0; v < ext.length; v++) {
            ext[v] = contraction.vars().get(v).extent();
            lim |= contraction.vars().get(v).limit() >= 0;
        }
        limited = lim;
        full = new Plan<>(ext, make.apply(ext));
    }

    /** The plan at the full extents. */
    P full() { return full.plan; }

    /** The plan for a run with the kernel's variable values {@code vars} (which bound the variables with a limit). */
    P at(long[] vars) {
        if (!limited) return full.plan;
        long[] ext = new long[contraction.vars().size()];
        for (int v = 0; v < ext.length; v++) ext[v] = Math.max(0, contraction.vars().get(v).extent(vars));
        if (Arrays.equals(ext, full.extents)) return full.plan;
        Plan<P> p = last;
        if (p != null && Arrays.equals(ext, p.extents)) return p.plan;
        p = new Plan<>(ext, make.apply(ext));
        last = p;
        return p.plan;
    }
}

package dev.kiln.codegen;

import dev.kiln.codegen.Contraction.Gate;
import dev.kiln.codegen.Contraction.Operand;
import dev.kiln.codegen.Contraction.Role;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/**
 * A {@link Contraction} evaluated by its definition: every point of the variables in order (the last fastest),
 * the sum over K in f32 from -0.0 in the kernel's loop order, so it equals the kernel's own loops bit for bit.
 */
public final class ContractionReference {
    private ContractionReference() {}

    /** Writes the sums into {@code buffers[0]} (f32 segments; {@code vars} the kernel's variable values). */
    public static void sums(Contraction c, MemorySegment[] buffers, long[] vars) {
        int n = c.vars().size();
        long[] at = new long[n], extent = new long[n];
        for (int v = 0; v < n; v++) extent[v] = c.vars().get(v).extent(vars);
        outer(c, buffers, at, extent, 0);
    }

    /** Loops over the non-K variables (in order), then sums over the K variables. */
    private static void outer(Contraction c, MemorySegment[] buffers, long[] at, long[] extent, int v) {
        if (v == at.length) {
            float acc = -0.0f;
            acc = sum(c, buffers, at, extent, 0, acc);
            buffers[0].setAtIndex(ValueLayout.JAVA_FLOAT, address(c.c(), at), acc);
            return;
        }
        if (c.vars().get(v).role() == Role.K) {
            outer(c, buffers, at, extent, v + 1);
            return;
        }
        for (at[v] = 0; at[v] < extent[v]; at[v]++) outer(c, buffers, at, extent, v + 1);
        at[v] = 0;
    }

    private static float sum(Contraction c, MemorySegment[] buffers, long[] at, long[] extent, int v, float acc) {
        if (v == at.length) return acc + read(c.a(), buffers, at) * read(c.b(), buffers, at);
        if (c.vars().get(v).role() != Role.K) return sum(c, buffers, at, extent, v + 1, acc);
        for (at[v] = 0; at[v] < extent[v]; at[v]++) acc = sum(c, buffers, at, extent, v + 1, acc);
        at[v] = 0;
        return acc;
    }

    /** The operand's element at the point, 0 where a gate fails (and then nothing is read). */
    public static float read(Operand o, MemorySegment[] buffers, long[] at) {
        for (Gate g : o.gates()) {
            long e = 0;
            for (int v = 0; v < at.length; v++) e += g.coeff(v) * at[v];
            if (e < g.lo() || e >= g.hi()) return 0f;
        }
        return buffers[o.param()].getAtIndex(ValueLayout.JAVA_FLOAT, address(o, at));
    }

    public static long address(Operand o, long[] at) {
        long i = o.offset();
        for (int v = 0; v < at.length; v++) i += o.stride(v) * at[v];
        return i;
    }
}

package dev.kiln.cpu;

import dev.kiln.codegen.Contraction;
import dev.kiln.codegen.Contraction.Gate;
import dev.kiln.codegen.Contraction.Operand;
import dev.kiln.codegen.Contraction.Role;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/** TEMPORARY naive engine (replaced by the packed GEMM when it lands): the contraction by its definition. */
final class GemmKernel {
    private final Contraction c;

    GemmKernel(Contraction c) { this.c = c; }

    void run(MemorySegment[] buffers, long[] vars) {
        int n = c.vars().size();
        long[] at = new long[n], extent = new long[n];
        for (int v = 0; v < n; v++) extent[v] = c.vars().get(v).extent(vars);
        outer(buffers, at, extent, 0);
    }

    private void outer(MemorySegment[] buffers, long[] at, long[] extent, int v) {
        if (v == at.length) {
            buffers[0].setAtIndex(ValueLayout.JAVA_FLOAT, address(c.c(), at), sum(buffers, at, extent, 0, -0.0f));
            return;
        }
        if (c.vars().get(v).role() == Role.K) {
            outer(buffers, at, extent, v + 1);
            return;
        }
        for (at[v] = 0; at[v] < extent[v]; at[v]++) outer(buffers, at, extent, v + 1);
        at[v] = 0;
    }

    private float sum(MemorySegment[] buffers, long[] at, long[] extent, int v, float acc) {
        if (v == at.length) return acc + read(c.a(), buffers, at) * read(c.b(), buffers, at);
        if (c.vars().get(v).role() != Role.K) return sum(buffers, at, extent, v + 1, acc);
        for (at[v] = 0; at[v] < extent[v]; at[v]++) acc = sum(buffers, at, extent, v + 1, acc);
        at[v] = 0;
        return acc;
    }

    private static float read(Operand o, MemorySegment[] buffers, long[] at) {
        for (Gate g : o.gates()) {
            long e = 0;
            for (int v = 0; v < at.length; v++) e += g.coeff(v) * at[v];
            if (e < g.lo() || e >= g.hi()) return 0f;
        }
        return buffers[o.param()].getAtIndex(ValueLayout.JAVA_FLOAT, address(o, at));
    }

    private static long address(Operand o, long[] at) {
        long i = o.offset();
        for (int v = 0; v < at.length; v++) i += o.stride(v) * at[v];
        return i;
    }
}

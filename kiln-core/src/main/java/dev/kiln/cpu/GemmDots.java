package dev.kiln.cpu;

import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.VectorShuffle;
import jdk.incubator.vector.VectorSpecies;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;

import static dev.kiln.cpu.GemmMicroKernel.NR;

/**
 * A GEMM of few rows whose A rows and B columns are each contiguous along K (a transposed B: {@code x Wᵀ}, or a
 * decode step's attention scores {@code q Kᵀ} over the key cache), as dot products read straight from the operands.
 * Packing B into panels costs a strided gather per column for work that reads each column once: on a decode step at
 * 1,000 cached tokens the gather was two thirds of the scores' time. Four rows share each load of a B column.
 *
 * <p>The sums go through the same stores as the packed nest's register tiles ({@code tmp}: row i at {@code i * NR}),
 * so a fused epilogue applies unchanged.
 */
final class GemmDots {
    /** Most rows run as dot products; more go through the packed nest, whose tiles reuse B from registers. */
    static final int MAX_ROWS = 8;

    private static final VectorSpecies<Float> S = FloatVector.SPECIES_PREFERRED;
    private static final int L = S.length();
    private static final ValueLayout.OfFloat F = ValueLayout.JAVA_FLOAT_UNALIGNED;
    private static final ByteOrder LE = ByteOrder.LITTLE_ENDIAN;

    private GemmDots() {}

    /** Batches {@code [b0, b1)}, rows {@code [m0, m1)} and columns {@code [n0, n1)} of C, all of K at once. */
    static void compute(GemmPlan p, MemorySegment as, MemorySegment bs, MemorySegment cs, int b0, int b1, int m0, int m1, int n0, int n1,
                        MemorySegment[] buffers, float[] tmp) {
        for (int b = b0; b < b1; b++) {
            long cBase = p.cBatch[b];
            for (int jc = n0; jc < n1; jc += NR) {
                int nr = Math.min(NR, n1 - jc);
                for (int ic = m0; ic < m1; ic += 4) {
                    int mr = Math.min(4, m1 - ic);
                    // missing rows repeat the last one: the same loads, their sums never stored
                    long a0 = 4 * p.a.rowStart(b, ic), a1 = 4 * p.a.rowStart(b, ic + Math.min(1, mr - 1)),
                            a2 = 4 * p.a.rowStart(b, ic + Math.min(2, mr - 1)), a3 = 4 * p.a.rowStart(b, ic + Math.min(3, mr - 1));
                    int j = 0;
                    if (mr == 1) {
                        // one row (a classifier at batch 1): four columns share its loads, four chains in flight
                        for (; j + 4 <= nr; j += 4) {
                            dots(bs, 4 * p.b.columnStart(b, jc + j), 4 * p.b.columnStart(b, jc + j + 1), 4 * p.b.columnStart(b, jc + j + 2),
                                    4 * p.b.columnStart(b, jc + j + 3), as, a0, p.k, tmp, j, 1);
                        }
                    }
                    for (; j < nr; j++) dots(as, a0, a1, a2, a3, bs, 4 * p.b.columnStart(b, jc + j), p.k, tmp, j, NR);
                    boolean contiguous = p.contiguous[jc] >= nr;
                    if (p.epilogue != null) p.epilogue.store(tmp, 0, cs, cBase, p.cRow, ic, mr, p.cCol, jc, nr, contiguous, true, b, buffers);
                    else GemmMicroKernel.store(cs, cBase, p.cRow, ic, mr, p.cCol, jc, nr, contiguous, true, tmp);
                }
            }
        }
    }

    /** Lane i + h moved to lane i, for h = L/2, L/4, L/8, L/16 (what lands in the other lanes is never read). */
    private static final VectorShuffle<Float> HALF = fold(L / 2), QUARTER = fold(L / 4), EIGHTH = fold(L / 8), SIXTEENTH = fold(L / 16);

    private static VectorShuffle<Float> fold(int h) {
        if (L > 16) throw new IllegalStateException("GemmDots sums at most 16 lanes; the preferred float species has " + L);
        return VectorShuffle.fromOp(S, i -> (i + h) % L);
    }

    /**
     * The sum of v's lanes, halves added pairwise down to lane 0, always in this order. {@code reduceLanes(ADD)} leaves
     * its order open, and HotSpot's compiled form sums in another order than the interpreted one: the same scores came
     * out an ulp apart before and after the JIT compiled this class, so a decode step's logits depended on how warm the
     * JVM was (and with activations quantised to Q8_0 an ulp can move a value across a rounding step and change a
     * greedy answer).
     */
    static float sum(FloatVector v) {
        v = v.add(v.rearrange(HALF));
        if (L >= 4) v = v.add(v.rearrange(QUARTER));
        if (L >= 8) v = v.add(v.rearrange(EIGHTH));
        if (L >= 16) v = v.add(v.rearrange(SIXTEENTH));
        return v.lane(0);
    }

    /**
     * The dot products of the runs at byte offsets {@code x0..x3} of {@code xs} with the run at {@code y} of {@code ys},
     * {@code k} floats each, into {@code tmp[at + i * step]}: four rows against a column ({@code step} NR: the tile's
     * rows), or, with the operands' places traded, four columns against a row ({@code step} 1). Each is one chain of
     * vectors along K, {@link #sum}, then the tail, whichever place an operand takes (a product is the same float either
     * way round), so a row's outputs are the same floats alone or among other rows (a served decode step batches rows).
     */
    private static void dots(MemorySegment xs, long x0, long x1, long x2, long x3, MemorySegment ys, long y, int k, float[] tmp, int at, int step) {
        FloatVector s0 = FloatVector.zero(S), s1 = s0, s2 = s0, s3 = s0;
        int x = 0;
        for (; x <= k - L; x += L) {
            long o = 4L * x;
            FloatVector yv = FloatVector.fromMemorySegment(S, ys, y + o, LE);
            s0 = FloatVector.fromMemorySegment(S, xs, x0 + o, LE).fma(yv, s0);
            s1 = FloatVector.fromMemorySegment(S, xs, x1 + o, LE).fma(yv, s1);
            s2 = FloatVector.fromMemorySegment(S, xs, x2 + o, LE).fma(yv, s2);
            s3 = FloatVector.fromMemorySegment(S, xs, x3 + o, LE).fma(yv, s3);
        }
        float r0 = sum(s0), r1 = sum(s1), r2 = sum(s2), r3 = sum(s3);
        for (; x < k; x++) {
            long o = 4L * x;
            float yv = ys.get(F, y + o);
            r0 = Math.fma(xs.get(F, x0 + o), yv, r0);
            r1 = Math.fma(xs.get(F, x1 + o), yv, r1);
            r2 = Math.fma(xs.get(F, x2 + o), yv, r2);
            r3 = Math.fma(xs.get(F, x3 + o), yv, r3);
        }
        tmp[at] = r0;
        tmp[at + step] = r1;
        tmp[at + 2 * step] = r2;
        tmp[at + 3 * step] = r3;
    }
}

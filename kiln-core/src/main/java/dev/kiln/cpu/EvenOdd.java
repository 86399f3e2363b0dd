package dev.kiln.cpu;

import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.VectorMask;
import jdk.incubator.vector.VectorShuffle;
import jdk.incubator.vector.VectorSpecies;

import java.lang.foreign.MemorySegment;
import java.nio.ByteOrder;

/**
 * A run of floats split into its even and odd elements, as a stride-2 window reads them: {@link PlaneStencil}'s
 * stride-2 planes and {@link PaddedImage}'s stride phases.
 */
final class EvenOdd {
    private static final VectorSpecies<Float> F = FloatVector.SPECIES_PREFERRED;
    private static final int L = F.length();
    private static final ByteOrder ORDER = ByteOrder.nativeOrder();

    /**
     * Lane i of {@code lo.rearrange(EVEN).blend(hi.rearrange(EVEN), HIGH)} is element 2i of a run loaded as {@code lo} at
     * element 0 and {@code hi} at element L: {@code lo}'s below L/2, {@code hi}'s from L/2 on; with {@code ODD}, element
     * 2i + 1. Two one-table permutes and a blend took 1.1 ns a pair of vectors where one two-table permute
     * ({@code selectFrom}) took 2.8.
     */
    static final VectorShuffle<Float> EVEN, ODD;
    static final VectorMask<Float> HIGH;

    static {
        int[] even = new int[L], odd = new int[L];
        boolean[] high = new boolean[L];
        for (int i = 0; i < L; i++) {
            even[i] = 2 * i % L;
            odd[i] = (2 * i + 1) % L;
            high[i] = i >= L / 2;
        }
        EVEN = VectorShuffle.fromArray(F, even, 0);
        ODD = VectorShuffle.fromArray(F, odd, 0);
        HIGH = VectorMask.fromArray(F, high, 0);
    }

    private EvenOdd() {}

    /**
     * B's elements {@code [src, src + n)}: the even ones (0, 2, ...) to {@code dst} from {@code even}, the odd ones
     * from {@code odd}. Whole pairs of vectors unmasked; then, in a run of at least two vectors, the last pair ending at
     * the run's end, overlapping the one before (the same floats stored again: masked loads and stores took most of a
     * 56-column row's split), else the one pair's loads and stores masked to the run. Small, so that HotSpot inlines it
     * into the row loops (at 496 bytes of bytecode it was called per row).
     */
    static void split(MemorySegment b, long src, int n, float[] dst, int even, int odd) {
        if (n < 2 * L) {
            splitShort(b, src, n, dst, even, odd);
            return;
        }
        int t = 0;
        for (; 2 * t + 2 * L <= n; t += L) pair(b, src + 2 * t, dst, even + t, odd + t);
        if (2 * t < n) {
            // from an odd start the pair's even lanes are the run's odd elements
            int a = n - 2 * L;
            if ((a & 1) == 0) pair(b, src + a, dst, even + a / 2, odd + a / 2);
            else pair(b, src + a, dst, odd + a / 2, even + a / 2 + 1);
        }
    }

    /** The pair of vectors at B's element {@code src}: its even lanes to {@code dst} from {@code evens}, its odd ones from {@code odds}. */
    private static void pair(MemorySegment b, long src, float[] dst, int evens, int odds) {
        long at = 4 * src;
        FloatVector v0 = FloatVector.fromMemorySegment(F, b, at, ORDER), v1 = FloatVector.fromMemorySegment(F, b, at + 4L * L, ORDER);
        v0.rearrange(EVEN).blend(v1.rearrange(EVEN), HIGH).intoArray(dst, evens);
        v0.rearrange(ODD).blend(v1.rearrange(ODD), HIGH).intoArray(dst, odds);
    }

    /** {@link #split} of a run shorter than two vectors: one pair, its loads and stores masked to the run. */
    private static void splitShort(MemorySegment b, long src, int n, float[] dst, int even, int odd) {
        long at = 4 * src;
        FloatVector v0 = FloatVector.fromMemorySegment(F, b, at, ORDER, lanes(n)), v1 = FloatVector.fromMemorySegment(F, b, at + 4L * L, ORDER, lanes(n - L));
        v0.rearrange(EVEN).blend(v1.rearrange(EVEN), HIGH).intoArray(dst, even, lanes((n + 1) / 2));
        v0.rearrange(ODD).blend(v1.rearrange(ODD), HIGH).intoArray(dst, odd, lanes(n / 2));
    }

    /** The lanes {@code [0, n)} ({@code n} may lie outside {@code [0, L]}). */
    private static VectorMask<Float> lanes(int n) {
        int h = Math.clamp(n, 0, L);
        return VectorMask.fromLong(F, h == 0 ? 0 : -1L >>> (64 - h));
    }
}

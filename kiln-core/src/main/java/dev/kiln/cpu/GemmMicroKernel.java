package dev.kiln.cpu;

import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.VectorMask;
import jdk.incubator.vector.VectorSpecies;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;

/**
 * The register tile of the packed GEMM: {@link #MR} rows x {@link #NR} columns (two vectors) of C held in
 * twenty-four accumulators while a packed A panel ({@code a[k * MR + i]}: the MR rows' values of step k side by side,
 * {@link #packedA}) and a packed B panel ({@code b[k * NR + j]}) stream past, one FMA per accumulator per step; then
 * the tile is stored into C (first K block) or added to it. A panel's last columns, when one vector covers them, run
 * in that one vector.
 */
final class GemmMicroKernel {
    static final VectorSpecies<Float> S = FloatVector.SPECIES_PREFERRED;
    static final int L = S.length();
    /**
     * Rows of the tile: 12 x 2 vectors keep 24 of the 32 AVX-512 registers as accumulators. A step loads two vectors
     * of B for 24 multiply-adds; with 8 rows, for 16. Where B's panel streams from L2 (a 512-step panel of 32 columns
     * is 64 KB, more than L1), that load rate is what bounds the tile: on an Intel Xeon with full-rate AVX-512 (one
     * thread, a 96 x 512 block of A against 16 panels of B, both tile shapes alternating in one JVM) 8 rows ran at
     * 111 GFLOP/s and 12 rows at 126, both 131-153 when everything fits L1. (On an AMD Zen 4, whose AVX-512 runs at half
     * rate and is bound by the multiply-adds, 8 rows had measured 4 % faster than 12.)
     */
    static final int MR = 12;
    /**
     * Rows of the edge tiles ({@link #wideEdge}, {@link #imageTileEdge}): a panel's first rows, for a last panel of at
     * most this many valid rows (channel counts are powers of two: 64 = 5 x 12 + 4, 128 = 10 x 12 + 8).
     */
    static final int EDGE_MR = 8;
    /**
     * Rows of the smallest edge tiles ({@link #wideQuarter}, {@link #imageTileQuarter}): a last panel of at most this many
     * valid rows (64, 256 and 1024 channels leave 4), which the 8-row tile ran at twice the work (its time was 8-11 %
     * of a 64-channel convolution's).
     */
    static final int QUARTER_MR = 4;
    static final int NR = 2 * L;
    /**
     * Where a tile's scratch keeps one vector of staging for a run's last columns ({@link #storeRow}), past the MR x NR
     * sums and one vector of slack (a row's last full-vector load from the sums stays within the array).
     */
    static final int STAGE = MR * NR + L;
    /** Floats of a tile's scratch: the sums, the slack and the staging vector. */
    static final int TILE_FLOATS = STAGE + L;
    private static final ValueLayout.OfFloat F = ValueLayout.JAVA_FLOAT_UNALIGNED;
    private static final ByteOrder LE = ByteOrder.LITTLE_ENDIAN;

    private GemmMicroKernel() {}

    /**
     * Where row {@code r}, step {@code k} of a packed A block {@code kc} steps deep lies: panels of MR rows, each
     * {@code MR * kc} floats, step by step within a panel. One stream of A a tile instead of MR streams {@code kc}
     * apart: on an AVX-512 Xeon the tile ran 7-15 % faster (141-153 against 151-173 GFLOP/s a thread, scratch probe
     * alternating both in one JVM).
     */
    static int packedA(int r, int k, int kc) { return (r / MR) * MR * kc + k * MR + r % MR; }

    /**
     * The tile's sums into {@code tmp} (row i at {@code i * NR}), for a panel whose first {@code mr} rows and last
     * {@code nr} columns are valid (rows past {@code mr} may hold anything).
     */
    static void sums(float[] a, int ao, float[] b, int bo, int kc, int mr, int nr, float[] tmp) {
        // a panel's last columns, at most one vector wide (196 = 6 x 32 + 4), take half the multiply-adds
        if (nr <= L) narrow(a, ao, b, bo, kc, tmp);
        else if (nr == L + 1 && mr > QUARTER_MR) narrowAndOne(a, ao, b, bo, kc, tmp);
        else if (mr <= QUARTER_MR) wideQuarter(a, ao, b, bo, kc, tmp);
        else if (mr <= EDGE_MR) wideEdge(a, ao, b, bo, kc, tmp);
        else wide(a, ao, b, bo, kc, tmp);
    }

    /**
     * {@link #sums} with B read in place from a padded image ({@link #imageTile}): {@code narrow} when the tile's valid
     * columns fit one vector.
     */
    static void imageSums(float[] a, int ao, float[] img, int[] at, int kc, int mr, boolean narrow, float[] tmp) {
        if (narrow) imageTileNarrow(a, ao, img, at, kc, tmp);
        else if (mr <= QUARTER_MR) imageTileQuarter(a, ao, img, at, kc, tmp);
        else if (mr <= EDGE_MR) imageTileEdge(a, ao, img, at, kc, tmp);
        else imageTile(a, ao, img, at, kc, tmp);
    }

    /**
     * A full image tile ({@link #MR} rows, all {@link #NR} lanes output columns adjacent in C) stored from the registers,
     * as {@link #wideInto} stores a packed one: row i's floats at byte {@code off[i]} of {@code c} take
     * {@code min(max(sum + add[i], lower), upper)}. {@link #wideInto}'s loop, B's steps read from the image at
     * {@code at[k]}.
     */
    static void imageTileInto(float[] a, int ao, float[] img, int[] at, int kc, MemorySegment c, long[] off, float[] add, float lower, float upper) {
        FloatVector z = FloatVector.broadcast(S, -0.0f);
        FloatVector c0_0 = z, c0_1 = z, c1_0 = z, c1_1 = z, c2_0 = z, c2_1 = z, c3_0 = z, c3_1 = z, c4_0 = z, c4_1 = z, c5_0 = z, c5_1 = z, c6_0 = z, c6_1 = z, c7_0 = z, c7_1 = z, c8_0 = z, c8_1 = z, c9_0 = z, c9_1 = z, c10_0 = z, c10_1 = z, c11_0 = z, c11_1 = z;
        for (int k = 0, ak = ao; k < kc; k++, ak += MR) {
            int bi = at[k];
            FloatVector b0 = FloatVector.fromArray(S, img, bi);
            FloatVector b1 = FloatVector.fromArray(S, img, bi + L);
            FloatVector x = FloatVector.broadcast(S, a[ak + 0]);
            c0_0 = x.fma(b0, c0_0);
            c0_1 = x.fma(b1, c0_1);
            x = FloatVector.broadcast(S, a[ak + 1]);
            c1_0 = x.fma(b0, c1_0);
            c1_1 = x.fma(b1, c1_1);
            x = FloatVector.broadcast(S, a[ak + 2]);
            c2_0 = x.fma(b0, c2_0);
            c2_1 = x.fma(b1, c2_1);
            x = FloatVector.broadcast(S, a[ak + 3]);
            c3_0 = x.fma(b0, c3_0);
            c3_1 = x.fma(b1, c3_1);
            x = FloatVector.broadcast(S, a[ak + 4]);
            c4_0 = x.fma(b0, c4_0);
            c4_1 = x.fma(b1, c4_1);
            x = FloatVector.broadcast(S, a[ak + 5]);
            c5_0 = x.fma(b0, c5_0);
            c5_1 = x.fma(b1, c5_1);
            x = FloatVector.broadcast(S, a[ak + 6]);
            c6_0 = x.fma(b0, c6_0);
            c6_1 = x.fma(b1, c6_1);
            x = FloatVector.broadcast(S, a[ak + 7]);
            c7_0 = x.fma(b0, c7_0);
            c7_1 = x.fma(b1, c7_1);
            x = FloatVector.broadcast(S, a[ak + 8]);
            c8_0 = x.fma(b0, c8_0);
            c8_1 = x.fma(b1, c8_1);
            x = FloatVector.broadcast(S, a[ak + 9]);
            c9_0 = x.fma(b0, c9_0);
            c9_1 = x.fma(b1, c9_1);
            x = FloatVector.broadcast(S, a[ak + 10]);
            c10_0 = x.fma(b0, c10_0);
            c10_1 = x.fma(b1, c10_1);
            x = FloatVector.broadcast(S, a[ak + 11]);
            c11_0 = x.fma(b0, c11_0);
            c11_1 = x.fma(b1, c11_1);
        }
        FloatVector lo = FloatVector.broadcast(S, lower), hi = FloatVector.broadcast(S, upper);
        long half = 4L * L;
        c0_0.add(add[0]).max(lo).min(hi).intoMemorySegment(c, off[0], LE);
        c0_1.add(add[0]).max(lo).min(hi).intoMemorySegment(c, off[0] + half, LE);
        c1_0.add(add[1]).max(lo).min(hi).intoMemorySegment(c, off[1], LE);
        c1_1.add(add[1]).max(lo).min(hi).intoMemorySegment(c, off[1] + half, LE);
        c2_0.add(add[2]).max(lo).min(hi).intoMemorySegment(c, off[2], LE);
        c2_1.add(add[2]).max(lo).min(hi).intoMemorySegment(c, off[2] + half, LE);
        c3_0.add(add[3]).max(lo).min(hi).intoMemorySegment(c, off[3], LE);
        c3_1.add(add[3]).max(lo).min(hi).intoMemorySegment(c, off[3] + half, LE);
        c4_0.add(add[4]).max(lo).min(hi).intoMemorySegment(c, off[4], LE);
        c4_1.add(add[4]).max(lo).min(hi).intoMemorySegment(c, off[4] + half, LE);
        c5_0.add(add[5]).max(lo).min(hi).intoMemorySegment(c, off[5], LE);
        c5_1.add(add[5]).max(lo).min(hi).intoMemorySegment(c, off[5] + half, LE);
        c6_0.add(add[6]).max(lo).min(hi).intoMemorySegment(c, off[6], LE);
        c6_1.add(add[6]).max(lo).min(hi).intoMemorySegment(c, off[6] + half, LE);
        c7_0.add(add[7]).max(lo).min(hi).intoMemorySegment(c, off[7], LE);
        c7_1.add(add[7]).max(lo).min(hi).intoMemorySegment(c, off[7] + half, LE);
        c8_0.add(add[8]).max(lo).min(hi).intoMemorySegment(c, off[8], LE);
        c8_1.add(add[8]).max(lo).min(hi).intoMemorySegment(c, off[8] + half, LE);
        c9_0.add(add[9]).max(lo).min(hi).intoMemorySegment(c, off[9], LE);
        c9_1.add(add[9]).max(lo).min(hi).intoMemorySegment(c, off[9] + half, LE);
        c10_0.add(add[10]).max(lo).min(hi).intoMemorySegment(c, off[10], LE);
        c10_1.add(add[10]).max(lo).min(hi).intoMemorySegment(c, off[10] + half, LE);
        c11_0.add(add[11]).max(lo).min(hi).intoMemorySegment(c, off[11], LE);
        c11_1.add(add[11]).max(lo).min(hi).intoMemorySegment(c, off[11] + half, LE);
    }

    /** The MR x NR tile of sums into {@code tmp} (row i at {@code i * NR}). */
    private static void wide(float[] a, int ao, float[] b, int bo, int kc, float[] tmp) {
        FloatVector z = FloatVector.broadcast(S, -0.0f);
        FloatVector c0_0 = z, c0_1 = z, c1_0 = z, c1_1 = z, c2_0 = z, c2_1 = z, c3_0 = z, c3_1 = z, c4_0 = z, c4_1 = z, c5_0 = z, c5_1 = z, c6_0 = z, c6_1 = z, c7_0 = z, c7_1 = z, c8_0 = z, c8_1 = z, c9_0 = z, c9_1 = z, c10_0 = z, c10_1 = z, c11_0 = z, c11_1 = z;
        for (int k = 0, ak = ao; k < kc; k++, ak += MR) {
            int bi = bo + k * NR;
            FloatVector b0 = FloatVector.fromArray(S, b, bi);
            FloatVector b1 = FloatVector.fromArray(S, b, bi + L);
            FloatVector x = FloatVector.broadcast(S, a[ak + 0]);
            c0_0 = x.fma(b0, c0_0);
            c0_1 = x.fma(b1, c0_1);
            x = FloatVector.broadcast(S, a[ak + 1]);
            c1_0 = x.fma(b0, c1_0);
            c1_1 = x.fma(b1, c1_1);
            x = FloatVector.broadcast(S, a[ak + 2]);
            c2_0 = x.fma(b0, c2_0);
            c2_1 = x.fma(b1, c2_1);
            x = FloatVector.broadcast(S, a[ak + 3]);
            c3_0 = x.fma(b0, c3_0);
            c3_1 = x.fma(b1, c3_1);
            x = FloatVector.broadcast(S, a[ak + 4]);
            c4_0 = x.fma(b0, c4_0);
            c4_1 = x.fma(b1, c4_1);
            x = FloatVector.broadcast(S, a[ak + 5]);
            c5_0 = x.fma(b0, c5_0);
            c5_1 = x.fma(b1, c5_1);
            x = FloatVector.broadcast(S, a[ak + 6]);
            c6_0 = x.fma(b0, c6_0);
            c6_1 = x.fma(b1, c6_1);
            x = FloatVector.broadcast(S, a[ak + 7]);
            c7_0 = x.fma(b0, c7_0);
            c7_1 = x.fma(b1, c7_1);
            x = FloatVector.broadcast(S, a[ak + 8]);
            c8_0 = x.fma(b0, c8_0);
            c8_1 = x.fma(b1, c8_1);
            x = FloatVector.broadcast(S, a[ak + 9]);
            c9_0 = x.fma(b0, c9_0);
            c9_1 = x.fma(b1, c9_1);
            x = FloatVector.broadcast(S, a[ak + 10]);
            c10_0 = x.fma(b0, c10_0);
            c10_1 = x.fma(b1, c10_1);
            x = FloatVector.broadcast(S, a[ak + 11]);
            c11_0 = x.fma(b0, c11_0);
            c11_1 = x.fma(b1, c11_1);
        }
        c0_0.intoArray(tmp, 0);
        c0_1.intoArray(tmp, L);
        c1_0.intoArray(tmp, NR);
        c1_1.intoArray(tmp, NR + L);
        c2_0.intoArray(tmp, 2 * NR);
        c2_1.intoArray(tmp, 2 * NR + L);
        c3_0.intoArray(tmp, 3 * NR);
        c3_1.intoArray(tmp, 3 * NR + L);
        c4_0.intoArray(tmp, 4 * NR);
        c4_1.intoArray(tmp, 4 * NR + L);
        c5_0.intoArray(tmp, 5 * NR);
        c5_1.intoArray(tmp, 5 * NR + L);
        c6_0.intoArray(tmp, 6 * NR);
        c6_1.intoArray(tmp, 6 * NR + L);
        c7_0.intoArray(tmp, 7 * NR);
        c7_1.intoArray(tmp, 7 * NR + L);
        c8_0.intoArray(tmp, 8 * NR);
        c8_1.intoArray(tmp, 8 * NR + L);
        c9_0.intoArray(tmp, 9 * NR);
        c9_1.intoArray(tmp, 9 * NR + L);
        c10_0.intoArray(tmp, 10 * NR);
        c10_1.intoArray(tmp, 10 * NR + L);
        c11_0.intoArray(tmp, 11 * NR);
        c11_1.intoArray(tmp, 11 * NR + L);
    }

    /** {@link #wide} for the first {@link #EDGE_MR} rows of a panel (still {@link #MR} floats a step). */
    private static void wideEdge(float[] a, int ao, float[] b, int bo, int kc, float[] tmp) {
        FloatVector z = FloatVector.broadcast(S, -0.0f);
        FloatVector c0_0 = z, c0_1 = z, c1_0 = z, c1_1 = z, c2_0 = z, c2_1 = z, c3_0 = z, c3_1 = z, c4_0 = z, c4_1 = z, c5_0 = z, c5_1 = z, c6_0 = z, c6_1 = z, c7_0 = z, c7_1 = z;
        for (int k = 0, ak = ao; k < kc; k++, ak += MR) {
            int bi = bo + k * NR;
            FloatVector b0 = FloatVector.fromArray(S, b, bi);
            FloatVector b1 = FloatVector.fromArray(S, b, bi + L);
            FloatVector x = FloatVector.broadcast(S, a[ak + 0]);
            c0_0 = x.fma(b0, c0_0);
            c0_1 = x.fma(b1, c0_1);
            x = FloatVector.broadcast(S, a[ak + 1]);
            c1_0 = x.fma(b0, c1_0);
            c1_1 = x.fma(b1, c1_1);
            x = FloatVector.broadcast(S, a[ak + 2]);
            c2_0 = x.fma(b0, c2_0);
            c2_1 = x.fma(b1, c2_1);
            x = FloatVector.broadcast(S, a[ak + 3]);
            c3_0 = x.fma(b0, c3_0);
            c3_1 = x.fma(b1, c3_1);
            x = FloatVector.broadcast(S, a[ak + 4]);
            c4_0 = x.fma(b0, c4_0);
            c4_1 = x.fma(b1, c4_1);
            x = FloatVector.broadcast(S, a[ak + 5]);
            c5_0 = x.fma(b0, c5_0);
            c5_1 = x.fma(b1, c5_1);
            x = FloatVector.broadcast(S, a[ak + 6]);
            c6_0 = x.fma(b0, c6_0);
            c6_1 = x.fma(b1, c6_1);
            x = FloatVector.broadcast(S, a[ak + 7]);
            c7_0 = x.fma(b0, c7_0);
            c7_1 = x.fma(b1, c7_1);
        }
        c0_0.intoArray(tmp, 0);
        c0_1.intoArray(tmp, L);
        c1_0.intoArray(tmp, NR);
        c1_1.intoArray(tmp, NR + L);
        c2_0.intoArray(tmp, 2 * NR);
        c2_1.intoArray(tmp, 2 * NR + L);
        c3_0.intoArray(tmp, 3 * NR);
        c3_1.intoArray(tmp, 3 * NR + L);
        c4_0.intoArray(tmp, 4 * NR);
        c4_1.intoArray(tmp, 4 * NR + L);
        c5_0.intoArray(tmp, 5 * NR);
        c5_1.intoArray(tmp, 5 * NR + L);
        c6_0.intoArray(tmp, 6 * NR);
        c6_1.intoArray(tmp, 6 * NR + L);
        c7_0.intoArray(tmp, 7 * NR);
        c7_1.intoArray(tmp, 7 * NR + L);
    }

    /** {@link #wide} for the first {@link #QUARTER_MR} rows of a panel (still {@link #MR} floats a step). */
    private static void wideQuarter(float[] a, int ao, float[] b, int bo, int kc, float[] tmp) {
        FloatVector z = FloatVector.broadcast(S, -0.0f);
        FloatVector c0_0 = z, c0_1 = z, c1_0 = z, c1_1 = z, c2_0 = z, c2_1 = z, c3_0 = z, c3_1 = z;
        for (int k = 0, ak = ao; k < kc; k++, ak += MR) {
            int bi = bo + k * NR;
            FloatVector b0 = FloatVector.fromArray(S, b, bi);
            FloatVector b1 = FloatVector.fromArray(S, b, bi + L);
            FloatVector x = FloatVector.broadcast(S, a[ak + 0]);
            c0_0 = x.fma(b0, c0_0);
            c0_1 = x.fma(b1, c0_1);
            x = FloatVector.broadcast(S, a[ak + 1]);
            c1_0 = x.fma(b0, c1_0);
            c1_1 = x.fma(b1, c1_1);
            x = FloatVector.broadcast(S, a[ak + 2]);
            c2_0 = x.fma(b0, c2_0);
            c2_1 = x.fma(b1, c2_1);
            x = FloatVector.broadcast(S, a[ak + 3]);
            c3_0 = x.fma(b0, c3_0);
            c3_1 = x.fma(b1, c3_1);
        }
        c0_0.intoArray(tmp, 0);
        c0_1.intoArray(tmp, L);
        c1_0.intoArray(tmp, NR);
        c1_1.intoArray(tmp, NR + L);
        c2_0.intoArray(tmp, 2 * NR);
        c2_1.intoArray(tmp, 2 * NR + L);
        c3_0.intoArray(tmp, 3 * NR);
        c3_1.intoArray(tmp, 3 * NR + L);
    }

    /**
     * {@link #wide} over the whole reduction, stored straight from the registers into C: row i's NR adjacent
     * floats at byte {@code off[i]} of {@code c} take {@code min(max(sum + add[i], lower), upper)}: the same operations,
     * in the same order, as {@link TileEpilogue}'s vector path (-0.0 adds nothing and infinite bounds clamp nothing).
     * For a short reduction (a 1 x 1 convolution of 16 channels: 16 steps) the pass through {@code tmp} and back cost as
     * much as the multiply-adds. The stores are written out here: vectors handed
     * to a method C2 does not inline are boxed (a four-line helper was not inlined into this method: node count).
     */
    static void wideInto(float[] a, int ao, float[] b, int bo, int kc, MemorySegment c, long[] off, float[] add, float lower, float upper) {
        FloatVector z = FloatVector.broadcast(S, -0.0f);
        FloatVector c0_0 = z, c0_1 = z, c1_0 = z, c1_1 = z, c2_0 = z, c2_1 = z, c3_0 = z, c3_1 = z, c4_0 = z, c4_1 = z, c5_0 = z, c5_1 = z, c6_0 = z, c6_1 = z, c7_0 = z, c7_1 = z, c8_0 = z, c8_1 = z, c9_0 = z, c9_1 = z, c10_0 = z, c10_1 = z, c11_0 = z, c11_1 = z;
        for (int k = 0, ak = ao; k < kc; k++, ak += MR) {
            int bi = bo + k * NR;
            FloatVector b0 = FloatVector.fromArray(S, b, bi);
            FloatVector b1 = FloatVector.fromArray(S, b, bi + L);
            FloatVector x = FloatVector.broadcast(S, a[ak + 0]);
            c0_0 = x.fma(b0, c0_0);
            c0_1 = x.fma(b1, c0_1);
            x = FloatVector.broadcast(S, a[ak + 1]);
            c1_0 = x.fma(b0, c1_0);
            c1_1 = x.fma(b1, c1_1);
            x = FloatVector.broadcast(S, a[ak + 2]);
            c2_0 = x.fma(b0, c2_0);
            c2_1 = x.fma(b1, c2_1);
            x = FloatVector.broadcast(S, a[ak + 3]);
            c3_0 = x.fma(b0, c3_0);
            c3_1 = x.fma(b1, c3_1);
            x = FloatVector.broadcast(S, a[ak + 4]);
            c4_0 = x.fma(b0, c4_0);
            c4_1 = x.fma(b1, c4_1);
            x = FloatVector.broadcast(S, a[ak + 5]);
            c5_0 = x.fma(b0, c5_0);
            c5_1 = x.fma(b1, c5_1);
            x = FloatVector.broadcast(S, a[ak + 6]);
            c6_0 = x.fma(b0, c6_0);
            c6_1 = x.fma(b1, c6_1);
            x = FloatVector.broadcast(S, a[ak + 7]);
            c7_0 = x.fma(b0, c7_0);
            c7_1 = x.fma(b1, c7_1);
            x = FloatVector.broadcast(S, a[ak + 8]);
            c8_0 = x.fma(b0, c8_0);
            c8_1 = x.fma(b1, c8_1);
            x = FloatVector.broadcast(S, a[ak + 9]);
            c9_0 = x.fma(b0, c9_0);
            c9_1 = x.fma(b1, c9_1);
            x = FloatVector.broadcast(S, a[ak + 10]);
            c10_0 = x.fma(b0, c10_0);
            c10_1 = x.fma(b1, c10_1);
            x = FloatVector.broadcast(S, a[ak + 11]);
            c11_0 = x.fma(b0, c11_0);
            c11_1 = x.fma(b1, c11_1);
        }
        FloatVector lo = FloatVector.broadcast(S, lower), hi = FloatVector.broadcast(S, upper);
        long half = 4L * L;
        c0_0.add(add[0]).max(lo).min(hi).intoMemorySegment(c, off[0], LE);
        c0_1.add(add[0]).max(lo).min(hi).intoMemorySegment(c, off[0] + half, LE);
        c1_0.add(add[1]).max(lo).min(hi).intoMemorySegment(c, off[1], LE);
        c1_1.add(add[1]).max(lo).min(hi).intoMemorySegment(c, off[1] + half, LE);
        c2_0.add(add[2]).max(lo).min(hi).intoMemorySegment(c, off[2], LE);
        c2_1.add(add[2]).max(lo).min(hi).intoMemorySegment(c, off[2] + half, LE);
        c3_0.add(add[3]).max(lo).min(hi).intoMemorySegment(c, off[3], LE);
        c3_1.add(add[3]).max(lo).min(hi).intoMemorySegment(c, off[3] + half, LE);
        c4_0.add(add[4]).max(lo).min(hi).intoMemorySegment(c, off[4], LE);
        c4_1.add(add[4]).max(lo).min(hi).intoMemorySegment(c, off[4] + half, LE);
        c5_0.add(add[5]).max(lo).min(hi).intoMemorySegment(c, off[5], LE);
        c5_1.add(add[5]).max(lo).min(hi).intoMemorySegment(c, off[5] + half, LE);
        c6_0.add(add[6]).max(lo).min(hi).intoMemorySegment(c, off[6], LE);
        c6_1.add(add[6]).max(lo).min(hi).intoMemorySegment(c, off[6] + half, LE);
        c7_0.add(add[7]).max(lo).min(hi).intoMemorySegment(c, off[7], LE);
        c7_1.add(add[7]).max(lo).min(hi).intoMemorySegment(c, off[7] + half, LE);
        c8_0.add(add[8]).max(lo).min(hi).intoMemorySegment(c, off[8], LE);
        c8_1.add(add[8]).max(lo).min(hi).intoMemorySegment(c, off[8] + half, LE);
        c9_0.add(add[9]).max(lo).min(hi).intoMemorySegment(c, off[9], LE);
        c9_1.add(add[9]).max(lo).min(hi).intoMemorySegment(c, off[9] + half, LE);
        c10_0.add(add[10]).max(lo).min(hi).intoMemorySegment(c, off[10], LE);
        c10_1.add(add[10]).max(lo).min(hi).intoMemorySegment(c, off[10] + half, LE);
        c11_0.add(add[11]).max(lo).min(hi).intoMemorySegment(c, off[11], LE);
        c11_1.add(add[11]).max(lo).min(hi).intoMemorySegment(c, off[11] + half, LE);
    }

    /**
     * {@link #wideInto} with a run addend: row i's NR floats at byte {@code off[i]} of {@code c} take
     * {@code min(max(sum + add[i] + run, lower), upper)}, where {@code run} is the NR adjacent floats at byte
     * {@code runOff[i]} of {@code run} (a residual): {@link TileEpilogue}'s operations in its order, for full tiles
     * without its generality. The sums go through {@code tmp}: with the stores written out beside the K loop, C1 ran
     * out of virtual registers on the method, and its tier-2 code (no vector intrinsics: every vector boxed) ran
     * ResNet-50 at 2.5 s a run until C2 compiled it.
     */
    static void wideIntoRun(float[] a, int ao, float[] b, int bo, int kc, MemorySegment c, long[] off, float[] add, MemorySegment run, long[] runOff,
                            float lower, float upper, float[] tmp) {
        wide(a, ao, b, bo, kc, tmp);
        FloatVector lo = FloatVector.broadcast(S, lower), hi = FloatVector.broadcast(S, upper);
        for (int i = 0; i < MR; i++) {
            FloatVector r0 = FloatVector.fromMemorySegment(S, run, runOff[i], LE), r1 = FloatVector.fromMemorySegment(S, run, runOff[i] + 4L * L, LE);
            FloatVector.fromArray(S, tmp, i * NR).add(add[i]).add(r0).max(lo).min(hi).intoMemorySegment(c, off[i], LE);
            FloatVector.fromArray(S, tmp, i * NR + L).add(add[i]).add(r1).max(lo).min(hi).intoMemorySegment(c, off[i] + 4L * L, LE);
        }
    }

    /**
     * {@link #wide} with B read in place from a padded image ({@link PaddedImage}): step k's NR columns are the floats
     * from {@code at[k]} of {@code img} (the tile's column plus the step's offset, computed once for the tile's rows).
     * Kept apart from {@code wide} so the packed path's loop keeps its plain panel walk. The offsets come as one array:
     * with the step's offset and the tile's column apart, C2 ran out of general registers and kept two in vector
     * registers, moving them back and forth on the multiply-add ports every step.
     */
    private static void imageTile(float[] a, int ao, float[] img, int[] at, int kc, float[] tmp) {
        FloatVector z = FloatVector.broadcast(S, -0.0f);
        FloatVector c0_0 = z, c0_1 = z, c1_0 = z, c1_1 = z, c2_0 = z, c2_1 = z, c3_0 = z, c3_1 = z, c4_0 = z, c4_1 = z, c5_0 = z, c5_1 = z, c6_0 = z, c6_1 = z, c7_0 = z, c7_1 = z, c8_0 = z, c8_1 = z, c9_0 = z, c9_1 = z, c10_0 = z, c10_1 = z, c11_0 = z, c11_1 = z;
        for (int k = 0, ak = ao; k < kc; k++, ak += MR) {
            int bi = at[k];
            FloatVector b0 = FloatVector.fromArray(S, img, bi);
            FloatVector b1 = FloatVector.fromArray(S, img, bi + L);
            FloatVector x = FloatVector.broadcast(S, a[ak + 0]);
            c0_0 = x.fma(b0, c0_0);
            c0_1 = x.fma(b1, c0_1);
            x = FloatVector.broadcast(S, a[ak + 1]);
            c1_0 = x.fma(b0, c1_0);
            c1_1 = x.fma(b1, c1_1);
            x = FloatVector.broadcast(S, a[ak + 2]);
            c2_0 = x.fma(b0, c2_0);
            c2_1 = x.fma(b1, c2_1);
            x = FloatVector.broadcast(S, a[ak + 3]);
            c3_0 = x.fma(b0, c3_0);
            c3_1 = x.fma(b1, c3_1);
            x = FloatVector.broadcast(S, a[ak + 4]);
            c4_0 = x.fma(b0, c4_0);
            c4_1 = x.fma(b1, c4_1);
            x = FloatVector.broadcast(S, a[ak + 5]);
            c5_0 = x.fma(b0, c5_0);
            c5_1 = x.fma(b1, c5_1);
            x = FloatVector.broadcast(S, a[ak + 6]);
            c6_0 = x.fma(b0, c6_0);
            c6_1 = x.fma(b1, c6_1);
            x = FloatVector.broadcast(S, a[ak + 7]);
            c7_0 = x.fma(b0, c7_0);
            c7_1 = x.fma(b1, c7_1);
            x = FloatVector.broadcast(S, a[ak + 8]);
            c8_0 = x.fma(b0, c8_0);
            c8_1 = x.fma(b1, c8_1);
            x = FloatVector.broadcast(S, a[ak + 9]);
            c9_0 = x.fma(b0, c9_0);
            c9_1 = x.fma(b1, c9_1);
            x = FloatVector.broadcast(S, a[ak + 10]);
            c10_0 = x.fma(b0, c10_0);
            c10_1 = x.fma(b1, c10_1);
            x = FloatVector.broadcast(S, a[ak + 11]);
            c11_0 = x.fma(b0, c11_0);
            c11_1 = x.fma(b1, c11_1);
        }
        c0_0.intoArray(tmp, 0);
        c0_1.intoArray(tmp, L);
        c1_0.intoArray(tmp, NR);
        c1_1.intoArray(tmp, NR + L);
        c2_0.intoArray(tmp, 2 * NR);
        c2_1.intoArray(tmp, 2 * NR + L);
        c3_0.intoArray(tmp, 3 * NR);
        c3_1.intoArray(tmp, 3 * NR + L);
        c4_0.intoArray(tmp, 4 * NR);
        c4_1.intoArray(tmp, 4 * NR + L);
        c5_0.intoArray(tmp, 5 * NR);
        c5_1.intoArray(tmp, 5 * NR + L);
        c6_0.intoArray(tmp, 6 * NR);
        c6_1.intoArray(tmp, 6 * NR + L);
        c7_0.intoArray(tmp, 7 * NR);
        c7_1.intoArray(tmp, 7 * NR + L);
        c8_0.intoArray(tmp, 8 * NR);
        c8_1.intoArray(tmp, 8 * NR + L);
        c9_0.intoArray(tmp, 9 * NR);
        c9_1.intoArray(tmp, 9 * NR + L);
        c10_0.intoArray(tmp, 10 * NR);
        c10_1.intoArray(tmp, 10 * NR + L);
        c11_0.intoArray(tmp, 11 * NR);
        c11_1.intoArray(tmp, 11 * NR + L);
    }

    /** {@link #imageTile} for the first {@link #EDGE_MR} rows of a panel (still {@link #MR} floats a step). */
    private static void imageTileEdge(float[] a, int ao, float[] img, int[] at, int kc, float[] tmp) {
        FloatVector z = FloatVector.broadcast(S, -0.0f);
        FloatVector c0_0 = z, c0_1 = z, c1_0 = z, c1_1 = z, c2_0 = z, c2_1 = z, c3_0 = z, c3_1 = z, c4_0 = z, c4_1 = z, c5_0 = z, c5_1 = z, c6_0 = z, c6_1 = z, c7_0 = z, c7_1 = z;
        for (int k = 0, ak = ao; k < kc; k++, ak += MR) {
            int bi = at[k];
            FloatVector b0 = FloatVector.fromArray(S, img, bi);
            FloatVector b1 = FloatVector.fromArray(S, img, bi + L);
            FloatVector x = FloatVector.broadcast(S, a[ak + 0]);
            c0_0 = x.fma(b0, c0_0);
            c0_1 = x.fma(b1, c0_1);
            x = FloatVector.broadcast(S, a[ak + 1]);
            c1_0 = x.fma(b0, c1_0);
            c1_1 = x.fma(b1, c1_1);
            x = FloatVector.broadcast(S, a[ak + 2]);
            c2_0 = x.fma(b0, c2_0);
            c2_1 = x.fma(b1, c2_1);
            x = FloatVector.broadcast(S, a[ak + 3]);
            c3_0 = x.fma(b0, c3_0);
            c3_1 = x.fma(b1, c3_1);
            x = FloatVector.broadcast(S, a[ak + 4]);
            c4_0 = x.fma(b0, c4_0);
            c4_1 = x.fma(b1, c4_1);
            x = FloatVector.broadcast(S, a[ak + 5]);
            c5_0 = x.fma(b0, c5_0);
            c5_1 = x.fma(b1, c5_1);
            x = FloatVector.broadcast(S, a[ak + 6]);
            c6_0 = x.fma(b0, c6_0);
            c6_1 = x.fma(b1, c6_1);
            x = FloatVector.broadcast(S, a[ak + 7]);
            c7_0 = x.fma(b0, c7_0);
            c7_1 = x.fma(b1, c7_1);
        }
        c0_0.intoArray(tmp, 0);
        c0_1.intoArray(tmp, L);
        c1_0.intoArray(tmp, NR);
        c1_1.intoArray(tmp, NR + L);
        c2_0.intoArray(tmp, 2 * NR);
        c2_1.intoArray(tmp, 2 * NR + L);
        c3_0.intoArray(tmp, 3 * NR);
        c3_1.intoArray(tmp, 3 * NR + L);
        c4_0.intoArray(tmp, 4 * NR);
        c4_1.intoArray(tmp, 4 * NR + L);
        c5_0.intoArray(tmp, 5 * NR);
        c5_1.intoArray(tmp, 5 * NR + L);
        c6_0.intoArray(tmp, 6 * NR);
        c6_1.intoArray(tmp, 6 * NR + L);
        c7_0.intoArray(tmp, 7 * NR);
        c7_1.intoArray(tmp, 7 * NR + L);
    }

    /** {@link #imageTile} for the first {@link #QUARTER_MR} rows of a panel (still {@link #MR} floats a step). */
    private static void imageTileQuarter(float[] a, int ao, float[] img, int[] at, int kc, float[] tmp) {
        FloatVector z = FloatVector.broadcast(S, -0.0f);
        FloatVector c0_0 = z, c0_1 = z, c1_0 = z, c1_1 = z, c2_0 = z, c2_1 = z, c3_0 = z, c3_1 = z;
        for (int k = 0, ak = ao; k < kc; k++, ak += MR) {
            int bi = at[k];
            FloatVector b0 = FloatVector.fromArray(S, img, bi);
            FloatVector b1 = FloatVector.fromArray(S, img, bi + L);
            FloatVector x = FloatVector.broadcast(S, a[ak + 0]);
            c0_0 = x.fma(b0, c0_0);
            c0_1 = x.fma(b1, c0_1);
            x = FloatVector.broadcast(S, a[ak + 1]);
            c1_0 = x.fma(b0, c1_0);
            c1_1 = x.fma(b1, c1_1);
            x = FloatVector.broadcast(S, a[ak + 2]);
            c2_0 = x.fma(b0, c2_0);
            c2_1 = x.fma(b1, c2_1);
            x = FloatVector.broadcast(S, a[ak + 3]);
            c3_0 = x.fma(b0, c3_0);
            c3_1 = x.fma(b1, c3_1);
        }
        c0_0.intoArray(tmp, 0);
        c0_1.intoArray(tmp, L);
        c1_0.intoArray(tmp, NR);
        c1_1.intoArray(tmp, NR + L);
        c2_0.intoArray(tmp, 2 * NR);
        c2_1.intoArray(tmp, 2 * NR + L);
        c3_0.intoArray(tmp, 3 * NR);
        c3_1.intoArray(tmp, 3 * NR + L);
    }

    /** {@link #narrow} with B read in place from a padded image, as {@link #imageTile}. */
    private static void imageTileNarrow(float[] a, int ao, float[] img, int[] at, int kc, float[] tmp) {
        FloatVector z = FloatVector.broadcast(S, -0.0f);
        FloatVector c0_0 = z, c1_0 = z, c2_0 = z, c3_0 = z, c4_0 = z, c5_0 = z, c6_0 = z, c7_0 = z, c8_0 = z, c9_0 = z, c10_0 = z, c11_0 = z;
        for (int k = 0, ak = ao; k < kc; k++, ak += MR) {
            int bi = at[k];
            FloatVector b0 = FloatVector.fromArray(S, img, bi);
            FloatVector x = FloatVector.broadcast(S, a[ak + 0]);
            c0_0 = x.fma(b0, c0_0);
            x = FloatVector.broadcast(S, a[ak + 1]);
            c1_0 = x.fma(b0, c1_0);
            x = FloatVector.broadcast(S, a[ak + 2]);
            c2_0 = x.fma(b0, c2_0);
            x = FloatVector.broadcast(S, a[ak + 3]);
            c3_0 = x.fma(b0, c3_0);
            x = FloatVector.broadcast(S, a[ak + 4]);
            c4_0 = x.fma(b0, c4_0);
            x = FloatVector.broadcast(S, a[ak + 5]);
            c5_0 = x.fma(b0, c5_0);
            x = FloatVector.broadcast(S, a[ak + 6]);
            c6_0 = x.fma(b0, c6_0);
            x = FloatVector.broadcast(S, a[ak + 7]);
            c7_0 = x.fma(b0, c7_0);
            x = FloatVector.broadcast(S, a[ak + 8]);
            c8_0 = x.fma(b0, c8_0);
            x = FloatVector.broadcast(S, a[ak + 9]);
            c9_0 = x.fma(b0, c9_0);
            x = FloatVector.broadcast(S, a[ak + 10]);
            c10_0 = x.fma(b0, c10_0);
            x = FloatVector.broadcast(S, a[ak + 11]);
            c11_0 = x.fma(b0, c11_0);
        }
        c0_0.intoArray(tmp, 0);
        c1_0.intoArray(tmp, NR);
        c2_0.intoArray(tmp, 2 * NR);
        c3_0.intoArray(tmp, 3 * NR);
        c4_0.intoArray(tmp, 4 * NR);
        c5_0.intoArray(tmp, 5 * NR);
        c6_0.intoArray(tmp, 6 * NR);
        c7_0.intoArray(tmp, 7 * NR);
        c8_0.intoArray(tmp, 8 * NR);
        c9_0.intoArray(tmp, 9 * NR);
        c10_0.intoArray(tmp, 10 * NR);
        c11_0.intoArray(tmp, 11 * NR);
    }

    /**
     * Columns {@code [j, j + len)} of the tile's {@code mr} rows in {@code tmp} into C columns {@code cCol[n..n+len)}:
     * stored (the first K block) or added; whole vectors where the columns are adjacent, the rest one by one.
     */
    static void storeRun(float[] tmp, int j, MemorySegment c, long cBase, long[] cRow, int m, int mr, long[] cCol, int n, int len,
                         boolean contiguous, boolean first) {
        for (int i = 0; i < mr; i++) {
            long row = cBase + cRow[m + i];
            int t = i * NR + j;
            if (contiguous) {
                storeRow(tmp, t, c, 4 * (row + cCol[n]), len, first);
                continue;
            }
            for (int x = 0; x < len; x++) {
                long off = 4 * (row + cCol[n + x]);
                c.set(F, off, first ? tmp[t + x] : c.get(F, off) + tmp[t + x]);
            }
        }
    }

    /** {@code tmp[t..t+len)} into the adjacent floats of C from byte {@code off}: stored, or added when not {@code first}. */
    static void storeRow(float[] tmp, int t, MemorySegment c, long off, int len, boolean first) {
        int x = 0;
        for (; x <= len - L; x += L) {
            FloatVector v = FloatVector.fromArray(S, tmp, t + x);
            if (!first) v = FloatVector.fromMemorySegment(S, c, off + 4L * x, LE).add(v);
            v.intoMemorySegment(c, off + 4L * x, LE);
        }
        if (x < len) {
            // The rest as one vector through the staging floats: element by element, each access checked its
            // segment's session and bounds (an image tile's runs of 7 to 55 columns are mostly rest: ResNet-50 spent
            // 15 % of its samples there). No masked load or store: C2 did not always intrinsify them here, and
            // then every vector of the tiles was an allocation (ZeroAllocationTest).
            int n = len - x;
            FloatVector v = FloatVector.fromArray(S, tmp, t + x);
            if (!first) v = loadStaged(c, off + 4L * x, n, tmp).add(v);
            storeStaged(v, c, off + 4L * x, n, tmp);
        }
    }

    /** {@code n} adjacent floats from byte {@code off} of {@code seg} as the first lanes of a vector (the rest stale). */
    static FloatVector loadStaged(MemorySegment seg, long off, int n, float[] tmp) {
        MemorySegment.copy(seg, F, off, tmp, STAGE, n);
        return FloatVector.fromArray(S, tmp, STAGE);
    }

    /** The first {@code n} lanes of {@code v} into the adjacent floats of {@code seg} from byte {@code off}. */
    static void storeStaged(FloatVector v, MemorySegment seg, long off, int n, float[] tmp) {
        v.intoArray(tmp, STAGE);
        MemorySegment.copy(tmp, STAGE, seg, F, off, n);
    }

    /** Row {@code src[from..from+kc)} of A into its place in a panel from {@code at} ({@link #packedA}: MR floats apart). */
    static void dealRow(float[] src, int from, int kc, float[] a, int at) {
        for (int k = 0, d = at; k < kc; k++, d += MR) a[d] = src[from + k];
    }

    /** The MR x L tile of the panel's first vector of columns into {@code tmp} (row i at {@code i * NR}). */
    private static void narrow(float[] a, int ao, float[] b, int bo, int kc, float[] tmp) {
        FloatVector z = FloatVector.broadcast(S, -0.0f);
        FloatVector c0_0 = z, c1_0 = z, c2_0 = z, c3_0 = z, c4_0 = z, c5_0 = z, c6_0 = z, c7_0 = z, c8_0 = z, c9_0 = z, c10_0 = z, c11_0 = z;
        for (int k = 0, ak = ao; k < kc; k++, ak += MR) {
            int bi = bo + k * NR;
            FloatVector b0 = FloatVector.fromArray(S, b, bi);
            FloatVector x = FloatVector.broadcast(S, a[ak + 0]);
            c0_0 = x.fma(b0, c0_0);
            x = FloatVector.broadcast(S, a[ak + 1]);
            c1_0 = x.fma(b0, c1_0);
            x = FloatVector.broadcast(S, a[ak + 2]);
            c2_0 = x.fma(b0, c2_0);
            x = FloatVector.broadcast(S, a[ak + 3]);
            c3_0 = x.fma(b0, c3_0);
            x = FloatVector.broadcast(S, a[ak + 4]);
            c4_0 = x.fma(b0, c4_0);
            x = FloatVector.broadcast(S, a[ak + 5]);
            c5_0 = x.fma(b0, c5_0);
            x = FloatVector.broadcast(S, a[ak + 6]);
            c6_0 = x.fma(b0, c6_0);
            x = FloatVector.broadcast(S, a[ak + 7]);
            c7_0 = x.fma(b0, c7_0);
            x = FloatVector.broadcast(S, a[ak + 8]);
            c8_0 = x.fma(b0, c8_0);
            x = FloatVector.broadcast(S, a[ak + 9]);
            c9_0 = x.fma(b0, c9_0);
            x = FloatVector.broadcast(S, a[ak + 10]);
            c10_0 = x.fma(b0, c10_0);
            x = FloatVector.broadcast(S, a[ak + 11]);
            c11_0 = x.fma(b0, c11_0);
        }
        c0_0.intoArray(tmp, 0);
        c1_0.intoArray(tmp, NR);
        c2_0.intoArray(tmp, 2 * NR);
        c3_0.intoArray(tmp, 3 * NR);
        c4_0.intoArray(tmp, 4 * NR);
        c5_0.intoArray(tmp, 5 * NR);
        c6_0.intoArray(tmp, 6 * NR);
        c7_0.intoArray(tmp, 7 * NR);
        c8_0.intoArray(tmp, 8 * NR);
        c9_0.intoArray(tmp, 9 * NR);
        c10_0.intoArray(tmp, 10 * NR);
        c11_0.intoArray(tmp, 11 * NR);
    }

    /** The lanes of a packed A step's MR rows in a vector. */
    private static final VectorMask<Float> A_STEP = S.indexInRange(0, MR);

    /**
     * {@link #narrow} and one column more: a panel of {@code L + 1} valid columns (a 7 x 7 image's 49 = 32 + 17), whose
     * last column is summed for all MR rows at once, a step of A (MR rows, adjacent in the packed panel) times that
     * column's element: 13 multiply-adds a step instead of {@link #wide}'s 24 (or {@link #wideEdge}'s 16; a tile of at most
     * 4 valid rows keeps {@link #wideQuarter}'s 8). Each sum is the same chain as
     * {@code wide}'s (the same products, in the same order), so the floats are the same.
     */
    private static void narrowAndOne(float[] a, int ao, float[] b, int bo, int kc, float[] tmp) {
        FloatVector z = FloatVector.broadcast(S, -0.0f);
        FloatVector c0_0 = z, c1_0 = z, c2_0 = z, c3_0 = z, c4_0 = z, c5_0 = z, c6_0 = z, c7_0 = z, c8_0 = z, c9_0 = z, c10_0 = z, c11_0 = z, last = z;
        for (int k = 0, ak = ao; k < kc; k++, ak += MR) {
            int bi = bo + k * NR;
            FloatVector b0 = FloatVector.fromArray(S, b, bi);
            last = FloatVector.fromArray(S, a, ak, A_STEP).fma(FloatVector.broadcast(S, b[bi + L]), last);
            FloatVector x = FloatVector.broadcast(S, a[ak + 0]);
            c0_0 = x.fma(b0, c0_0);
            x = FloatVector.broadcast(S, a[ak + 1]);
            c1_0 = x.fma(b0, c1_0);
            x = FloatVector.broadcast(S, a[ak + 2]);
            c2_0 = x.fma(b0, c2_0);
            x = FloatVector.broadcast(S, a[ak + 3]);
            c3_0 = x.fma(b0, c3_0);
            x = FloatVector.broadcast(S, a[ak + 4]);
            c4_0 = x.fma(b0, c4_0);
            x = FloatVector.broadcast(S, a[ak + 5]);
            c5_0 = x.fma(b0, c5_0);
            x = FloatVector.broadcast(S, a[ak + 6]);
            c6_0 = x.fma(b0, c6_0);
            x = FloatVector.broadcast(S, a[ak + 7]);
            c7_0 = x.fma(b0, c7_0);
            x = FloatVector.broadcast(S, a[ak + 8]);
            c8_0 = x.fma(b0, c8_0);
            x = FloatVector.broadcast(S, a[ak + 9]);
            c9_0 = x.fma(b0, c9_0);
            x = FloatVector.broadcast(S, a[ak + 10]);
            c10_0 = x.fma(b0, c10_0);
            x = FloatVector.broadcast(S, a[ak + 11]);
            c11_0 = x.fma(b0, c11_0);
        }
        c0_0.intoArray(tmp, 0);
        c1_0.intoArray(tmp, NR);
        c2_0.intoArray(tmp, 2 * NR);
        c3_0.intoArray(tmp, 3 * NR);
        c4_0.intoArray(tmp, 4 * NR);
        c5_0.intoArray(tmp, 5 * NR);
        c6_0.intoArray(tmp, 6 * NR);
        c7_0.intoArray(tmp, 7 * NR);
        c8_0.intoArray(tmp, 8 * NR);
        c9_0.intoArray(tmp, 9 * NR);
        c10_0.intoArray(tmp, 10 * NR);
        c11_0.intoArray(tmp, 11 * NR);
        // the last column's sums, one per row, through the staging vector to column L of each row
        last.intoArray(tmp, STAGE);
        for (int i = 0; i < MR; i++) tmp[i * NR + L] = tmp[STAGE + i];
    }

    /** The tile's {@code mr x nr} valid part from {@code tmp} into C: stored (the first K block) or added. */
    static void store(MemorySegment c, long cBase, long[] cRow, int m, int mr, long[] cCol, int n, int nr, boolean contiguous,
                              boolean first, float[] tmp) {
        if (contiguous && nr == NR) {
            for (int i = 0; i < mr; i++) storeFull(tmp, i * NR, c, 4 * (cBase + cRow[m + i] + cCol[n]), first);
        } else if (contiguous) {
            for (int i = 0; i < mr; i++) storeMasked(tmp, i * NR, c, 4 * (cBase + cRow[m + i] + cCol[n]), nr, first);
        } else {
            for (int i = 0; i < mr; i++) {
                long row = cBase + cRow[m + i];
                for (int j = 0; j < nr; j++) {
                    long off = 4 * (row + cCol[n + j]);
                    c.set(F, off, first ? tmp[i * NR + j] : c.get(F, off) + tmp[i * NR + j]);
                }
            }
        }
    }

    /** One row of NR adjacent C elements: {@code C = t} or {@code C += t}. */
    private static void storeFull(float[] tmp, int t, MemorySegment c, long off, boolean first) {
        FloatVector v0 = FloatVector.fromArray(S, tmp, t), v1 = FloatVector.fromArray(S, tmp, t + L);
        if (!first) {
            v0 = FloatVector.fromMemorySegment(S, c, off, LE).add(v0);
            v1 = FloatVector.fromMemorySegment(S, c, off + 4L * L, LE).add(v1);
        }
        v0.intoMemorySegment(c, off, LE);
        v1.intoMemorySegment(c, off + 4L * L, LE);
    }

    /** The first {@code nr} elements of a row (an edge tile). */
    private static void storeMasked(float[] tmp, int t, MemorySegment c, long off, int nr, boolean first) {
        VectorMask<Float> m0 = S.indexInRange(0, nr), m1 = S.indexInRange(L, nr);
        FloatVector v0 = FloatVector.fromArray(S, tmp, t), v1 = FloatVector.fromArray(S, tmp, t + L);
        if (!first) {
            v0 = FloatVector.fromMemorySegment(S, c, off, LE, m0).add(v0);
            v1 = FloatVector.fromMemorySegment(S, c, off + 4L * L, LE, m1).add(v1);
        }
        v0.intoMemorySegment(c, off, LE, m0);
        v1.intoMemorySegment(c, off + 4L * L, LE, m1);
    }
}

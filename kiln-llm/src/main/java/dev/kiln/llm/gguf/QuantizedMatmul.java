package dev.kiln.llm.gguf;

import dev.kiln.cpu.PanelProduct;
import dev.kiln.runtime.WorkerPool;
import jdk.incubator.vector.ByteVector;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.IntVector;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorSpecies;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.util.stream.IntStream;

/**
 * Products with block-quantised matrices read in place: {@code out (rows, n) = x (rows, k) · wᵀ} for {@code w} (n, k) of
 * a {@link GgmlType} in ggml's layout (each row whole blocks), and the rows of {@code w} a list of ids selects
 * (an embedding lookup). The f32 matrix is never formed.
 *
 * <p><b>Few rows</b> (decode): each output is a dot product over the row's blocks, memory-bound. Q8_0 and Q4_0 are
 * unpacked in vector registers (bytes widened to float lanes, one FMA per value, the block's scale applied once to its
 * partial sum); the other types dequantise one row of {@code w} at a time into a small scratch array with
 * {@link Dequantize} (bit for bit ggml's values) and take its dot products with every row of {@code x}. <b>Many rows</b>
 * (prefill): panels of 64 rows of {@code w} are dequantised (1,024 values of each at a time) into the packed GEMM's B
 * panels and multiplied with the rows of {@code x} by its register tile ({@link PanelProduct}, 8 rows x 2 vectors), so
 * each weight is read from memory and dequantised once per call. Outputs are split over the {@link WorkerPool} when the work is large.
 *
 * <p>Numerics: every product is f32 with f32 accumulation in vector lanes; sums are reassociated (lanes, blocks), as
 * Kiln's float reductions may be, so results differ from dequantise-then-multiply by rounding only.
 */
public final class QuantizedMatmul {
    private QuantizedMatmul() {}

    private static final VectorSpecies<Float> F = FloatVector.SPECIES_PREFERRED;
    private static final int L = F.length();
    /** Bytes species with one lane per float lane (for the fused Q8_0/Q4_0 paths); null when no such species exists. */
    private static final VectorSpecies<Byte> B = L == 16 ? ByteVector.SPECIES_128 : L == 8 ? ByteVector.SPECIES_64 : null;
    private static final VectorSpecies<Integer> I = F.withLanes(int.class);
    /** The floats -8..7 (a Q4_0 nibble's value) as int bits, for {@link #nibbleValues}; null where a vector holds fewer than 16 lanes. */
    private static final IntVector NIBBLE_VALUES = L == 16
            ? IntVector.fromArray(I, IntStream.range(0, 16).map(i -> Float.floatToRawIntBits(i - 8)).toArray(), 0) : null;
    private static final ByteOrder LE = ByteOrder.LITTLE_ENDIAN, NATIVE = ByteOrder.nativeOrder();
    private static final ValueLayout.OfFloat X = ValueLayout.JAVA_FLOAT_UNALIGNED;
    private static final ValueLayout.OfLong I64 = ValueLayout.JAVA_LONG_UNALIGNED;
    private static final ValueLayout.OfInt I32 = ValueLayout.JAVA_INT_UNALIGNED;
    /** Rows of x up to which the products are dot products per row; above, panels of w are dequantised and shared. */
    private static final int DOT_ROWS = 3;
    /**
     * The same for Q4_0, whose dot products take four rows of x per block of w widened once ({@link #dotQ4_0Rows4}):
     * a batched decode step of up to eight sequences. Taken over from Q8_0's four-rows path, which measured (8,192 x 2,048
     * on 2 threads of an Intel Xeon) 4 rows 12 ms and 8 rows 28 ms against 45 and 42 ms through the panels; not measured
     * for Q4_0 itself.
     */
    private static final int Q4_0_DOT_ROWS = 8;
    /**
     * The same for Q8_0, whose dot products meet four rows of w with four of x in registers ({@link #dotQ8_0Tile}): the
     * same products, 16 rows 39 ms against 59 through the panels, 32 rows about even, 64 rows 145 against 67.
     */
    private static final int Q8_0_DOT_ROWS = 24;
    /**
     * Rows of w dequantised together on the many-rows path (a unit of work): a panel of 64 rows of {@link #KC} values, 64 KB
     * as f32 in the GEMM's B layout, which stays in L2 while the tile sweeps x's rows eight at a time.
     */
    private static final int PANEL = 64;
    /**
     * Values of k per pass over a panel (a multiple of every block size: 256 for the K-quants). The panel and the pass of
     * x (rows x 256) share L2 (SmolLM-135M shapes, prefill of 256 rows, the block products on a loaded host: 1,024 values
     * 576 ms, 512 values 550 ms, 256 values 402 ms; the 4 x 4 tile before them 753 ms).
     */
    private static final int KC = 256;
    /** Below this many multiply-adds a call runs on the calling thread. */
    private static final long PARALLEL_WORK = 1L << 17;

    private static final ThreadLocal<float[]> SCRATCH = ThreadLocal.withInitial(() -> new float[0]);
    /** x packed by the calling thread, read by every worker of the call. */
    private static final ThreadLocal<float[]> X_COPY = ThreadLocal.withInitial(() -> new float[0]);
    /** One row of x on its way into {@link #X_COPY}'s tile layout. */
    private static final ThreadLocal<float[]> X_ROW = ThreadLocal.withInitial(() -> new float[0]);
    /** B panels of {@link #tiles}, one array per thread. */
    private static final ThreadLocal<float[]> PANELS = ThreadLocal.withInitial(() -> new float[0]);
    private static final ThreadLocal<float[]> TILE = ThreadLocal.withInitial(PanelProduct::newTile);

    /** The thread's array of {@code holder}, grown to at least {@code n} floats. */
    private static float[] atLeast(ThreadLocal<float[]> holder, int n) {
        float[] s = holder.get();
        if (s.length < n) holder.set(s = new float[n]);
        return s;
    }

    /**
     * {@code out[r, j] = sum_i x[r, i] * w[j, i]} for the first {@code rows} rows of {@code x}.
     *
     * @param type the type of {@code w}: Q8_0, Q4_0, Q4_1, Q4_K, Q5_K or Q6_K
     * @param w    n rows of {@code type.rowBytes(k)} bytes each
     * @param x    at least rows * k f32 values, row-major, native order
     * @param out  at least rows * n f32 values
     * @throws IllegalArgumentException if the type is not a supported block type, k is not a multiple of its block size
     *                                  or a segment is too small
     */
    public static void multiply(GgmlType type, MemorySegment w, int n, int k, MemorySegment x, int rows, MemorySegment out) {
        multiply(type, w, n, k, x, rows, out, null);
    }

    /**
     * {@link #multiply(GgmlType, MemorySegment, int, int, MemorySegment, int, MemorySegment) multiply}, with the dot
     * products of a few rows run by {@code natives} where it takes them (see {@link NativeBlockProducts}).
     *
     * @param natives the native products of the CLANG device, or null for the Vector API throughout
     */
    public static void multiply(GgmlType type, MemorySegment w, int n, int k, MemorySegment x, int rows, MemorySegment out,
                                NativeBlockProducts natives) {
        multiply(type, w, n, k, x, rows, out, natives, false);
    }

    /**
     * {@link #multiply(GgmlType, MemorySegment, int, int, MemorySegment, int, MemorySegment, NativeBlockProducts)
     * multiply}, with w {@link NativeBlockProducts#interleaved interleaved} by {@code natives} when {@code interleaved}.
     *
     * @throws IllegalStateException if w is interleaved but {@code natives} cannot read it so (x in f32, or another type)
     */
    static void multiply(GgmlType type, MemorySegment w, int n, int k, MemorySegment x, int rows, MemorySegment out, NativeBlockProducts natives,
                         boolean interleaved) {
        check(type, w, n, k);
        if (interleaved && (natives == null || !natives.quantizedActivations() || type != GgmlType.Q8_0 && type != GgmlType.Q4_0)) {
            throw new IllegalStateException("quantized matmul: " + type + " (" + n + ", " + k + ") is interleaved, but these products do not read it so");
        }
        if (rows < 0 || x.byteSize() < 4L * rows * k || out.byteSize() < 4L * rows * n) {
            throw new IllegalArgumentException("quantized matmul: " + rows + " rows of " + k + " -> " + n + " do not fit x (" + x.byteSize()
                    + " bytes) and out (" + out.byteSize() + " bytes)");
        }
        if (rows == 0 || n == 0) return;
        long rowBytes = type.rowBytes(k);
        if (natives != null && (natives.handles(type, rows) || natives.handlesGemm(type, rows))) {
            nativeProducts(natives, type, w, rowBytes, n, k, x, rows, out, natives.handlesGemm(type, rows, interleaved), interleaved);
            return;
        }
        boolean fused = B != null && (type == GgmlType.Q8_0 ? rows <= Q8_0_DOT_ROWS : type == GgmlType.Q4_0 && rows <= Q4_0_DOT_ROWS);
        boolean dots = fused || rows <= DOT_ROWS;
        int units = dots ? n : (n + PANEL - 1) / PANEL;
        int parts = parts((long) rows * n * k, units);
        float[] ap = dots ? null : packRows(x, rows, k);
        float[] xa = fused ? rowsOnHeap(x, rows * k) : null;
        WorkerPool.forRanges(units, parts, (from, to) -> {
            if (fused) fusedRows(type, w, rowBytes, (int) from, (int) to, k, xa, rows, n, out);
            else if (dots) dequantizedRows(type, w, rowBytes, (int) from, (int) to, k, x, rows, n, out);
            else tiles(type, w, rowBytes, (int) from, (int) to, k, ap, rows, n, out);
        });
    }

    /** Shares of {@code units} for a call of {@code work} multiply-adds: one below {@link #PARALLEL_WORK} or on one worker. */
    private static int parts(long work, long units) {
        return work < PARALLEL_WORK || WorkerPool.size() <= 1 ? 1 : WorkerPool.balancedShares(units);
    }

    /**
     * The products by {@code natives}, split over the workers as the Vector API's are: as dot products by rows of w, or
     * ({@code gemm}) x packed once by the calling thread and the GEMM's panels of w split, each worker with its own scratch.
     */
    private static void nativeProducts(NativeBlockProducts natives, GgmlType type, MemorySegment w, long rowBytes, int n, int k, MemorySegment x,
                                       int rows, MemorySegment out, boolean gemm, boolean interleaved) {
        // interleaved rows go by their groups of 16 (a range must start at one), the GEMM's by its panels
        int unit = gemm ? natives.panelRows() : interleaved ? NativeBlockProducts.INTERLEAVED_ROWS : 1, units = (n + unit - 1) / unit;
        int parts = parts((long) rows * n * k, units);
        long outBytes = 4L * rows * n;
        // native code reads native memory only: a segment on the Java heap goes through a copy (shared: workers read it);
        // decode's products, all native, take no arena
        try (Arena staging = !gemm && w.isNative() && x.isNative() && out.isNative() ? null : Arena.ofShared()) {
            MemorySegment wn = NativeBlockProducts.nativeOf(w, rowBytes * n, staging);
            MemorySegment on = out.isNative() ? out : staging.allocate(outBytes, 64);
            if (gemm) {
                MemorySegment packed = natives.packRows(NativeBlockProducts.nativeOf(x, 4L * rows * k, staging), rows, k, staging);
                WorkerPool.forRanges(units, parts, (from, to) -> {
                    try (Arena scratch = Arena.ofConfined()) {
                        natives.gemm(type, wn, rowBytes, (int) from * unit, (int) Math.min((long) to * unit, n), k, packed, rows, n, on,
                                scratch.allocate(natives.scratchBytes(), 64), interleaved);
                    }
                });
            } else {
                MemorySegment xf = NativeBlockProducts.nativeOf(x, 4L * rows * k, staging);
                MemorySegment xn = natives.quantizedActivations() ? natives.quantized(xf, (long) rows * k) : xf;
                WorkerPool.forRanges(units, parts, (from, to) -> natives.products(type, wn, rowBytes, (int) from * unit, (int) Math.min((long) to * unit, n), k,
                        xn, rows, n, on, interleaved));
            }
            if (on != out) MemorySegment.copy(on, 0, out, 0, outBytes);
        }
    }

    /**
     * The first {@code count} floats of {@code x} (a few rows, a few KB at decode) copied into an array the dot products
     * read: loads from a native segment check the segment's session on every access unless C2 hoists the check, and in
     * some runs it did not (after a deoptimisation of the dot products, half of decode's product time went to checks).
     */
    private static float[] rowsOnHeap(MemorySegment x, int count) {
        float[] a = new float[count]; // a fresh array: a worker waiting in this call may run another product meanwhile
        MemorySegment.copy(x, X, 0, a, 0, count);
        return a;
    }

    /**
     * Row {@code ids[i]} of {@code w} (n, k), dequantised, into row {@code i} of {@code out}, for {@code count} ids (i32).
     *
     * @throws IndexOutOfBoundsException naming the id when one is outside {@code [0, n)}
     */
    public static void gatherRows(GgmlType type, MemorySegment w, int n, int k, MemorySegment ids, int count, MemorySegment out) {
        check(type, w, n, k);
        long rowBytes = type.rowBytes(k);
        float[] row = atLeast(SCRATCH, k);
        for (int i = 0; i < count; i++) {
            int id = ids.getAtIndex(I32, i);
            if (id < 0 || id >= n) throw new IndexOutOfBoundsException("embedding: token id " + id + " (position " + i + ") is outside [0, " + n + ")");
            Dequantize.row(type, w.asSlice(id * rowBytes, rowBytes), row, 0, k);
            MemorySegment.copy(row, 0, out, X, 4L * i * k, k);
        }
    }

    /**
     * The number of active rows stored as an i64 at the start of {@code rows} (a host step's {@link BlockTensor#count}),
     * checked against {@code max}.
     */
    public static int activeRows(MemorySegment rows, int max) {
        long r = rows.get(I64, 0);
        if (r < 0 || r > max) throw new IllegalStateException("host step: " + r + " active rows, expected 0 to " + max);
        return (int) r;
    }

    private static void check(GgmlType type, MemorySegment w, int n, int k) {
        switch (type) {
            case Q8_0, Q4_0, Q4_1, Q4_K, Q5_K, Q6_K -> { }
            default -> throw new IllegalArgumentException("quantized matmul: " + type + " is not a supported block type");
        }
        if (k % type.blockSize() != 0) throw new IllegalArgumentException("quantized matmul: rows of " + k + " values are not whole " + type + " blocks");
        if (w.byteSize() < type.rowBytes(k) * n) {
            throw new IllegalArgumentException("quantized matmul: " + n + " rows of " + type + " take " + type.rowBytes(k) * n + " bytes, w has " + w.byteSize());
        }
    }

    // ---------------------------------------------------------------- few rows: dot products

    private static void fusedRows(GgmlType type, MemorySegment w, long rowBytes, int from, int to, int k, float[] x, int rows, int n,
                                  MemorySegment out) {
        int blocks = k / 32;
        int j = from;
        if (type == GgmlType.Q8_0 && rows < 4) {
            // four rows of w at a time, a quarter of the range apart: four streams from memory, each followed by the hardware
            // prefetchers, where one row after another was one stream (Java has no prefetch instruction; block_products.c
            // prefetches). Each vector of x is loaded once for the four: a row of 8,192 values re-read x, 32 KB, from L2
            // for every row. An Intel Xeon (AVX-512), rows of 2,048 from memory: one thread 6.2 -> 10.6 GB/s, two 11 -> 15
            int q = (to - from) / 4;
            for (int i = from; i < from + q; i++) {
                for (int r = 0; r < rows; r++) dotQ8_0x4(w, i * rowBytes, q * rowBytes, blocks, x, r * k, out, (long) r * n + i, q);
            }
            j = from + 4 * q;
        }
        if (type == GgmlType.Q8_0 && rows >= 4) {
            // four rows of w by four of x in registers: x read once for four rows of w, w widened once for four of x
            for (; j + 4 <= to; j += 4) {
                int r = 0;
                for (; r + 4 <= rows; r += 4) dotQ8_0Tile(w, j * rowBytes, rowBytes, blocks, x, r * k, k, out, (long) r * n + j, n);
                for (; r < rows; r++) dotQ8_0x4(w, j * rowBytes, rowBytes, blocks, x, r * k, out, (long) r * n + j, 1);
            }
        }
        for (; j < to; j++) {
            long at = j * rowBytes;
            int r = 0;
            for (; r + 4 <= rows; r += 4) { // each block of w widened once for four rows of x
                if (type == GgmlType.Q8_0) dotQ8_0Rows4(w, at, blocks, x, r * k, k, out, (long) r * n + j, n);
                else dotQ4_0Rows4(w, at, blocks, x, r * k, k, out, (long) r * n + j, n);
            }
            for (; r < rows; r++) {
                int xAt = r * k;
                float v = type == GgmlType.Q8_0 ? dotQ8_0(w, at, blocks, x, xAt) : dotQ4_0(w, at, blocks, x, xAt);
                out.setAtIndex(X, (long) r * n + j, v);
            }
        }
    }

    /**
     * {@link #dotQ8_0} of one row of w with four rows of x ({@code k} apart from {@code xAt}), into
     * {@code out[outIndex + r * n]}: each block widened to floats once for the four (a batched decode step's rows).
     */
    private static void dotQ8_0Rows4(MemorySegment w, long at, int blocks, float[] x, int xAt, int k, MemorySegment out, long outIndex, long n) {
        FloatVector a0 = FloatVector.zero(F), a1 = a0, a2 = a0, a3 = a0;
        int x0 = xAt, x1 = x0 + k, x2 = x1 + k, x3 = x2 + k;
        for (int b = 0; b < blocks; b++, at += 34, x0 += 32, x1 += 32, x2 += 32, x3 += 32) {
            FloatVector q = q8(w, at + 2);
            FloatVector p0 = q.mul(FloatVector.fromArray(F, x, x0)), p1 = q.mul(FloatVector.fromArray(F, x, x1));
            FloatVector p2 = q.mul(FloatVector.fromArray(F, x, x2)), p3 = q.mul(FloatVector.fromArray(F, x, x3));
            for (int p = L; p < 32; p += L) {
                q = q8(w, at + 2 + p);
                p0 = q.fma(FloatVector.fromArray(F, x, x0 + p), p0);
                p1 = q.fma(FloatVector.fromArray(F, x, x1 + p), p1);
                p2 = q.fma(FloatVector.fromArray(F, x, x2 + p), p2);
                p3 = q.fma(FloatVector.fromArray(F, x, x3 + p), p3);
            }
            FloatVector d = FloatVector.broadcast(F, Float.float16ToFloat(w.get(Dequantize.I16_LE, at)));
            a0 = p0.fma(d, a0);
            a1 = p1.fma(d, a1);
            a2 = p2.fma(d, a2);
            a3 = p3.fma(d, a3);
        }
        out.setAtIndex(X, outIndex, a0.reduceLanes(VectorOperators.ADD));
        out.setAtIndex(X, outIndex + n, a1.reduceLanes(VectorOperators.ADD));
        out.setAtIndex(X, outIndex + 2 * n, a2.reduceLanes(VectorOperators.ADD));
        out.setAtIndex(X, outIndex + 3 * n, a3.reduceLanes(VectorOperators.ADD));
    }

    /**
     * Four rows of w ({@code rowBytes} apart from byte {@code at}) with four rows of x ({@code k} apart from {@code xAt}):
     * sixteen sums in registers, each block of w widened and scaled once for the four rows of x and each vector of x
     * loaded once for the four rows of w, into {@code out[outIndex + r * n + c]} for x row r and w row c. A batched
     * decode step of several sequences is compute-bound (every weight meets every row); this halves the work a product
     * does per weight and row against one row of w at a time, whose rows of x overflowed L1 from eight rows on. The sums
     * are stored here, not by a helper taking the vectors: C2 did not inline it into this large method and boxed them
     * (a 16-token prefill 6x slower).
     */
    private static void dotQ8_0Tile(MemorySegment w, long at, long rowBytes, int blocks, float[] x, int xAt, int k, MemorySegment out,
                                    long outIndex, long n) {
        FloatVector c00 = FloatVector.zero(F), c01 = c00, c02 = c00, c03 = c00, c10 = c00, c11 = c00, c12 = c00, c13 = c00;
        FloatVector c20 = c00, c21 = c00, c22 = c00, c23 = c00, c30 = c00, c31 = c00, c32 = c00, c33 = c00;
        long at1 = at + rowBytes, at2 = at1 + rowBytes, at3 = at2 + rowBytes;
        int x0 = xAt;
        for (int b = 0; b < blocks; b++, at += 34, at1 += 34, at2 += 34, at3 += 34, x0 += 32) {
            FloatVector d0 = FloatVector.broadcast(F, Float.float16ToFloat(w.get(Dequantize.I16_LE, at)));
            FloatVector d1 = FloatVector.broadcast(F, Float.float16ToFloat(w.get(Dequantize.I16_LE, at1)));
            FloatVector d2 = FloatVector.broadcast(F, Float.float16ToFloat(w.get(Dequantize.I16_LE, at2)));
            FloatVector d3 = FloatVector.broadcast(F, Float.float16ToFloat(w.get(Dequantize.I16_LE, at3)));
            for (int p = 0; p < 32; p += L) {
                FloatVector q0 = q8(w, at + 2 + p).mul(d0), q1 = q8(w, at1 + 2 + p).mul(d1);
                FloatVector q2 = q8(w, at2 + 2 + p).mul(d2), q3 = q8(w, at3 + 2 + p).mul(d3);
                int i = x0 + p;
                FloatVector v = FloatVector.fromArray(F, x, i);
                c00 = q0.fma(v, c00); c01 = q1.fma(v, c01); c02 = q2.fma(v, c02); c03 = q3.fma(v, c03);
                v = FloatVector.fromArray(F, x, i + k);
                c10 = q0.fma(v, c10); c11 = q1.fma(v, c11); c12 = q2.fma(v, c12); c13 = q3.fma(v, c13);
                v = FloatVector.fromArray(F, x, i + 2 * k);
                c20 = q0.fma(v, c20); c21 = q1.fma(v, c21); c22 = q2.fma(v, c22); c23 = q3.fma(v, c23);
                v = FloatVector.fromArray(F, x, i + 3 * k);
                c30 = q0.fma(v, c30); c31 = q1.fma(v, c31); c32 = q2.fma(v, c32); c33 = q3.fma(v, c33);
            }
        }
        long o = outIndex;
        out.setAtIndex(X, o, c00.reduceLanes(VectorOperators.ADD));
        out.setAtIndex(X, o + 1, c01.reduceLanes(VectorOperators.ADD));
        out.setAtIndex(X, o + 2, c02.reduceLanes(VectorOperators.ADD));
        out.setAtIndex(X, o + 3, c03.reduceLanes(VectorOperators.ADD));
        o += n;
        out.setAtIndex(X, o, c10.reduceLanes(VectorOperators.ADD));
        out.setAtIndex(X, o + 1, c11.reduceLanes(VectorOperators.ADD));
        out.setAtIndex(X, o + 2, c12.reduceLanes(VectorOperators.ADD));
        out.setAtIndex(X, o + 3, c13.reduceLanes(VectorOperators.ADD));
        o += n;
        out.setAtIndex(X, o, c20.reduceLanes(VectorOperators.ADD));
        out.setAtIndex(X, o + 1, c21.reduceLanes(VectorOperators.ADD));
        out.setAtIndex(X, o + 2, c22.reduceLanes(VectorOperators.ADD));
        out.setAtIndex(X, o + 3, c23.reduceLanes(VectorOperators.ADD));
        o += n;
        out.setAtIndex(X, o, c30.reduceLanes(VectorOperators.ADD));
        out.setAtIndex(X, o + 1, c31.reduceLanes(VectorOperators.ADD));
        out.setAtIndex(X, o + 2, c32.reduceLanes(VectorOperators.ADD));
        out.setAtIndex(X, o + 3, c33.reduceLanes(VectorOperators.ADD));
    }

    /** {@link #dotQ4_0} of one row of w with four rows of x, as {@link #dotQ8_0Rows4}. */
    private static void dotQ4_0Rows4(MemorySegment w, long at, int blocks, float[] x, int xAt, int k, MemorySegment out, long outIndex, long n) {
        FloatVector a0 = FloatVector.zero(F), a1 = a0, a2 = a0, a3 = a0;
        int x0 = xAt, x1 = x0 + k, x2 = x1 + k, x3 = x2 + k;
        for (int b = 0; b < blocks; b++, at += 18, x0 += 32, x1 += 32, x2 += 32, x3 += 32) {
            FloatVector p0 = FloatVector.zero(F), p1 = p0, p2 = p0, p3 = p0;
            for (int p = 0; p < 16; p += L) {
                IntVector raw = q4Bytes(w, at + 2 + p);
                FloatVector lo = low(raw), hi = high(raw);
                p0 = hi.fma(FloatVector.fromArray(F, x, x0 + p + 16), lo.fma(FloatVector.fromArray(F, x, x0 + p), p0));
                p1 = hi.fma(FloatVector.fromArray(F, x, x1 + p + 16), lo.fma(FloatVector.fromArray(F, x, x1 + p), p1));
                p2 = hi.fma(FloatVector.fromArray(F, x, x2 + p + 16), lo.fma(FloatVector.fromArray(F, x, x2 + p), p2));
                p3 = hi.fma(FloatVector.fromArray(F, x, x3 + p + 16), lo.fma(FloatVector.fromArray(F, x, x3 + p), p3));
            }
            FloatVector d = FloatVector.broadcast(F, Float.float16ToFloat(w.get(Dequantize.I16_LE, at)));
            a0 = p0.fma(d, a0);
            a1 = p1.fma(d, a1);
            a2 = p2.fma(d, a2);
            a3 = p3.fma(d, a3);
        }
        out.setAtIndex(X, outIndex, a0.reduceLanes(VectorOperators.ADD));
        out.setAtIndex(X, outIndex + n, a1.reduceLanes(VectorOperators.ADD));
        out.setAtIndex(X, outIndex + 2 * n, a2.reduceLanes(VectorOperators.ADD));
        out.setAtIndex(X, outIndex + 3 * n, a3.reduceLanes(VectorOperators.ADD));
    }

    /**
     * One row of Q8_0 blocks (f16 d, 32 signed bytes) with x. Two blocks an iteration into two sums: with one sum, each
     * block's multiply-add waited on the previous one, and the first product of a block is a multiply, not a multiply-add
     * onto zero (an Intel Xeon with full-width AVX-512, a row of 2,048 from L2: 7.0 -> 9.4 GB/s a core; the same from memory
     * 3.5 -> 4.9 GB/s).
     */
    private static float dotQ8_0(MemorySegment w, long at, int blocks, float[] x, int xAt) {
        FloatVector acc0 = FloatVector.zero(F), acc1 = acc0;
        int b = 0;
        for (; b + 2 <= blocks; b += 2, at += 68, xAt += 64) {
            FloatVector p0 = q8(w, at + 2).mul(FloatVector.fromArray(F, x, xAt));
            FloatVector p1 = q8(w, at + 36).mul(FloatVector.fromArray(F, x, xAt + 32));
            for (int p = L; p < 32; p += L) {
                p0 = q8(w, at + 2 + p).fma(FloatVector.fromArray(F, x, xAt + p), p0);
                p1 = q8(w, at + 36 + p).fma(FloatVector.fromArray(F, x, xAt + 32 + p), p1);
            }
            acc0 = p0.fma(FloatVector.broadcast(F, Float.float16ToFloat(w.get(Dequantize.I16_LE, at))), acc0);
            acc1 = p1.fma(FloatVector.broadcast(F, Float.float16ToFloat(w.get(Dequantize.I16_LE, at + 34))), acc1);
        }
        if (b < blocks) {
            FloatVector p0 = q8(w, at + 2).mul(FloatVector.fromArray(F, x, xAt));
            for (int p = L; p < 32; p += L) p0 = q8(w, at + 2 + p).fma(FloatVector.fromArray(F, x, xAt + p), p0);
            acc0 = p0.fma(FloatVector.broadcast(F, Float.float16ToFloat(w.get(Dequantize.I16_LE, at))), acc0);
        }
        return acc0.add(acc1).reduceLanes(VectorOperators.ADD);
    }

    /** L signed bytes of w from byte {@code at}, as floats. */
    private static FloatVector q8(MemorySegment w, long at) {
        return (FloatVector) ByteVector.fromMemorySegment(B, w, at, LE).convertShape(VectorOperators.B2F, F, 0);
    }

    /**
     * {@link #dotQ8_0} of four rows of w ({@code rowBytes} apart, from byte {@code at}) with x, into {@code out} from
     * {@code outIndex}, {@code outStride} apart: per row the same terms as {@link #dotQ8_0}, summed in another order
     * (within the reassociation bound). Kept in one method: a vector handed to a call HotSpot does not inline is boxed on
     * the heap.
     */
    private static void dotQ8_0x4(MemorySegment w, long at, long rowBytes, int blocks, float[] x, int xAt, MemorySegment out, long outIndex,
                                  long outStride) {
        FloatVector a0 = FloatVector.zero(F), a1 = a0, a2 = a0, a3 = a0;
        long at1 = at + rowBytes, at2 = at1 + rowBytes, at3 = at2 + rowBytes;
        for (int b = 0; b < blocks; b++, at += 34, at1 += 34, at2 += 34, at3 += 34, xAt += 32) {
            FloatVector p0 = FloatVector.zero(F), p1 = p0, p2 = p0, p3 = p0;
            for (int p = 0; p < 32; p += L) {
                FloatVector xv = FloatVector.fromArray(F, x, xAt + p);
                p0 = q8(w, at + 2 + p).fma(xv, p0);
                p1 = q8(w, at1 + 2 + p).fma(xv, p1);
                p2 = q8(w, at2 + 2 + p).fma(xv, p2);
                p3 = q8(w, at3 + 2 + p).fma(xv, p3);
            }
            a0 = p0.fma(FloatVector.broadcast(F, Float.float16ToFloat(w.get(Dequantize.I16_LE, at))), a0);
            a1 = p1.fma(FloatVector.broadcast(F, Float.float16ToFloat(w.get(Dequantize.I16_LE, at1))), a1);
            a2 = p2.fma(FloatVector.broadcast(F, Float.float16ToFloat(w.get(Dequantize.I16_LE, at2))), a2);
            a3 = p3.fma(FloatVector.broadcast(F, Float.float16ToFloat(w.get(Dequantize.I16_LE, at3))), a3);
        }
        out.setAtIndex(X, outIndex, a0.reduceLanes(VectorOperators.ADD));
        out.setAtIndex(X, outIndex + outStride, a1.reduceLanes(VectorOperators.ADD));
        out.setAtIndex(X, outIndex + 2 * outStride, a2.reduceLanes(VectorOperators.ADD));
        out.setAtIndex(X, outIndex + 3 * outStride, a3.reduceLanes(VectorOperators.ADD));
    }

    /**
     * One row of Q4_0 blocks (f16 d, 16 bytes: value i in the low nibble of byte i, value i + 16 in its high nibble), two
     * blocks an iteration into two sums, as {@link #dotQ8_0}.
     */
    private static float dotQ4_0(MemorySegment w, long at, int blocks, float[] x, int xAt) {
        FloatVector acc0 = FloatVector.zero(F), acc1 = acc0;
        int b = 0;
        for (; b + 2 <= blocks; b += 2, at += 36, xAt += 64) {
            FloatVector p0 = FloatVector.zero(F), p1 = p0;
            for (int p = 0; p < 16; p += L) {
                IntVector r0 = q4Bytes(w, at + 2 + p), r1 = q4Bytes(w, at + 20 + p);
                p0 = low(r0).fma(FloatVector.fromArray(F, x, xAt + p), p0);
                p1 = low(r1).fma(FloatVector.fromArray(F, x, xAt + 32 + p), p1);
                p0 = high(r0).fma(FloatVector.fromArray(F, x, xAt + p + 16), p0);
                p1 = high(r1).fma(FloatVector.fromArray(F, x, xAt + 48 + p), p1);
            }
            acc0 = p0.fma(FloatVector.broadcast(F, Float.float16ToFloat(w.get(Dequantize.I16_LE, at))), acc0);
            acc1 = p1.fma(FloatVector.broadcast(F, Float.float16ToFloat(w.get(Dequantize.I16_LE, at + 18))), acc1);
        }
        if (b < blocks) {
            FloatVector p0 = FloatVector.zero(F);
            for (int p = 0; p < 16; p += L) {
                IntVector r0 = q4Bytes(w, at + 2 + p);
                p0 = low(r0).fma(FloatVector.fromArray(F, x, xAt + p), p0);
                p0 = high(r0).fma(FloatVector.fromArray(F, x, xAt + p + 16), p0);
            }
            acc0 = p0.fma(FloatVector.broadcast(F, Float.float16ToFloat(w.get(Dequantize.I16_LE, at))), acc0);
        }
        return acc0.add(acc1).reduceLanes(VectorOperators.ADD);
    }

    /**
     * L bytes of a Q4_0 block from byte {@code at}, one a lane, for {@link #low} and {@link #high}: as ints, since x86 has
     * no shift of bytes (a byte vector's shift and its masks took several operations a vector; an Intel Xeon with AVX-512,
     * a row of 2,048 from L2: 3.6-3.8 -> 5.1-5.3 GB/s a core with the table below).
     */
    private static IntVector q4Bytes(MemorySegment w, long at) {
        return (IntVector) ByteVector.fromMemorySegment(B, w, at, LE).convertShape(VectorOperators.B2I, I, 0);
    }

    /** The low nibbles of {@link #q4Bytes}, less 8, as floats. */
    private static FloatVector low(IntVector raw) { return nibbleValues(raw.and(0x0F)); }

    /** The high nibbles, less 8, as floats. */
    private static FloatVector high(IntVector raw) { return nibbleValues(raw.lanewise(VectorOperators.LSHR, 4).and(0x0F)); }

    /** Nibbles 0..15 as the floats -8..7: one permute of a table where a vector holds sixteen lanes, else arithmetic. */
    private static FloatVector nibbleValues(IntVector nibbles) {
        if (NIBBLE_VALUES != null) return nibbles.selectFrom(NIBBLE_VALUES).reinterpretAsFloats();
        return (FloatVector) nibbles.sub(8).convert(VectorOperators.I2F, 0);
    }

    private static void dequantizedRows(GgmlType type, MemorySegment w, long rowBytes, int from, int to, int k, MemorySegment x, int rows, int n,
                                        MemorySegment out) {
        float[] row = atLeast(SCRATCH, k);
        for (int j = from; j < to; j++) {
            Dequantize.row(type, w.asSlice(j * rowBytes, rowBytes), row, 0, k);
            for (int r = 0; r < rows; r++) out.setAtIndex(X, (long) r * n + j, dot(row, 0, x, 4L * r * k, k));
        }
    }

    private static float dot(float[] a, int aAt, MemorySegment x, long xAt, int k) {
        FloatVector acc = FloatVector.zero(F);
        int i = 0;
        for (; i <= k - L; i += L) acc = FloatVector.fromArray(F, a, aAt + i).fma(FloatVector.fromMemorySegment(F, x, xAt + 4L * i, NATIVE), acc);
        float s = acc.reduceLanes(VectorOperators.ADD);
        for (; i < k; i++) s += a[aAt + i] * x.getAtIndex(X, xAt / 4 + i);
        return s;
    }

    // ---------------------------------------------------------------- many rows: dequantised panels of w, the GEMM's tile

    /**
     * x's rows packed for {@link PanelProduct}: for each pass of {@link #KC} values from {@code k0}, the rows padded to a
     * whole tile, a tile's rows side by side ({@link PanelProduct#packRow}; tile t from {@code k0 * paddedRows + t *
     * ROWS * kc}); zeros below the last row.
     */
    private static float[] packRows(MemorySegment x, int rows, int k) {
        int padded = roundUp(rows, PanelProduct.ROWS), tile = PanelProduct.ROWS;
        float[] ap = atLeast(X_COPY, padded * k), row = atLeast(X_ROW, KC);
        for (int k0 = 0; k0 < k; k0 += KC) {
            int kc = Math.min(KC, k - k0);
            java.util.Arrays.fill(ap, k0 * padded + rows / tile * tile * kc, k0 * padded + padded * kc, 0f);
            for (int r = 0; r < rows; r++) {
                MemorySegment.copy(x, X, 4L * ((long) r * k + k0), row, 0, kc);
                PanelProduct.packRow(row, 0, kc, ap, k0 * padded + r / tile * tile * kc, r % tile);
            }
        }
        return ap;
    }

    /**
     * Panels {@code [from, to)} of {@link #PANEL} rows of w: per pass over k, the rows dequantised once and dealt into
     * the GEMM's B panels ({@link PanelProduct#COLUMNS} rows of w side by side), then met by every tile of x's rows.
     */
    private static void tiles(GgmlType type, MemorySegment w, long rowBytes, int from, int to, int k, float[] ap, int rows, int n,
                              MemorySegment out) {
        int cols = PanelProduct.COLUMNS, padded = roundUp(rows, PanelProduct.ROWS);
        float[] row = atLeast(SCRATCH, Math.min(k, KC)), bp = atLeast(PANELS, PANEL * Math.min(k, KC)), tile = TILE.get();
        for (int t = from; t < to; t++) {
            int j0 = t * PANEL, m = Math.min(PANEL, n - j0);
            for (int k0 = 0; k0 < k; k0 += KC) {
                int kc = Math.min(KC, k - k0);
                long chunkAt = type.rowBytes(k0), chunkBytes = type.rowBytes(kc);
                for (int j = 0; j < roundUp(m, cols); j++) {
                    int at = (j / cols) * kc * cols + j % cols;
                    if (j < m) {
                        dequantizeRow(type, w, (j0 + j) * rowBytes + chunkAt, chunkBytes, row, 0, kc);
                        for (int i = 0; i < kc; i++) bp[at + i * cols] = row[i];
                    } else {
                        for (int i = 0; i < kc; i++) bp[at + i * cols] = 0f;
                    }
                }
                for (int jp = 0; jp < m; jp += cols) {
                    int nr = Math.min(cols, m - jp);
                    for (int r = 0; r < rows; r += PanelProduct.ROWS) {
                        PanelProduct.multiply(ap, k0 * padded + r * kc, bp, jp * kc, kc, Math.min(PanelProduct.ROWS, rows - r), nr, out,
                                (long) r * n + j0 + jp, n, k0 > 0, tile);
                    }
                }
            }
        }
    }

    private static int roundUp(int v, int to) { return (v + to - 1) / to * to; }


    /**
     * Row at byte {@code at} of {@code w} into {@code dst[off..off+k)}: Q8_0 and Q4_0 widened in vector registers (each value
     * one f32 product of its integer and the block's scale, as ggml computes it), the other types by {@link Dequantize}.
     */
    static void dequantizeRow(GgmlType type, MemorySegment w, long at, long rowBytes, float[] dst, int off, int k) {
        if (B == null || type != GgmlType.Q8_0 && type != GgmlType.Q4_0) {
            Dequantize.row(type, w.asSlice(at, rowBytes), dst, off, k);
            return;
        }
        int blocks = k / 32;
        if (type == GgmlType.Q8_0) {
            for (int b = 0; b < blocks; b++, at += 34, off += 32) {
                FloatVector d = FloatVector.broadcast(F, Float.float16ToFloat(w.get(Dequantize.I16_LE, at)));
                for (int p = 0; p < 32; p += L) {
                    ((FloatVector) ByteVector.fromMemorySegment(B, w, at + 2 + p, LE).convertShape(VectorOperators.B2F, F, 0)).mul(d).intoArray(dst, off + p);
                }
            }
        } else {
            for (int b = 0; b < blocks; b++, at += 18, off += 32) {
                FloatVector d = FloatVector.broadcast(F, Float.float16ToFloat(w.get(Dequantize.I16_LE, at)));
                for (int p = 0; p < 16; p += L) {
                    IntVector raw = q4Bytes(w, at + 2 + p);
                    low(raw).mul(d).intoArray(dst, off + p);
                    high(raw).mul(d).intoArray(dst, off + 16 + p);
                }
            }
        }
    }

}

package dev.kiln.cpu;

import dev.kiln.codegen.Contraction;
import dev.kiln.codegen.Contraction.Gate;
import dev.kiln.codegen.Contraction.Operand;
import dev.kiln.codegen.Contraction.Role;
import dev.kiln.codegen.Contraction.Var;
import dev.kiln.runtime.WorkerPool;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * {@link GemmKernel} against a double-precision evaluation of the contraction's definition, point by point.
 * A float sum of K products in any order is within {@code K * 2^-24 * 2 * sum |a*b|} of the exact sum (plus
 * a tiny absolute term for denormals); tests below show the bound is tight enough to catch one dropped term
 * and a wrong index. Every buffer is exactly as long as its valid elements need, so a read of a gated-out
 * (padding) element or past a run would fail with the segment's own bounds check; C starts filled with NaN
 * so points beyond a symbolic limit that were written show up.
 */
class GemmKernelTest {
    private static final ValueLayout.OfFloat F = ValueLayout.JAVA_FLOAT_UNALIGNED;

    // ---- contractions built by hand

    private static Var v(String name, Role role, long extent) { return new Var(name, role, extent, -1); }

    private static Operand op(int param, long offset, long... strides) { return new Operand(param, offset, strides, List.of()); }

    /** C[m][n] = sum_k A[m][k] B[k][n], all row-major; transposed operands when asked. */
    static Contraction matmul(int m, int n, int k, boolean aT, boolean bT, boolean cT, long offset) {
        List<Var> vars = List.of(v("m", Role.M, m), v("n", Role.N, n), v("k", Role.K, k));
        Operand a = aT ? op(1, offset, 1, 0, m) : op(1, offset, k, 0, 1);
        Operand b = bT ? op(2, 2 * offset, 0, k, 1) : op(2, 2 * offset, 0, 1, n);
        Operand c = cT ? op(0, 3 * offset, 1, m, 0) : op(0, 3 * offset, n, 1, 0);
        return new Contraction(vars, a, b, c);
    }

    /**
     * NCHW convolution, batch {@code nb}, {@code ci -> co} channels, {@code h x h} input, {@code r x r} window,
     * stride {@code s}, padding {@code p}: the window's rows and columns as gated, affine indices of the input.
     * {@code mirror} writes output column {@code ow} from input column {@code s*(oh-1-ow) + kw - p}: a negative
     * stride and gate coefficient along the innermost N variable.
     */
    static Contraction conv(int nb, int ci, int co, int h, int r, int s, int p, boolean mirror) {
        int oh = (h + 2 * p - r) / s + 1;
        List<Var> vars = List.of(v("b", Role.BATCH, nb), v("co", Role.M, co), v("oh", Role.N, oh), v("ow", Role.N, oh),
                v("ci", Role.K, ci), v("kh", Role.K, r), v("kw", Role.K, r));
        Operand w = op(1, 0, 0, (long) ci * r * r, 0, 0, (long) r * r, r, 1);
        // x[b][ci][ih][iw], ih = s*oh + kh - p, valid iff 0 <= ih < h (same for columns)
        long sw = mirror ? -s : s, shift = mirror ? (long) s * (oh - 1) : 0;
        Operand x = new Operand(2, -(long) p * h - p + shift, new long[] {(long) ci * h * h, 0, (long) s * h, sw, (long) h * h, h, 1},
                List.of(new Gate(new long[] {0, 0, s, 0, 0, 1, 0}, p, h + p),
                        new Gate(new long[] {0, 0, 0, sw, 0, 0, 1}, p - shift, h + p - shift)));
        Operand out = op(0, 0, (long) co * oh * oh, (long) oh * oh, oh, 1, 0, 0, 0);
        return new Contraction(vars, w, x, out);
    }

    static Contraction conv(int nb, int ci, int co, int h, int r, int s, int p) { return conv(nb, ci, co, h, r, s, p, false); }

    /** The same sums with A and B (and M and N) exchanged: C's element for (m, n) stays where it was. */
    static Contraction swapped(Contraction c) {
        List<Var> vars = c.vars().stream().map(v -> new Var(v.name(), switch (v.role()) {
            case M -> Role.N;
            case N -> Role.M;
            default -> v.role();
        }, v.extent(), v.limit())).toList();
        Operand a = c.a(), b = c.b();
        return new Contraction(vars, new Operand(1, b.offset(), b.strides(), b.gates()), new Operand(2, a.offset(), a.strides(), a.gates()), c.c());
    }

    // ---- reference and check

    /** Exact (double) sums, sums of |a*b|, and K per C address; every point of the run-time extents. */
    record Reference(long[] cAddr, double[] exact, double[] abs, long k) {}

    /** Evaluates the definition; {@code dropK} (a flat K index, or -1) leaves out one term of every sum. */
    static Reference reference(Contraction c, MemorySegment[] bufs, long[] vals, long dropK) {
        int nv = c.vars().size();
        long[] ext = new long[nv];
        for (int i = 0; i < nv; i++) ext[i] = Math.max(0, c.vars().get(i).extent(vals));
        List<long[]> outer = points(c, ext, r -> r != Role.K), inner = points(c, ext, r -> r == Role.K);
        long[] addrs = new long[outer.size()];
        double[] exact = new double[outer.size()], abs = new double[outer.size()];
        for (int o = 0; o < outer.size(); o++) {
            long[] pt = outer.get(o).clone();
            double sum = 0, sa = 0;
            for (int q = 0; q < inner.size(); q++) {
                if (q == dropK) continue;
                long[] kp = inner.get(q);
                for (int i = 0; i < nv; i++) if (c.vars().get(i).role() == Role.K) pt[i] = kp[i];
                double p = (double) read(c.a(), bufs, pt) * read(c.b(), bufs, pt);
                sum += p;
                sa += Math.abs(p);
            }
            exact[o] = sum;
            abs[o] = sa;
            addrs[o] = address(c.c(), pt);
        }
        return new Reference(addrs, exact, abs, inner.size());
    }

    /** Every multi-index of the variables whose role passes (others 0). */
    private static List<long[]> points(Contraction c, long[] ext, java.util.function.Predicate<Role> roles) {
        int nv = ext.length;
        List<long[]> out = new ArrayList<>();
        long[] pt = new long[nv];
        for (int i = 0; i < nv; i++) if (roles.test(c.vars().get(i).role()) && ext[i] == 0) return out;
        while (true) {
            out.add(pt.clone());
            int i = nv - 1;
            for (; i >= 0; i--) {
                if (!roles.test(c.vars().get(i).role())) continue;
                if (++pt[i] < ext[i]) break;
                pt[i] = 0;
            }
            if (i < 0) return out;
        }
    }

    private static long address(Operand o, long[] pt) {
        long a = o.offset();
        for (int i = 0; i < pt.length; i++) a += o.stride(i) * pt[i];
        return a;
    }

    private static boolean valid(Operand o, long[] pt) {
        for (Gate g : o.gates()) {
            long s = 0;
            for (int i = 0; i < pt.length; i++) s += g.coeff(i) * pt[i];
            if (s < g.lo() || s >= g.hi()) return false;
        }
        return true;
    }

    private static float read(Operand o, MemorySegment[] bufs, long[] pt) {
        return valid(o, pt) ? bufs[o.param()].get(F, 4 * address(o, pt)) : 0f;
    }

    /** Where {@code c} differs from the reference beyond the error bound (empty when it is right). */
    static List<String> mismatches(Reference ref, MemorySegment c) {
        List<String> bad = new ArrayList<>();
        double eps = Math.scalb(1.0, -24);
        for (int i = 0; i < ref.exact.length && bad.size() < 5; i++) {
            long addr = ref.cAddr[i];
            float got = c.get(F, 4 * addr);
            double bound = ref.k * eps * 2 * ref.abs[i] + 1e-37;
            if (!(Math.abs(got - ref.exact[i]) <= bound)) bad.add("C[" + addr + "] = " + got + ", exact " + ref.exact[i] + " +- " + bound);
        }
        return bad;
    }

    /** One element past the largest valid element the operand reads (brute force over all points when gated). */
    private static long needed(Contraction c, Operand o) {
        long[] ext = c.vars().stream().mapToLong(Var::extent).toArray();
        if (o.gates().isEmpty()) {
            long max = o.offset();
            for (int i = 0; i < ext.length; i++) max += Math.max(0, o.stride(i) * (ext[i] - 1));
            return max + 1;
        }
        long max = -1;
        for (long[] pt : points(c, ext, r -> true)) if (valid(o, pt)) max = Math.max(max, address(o, pt));
        return max + 1;
    }

    /** Buffers exactly as long as needed (A and B random, C NaN), in an arena the test closes. */
    static MemorySegment[] buffers(Arena arena, Contraction c, long seed) {
        Random r = new Random(seed);
        MemorySegment[] bufs = new MemorySegment[3];
        Operand[] ops = {c.c(), c.a(), c.b()};
        for (Operand o : ops) {
            long n = Math.max(needed(c, o), bufs[o.param()] == null ? 0 : bufs[o.param()].byteSize() / 4);
            bufs[o.param()] = arena.allocate(4 * n, 4);
        }
        for (long i = 0; i < bufs[0].byteSize() / 4; i++) bufs[0].set(F, 4 * i, Float.NaN);
        for (int p = 1; p < 3; p++) for (long i = 0; i < bufs[p].byteSize() / 4; i++) bufs[p].set(F, 4 * i, r.nextFloat() * 2 - 1);
        return bufs;
    }

    /**
     * Runs the kernel on fresh buffers and checks every point against the reference, and that no other C element
     * changed: with both operands packed per run, and with A, B and both {@linkplain GemmKernel#prepack prepacked}.
     */
    static void check(Contraction c, long[] vals) {
        for (int prepacked = 0; prepacked < 4; prepacked++) {
            try (Arena arena = Arena.ofShared()) {
                MemorySegment[] bufs = buffers(arena, c, 42);
                GemmKernel gemm = new GemmKernel(c);
                gemm.run(bufs, vals, gemm.prepack(bufs, (prepacked & 1) != 0, (prepacked & 2) != 0));
                Reference ref = reference(c, bufs, vals, -1);
                String what = c + (prepacked == 0 ? "" : " with " + List.of("", "A", "B", "A and B").get(prepacked) + " prepacked");
                assertThat(mismatches(ref, bufs[0])).as(what).isEmpty();
                long written = 0;
                for (long i = 0; i < bufs[0].byteSize() / 4; i++) if (!Float.isNaN(bufs[0].get(F, 4 * i))) written++;
                assertThat(written).as("C elements written, " + what).isEqualTo(ref.exact.length);
            }
        }
    }

    @Test
    void aPrepackedOperandIsReadOnceWhenPrepacked() {
        // the constant contract: what was packed is what later runs use, without reading the buffer again
        Contraction c = conv(1, 8, 12, 9, 3, 1, 1);
        try (Arena arena = Arena.ofShared()) {
            MemorySegment[] bufs = buffers(arena, c, 3);
            GemmKernel gemm = new GemmKernel(c);
            GemmKernel.Prepacked weights = gemm.prepack(bufs, true, false);
            Reference before = reference(c, bufs, new long[0], -1);
            bufs[1].fill((byte) 0);
            gemm.run(bufs, new long[0], weights);
            assertThat(mismatches(before, bufs[0])).isEmpty();
            gemm.run(bufs, new long[0]);
            assertThat(bufs[0].get(F, 0)).as("packed per run: the zeroed weights").isEqualTo(0f);
        }
    }

    /**
     * Prepacking cut into blocks and packed side by side on the workers writes the same floats as one thread packing
     * each side whole per K block (the layout the loop nest reads): several K blocks, more rows than MC, more columns
     * than NC, a batch, transposed operands (packed column by column) and a gated convolution.
     */
    @Test
    void prepackingInBlocksSideBySideWritesTheFloatsOfOneWholePacking() {
        int wide = GemmKernel.NC + 3 * GemmMicroKernel.NR + 5;
        List<Contraction> cases = List.of(matmul(150, wide, 1100, false, false, false, 0), matmul(150, wide, 700, true, true, false, 0),
                conv(2, 70, 130, 9, 3, 1, 1));
        for (Contraction c : cases) {
            try (Arena arena = Arena.ofShared()) {
                MemorySegment[] bufs = buffers(arena, c, 5);
                GemmKernel gemm = new GemmKernel(c);
                GemmKernel.Prepacked whole = wholePacking(gemm.fullPlan(), bufs);
                for (int shares : new int[] {1, 3, 0}) {
                    GemmKernel.Prepacked blocks = gemm.prepack(bufs, true, true, shares);
                    assertThat(blocks.a()).as(c + ": A in " + shares + " shares").isEqualTo(whole.a());
                    assertThat(blocks.b()).as(c + ": B in " + shares + " shares").isEqualTo(whole.b());
                }
            }
        }
    }

    /**
     * A gated side's read range (what its bounds check compares with the buffer) is exactly the span of the elements it
     * reads: padded, strided, mirrored and batched convolutions, against every point of the contraction.
     */
    @Test
    void aGatedSidesReadRangeIsTheSpanOfItsValidElements() {
        for (Contraction c : List.of(conv(2, 3, 4, 9, 3, 1, 1), conv(1, 5, 2, 11, 3, 2, 1), conv(1, 2, 3, 8, 3, 1, 2, true),
                conv(1, 2, 2, 7, 7, 2, 3), conv(1, 1, 1, 2, 5, 1, 4))) {
            GemmPlan p = new GemmKernel(c).fullPlan();
            long[] ext = c.vars().stream().mapToLong(Var::extent).toArray();
            long min = Long.MAX_VALUE, max = Long.MIN_VALUE;
            for (long[] pt : points(c, ext, r -> true)) {
                if (!valid(c.b(), pt)) continue;
                min = Math.min(min, address(c.b(), pt));
                max = Math.max(max, address(c.b(), pt));
            }
            assertThat(new long[] {p.b.minAddr, p.b.maxAddr}).as(c.toString()).containsExactly(min, max);
        }
    }

    /**
     * Kernels of one contraction share one GEMM (its plans are only read); another contraction, or the same one under
     * another {@code kiln.gemm.paddedImage} mode (read when a plan is made), gets its own.
     */
    @Test
    void kernelsOfOneContractionShareTheirGemmUnderOneConfiguration() {
        Contraction c = conv(1, 8, 12, 9, 3, 1, 1);
        GemmKernel shared = GemmKernel.of(c, null);
        assertThat(GemmKernel.of(conv(1, 8, 12, 9, 3, 1, 1), null)).isSameAs(shared);
        assertThat(GemmKernel.of(conv(1, 8, 12, 9, 3, 1, 0), null)).isNotSameAs(shared);
        String before = System.getProperty("kiln.gemm.paddedImage");
        System.setProperty("kiln.gemm.paddedImage", "false");
        try {
            GemmKernel packed = GemmKernel.of(c, null);
            assertThat(packed).isNotSameAs(shared);
            assertThat(packed.readsPaddedImage()).isFalse();
        } finally {
            if (before == null) System.clearProperty("kiln.gemm.paddedImage");
            else System.setProperty("kiln.gemm.paddedImage", before);
        }
        assertThat(GemmKernel.of(c, null)).isSameAs(shared);
    }

    /** Both sides packed as before blocks: per batch and K block, every row of A and every column of B in one call. */
    private static GemmKernel.Prepacked wholePacking(GemmPlan p, MemorySegment[] bufs) {
        int mr = GemmMicroKernel.MR, nr = GemmMicroKernel.NR;
        int kcStep = GemmKernel.kcStep(p), pm = (p.m + mr - 1) / mr * mr, pn = (p.n + nr - 1) / nr * nr;
        float[] a = new float[p.batches * pm * p.k], b = new float[p.batches * pn * p.k];
        float[] scratch = new float[Math.max(Math.max(pm, pn), Math.max(GemmKernel.KC_IMAGE, GemmKernel.NC))];
        for (int batch = 0; batch < p.batches; batch++) {
            for (int pc = 0; pc < p.k; pc += kcStep) {
                int kc = Math.min(kcStep, p.k - pc);
                p.a.packRows(bufs[p.a.param], batch, 0, p.m, pc, kc, a, (batch * p.k + pc) * pm, scratch);
                p.b.packColPanels(bufs[p.b.param], batch, pc, kc, 0, p.n, b, (batch * p.k + pc) * pn, scratch);
            }
        }
        return new GemmKernel.Prepacked(a, b);
    }

    // ---- tests

    static Stream<Arguments> sizes() {
        int[][] s = {{1, 1, 1}, {1, 1, 70}, {70, 1, 1}, {1, 70, 1}, {1, 1, 300}, {6, 32, 1}, {7, 33, 5}, {5, 31, 13}, {13, 17, 19},
                {64, 64, 64}, {67, 61, 59}, {23, 70, 2}, {2, 3, 257}, {97, 35, 41}, {12, 64, 300}, {3, 2100, 2},
                {37, 49, 300}, {25, 81, 1100}, // panels of 17 columns (a 7 x 7 and a 9 x 9 image), one K block and several
                {29, 2100, 32}, {29, 4400, 16}}; // K this short: groups of column panels, row tile by row tile
        return Stream.of(s).map(x -> Arguments.of(x[0], x[1], x[2]));
    }

    @ParameterizedTest(name = "{0}x{1}x{2}")
    @MethodSource("sizes")
    void plainMatmulOfOddSizes(int m, int n, int k) {
        check(matmul(m, n, k, false, false, false, 0), new long[0]);
    }

    @Test
    void transposedOperandsAndResult() {
        check(matmul(37, 45, 29, false, true, false, 0), new long[0]);  // x . W^T
        check(matmul(37, 45, 29, true, false, false, 0), new long[0]);
        check(matmul(37, 45, 29, true, true, true, 0), new long[0]);    // C columns strided: scalar write-back
        check(matmul(11, 70, 9, false, false, true, 0), new long[0]);
    }

    /**
     * A row's dot products are the same floats whether it runs alone (four columns at a time) or with other rows (four
     * rows a column): a served decode step batches the sequences' rows, and each must get the logits it gets alone.
     */
    @Test
    void aRowsDotProductsAreTheSameFloatsAloneOrAmongOtherRows() {
        Contraction four = matmul(4, 45, 70, false, true, false, 0), one = matmul(1, 45, 70, false, true, false, 0);
        try (Arena arena = Arena.ofShared()) {
            MemorySegment[] bufs = buffers(arena, four, 5);
            new GemmKernel(four).run(bufs, new long[0]);
            float[] among = bufs[0].asSlice(0, 4L * 45).toArray(ValueLayout.JAVA_FLOAT);
            bufs[0].fill((byte) 0);
            // the same buffers: the one-row contraction reads row 0 of A and writes row 0 of C
            new GemmKernel(one).run(bufs, new long[0]);
            float[] alone = bufs[0].asSlice(0, 4L * 45).toArray(ValueLayout.JAVA_FLOAT);
            for (int j = 0; j < 45; j++) {
                assertThat(Float.floatToRawIntBits(alone[j])).as("column " + j + ": " + alone[j] + " vs " + among[j]).isEqualTo(Float.floatToRawIntBits(among[j]));
            }
        }
    }

    /**
     * Few rows against a transposed B are dot products ({@link GemmDots}): every row count up to MR (groups of four and
     * a remainder), K with and without a tail past whole vectors, C strided, one kernel over changing limits (a decode
     * step's attention scores: rows of the query heads, columns up to the cached length); 9 rows are the packed nest.
     */
    @Test
    void fewRowsAgainstATransposedOperandAreDotProducts() {
        for (int m : new int[] {1, 2, 3, 4, 5, 8}) {
            for (int k : new int[] {1, 15, 16, 17, 64, 70}) {
                Contraction c = matmul(m, 45, k, false, true, false, 0);
                assertThat(new GemmKernel(c).runsAsDots()).as(c.toString()).isTrue();
                check(c, new long[0]);
            }
        }
        check(matmul(3, 45, 29, false, true, true, 3), new long[0]);
        check(matmul(1, 1003, 1283, false, true, false, 0), new long[0]); // a classifier's shape, four columns at a time and a tail
        assertThat(new GemmKernel(matmul(9, 45, 64, false, true, false, 0)).runsAsDots()).isFalse();
        assertThat(new GemmKernel(matmul(3, 45, 64, false, false, false, 0)).runsAsDots()).as("B contiguous along N").isFalse();
        // scores[h][m][n] = sum_d q[h][m][d] k[h][n][d]: m up to 32 (limit 0), n up to 300 (limit 1)
        List<Var> vars = List.of(v("h", Role.BATCH, 3), new Var("m", Role.M, 32, 0), new Var("n", Role.N, 300, 1), v("d", Role.K, 64));
        Contraction scores = new Contraction(vars, op(1, 0, 32 * 64, 64, 0, 1), op(2, 0, 300 * 64, 0, 64, 1), op(0, 0, 32 * 300, 300, 1, 0));
        try (Arena arena = Arena.ofShared()) {
            MemorySegment[] bufs = buffers(arena, scores, 9);
            GemmKernel kernel = new GemmKernel(scores);
            for (long[] vals : List.of(new long[] {4, 1}, new long[] {4, 2}, new long[] {4, 217}, new long[] {32, 300}, new long[] {3, 218})) {
                kernel.run(bufs, vals);
                assertThat(mismatches(reference(scores, bufs, vals, -1), bufs[0])).as(java.util.Arrays.toString(vals)).isEmpty();
            }
        }
    }

    @Test
    void offsets() {
        check(matmul(19, 40, 23, false, false, false, 17), new long[0]);
        check(matmul(19, 40, 23, true, true, false, 5), new long[0]);
    }

    @Test
    void largerThanTheCacheBlocksAndSplitOverWorkers() {
        // M > MC, K > KC, N > NC; several million multiply-adds, so the work is split
        check(matmul(7, GemmKernel.NC + 40, GemmKernel.KC + 3, false, false, false, 0), new long[0]);
        check(matmul(GemmKernel.MC + 7, 40, GemmKernel.KC + 3, false, false, false, 0), new long[0]);
        check(matmul(GemmKernel.MC + 7, 40, GemmKernel.KC + 3, true, false, false, 0), new long[0]); // A^T, by columns
        check(matmul(250, 40, 130, false, true, false, 0), new long[0]);
        // x . W^T with K = (k1, k2) over two K blocks: B packed column by column, runs of 600 cut at the block edge
        List<Var> vars = List.of(v("m", Role.M, 9), v("n", Role.N, 37), v("k1", Role.K, 3), v("k2", Role.K, 200));
        check(new Contraction(vars, op(1, 0, 600, 0, 200, 1), op(2, 0, 0, 600, 200, 1), op(0, 0, 37, 1, 0, 0)), new long[0]);
    }

    @Test
    void batchedMatmul() {
        // attention-like: C[b][m][n] = sum_k Q[b][m][k] K[b][n][k]
        int nb = 3, m = 29, n = 41, k = 33;
        List<Var> vars = List.of(v("b", Role.BATCH, nb), v("m", Role.M, m), v("n", Role.N, n), v("k", Role.K, k));
        check(new Contraction(vars, op(1, 0, (long) m * k, k, 0, 1), op(2, 0, (long) n * k, 0, k, 1), op(0, 0, (long) m * n, n, 1, 0)),
                new long[0]);
        // large enough to split by batch
        vars = List.of(v("b", Role.BATCH, 4), v("m", Role.M, 100), v("n", Role.N, 90), v("k", Role.K, 40));
        check(new Contraction(vars, op(1, 0, 4000, 40, 0, 1), op(2, 0, 3600, 0, 1, 90), op(0, 0, 9000, 90, 1, 0)), new long[0]);
        // 3 batches on 2 workers: each cut in slices
        vars = List.of(v("b", Role.BATCH, 3), v("m", Role.M, 100), v("n", Role.N, 90), v("k", Role.K, 40));
        check(new Contraction(vars, op(1, 0, 4000, 40, 0, 1), op(2, 0, 3600, 0, 1, 90), op(0, 0, 9000, 90, 1, 0)), new long[0]);
    }

    @Test
    void convolutionsWithPaddingGates() {
        check(conv(2, 5, 7, 9, 3, 2, 1), new long[0]);   // 3x3 stride 2 pad 1, batch 2
        check(conv(1, 3, 8, 11, 3, 1, 1), new long[0]);  // stride 1 'same'
        check(conv(1, 4, 6, 7, 5, 1, 2), new long[0]);
        check(conv(2, 16, 20, 14, 3, 1, 1), new long[0]); // split over workers, gated runs over the N panels
        check(conv(1, 32, 40, 15, 3, 1, 1), new long[0]);   // N split between workers in the middle of a run
        check(conv(2, 3, 5, 10, 3, 2, 1, true), new long[0]);
        check(conv(1, 4, 6, 7, 5, 1, 2, true), new long[0]);
    }

    /** {@code c} without B's gates: an unpadded convolution, as the lowering gives it (no bounds to test). */
    static Contraction ungated(Contraction c) {
        Operand b = c.b();
        return new Contraction(c.vars(), c.a(), new Operand(b.param(), b.offset(), b.strides(), List.of()), c.c());
    }

    /** {@code c}'s plan with {@code kiln.gemm.paddedImage} at {@code mode} (read when a plan is made). */
    private static GemmPlan planUnder(String mode, Contraction c) {
        String before = System.getProperty("kiln.gemm.paddedImage");
        System.setProperty("kiln.gemm.paddedImage", mode);
        try {
            return new GemmKernel(c).fullPlan();
        } finally {
            if (before == null) System.clearProperty("kiln.gemm.paddedImage");
            else System.setProperty("kiln.gemm.paddedImage", before);
        }
    }

    /**
     * An unpadded convolution has no gates; its window is read from the addresses alone, and its image copied in
     * stride phases as a padded one's. A strided 1 x 1 convolution, whose window moves no pixel, and a batched matmul
     * with two N variables, are packed.
     */
    @Test
    void unpaddedConvolutionsReadTheirImageFromTheAddresses() {
        for (Contraction c : List.of(ungated(conv(2, 3, 16, 23, 3, 2, 0)), ungated(conv(1, 5, 13, 12, 3, 1, 0)),
                ungated(conv(1, 2, 14, 21, 5, 3, 0)))) {
            PaddedImage image = planUnder("force", c).image;
            assertThat(image).as(c.toString()).isNotNull();
            long sw = c.b().stride(3);
            assertThat(image.pitch).as("no padding: no columns shared, " + c).isEqualTo((image.wp + sw - 1) / sw);
            check(c, new long[0]);
        }
        assertThat(planUnder("force", ungated(conv(1, 4, 6, 9, 1, 2, 0))).image).as("1 x 1, stride 2").isNull();
        List<Var> vars = List.of(v("b", Role.BATCH, 2), v("m", Role.M, 5), v("n1", Role.N, 6), v("n2", Role.N, 7), v("k", Role.K, 4));
        Contraction bmm = new Contraction(vars, op(1, 0, 20, 4, 0, 0, 1), op(2, 0, 168, 0, 7, 1, 42), op(0, 0, 210, 42, 7, 1, 0));
        assertThat(planUnder("force", bmm).image).as("batched matmul").isNull();
        check(bmm, new long[0]);
    }

    /**
     * With unit column strides a row's right padding is the next row's left padding: a 13-wide image padded by 1 is
     * copied at pitch 14 (181 columns of the padded numbering for 169 pixels), a 55-wide one at 56; padding 3 of a
     * 3-wide window shares only the 2 columns that keep a row's outputs apart from the next row's; strided columns
     * share none.
     */
    @Test
    void paddedRowsShareTheirZeroColumns() {
        assertThat(planUnder("force", conv(1, 4, 12, 13, 3, 1, 1)).image.pitch).isEqualTo(14);
        assertThat(planUnder("force", conv(1, 4, 12, 13, 3, 1, 1)).image.qPerImage).isEqualTo(181);
        assertThat(planUnder("force", conv(1, 4, 12, 55, 3, 1, 1)).image.pitch).isEqualTo(56);
        assertThat(planUnder("force", conv(1, 4, 12, 10, 3, 1, 3)).image.pitch).isEqualTo(14);
        assertThat(planUnder("force", conv(1, 4, 12, 13, 3, 2, 1)).image.pitch).isEqualTo(8);
        check(conv(3, 4, 12, 13, 3, 1, 1), new long[0]);  // several planes, each ending in its shared zeros
        check(conv(1, 4, 12, 10, 3, 1, 3), new long[0]);
    }

    /**
     * Full image tiles (all NR lanes output columns, MR rows) go from the registers straight into C; the rest through
     * the tile's scratch: a 40-wide image has both, and 28 rows leave a 4-row edge.
     */
    @Test
    void fullImageTilesAreStoredFromTheRegisters() {
        Contraction c = conv(1, 6, 28, 40, 3, 1, 1);
        assertThat(planUnder("auto", c).image).isNotNull();
        check(c, new long[0]);
    }

    /**
     * B of few panels that the workers would share unevenly (7 panels of 32 columns: a 14 x 14 image padded by 1, or 200
     * packed columns) is split by rows instead, B read from one image or one packed copy; every element of C is still
     * written once, right.
     */
    @Test
    void fewPanelsSplitUnevenlyAreSplitByRows() {
        Contraction c = conv(1, 16, 60, 14, 3, 1, 1);
        GemmPlan p = planUnder("auto", c);
        assertThat(p.image).isNotNull();
        assertThat(GemmKernel.unevenPanels(p, true, p.image.outers * ((p.image.qPerImage + GemmMicroKernel.NR - 1) / GemmMicroKernel.NR), 2)).isTrue();
        assertThat(GemmKernel.unevenPanels(planUnder("auto", conv(1, 16, 60, 13, 3, 1, 1)), true, 6, 2)).as("13 x 13: 6 tiles").isFalse();
        check(c, new long[0]);
        check(conv(1, 16, 61, 14, 3, 2, 1), new long[0]); // stride 2: 7 x 7 out, rows not a multiple of the tile's
        Contraction mm = matmul(100, 200, 64, false, false, false, 0);
        assertThat(GemmKernel.unevenPanels(new GemmKernel(mm).fullPlan(), true, 7, 2)).isTrue();
        check(mm, new long[0]);
        check(matmul(100, 200, 64, false, true, false, 0), new long[0]);
    }

    @Test
    void convolutionsWithTheGatedInputAsA() {
        // the image as A (M = output pixels, runs along K), the weights as B
        check(swapped(conv(2, 5, 7, 9, 3, 2, 1)), new long[0]);
        check(swapped(conv(1, 4, 6, 7, 5, 1, 2, true)), new long[0]);
        check(swapped(conv(1, 16, 20, 14, 3, 1, 1)), new long[0]);
    }

    @Test
    void gatedOperandAtTheVeryEndOfItsSegmentIsNotReadOutside() {
        // the input is exactly as long as its valid elements; padding addresses lie before its start and past its end
        Contraction c = conv(1, 2, 3, 5, 3, 1, 1);
        try (Arena arena = Arena.ofShared()) {
            MemorySegment[] bufs = buffers(arena, c, 7);
            assertThat(bufs[2].byteSize()).isEqualTo(4L * 2 * 5 * 5);
            new GemmKernel(c).run(bufs, new long[0]);
            assertThat(mismatches(reference(c, bufs, new long[0], -1), bufs[0])).isEmpty();
        }
    }

    @Test
    void multiVariableRolesInEveryOrder() {
        // M = (m1, m2), N = (n1, n2), K = (k1, k2) interleaved in the variable list; A[m1][k1][m2][k2], B[k2][n1][k1][n2]
        List<Var> vars = List.of(v("k1", Role.K, 3), v("m1", Role.M, 4), v("n1", Role.N, 5), v("m2", Role.M, 7),
                v("k2", Role.K, 6), v("n2", Role.N, 9));
        Operand a = op(1, 0, 6 * 7, 3 * 7 * 6, 0, 6, 1, 0);
        Operand b = op(2, 0, 9, 0, 3 * 9, 0, 5 * 3 * 9, 1);
        Operand cc = op(0, 0, 0, 7 * 45, 9, 45, 0, 1);
        check(new Contraction(vars, a, b, cc), new long[0]);
    }

    @Test
    void runsAcrossVariablesThatContinueOneAnother() {
        // N = (n1, n2) and K = (k1, k2) are contiguous row-major blocks, so a run spans both variables; the gates
        // (a slice of the flattened index) move with them, and A's gate also depends on m
        List<Var> vars = List.of(v("m", Role.M, 7), v("n1", Role.N, 4), v("n2", Role.N, 5), v("k1", Role.K, 3), v("k2", Role.K, 4));
        Operand a = new Operand(1, 0, new long[] {12, 0, 0, 4, 1}, List.of(new Gate(new long[] {1, 0, 0, 4, 1}, 3, 14)));
        Operand b = new Operand(2, -2, new long[] {0, 5, 1, 20 * 4, 20}, List.of(new Gate(new long[] {0, 5, 1, 0, 0}, 2, 17)));
        check(new Contraction(vars, a, b, op(0, 0, 20, 5, 1, 0, 0)), new long[0]);
        // an unpadded 1x1 convolution: the pixels are one run
        check(conv(2, 6, 9, 8, 1, 1, 0), new long[0]);
    }

    @Test
    void rolesWithoutVariables() {
        // an outer product (no K variable: one term) and a vector-matrix product (no M variable: one row)
        check(new Contraction(List.of(v("i", Role.M, 7), v("j", Role.N, 9)), op(1, 0, 1, 0), op(2, 0, 0, 1), op(0, 0, 9, 1)),
                new long[0]);
        check(new Contraction(List.of(v("n", Role.N, 33), v("k", Role.K, 20)), op(1, 0, 0, 1), op(2, 0, 1, 33), op(0, 0, 1, 0)),
                new long[0]);
    }

    @Test
    void symbolicLimits() {
        // M var limited by vals[0], the inner N var by vals[1]: points beyond stay unwritten (NaN)
        List<Var> vars = List.of(new Var("m", Role.M, 40, 0), v("n1", Role.N, 3), new Var("n2", Role.N, 20, 1), v("k", Role.K, 17));
        Contraction c = new Contraction(vars, op(1, 0, 17, 0, 0, 1), op(2, 0, 0, 20, 1, 60), op(0, 0, 60, 20, 1, 0));
        check(c, new long[] {40, 20});
        check(c, new long[] {13, 7});
        check(c, new long[] {100, 1});
        try (Arena arena = Arena.ofShared()) {
            // one kernel, changing limits (its cached plans)
            MemorySegment[] bufs = buffers(arena, c, 3);
            GemmKernel kernel = new GemmKernel(c);
            for (long[] vals : List.of(new long[] {5, 20}, new long[] {40, 20}, new long[] {5, 20}, new long[] {39, 11})) {
                kernel.run(bufs, vals);
                assertThat(mismatches(reference(c, bufs, vals, -1), bufs[0])).isEmpty();
            }
        }
    }

    @Test
    void emptySumIsNegativeZero() {
        List<Var> vars = List.of(v("m", Role.M, 4), v("n", Role.N, 5), new Var("k", Role.K, 8, 0));
        Contraction c = new Contraction(vars, op(1, 0, 8, 0, 1), op(2, 0, 0, 1, 5), op(0, 0, 5, 1, 0));
        try (Arena arena = Arena.ofShared()) {
            MemorySegment[] bufs = buffers(arena, c, 1);
            new GemmKernel(c).run(bufs, new long[] {0});
            for (int i = 0; i < 20; i++) assertThat(Float.floatToRawIntBits(bufs[0].get(F, 4L * i))).isEqualTo(0x80000000);
        }
    }

    @Test
    void sumsOfNegativeZerosStayNegativeZero() {
        // K over two KC blocks: the first stores, the second adds, and -0.0 + -0.0 stays -0.0
        Contraction c = matmul(7, 35, GemmKernel.KC + 5, false, false, false, 0);
        try (Arena arena = Arena.ofShared()) {
            MemorySegment[] bufs = buffers(arena, c, 1);
            for (long i = 0; i < bufs[1].byteSize() / 4; i++) bufs[1].set(F, 4 * i, -0.0f);
            for (long i = 0; i < bufs[2].byteSize() / 4; i++) bufs[2].set(F, 4 * i, Math.abs(bufs[2].get(F, 4 * i)));
            new GemmKernel(c).run(bufs, new long[0]);
            for (int i = 0; i < 7 * 35; i++) assertThat(Float.floatToRawIntBits(bufs[0].get(F, 4L * i))).isEqualTo(0x80000000);
        }
    }

    @Test
    void theBoundCatchesADroppedTermAndAWrongIndex() {
        Contraction c = matmul(23, 37, 300, false, false, false, 0);
        try (Arena arena = Arena.ofShared()) {
            MemorySegment[] bufs = buffers(arena, c, 5);
            new GemmKernel(c).run(bufs, new long[0]);
            assertThat(mismatches(reference(c, bufs, new long[0], -1), bufs[0])).isEmpty();
            assertThat(mismatches(reference(c, bufs, new long[0], 150), bufs[0])).as("one term left out").isNotEmpty();
            // the reference reading B one column over (B[k][n+1]): a wrong index
            Contraction wrong = new Contraction(c.vars(), c.a(), op(2, 1, 0, 1, 37), c.c());
            MemorySegment[] shifted = {bufs[0], bufs[1], arena.allocate(bufs[2].byteSize() + 4, 4)};
            shifted[2].copyFrom(bufs[2]);
            assertThat(mismatches(reference(wrong, shifted, new long[0], -1), bufs[0])).as("B shifted by one element").isNotEmpty();
        }
    }

    @Test
    void tooSmallSegmentsAreRefusedBeforeAnyWrite() {
        Contraction c = matmul(8, 9, 10, false, false, false, 0);
        try (Arena arena = Arena.ofShared()) {
            MemorySegment[] bufs = buffers(arena, c, 1);
            MemorySegment[] shortB = {bufs[0], bufs[1], bufs[2].asSlice(0, bufs[2].byteSize() - 4)};
            assertThatThrownBy(() -> new GemmKernel(c).run(shortB, new long[0])).isInstanceOf(IndexOutOfBoundsException.class)
                    .hasMessageContaining("operand B").hasMessageContaining("89");
            MemorySegment[] shortC = {bufs[0].asSlice(4), bufs[1], bufs[2]};
            assertThatThrownBy(() -> new GemmKernel(c).run(shortC, new long[0])).isInstanceOf(IndexOutOfBoundsException.class)
                    .hasMessageContaining("result");
            assertThat(Float.isNaN(bufs[0].get(F, 0))).as("nothing written").isTrue();
        }
    }

    @Test
    void runsFromInsideAWorker() {
        Contraction c = matmul(120, 130, 70, false, false, false, 0);
        try (Arena arena = Arena.ofShared()) {
            MemorySegment[] bufs = buffers(arena, c, 9);
            GemmKernel kernel = new GemmKernel(c);
            WorkerPool.pool().submit(() -> kernel.run(bufs, new long[0])).join();
            assertThat(mismatches(reference(c, bufs, new long[0], -1), bufs[0])).isEmpty();
        }
    }

    /**
     * {@link GemmDots} sums a vector's lanes in one fixed order (halves added pairwise down to one lane), the order it
     * documents, so a dot product's bits do not depend on whether HotSpot has compiled the caller: {@code reduceLanes}
     * summed in another order compiled than interpreted, and a decode step's logits changed as the JVM warmed up.
     */
    @Test
    void dotsSumLanesInOneFixedPairwiseOrder() {
        var species = jdk.incubator.vector.FloatVector.SPECIES_PREFERRED;
        Random r = new Random(7);
        for (int t = 0; t < 1000; t++) {
            float[] lanes = new float[species.length()];
            for (int i = 0; i < lanes.length; i++) lanes[i] = (float) (r.nextGaussian() * Math.pow(10, r.nextInt(8) - 4));
            float[] want = lanes.clone();
            for (int h = want.length / 2; h >= 1; h /= 2) for (int i = 0; i < h; i++) want[i] += want[i + h];
            assertThat(GemmDots.sum(jdk.incubator.vector.FloatVector.fromArray(species, lanes, 0))).as("lanes %s", java.util.Arrays.toString(lanes))
                    .isEqualTo(want[0]);
        }
    }
}

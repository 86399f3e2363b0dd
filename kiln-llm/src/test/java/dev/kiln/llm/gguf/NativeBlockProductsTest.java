package dev.kiln.llm.gguf;

import dev.kiln.Tensor;
import dev.kiln.clang.CCompiler;
import dev.kiln.clang.ClangDevice;
import dev.kiln.runtime.DeviceRegistry;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;
import org.junit.jupiter.params.provider.ValueSource;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;
import java.lang.foreign.ValueLayout;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * {@link NativeBlockProducts} (the CLANG device's C dot products for Q8_0 and Q4_0) against dequantise-then-multiply in
 * double precision, within {@link QuantizedMatmulTest}'s f32 summation bound: rows of one to 70 blocks (the loops' first,
 * last and only block), 1 to 9 rows of w (four at a time and the rest alone), 1 to 24 rows of x (one at a time, and four
 * by four in the AVX-512 tile, with the rest one at a time), segments on the
 * Java heap as well as native ones, a product large enough to be split over the workers, and the GEMM of many rows. Skipped, with the reason,
 * where the machine has no C compiler.
 */
class NativeBlockProductsTest {
    private static NativeBlockProducts natives;

    @BeforeAll
    static void compile() {
        var reason = DeviceRegistry.providers().get("CLANG").unavailableReason();
        Assumptions.assumeTrue(reason.isEmpty(), () -> "CLANG device unavailable: " + reason.orElse(""));
        natives = NativeBlockProducts.forDevice(DeviceRegistry.get("CLANG")).orElseThrow();
    }

    private static float[] dequantized(GgmlType type, MemorySegment data, int n, int k) {
        float[] w = new float[n * k];
        long rowBytes = type.rowBytes(k);
        for (int j = 0; j < n; j++) Dequantize.row(type, data.asSlice(j * rowBytes, rowBytes), w, j * k, k);
        return w;
    }

    @ParameterizedTest
    @EnumSource(value = GgmlType.class, names = {"Q8_0", "Q4_0"})
    void productsMatchDequantiseThenMultiply(GgmlType type) {
        productsMatch(natives, type);
    }

    /**
     * The source's other paths, compiled here for older x86-64 CPUs: AVX2 with FMA and F16C ({@code -march=x86-64-v3}),
     * and plain C with the f16 scales converted in C ({@code -march=x86-64}).
     */
    @ParameterizedTest
    @ValueSource(strings = {"x86-64-v3", "x86-64"})
    void theAvx2AndPortablePathsToo(String march) throws IOException {
        NativeBlockProducts compiled = compiledFor(march);
        for (GgmlType type : new GgmlType[] {GgmlType.Q8_0, GgmlType.Q4_0}) productsMatch(compiled, type);
    }

    private static void productsMatch(NativeBlockProducts natives, GgmlType type) {
        try (Arena arena = Arena.ofShared()) {
            for (int k : new int[] {32, 64, 96, 2240}) {
                for (int n : new int[] {1, 3, 4, 5, 9}) {
                    MemorySegment data = QuantizedMatmulTest.randomBlocks(type, n, k, 31L * k + n, arena);
                    float[] w = dequantized(type, data, n, k);
                    for (int rows : new int[] {1, 2, 3, 4, 5, 7, 8, 9, 13, 24}) {
                        float[] x = QuantizedMatmulTest.random(rows * k, rows * 17L + k + n);
                        MemorySegment xs = arena.allocate(4L * rows * k, 64), out = arena.allocate(4L * rows * n, 64);
                        MemorySegment.copy(x, 0, xs, ValueLayout.JAVA_FLOAT, 0, x.length);
                        QuantizedMatmul.multiply(type, data, n, k, xs, rows, out, natives);
                        QuantizedMatmulTest.check(out.toArray(ValueLayout.JAVA_FLOAT), x, w, rows, n, k);
                    }
                }
            }
        }
    }

    /**
     * More rows than the dot products take (prefill) go through the GEMM: partial tiles of x's rows (25, 37, 100 rows
     * against tiles of 12, 6 or 4; 8 and 13 rows, which the GEMM takes with x quantised where VNNI runs it), partial panels of w (1, 31, 70 rows; the odd 1,030 split over the workers), k in one
     * pass, in two passes with a partial second (288) and in three (544), on every path; x in f32, and quantised to Q8_0
     * (VNNI's byte products where the CPU has them: within the f32 bound of the exact product of the quantised values).
     */
    @ParameterizedTest
    @ValueSource(strings = {"native", "x86-64-v3", "x86-64"})
    void manyRowsGoThroughTheGemm(String build) throws IOException {
        NativeBlockProducts products = build.equals("native") ? natives : compiledFor(build);
        for (GgmlType type : new GgmlType[] {GgmlType.Q8_0, GgmlType.Q4_0}) {
            try (Arena arena = Arena.ofShared()) {
                for (int k : new int[] {32, 288, 544}) {
                    for (int n : new int[] {1, 31, 70, 1030}) {
                        MemorySegment data = QuantizedMatmulTest.randomBlocks(type, n, k, 13L * k + n, arena);
                        float[] w = dequantized(type, data, n, k);
                        for (int rows : new int[] {8, 13, 25, 37, 100}) {
                            if (n == 1030 && rows != 37) continue;
                            float[] x = QuantizedMatmulTest.random(rows * k, rows * 5L + k + n);
                            MemorySegment xs = arena.allocate(4L * rows * k, 64), out = arena.allocate(4L * rows * n, 64);
                            MemorySegment.copy(x, 0, xs, ValueLayout.JAVA_FLOAT, 0, x.length);
                            for (boolean quantised : new boolean[] {false, true}) {
                                out.fill((byte) 0x7f);
                                QuantizedMatmul.multiply(type, data, n, k, xs, rows, out, products.withQuantizedActivations(quantised));
                                float[] exact = x;
                                if (quantised) { // the exact product of the quantised values (see the test below)
                                    exact = new float[rows * k];
                                    Dequantize.row(GgmlType.Q8_0, NativeBlockProducts.quantizeQ8_0(xs, (long) rows * k), exact, 0, rows * k);
                                }
                                QuantizedMatmulTest.check(out.toArray(ValueLayout.JAVA_FLOAT), exact, w, rows, n, k);
                            }
                        }
                    }
                }
            }
        }
    }

    /**
     * With x quantised to Q8_0 (llama.cpp's products): within the f32 bound of the exact product of the dequantised
     * weights with the dequantised x, whose values d_x * q_x, like d_w * q_w, are exact in f32 (11 bits times 8), so
     * that only the kernel's f32 sums of exact block sums can differ. Every path: this CPU's, AVX2, plain C.
     */
    @ParameterizedTest
    @ValueSource(strings = {"native", "x86-64-v3", "x86-64"})
    void quantisedActivationsMatchTheExactProductOfTheQuantisedValues(String build) throws IOException {
        NativeBlockProducts products = (build.equals("native") ? natives : compiledFor(build)).withQuantizedActivations(true);
        for (GgmlType type : new GgmlType[] {GgmlType.Q8_0, GgmlType.Q4_0}) {
            try (Arena arena = Arena.ofShared()) {
                for (int k : new int[] {32, 96, 2240}) {
                    int n = 9;
                    MemorySegment data = QuantizedMatmulTest.randomBlocks(type, n, k, 7L * k, arena);
                    float[] w = dequantized(type, data, n, k);
                    for (int rows : new int[] {1, 3, 4, 8}) {
                        float[] x = QuantizedMatmulTest.random(rows * k, rows + k);
                        MemorySegment xs = arena.allocate(4L * rows * k, 64), out = arena.allocate(4L * rows * n, 64);
                        MemorySegment.copy(x, 0, xs, ValueLayout.JAVA_FLOAT, 0, x.length);
                        QuantizedMatmul.multiply(type, data, n, k, xs, rows, out, products);
                        float[] xq = new float[rows * k];
                        Dequantize.row(GgmlType.Q8_0, NativeBlockProducts.quantizeQ8_0(xs, (long) rows * k), xq, 0, rows * k);
                        QuantizedMatmulTest.check(out.toArray(ValueLayout.JAVA_FLOAT), xq, w, rows, n, k);
                    }
                }
            }
        }
    }

    /**
     * Batch invariance: a row of x gets the same bits whether it is multiplied alone (decode) or among others (a
     * server's batched step), so a sequence's tokens do not depend on what else runs. x in f32: one row through the dot
     * products, two to four through the tiles of x's rows (up to {@value NativeBlockProducts#MAX_ROWS} rows). x
     * quantised: up to {@value NativeBlockProducts#Q8_DOT_ROWS} rows the dot products, beyond that the int8 GEMM where
     * VNNI runs it (AVX2 and plain C keep the dot products up to {@value NativeBlockProducts#MAX_ROWS} rows). Rows of w
     * in the kernels' groups and alone (n = 9, 16, 41), k of one to three blocks and in one, two and three of the int8
     * GEMM's passes (32, 64, 96, 288, 544),
     * a product split over the workers (n = 1030), on every path.
     */
    @ParameterizedTest
    @ValueSource(strings = {"native", "x86-64-v3", "x86-64"})
    void aRowOfXGetsTheSameBitsAloneOrInABatch(String build) throws IOException {
        NativeBlockProducts compiled = build.equals("native") ? natives : compiledFor(build);
        for (boolean quantised : new boolean[] {false, true}) {
            NativeBlockProducts products = compiled.withQuantizedActivations(quantised);
            for (GgmlType type : new GgmlType[] {GgmlType.Q8_0, GgmlType.Q4_0}) {
                try (Arena arena = Arena.ofShared()) {
                    for (int k : new int[] {32, 64, 96, 288, 544}) {
                        for (int n : new int[] {9, 16, 41, 1030}) {
                            MemorySegment data = QuantizedMatmulTest.randomBlocks(type, n, k, 5L * k + n, arena);
                            int most = 13;
                            float[] x = QuantizedMatmulTest.random(most * k, 3L * k + n);
                            MemorySegment xs = arena.allocate(4L * most * k, 64);
                            MemorySegment.copy(x, 0, xs, ValueLayout.JAVA_FLOAT, 0, x.length);
                            float[][] alone = new float[most][];
                            for (int r = 0; r < most; r++) {
                                MemorySegment out = arena.allocate(4L * n, 64);
                                QuantizedMatmul.multiply(type, data, n, k, xs.asSlice(4L * r * k, 4L * k), 1, out, products);
                                alone[r] = out.toArray(ValueLayout.JAVA_FLOAT);
                            }
                            for (int rows : new int[] {2, 3, 4, 7, 8, 13}) {
                                MemorySegment out = arena.allocate(4L * rows * n, 64);
                                QuantizedMatmul.multiply(type, data, n, k, xs, rows, out, products);
                                for (int r = 0; r < rows; r++) {
                                    assertThat(out.asSlice(4L * r * n, 4L * n).toArray(ValueLayout.JAVA_FLOAT))
                                            .as("%s %s, x %s, k %d, n %d: row %d of %d", build, type, quantised ? "quantised" : "f32", k, n, r, rows)
                                            .containsExactly(alone[r]);
                                }
                            }
                        }
                    }
                }
            }
        }
    }

    /**
     * Weights interleaved by 16 rows (what the products read with x quantised where VNNI runs them) give every row of x
     * the bits of the plain weights' GEMM (30 rows of x: the GEMM on every path), through the dot products (one row, and
     * four, three, two and one rows of x a pass, up to {@value NativeBlockProducts#I16_DOT_ROWS} rows) and the
     * interleaved GEMM (13 and 30 rows): the same integer sums in the same order. n = 16 (one group), 41 (two and 9
     * plain rows after them), 1030 (split over the workers); k in one and several of the GEMM's passes, and long enough
     * (12,800) that x's block sums leave the stack; every path. The copy is made once and freed by close().
     */
    @ParameterizedTest
    @ValueSource(strings = {"native", "x86-64-v3", "x86-64"})
    void interleavedWeightsGiveThePlainGemmsBits(String build) throws IOException {
        for (GgmlType type : new GgmlType[] {GgmlType.Q8_0, GgmlType.Q4_0}) {
            try (Arena arena = Arena.ofShared(); NativeBlockProducts products = (build.equals("native") ? natives : compiledFor(build)).withQuantizedActivations(true)) {
                for (int k : new int[] {32, 288, 544, 12_800}) {
                    for (int n : new int[] {16, 41, 1030}) {
                        if (k == 12_800 && n != 16) continue; // 12 rows of 400 blocks: x's block sums past the C's stack buffer
                        MemorySegment data = QuantizedMatmulTest.randomBlocks(type, n, k, 11L * k + n, arena);
                        GgufTensor t = new GgufTensor(Path.of("interleaved.gguf"), "w" + n + "x" + k, type, new int[] {k, n}, 0, data.byteSize(), data);
                        MemorySegment interleaved = products.interleaved(t, data, k);
                        assertThat(products.interleaved(t, data, k)).as("made once").isSameAs(interleaved);
                        assertThat(interleaved.asSlice(0, 16 * type.rowBytes(k)).mismatch(data.asSlice(0, 16 * type.rowBytes(k)))).as("reordered").isNotEqualTo(-1L);
                        int most = 30;
                        float[] x = QuantizedMatmulTest.random(most * k, 7L * k + n);
                        MemorySegment xs = arena.allocate(4L * most * k, 64), plain = arena.allocate(4L * most * n, 64);
                        MemorySegment.copy(x, 0, xs, ValueLayout.JAVA_FLOAT, 0, x.length);
                        QuantizedMatmul.multiply(type, data, n, k, xs, most, plain, products);
                        for (int rows : new int[] {1, 2, 3, 6, 7, 8, NativeBlockProducts.I16_DOT_ROWS, NativeBlockProducts.I16_DOT_ROWS + 1, most}) {
                            MemorySegment out = arena.allocate(4L * rows * n, 64);
                            QuantizedMatmul.multiply(type, interleaved, n, k, xs, rows, out, products, true);
                            for (int r = 0; r < rows; r++) {
                                assertThat(out.asSlice(4L * r * n, 4L * n).toArray(ValueLayout.JAVA_FLOAT))
                                        .as("%s %s, k %d, n %d: row %d of %d", build, type, k, n, r, rows)
                                        .containsExactly(plain.asSlice(4L * r * n, 4L * n).toArray(ValueLayout.JAVA_FLOAT));
                            }
                        }
                    }
                }
                products.close();
                GgufTensor t = new GgufTensor(Path.of("interleaved.gguf"), "after", type, new int[] {32, 16}, 0, 16 * type.rowBytes(32),
                        QuantizedMatmulTest.randomBlocks(type, 16, 32, 1, arena));
                assertThatThrownBy(() -> products.interleaved(t, t.data(), 32)).isInstanceOf(IllegalStateException.class).hasMessageContaining("closed");
            }
        }
    }

    /**
     * Matrices stacked into one product (a layer's q, k and v) give each part's columns the bits of its own product: 32,
     * 16 and 9 rows (the last not whole groups), 1 and 5 rows of x. Only where VNNI reads interleaved weights; elsewhere,
     * and for parts that cannot stack (a first part not whole groups, two types, x in f32), stackable says no.
     */
    @Test
    void stackedMatricesGiveEachPartItsOwnBits() {
        try (Arena arena = Arena.ofShared(); NativeBlockProducts q8 = natives.withQuantizedActivations(true)) {
            for (GgmlType type : new GgmlType[] {GgmlType.Q8_0, GgmlType.Q4_0}) {
                int k = 96;
                List<BlockTensor> parts = new ArrayList<>();
                for (int n : new int[] {32, 16, 9}) {
                    MemorySegment data = QuantizedMatmulTest.randomBlocks(type, n, k, 17L * n, arena);
                    parts.add(BlockTensor.of(new GgufTensor(Path.of("stacked.gguf"), type + "_" + n, type, new int[] {k, n}, 0, data.byteSize(), data).toTensor())
                            .orElseThrow());
                }
                assertThat(BlockTensor.stackable(natives, parts)).as("x in f32").isFalse();
                assertThat(BlockTensor.stackable(q8, List.of(parts.get(2), parts.get(0)))).as("a first part of 9 rows").isFalse();
                assertThat(BlockTensor.stackable(q8, parts)).isEqualTo(natives.q8Vectorised());
                if (!natives.q8Vectorised()) continue;
                for (int rows : new int[] {1, 5}) {
                    Tensor x = Tensor.of(QuantizedMatmulTest.random(rows * k, rows), rows, k);
                    float[] stacked = BlockTensor.linearStacked(x, null, q8, parts).toFloatArray();
                    int at = 0;
                    for (BlockTensor part : parts) {
                        float[] alone = part.linear(x, null, q8).toFloatArray();
                        for (int r = 0; r < rows; r++) {
                            assertThat(Arrays.copyOfRange(stacked, r * 57 + at, r * 57 + at + part.rows())).as("%s rows %d, part %s, row %d", type, rows, part, r)
                                    .containsExactly(Arrays.copyOfRange(alone, r * part.rows(), (r + 1) * part.rows()));
                        }
                        at += part.rows();
                    }
                }
            }
        }
    }

    /**
     * Matrices the graphs plan to read interleaved are made ahead on a thread of their own, in the order planned: the
     * products then find them made, the same bytes as made on demand (stacks of two parts, one part, two types). A close
     * while the thread runs stops it after the copy under way; the copies are freed and later requests get "closed".
     */
    @Test
    void plannedMatricesAreInterleavedAhead() throws Exception {
        try (Arena arena = Arena.ofShared(); NativeBlockProducts ahead = natives.withQuantizedActivations(true);
             NativeBlockProducts onDemand = natives.withQuantizedActivations(true)) {
            int k = 64;
            List<List<GgufTensor>> stacks = new ArrayList<>();
            int seed = 0;
            for (int[] rows : new int[][] {{32, 16}, {48}, {16, 9}}) {
                GgmlType type = stacks.size() == 1 ? GgmlType.Q4_0 : GgmlType.Q8_0;
                List<GgufTensor> stack = new ArrayList<>();
                for (int n : rows) {
                    MemorySegment data = QuantizedMatmulTest.randomBlocks(type, n, k, ++seed, arena);
                    stack.add(new GgufTensor(Path.of("ahead.gguf"), "w" + seed, type, new int[] {k, n}, 0, data.byteSize(), data));
                }
                stacks.add(stack);
                ahead.plan(stack);
            }
            assertThat(ahead.made(stacks.getFirst())).isEmpty();
            ahead.interleaveAhead();
            Thread thread = ahead.ahead().orElseThrow();
            thread.join(60_000);
            assertThat(thread.isAlive()).isFalse();
            for (List<GgufTensor> stack : stacks) {
                MemorySegment made = ahead.made(stack).orElseThrow(() -> new AssertionError("not made ahead: " + stack));
                assertThat(ahead.interleaved(stack, stack.stream().map(GgufTensor::data).toList(), k)).isSameAs(made);
                MemorySegment reference = onDemand.interleaved(stack, stack.stream().map(GgufTensor::data).toList(), k);
                assertThat(made.mismatch(reference)).as("%s", stack).isEqualTo(-1L);
            }
        }
        try (Arena arena = Arena.ofShared()) {
            NativeBlockProducts closing = natives.withQuantizedActivations(true);
            List<GgufTensor> last = null;
            for (int i = 0; i < 24; i++) {
                MemorySegment data = QuantizedMatmulTest.randomBlocks(GgmlType.Q8_0, 1024, 512, i, arena);
                last = List.of(new GgufTensor(Path.of("closing.gguf"), "w" + i, GgmlType.Q8_0, new int[] {512, 1024}, 0, data.byteSize(), data));
                closing.plan(last);
            }
            closing.interleaveAhead();
            closing.close();
            Thread thread = closing.ahead().orElseThrow();
            thread.join(60_000);
            assertThat(thread.isAlive()).isFalse();
            assertThat(closing.made(last)).isEmpty();
            List<GgufTensor> stack = last;
            assertThatThrownBy(() -> closing.interleaved(stack, List.of(stack.getFirst().data()), 512)).isInstanceOf(IllegalStateException.class)
                    .hasMessageContaining("closed");
        }
    }

    /**
     * Attention of a few rows over one layer's caches against the same in double precision: groups of 1, 2, 4 and 5
     * query heads a key/value head (5: a block of four and one padded), head sizes 64, 80 (a rest of 16) and 72 (lane
     * by lane after the vectors), caches in f32 and f16, a sliding window, rows at different positions and a length short
     * of the context. The bound: f32 dot products and sums of up to 40 terms, e^x within 2 ulp, a few roundings each
     * (1e-5 of the values' scale). A row's outputs are the same bits alone as among the others, and with the work split
     * into shares; a row at a position with no key to see gets NaN, as the softmax of nothing but -inf does. Every build.
     */
    @ParameterizedTest
    @ValueSource(strings = {"native", "x86-64-v3", "x86-64"})
    void attentionMatchesDoublePrecision(String build) throws IOException {
        NativeBlockProducts products = build.equals("native") ? natives : compiledFor(build);
        int context = 48, length = 40;
        for (int[] shape : new int[][] {{8, 8, 64}, {8, 4, 64}, {4, 1, 64}, {8, 2, 80}, {10, 2, 72}, {5, 5, 64}}) {
            int heads = shape[0], kvHeads = shape[1], hd = shape[2], group = heads / kvHeads, kvDim = kvHeads * hd;
            for (boolean f16 : new boolean[] {false, true}) {
                for (int window : new int[] {0, 7}) {
                    Random random = new Random(31L * heads + hd + (f16 ? 1 : 0) + window);
                    long[] positions = {39, 0, 17, 38, 5};
                    int rows = positions.length;
                    float[] q = new float[rows * heads * hd], k = new float[context * kvDim], v = new float[context * kvDim];
                    for (int i = 0; i < q.length; i++) q[i] = (float) random.nextGaussian();
                    for (int i = 0; i < k.length; i++) {
                        k[i] = (float) random.nextGaussian();
                        v[i] = (float) random.nextGaussian();
                        if (f16) {
                            k[i] = Float.float16ToFloat(Float.floatToFloat16(k[i]));
                            v[i] = Float.float16ToFloat(Float.floatToFloat16(v[i]));
                        }
                    }
                    float scale = (float) (1 / Math.sqrt(hd));
                    try (Arena arena = Arena.ofShared()) {
                        MemorySegment qs = arena.allocateFrom(ValueLayout.JAVA_FLOAT, q), ks = cache(arena, k, f16), vs = cache(arena, v, f16);
                        MemorySegment pos = arena.allocateFrom(ValueLayout.JAVA_LONG, positions), out = arena.allocate(4L * rows * heads * hd);
                        products.attention(qs, rows, heads, kvHeads, hd, ks, vs, f16, pos, length, window, scale, out);
                        float[] got = out.toArray(ValueLayout.JAVA_FLOAT);
                        String what = build + " heads " + heads + "/" + kvHeads + ", hd " + hd + (f16 ? ", f16" : ", f32") + ", window " + window;
                        for (int r = 0; r < rows; r++) {
                            for (int h = 0; h < heads; h++) {
                                int g = h / group, p = (int) positions[r], lo = window > 0 ? Math.max(0, p - window + 1) : 0;
                                double[] e = new double[p + 1];
                                double max = Double.NEGATIVE_INFINITY, sum = 0;
                                for (int j = lo; j <= p; j++) {
                                    double d = 0;
                                    for (int t = 0; t < hd; t++) d += (double) q[(r * heads + h) * hd + t] * k[j * kvDim + g * hd + t];
                                    e[j] = d * scale;
                                    max = Math.max(max, e[j]);
                                }
                                for (int j = lo; j <= p; j++) sum += e[j] = Math.exp(e[j] - max);
                                for (int t = 0; t < hd; t++) {
                                    double want = 0;
                                    for (int j = lo; j <= p; j++) want += e[j] / sum * v[j * kvDim + g * hd + t];
                                    assertThat((double) got[(r * heads + h) * hd + t]).as("%s: row %d head %d lane %d", what, r, h, t).isCloseTo(want, within(1e-5));
                                }
                            }
                        }
                        // row 2 alone, and all rows in shares of one unit each: the same bits
                        MemorySegment alone = arena.allocate(4L * heads * hd);
                        products.attention(qs.asSlice(4L * 2 * heads * hd), 1, heads, kvHeads, hd, ks, vs, f16, pos.asSlice(16), length, window, scale, alone);
                        assertThat(alone.toArray(ValueLayout.JAVA_FLOAT)).as(what + ": row 2 alone")
                                .containsExactly(Arrays.copyOfRange(got, 2 * heads * hd, 3 * heads * hd));
                    }
                }
            }
        }
        try (Arena arena = Arena.ofShared()) { // a position before every key
            MemorySegment out = arena.allocate(4L * 2 * 64);
            products.attention(arena.allocate(4L * 2 * 64), 1, 2, 1, 64, arena.allocate(4L * 8 * 64), arena.allocate(4L * 8 * 64), false,
                    arena.allocateFrom(ValueLayout.JAVA_LONG, -1), 8, 0, 0.125f, out);
            for (float f : out.toArray(ValueLayout.JAVA_FLOAT)) assertThat(f).isNaN();
        }
    }

    private static MemorySegment cache(Arena arena, float[] values, boolean f16) {
        if (!f16) return arena.allocateFrom(ValueLayout.JAVA_FLOAT, values);
        MemorySegment s = arena.allocate(2L * values.length);
        for (int i = 0; i < values.length; i++) s.setAtIndex(ValueLayout.JAVA_SHORT, i, Float.floatToFloat16(values[i]));
        return s;
    }

    /** Interleaved weights are read only by products that quantise x (the f32 products read rows as they are). */
    @Test
    void interleavedWeightsNeedQuantisedX() {
        try (Arena arena = Arena.ofShared()) {
            MemorySegment data = QuantizedMatmulTest.randomBlocks(GgmlType.Q8_0, 16, 32, 2, arena), x = arena.allocate(4 * 32), out = arena.allocate(4 * 16);
            assertThatThrownBy(() -> QuantizedMatmul.multiply(GgmlType.Q8_0, data, 16, 32, x, 1, out, natives, true))
                    .isInstanceOf(IllegalStateException.class).hasMessageContaining("interleaved");
            assertThat(natives.interleaves(GgmlType.Q8_0, 16)).isFalse();
            try (NativeBlockProducts q8 = natives.withQuantizedActivations(true)) {
                assertThat(q8.interleaves(GgmlType.Q4_0, 16)).isEqualTo(natives.q8Vectorised());
                assertThat(q8.interleaves(GgmlType.Q4_0, 15)).isFalse();
                assertThat(q8.interleaves(GgmlType.Q4_K, 64)).isFalse();
            }
        }
    }

    /**
     * x to Q8_0 as llama.cpp's quantize_row_q8_0: d = max|x| / 127 as f16; q = rint(x * 127 / max|x|) (ties to even, so
     * 0.5 -> 0 and 1.5 -> 2 when the block's max is 127); a block of zeros all zero.
     */
    @Test
    void quantisingXFollowsLlamaCpp() {
        float[] x = new float[64];
        x[0] = 127f;
        x[1] = -127f;
        x[2] = 0.5f;
        x[3] = 1.5f;
        x[4] = -2.5f;
        x[5] = 3.4f;
        // x[32..64): zeros
        MemorySegment q = NativeBlockProducts.quantizeQ8_0(MemorySegment.ofArray(x), 64);
        assertThat(Float.float16ToFloat(q.get(ValueLayout.JAVA_SHORT_UNALIGNED, 0))).isEqualTo(1f);
        assertThat(new byte[] {q.get(ValueLayout.JAVA_BYTE, 2), q.get(ValueLayout.JAVA_BYTE, 3), q.get(ValueLayout.JAVA_BYTE, 4),
                q.get(ValueLayout.JAVA_BYTE, 5), q.get(ValueLayout.JAVA_BYTE, 6), q.get(ValueLayout.JAVA_BYTE, 7)}).containsExactly(127, -127, 0, 2, -2, 3);
        assertThat(q.get(ValueLayout.JAVA_SHORT_UNALIGNED, 34)).isZero();
        for (int i = 0; i < 32; i++) assertThat(q.get(ValueLayout.JAVA_BYTE, 36 + i)).isZero();
    }

    /**
     * The products' quantiser in C gives {@link NativeBlockProducts#quantizeQ8_0}'s bytes on every path: random blocks of
     * mixed magnitudes (large, tiny, subnormal), llama.cpp's ties, a block of zeros and of negative zeros, a block with a
     * NaN (max NaN, q all 0), one with an infinity (d infinite, q 0 or NaN's 0), and a block whose max rounds to f16's
     * largest value; and the buffer it returns is reused by the next call, its length the call's.
     */
    @ParameterizedTest
    @ValueSource(strings = {"native", "x86-64-v3", "x86-64"})
    void theQuantiserInCGivesJavasBytes(String build) throws IOException {
        NativeBlockProducts products = build.equals("native") ? natives : compiledFor(build);
        int blocks = 40;
        float[] x = new float[32 * blocks];
        java.util.Random random = new java.util.Random(11);
        for (int i = 0; i < 32 * 32; i++) {
            float scale = switch (i / 32 % 4) {
                case 0 -> 1f;
                case 1 -> 1e4f;
                case 2 -> 1e-3f;
                default -> 1e-41f; // subnormal
            };
            x[i] = (float) random.nextGaussian() * scale;
        }
        float[] ties = {127f, -127f, 0.5f, 1.5f, -2.5f, 3.4f, -0.5f, 126.5f};
        System.arraycopy(ties, 0, x, 32 * 32, ties.length);
        for (int i = 0; i < 32; i++) x[33 * 32 + i] = -0f;
        // block 34 all zeros
        for (int i = 0; i < 32; i++) x[35 * 32 + i] = i - 16;
        x[35 * 32 + 7] = Float.NaN;
        for (int i = 0; i < 32; i++) x[36 * 32 + i] = i;
        x[36 * 32 + 3] = Float.NEGATIVE_INFINITY;
        for (int i = 0; i < 32; i++) x[37 * 32 + i] = 65504f * 127f * (i % 2 == 0 ? 1 : -1);
        for (int i = 0; i < 32; i++) x[38 * 32 + i] = (float) random.nextGaussian() * 1e30f;
        for (int i = 0; i < 32; i++) x[39 * 32 + i] = (float) random.nextGaussian();
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment xs = arena.allocate(4L * x.length, 64);
            MemorySegment.copy(x, 0, xs, ValueLayout.JAVA_FLOAT, 0, x.length);
            byte[] expected = NativeBlockProducts.quantizeQ8_0(xs, x.length).toArray(ValueLayout.JAVA_BYTE);
            MemorySegment first = products.quantized(xs, x.length);
            assertThat(first.byteSize()).isEqualTo(34L * blocks);
            byte[] actual = first.toArray(ValueLayout.JAVA_BYTE);
            List<String> differ = new ArrayList<>();
            for (int i = 0; i < expected.length; i++) {
                if (actual[i] != expected[i]) differ.add("block " + i / 34 + " byte " + i % 34 + ": " + actual[i] + " for " + expected[i]);
            }
            assertThat(differ).as("the C quantiser (%s) against Java's", build).isEmpty();
            MemorySegment again = products.quantized(xs.asSlice(4L * 32 * 39), 32);
            assertThat(again.address()).as("the thread's buffer, reused").isEqualTo(first.address());
            assertThat(again.toArray(ValueLayout.JAVA_BYTE)).containsExactly(java.util.Arrays.copyOfRange(expected, 34 * 39, 34 * 40));
        }
    }

    /**
     * The GEMM quantises x in C as {@link NativeBlockProducts#quantizeQ8_0} does, ties to even included: against w = the
     * identity (row j of w: 1 at j, scale 1), each output is x's integer at j times its scale (1 here), on every path.
     */
    @ParameterizedTest
    @ValueSource(strings = {"native", "x86-64-v3", "x86-64"})
    void theGemmQuantisesXAsLlamaCppDoes(String build) throws IOException {
        NativeBlockProducts products = (build.equals("native") ? natives : compiledFor(build)).withQuantizedActivations(true);
        int n = 32, k = 32, rows = NativeBlockProducts.MAX_ROWS + 1;
        try (Arena arena = Arena.ofShared()) {
            MemorySegment w = arena.allocate(34L * n);
            for (int j = 0; j < n; j++) {
                w.set(ValueLayout.JAVA_SHORT_UNALIGNED, 34L * j, Float.floatToFloat16(1f));
                w.set(ValueLayout.JAVA_BYTE, 34L * j + 2 + j, (byte) 1);
            }
            float[] row = {127f, -127f, 0.5f, 1.5f, -2.5f, 3.4f, -0.5f, 126.5f};
            MemorySegment x = arena.allocate(4L * rows * k), out = arena.allocate(4L * rows * n);
            for (int r = 0; r < rows; r++) MemorySegment.copy(row, 0, x, ValueLayout.JAVA_FLOAT, 4L * r * k, row.length);
            QuantizedMatmul.multiply(GgmlType.Q8_0, w, n, k, x, rows, out, products);
            for (int r = 0; r < rows; r++) {
                assertThat(out.asSlice(4L * r * n, 4L * 8).toArray(ValueLayout.JAVA_FLOAT)).as("row %d", r)
                        .containsExactly(127f, -127f, 0f, 2f, -2f, 3f, 0f, 126f);
            }
        }
    }

    /** The source compiled here for {@code -march=build} and loaded. */
    private static NativeBlockProducts compiledFor(String march) throws IOException {
        CCompiler cc = ((ClangDevice) DeviceRegistry.get("CLANG")).compiler();
        Assumptions.assumeTrue(cc.target().startsWith("x86_64"), () -> "not an x86-64 compiler: " + cc.target());
        List<String> flags = new ArrayList<>(cc.flags().stream().filter(f -> !f.startsWith("-march=")).toList());
        flags.add("-march=" + march);
        byte[] so = new CCompiler(cc.executable(), cc.version(), cc.target(), flags, List.of()).compileShared(NativeBlockProducts.source());
        Path file = Files.createTempFile("kiln-block-products-" + march + "-", ".so");
        file.toFile().deleteOnExit(); // loaded for the rest of the run: the loader knows a library by its file
        Files.write(file, so);
        return NativeBlockProducts.of(SymbolLookup.libraryLookup(file, Arena.global()));
    }

    /** Segments on the Java heap (a test's arrays, an INTERP buffer) go through native copies, out copied back. */
    @Test
    void heapSegmentsAreCopied() {
        int n = 6, k = 128, rows = 2;
        try (Arena arena = Arena.ofShared()) {
            MemorySegment data = QuantizedMatmulTest.randomBlocks(GgmlType.Q8_0, n, k, 3, arena);
            float[] w = dequantized(GgmlType.Q8_0, data, n, k), x = QuantizedMatmulTest.random(rows * k, 4), out = new float[rows * n];
            MemorySegment heapW = MemorySegment.ofArray(data.toArray(ValueLayout.JAVA_BYTE));
            QuantizedMatmul.multiply(GgmlType.Q8_0, heapW, n, k, MemorySegment.ofArray(x), rows, MemorySegment.ofArray(out), natives);
            QuantizedMatmulTest.check(out, x, w, rows, n, k);
        }
    }

    /**
     * A product above the parallel threshold (2^17 multiply-adds) is split over the workers: every share's rows are
     * written, and right (the odd n leaves a share whose last rows go one at a time).
     */
    @ParameterizedTest
    @EnumSource(value = GgmlType.class, names = {"Q8_0", "Q4_0"})
    void aSplitProductWritesEveryRow(GgmlType type) {
        int n = 1030, k = 256, rows = 1;
        try (Arena arena = Arena.ofShared()) {
            MemorySegment data = QuantizedMatmulTest.randomBlocks(type, n, k, 9, arena);
            float[] w = dequantized(type, data, n, k), x = QuantizedMatmulTest.random(k, 10);
            MemorySegment xs = arena.allocate(4L * k, 64), out = arena.allocate(4L * n, 64);
            MemorySegment.copy(x, 0, xs, ValueLayout.JAVA_FLOAT, 0, k);
            out.fill((byte) 0x7f); // NaN-free garbage that no product gives
            QuantizedMatmul.multiply(type, data, n, k, xs, rows, out, natives);
            QuantizedMatmulTest.check(out.toArray(ValueLayout.JAVA_FLOAT), x, w, rows, n, k);
        }
    }

    /** Decode rows go to the dot products, more rows to the GEMM; the other block types stay on the Vector API. */
    @Test
    void handlesQ8_0AndQ4_0Only() {
        assertThat(natives.handles(GgmlType.Q8_0, NativeBlockProducts.MAX_ROWS)).isTrue();
        assertThat(natives.handles(GgmlType.Q8_0, NativeBlockProducts.MAX_ROWS + 1)).isFalse();
        assertThat(natives.handles(GgmlType.Q4_0, NativeBlockProducts.MAX_ROWS)).isTrue();
        assertThat(natives.handles(GgmlType.Q4_0, NativeBlockProducts.MAX_ROWS + 1)).isFalse();
        // with x quantised, the GEMM takes over at 8 rows where it is vectorised (VNNI), else where the f32 one does
        NativeBlockProducts q8 = natives.withQuantizedActivations(true);
        int q8DotRows = natives.q8Vectorised() ? NativeBlockProducts.Q8_DOT_ROWS : NativeBlockProducts.MAX_ROWS;
        assertThat(q8.handles(GgmlType.Q4_0, q8DotRows)).isTrue();
        assertThat(q8.handles(GgmlType.Q4_0, q8DotRows + 1)).isFalse();
        assertThat(q8.handlesGemm(GgmlType.Q4_0, q8DotRows + 1)).isTrue();
        assertThat(natives.handlesGemm(GgmlType.Q8_0, NativeBlockProducts.MAX_ROWS)).isFalse();
        assertThat(natives.handlesGemm(GgmlType.Q8_0, NativeBlockProducts.MAX_ROWS + 1)).isTrue();
        assertThat(natives.handlesGemm(GgmlType.Q4_0, 512)).isTrue();
        assertThat(natives.handlesGemm(GgmlType.Q4_K, 512)).isFalse();
        assertThat(natives.handles(GgmlType.Q4_K, 1)).isFalse();
        assertThat(natives.handles(GgmlType.Q6_K, 1)).isFalse();
        assertThat(NativeBlockProducts.forDevice(DeviceRegistry.get("CPU"))).isEmpty();
    }
}

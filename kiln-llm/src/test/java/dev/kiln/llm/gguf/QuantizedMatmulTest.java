package dev.kiln.llm.gguf;

import dev.kiln.Tensor;
import dev.kiln.types.DType;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;
import org.junit.jupiter.params.provider.MethodSource;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.Random;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * {@link QuantizedMatmul} and {@link BlockTensor} against dequantise-then-multiply in double precision, for every block
 * type: matrices of 19 rows made of the fixture's rows (tensors.gguf, whose dequantisation is checked bit for bit against
 * gguf.quants), 1 to 30 rows of x (the dot-product paths, fused and dequantised, and the tiles of eight with a remainder, Q8_0's past its 24 dot-product rows too).
 * The bound is the f32 summation bound: each output within {@code 2 (k + 2) u} times the sum of the absolute products, which a
 * dropped block or value exceeds.
 */
class QuantizedMatmulTest {
    private static GgufFile file;
    private static Arena arena;

    @BeforeAll
    static void open() {
        file = GgufFile.open(GgufDequantTest.resource("/gguf/files/tensors.gguf"));
        arena = Arena.ofShared();
    }

    @AfterAll
    static void close() {
        file.close();
        arena.close();
    }

    static Stream<String> matrices() {
        return Stream.of("q8_0_5x64", "q4_0_5x64", "q4_1_5x64", "q4_k_3x256", "q4_k_2x512", "q5_k_3x256", "q5_k_2x512", "q6_k_3x256", "q6_k_2x512");
    }

    /** A (19, k) tensor whose row r is the fixture's row r mod its rows. */
    private static GgufTensor tiled(String name) {
        GgufTensor t = file.findTensor(name).orElseThrow();
        int n = 19;
        long rowBytes = t.rowBytes();
        MemorySegment data = arena.allocate(n * rowBytes, 64);
        for (int r = 0; r < n; r++) MemorySegment.copy(t.data(), (r % t.rows()) * rowBytes, data, r * rowBytes, rowBytes);
        return new GgufTensor(t.file(), name + "_tiled", t.type(), new int[] {t.rowLength(), n}, 0, n * rowBytes, data);
    }

    static float[] random(int n, long seed) {
        Random r = new Random(seed);
        float[] f = new float[n];
        for (int i = 0; i < n; i++) f[i] = (float) (r.nextGaussian());
        return f;
    }

    /** n rows of k values of random blocks of {@code type}: scales 0.01 to 0.03, every byte value. */
    static MemorySegment randomBlocks(GgmlType type, int n, int k, long seed, Arena arena) {
        long rowBytes = type.rowBytes(k);
        int blockBytes = type.bytesPerBlock();
        MemorySegment data = arena.allocate(n * rowBytes, 64);
        Random r = new Random(seed);
        for (long b = 0; b < n * rowBytes / blockBytes; b++) {
            data.set(ValueLayout.JAVA_SHORT_UNALIGNED, b * blockBytes, Float.floatToFloat16((float) (0.01 + 0.02 * r.nextDouble())));
            for (int i = 2; i < blockBytes; i++) data.set(ValueLayout.JAVA_BYTE, b * blockBytes + i, (byte) r.nextInt(256));
        }
        return data;
    }

    static void check(float[] got, float[] x, float[] w, int rows, int n, int k) {
        double u = Math.ulp(1.0f) / 2;
        for (int r = 0; r < rows; r++) {
            for (int j = 0; j < n; j++) {
                double exact = 0, magnitude = 0;
                for (int i = 0; i < k; i++) {
                    exact += (double) x[r * k + i] * w[j * k + i];
                    magnitude += Math.abs((double) x[r * k + i] * w[j * k + i]);
                }
                double bound = 2 * (k + 2) * u * magnitude;
                assertThat(Math.abs(got[r * n + j] - exact)).as("row %d, output %d: %s vs %s (bound %s)", r, j, got[r * n + j], exact, bound)
                        .isLessThanOrEqualTo(bound);
            }
        }
    }

    @ParameterizedTest
    @MethodSource("matrices")
    void productsMatchDequantiseThenMultiply(String name) {
        GgufTensor t = tiled(name);
        int n = 19, k = t.rowLength();
        float[] w = t.dequantize();
        for (int rows : new int[] {1, 2, 3, 4, 9, 17, 30}) {
            float[] x = random(rows * k, rows * 31L + k);
            MemorySegment xs = arena.allocate(4L * rows * k, 64), out = arena.allocate(4L * rows * n, 64);
            MemorySegment.copy(x, 0, xs, ValueLayout.JAVA_FLOAT, 0, x.length);
            QuantizedMatmul.multiply(t.type(), t.data(), n, k, xs, rows, out);
            check(out.toArray(ValueLayout.JAVA_FLOAT), x, w, rows, n, k);
        }
    }

    /**
     * A few rows of x meet Q8_0 rows of w four at a time, a quarter of each worker's range apart (70 rows of 2,048 split
     * over the workers; 7 and 11 rows, with rows left over for the one-row path): within the bound of the exact product,
     * and the one-row path's value (each row of w alone, n = 1, runs one row at a time) up to the order of the final sum
     * over the vector's lanes. That order is not bit for bit: {@code reduceLanes(ADD)} leaves it unspecified, and HotSpot's
     * interpreter and C2 sum in different orders, so a method compiled and one not yet compiled differ in the last bits
     * (CI failed on 4 ulp so). The allowance is the reassociation bound of 16 lanes, far below any wrong row or term.
     */
    @Test
    void q8_0RowsFourAtATimeEqualOneAtATime() {
        for (int[] nk : new int[][] {{11, 4096}, {70, 2048}, {7, 2048}}) fourAtATimeEqualOneAtATime(nk[0], nk[1]);
    }

    private void fourAtATimeEqualOneAtATime(int n, int k) {
        long rowBytes = GgmlType.Q8_0.rowBytes(k);
        MemorySegment data = arena.allocate(n * rowBytes, 64);
        Random r = new Random(5);
        for (long b = 0; b < n * rowBytes / 34; b++) {
            data.set(ValueLayout.JAVA_SHORT_UNALIGNED, b * 34, Float.floatToFloat16((float) (0.01 + 0.02 * r.nextDouble())));
            for (int i = 0; i < 32; i++) data.set(ValueLayout.JAVA_BYTE, b * 34 + 2 + i, (byte) (r.nextInt(255) - 127));
        }
        GgufTensor t = new GgufTensor(file.file(), "q8_0_long", GgmlType.Q8_0, new int[] {k, n}, 0, n * rowBytes, data);
        float[] w = t.dequantize();
        for (int rows : new int[] {1, 2, 3}) {
            float[] x = random(rows * k, rows * 7L);
            MemorySegment xs = arena.allocate(4L * rows * k, 64), out = arena.allocate(4L * rows * n, 64), one = arena.allocate(4L * rows, 64);
            MemorySegment.copy(x, 0, xs, ValueLayout.JAVA_FLOAT, 0, x.length);
            QuantizedMatmul.multiply(GgmlType.Q8_0, data, n, k, xs, rows, out);
            check(out.toArray(ValueLayout.JAVA_FLOAT), x, w, rows, n, k);
            for (int j = 0; j < n; j++) {
                QuantizedMatmul.multiply(GgmlType.Q8_0, data.asSlice(j * rowBytes, rowBytes), 1, k, xs, rows, one);
                for (int row = 0; row < rows; row++) {
                    double magnitude = 0;
                    for (int i = 0; i < k; i++) magnitude += Math.abs((double) x[row * k + i] * w[j * k + i]);
                    float four = out.getAtIndex(ValueLayout.JAVA_FLOAT, (long) row * n + j), single = one.getAtIndex(ValueLayout.JAVA_FLOAT, row);
                    assertThat((double) Math.abs(four - single)).as("%d x %d, rows %d, output %d, row %d: %s vs %s", n, k, rows, j, row, four, single)
                            .isLessThanOrEqualTo(16 * Math.ulp(1.0f) * magnitude);
                }
            }
        }
    }

    /**
     * The many-rows path over more than one panel of w (64 rows) and many passes over k (256 values each), with rows of x
     * below, at and past the GEMM tile's 8 and a last panel narrower than the tile's columns: within the bound.
     */
    @ParameterizedTest
    @EnumSource(value = GgmlType.class, names = {"Q8_0", "Q4_0"})
    void manyRowsOverSeveralPanelsAndPassesOverK(GgmlType type) {
        int n = 70, k = 4352; // panels of 64 + 6 rows; 17 passes of 256 values
        long rowBytes = type.rowBytes(k);
        MemorySegment data = randomBlocks(type, n, k, 11, arena);
        GgufTensor t = new GgufTensor(file.file(), "panels", type, new int[] {k, n}, 0, n * rowBytes, data);
        float[] w = t.dequantize();
        for (int rows : new int[] {4, 7, 8, 9, 19}) {
            float[] x = random(rows * k, rows * 13L);
            MemorySegment xs = arena.allocate(4L * rows * k, 64), out = arena.allocate(4L * rows * n, 64);
            MemorySegment.copy(x, 0, xs, ValueLayout.JAVA_FLOAT, 0, x.length);
            QuantizedMatmul.multiply(type, data, n, k, xs, rows, out);
            check(out.toArray(ValueLayout.JAVA_FLOAT), x, w, rows, n, k);
        }
    }

    /**
     * The dot products of decode take two blocks at a time, and four rows of x per block of w (a batched step): rows of
     * w of one, three and five blocks (a last block alone) and of two and four, with one to 24 rows of x (four at a
     * time, then one at a time; Q8_0 four rows of w at a time too), are within the bound of the exact product.
     */
    @ParameterizedTest
    @EnumSource(value = GgmlType.class, names = {"Q8_0", "Q4_0"})
    void dotProductsOverOddAndEvenBlockCounts(GgmlType type) {
        for (int k : new int[] {32, 64, 96, 128, 160}) {
            int n = 5;
            long rowBytes = type.rowBytes(k);
            MemorySegment data = randomBlocks(type, n, k, k, arena);
            float[] w = new GgufTensor(file.file(), "blocks", type, new int[] {k, n}, 0, n * rowBytes, data).dequantize();
            for (int rows : new int[] {1, 2, 3, 4, 5, 7, 8, 9, 13, 24}) {
                float[] x = random(rows * k, rows * 17L + k);
                MemorySegment xs = arena.allocate(4L * rows * k, 64), out = arena.allocate(4L * rows * n, 64);
                MemorySegment.copy(x, 0, xs, ValueLayout.JAVA_FLOAT, 0, x.length);
                QuantizedMatmul.multiply(type, data, n, k, xs, rows, out);
                check(out.toArray(ValueLayout.JAVA_FLOAT), x, w, rows, n, k);
            }
        }
    }

    /** The rows the many-rows path dequantises into its tiles are ggml's values bit for bit (vector or not). */
    @ParameterizedTest
    @MethodSource("matrices")
    void tileRowsAreBitExact(String name) {
        GgufTensor t = tiled(name);
        int k = t.rowLength();
        float[] w = t.dequantize(), row = new float[k + 3];
        for (int r = 0; r < 19; r++) {
            QuantizedMatmul.dequantizeRow(t.type(), t.data(), r * t.rowBytes(), t.rowBytes(), row, 3, k);
            for (int c = 0; c < k; c++) assertThat(Float.floatToRawIntBits(row[3 + c])).as("row %d value %d", r, c).isEqualTo(Float.floatToRawIntBits(w[r * k + c]));
        }
    }

    @ParameterizedTest
    @MethodSource("matrices")
    void embeddingRowsAreTheDequantisedRows(String name) {
        GgufTensor t = tiled(name);
        int k = t.rowLength();
        float[] w = t.dequantize();
        MemorySegment ids = arena.allocate(16), out = arena.allocate(4L * 4 * k);
        int[] picked = {18, 0, 7, 7};
        MemorySegment.copy(picked, 0, ids, ValueLayout.JAVA_INT, 0, 4);
        QuantizedMatmul.gatherRows(t.type(), t.data(), 19, k, ids, 4, out);
        float[] got = out.toArray(ValueLayout.JAVA_FLOAT);
        for (int i = 0; i < 4; i++) {
            for (int c = 0; c < k; c++) assertThat(got[i * k + c]).isEqualTo(w[picked[i] * k + c]);
        }
        MemorySegment.copy(new int[] {19}, 0, ids, ValueLayout.JAVA_INT, 0, 1);
        assertThatThrownBy(() -> QuantizedMatmul.gatherRows(t.type(), t.data(), 19, k, ids, 1, out)).isInstanceOf(IndexOutOfBoundsException.class)
                .hasMessageContaining("token id 19 (position 0) is outside [0, 19)");
    }

    /** Through the graph: a block tensor's value, its product and its lookup, on a plan. */
    @Test
    void blockTensorsInAGraph() {
        GgufTensor t = tiled("q4_k_2x512");
        Tensor value = t.toTensor();
        BlockTensor blocks = BlockTensor.of(value).orElseThrow();
        assertThat(value.dtype()).isEqualTo(DType.F32);
        assertThat(value.dims()).containsExactly(19, 512);
        float[] w = t.dequantize();
        assertThat(value.toFloatArray()).containsExactly(w);
        float[] x = random(3 * 512, 5);
        float[] y = blocks.linear(Tensor.of(x, 3, 512), null).toFloatArray();
        check(y, x, w, 3, 19, 512);
        float[] rows = blocks.embedding(Tensor.of(new int[] {2, 11}, 2), null).toFloatArray();
        for (int c = 0; c < 512; c++) {
            assertThat(rows[c]).isEqualTo(w[2 * 512 + c]);
            assertThat(rows[512 + c]).isEqualTo(w[11 * 512 + c]);
        }
        assertThat(BlockTensor.of(Tensor.of(x, 3, 512))).isEmpty();
        assertThatThrownBy(() -> blocks.linear(Tensor.of(x, 6, 256), null)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("x must be (r, 512) f32, got f32[6, 256]");
    }

    @Test
    void refusesWhatItCannotMultiply() {
        GgufTensor t = tiled("q8_0_5x64");
        MemorySegment x = arena.allocate(4 * 64), out = arena.allocate(4 * 19);
        assertThatThrownBy(() -> QuantizedMatmul.multiply(GgmlType.F16, t.data(), 19, 64, x, 1, out)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("F16 is not a supported block type");
        assertThatThrownBy(() -> QuantizedMatmul.multiply(GgmlType.Q8_0, t.data(), 19, 48, x, 1, out)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("not whole Q8_0 blocks");
        assertThatThrownBy(() -> QuantizedMatmul.multiply(GgmlType.Q8_0, t.data(), 19, 64, x, 2, out)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("do not fit");
        assertThatThrownBy(() -> QuantizedMatmul.multiply(GgmlType.Q8_0, t.data(), 40, 64, x, 1, out)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("40 rows of Q8_0 take");
    }
}

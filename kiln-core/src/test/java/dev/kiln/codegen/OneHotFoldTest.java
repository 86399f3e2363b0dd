package dev.kiln.codegen;

import dev.kiln.types.DType;
import dev.kiln.Tensor;
import dev.kiln.types.Variable;
import dev.kiln.ir.Op;
import dev.kiln.runtime.ExecutionPlan;
import dev.kiln.runtime.PreparedKernel;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.Arrays;
import java.util.Map;
import java.util.function.Function;

import static dev.kiln.testing.DeviceAssumptions.assumeAvailable;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * The lowerer folds a one-hot sum (gather, index select, embedding lookup) into one read per element:
 * the kernel has no loop over the indexed axis, and the values are bit for bit those of the interpreter,
 * which still sums the whole one-hot mask. The tables hold NaN, infinities and -0.0 in rows that are not
 * selected and in rows that are, and the indices include negative and out-of-range ones: the lookups of the
 * {@code Tensor} API check theirs (an index out of range fails the run, see {@code IndexCheckTest}), so they get
 * the valid ones, and a one-hot sum written out, which has no check, gets them all (they select nothing).
 */
class OneHotFoldTest {
    private static final int ROWS = 300, COLS = 24;
    private static final long[] INDICES = {0, 299, 5, -1, -300, 300, -301, 7, 7, 1_000_000, Long.MIN_VALUE, 150};

    /** A table of distinct values with NaN, infinities and signed zeros in some rows. */
    private static float[] table() {
        float[] t = new float[ROWS * COLS];
        for (int i = 0; i < t.length; i++) t[i] = (float) Math.sin(i * 0.61) * (1 + i % 7);
        for (int c = 0; c < COLS; c++) {
            t[7 * COLS + c] = c % 2 == 0 ? -0.0f : 0.0f; // a selected row of zeros of both signs
            t[8 * COLS + c] = Float.NaN; // unselected rows whose values must not leak
            t[9 * COLS + c] = c % 2 == 0 ? Float.POSITIVE_INFINITY : Float.NEGATIVE_INFINITY;
            t[150 * COLS + c] = Float.NaN; // a selected NaN row
        }
        return t;
    }

    private static Tensor indices(String device) { return Tensor.of(INDICES, INDICES.length).to(device); }

    /** {@link #INDICES} clamped into the table's rows, negative ones counting from the end. */
    private static Tensor validIndices(String device) { return indices(device).clamp(-ROWS, ROWS - 1); }

    /** {@code sum over r of where(indices == r, table[r], -0.0)} written out: no index check, any index selects at most one row. */
    private static Tensor oneHotSum(Tensor table, Tensor indices, int rows) {
        Tensor hit = indices.reshape(INDICES.length, 1, 1).eq(Tensor.arange(rows).cast(DType.I64).reshape(1, rows, 1).to(indices.device()));
        return Tensor.where(hit, table.unsqueeze(0), -0.0f).sum(new int[] {1}, false);
    }

    /** Lookups that all reduce to a one-hot sum over the table's rows. */
    private static Map<String, Function<String, Tensor>> lookups() {
        return Map.of(
                "indexSelect", d -> Tensor.of(table(), ROWS, COLS).to(d).indexSelect(0, validIndices(d)),
                "takeAlongAxis", d -> Tensor.of(table(), ROWS, COLS).to(d).transpose(0, 1)
                        .takeAlongAxis(validIndices(d).reshape(1, INDICES.length).expand(COLS, INDICES.length), 1),
                "oneHotSum", d -> oneHotSum(Tensor.of(table(), ROWS, COLS).to(d), indices(d), ROWS),
                "gatherF16", d -> Tensor.of(table(), ROWS, COLS).to(d).cast(DType.F16)
                        .gather(0, indices(d).clamp(0, ROWS - 1).reshape(INDICES.length, 1).expand(INDICES.length, COLS)).cast(DType.F32),
                "indexSelectI32", d -> Tensor.of(table(), ROWS, COLS).to(d).mul(1000).cast(DType.I32).indexSelect(0, indices(d).clamp(-ROWS, ROWS - 1))
                        .cast(DType.F32));
    }

    private static int reduceLoops(Stmt s) {
        return switch (s) {
            case Stmt.Block b -> b.body().stream().mapToInt(OneHotFoldTest::reduceLoops).sum();
            case Stmt.Loop l -> (l.kind() == Stmt.LoopKind.REDUCE ? 1 : 0) + reduceLoops(l.body());
            default -> 0;
        };
    }

    private static int reduceLoops(ExecutionPlan plan) {
        int n = 0;
        for (PreparedKernel k : plan.kernels()) n += reduceLoops(k.program().body());
        return n;
    }

    private static void assertSameBits(String what, float[] want, float[] got) {
        assertThat(got).as(what).hasSameSizeAs(want);
        for (int i = 0; i < want.length; i++) {
            assertThat(Float.floatToRawIntBits(got[i])).as("%s element %d: %s vs %s", what, i, got[i], want[i])
                    .isEqualTo(Float.floatToRawIntBits(want[i]));
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"CPU", "CLANG"})
    void lookupsReadOneRowAndMatchTheInterpreterBitForBit(String device) {
        assumeAvailable(device, "one-hot fold tests");
        for (var lookup : lookups().entrySet()) {
            Tensor t = lookup.getValue().apply(device);
            try (ExecutionPlan plan = t.prepare()) {
                assertThat(reduceLoops(plan)).as("%s: loops over the table's rows", lookup.getKey()).isZero();
                plan.execute();
            }
            assertSameBits(lookup.getKey() + " on " + device, lookup.getValue().apply("INTERP").toFloatArray(), t.toFloatArray());
        }
    }

    @Test
    void aOneHotSumSelectsRowsAndNothingForIndicesOutOfRange() {
        float[] got = oneHotSum(Tensor.of(table(), ROWS, COLS).to("CPU"), indices("CPU"), ROWS).toFloatArray();
        for (int k = 0; k < INDICES.length; k++) {
            long i = INDICES[k];
            for (int c = 0; c < COLS; c++) {
                float want = i >= 0 && i < ROWS ? table()[(int) i * COLS + c] : -0.0f;
                assertThat(Float.floatToRawIntBits(got[k * COLS + c])).as("index %d column %d", INDICES[k], c).isEqualTo(Float.floatToRawIntBits(want));
            }
        }
        // the lookup of the API with the same indices is an error, not a row of zeros
        assertThatThrownBy(() -> Tensor.of(table(), ROWS, COLS).to("CPU").indexSelect(0, indices("CPU")).toFloatArray())
                .isInstanceOf(dev.kiln.runtime.IndexOutOfRangeException.class).hasMessageContaining("index 300");
    }

    @ParameterizedTest
    @ValueSource(strings = {"CPU", "CLANG"})
    void aMaskedSumWhoseZeroIsNotTheIdentityKeepsItsLoop(String device) {
        assumeAvailable(device, "one-hot fold tests");
        // +0.0 is not the identity of a float sum (-0.0 + +0.0 is +0.0), so folding would change -0.0 results
        Function<String, Tensor> masked = d -> {
            Tensor x = Tensor.of(table(), ROWS, COLS).to(d);
            Tensor hit = indices(d).reshape(INDICES.length, 1, 1).eq(Tensor.arange(ROWS).cast(DType.I64).reshape(1, ROWS, 1).to(d));
            return Tensor.where(hit, x.reshape(1, ROWS, COLS), 0.0f).sum(new int[] {1}, false);
        };
        Tensor t = masked.apply(device);
        try (ExecutionPlan plan = t.prepare()) {
            assertThat(reduceLoops(plan)).isPositive();
        }
        assertSameBits("masked sum on " + device, masked.apply("INTERP").toFloatArray(), t.toFloatArray());
    }

    @ParameterizedTest
    @ValueSource(strings = {"CPU", "CLANG"})
    void onASymbolicAxisRowsPastTheSizeAreNeverSelected(String device) {
        assumeAvailable(device, "one-hot fold tests");
        Variable n = new Variable("n", 1, ROWS);
        Tensor input = Tensor.zeros(ROWS, COLS).to(device).contiguous().realize();
        long[] ids = {0, 4, 5, 299, 7, 7, 8, 9, 1, 2, 3, 150};
        Tensor picked = oneHotSum(input.withSymbolicDim(0, n), Tensor.of(ids, ids.length).to(device), ROWS);
        float[] t = table();
        MemorySegment.copy(t, 0, input.buffer().segment(), ValueLayout.JAVA_FLOAT, 0, t.length);
        try (ExecutionPlan plan = picked.prepare()) {
            assertThat(reduceLoops(plan)).isZero();
            for (long size : new long[] {1, 5, 6, 299, 300}) {
                plan.executeWithVars(Map.of("n", size));
                float[] got = new float[ids.length * COLS];
                MemorySegment.copy(plan.outputBuffer().segment(), ValueLayout.JAVA_FLOAT, 0, got, 0, got.length);
                float[] want = oneHotSum(Tensor.of(Arrays.copyOf(t, (int) size * COLS), (int) size, COLS).to("INTERP"),
                        Tensor.of(ids, ids.length).to("INTERP"), (int) size).toFloatArray();
                assertSameBits("size " + size, want, got);
            }
        }
    }

    /** The lookups of the API check an index on a symbolic axis against the axis's size in that run, not its largest. */
    @ParameterizedTest
    @ValueSource(strings = {"INTERP", "CPU", "CLANG"})
    void onASymbolicAxisAnIndexPastTheSizeFailsTheRun(String device) {
        if (!device.equals("INTERP")) assumeAvailable(device, "one-hot fold tests");
        Variable n = new Variable("n", 1, ROWS);
        Tensor input = Tensor.of(table(), ROWS, COLS).to(device).contiguous().realize();
        Tensor ids = Tensor.of(new long[] {0, 4, -5, 299}, 4).to(device).realize();
        Tensor picked = input.withSymbolicDim(0, n).indexSelect(0, ids);
        try (ExecutionPlan plan = picked.prepare()) {
            plan.executeWithVars(Map.of("n", 300L));
            assertThat(plan.outputBuffer().getDouble(3 * COLS)).isEqualTo(table()[299 * COLS]);
            assertThatThrownBy(() -> plan.executeWithVars(Map.of("n", 299L))).isInstanceOf(dev.kiln.runtime.IndexOutOfRangeException.class)
                    .hasMessage("indexSelect: index 299 is out of range for axis 0 of size 299; valid are -299 to 298");
            assertThatThrownBy(() -> plan.executeWithVars(Map.of("n", 4L))).isInstanceOf(dev.kiln.runtime.IndexOutOfRangeException.class)
                    .hasMessage("indexSelect: index 4 is out of range for axis 0 of size 4; valid are -4 to 3");
            ids.buffer().setLong(3, 2);
            plan.executeWithVars(Map.of("n", 5L));
            assertThat(plan.outputBuffer().getDouble(2 * COLS + 1)).isEqualTo(table()[1]); // -5 is row 0 of 5
        }
    }

    @Test
    void arangeIsComputedNotStored() {
        Tensor a = Tensor.arange(3, 20, 4);
        assertThat(a.uop().toposort()).noneMatch(u -> u.op() == Op.BUFFER);
        assertThat(a.toLongArray()).containsExactly(3, 7, 11, 15, 19);
        assertThat(Tensor.arange(5).to("CLANG").toLongArray()).containsExactly(0, 1, 2, 3, 4);
        assertThat(Tensor.arange(0).toLongArray()).isEmpty();
        assertThat(Tensor.arange(10, 0, -3).to("INTERP").toLongArray()).containsExactly(10, 7, 4, 1);
        assertThatThrownBy(() -> dev.kiln.ir.UOp.arange(DType.I8, dev.kiln.types.Shape.of(4))).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("i32 or i64").hasMessageContaining("i8");
        assertThatThrownBy(() -> dev.kiln.ir.UOp.arange(DType.I32, dev.kiln.types.Shape.of(2, 2))).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("1-D");
    }
}

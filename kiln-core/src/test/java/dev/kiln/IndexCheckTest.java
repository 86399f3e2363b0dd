package dev.kiln;

import dev.kiln.codegen.IndexCheckFailure;
import dev.kiln.runtime.ExecutionPlan;
import dev.kiln.runtime.IndexOutOfRangeException;
import dev.kiln.testing.DeviceAssumptions;
import dev.kiln.types.DType;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;
import org.junit.jupiter.params.provider.ValueSource;

import java.util.ArrayList;
import java.util.List;
import java.util.function.BiFunction;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

/**
 * Indices that come from data are checked when the graph runs, on every device: an index out of range raises an
 * {@link IndexOutOfRangeException} naming the operation, the index, the axis and the valid range, never a silent
 * read of zero or a dropped write; in-range negative indices count from the end where the operation says so.
 * "INTERP" evaluates the tensor graph (the oracle), "INTERP-plan" runs the lowered kernels through the
 * KernelEvaluator, CPU and CLANG run generated Java and C.
 */
class IndexCheckTest {
    static final List<String> DEVICES = List.of("INTERP", "INTERP-plan", "CPU", "CLANG");

    /** x = [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9, 10, 11]] on {@code device}. */
    static Tensor x(String device) {
        float[] v = new float[12];
        for (int i = 0; i < v.length; i++) v[i] = i;
        return Tensor.of(v, 3, 4).to(device);
    }

    /**
     * One indexing operation over {@link #x}: its index tensor's shape and valid values, the element of the index
     * tensor a test replaces, the axis it indexes (of size n) and whether negative indices wrap.
     */
    record Case(String op, int[] indexShape, long[] valid, int replaced, int axis, int n, boolean wraps,
                BiFunction<Tensor, Tensor, Tensor> apply) {
        Tensor run(String device, long[] ids) {
            String d = device.startsWith("INTERP") ? "INTERP" : device;
            return apply.apply(x(d), Tensor.of(ids, indexShape).to(d));
        }

        @Override
        public String toString() { return op; }
    }

    static final List<Case> CASES = List.of(
            new Case("gather", new int[] {3, 2}, new long[] {0, 3, 1, 2, 3, 0}, 3, 1, 4, false, (x, i) -> x.gather(1, i)),
            new Case("indexSelect", new int[] {2}, new long[] {2, 0}, 1, 0, 3, true, (x, i) -> x.indexSelect(0, i)),
            new Case("takeAlongAxis", new int[] {3, 2}, new long[] {0, 3, 1, 2, 3, 0}, 4, 1, 4, true, (x, i) -> x.takeAlongAxis(i, 1)),
            new Case("embedding", new int[] {2, 2}, new long[] {2, 0, 1, 1}, 2, 0, 3, false, (x, i) -> Tensor.embedding(i, x)),
            new Case("scatter", new int[] {2, 4}, new long[] {2, 0, 1, 2, 0, 1, 2, 0}, 5, 0, 3, false,
                    (x, i) -> x.scatter(0, i, Tensor.full(-1, DType.F32, 2, 4).to(x.device()))),
            new Case("scatter", new int[] {2, 4}, new long[] {2, 0, 1, 2, 0, 1, 2, 0}, 0, 0, 3, false, (x, i) -> x.scatter(0, i, 7)),
            new Case("scatterAdd", new int[] {2, 4}, new long[] {2, 0, 1, 2, 0, 1, 2, 0}, 7, 0, 3, false,
                    (x, i) -> x.scatterAdd(0, i, Tensor.ones(2, 4).to(x.device()))),
            new Case("gatherElements", new int[] {3, 2}, new long[] {0, 3, 1, 2, 3, 0}, 1, 1, 4, true, (x, i) -> x.gatherElements(1, i)),
            // coordinates (row, column): element 2 is the row of the second tuple
            new Case("gatherND", new int[] {2, 2}, new long[] {0, 3, 2, 1}, 2, 0, 3, true, (x, i) -> x.gatherND(i, 0)),
            new Case("gatherND", new int[] {2, 2}, new long[] {0, 3, 2, 1}, 3, 1, 4, true, (x, i) -> x.gatherND(i, 0)),
            new Case("scatterElements", new int[] {2, 4}, new long[] {2, 0, 1, 2, 0, 1, 2, 0}, 6, 0, 3, true,
                    (x, i) -> x.scatterElements(0, i, Tensor.full(-1, DType.F32, 2, 4).to(x.device()), "none")),
            new Case("scatterElements", new int[] {2, 4}, new long[] {2, 0, 1, 2, 0, 1, 2, 0}, 6, 0, 3, true,
                    (x, i) -> x.scatterElements(0, i, Tensor.full(-1, DType.F32, 2, 4).to(x.device()), "add")),
            new Case("scatterND", new int[] {2, 1}, new long[] {2, 0}, 1, 0, 3, true,
                    (x, i) -> x.scatterND(i, Tensor.full(-1, DType.F32, 2, 4).to(x.device()), "none")));

    /** Every case on every device with every kind of bad index: n, -n-1, 10^8, and -1 where negatives do not wrap. */
    static Stream<Arguments> badIndices() {
        List<Arguments> out = new ArrayList<>();
        for (String device : DEVICES) {
            for (Case c : CASES) {
                List<Long> bad = new ArrayList<>(List.of((long) c.n, -(long) c.n - 1, 100_000_000L));
                if (!c.wraps) bad.add(-1L);
                for (long b : bad) out.add(Arguments.of(device, c, b));
            }
        }
        return out.stream();
    }

    static void assumeDevice(String device) {
        if (!device.startsWith("INTERP")) DeviceAssumptions.assumeAvailable(device, "index check tests");
    }

    /** The result computed on {@code device}: the tensor graph evaluated, or a plan prepared and run. */
    static float[] compute(String device, Tensor t) {
        if (!device.equals("INTERP-plan")) return t.toFloatArray();
        try (ExecutionPlan plan = t.prepare()) {
            plan.execute();
            float[] out = new float[(int) t.numel()];
            for (int i = 0; i < out.length; i++) out[i] = (float) plan.outputBuffer().getDouble(i);
            return out;
        }
    }

    @ParameterizedTest(name = "{0} {1} index {2}")
    @MethodSource("badIndices")
    void anIndexOutOfRangeRaisesTheTypedException(String device, Case c, long bad) {
        assumeDevice(device);
        long[] ids = c.valid.clone();
        ids[c.replaced] = bad;
        Tensor result = c.run(device, ids);
        IndexOutOfRangeException e = catchThrowableOfType(IndexOutOfRangeException.class, () -> compute(device, result));
        assertThat(e).as("%s on %s with index %d", c, device, bad).isNotNull();
        long min = c.wraps ? -c.n : 0;
        assertThat(e.getMessage()).isEqualTo(c.op + ": index " + bad + " is out of range for axis " + c.axis + " of size " + c.n
                + "; valid are " + min + " to " + (c.n - 1));
        assertThat(e.op()).isEqualTo(c.op);
        assertThat(e.index()).isEqualTo(bad);
        assertThat(e.axis()).isEqualTo(c.axis);
        assertThat(e.min()).isEqualTo(min);
        assertThat(e.max()).isEqualTo(c.n - 1);
        // compiled devices report from generated code: the kernel's own failure is the cause
        if (device.equals("CPU") || device.equals("CLANG") || device.equals("INTERP-plan")) assertThat(e.getCause()).isInstanceOf(IndexCheckFailure.class);
    }

    /** Every wrapping case with each valid index replaced by its negative form: the same values as the positive indices. */
    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"INTERP", "INTERP-plan", "CPU", "CLANG"})
    void inRangeNegativeIndicesCountFromTheEnd(String device) {
        assumeDevice(device);
        for (Case c : CASES) {
            if (!c.wraps) continue;
            long[] negative = c.valid.clone();
            for (int k = 0; k < negative.length; k++) {
                int axisSize = c.op.equals("gatherND") ? (k % 2 == 0 ? 3 : 4) : c.n; // a tuple's coordinates index different axes
                negative[k] -= axisSize;
            }
            float[] want = compute("INTERP", c.run("INTERP", c.valid));
            assertThat(compute(device, c.run(device, negative))).as("%s on %s", c, device).containsExactly(want);
        }
    }

    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"INTERP", "INTERP-plan", "CPU", "CLANG"})
    void negativeIndicesGiveTheValuesNumpyGives(String device) {
        assumeDevice(device);
        String d = device.startsWith("INTERP") ? "INTERP" : device;
        Tensor x = x(d);
        // np.take(x, [-1, -3], axis=0), np.take_along_axis(x, [[-1], [0], [-4]], axis=1)
        assertThat(compute(device, x.indexSelect(0, Tensor.of(new long[] {-1, -3}, 2).to(d))))
                .containsExactly(8, 9, 10, 11, 0, 1, 2, 3);
        assertThat(compute(device, x.takeAlongAxis(Tensor.of(new long[] {-1, 0, -4}, 3, 1).to(d), 1))).containsExactly(3, 4, 8);
        // x[[-1, 0], [-2, -4]] (GatherND) and x with rows -1 and 0 replaced (ScatterND)
        assertThat(compute(device, x.gatherND(Tensor.of(new long[] {-1, -2, 0, -4}, 2, 2).to(d), 0))).containsExactly(10, 0);
        assertThat(compute(device, x.scatterND(Tensor.of(new long[] {-1, 0}, 2, 1).to(d), Tensor.full(-1, DType.F32, 2, 4).to(d), "none")))
                .containsExactly(-1, -1, -1, -1, 4, 5, 6, 7, -1, -1, -1, -1);
        // ScatterElements along axis 1 with indices -1 and -4 (the last and the first column)
        assertThat(compute(device, x.scatterElements(1, Tensor.of(new long[] {-1, -4, -1, -4, -1, -4}, 3, 2).to(d),
                Tensor.full(-1, DType.F32, 3, 2).to(d), "none"))).containsExactly(-1, 1, 2, -1, -1, 5, 6, -1, -1, 9, 10, -1);
    }

    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"INTERP", "INTERP-plan", "CPU", "CLANG"})
    void indicesOfAnyIntegerDtypeAreChecked(String device) {
        assumeDevice(device);
        String d = device.startsWith("INTERP") ? "INTERP" : device;
        Tensor ids = Tensor.of(new int[] {1, 3}, 2).to(d);
        assertThatThrownBy(() -> compute(device, x(d).indexSelect(0, ids))).isInstanceOf(IndexOutOfRangeException.class)
                .hasMessage("indexSelect: index 3 is out of range for axis 0 of size 3; valid are -3 to 2");
        assertThatThrownBy(() -> compute(device, Tensor.embedding(Tensor.of(new int[] {-1}, 1).to(d), x(d))))
                .isInstanceOf(IndexOutOfRangeException.class).hasMessageContaining("embedding: index -1");
    }

    @Test
    void theNameOfAnEnclosingOperationIsTheOneReported() {
        Tensor ids = Tensor.of(new long[] {0, 5}, 2);
        Tensor y = Tensor.withOpName("Gather node 'g'", () -> x("CPU").indexSelect(1, ids));
        assertThatThrownBy(y::toFloatArray).isInstanceOf(IndexOutOfRangeException.class)
                .hasMessage("Gather node 'g': index 5 is out of range for axis 1 of size 4; valid are -4 to 3");
    }

    /**
     * The check is in the generated code: a prepared plan's kernels carry it, the plan runs with good indices, fails
     * when bad ones are written into the same input buffer, and runs again once they are good (nothing sticks).
     */
    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"CPU", "CLANG"})
    void thePreparedPlanChecksInItsGeneratedCode(String device) {
        assumeDevice(device);
        Tensor ids = Tensor.of(new long[] {2, 0}, 2).to(device).realize();
        try (ExecutionPlan plan = x(device).indexSelect(0, ids).prepare()) {
            String source = String.join("\n", plan.kernels().stream().map(k -> k.source()).toList());
            assertThat(source).contains(device.equals("CPU") ? "checkIndex(" : "kiln_check_index(");
            plan.execute();
            assertThat(plan.outputBuffer().getDouble(0)).isEqualTo(8);
            ids.buffer().setLong(1, -4);
            IndexOutOfRangeException e = catchThrowableOfType(IndexOutOfRangeException.class, plan::execute);
            assertThat(e).hasMessage("indexSelect: index -4 is out of range for axis 0 of size 3; valid are -3 to 2");
            assertThat(e.getCause()).isInstanceOf(IndexCheckFailure.class).hasMessageContaining("kernel ").hasMessageContaining("index -4");
            ids.buffer().setLong(1, -3);
            plan.execute();
            assertThat(plan.outputBuffer().getDouble(4)).isEqualTo(0);
        }
    }

    /**
     * In C, a check that is the same in every vector lane (an embedding row's index) is made once, before the lane
     * loops: a loop holding the check's possible store into the status block is not vectorised.
     */
    @Test
    void inCTheCheckOfARowIsMadeOutsideTheLaneLoops() {
        assumeDevice("CLANG");
        Tensor table = Tensor.rand(2, 64, 512).to("CLANG").realize();
        try (ExecutionPlan plan = Tensor.embedding(Tensor.of(new long[] {3, 9, 63}, 3).to("CLANG"), table).prepare()) {
            List<String> lines = plan.kernels().getFirst().source().lines().toList();
            String check = lines.stream().filter(l -> l.contains("kiln_check_index(")).findFirst().orElseThrow();
            String read = lines.stream().filter(l -> l.contains("= p2[")).findFirst().orElseThrow();
            assertThat(lines.stream().filter(l -> l.contains("kiln_check_index(")).count()).isOne();
            assertThat(indent(check)).as("%s\n%s", check, read).isLessThan(indent(read));
            assertThat(lines.indexOf(check)).isLessThan(lines.indexOf(read));
        }
    }

    private static int indent(String line) { return line.length() - line.stripLeading().length(); }

    /** A kernel split across workers: the failure of one share reaches the caller as the typed exception. */
    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"CPU", "CLANG"})
    void aThreadedKernelReportsTheFailureOfAnyShare(String device) {
        assumeDevice(device);
        int rows = 4096, dim = 256;
        Tensor table = Tensor.rand(1, 64, dim).to(device).realize();
        long[] ids = new long[rows];
        for (int i = 0; i < rows; i++) ids[i] = i % 64;
        ids[rows - 3] = 64;
        Tensor y = Tensor.embedding(Tensor.of(ids, rows).to(device), table);
        assertThatThrownBy(y::realize).isInstanceOf(IndexOutOfRangeException.class)
                .hasMessage("embedding: index 64 is out of range for axis 0 of size 64; valid are 0 to 63");
    }

    /** Indices that differ between vector lanes (GatherElements across columns) are checked lane by lane. */
    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"CPU", "CLANG"})
    void indicesThatDifferBetweenLanesAreChecked(String device) {
        assumeDevice(device);
        int cols = 64;
        float[] v = new float[4 * cols];
        long[] ids = new long[4 * cols];
        for (int i = 0; i < v.length; i++) {
            v[i] = i;
            ids[i] = (i * 7) % 4 - (i % 3 == 0 ? 4 : 0);
        }
        Tensor x = Tensor.of(v, 4, cols).to(device);
        float[] want = Tensor.of(v, 4, cols).to("INTERP").gatherElements(0, Tensor.of(ids, 4, cols).to("INTERP")).toFloatArray();
        assertThat(x.gatherElements(0, Tensor.of(ids, 4, cols).to(device)).toFloatArray()).containsExactly(want);
        ids[2 * cols + 37] = 4;
        assertThatThrownBy(() -> x.gatherElements(0, Tensor.of(ids, 4, cols).to(device)).toFloatArray())
                .isInstanceOf(IndexOutOfRangeException.class).hasMessage("gatherElements: index 4 is out of range for axis 0 of size 4; valid are -4 to 3");
    }

    /**
     * Padding computes indices it never uses (a padded region of a gather's result): they are not checked, so a
     * gather padded or concatenated runs, on every device, with its indices computed or read.
     */
    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"INTERP", "INTERP-plan", "CPU", "CLANG"})
    void aPaddedGatherChecksOnlyTheIndicesItUses(String device) {
        assumeDevice(device);
        String d = device.startsWith("INTERP") ? "INTERP" : device;
        Tensor computed = Tensor.arange(3).cast(DType.I64).mul(2L).sub(2L); // -2, 0, 2: valid, wrapping
        Tensor y = x(d).indexSelect(0, computed.to(d)).pad(new int[][] {{2, 1}, {0, 0}});
        assertThat(compute(device, y)).containsExactly(0, 0, 0, 0, 0, 0, 0, 0, 4, 5, 6, 7, 0, 1, 2, 3, 8, 9, 10, 11, 0, 0, 0, 0);
        Tensor read = Tensor.cat(0, x(d).gather(1, Tensor.of(new long[] {3, 0, 1}, 3, 1).to(d)), Tensor.zeros(2, 1).to(d));
        assertThat(compute(device, read)).containsExactly(3, 4, 9, 0, 0);
    }
}

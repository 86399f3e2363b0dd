package dev.kiln;

import dev.kiln.codegen.Optimizer;
import dev.kiln.codegen.Stmt;
import dev.kiln.runtime.ExecutionPlan;
import dev.kiln.runtime.PreparedKernel;
import dev.kiln.types.DType;
import dev.kiln.types.Variable;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.Arrays;
import java.util.Map;
import java.util.function.UnaryOperator;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

/**
 * Loops over a symbolic size run in vector lanes (GROUP of a reduce loop, UPCAST of an output loop, each with a
 * limit: the groups that hold an iteration below the size, the lanes past it masked off), checked against INTERP
 * at every size around the vector widths (8 lanes of AVX2, 16 of AVX-512) from 0 to the maximum. The rows past the
 * size hold NaN, or for integers a value that would change any sum it reached (and divisors of 0), so a lane past
 * the size that read or added its row fails; outputs past the size must keep what they held.
 */
class SymbolicLanesTest {
    private static final int ROWS = 3, MAX = 64;
    private static final long[] SIZES = {0, 1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 31, 32, 33, 47, 63, 64};

    private static float value(int row, int i) { return (float) Math.sin(row * 17 + i * 0.61) * 4; }

    /** (ROWS, MAX) with rows' first {@code n} values set and NaN past them. */
    private static float[] padded(long n) {
        float[] out = new float[ROWS * MAX];
        Arrays.fill(out, Float.NaN);
        for (int r = 0; r < ROWS; r++) for (int i = 0; i < n; i++) out[r * MAX + i] = value(r, i);
        return out;
    }

    private static float[] exact(long n) {
        float[] out = new float[ROWS * (int) n];
        for (int r = 0; r < ROWS; r++) for (int i = 0; i < n; i++) out[r * (int) n + i] = value(r, i);
        return out;
    }

    @ParameterizedTest
    @ValueSource(strings = {"CPU", "CLANG"})
    void floatMaxSumAndSoftmaxOverASymbolicSizeMatchInterpAtEverySize(String device) {
        dev.kiln.testing.DeviceAssumptions.assumeAvailable(device, "symbolic lane tests");
        Variable n = new Variable("n", 0, MAX);
        Tensor input = Tensor.zeros(ROWS, MAX).to(device).contiguous().realize();
        Tensor x = input.withSymbolicDim(1, n);
        check(device, input, x.max(1), t -> t.max(1), Float.NEGATIVE_INFINITY);
        check(device, input, x.exp().sum(1), t -> t.exp().sum(1), 0f);
        check(device, input, x.softmax(-1), t -> t.softmax(-1), null);
    }

    /**
     * CLANG renders a reduction over a symbolic size as its whole groups, without the lanes' gates (GCC vectorises no
     * loop with conditional loads), then its last group with them; the test above runs both at every size.
     */
    @org.junit.jupiter.api.Test
    void clangRunsTheWholeGroupsOfASymbolicSizeWithoutTheLanesGates() {
        dev.kiln.testing.DeviceAssumptions.assumeAvailable("CLANG", "symbolic lane tests");
        Variable n = new Variable("n", 0, MAX);
        Tensor input = Tensor.zeros(ROWS, MAX).to("CLANG").contiguous().realize();
        try (ExecutionPlan plan = input.withSymbolicDim(1, n).exp().sum(1).prepare()) {
            String source = plan.kernels().getLast().source();
            java.util.regex.Matcher whole = java.util.regex.Pattern.compile("for \\(int64_t (\\w+) = 0; \\1 < \\(n / (\\d+)\\); \\1\\+\\+\\)").matcher(source);
            assertThat(whole.find()).as("the whole groups' loop in\n%s", source).isTrue();
            String index = whole.group(1), lanes = whole.group(2);
            assertThat(source).as("the last group's loop").contains("for (int64_t " + index + " = (n / " + lanes + "); " + index + " < ((n + ");
            String wholeBody = source.substring(whole.end(), source.indexOf("for (int64_t " + index + " = (n / "));
            assertThat(wholeBody).as("the whole groups read without a gate").doesNotContain("< n;").doesNotContain("? ");
        }
    }

    /**
     * The same for a reduction whose length the lanes do not divide (a global pool over 13 x 13 = 169 = 10 x 16 + 9, or
     * 21 x 8 + 1 with 8 lanes): the whole groups run ungated over a loop whose range ends before the last group, and the
     * maxima (exact in any order) equal INTERP's, NaN and infinities included.
     */
    @org.junit.jupiter.api.Test
    void clangRunsTheWholeGroupsOfAReductionWithARemainderWithoutTheLanesGates() {
        dev.kiln.testing.DeviceAssumptions.assumeAvailable("CLANG", "symbolic lane tests");
        int channels = 40;
        float[] values = new float[channels * 169];
        for (int i = 0; i < values.length; i++) values[i] = (float) Math.sin(i * 0.37) * (i % 169);
        values[5 * 169 + 168] = Float.NaN; // in a last group
        values[7 * 169 + 3] = Float.POSITIVE_INFINITY; // in a whole group
        values[9 * 169 + 160] = 1e30f;
        Tensor x = Tensor.of(DType.F32, java.util.stream.IntStream.range(0, values.length).mapToDouble(i -> values[i]).toArray(), 1, channels, 13, 13);
        float[] want = x.to("INTERP").max(new int[] {2, 3}, false).toFloatArray();
        try (ExecutionPlan plan = x.to("CLANG").max(new int[] {2, 3}, false).prepare()) {
            String source = plan.kernels().getLast().source();
            java.util.regex.Matcher whole = java.util.regex.Pattern.compile("for \\(int64_t (\\w+) = 0; \\1 < (\\d+); \\1\\+\\+\\) \\{\\s+KILN_INDEPENDENT\\s+for").matcher(source);
            assertThat(whole.find()).as("the whole groups' loop in\n%s", source).isTrue();
            String wholeBody = source.substring(whole.end(), source.indexOf("for (int64_t", source.indexOf("}", whole.end())));
            assertThat(wholeBody).as("the whole groups read without a gate or a check").doesNotContain(" < 169").doesNotContain("kiln_in_range");
            plan.execute();
            MemorySegment got = plan.outputBuffer().segment();
            for (int c = 0; c < channels; c++) {
                float g = got.getAtIndex(ValueLayout.JAVA_FLOAT, c);
                assertThat(Float.floatToIntBits(g)).as("channel %d: %s, want %s", c, g, want[c]).isEqualTo(Float.floatToIntBits(want[c]));
            }
        }
    }

    /**
     * The outermost loop over the size is the range the runtime splits across workers: split in groups, it runs
     * {@code ceil(n / lanes)} iterations, the active extent the workers share (a larger one would only hand them
     * empty ranges, since the generated loop stops at the groups too).
     */
    @ParameterizedTest
    @ValueSource(strings = {"CPU", "CLANG"})
    void aThreadedLoopOverASymbolicSizeSplitInGroupsRunsOnlyItsGroups(String device) {
        dev.kiln.testing.DeviceAssumptions.assumeAvailable(device, "symbolic lane tests");
        int max = 1 << 17;
        Variable n = new Variable("n", 0, max);
        Tensor input = Tensor.zeros(max).to(device).contiguous().realize();
        Tensor y = input.withSymbolicDim(0, n).mul(3).add(1);
        try (ExecutionPlan plan = y.prepare()) {
            Stmt.Loop outer = (Stmt.Loop) plan.kernels().getLast().program().body().body().getFirst();
            assertThat(outer.kind()).as("%s: %s", device, plan.kernels().getLast().program()).isEqualTo(Stmt.LoopKind.THREAD);
            assertThat(outer.limitStep()).as("%s: the threaded loop is split in groups", device).isGreaterThan(1);
            float[] in = new float[max];
            for (int i = 0; i < max; i++) in[i] = i % 1000 - 500;
            MemorySegment.copy(in, 0, input.buffer().segment(), ValueLayout.JAVA_FLOAT, 0, max);
            MemorySegment out = plan.outputBuffer().segment();
            for (long s : new long[] {0, 1, 7, 8, 9, 15, 16, 17, 1000, max - 17, max - 1, max}) {
                assertThat(plan.kernels().getLast().program().activeExtent(new long[] {s})).isEqualTo(Math.ceilDiv(s, outer.limitStep()));
                out.fill((byte) 0x5A);
                plan.executeWithVars(Map.of("n", s));
                for (int i = 0; i < max; i++) {
                    int got = out.getAtIndex(ValueLayout.JAVA_INT, i);
                    int want = i < s ? Float.floatToRawIntBits(in[i] * 3 + 1) : 0x5A5A5A5A;
                    if (got != want) assertThat(got).as("%s n %d element %d", device, s, i).isEqualTo(want);
                }
            }
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"CPU", "CLANG"})
    void integerDivisionInLanesPastTheSizeNeitherTrapsNorStores(String device) {
        dev.kiln.testing.DeviceAssumptions.assumeAvailable(device, "symbolic lane tests");
        Variable n = new Variable("n", 0, MAX);
        Tensor a = Tensor.zeros(DType.I32, ROWS, MAX).to(device).contiguous().realize();
        Tensor b = Tensor.zeros(DType.I32, ROWS, MAX).to(device).contiguous().realize();
        Tensor y = a.withSymbolicDim(1, n).floorDiv(b.withSymbolicDim(1, n));
        try (ExecutionPlan plan = y.prepare()) {
            assertThat(split(plan, Stmt.LoopKind.GLOBAL)).as("%s: the output loop over n is upcast", device).isTrue();
            MemorySegment out = plan.outputBuffer().segment();
            for (long s : SIZES) {
                int[] num = new int[ROWS * MAX], den = new int[ROWS * MAX];
                for (int i = 0; i < num.length; i++) {
                    boolean live = i % MAX < s;
                    num[i] = live ? i * 37 - 500 : 1 << 20;
                    den[i] = live ? i % 7 - 3 : 0; // past the size a divisor of 0: a lane that divided by it in Java would throw
                }
                MemorySegment.copy(num, 0, a.buffer().segment(), ValueLayout.JAVA_INT, 0, num.length);
                MemorySegment.copy(den, 0, b.buffer().segment(), ValueLayout.JAVA_INT, 0, den.length);
                out.fill((byte) 0x5A);
                plan.executeWithVars(Map.of("n", s));
                for (int r = 0; r < ROWS; r++) {
                    for (int i = 0; i < MAX; i++) {
                        int k = r * MAX + i;
                        int got = out.getAtIndex(ValueLayout.JAVA_INT, k);
                        // floor division, and 0 for a divisor of 0 (Alu's)
                        int want = i >= s ? 0x5A5A5A5A : den[k] == 0 ? 0 : Math.floorDiv(num[k], den[k]);
                        assertThat(got).as("%s n %d element (%d, %d)", device, s, r, i).isEqualTo(want);
                    }
                }
            }
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"CPU", "CLANG"})
    void integerSumOverASymbolicSizeIsExact(String device) {
        dev.kiln.testing.DeviceAssumptions.assumeAvailable(device, "symbolic lane tests");
        Variable n = new Variable("n", 0, MAX);
        Tensor input = Tensor.zeros(DType.I32, ROWS, MAX).to(device).contiguous().realize();
        Tensor y = input.withSymbolicDim(1, n).sum(1);
        try (ExecutionPlan plan = y.prepare()) {
            assertThat(grouped(plan)).as("a kernel's reduction over n is grouped in lanes").isTrue();
            for (long s : SIZES) {
                int[] data = new int[ROWS * MAX];
                Arrays.fill(data, 1 << 20); // past the size: any lane that added one would be off by a million
                for (int r = 0; r < ROWS; r++) for (int i = 0; i < s; i++) data[r * MAX + i] = r * 1000 + i * 7 - 50;
                MemorySegment.copy(data, 0, input.buffer().segment(), ValueLayout.JAVA_INT, 0, data.length);
                plan.executeWithVars(Map.of("n", s));
                for (int r = 0; r < ROWS; r++) {
                    long want = 0;
                    for (int i = 0; i < s; i++) want += r * 1000 + i * 7 - 50;
                    assertThat(plan.outputBuffer().getDouble(r)).as("%s n %d row %d", device, s, r).isEqualTo((double) want);
                }
            }
        }
    }

    /**
     * {@code y} over {@code input} (ROWS, MAX) at every size in {@link #SIZES} against {@code reference} of the
     * exact rows on INTERP (at size 0, {@code empty} in each row of a reduction), and that the plan grouped a loop
     * over the size.
     */
    private static void check(String device, Tensor input, Tensor y, UnaryOperator<Tensor> reference, Float empty) {
        try (ExecutionPlan plan = y.prepare()) {
            assertThat(grouped(plan)).as("%s: a kernel's reduction over n is grouped in lanes", device).isTrue();
            if (y.ndim() == 2) assertThat(split(plan, Stmt.LoopKind.GLOBAL)).as("%s: an output loop over n is upcast", device).isTrue();
            for (long s : SIZES) {
                float[] in = padded(s);
                MemorySegment.copy(in, 0, input.buffer().segment(), ValueLayout.JAVA_FLOAT, 0, in.length);
                plan.outputBuffer().segment().fill((byte) 0x5A);
                plan.executeWithVars(Map.of("n", s));
                if (y.ndim() == 2) {
                    for (int i = 0; i < ROWS * MAX; i++) {
                        if (i % MAX < s) continue;
                        assertThat(Float.floatToRawIntBits((float) plan.outputBuffer().getDouble(i))).as("%s n %d: element %d past the size is written", device, s, i)
                                .isEqualTo(0x5A5A5A5A);
                    }
                }
                int cols = y.ndim() == 1 ? 1 : (int) s;
                float[] want = s == 0 ? emptyRows(y, empty) : reference.apply(Tensor.of(exact(s), ROWS, (int) s).to("INTERP")).toFloatArray();
                for (int i = 0; i < ROWS * cols; i++) {
                    int r = i / cols, c = i % cols;
                    float got = (float) plan.outputBuffer().getDouble(y.ndim() == 1 ? r : (long) r * MAX + c);
                    String what = String.format("%s %s n %d element (%d, %d)", device, plan.kernels().getLast().name(), s, r, c);
                    if (Float.isNaN(want[i]) || Float.isInfinite(want[i])) assertThat(got).as(what).isEqualTo(want[i]);
                    else assertThat(got).as(what).isCloseTo(want[i], within(1e-5f + 1e-5f * Math.abs(want[i])));
                }
            }
        }
    }

    /** A reduction's rows of no elements: its identity in each (a softmax has no elements to compare). */
    private static float[] emptyRows(Tensor y, Float empty) {
        if (y.ndim() != 1) return new float[0];
        float[] out = new float[ROWS];
        Arrays.fill(out, empty);
        return out;
    }

    /** Whether a kernel of the plan runs a reduce loop over a symbolic size in groups of lanes. */
    private static boolean grouped(ExecutionPlan plan) { return split(plan, Stmt.LoopKind.REDUCE); }

    /** Whether a kernel of the plan runs a loop of {@code kind} (GLOBAL: or THREAD) over a symbolic size in groups of lanes. */
    private static boolean split(ExecutionPlan plan, Stmt.LoopKind kind) {
        boolean[] found = {false};
        for (PreparedKernel k : plan.kernels()) {
            Optimizer.walk(k.program().body(), s -> found[0] |= s instanceof Stmt.Loop l && l.limit() != null && l.limitStep() > 1
                    && (l.kind() == kind || kind == Stmt.LoopKind.GLOBAL && l.kind() == Stmt.LoopKind.THREAD));
        }
        return found[0];
    }
}

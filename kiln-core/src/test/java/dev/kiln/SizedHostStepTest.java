package dev.kiln;

import dev.kiln.runtime.ExecutionPlan;
import dev.kiln.runtime.ExtentOutOfRangeException;
import dev.kiln.runtime.MemoryStats;
import dev.kiln.runtime.VariableSource;
import dev.kiln.types.DType;
import dev.kiln.types.Variable;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * A host step that decides its output's extent when the plan runs ({@link Tensor#hostSized}): the plan binds the
 * variable from the step's count, mid-run, and the kernels after it loop to that count; one plan serves every count,
 * zero included, and a count outside the capacity is a typed error naming the step.
 */
class SizedHostStepTest {
    private static final int N = 8;

    private static void assumeAvailable(String device) { dev.kiln.testing.DeviceAssumptions.assumeAvailable(device, "sized host step tests"); }

    /** The positions of the positive elements of an f32 vector: the step under test (a NonZero). */
    private static long positives(java.util.List<MemorySegment> in, MemorySegment out) {
        long k = 0;
        for (int i = 0; i < N; i++) if (in.getFirst().getAtIndex(ValueLayout.JAVA_FLOAT, i) > 0) out.setAtIndex(ValueLayout.JAVA_LONG, k++, i);
        return k;
    }

    @ParameterizedTest
    @ValueSource(strings = {"INTERP", "CPU", "CLANG"})
    void onePlanServesEveryCountItsStepProduces(String device) {
        assumeAvailable(device);
        Tensor input = Tensor.zeros(N).to(device).contiguous().realize();
        long baseline = MemoryStats.liveBytes();
        Variable n = new Variable("positives", 0, N);
        Tensor idx = Tensor.hostSized("positives", DType.I64, new int[] {N}, 0, n, SizedHostStepTest::positives, input);
        assertThat(idx.shape()).hasToString("[positives<=8]");
        Tensor picked = input.indexSelect(0, idx).mul(10f); // a kernel over the produced extent
        Tensor total = picked.sum();
        MemorySegment in = input.buffer().segment();
        try (ExecutionPlan plan = Tensor.prepare(picked, total)) {
            int v = plan.variables().indexOf(n);
            assertThat(plan.variableSource(v)).isInstanceOf(VariableSource.Step.class);
            assertThat(((VariableSource.Step) plan.variableSource(v)).name()).isEqualTo("positives");
            float[][] runs = {{1, -1, 2, 0, 0, 3, -5, 4}, {-1, -1, -1, -1, -1, -1, -1, -1}, {1, 1, 1, 1, 1, 1, 1, 1}, {0, 0, 0, 0, 0, 0, 0, 7}};
            for (float[] data : runs) {
                MemorySegment.copy(data, 0, in, ValueLayout.JAVA_FLOAT, 0, N);
                plan.execute();
                int count = 0;
                float want = 0;
                float[] wantRows = new float[N];
                for (float x : data) if (x > 0) { wantRows[count++] = 10 * x; want += 10 * x; }
                assertThat(plan.variableValue(v)).as("count").isEqualTo(count);
                float[] got = new float[count];
                MemorySegment.copy(plan.outputBuffer(0).segment(), ValueLayout.JAVA_FLOAT, 0, got, 0, count);
                assertThat(got).containsExactly(java.util.Arrays.copyOf(wantRows, count));
                assertThat(plan.outputBuffer(1).segment().get(ValueLayout.JAVA_FLOAT, 0)).isEqualTo(want); // an empty sum is 0
            }
            assertThatThrownBy(() -> plan.setVariable(v, 3)).isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("'positives' is bound by the host step positives");
            assertThatThrownBy(() -> plan.executeWithVars(Map.of("positives", 3L))).isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("cannot be given");
        }
        assertThat(MemoryStats.liveBytes()).as("the plan's memory is freed").isEqualTo(baseline);
    }

    @ParameterizedTest
    @ValueSource(strings = {"INTERP", "CPU"})
    void aCountOutsideTheCapacityIsATypedErrorNamingTheStep(String device) {
        assumeAvailable(device);
        Tensor input = Tensor.zeros(N).to(device).contiguous().realize();
        long[] given = {N + 1};
        Variable n = new Variable("count", 0, N);
        Tensor idx = Tensor.hostSized("Bad node 'b'", DType.I64, new int[] {N}, 0, n, (in, out) -> given[0], input);
        Tensor y = input.indexSelect(0, idx).sum();
        try (ExecutionPlan plan = y.prepare()) {
            assertThatThrownBy(plan::execute).isInstanceOf(ExtentOutOfRangeException.class)
                    .hasMessageContaining("Bad node 'b'").hasMessageContaining("extent 9").hasMessageContaining("capacity 8");
            given[0] = -1;
            assertThatThrownBy(plan::execute).isInstanceOf(ExtentOutOfRangeException.class)
                    .hasMessageContaining("Bad node 'b'").hasMessageContaining("a negative count");
            given[0] = 2;
            plan.execute(); // the plan is still usable
        }
    }

    @Test
    void theInterpreterBindsTheExtentAsItEvaluates() {
        Tensor input = Tensor.of(new float[] {3, -1, 0, 5, 0, 0, 0, 2}, N).to("INTERP");
        Variable n = new Variable("k", 0, N);
        Tensor idx = Tensor.hostSized("positives", DType.I64, new int[] {N}, 0, n, SizedHostStepTest::positives, input);
        assertThat(input.indexSelect(0, idx).sum().item()).isEqualTo(10.0);
    }

    @Test
    void theExtentsRangeMustEndAtTheCapacity() {
        Tensor input = Tensor.zeros(N).to("INTERP");
        assertThatThrownBy(() -> Tensor.hostSized("s", DType.I64, new int[] {N}, 0, new Variable("k", 0, N - 1), (in, out) -> 0, input))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("capacity 8");
        assertThatThrownBy(() -> Tensor.hostSized("s", DType.I64, new int[] {N}, 0, new Variable("k", -1, N), (in, out) -> 0, input))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("from 0 or more");
    }

    /** A symbolic input comes at its maximum layout; the step reads its size from a variable input, and counts only below it. */
    @ParameterizedTest
    @ValueSource(strings = {"INTERP", "CPU"})
    void aSymbolicInputsSizeIsAnInputOfItsOwn(String device) {
        assumeAvailable(device);
        Tensor buffer = Tensor.zeros(N).to(device).contiguous().realize();
        Variable len = new Variable("len", 1, N);
        Tensor x = buffer.withSymbolicDim(0, len);
        Variable k = new Variable("k", 0, N);
        Tensor idx = Tensor.hostSized("positives below len", DType.I64, new int[] {N}, 0, k, (in, out) -> {
            long size = in.get(1).get(ValueLayout.JAVA_LONG, 0), n = 0;
            for (int i = 0; i < size; i++) if (in.getFirst().getAtIndex(ValueLayout.JAVA_FLOAT, i) > 0) out.setAtIndex(ValueLayout.JAVA_LONG, n++, i);
            return n;
        }, x, Tensor.variable(len));
        Tensor y = x.indexSelect(0, idx).sum();
        MemorySegment.copy(new float[] {1, 2, -1, 4, 5, 6, 7, 8}, 0, buffer.buffer().segment(), ValueLayout.JAVA_FLOAT, 0, N);
        try (ExecutionPlan plan = y.prepare()) {
            plan.executeWithVars(Map.of("len", 4L));
            assertThat(plan.outputBuffer().segment().get(ValueLayout.JAVA_FLOAT, 0)).isEqualTo(7f);
            assertThat(plan.variableValue(plan.variables().indexOf(k))).isEqualTo(3);
            plan.executeWithVars(Map.of("len", 8L));
            assertThat(plan.outputBuffer().segment().get(ValueLayout.JAVA_FLOAT, 0)).isEqualTo(33f);
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"INTERP", "CPU"})
    void theServingApiGivesOutputsAtTheExtentEachRunProduced(String device) {
        assumeAvailable(device);
        var g = new dev.kiln.serve.Graph();
        Tensor x = g.input("x", DType.F32, N);
        Tensor idx = Tensor.hostSized("positives", DType.I64, new int[] {N}, 0, new Variable("k", 0, N), SizedHostStepTest::positives, x);
        g.outputs(x.indexSelect(0, idx).mul(10f), idx, x.sum());
        try (var cg = dev.kiln.serve.Session.on(device).compile(g)) {
            float[][] runs = {{1, -1, 2, 0, 0, 3, -5, 4}, {-1, -1, -1, -1, -1, -1, -1, -1}, {0, 0, 0, 0, 0, 0, 0, 7}};
            for (float[] data : runs) {
                var out = cg.run(Map.of("x", data));
                java.util.List<Float> picked = new java.util.ArrayList<>(), at = new java.util.ArrayList<>();
                for (int i = 0; i < N; i++) if (data[i] > 0) { picked.add(10 * data[i]); at.add((float) i); }
                assertThat(cg.outputDims(0)).containsExactly(picked.size());
                assertThat(cg.outputDims(2)).isEmpty();
                assertThat(out.get(0)).hasSize(picked.size());
                for (int i = 0; i < picked.size(); i++) {
                    assertThat(out.get(0)[i]).isEqualTo(picked.get(i));
                    assertThat(out.get(1)[i]).isEqualTo(at.get(i));
                }
                assertThat(out.get(1)).hasSize(at.size());
                var typed = cg.runTyped(Map.of("x", new dev.kiln.serve.TypedValues(DType.F32, floatsAsBytes(data))));
                assertThat(typed.get(1).bytes()).hasSize(8 * at.size());
            }
            assertThatThrownBy(() -> cg.setVariable("k", 2)).isInstanceOf(IllegalArgumentException.class).hasMessageContaining("cannot be set");
        }
    }

    private static byte[] floatsAsBytes(float[] v) {
        byte[] b = new byte[4 * v.length];
        MemorySegment.copy(v, 0, MemorySegment.ofArray(b), ValueLayout.JAVA_FLOAT_UNALIGNED, 0, v.length);
        return b;
    }
}

package dev.kiln;

import dev.kiln.runtime.DeviceRegistry;
import dev.kiln.runtime.ExecutionPlan;
import dev.kiln.runtime.MemoryStats;
import dev.kiln.serve.CompiledGraph;
import dev.kiln.serve.Graph;
import dev.kiln.serve.Session;
import dev.kiln.testing.DeviceAssumptions;
import dev.kiln.types.DType;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.junit.jupiter.api.Test;

import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.within;

/** {@link Tensor#scan}: the loop's results against plain Java loops, on every host device, and its refusals. */
class ScanTest {

    private static float[] iota(int n, float scale) {
        float[] f = new float[n];
        for (int i = 0; i < n; i++) f[i] = (i % 7 - 3) * scale;
        return f;
    }

    /** A running sum and a running product-like recurrence: h = 0.5 h + x, y = h * w + c, with c a constant. */
    @ParameterizedTest
    @ValueSource(strings = {"INTERP", "CPU", "CLANG"})
    void recurrenceMatchesAJavaLoop(String device) {
        DeviceAssumptions.assumeAvailable(device, "scan tests");
        var d = DeviceRegistry.get(device);
        int steps = 37, n = 5;
        float[] xs = iota(steps * n, 0.25f), h0 = iota(n, 1f), w = iota(n, 0.5f);
        Tensor x = Tensor.of(xs, steps, n).to(d), init = Tensor.of(h0, n).to(d), weight = Tensor.of(w, n).to(d);
        List<Tensor> r = Tensor.scan((state, slice, c) -> {
            Tensor h = state.get(0).mul(0.5).add(slice.get(0));
            return List.of(h, h.mul(c.get(0)).add(1.0));
        }, List.of(init), List.of(x), List.of(weight));
        float[] h = h0.clone(), y = new float[steps * n];
        for (int t = 0; t < steps; t++) {
            for (int i = 0; i < n; i++) {
                h[i] = h[i] * 0.5f + xs[t * n + i];
                y[t * n + i] = h[i] * w[i] + 1f;
            }
        }
        assertThat(r.get(0).dims()).containsExactly(n);
        assertThat(r.get(1).dims()).containsExactly(steps, n);
        assertThat(r.get(0).toFloatArray()).containsExactly(h);
        assertThat(r.get(1).toFloatArray()).containsExactly(y);
    }

    /** States that swap or pass through unchanged read the previous step's values, not the ones being written. */
    @ParameterizedTest
    @ValueSource(strings = {"INTERP", "CPU"})
    void swappedAndUnchangedStatesCarryThePreviousValues(String device) {
        var d = DeviceRegistry.get(device);
        Tensor a = Tensor.of(new float[] {1, 2}, 2).to(d), b = Tensor.of(new float[] {10, 20}, 2).to(d), k = Tensor.of(new float[] {7, 8}, 2).to(d);
        Tensor x = Tensor.of(new float[] {1, 1, 1}, 3, 1).to(d);
        List<Tensor> r = Tensor.scan((s, sl, c) -> List.of(s.get(1), s.get(0).add(sl.get(0)), s.get(2), s.get(1)),
                List.of(a, b, k), List.of(x), List.of());
        // (a, b) -> (b, a + 1): after 3 steps (b+1, a+2) -> a'=b+1... step1 (10,20 | 2,3), step2 (2,3 | 11,21), step3 (11,21 | 3,4)
        assertThat(r.get(0).toFloatArray()).containsExactly(11, 21);
        assertThat(r.get(1).toFloatArray()).containsExactly(3, 4);
        assertThat(r.get(2).toFloatArray()).containsExactly(7, 8);
        assertThat(r.get(3).toFloatArray()).containsExactly(10, 20, 2, 3, 11, 21);
    }

    /** Results of several dtypes (an i64 counter beside f32 values) and zero steps. */
    @Test
    void mixedDtypesAndZeroSteps() {
        Tensor count = Tensor.of(new long[] {0}, 1);
        Tensor x = Tensor.of(new float[] {1.5f, 2.5f, 3f}, 3);
        List<Tensor> r = Tensor.scan((s, sl, c) -> List.of(s.get(0).add(1L), sl.get(0).mul(2.0)), List.of(count), List.of(x), List.of());
        assertThat(r.get(0).dtype()).isEqualTo(DType.I64);
        assertThat(r.get(0).toLongArray()).containsExactly(3);
        assertThat(r.get(1).toFloatArray()).containsExactly(3f, 5f, 6f);

        Tensor none = Tensor.zeros(DType.F32, 0, 2);
        List<Tensor> z = Tensor.scan((s, sl, c) -> List.of(s.get(0).add(sl.get(0)), sl.get(0)), List.of(Tensor.of(new float[] {4, 5}, 2)),
                List.of(none), List.of());
        assertThat(z.get(0).toFloatArray()).containsExactly(4, 5);
        assertThat(z.get(1).dims()).containsExactly(0, 2);
    }

    /** The plan does not grow with the number of steps, and its memory returns when it closes. */
    @Test
    void planSizeIsIndependentOfTheStepCount() {
        long baseline = MemoryStats.liveBytes();
        int[] counts = new int[2];
        int[] lengths = {4, 4000};
        for (int i = 0; i < 2; i++) {
            Tensor x = Tensor.of(iota(lengths[i] * 3, 0.01f), lengths[i], 3);
            List<Tensor> r = Tensor.scan((s, sl, c) -> List.of(s.get(0).add(sl.get(0)).tanh()), List.of(Tensor.zeros(DType.F32, 3)), List.of(x), List.of());
            try (ExecutionPlan plan = r.get(0).prepare()) {
                plan.execute();
                counts[i] = plan.preparedOps().size();
                float[] h = new float[3], xs = iota(lengths[i] * 3, 0.01f);
                for (int t = 0; t < lengths[i]; t++) for (int j = 0; j < 3; j++) h[j] = (float) Math.tanh(h[j] + xs[t * 3 + j]);
                float[] got = new float[3];
                for (int j = 0; j < 3; j++) got[j] = (float) plan.outputBuffer().getDouble(j);
                for (int j = 0; j < 3; j++) assertThat(got[j]).isCloseTo(h[j], within(1e-5f));
            }
        }
        assertThat(counts[1]).isEqualTo(counts[0]);
        assertThat(MemoryStats.liveBytes()).isEqualTo(baseline);
    }

    /** A scan inside a compiled serving graph, its weights passed as constants, run twice with new inputs. */
    @Test
    void runsInsideACompiledGraph() {
        Graph g = new Graph();
        Tensor x = g.input("x", DType.F32, 4, 2), w = g.param("w", DType.F32, 2, 2);
        List<Tensor> r = Tensor.scan((s, sl, c) -> {
            Tensor h = s.get(0).reshape(1, 2).matmul(c.get(0)).reshape(2).add(sl.get(0));
            return List.of(h, h);
        }, List.of(Tensor.zeros(DType.F32, 2)), List.of(x), List.of(w));
        g.outputs(r.get(1));
        try (CompiledGraph c = Session.on("CPU").compile(g)) {
            c.setParam("w", new float[] {1, 0, 0, 2});
            float[] y = c.run(Map.of("x", new float[] {1, 1, 1, 1, 1, 1, 1, 1})).getFirst();
            assertThat(y).containsExactly(1, 1, 2, 3, 3, 7, 4, 15);
            y = c.run(Map.of("x", new float[] {0, 1, 0, 0, 0, 0, 0, 0})).getFirst();
            assertThat(y).containsExactly(0, 1, 0, 2, 0, 4, 0, 8);
        }
    }

    /** A scan within a step: the inner one reads the outer step's argument through its constants. */
    @Test
    void nestedScans() {
        Tensor m = Tensor.of(iota(3 * 4 * 2, 1f), 3, 4, 2), bias = Tensor.of(new float[] {0.5f}, 1);
        List<Tensor> r = Tensor.scan((s, sl, c) -> {
            List<Tensor> inner = Tensor.scan((is, isl, ic) -> {
                Tensor acc = is.get(0).add(isl.get(0).sum(0).reshape(1)).add(ic.get(0));
                return List.of(acc);
            }, List.of(Tensor.zeros(DType.F32, 1)), List.of(sl.get(0)), List.of(c.get(0)));
            return List.of(s.get(0).add(inner.getFirst()));
        }, List.of(Tensor.zeros(DType.F32, 1)), List.of(m), List.of(bias));
        float[] v = iota(24, 1f);
        float total = 0;
        for (int t = 0; t < 3; t++) {
            float acc = 0;
            for (int row = 0; row < 4; row++) acc = acc + (v[t * 8 + row * 2] + v[t * 8 + row * 2 + 1]) + 0.5f;
            total += acc;
        }
        assertThat(r.getFirst().toFloatArray()).containsExactly(total);
        // the inner step reading the outer step's argument directly, not through its constants, is refused
        assertThatThrownBy(() -> Tensor.scan((s, sl, c) -> Tensor.scan((is, isl, ic) -> List.of(is.get(0).add(c.get(0))),
                List.of(Tensor.zeros(DType.F32, 1)), List.of(sl.get(0)), List.of()), List.of(), List.of(m), List.of(bias)))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("reads 'scan constant 0'");
    }

    /** A given number of steps and no sequence: a for-loop with its counter in the state (Fibonacci numbers). */
    @Test
    void aLoopWithoutSequences() {
        List<Tensor> r = Tensor.scan((s, sl, c) -> List.of(s.get(1), s.get(0).add(s.get(1)), s.get(2).add(1L), s.get(0)), 10,
                List.of(Tensor.of(new long[] {0}, 1), Tensor.of(new long[] {1}, 1), Tensor.of(new long[] {0}, 1)), List.of(), List.of());
        assertThat(r.get(0).toLongArray()).containsExactly(55);
        assertThat(r.get(2).toLongArray()).containsExactly(10);
        assertThat(r.get(3).toLongArray()).containsExactly(0, 1, 1, 2, 3, 5, 8, 13, 21, 34);
        assertThatThrownBy(() -> Tensor.scan((s, sl, c) -> List.of(s.get(0)), 4, List.of(Tensor.zeros(DType.F32)), List.of(Tensor.zeros(DType.F32, 3)), List.of()))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("has 3 steps, the scan has 4");
        assertThatThrownBy(() -> Tensor.scan((s, sl, c) -> List.of(s.get(0)), -1, List.of(Tensor.zeros(DType.F32)), List.of(), List.of()))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("steps must be >= 0");
    }

    @Test
    void refusesWhatItCannotRun() {
        Tensor x = Tensor.of(new float[] {1, 2, 3}, 3), h = Tensor.zeros(DType.F32);
        assertThatThrownBy(() -> Tensor.scan((s, sl, c) -> List.of(s.get(0)), List.of(h), List.of(), List.of()))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("at least one sequence");
        assertThatThrownBy(() -> Tensor.scan((s, sl, c) -> List.of(s.get(0)), List.of(h), List.of(x, Tensor.zeros(DType.F32, 4)), List.of()))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("sequence 1 [4] has 4 steps, sequence 0 has 3");
        assertThatThrownBy(() -> Tensor.scan((s, sl, c) -> List.of(sl.get(0).cast(DType.F64)), List.of(h), List.of(x), List.of()))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("next state 0 is f64[] , the state is f32[]".replace("[] ,", "[],"));
        assertThatThrownBy(() -> Tensor.scan((s, sl, c) -> List.of(), List.of(h), List.of(x), List.of()))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("returned 0 tensors");
        Graph g = new Graph();
        Tensor outside = g.input("outside", DType.F32);
        assertThatThrownBy(() -> Tensor.scan((s, sl, c) -> List.of(s.get(0).add(outside)), List.of(h), List.of(x), List.of()))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("reads 'input:outside'").hasMessageContaining("as a constant");
    }
}

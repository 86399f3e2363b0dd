package dev.kiln;

import dev.kiln.runtime.DeviceRegistry;
import dev.kiln.runtime.ExecutionPlan;
import dev.kiln.runtime.ExtentOutOfRangeException;
import dev.kiln.testing.DeviceAssumptions;
import dev.kiln.types.DType;
import dev.kiln.types.Variable;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * {@link Tensor#loop}: loops whose number of iterations a run decides (a trip count read when the plan runs, a condition
 * the body computes), against plain Java loops on every host device; the iteration limit; refusals.
 */
class LoopTest {

    /** x doubles until its sum passes 100: the body computes the condition; the outputs keep the iterations that ran. */
    @ParameterizedTest
    @ValueSource(strings = {"INTERP", "CPU", "CLANG"})
    void conditionComputedByTheStep(String device) {
        DeviceAssumptions.assumeAvailable(device, "loop tests");
        var d = DeviceRegistry.get(device);
        Tensor x0 = Tensor.of(new float[] {1, 2}, 2).to(d);
        LoopResult r = Tensor.loop((i, s, c) -> {
            Tensor x = s.getFirst().mul(2.0);
            return new LoopStep.Next(x.sum().lt(100.0), List.of(x), List.of(x.sum(), i));
        }, null, null, List.of(x0), List.of(), 16).realize();
        // sums 6, 12, 24, 48, 96, 192: the sixth iteration's condition fails
        assertThat(r.iterations().toLongArray()).containsExactly(6);
        assertThat(r.states().getFirst().toFloatArray()).containsExactly(64, 128);
        assertThat(r.outputs().getFirst().dims()).containsExactly(16);
        float[] sums = r.outputs().getFirst().slice(0, 0, 6, 1).toFloatArray();
        assertThat(sums).containsExactly(6, 12, 24, 48, 96, 192);
        assertThat(r.outputs().get(1).slice(0, 0, 6, 1).toLongArray()).containsExactly(0, 1, 2, 3, 4, 5);
    }

    /** One plan serves every trip count: the count is read from its buffer each time the plan runs. */
    @ParameterizedTest
    @ValueSource(strings = {"INTERP", "CPU"})
    void tripCountReadWhenThePlanRuns(String device) {
        DeviceAssumptions.assumeAvailable(device, "loop tests");
        var d = DeviceRegistry.get(device);
        Tensor m = Tensor.of(new long[] {3}, 1).to(d).contiguous().realize();
        Tensor step = Tensor.of(new float[] {0.5f}, 1).to(d);
        LoopResult r = Tensor.loop((i, s, c) -> new LoopStep.Next(null, List.of(s.get(0).add(c.getFirst()), s.get(1).add(i)), List.of()),
                m, null, List.of(Tensor.zeros(DType.F32, 1).to(d), Tensor.zeros(DType.I64).to(d)), List.of(step), 0);
        try (ExecutionPlan plan = Tensor.prepare(r.iterations(), r.states().get(0), r.states().get(1))) {
            for (long count : new long[] {3, 0, 10, -2}) {
                m.buffer().setLong(0, count);
                plan.execute();
                long ran = Math.max(0, count);
                assertThat(plan.outputBuffer(0).getLong(0)).isEqualTo(ran);
                assertThat(plan.outputBuffer(1).getDouble(0)).isEqualTo(0.5 * ran);
                assertThat(plan.outputBuffer(2).getLong(0)).isEqualTo(ran * (ran - 1) / 2);
            }
        }
    }

    /** With a trip count and a condition, whichever ends first ends the loop; an initial condition of false runs nothing. */
    @Test
    void tripCountAndConditionTogether() {
        Tensor x0 = Tensor.of(new long[] {1}, 1);
        LoopStep doubling = (i, s, c) -> new LoopStep.Next(s.getFirst().lt(50L).reshape(), List.of(s.getFirst().mul(2L)), List.of(s.getFirst()));
        LoopResult byCount = Tensor.loop(doubling, Tensor.scalar(3, DType.I64), Tensor.of(new boolean[] {true}, 1), List.of(x0), List.of(), 8).realize();
        assertThat(byCount.iterations().toLongArray()).containsExactly(3);
        assertThat(byCount.states().getFirst().toLongArray()).containsExactly(8);
        LoopResult byCondition = Tensor.loop(doubling, Tensor.scalar(100, DType.I64), null, List.of(x0), List.of(), 8).realize();
        // the iteration that sees 64 computes the failing condition: it runs, the next does not
        assertThat(byCondition.iterations().toLongArray()).containsExactly(7);
        assertThat(byCondition.outputs().getFirst().slice(0, 0, 7, 1).toLongArray()).containsExactly(1, 2, 4, 8, 16, 32, 64);
        LoopResult none = Tensor.loop(doubling, Tensor.scalar(100, DType.I64), Tensor.of(new boolean[] {false}, 1), List.of(x0), List.of(), 0).realize();
        assertThat(none.iterations().toLongArray()).containsExactly(0);
        assertThat(none.states().getFirst().toLongArray()).containsExactly(1);
        assertThat(none.outputs().getFirst().dims()).containsExactly(0, 1);
    }

    /** Iterations past the capacity run (the state goes on) but are not recorded; the count says how many ran. */
    @Test
    void iterationsPastTheCapacityAreCountedNotRecorded() {
        LoopResult r = Tensor.loop((i, s, c) -> new LoopStep.Next(null, List.of(s.getFirst().add(1L)), List.of(i)),
                Tensor.scalar(5, DType.I64), null, List.of(Tensor.zeros(DType.I64)), List.of(), 2).realize();
        assertThat(r.iterations().toLongArray()).containsExactly(5);
        assertThat(r.states().getFirst().toLongArray()).containsExactly(5);
        assertThat(r.outputs().getFirst().toLongArray()).containsExactly(0, 1);
    }

    /** A loop whose condition never fails stops at its limit with a LoopLimitException naming the loop and the setting. */
    @ParameterizedTest
    @ValueSource(strings = {"INTERP", "CPU"})
    void endlessLoopsStopAtTheLimit(String device) {
        DeviceAssumptions.assumeAvailable(device, "loop tests");
        var d = DeviceRegistry.get(device);
        LoopStep forever = (i, s, c) -> new LoopStep.Next(s.getFirst().ge(0L), List.of(s.getFirst().add(1L)), List.of());
        assertThatThrownBy(() -> Tensor.withOpName("endless", () -> LoopLimit.with(50, () -> Tensor.loop(forever, null, null,
                List.of(Tensor.zeros(DType.I64).to(d)), List.of(), 0))).realize()).isInstanceOf(LoopLimitException.class).hasMessageContaining("endless: still running after 50 iterations")
                .hasMessageContaining(LoopLimit.PROPERTY);
        String before = System.getProperty(LoopLimit.PROPERTY);
        try {
            System.setProperty(LoopLimit.PROPERTY, "7");
            assertThat(LoopLimit.maxIterations()).isEqualTo(7);
            assertThatThrownBy(() -> Tensor.loop(forever, null, null, List.of(Tensor.zeros(DType.I64).to(d)), List.of(), 0).realize())
                    .isInstanceOf(LoopLimitException.class).hasMessageContaining("after 7 iterations");
            // an enclosing with wins over the setting
            assertThat(LoopLimit.with(3, LoopLimit::maxIterations)).isEqualTo(3);
            System.setProperty(LoopLimit.PROPERTY, "many");
            assertThatThrownBy(LoopLimit::maxIterations).isInstanceOf(IllegalArgumentException.class).hasMessageContaining("'many'");
        } finally {
            if (before == null) System.clearProperty(LoopLimit.PROPERTY);
            else System.setProperty(LoopLimit.PROPERTY, before);
        }
        // a trip count within the limit never reaches it
        LoopResult r = LoopLimit.with(50, () -> Tensor.loop(forever, Tensor.scalar(50, DType.I64).to(d), null, List.of(Tensor.zeros(DType.I64).to(d)),
                List.of(), 0)).realize();
        assertThat(r.iterations().toLongArray()).containsExactly(50);
    }

    @Test
    void badLoopsAreRefused() {
        Tensor x = Tensor.zeros(DType.F32, 2);
        assertThatThrownBy(() -> Tensor.loop((i, s, c) -> new LoopStep.Next(null, List.of(s.getFirst().reshape(1, 2)), List.of()), null, null, List.of(x),
                List.of(), 0)).isInstanceOf(IllegalArgumentException.class).hasMessageContaining("next state 0 is").hasMessageContaining("keeps its shape");
        assertThatThrownBy(() -> Tensor.loop((i, s, c) -> new LoopStep.Next(null, s, List.of()), Tensor.of(new float[] {1}, 1), null, List.of(x), List.of(), 0))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("the trip count must be one integer");
        assertThatThrownBy(() -> Tensor.loop((i, s, c) -> new LoopStep.Next(s.getFirst(), s, List.of()), null, null, List.of(x), List.of(), 0))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("condition must be one value");
        assertThatThrownBy(() -> Tensor.loop((i, s, c) -> new LoopStep.Next(null, s, List.of()), null, null, List.of(x), List.of(), -1))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("capacity must be >= 0");
    }

    /** The condition may be a carried state itself (passed through), or a constant; states may swap. */
    @ParameterizedTest
    @ValueSource(strings = {"INTERP", "CPU"})
    void conditionsFromStatesAndConstants(String device) {
        DeviceAssumptions.assumeAvailable(device, "loop tests");
        var d = DeviceRegistry.get(device);
        // go is a state: the step sets it to (n < 4); a and b swap each iteration
        Tensor go = Tensor.of(new boolean[] {true}).reshape().to(d), n = Tensor.zeros(DType.I64).to(d);
        Tensor a = Tensor.of(new float[] {1}, 1).to(d), b = Tensor.of(new float[] {2}, 1).to(d);
        LoopResult r = Tensor.loop((i, s, c) -> {
            Tensor next = s.get(1).add(1L);
            return new LoopStep.Next(s.get(0), List.of(next.lt(4L), next, s.get(3), s.get(2)), List.of());
        }, null, go, List.of(go, n, a, b), List.of(), 0).realize();
        // iteration t runs while the state's go (set by iteration t-1) holds: n = 1, 2, 3, 4 then go is false
        assertThat(r.iterations().toLongArray()).containsExactly(5);
        assertThat(r.states().get(1).toLongArray()).containsExactly(5);
        assertThat(r.states().get(2).toFloatArray()).containsExactly(2);
        assertThat(r.states().get(3).toFloatArray()).containsExactly(1);
        // a constant false condition: one iteration
        LoopResult once = Tensor.loop((i, s, c) -> new LoopStep.Next(Tensor.of(new boolean[] {false}).reshape().to(d), List.of(s.getFirst().add(1L)), List.of()),
                null, null, List.of(Tensor.zeros(DType.I64).to(d)), List.of(), 0).realize();
        assertThat(once.iterations().toLongArray()).containsExactly(1);
        assertThat(once.states().getFirst().toLongArray()).containsExactly(1);
    }

    /**
     * A step sized by a length its state carries: the state holds up to 8 values and their count, each iteration sums
     * the values so far (a reduction over the symbolic count, bound from the state before it runs) and appends the sum.
     */
    @ParameterizedTest
    @ValueSource(strings = {"INTERP", "CPU", "CLANG"})
    void aStepSizedByALengthItsStateCarries(String device) {
        DeviceAssumptions.assumeAvailable(device, "loop tests");
        var d = DeviceRegistry.get(device);
        Variable length = new Variable("length", 0, 8);
        LoopStep appendSum = (i, s, c) -> {
            Tensor values = s.get(0), n = s.get(1);
            Tensor sum = values.withSymbolicDim(0, length).sum();
            Tensor at = Tensor.arange(8).to(d).cast(DType.I64).eq(n);
            return new LoopStep.Next(null, List.of(Tensor.where(at, sum.reshape(1).expand(8), values), n.add(1L)), List.of(sum));
        };
        Tensor m = Tensor.of(new long[] {6}, 1).to(d).contiguous().realize();
        Tensor start = Tensor.of(new float[] {1, 2, 0, 0, 0, 0, 0, 0}, 8).to(d);
        LoopResult r = Tensor.loop(appendSum, m, null, List.of(start, Tensor.scalar(2, DType.I64).to(d)), List.of(), 8, new LoopStep.Size(length, 1));
        try (ExecutionPlan plan = Tensor.prepare(r.iterations(), r.states().get(0), r.outputs().getFirst())) {
            plan.execute();
            assertThat(plan.outputBuffer(0).getLong(0)).isEqualTo(6);
            assertThat(floats(plan.outputBuffer(1), 8)).containsExactly(1, 2, 3, 6, 12, 24, 48, 96);
            assertThat(floats(plan.outputBuffer(2), 6)).containsExactly(3, 6, 12, 24, 48, 96);
            // one plan for every count: three iterations, then seven (the last reads all eight values and has no room to
            // append), then one more than the state holds values for
            m.buffer().setLong(0, 3);
            plan.execute();
            assertThat(floats(plan.outputBuffer(1), 8)).containsExactly(1, 2, 3, 6, 12, 0, 0, 0);
            m.buffer().setLong(0, 7);
            plan.execute();
            assertThat(floats(plan.outputBuffer(2), 7)).containsExactly(3, 6, 12, 24, 48, 96, 192);
            m.buffer().setLong(0, 8);
            assertThatThrownBy(plan::execute).isInstanceOfSatisfying(ExtentOutOfRangeException.class, e -> {
                assertThat(e.variable()).isEqualTo(length);
                assertThat(e.extent()).isEqualTo(9);
            }).hasMessageContaining("state 1 sizes the next iteration by 9 for 'length', outside [0, 8]");
        }
    }

    /** A loop binds only its sizes' variables, from i64 scalar states. */
    @Test
    void sizesAreRefusedWhereTheyCannotBind() {
        var d = DeviceRegistry.get("INTERP");
        Variable length = new Variable("length", 0, 4), other = new Variable("other", 0, 4);
        Tensor values = Tensor.zeros(DType.F32, 4).to(d), n = Tensor.zeros(DType.I64).to(d);
        LoopStep summing = (i, s, c) -> new LoopStep.Next(null, s, List.of(s.getFirst().withSymbolicDim(0, length).sum()));
        assertThatThrownBy(() -> Tensor.loop(summing, null, null, List.of(values, n), List.of(), 0, new LoopStep.Size(other, 1)))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("variable 'length', which none of the loop's sizes binds");
        assertThatThrownBy(() -> Tensor.loop(summing, null, null, List.of(values, n), List.of(), 0, new LoopStep.Size(length, 0)))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("a size is an i64 scalar state");
        assertThatThrownBy(() -> Tensor.loop(summing, null, null, List.of(values, n), List.of(), 0, new LoopStep.Size(length, 2)))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("reads state 2, the loop carries 2");
        assertThatThrownBy(() -> Tensor.loop(summing, null, null, List.of(values, n), List.of(), 0,
                new LoopStep.Size(length, 1), new LoopStep.Size(length, 1)))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("bound by two sizes");
    }

    private static float[] floats(dev.kiln.runtime.Buffer b, int n) {
        float[] out = new float[n];
        for (int i = 0; i < n; i++) out[i] = (float) b.getDouble(i);
        return out;
    }
}

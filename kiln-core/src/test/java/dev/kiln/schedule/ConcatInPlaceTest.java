package dev.kiln.schedule;

import dev.kiln.Tensor;
import dev.kiln.runtime.ExecutionPlan;
import dev.kiln.runtime.PreparedBufferView;
import org.junit.jupiter.api.Test;

import java.util.List;
import java.util.Random;
import java.util.function.Function;
import java.util.stream.IntStream;

import static dev.kiln.schedule.MemoryPlannerTest.assertValidPacking;
import static dev.kiln.schedule.MemoryPlannerTest.data;
import static dev.kiln.schedule.MemoryPlannerTest.device;
import static dev.kiln.schedule.MemoryPlannerTest.hazardRespectingOrder;
import static dev.kiln.schedule.MemoryPlannerTest.run;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

/**
 * A concatenation whose pieces only it reads, each one contiguous range of the result, is computed in place:
 * the pieces' kernels write into the result's bytes and the copy disappears from the schedule (a
 * {@link ScheduleItem.Join}), with the same values as the INTERP device, in any order the plan's hazards allow.
 */
class ConcatInPlaceTest {
    /** A fire module (SqueezeNet): two convolutions of one input side by side, then a convolution of both. */
    private static Tensor fire(Tensor x, Function<Tensor, Tensor> join) {
        Tensor a = x.conv2d(data(2, 3, 4, 1, 1), null).relu();
        Tensor b = x.conv2d(data(3, 5, 4, 3, 3), null, null, new int[] {1, 1}, null, 1).relu();
        return join.apply(Tensor.cat(1, a, b)).conv2d(data(4, 2, 8, 1, 1), null);
    }

    @Test
    void aBatchOneConcatenationOfChannelsIsWrittenInPlace() {
        Tensor y = fire(data(1, 1, 4, 8, 8), c -> c);
        Schedule s = Scheduler.schedule(List.of(y.uop()));
        List<ScheduleItem.Join> joins = joins(s);
        assertThat(joins).singleElement().satisfies(j -> {
            assertThat(j.inputs()).hasSize(2);
            assertThat(j.offsets()).containsExactly(0L, 3L * 64 * 4); // the second piece after the first's 3 channels of 8x8 f32
        });
        MemoryPlan plan = MemoryPlanner.plan(s, device(y));
        assertValidPacking(s, plan);
        double[] expected = y.to("INTERP").toDoubleArray();
        Random rnd = new Random(7);
        for (int[] order : List.of(IntStream.range(0, s.items().size()).toArray(), hazardRespectingOrder(plan, rnd), hazardRespectingOrder(plan, rnd))) {
            assertThat(run(s, plan, order, List.of(y.uop())).getFirst()).usingComparatorWithPrecision(0.0).containsExactly(expected);
        }
        try (ExecutionPlan p = y.prepare()) { // on the default device: its kernels write into the join's bytes
            assertThat(p.preparedOps()).anyMatch(op -> op instanceof PreparedBufferView v && v.name().startsWith("join_"));
            p.execute();
            float[] got = p.outputBuffer().segment().toArray(java.lang.foreign.ValueLayout.JAVA_FLOAT);
            for (int i = 0; i < expected.length; i++) assertThat((double) got[i]).as("element %d", i).isCloseTo(expected[i], within(1e-4 + 1e-4 * Math.abs(expected[i])));
        }
    }

    @Test
    void theLastAxisJoinsInPlaceWhenTheAxesBeforeItHaveSizeOne() {
        Tensor a = data(5, 1, 1, 16).exp().sum(new int[] {2}, true).expand(1, 1, 16).contiguous(), b = data(6, 1, 1, 5).sin().contiguous();
        Tensor y = Tensor.cat(2, a, b).contiguous().softmax(-1).mul(2);
        Schedule s = Scheduler.schedule(List.of(y.uop()));
        assertThat(joins(s)).singleElement().satisfies(j -> assertThat(j.offsets()).containsExactly(0L, 64L));
        // a piece that would start off the alignment every buffer has (8 floats in) is copied instead
        Tensor c = data(5, 1, 1, 8).exp().contiguous();
        assertThat(joins(Scheduler.schedule(List.of(Tensor.cat(2, c, b).contiguous().softmax(-1).uop())))).isEmpty();
        MemoryPlan plan = MemoryPlanner.plan(s, device(y));
        assertValidPacking(s, plan);
        assertThat(run(s, plan, IntStream.range(0, s.items().size()).toArray(), List.of(y.uop())).getFirst())
                .usingComparatorWithPrecision(0.0).containsExactly(y.to("INTERP").toDoubleArray());
    }

    @Test
    void aConcatenationIsACopyWhereAPieceCannotBeWrittenInPlace() {
        // batch 2: each piece is two ranges of the result
        assertThat(joins(Scheduler.schedule(List.of(fire(data(1, 2, 4, 8, 8), c -> c).uop())))).isEmpty();
        // a piece read by another kernel too
        Tensor x = data(1, 1, 4, 8, 8);
        Tensor a = x.conv2d(data(2, 3, 4, 1, 1), null).relu(), b = x.conv2d(data(3, 5, 4, 1, 1), null).relu();
        Tensor shared = Tensor.cat(1, a, b).conv2d(data(4, 2, 8, 1, 1), null).add(a.sum());
        assertThat(joins(Scheduler.schedule(List.of(shared.uop())))).isEmpty();
        // the concatenation is a graph output (its buffer is the caller's)
        assertThat(joins(Scheduler.schedule(List.of(Tensor.cat(1, a, b).uop())))).isEmpty();
        // a piece is a realised input, not a kernel's output
        Tensor input = Tensor.cat(1, data(8, 1, 3, 8, 8), b).conv2d(data(4, 2, 8, 1, 1), null);
        assertThat(joins(Scheduler.schedule(List.of(input.uop())))).isEmpty();
    }

    @Test
    void firesInARowEachJoinInPlaceAndReuseTheArena() {
        Tensor y = data(1, 1, 4, 8, 8);
        for (int i = 0; i < 3; i++) y = fire(y, c -> c).relu().conv2d(data(20 + i, 4, 2, 1, 1), null);
        Schedule s = Scheduler.schedule(List.of(y.uop()));
        assertThat(joins(s)).hasSize(3);
        MemoryPlan plan = MemoryPlanner.plan(s, device(y));
        assertValidPacking(s, plan);
        double[] expected = y.to("INTERP").toDoubleArray();
        Random rnd = new Random(3);
        for (int[] order : List.of(IntStream.range(0, s.items().size()).toArray(), hazardRespectingOrder(plan, rnd), hazardRespectingOrder(plan, rnd))) {
            assertThat(run(s, plan, order, List.of(y.uop())).getFirst()).usingComparatorWithPrecision(0.0).containsExactly(expected);
        }
    }

    private static List<ScheduleItem.Join> joins(Schedule s) {
        return s.items().stream().filter(i -> i instanceof ScheduleItem.Join).map(ScheduleItem.Join.class::cast).toList();
    }
}

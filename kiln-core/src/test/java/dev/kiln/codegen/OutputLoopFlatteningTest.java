package dev.kiln.codegen;

import dev.kiln.Tensor;
import dev.kiln.schedule.ScheduleItem;
import dev.kiln.schedule.Scheduler;
import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;

/** Flattened output loops compute what the nest computed, and every former loop is gone into one. */
class OutputLoopFlatteningTest {
    /** The last kernel of {@code t}'s schedule, lowered (also for {@link OutputLoopMergingTest}). */
    static KernelProgram lowered(Tensor t) {
        ScheduleItem.Kernel k = (ScheduleItem.Kernel) Scheduler.schedule(List.of(t.uop())).items().getLast();
        return KernelLowering.lower(k.output(), k.inputs(), "k");
    }

    /** {@code p} run by the evaluator on the inputs' buffers: the f32 output. */
    static float[] evaluate(KernelProgram p, Tensor... inputs) {
        MemorySegment out = Arena.ofAuto().allocate(4 * p.sizes().getFirst(), 64);
        List<MemorySegment> segs = new ArrayList<>(List.of(out));
        for (Tensor in : inputs) segs.add(in.buffer().segment());
        KernelEvaluator.run(p, segs, Map.of());
        return out.toArray(ValueLayout.JAVA_FLOAT);
    }

    @Test
    void aPermutedReductionKeepsItsValuesAsOneLoop() {
        Tensor x = Tensor.randn(3, 2, 3, 4, 5).realize();
        Tensor y = x.permute(2, 0, 3, 1).exp().sum(3).add(1);
        KernelProgram nest = lowered(y);
        KernelProgram flat = OutputLoopFlattening.flatten(nest);
        assertThat(flat.outputLoop()).isNotNull();
        assertThat(flat.outerExtent()).isEqualTo(4 * 2 * 5);
        assertThat(flat.outputLoop().body().body()).noneMatch(s -> s instanceof Stmt.Loop l && l.kind() != Stmt.LoopKind.REDUCE);
        assertThat(evaluate(flat, x)).containsExactly(evaluate(nest, x));
        assertThat(OutputLoopFlattening.flatten(flat)).as("idempotent").isEqualTo(flat);
    }

    @Test
    void aKernelWithoutANestIsUnchanged() {
        Tensor x = Tensor.of(new float[] {1, 2, 3}, 3).realize();
        KernelProgram one = lowered(x.mul(2));
        assertThat(OutputLoopFlattening.flatten(one)).isSameAs(one);
        KernelProgram scalar = lowered(x.sum());
        assertThat(OutputLoopFlattening.flatten(scalar)).isSameAs(scalar);
    }
}

package dev.kiln.codegen;

import dev.kiln.ir.Op;
import dev.kiln.ir.UOp;
import dev.kiln.runtime.Buffer;
import dev.kiln.schedule.Schedule;
import dev.kiln.schedule.ScheduleItem;
import dev.kiln.schedule.Scheduler;
import dev.kiln.testing.TestGraphs;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Supplier;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Schedules graphs, lowers every kernel to loops, runs the loops with the {@link KernelEvaluator} and
 * compares with the INTERP device: the lowering (index math, padding masks, fused reductions) must not
 * change a single value.
 */
class LoweringTest {
    static Stream<Arguments> graphs() { return TestGraphs.graphs(); }

    @ParameterizedTest(name = "{0}")
    @MethodSource("graphs")
    void loweredKernelsMatchTheInterpreter(String name, Supplier<UOp> graph) {
        UOp root = graph.get();
        assertThat(root.op()).isNotEqualTo(Op.BUFFER);
        Buffer expected = TestGraphs.interpret(root);
        Buffer out = runScheduled(root);
        TestGraphs.assertSameBits(name, root.dtype(), root.shape().numel(), expected.segment(), out.segment());
    }

    /** Runs a schedule item by item: kernels through the evaluator, views alias, copies copy. */
    static Buffer runScheduled(UOp root) {
        Schedule s = Scheduler.schedule(List.of(root));
        Map<UOp, Buffer> buffers = new IdentityHashMap<>();
        int n = 0;
        for (ScheduleItem item : s.items()) {
            for (UOp in : item.inputs()) {
                if (in.op() == Op.BUFFER) buffers.put(in, (Buffer) in.arg());
            }
            UOp o = item.output();
            switch (item) {
                case ScheduleItem.Kernel k -> {
                    Buffer b = Buffer.allocateHeap("TEST", o.dtype(), o.shape().numel());
                    buffers.put(o, b);
                    KernelProgram p = Lowerer.lower(k.output(), k.inputs(), "k" + n++);
                    List<MemorySegment> segs = new ArrayList<>();
                    segs.add(b.segment());
                    for (UOp in : k.inputs()) segs.add(buffers.get(in).segment());
                    KernelEvaluator.run(p, segs, Map.of());
                }
                case ScheduleItem.View view -> buffers.put(o, buffers.get(view.inputs().getFirst()));
                case ScheduleItem.Join join -> buffers.put(o, dev.kiln.testing.TestGraphs.join(join, buffers));
                default -> throw new AssertionError("not used by these graphs: " + item);
            }
        }
        return buffers.get(root);
    }
}

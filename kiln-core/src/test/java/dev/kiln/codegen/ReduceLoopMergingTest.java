package dev.kiln.codegen;

import dev.kiln.Tensor;
import dev.kiln.schedule.ScheduleItem;
import dev.kiln.schedule.Scheduler;
import dev.kiln.testing.TestGraphs;
import dev.kiln.types.DType;
import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A kernel's reduce loops merge where every expression reads them as one run, and the merged kernel computes the
 * same values, bit for bit (the iterations keep their order); a window's loops, or axes that are not one run, stay.
 */
class ReduceLoopMergingTest {
    @Test
    void aGlobalAveragePoolSumsItsPlaneInOneLoop() {
        Tensor x = TestGraphs.data(1, 2, 6, 13, 13);
        KernelProgram merged = sameValuesAsUnmerged(x.mean(new int[] {2, 3}, true));
        assertThat(reduceLoops(merged)).containsExactly("r0_r1 (extent 169)");
        // three axes of one run become one loop
        assertThat(reduceLoops(sameValuesAsUnmerged(TestGraphs.data(2, 4, 3, 5, 7).sum(new int[] {1, 2, 3}, false)))).containsExactly("r0_r1_r2 (extent 105)");
    }

    @Test
    void loopsThatAreNotOneRunStayApart() {
        // axes 0 and 2 of [3, 4, 5]: 20 r0 + r1 is not one run
        assertThat(reduceLoops(sameValuesAsUnmerged(TestGraphs.data(3, 3, 4, 5).sum(new int[] {0, 2}, false)))).containsExactly("r0 (extent 3)", "r1 (extent 5)");
        // a convolution's window: (y + ky) W + x + kx
        Tensor image = TestGraphs.data(4, 1, 2, 6, 6), w = TestGraphs.data(5, 3, 2, 3, 3);
        assertThat(reduceLoops(sameValuesAsUnmerged(image.conv2d(w, null, null, new int[] {1, 1}, null, 1)))).hasSize(3);
    }

    /** The graph's one kernel, lowered and merged, after checking it computes what the unmerged kernel does, bit for bit. */
    private static KernelProgram sameValuesAsUnmerged(Tensor t) {
        List<ScheduleItem.Kernel> kernels = new ArrayList<>();
        for (ScheduleItem item : Scheduler.schedule(List.of(t.uop())).items()) if (item instanceof ScheduleItem.Kernel k) kernels.add(k);
        assertThat(kernels).hasSize(1);
        ScheduleItem.Kernel k = kernels.getFirst();
        KernelProgram merged = KernelLowering.lower(k.output(), k.inputs(), "k"), plain = Lowerer.lower(k.output(), k.inputs(), "k");
        try (Arena arena = Arena.ofConfined()) {
            List<MemorySegment> a = ContractionMatcherTest.buffers(plain, arena), b = new ArrayList<>();
            for (MemorySegment s : a) b.add(arena.allocate(s.byteSize()).copyFrom(s));
            KernelEvaluator.run(plain, a, Map.of());
            KernelEvaluator.run(merged, b, Map.of());
            TestGraphs.assertSameBits("merged reduce loops", DType.F32, plain.sizes().getFirst(), a.getFirst(), b.getFirst());
        }
        return merged;
    }

    private static List<String> reduceLoops(KernelProgram p) {
        return Optimizer.axes(p).stream().filter(l -> l.kind() == Stmt.LoopKind.REDUCE).map(l -> l.index().name() + " (extent " + l.extent() + ")").toList();
    }
}

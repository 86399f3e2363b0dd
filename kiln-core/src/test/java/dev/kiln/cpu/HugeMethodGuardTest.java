package dev.kiln.cpu;

import dev.kiln.Tensor;
import dev.kiln.codegen.CpuInfo;
import dev.kiln.codegen.Heuristics;
import dev.kiln.codegen.KernelEvaluator;
import dev.kiln.codegen.KernelProgram;
import dev.kiln.codegen.Lowerer;
import dev.kiln.schedule.Schedule;
import dev.kiln.schedule.ScheduleItem;
import dev.kiln.schedule.Scheduler;
import dev.kiln.testing.TestGraphs;
import dev.kiln.types.DType;
import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A kernel whose largest method comes out above the limit is rendered again with smaller loop expansions until it
 * fits, and computes the same values. The limit here is set below the kernel's size on purpose (HotSpot's own, 8000
 * bytes, is not reached by any small test graph).
 */
class HugeMethodGuardTest {
    private static final CpuInfo CPU = new CpuInfo(2, 64, true);

    private static KernelProgram expandedKernel() {
        // a row reduction the heuristic unrolls and upcasts: its code grows with the expansions
        Tensor x = TestGraphs.data(3, 64, 96);
        Schedule s = Scheduler.schedule(List.of(x.exp().sum(1).mul(x.max(1)).uop()));
        List<KernelProgram> kernels = new ArrayList<>();
        for (ScheduleItem item : s.items()) if (item instanceof ScheduleItem.Kernel k) kernels.add(Lowerer.lower(k.output(), k.inputs(), "k" + kernels.size()));
        KernelProgram p = kernels.getLast();
        return Heuristics.optimize(p, CPU);
    }

    private static int size(String source) {
        return JavaKernelCompiler.largestMethodBytes(JavaKernelCompiler.compile(List.of(new JavaKernelCompiler.Source("K", source))).classes().getFirst().classBytes());
    }

    @Test
    void aKernelAboveTheLimitIsRenderedAgainSmallerAndComputesTheSame() {
        KernelProgram p = expandedKernel();
        String full = JavaRenderer.render(p, "K", CPU.vectorBytes());
        int fullSize = size(full);
        String fitted = HugeMethodGuard.render(p, "K", CPU.vectorBytes(), fullSize - 1, 0, true);
        assertThat(fitted).as("re-rendered").isNotEqualTo(full);
        assertThat(size(fitted)).as("largest method, was " + fullSize).isLessThan(fullSize);
        // not enforced (the JVM compiles huge methods), or too short to measure: the first rendering stays
        assertThat(HugeMethodGuard.render(p, "K", CPU.vectorBytes(), fullSize - 1, 0, false)).isEqualTo(full);
        assertThat(HugeMethodGuard.render(p, "K", CPU.vectorBytes(), fullSize - 1, full.length() + 1, true)).isEqualTo(full);

        try (Arena arena = Arena.ofConfined()) {
            List<MemorySegment> expected = new ArrayList<>(), actual = new ArrayList<>();
            java.util.Random r = new java.util.Random(1);
            for (long n : p.sizes()) {
                MemorySegment e = arena.allocate(4 * Math.max(1, n), 64), a = arena.allocate(4 * Math.max(1, n), 64);
                for (long i = 0; i < n; i++) {
                    float v = (float) r.nextGaussian();
                    e.setAtIndex(ValueLayout.JAVA_FLOAT, i, v);
                    a.setAtIndex(ValueLayout.JAVA_FLOAT, i, v);
                }
                expected.add(e);
                actual.add(a);
            }
            KernelEvaluator.run(p, expected, Map.of());
            var kernel = JavaKernelCompiler.compile(List.of(new JavaKernelCompiler.Source("K", fitted))).classes().getFirst().run();
            try {
                kernel.invokeExact(actual.toArray(MemorySegment[]::new), new long[0], 0L, p.outerExtent());
            } catch (Throwable t) {
                throw new AssertionError(t);
            }
            TestGraphs.assertSameBits("re-rendered kernel", DType.F32, p.sizes().getFirst(), expected.getFirst(), actual.getFirst());
        }
    }

    @Test
    void theLimitIsHotSpotsAndTheTestModelsKernelsAreBelowIt() {
        assertThat(HugeMethodGuard.LIMIT).isEqualTo(8000);
        assertThat(size(JavaRenderer.render(expandedKernel(), "K", CPU.vectorBytes()))).isLessThan(HugeMethodGuard.LIMIT);
    }
}

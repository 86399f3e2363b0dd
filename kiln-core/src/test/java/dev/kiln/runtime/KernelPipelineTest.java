package dev.kiln.runtime;

import dev.kiln.compile.KernelCache;
import dev.kiln.Tensor;
import dev.kiln.cpu.CpuDevice;
import dev.kiln.ir.UOp;
import dev.kiln.models.SmallModels;
import org.junit.jupiter.api.Test;

import java.util.Arrays;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

/** Compiling ahead of time through the pipeline: plans built later find every kernel compiled. */
class KernelPipelineTest {
    @Test
    void aPlanBuiltAfterCompileAheadLowersAndCompilesNothing() {
        // a width no other test uses, so that the structures are new to this process
        Tensor y = SmallModels.transformerBlock(Tensor.randn(1, 1, 8, 44).realize(), 2, 7);
        KernelCache.Stats programsBefore = CpuDevice.programCacheStats();
        DeviceRegistry.get("CPU").compileAhead(List.of(List.of(y.uop())));
        KernelCache.Stats programs = CpuDevice.programCacheStats(), binaries = CpuDevice.cacheStats();
        assertThat(programs.compiles() + programs.diskHits()).isGreaterThan(programsBefore.compiles() + programsBefore.diskHits());

        try (ExecutionPlan plan = y.prepare()) {
            assertThat(plan.kernels()).isNotEmpty();
        }
        assertThat(CpuDevice.programCacheStats().compiles()).isEqualTo(programs.compiles());
        assertThat(CpuDevice.programCacheStats().diskHits()).isEqualTo(programs.diskHits());
        assertThat(CpuDevice.cacheStats().compiles()).isEqualTo(binaries.compiles());
        assertThat(CpuDevice.cacheStats().diskHits()).isEqualTo(binaries.diskHits());
    }

    @Test
    void aGraphThatCannotBeScheduledIsSkipped() {
        Tensor y = Tensor.randn(3, 37).realize().exp();
        DeviceRegistry.get("CPU").compileAhead(List.of(Arrays.asList((UOp) null), List.of(y.uop())));
        long compiles = CpuDevice.programCacheStats().compiles();
        y.realize();
        assertThat(CpuDevice.programCacheStats().compiles()).isEqualTo(compiles);
    }
}

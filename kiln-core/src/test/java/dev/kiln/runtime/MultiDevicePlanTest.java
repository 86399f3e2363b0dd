package dev.kiln.runtime;

import dev.kiln.Tensor;
import dev.kiln.models.SmallModels;
import org.junit.jupiter.api.Test;

import java.lang.foreign.ValueLayout;

import static org.assertj.core.api.Assertions.assertThat;

/** Plans whose steps span devices: copies become transfers, devices wait on each other's timelines. */
class MultiDevicePlanTest {
    private static float[] floats(Buffer b) {
        float[] out = new float[(int) b.count()];
        for (int i = 0; i < out.length; i++) out[i] = b.segment().getAtIndex(ValueLayout.JAVA_FLOAT_UNALIGNED, i);
        return out;
    }

    @Test
    void aModelSplitAcrossDevicesEqualsOneDevice() {
        splitAcross("INTERP:1");
    }

    /** The split: CPU:0, CPU:1 and the native C device (skipped, with the reason, without a C compiler). */
    @Test
    void aModelSplitAcrossCpuAndClangEqualsOneDevice() {
        var clang = DeviceRegistry.providers().get("CLANG");
        org.junit.jupiter.api.Assumptions.assumeTrue(clang != null && clang.unavailableReason().isEmpty(),
                () -> "CLANG unavailable: " + (clang == null ? "not registered" : clang.unavailableReason().orElse("")));
        splitAcross("CLANG");
    }

    private static void splitAcross(String third) {
        Tensor x = Tensor.randn(7, 1, 8, 32).realize();
        // layers alternate between two CPU devices and a third device
        Tensor split = SmallModels.transformerBlock(x, 4, 10).to("CPU:1");
        split = SmallModels.transformerBlock(split, 4, 20).to(third);
        split = SmallModels.transformerBlock(split, 4, 30).to("CPU");
        Tensor single = SmallModels.transformerBlock(SmallModels.transformerBlock(SmallModels.transformerBlock(x, 4, 10), 4, 20), 4, 30);
        try (ExecutionPlan multi = split.prepare(); ExecutionPlan one = single.prepare()) {
            assertThat(java.util.stream.IntStream.range(0, multi.preparedOps().size()).mapToObj(i -> multi.deviceOf(i).spec().toString()).distinct())
                    .contains("CPU", "CPU:1", third);
            assertThat(multi.preparedOps()).anySatisfy(op -> assertThat(op).isInstanceOf(PreparedCopy.class));
            for (int run = 0; run < 3; run++) {
                multi.execute();
                one.execute();
                float[] a = floats(multi.outputBuffer()), b = floats(one.outputBuffer());
                for (int i = 0; i < a.length; i++) assertThat(a[i]).as("element " + i).isCloseTo(b[i], org.assertj.core.data.Offset.offset(1e-4f));
            }
        }
    }
}

package dev.kiln.cpu;

import dev.kiln.types.DType;
import dev.kiln.Tensor;
import dev.kiln.codegen.Opt;
import dev.kiln.runtime.DeviceRegistry;
import dev.kiln.runtime.ExecutionPlan;
import dev.kiln.runtime.PreparedKernel;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** The CPU device end to end: threaded kernels, sources, the device registry. */
class CpuDeviceTest {
    @Test
    void threadedKernelsGiveTheInterpretersValues() {
        Tensor x = Tensor.rand(3, 256, 512).to("CPU").realize();
        Tensor y = x.mul(3).add(x.sqrt()).sin(); // elementwise: threaded, bit-exact
        try (ExecutionPlan plan = y.prepare()) {
            PreparedKernel k = plan.kernels().getFirst();
            assertThat(k.program().opts()).anySatisfy(o -> assertThat(o).isInstanceOf(Opt.Thread.class));
            plan.execute();
            float[] got = new float[256 * 512];
            for (int i = 0; i < got.length; i++) got[i] = plan.outputBuffer().segment().getAtIndex(java.lang.foreign.ValueLayout.JAVA_FLOAT_UNALIGNED, i);
            assertThat(got).containsExactly(y.to("INTERP").toFloatArray());
        }
    }

    @Test
    void threadedReductionsMatchWithinReorderingTolerance() {
        Tensor a = Tensor.rand(4, 64, 256).to("CPU").realize(), b = Tensor.rand(5, 256, 48).to("CPU").realize();
        Tensor c = a.matmul(b);
        float[] got = c.toFloatArray(), want = c.to("INTERP").toFloatArray();
        for (int i = 0; i < got.length; i++) assertThat(got[i]).as("element " + i).isCloseTo(want[i], org.assertj.core.data.Percentage.withPercentage(1e-3));
    }

    @Test
    void kernelsShowTheirJavaSource() {
        try (ExecutionPlan plan = Tensor.rand(1, 4, 4).to("CPU").exp().sum(1).prepare()) {
            assertThat(plan.kernels()).allSatisfy(k -> assertThat(k.source()).contains("final class K").contains("public static void run("));
        }
    }

    @Test
    void registryKnowsBothDevicesCaseInsensitively() {
        assertThat(DeviceRegistry.get("cpu")).isSameAs(DeviceRegistry.get("CPU:0"));
        assertThat(DeviceRegistry.get("CPU:1")).isNotSameAs(DeviceRegistry.get("CPU"));
        assertThat(Tensor.defaultDevice().spec().kind()).isEqualTo(System.getProperty("kiln.device", "CPU").toUpperCase().split(":")[0]);
        assertThatThrownBy(() -> DeviceRegistry.get("TPU")).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("TPU").hasMessageContaining("CPU").hasMessageContaining("INTERP");
    }

    @Test
    void intTensorsRoundTripThroughTheDevice() {
        Tensor t = Tensor.arange(10).to("CPU").mul(3).cast(DType.I64);
        assertThat(t.toLongArray()).containsExactly(0, 3, 6, 9, 12, 15, 18, 21, 24, 27);
    }
}

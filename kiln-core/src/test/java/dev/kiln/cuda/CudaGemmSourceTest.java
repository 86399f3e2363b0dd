package dev.kiln.cuda;

import dev.kiln.Tensor;
import dev.kiln.codegen.KernelLowering;
import dev.kiln.codegen.KernelProgram;
import dev.kiln.schedule.ScheduleItem;
import dev.kiln.schedule.Scheduler;
import org.junit.jupiter.api.Test;

import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

/** Which kernels the CUDA device runs as generated GEMMs, and what their source says (no GPU needed). */
public class CudaGemmSourceTest {
    /** For probes outside the package. */
    public static String render(KernelProgram p, String name) { return CudaCompiler.renderKernel(p, name); }

    public static KernelProgram lowered(Tensor t) {
        ScheduleItem.Kernel k = (ScheduleItem.Kernel) Scheduler.schedule(List.of(t.uop())).items().getLast();
        return KernelLowering.lower(k.output(), k.inputs(), "k");
    }

    @Test
    void aMatmulWithBiasIsAGemmAndAnEpilogue() {
        Tensor a = Tensor.randn(1, 96, 80).realize(), b = Tensor.randn(2, 80, 72).realize(), bias = Tensor.randn(3, 72).realize();
        KernelProgram p = lowered(a.matmul(b).add(bias).relu());
        assertThat(CudaGemm.match(p)).isPresent();
        String source = CudaCompiler.renderKernel(p, "k");
        assertThat(source).contains("__global__ void __launch_bounds__(256) k_gemm(").contains("M = 96, N = 72, K = 80")
                .contains("__global__ void k(");
        assertThat(CudaCompiler.optimize(p)).isSameAs(p);
    }

    @Test
    void aPaddedConvolutionReadsUnderGates() {
        Tensor x = Tensor.randn(1, 1, 16, 20, 20).realize(), w = Tensor.randn(2, 32, 16, 3, 3).realize();
        KernelProgram p = lowered(x.conv2d(w, null, new int[] {1, 1}, new int[] {1, 1}, null, 1));
        assertThat(CudaGemm.match(p)).isPresent();
        assertThat(CudaCompiler.renderKernel(p, "c")).contains(" <= ").contains("K = 144");
    }

    @Test
    void anElementwiseKernelIsNot() {
        KernelProgram p = lowered(Tensor.randn(4, 64, 64).realize().exp());
        assertThat(CudaGemm.match(p)).isEmpty();
        assertThat(CudaCompiler.renderKernel(p, "e")).doesNotContain("_gemm");
    }
}

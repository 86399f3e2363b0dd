package dev.kiln.bench;

import dev.kiln.Tensor;
import dev.kiln.runtime.Buffer;
import dev.kiln.runtime.Device;
import dev.kiln.runtime.DeviceRegistry;
import dev.kiln.runtime.ExecutionPlan;
import dev.kiln.types.DType;

import java.util.Arrays;

/**
 * Kiln's CUDA device on the GPU of this machine, for BENCHMARKS.md beside PyTorch in the same run
 * ({@code kiln-bench/gpu/torch_peer.py}): f32 matmul, an elementwise chain over 1 GiB against a device-to-device
 * copy of the same bytes, and a small-kernel chain that shows launch and graph-replay overhead. Each figure is the
 * median of timed {@link ExecutionPlan#execute()} calls (which wait for the GPU) after warm-up runs.
 *
 * <p>Run: {@code java -cp ... dev.kiln.bench.CudaBench [sizes...]} on a machine with a GPU and nvcc.
 */
public final class CudaBench {
    private CudaBench() {}

    public static void main(String[] args) {
        Device gpu = DeviceRegistry.get("CUDA");
        System.out.println("device: " + gpu);
        int[] sizes = args.length == 0 ? new int[] {1024, 4096} : Arrays.stream(args).mapToInt(Integer::parseInt).toArray();
        for (int n : sizes) {
            Tensor a = Tensor.randn(1, n, n).to(gpu).realize(), b = Tensor.randn(2, n, n).to(gpu).realize();
            double ms = medianMillis(a.matmul(b), n >= 4096 ? 5 : 20);
            System.out.printf("matmul f32 %d^3: %.3f ms, %.1f GFLOP/s%n", n, ms, 2.0 * n * n * n / ms / 1e6);
        }
        long elements = (1L << 30) / 4; // 1 GiB of f32
        Tensor x = Tensor.randn(3, (int) elements).to(gpu).realize();
        double chain = medianMillis(x.mul(1.5).add(0.25).relu().sub(x.mul(0.5)), 10);
        double copy = medianMillis(x.contiguous().add(0), 10);
        double gb = 2.0 * elements * 4 / 1e9;
        System.out.printf("elementwise chain 1 GiB: %.3f ms, %.0f GB/s (read + write)%n", chain, gb / chain * 1e3);
        System.out.printf("copy-like kernel 1 GiB (x + 0): %.3f ms, %.0f GB/s%n", copy, gb / copy * 1e3);
        Buffer d = x.buffer();
        Buffer e = gpu.allocate(DType.F32, elements);
        var mem = gpu.deviceMemory().orElseThrow();
        double[] t = new double[10];
        for (int i = 0; i < t.length + 2; i++) {
            long s = System.nanoTime();
            mem.copyWithin(d.segment(), e.segment(), elements * 4);
            mem.synchronize();
            if (i >= 2) t[i - 2] = (System.nanoTime() - s) / 1e6;
        }
        Arrays.sort(t);
        System.out.printf("cuMemcpyDtoD 1 GiB: %.3f ms, %.0f GB/s%n", t[t.length / 2], gb / t[t.length / 2] * 1e3);
        Tensor small = Tensor.randn(4, 64, 64).to(gpu).realize();
        Tensor y = small;
        for (int i = 0; i < 50; i++) y = y.mul(0.99).add(small).contiguous();
        double graph = medianMillis(y, 50);
        System.setProperty("kiln.cuda.graphs", "false");
        double direct = medianMillis(y, 50);
        System.clearProperty("kiln.cuda.graphs");
        System.out.printf("50 small kernels: graph replay %.1f us, direct launches %.1f us%n", graph * 1e3, direct * 1e3);
    }

    /** Median milliseconds of {@code runs} executions of {@code t}'s plan after 3 warm-up runs. */
    static double medianMillis(Tensor t, int runs) {
        try (ExecutionPlan p = t.prepare()) {
            for (int i = 0; i < 3; i++) p.execute();
            double[] ms = new double[runs];
            for (int i = 0; i < runs; i++) {
                long s = System.nanoTime();
                p.execute();
                ms[i] = (System.nanoTime() - s) / 1e6;
            }
            Arrays.sort(ms);
            return ms[runs / 2];
        }
    }
}

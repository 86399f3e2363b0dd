package dev.kiln.cuda;

import dev.kiln.Tensor;
import dev.kiln.codegen.KernelProgram;
import dev.kiln.codegen.Stmt;
import dev.kiln.ir.Op;
import dev.kiln.ir.Slot;
import dev.kiln.ir.UOp;
import dev.kiln.runtime.Buffer;
import dev.kiln.runtime.CompiledKernel;
import dev.kiln.runtime.DeviceRegistry;
import dev.kiln.runtime.ExecutionPlan;
import dev.kiln.runtime.Transfers;
import dev.kiln.testing.DeviceAssumptions;
import dev.kiln.types.DType;
import dev.kiln.types.Variable;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.List;
import java.util.Map;
import java.util.Random;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.within;

/**
 * The CUDA device on a GPU (skipped, with the reason, where there is none): memory and copies, launches,
 * plans with variables, graph replay against direct launches, errors, and memory that returns to its baseline.
 * Values are compared with the CPU device and the interpreter on random data.
 */
class CudaDeviceTest {
    private CudaDevice gpu;

    @BeforeEach
    void gpu() {
        DeviceAssumptions.assumeAvailable("CUDA", "CUDA device tests");
        gpu = (CudaDevice) DeviceRegistry.get("CUDA");
    }

    private static float[] random(int n, long seed) {
        Random r = new Random(seed);
        float[] f = new float[n];
        for (int i = 0; i < n; i++) f[i] = (float) r.nextGaussian();
        return f;
    }

    @Test
    void describesItself() {
        System.out.println("CUDA device: " + gpu + ", " + (gpu.totalMemory() >> 20) + " MiB, driver " + gpu.driver().driverVersion());
        assertThat(gpu.multiprocessors()).isPositive();
        assertThat(gpu.name()).isNotBlank();
        assertThat(gpu.deviceMemory()).isPresent();
    }

    @Test
    void copiesRoundTripAtEverySizeAcrossTheStagingBuffer() {
        for (long n : new long[] {1, 7, 1000, (16L << 20) / 4 + 3, 5L << 20}) {
            Buffer d = gpu.allocate(DType.F32, n);
            assertThat(d.isHostMemory()).isFalse();
            MemorySegment host = Arena.ofAuto().allocate(4 * n, 64);
            for (long i = 0; i < n; i++) host.setAtIndex(ValueLayout.JAVA_FLOAT, i, i * 0.5f - 3);
            Transfers.copyFromHost(host, gpu, d.segment(), 4 * n);
            Buffer d2 = gpu.allocate(DType.F32, n);
            gpu.copyWithin(d.segment(), d2.segment(), 4 * n);
            Buffer back = d2.toHost();
            for (long i = 0; i < n; i += Math.max(1, n / 997)) assertThat(back.getDouble(i)).as("n %d element %d", n, i).isEqualTo(i * 0.5f - 3);
            assertThat(back.getDouble(n - 1)).isEqualTo((n - 1) * 0.5f - 3);
        }
    }

    @Test
    void deviceMemoryIsNotReadFromTheHost() {
        Buffer d = gpu.allocate(DType.F32, 4);
        assertThatThrownBy(() -> d.getDouble(0)).isInstanceOf(IllegalStateException.class).hasMessageContaining("toHost");
        assertThatThrownBy(() -> d.segment().get(ValueLayout.JAVA_FLOAT, 0)).isInstanceOf(IndexOutOfBoundsException.class);
        assertThat(d.toHost().getDouble(3)).isZero(); // allocations are zero-filled
    }

    @Test
    void elementwiseReductionAndMatmulEqualTheCpu() {
        Tensor a = Tensor.of(random(37 * 53, 1), 37, 53), b = Tensor.of(random(53 * 29, 2), 53, 29);
        Tensor onCpu = a.matmul(b).relu().add(a.sum(1).reshape(37, 1)).exp().log();
        Tensor onGpu = a.to("CUDA").matmul(b.to("CUDA")).relu().add(a.to("CUDA").sum(1).reshape(37, 1)).exp().log();
        double[] want = onCpu.toDoubleArray(), got = onGpu.toDoubleArray();
        for (int i = 0; i < want.length; i++) assertThat(got[i]).as("element %d", i).isCloseTo(want[i], within(1e-4 + 1e-4 * Math.abs(want[i])));
    }

    private static void assertClose(Tensor gpuResult, Tensor cpuResult, String what) {
        double[] want = cpuResult.toDoubleArray(), got = gpuResult.toDoubleArray();
        assertThat(got).as(what + " size").hasSameSizeAs(want);
        double scale = 0;
        for (double w : want) scale = Math.max(scale, Math.abs(w));
        for (int i = 0; i < want.length; i++) assertThat(got[i]).as("%s element %d", what, i).isCloseTo(want[i], within(1e-4 * (1 + scale)));
    }

    @Test
    void matmulsOfEveryShapeRunAsGemmsAndEqualTheCpu() {
        int[][] shapes = {{70, 130, 33}, {128, 128, 128}, {257, 64, 300}, {8, 16, 1024}, {3, 5, 7}};
        for (int[] s : shapes) {
            Tensor a = Tensor.randn(10 + s[0], s[0], s[2]).realize(), b = Tensor.randn(20 + s[1], s[2], s[1]).realize();
            Tensor bias = Tensor.randn(30, s[1]).realize();
            assertClose(a.to("CUDA").matmul(b.to("CUDA")).add(bias.to("CUDA")).relu(), a.matmul(b).add(bias).relu(), java.util.Arrays.toString(s));
            assertClose(b.to("CUDA").transpose(0, 1).matmul(a.to("CUDA").transpose(0, 1)), b.transpose(0, 1).matmul(a.transpose(0, 1)),
                    "transposed " + java.util.Arrays.toString(s));
        }
        Tensor q = Tensor.randn(41, 3, 4, 40, 32).realize(), k = Tensor.randn(42, 3, 4, 50, 32).realize();
        assertClose(q.to("CUDA").matmul(k.to("CUDA").transpose(2, 3)), q.matmul(k.transpose(2, 3)), "batched attention scores");
        Tensor x = Tensor.randn(5, 256, 256).to("CUDA").realize();
        try (ExecutionPlan p = x.matmul(x).prepare()) {
            assertThat(p.kernels()).anySatisfy(kk -> assertThat(kk.source()).contains("_gemm("));
        }
    }

    @Test
    void convolutionsRunAsImplicitGemmsAndEqualTheCpu() {
        Tensor x = Tensor.randn(51, 2, 16, 23, 19).realize();
        for (int[] c : new int[][] {{32, 3, 1, 1, 1}, {32, 3, 2, 1, 1}, {24, 1, 1, 0, 1}, {32, 3, 1, 1, 4}, {16, 5, 2, 2, 2}}) {
            int out = c[0], kernel = c[1], stride = c[2], pad = c[3], groups = c[4];
            Tensor w = Tensor.randn(52 + out, out, 16 / groups, kernel, kernel).realize(), bias = Tensor.randn(53, out).realize();
            int[] st = {stride, stride}, pd = {pad, pad};
            assertClose(x.to("CUDA").conv2d(w.to("CUDA"), bias.to("CUDA"), st, pd, null, groups).relu(),
                    x.conv2d(w, bias, st, pd, null, groups).relu(), "conv " + java.util.Arrays.toString(c));
        }
    }

    @Test
    void anInPlaceUpdateThroughAGemmReadsItsInputsBeforeOverwritingThem() {
        Tensor w = Tensor.randn(61, 64, 64).realize();
        Tensor onCpu = Tensor.randn(62, 64, 64).realize(), onGpu = onCpu.to("CUDA").realize();
        onCpu.assign(onCpu.add(onCpu.matmul(w))).realize();
        onGpu.assign(onGpu.add(onGpu.matmul(w.to("CUDA")))).realize();
        assertClose(onGpu, onCpu, "x += x.W");
    }

    @Test
    void aPlanWithAVariableRecordsAGraphAgainWhenTheValueChanges() {
        Variable n = new Variable("n", 1, 64);
        Tensor x = Tensor.of(random(64 * 16, 3), 64, 16);
        Tensor mask = Tensor.arange(64).lt(Tensor.variable(n)).cast(DType.F32).reshape(64, 1);
        Tensor cpu = x.mul(mask).sum(0);
        Tensor gpuOut = x.to("CUDA").realize().mul(mask.to("CUDA")).sum(0); // every step on the GPU: recorded as a graph
        try (ExecutionPlan p = gpuOut.prepare(); ExecutionPlan q = cpu.prepare()) {
            for (long value : new long[] {5, 5, 64, 1, 1, 33}) {
                p.executeWithVars(Map.of("n", value));
                q.executeWithVars(Map.of("n", value));
                Buffer got = p.outputBuffer().toHost(), want = q.outputBuffer();
                for (int i = 0; i < 16; i++) assertThat(got.getDouble(i)).as("n=%d column %d", value, i).isCloseTo(want.getDouble(i), within(1e-4));
            }
        }
    }

    @Test
    void graphReplayEqualsDirectLaunches() {
        Tensor x = Tensor.of(random(8 * 128, 4), 8, 128).to("CUDA").realize();
        Tensor y = x.softmax(-1).mul(x.tanh()).sum(-1);
        double[] replayed, direct;
        try (ExecutionPlan p = y.prepare()) {
            for (int i = 0; i < 3; i++) p.execute();
            replayed = read(p);
        }
        System.setProperty(CudaDevice.GRAPHS_PROPERTY, "false");
        try (ExecutionPlan p = y.prepare()) {
            p.execute();
            direct = read(p);
        } finally {
            System.clearProperty(CudaDevice.GRAPHS_PROPERTY);
        }
        assertThat(replayed).containsExactly(direct);
    }

    private static double[] read(ExecutionPlan p) {
        Buffer b = p.outputBuffer().toHost();
        double[] out = new double[(int) b.count()];
        for (int i = 0; i < out.length; i++) out[i] = b.getDouble(i);
        return out;
    }

    @Test
    void anOutOfRangeStoreIsSkippedAndReported() {
        Slot out = new Slot(Slot.Kind.PARAM, 0, DType.F32), in = new Slot(Slot.Kind.PARAM, 1, DType.F32);
        Variable i = new Variable("i0", 0, 3);
        Stmt.Store store = new Stmt.Store(out, UOp.variable(i).add(1), UOp.constant(DType.F32, 1));
        KernelProgram p = new KernelProgram("bad_store", List.of(out, in), List.of(4L, 4L), List.of(),
                new Stmt.Block(List.of(new Stmt.Loop(i, Stmt.LoopKind.GLOBAL, new Stmt.Block(List.of(store))))));
        CompiledKernel k = gpu.compile(List.of(p)).getFirst();
        Buffer o = gpu.allocate(DType.F32, 8), x = gpu.allocate(DType.F32, 4);
        k.runner().run(new MemorySegment[] {o.segment(), x.segment()}, new long[0], 0, 4);
        assertThatThrownBy(gpu::synchronize).isInstanceOf(IndexOutOfBoundsException.class)
                .hasMessageContaining("parameter 0 at 4").hasMessageContaining("bad_store");
        assertThat(o.toHost().getDouble(4)).isZero();
        gpu.synchronize(); // reported once: the device is usable again
        assertThatThrownBy(() -> k.runner().run(new MemorySegment[] {Arena.ofAuto().allocate(32), x.segment()}, new long[0], 0, 4))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("not device memory");
    }

    @Test
    void hostCodeRunsOnCopiesOfTheGpusData() {
        Tensor x = Tensor.of(new float[] {1, 2, 3}, 3).to("CUDA").realize();
        Tensor c = Tensor.custom("double", DType.F32, new int[] {3}, (ins, o) -> {
            for (int i = 0; i < 3; i++) o.setAtIndex(ValueLayout.JAVA_FLOAT, i, 2 * ins.getFirst().getAtIndex(ValueLayout.JAVA_FLOAT, i));
        }, x).add(1);
        assertThat(c.toDoubleArray()).containsExactly(3, 5, 7);
    }

    @Test
    void plansReturnDeviceMemoryToItsBaseline() {
        System.gc();
        Tensor x = Tensor.of(random(256 * 256, 5), 256, 256).to("CUDA").realize();
        long before = gpu.allocatedBytes();
        for (int i = 0; i < 3; i++) {
            try (ExecutionPlan p = x.matmul(x).softmax(-1).prepare()) {
                p.execute();
                assertThat(gpu.allocatedBytes()).isGreaterThan(before);
                p.releaseIntermediateBuffers();
                p.execute();
            }
            assertThat(gpu.allocatedBytes()).as("after plan %d", i).isEqualTo(before);
        }
    }

    @Test
    void aModelSplitAcrossCudaAndCpuEqualsTheCpu() {
        Tensor x = Tensor.randn(7, 1, 8, 32).realize();
        Tensor split = dev.kiln.models.SmallModels.transformerBlock(x, 4, 10).to("CUDA");
        split = dev.kiln.models.SmallModels.transformerBlock(split, 4, 20).to("CPU");
        split = dev.kiln.models.SmallModels.transformerBlock(split, 4, 30);
        Tensor single = dev.kiln.models.SmallModels.transformerBlock(dev.kiln.models.SmallModels.transformerBlock(
                dev.kiln.models.SmallModels.transformerBlock(x, 4, 10), 4, 20), 4, 30);
        try (ExecutionPlan multi = split.prepare(); ExecutionPlan one = single.prepare()) {
            for (int run = 0; run < 3; run++) {
                multi.execute();
                one.execute();
                Buffer a = multi.outputBuffer(), b = one.outputBuffer();
                for (int i = 0; i < a.count(); i++) assertThat(a.getDouble(i)).as("run %d element %d", run, i).isCloseTo(b.getDouble(i), within(1e-4));
            }
        }
    }

    @Test
    void theInterpreterAgreesOnIntegerAndHalfOps() {
        Tensor i = Tensor.arange(0, 1000, 3).to("CUDA");
        Tensor r = i.mul(i).mod(Tensor.full(97, DType.I32).to("CUDA"));
        assertThat(r.toLongArray()).containsExactly(Tensor.arange(0, 1000, 3).to("INTERP").mul(Tensor.arange(0, 1000, 3).to("INTERP"))
                .mod(Tensor.full(97, DType.I32).to("INTERP")).toLongArray());
        Tensor h = Tensor.of(random(300, 6), 300).cast(DType.F16);
        assertThat(h.to("CUDA").sqrt().toDoubleArray()).containsExactly(h.to("INTERP").sqrt().toDoubleArray());
    }
}

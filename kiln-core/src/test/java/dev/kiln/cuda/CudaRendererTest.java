package dev.kiln.cuda;

import dev.kiln.Tensor;
import dev.kiln.types.DType;
import dev.kiln.runtime.DeviceSpec;
import dev.kiln.types.Variable;
import dev.kiln.clang.CRenderer;
import dev.kiln.codegen.KernelLowering;
import dev.kiln.codegen.KernelProgram;
import dev.kiln.codegen.Stmt;
import dev.kiln.ir.Op;
import dev.kiln.ir.Slot;
import dev.kiln.ir.UOp;
import dev.kiln.runtime.DeviceRegistry;
import dev.kiln.schedule.ScheduleItem;
import dev.kiln.schedule.Scheduler;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.stream.IntStream;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class CudaRendererTest {
    private static final Slot OUT = new Slot(Slot.Kind.PARAM, 0, DType.F16);
    private static final Slot IN = new Slot(Slot.Kind.PARAM, 1, DType.F32);

    /** {@code out[i] = f16(sqrt(in[i]) // in[i + 1 - 1]) }, over a loop that stops at {@code n} when given. */
    private static KernelProgram program(Variable limit) {
        Variable i = new Variable("i0", 0, 15);
        UOp x = UOp.of(Op.LOAD, DType.F32, null, IN.uop(), UOp.variable(i));
        UOp y = UOp.of(Op.FLOORDIV, DType.F32, null, UOp.of(Op.SQRT, DType.F32, null, x), x);
        Stmt.Store store = new Stmt.Store(OUT, UOp.variable(i), UOp.of(Op.CAST, DType.F16, null, y));
        Stmt.Block body = new Stmt.Block(List.of(new Stmt.Loop(i, Stmt.LoopKind.GLOBAL, new Stmt.Block(List.of(store)), limit)));
        return new KernelProgram("sqrt_floordiv", List.of(OUT, IN), List.of(16L, 16L), limit == null ? List.of() : List.of(limit), body);
    }

    @Test
    void theKernelIsTheCFunctionsBodyInAGridStrideLoop() {
        KernelProgram p = program(null);
        String cuda = CudaRenderer.render(p, "k");
        String c = CRenderer.render(p, "k");
        assertThat(cuda).contains("extern \"C\" __global__ void k(")
                .contains("uint16_t* p0 /* f16[16], output */").contains("const float* p1 /* f32[16] */")
                .contains("int64_t* kiln_status").contains("int64_t start").contains("int64_t end")
                .contains("for (int64_t i0 = start + (int64_t) blockIdx.x * blockDim.x + threadIdx.x; i0 < kiln_stop; i0 += (int64_t) gridDim.x * blockDim.x)");
        // the statements are the C renderer's, character for character
        String cStore = c.lines().filter(l -> l.contains("p0[")).findFirst().orElseThrow().strip();
        assertThat(cStore).contains("kiln_f32_to_f16(");
        assertThat(cuda).contains(cStore);
        assertThat(CudaRenderer.render(p, "k")).as("deterministic (a cache key)").isEqualTo(cuda);
        assertThat(CudaRenderer.prelude()).contains("#define KILN_FN static __device__ __forceinline__").contains(CRendererHelpers.SAMPLE);
    }

    @Test
    void aSymbolicAxisStopsAtItsSizeAndAKernelWithoutOutputLoopRunsInOneThread() {
        Variable n = new Variable("n", 1, 16);
        String cuda = CudaRenderer.render(program(n), "k");
        assertThat(cuda).contains("const int64_t n /* n in [1, 16] */").contains("const int64_t kiln_stop = (end < n ? end : n);");

        Slot acc = new Slot(Slot.Kind.REGISTER, 0, DType.F32);
        Variable r = new Variable("r0", 0, 7);
        UOp x = UOp.of(Op.LOAD, DType.F32, null, IN.uop(), UOp.variable(r));
        Slot out = new Slot(Slot.Kind.PARAM, 0, DType.F32);
        Stmt.Block body = new Stmt.Block(List.of(new Stmt.Define(acc, UOp.constant(DType.F32, 0)),
                new Stmt.Loop(r, Stmt.LoopKind.UNROLL, new Stmt.Block(List.of(new Stmt.Accumulate(acc, dev.kiln.ir.ReduceArg.Kind.SUM, x)))),
                new Stmt.Store(out, UOp.constant(DType.I64, 0), acc.uop())));
        String sum = CudaRenderer.render(new KernelProgram("sum", List.of(out, IN), List.of(1L, 8L), List.of(), body), "s");
        assertThat(sum).contains("if (start < end && blockIdx.x == 0 && threadIdx.x == 0) {").contains("#pragma unroll 8")
                .doesNotContain("GCC unroll");
    }

    @Test
    void badFunctionNamesAreRejected() {
        assertThatThrownBy(() -> CudaRenderer.render(program(null), "threadIdx")).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("'threadIdx' is not a C identifier");
    }

    @Test
    void nvccCompilesKernelsToPtxWithAnIdentityThatNamesArchAndVersion() {
        Nvcc.Discovery found = Nvcc.discover(System.getenv("PATH"));
        if (found.nvcc().isEmpty()) System.out.println("CUDA compile test skipped: " + found.reason());
        Assumptions.assumeTrue(found.nvcc().isPresent(), found.reason());
        Nvcc nvcc = found.nvcc().get();
        assertThat(nvcc.identity().fact("arch")).contains(nvcc.arch());
        assertThat(nvcc.identity().fact("version")).hasValueSatisfying(v -> assertThat(v).isNotBlank());
        assertThat(nvcc.identity().fact("flags")).hasValueSatisfying(v -> assertThat(v).contains("-fmad=false"));
        List<PtxKernel> ks = new CudaCompiler(nvcc).compile(List.of(program(null), program(new Variable("n", 1, 16))));
        assertThat(ks).hasSize(2);
        assertThat(ks.get(0).symbol()).isNotEqualTo(ks.get(1).symbol());
        for (PtxKernel k : ks) assertThat(k.module().ptx()).contains(".entry " + k.symbol() + "(").contains(".target " + nvcc.arch());
        assertThatThrownBy(() -> nvcc.compilePtx("__global__ void broken( {")).isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("nvcc failed").hasMessageContaining("kernels.cu");
        assertThatThrownBy(() -> new Nvcc(nvcc.executable(), nvcc.version(), "90")).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("'90'");
    }

    @Test
    void scheduledKernelsGoThroughThePipelineToWhatTheirProgramsCompileTo() {
        Nvcc.Discovery found = Nvcc.discover(System.getenv("PATH"));
        Assumptions.assumeTrue(found.nvcc().isPresent(), found.reason());
        CudaCompiler compiler = new CudaCompiler(found.nvcc().get());
        Tensor x = Tensor.rand(3, 5, 29).realize();
        List<ScheduleItem.Kernel> kernels = new ArrayList<>();
        for (ScheduleItem item : Scheduler.schedule(List.of(x.exp().sum(1).uop(), x.sqrt().uop())).items()) {
            if (item instanceof ScheduleItem.Kernel k) kernels.add(k);
        }
        List<String> names = IntStream.range(0, kernels.size()).mapToObj(i -> "k" + i).toList();
        List<PtxKernel> viaPipeline = compiler.compileKernels(kernels, names);
        List<PtxKernel> viaPrograms = compiler.compile(IntStream.range(0, kernels.size())
                .mapToObj(i -> CudaCompiler.optimize(KernelLowering.lower(kernels.get(i).output(), kernels.get(i).inputs(), names.get(i)))).toList());
        assertThat(viaPipeline).hasSize(kernels.size());
        for (int i = 0; i < kernels.size(); i++) {
            assertThat(viaPipeline.get(i).program()).isEqualTo(viaPrograms.get(i).program());
            assertThat(viaPipeline.get(i).symbol()).isEqualTo(viaPrograms.get(i).symbol());
            assertThat(viaPipeline.get(i).source()).isEqualTo(viaPrograms.get(i).source());
            assertThat(viaPipeline.get(i).module().ptx()).contains(".entry " + viaPipeline.get(i).symbol() + "(");
        }
    }

    /**
     * A gather's index check renders as in C: {@code kiln_check_index} reports (2, site, index) in the status block, the
     * first failing thread by an atomic compare-and-swap, and the kernel goes on (its reads are gated).
     */
    @Test
    void anIndexCheckReportsInTheStatusBlock() {
        Tensor table = Tensor.rand(3, 10, 32).realize();
        Tensor y = table.indexSelect(0, Tensor.of(new long[] {1, -2, 7}, 3));
        ScheduleItem.Kernel k = Scheduler.schedule(List.of(y.uop())).items().stream().filter(i -> i instanceof ScheduleItem.Kernel)
                .map(i -> (ScheduleItem.Kernel) i).findFirst().orElseThrow();
        KernelProgram p = CudaCompiler.optimize(KernelLowering.lower(k.output(), k.inputs(), "gather"));
        String cuda = CudaRenderer.render(p, "k");
        assertThat(cuda).contains("int64_t* kiln_status").contains("kiln_check_index(").contains(", 10, true, kiln_status, 0)");
        assertThat(CudaRenderer.prelude()).contains("KILN_FN int64_t kiln_check_index(int64_t i, int64_t n, bool wraps, int64_t* status, int64_t check)")
                .contains("atomicCAS((unsigned long long*) status, 0ull, 2ull)");
        assertThat(KernelLowering.indexChecks(k.output(), k.inputs())).singleElement()
                .satisfies(c -> assertThat(c.indexCheckArg().op()).isEqualTo("indexSelect"));
    }

    @Test
    void theCudaDeviceSaysWhyItIsUnavailable() {
        var provider = DeviceRegistry.providers().get("CUDA");
        assertThat(provider).as("registered through ServiceLoader").isNotNull();
        Optional<String> reason = provider.unavailableReason();
        System.out.println("CUDA device: " + reason.orElse("available"));
        assertThat(reason).hasValueSatisfying(r -> assertThat(r).containsAnyOf("libcuda.so.1", "NVIDIA GPU", "driver"));
        assertThatThrownBy(() -> provider.create(DeviceSpec.parse("cuda"))).isInstanceOf(UnsupportedOperationException.class)
                .hasMessageContaining("CUDA").hasMessageContaining(reason.get());
    }

    /** A line of the shared helpers, to check the CUDA prelude holds them unchanged. */
    private static final class CRendererHelpers {
        static final String SAMPLE = "KILN_FN float kiln_round_f16(float f) { return kiln_f16_to_f32(kiln_f32_to_f16(f)); }";
    }
}

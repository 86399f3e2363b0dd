package dev.kiln.clang;

import dev.kiln.compile.KeyedEntries;
import dev.kiln.types.DType;
import dev.kiln.runtime.DeviceSpec;
import dev.kiln.Tensor;
import dev.kiln.types.Variable;
import dev.kiln.codegen.KernelProgram;
import dev.kiln.codegen.Opt;

import dev.kiln.models.SmallModels;
import dev.kiln.compile.ContentStore;
import dev.kiln.runtime.DeviceRegistry;
import dev.kiln.runtime.ExecutionPlan;
import dev.kiln.runtime.PreparedKernel;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.File;
import java.lang.foreign.ValueLayout;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** The CLANG device end to end: threaded kernels, plans, sources, mixed devices, and machines without a compiler. */
class ClangDeviceTest {
    private static float[] floats(ExecutionPlan plan) {
        return plan.outputBuffer().segment().asSlice(0, 4L * plan.outputBuffer().count()).toArray(ValueLayout.JAVA_FLOAT);
    }

    /**
     * f32 exp2 (softmax's exponentials) is Alu's {@code (float) Math.pow(2, x)} bit for bit over a sample of every float
     * magnitude from subnormal results to overflow, and at the edges: NaN, the infinities, zeros, the last normal and
     * subnormal results, and where 2^x overflows. The kernel runs its lanes through the C prelude's {@code kiln_exp2f}.
     */
    @Test
    void f32ExponentialsAreTheInterpretersBitForBit() {
        ClangAvailability.compiler();
        List<Float> xs = new ArrayList<>(List.of(Float.NaN, Float.POSITIVE_INFINITY, Float.NEGATIVE_INFINITY, 0f, -0f, 1f, -1f, 0.5f, -126f,
                -126.5f, -149f, -149.5f, -150f, -150.5f, -151f, 127f, 127.99999f, 128f, 128.5f, Float.MAX_VALUE, -Float.MAX_VALUE, Float.MIN_VALUE,
                1e-30f, -1e-30f, 24.5f, -0.75f));
        for (int bits = 0x3000_0000; bits < 0x4340_0000; bits += 4099) {
            xs.add(Float.intBitsToFloat(bits)); // |x| from 4.7e-10 to 192, both signs
            xs.add(-Float.intBitsToFloat(bits));
        }
        float[] x = new float[xs.size()];
        for (int i = 0; i < x.length; i++) x[i] = xs.get(i);
        Tensor y = Tensor.of(x, x.length).to("CLANG").exp2();
        try (ExecutionPlan plan = y.prepare()) {
            assertThat(plan.kernels()).anySatisfy(k -> assertThat(k.source()).contains("kiln_exp2f("));
            plan.execute();
            float[] got = floats(plan);
            List<String> differ = new ArrayList<>();
            for (int i = 0; i < x.length; i++) {
                float want = (float) Math.pow(2, x[i]);
                if (Float.floatToRawIntBits(got[i]) != Float.floatToRawIntBits(want) && !(Float.isNaN(want) && Float.isNaN(got[i]))) {
                    differ.add("2^" + x[i] + ": " + got[i] + ", expected " + want);
                }
            }
            assertThat(differ).as("of %d arguments", x.length).isEmpty();
        }
    }

    @Test
    void threadedKernelsGiveTheInterpretersValuesBitForBit() {
        ClangAvailability.compiler();
        Tensor x = Tensor.rand(3, 256, 512).to("CLANG").realize();
        Tensor y = x.mul(3).add(x.sqrt()).maximum(x.neg().add(0.5)).floorDiv(0.3); // elementwise: threaded, upcast, exact
        try (ExecutionPlan plan = y.prepare()) {
            PreparedKernel k = plan.kernels().getLast(); // the others make the constants
            assertThat(k.program().opts()).anySatisfy(o -> assertThat(o).isInstanceOf(Opt.Thread.class))
                    .anySatisfy(o -> assertThat(o).isInstanceOf(Opt.Upcast.class));
            plan.execute();
            assertThat(floats(plan)).containsExactly(y.to("INTERP").toFloatArray());
        }
    }

    @Test
    void matmulRunsAsTheCpuDevicesGemmAndGivesItsBits() {
        ClangAvailability.compiler();
        Tensor a = Tensor.rand(4, 64, 256).realize(), b = Tensor.rand(5, 256, 48).realize();
        Tensor onClang = a.to("CLANG").matmul(b.to("CLANG")), onCpu = a.to("CPU").matmul(b.to("CPU"));
        try (ExecutionPlan p = onClang.prepare()) {
            assertThat(p.kernels().getLast().source()).as("a contraction runs as the packed GEMM").contains("packed GEMM");
        }
        float[] got = onClang.toFloatArray(), want = onClang.to("INTERP").toFloatArray();
        for (int i = 0; i < got.length; i++) assertThat(got[i]).as("element " + i).isCloseTo(want[i], org.assertj.core.data.Percentage.withPercentage(1e-3));
        assertThat(got).as("one GEMM engine on both host devices").containsExactly(onCpu.toFloatArray());
    }

    @Test
    void aTransformerBlockMatchesTheCpuDeviceAndCompilesAsOneSharedObject() {
        CCompiler cc = ClangAvailability.compiler();
        Tensor x = Tensor.randn(5, 2, 16, 64).realize();
        Tensor y = SmallModels.transformerBlock(x.to("CLANG"), 4);
        try (ExecutionPlan plan = y.prepare()) {
            plan.execute();
            float[] got = floats(plan), want = SmallModels.transformerBlock(x.to("CPU"), 4).toFloatArray();
            for (int i = 0; i < got.length; i++) assertThat(got[i]).as("element " + i).isCloseTo(want[i], org.assertj.core.data.Offset.offset(1e-5f));

            // the cost of one plan's batch, without the cache: render, compile, load
            List<String> functions = new ArrayList<>();
            List<KernelProgram> programs = plan.kernels().stream().map(PreparedKernel::program).toList();
            for (int i = 0; i < programs.size(); i++) functions.add(CRenderer.render(programs.get(i), "kiln_timing_" + i));
            long t0 = System.nanoTime();
            byte[] so = cc.compileShared(CRenderer.translationUnit(functions));
            long ms = (System.nanoTime() - t0) / 1_000_000;
            System.out.println("CLANG: the " + programs.size() + " kernels of a transformer block plan compiled into one shared object ("
                    + so.length / 1024 + " KiB) in " + ms + " ms by " + cc.version());
            assertThat(so.length).isPositive();
        }
    }

    @Test
    void planVariablesReachTheKernels() {
        ClangAvailability.compiler();
        Variable n = new Variable("n", 1, 8);
        Tensor len = Tensor.variable(n);
        Tensor masked = Tensor.where(Tensor.arange(8).lt(len), Tensor.ones(8), Tensor.zeros(8)).sum().mul(len.cast(DType.F32)).to("CLANG");
        try (ExecutionPlan plan = masked.prepare()) {
            for (long v = n.min(); v <= n.max(); v++) {
                plan.executeWithVars(Map.of("n", v));
                assertThat(floats(plan)[0]).as("n = " + v).isEqualTo((float) (v * v));
            }
            assertThatThrownBy(() -> plan.executeWithVars(Map.of("n", 9L))).isInstanceOf(IllegalArgumentException.class).hasMessageContaining("'n'");
        }
    }

    @Test
    void kernelsShowTheirCSource() {
        ClangAvailability.compiler();
        Tensor onClang = Tensor.rand(1, 4, 4).to("CLANG").realize(); // kernels run where their inputs live
        try (ExecutionPlan plan = onClang.exp().sum(1).prepare()) {
            assertThat(plan.kernels()).allSatisfy(k -> assertThat(k.source()).contains("KILN_EXPORT void kiln_")
                    .contains("(void** bufs, const int64_t* vars, int64_t start, int64_t end)"));
        }
    }

    @Test
    void aMixedDeviceGraphReadsHeapBuffersThroughCopies() {
        ClangAvailability.compiler();
        Tensor onInterp = Tensor.of(DType.F32, new double[] {1, 2, 3, 4}, 4).to("INTERP").realize();
        Tensor onClang = Tensor.of(DType.F32, new double[] {10, 20, 30, 40}, 4).to("CLANG").realize();
        assertThat(onClang.add(onInterp.mul(2)).toFloatArray()).containsExactly(12, 24, 36, 48);
    }

    @Test
    void theRegistryKnowsTheDevice() {
        ClangAvailability.compiler();
        assertThat(DeviceRegistry.providers()).containsKey("CLANG");
        assertThat(DeviceRegistry.get("clang")).isSameAs(DeviceRegistry.get("CLANG:0")).isInstanceOf(ClangDevice.class);
        assertThat(Tensor.arange(10).to("CLANG").mul(3).cast(DType.I64).toLongArray()).containsExactly(0, 3, 6, 9, 12, 15, 18, 21, 24, 27);
    }

    // ---------------------------------------------------------------- machines without a usable compiler

    @Test
    void withoutACompilerOnThePathTheDeviceIsUnavailableWithTheReason() {
        for (String path : new String[] {"", "/nonexistent/kiln" + File.pathSeparator + "/also/missing"}) {
            ClangDeviceProvider p = new ClangDeviceProvider(path);
            assertThat(p.unavailableReason()).get().asString().contains("no C compiler found").contains("clang, gcc, cc");
            assertThat(p.compiler()).isEmpty();
            assertThatThrownBy(() -> p.create(DeviceSpec.parse("CLANG"))).isInstanceOf(UnsupportedOperationException.class)
                    .hasMessageContaining("CLANG is not available").hasMessageContaining("no C compiler found");
        }
    }

    @Test
    void aCompilerFoundOnceIsRememberedUntilItsFileChanges(@TempDir Path dir) throws Exception {
        Assumptions.assumeTrue(File.separatorChar == '/' && Files.isExecutable(Path.of("/bin/sh")), "needs a POSIX shell");
        CCompiler real = ClangAvailability.compiler();
        Path bin = Files.createDirectory(dir.resolve("bin")), log = dir.resolve("calls.log"), cc = bin.resolve("cc");
        // the real compiler behind a script that counts its runs
        String script = "#!/bin/sh\necho run >> '" + log + "'\nexec '" + real.executable() + "' \"$@\"\n";
        Files.writeString(cc, script, StandardCharsets.UTF_8);
        Files.setPosixFilePermissions(cc, Set.of(java.nio.file.attribute.PosixFilePermission.OWNER_READ,
                java.nio.file.attribute.PosixFilePermission.OWNER_WRITE, java.nio.file.attribute.PosixFilePermission.OWNER_EXECUTE));
        KeyedEntries known = new KeyedEntries(dir.resolve("cache"), 1);

        CCompiler first = CCompiler.discover(bin.toString(), known).compiler().orElseThrow();
        long runs = Files.readAllLines(log).size();
        assertThat(runs).as("version, target, two macro dumps and the probe kernel").isEqualTo(5);
        assertThat(first.version()).isEqualTo(real.version());
        assertThat(first.identity()).isEqualTo(new CCompiler(cc, real.version(), real.target(), real.flags(), real.features()).identity());
        // another process: the same compiler, not run once
        CCompiler again = CCompiler.discover(bin.toString(), new KeyedEntries(dir.resolve("cache"), 1)).compiler().orElseThrow();
        assertThat(again).isEqualTo(first);
        assertThat(Files.readAllLines(log)).hasSize((int) runs);
        // the compiler's file replaced (a new version): found out again
        Files.writeString(cc, script + "# updated\n", StandardCharsets.UTF_8);
        assertThat(CCompiler.discover(bin.toString(), known).compiler()).contains(first);
        assertThat(Files.readAllLines(log)).hasSize(2 * (int) runs);
        // an entry without one of its facts is not a compiler: found out again
        List<Path> entries;
        try (var files = Files.list(dir.resolve("cache"))) {
            entries = files.filter(f -> f.toString().endsWith(".properties")).toList();
        }
        assertThat(entries).hasSize(2); // the script before and after its update
        for (Path entry : entries) Files.writeString(entry, Files.readString(entry).replaceAll("(?m)^target=.*\n", ""));
        assertThat(CCompiler.discover(bin.toString(), known).compiler()).contains(first);
        assertThat(Files.readAllLines(log)).hasSize(3 * (int) runs);
    }

    @Test
    void aCompilerThatFailsIsNotRemembered(@TempDir Path dir) throws Exception {
        Assumptions.assumeTrue(File.separatorChar == '/' && Files.isExecutable(Path.of("/bin/sh")), "needs a POSIX shell");
        Path cc = dir.resolve("cc");
        Files.writeString(cc, "#!/bin/sh\necho \"fakecc: broken\" >&2\nexit 1\n", StandardCharsets.UTF_8);
        Files.setPosixFilePermissions(cc, Set.of(java.nio.file.attribute.PosixFilePermission.OWNER_READ,
                java.nio.file.attribute.PosixFilePermission.OWNER_EXECUTE));
        KeyedEntries known = new KeyedEntries(dir.resolve("cache"), 1);
        assertThat(CCompiler.discover(dir.toString(), known).reason()).contains("fakecc: broken");
        assertThat(dir.resolve("cache")).doesNotExist();
    }

    @Test
    void aCompilerThatCannotBuildKernelsMakesTheDeviceUnavailable(@TempDir Path dir) throws Exception {
        Assumptions.assumeTrue(File.separatorChar == '/' && Files.isExecutable(Path.of("/bin/sh")), "needs a POSIX shell");
        Path cc = dir.resolve("cc");
        // answers the questions, fails every compilation
        Files.writeString(cc, """
                #!/bin/sh
                case "$1" in
                  --version) echo "fakecc 1.0"; exit 0;;
                  -dumpmachine) echo "fake-machine"; exit 0;;
                  -dM) exit 0;;
                esac
                echo "fakecc: cannot compile" >&2
                exit 1
                """, StandardCharsets.UTF_8);
        Files.setPosixFilePermissions(cc, Set.of(java.nio.file.attribute.PosixFilePermission.OWNER_READ,
                java.nio.file.attribute.PosixFilePermission.OWNER_EXECUTE));
        ClangDeviceProvider p = new ClangDeviceProvider(dir.toString());
        assertThat(p.unavailableReason()).get().asString().contains(cc.toString()).contains("not usable").contains("fakecc: cannot compile");
    }

    @Test
    void aCacheEntryNamesItsSharedObjectAndABadNameIsRejected() {
        CCompiler cc = ClangAvailability.compiler();
        String f = "KILN_EXPORT void kiln_ref_test(void** bufs, const int64_t* vars, int64_t start, int64_t end) { }\n";
        byte[] so = cc.compileShared(CRenderer.translationUnit(List.of(f)));
        byte[] reference = SharedObjects.publish(so);
        assertThat(new String(reference, StandardCharsets.US_ASCII)).endsWith(ContentStore.sha256(so));
        assertThat(SharedObjects.resolve(reference)).isSameAs(NativeLibrary.load(so));
        assertThatThrownBy(() -> SharedObjects.resolve("garbage".getBytes(StandardCharsets.US_ASCII)))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("not a shared object reference");
        byte[] unknown = ("kiln-c-shared-object:" + "0".repeat(64)).getBytes(StandardCharsets.US_ASCII);
        assertThatThrownBy(() -> SharedObjects.resolve(unknown)).isInstanceOf(IllegalArgumentException.class).hasMessageContaining("0000");
        assertThatThrownBy(() -> NativeLibrary.load(so).function("missing_kernel")).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("missing_kernel");
    }
}

package dev.kiln.compile;

import dev.kiln.runtime.CompiledKernel;
import dev.kiln.runtime.CompilingDevice;
import dev.kiln.runtime.DeviceRegistry;
import dev.kiln.types.DType;
import dev.kiln.Tensor;
import dev.kiln.codegen.KernelLowering;
import dev.kiln.codegen.CpuInfo;
import dev.kiln.cpu.ContractionKernel;
import dev.kiln.cpu.CpuDevice;
import dev.kiln.runtime.WorkerPool;
import jdk.incubator.vector.FloatVector;
import dev.kiln.models.SmallModels;
import dev.kiln.schedule.ScheduleItem;
import dev.kiln.schedule.Scheduler;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The program layer of the kernel pipeline, through the CPU device: hits skip lowering, optimisation and rendering and give the same
 * programs and sources; corrupt entries are rebuilt; the key follows the structure and the identity.
 */
class ProgramCacheTest {
    private static final CompilerIdentity IDENTITY = CompilerIdentity.of("kiln-java-test", "kiln.code", "build-1");
    private static final CpuDevice CPU = (CpuDevice) DeviceRegistry.get("CPU");

    private static List<ScheduleItem.Kernel> kernels(Tensor... outputs) {
        List<ScheduleItem.Kernel> out = new ArrayList<>();
        for (ScheduleItem item : Scheduler.schedule(Arrays.stream(outputs).map(Tensor::uop).toList()).items()) {
            if (item instanceof ScheduleItem.Kernel k) out.add(k);
        }
        return out;
    }

    /** Two transformer blocks: every structure appears twice, with other weights. */
    private static List<ScheduleItem.Kernel> model() {
        Tensor x = Tensor.randn(1, 1, 8, 32).realize();
        return kernels(SmallModels.transformerBlock(SmallModels.transformerBlock(x, 2, 10), 2, 20));
    }

    private static ProgramCache cache(Path dir, CompilerIdentity identity) {
        return new ProgramCache(new KernelCache<>(dir, ProgramCache::decode), identity);
    }

    private static List<CompiledKernel> compile(List<ScheduleItem.Kernel> kernels, ProgramCache cache) {
        List<String> names = new ArrayList<>();
        for (int i = 0; i < kernels.size(); i++) names.add("k" + i);
        return ((CompilingDevice) DeviceRegistry.get("CPU")).pipeline().withPrograms(cache).compile(kernels, names);
    }

    private static long distinct(List<ScheduleItem.Kernel> kernels) {
        return kernels.stream().map(k -> ProgramCache.key(k)).distinct().count();
    }

    private static List<Path> entries(Path dir) throws IOException {
        try (Stream<Path> files = Files.walk(dir)) {
            return files.filter(f -> f.toString().endsWith(".bin")).sorted().toList();
        }
    }

    @Test
    void aNewProcessReadsWhatAnEarlierOneWroteAndGetsTheSamePrograms(@TempDir Path dir) throws IOException {
        List<ScheduleItem.Kernel> kernels = model();
        long distinct = distinct(kernels);
        assertThat(distinct).isLessThan(kernels.size());

        ProgramCache first = cache(dir, IDENTITY);
        List<CompiledKernel> made = compile(kernels, first);
        assertThat(first.stats().compiles()).isEqualTo(distinct);
        assertThat(entries(dir)).hasSize((int) distinct);

        ProgramCache second = cache(dir, IDENTITY); // a new process: nothing in memory
        List<CompiledKernel> read = compile(kernels, second);
        assertThat(second.stats().compiles()).isZero();
        assertThat(second.stats().diskHits()).isEqualTo(distinct);
        for (int i = 0; i < kernels.size(); i++) {
            assertThat(read.get(i).program()).isEqualTo(made.get(i).program());
            assertThat(read.get(i).source()).isEqualTo(made.get(i).source());
        }
        // and both are what the device makes without any program cache
        List<dev.kiln.codegen.KernelProgram> programs = new ArrayList<>();
        for (int i = 0; i < kernels.size(); i++) programs.add(CPU.optimize(KernelLowering.lower(kernels.get(i).output(), kernels.get(i).inputs(), "k" + i)));
        List<CompiledKernel> direct = CPU.compile(programs);
        for (int i = 0; i < kernels.size(); i++) {
            assertThat(read.get(i).program()).isEqualTo(direct.get(i).program());
            assertThat(read.get(i).source()).isEqualTo(direct.get(i).source());
        }
    }

    /**
     * A contraction's source renders its optimised epilogue, not its program: the entry keeps that epilogue, on disk
     * too, so a new process links the kernel without deriving it again; other kernels' entries keep nothing more.
     */
    @Test
    void aContractionsEntryKeepsTheEpilogueItsSourceRenders(@TempDir Path dir) {
        Tensor x = Tensor.randn(2, 64, 96).realize(), w = Tensor.randn(3, 96, 80).realize();
        List<ScheduleItem.Kernel> kernels = new ArrayList<>(model());
        kernels.addAll(kernels(x.matmul(w).relu(), x.matmul(w)));
        ProgramCache first = cache(dir, IDENTITY);
        compile(kernels, first);
        List<ProgramCache.Entry> made = first.get(kernels, k -> { throw new AssertionError("built again: " + k); });
        ProgramCache second = cache(dir, IDENTITY); // a new process: nothing in memory
        List<ProgramCache.Entry> read = second.get(kernels, k -> { throw new AssertionError("built again: " + k); });
        assertThat(read).isEqualTo(made);

        CpuInfo cpu = new CpuInfo(WorkerPool.size(), FloatVector.SPECIES_PREFERRED.vectorByteSize(), true);
        int contractions = 0;
        for (ProgramCache.Entry e : read) {
            var match = ContractionKernel.asGemm(e.program());
            assertThat(e.kernel().rendered()).as("an epilogue kept iff the kernel is a contraction").isEqualTo(
                    match.map(m -> ContractionKernel.optimisedEpilogue(m, cpu)));
            if (match.isPresent()) contractions++;
        }
        assertThat(contractions).as("the model's linear layers").isPositive();
    }

    @Test
    void corruptEntriesAreDiscardedAndRebuilt(@TempDir Path dir) throws IOException {
        List<ScheduleItem.Kernel> kernels = model();
        List<CompiledKernel> made = compile(kernels, cache(dir, IDENTITY));
        List<Path> files = entries(dir);

        // a flipped payload byte fails the checksum
        byte[] flipped = Files.readAllBytes(files.get(0));
        flipped[flipped.length - 10] ^= 1;
        Files.write(files.get(0), flipped);
        // a well-formed entry (right checksum) whose payload is no program: the decoder rejects it
        byte[] entry = Files.readAllBytes(files.get(1));
        byte[] garbage = "this is no program".getBytes(StandardCharsets.UTF_8);
        int header = 4 + 4 + 8 + 32; // magic, version, length, SHA-256
        Files.write(files.get(1), ByteBuffer.allocate(header + garbage.length).put(entry, 0, 8).putLong(garbage.length)
                .put(sha256(garbage)).put(garbage).array());
        // an empty file
        Files.write(files.get(2), new byte[0]);

        ProgramCache again = cache(dir, IDENTITY);
        List<CompiledKernel> rebuilt = compile(kernels, again);
        assertThat(again.stats().corruptDiscarded()).isEqualTo(3);
        assertThat(again.stats().compiles()).isEqualTo(3);
        for (int i = 0; i < kernels.size(); i++) {
            assertThat(rebuilt.get(i).program()).isEqualTo(made.get(i).program());
            assertThat(rebuilt.get(i).source()).isEqualTo(made.get(i).source());
        }
        ProgramCache healed = cache(dir, IDENTITY);
        compile(kernels, healed);
        assertThat(healed.stats().compiles()).as("the rebuilt entries were republished").isZero();
        assertThat(healed.stats().corruptDiscarded()).isZero();
    }

    @Test
    void anotherKilnBuildOrConfigurationMisses(@TempDir Path dir) {
        List<ScheduleItem.Kernel> kernels = model();
        compile(kernels, cache(dir, IDENTITY));
        for (CompilerIdentity other : List.of(CompilerIdentity.of("kiln-java-test", "kiln.code", "build-2"),
                IDENTITY.with("cpu.cores", "64"))) {
            ProgramCache c = cache(dir, other);
            compile(kernels, c);
            assertThat(c.stats().diskHits()).as(other.toString()).isZero();
            assertThat(c.stats().compiles()).isEqualTo(distinct(kernels));
        }
    }

    @Test
    void theKeyIsTheStructureNotTheBuffers() {
        Tensor a = Tensor.rand(1, 4, 8).realize(), b = Tensor.rand(2, 4, 8).realize();
        String key = key(a.exp().sum(1));
        assertThat(key(b.exp().sum(1))).isEqualTo(key);
        assertThat(key(a.exp().sum(0))).isNotEqualTo(key);
        assertThat(key(a.cast(DType.F64).realize().exp().sum(1))).isNotEqualTo(key);
        assertThat(key(Tensor.rand(3, 4, 16).realize().exp().sum(1))).isNotEqualTo(key);
        assertThat(key(a.exp().sum(1).add(1))).isNotEqualTo(key);
    }

    @Test
    void aBroadcastScalarInputIsNotMistakenForAFullSizeInput() {
        Tensor x = Tensor.of(DType.U8, new long[] {1, 2, 3, 4}, 4), y = Tensor.of(DType.U8, new long[] {5, 6, 7, 8}, 4);
        Tensor s = y.sum().cast(DType.U8).contiguous(); // a rank-0 buffer, broadcast inside the add kernel
        assertThat(key(x.add(s))).isNotEqualTo(key(x.add(y)));
    }

    private static String key(Tensor t) { return ProgramCache.key(kernels(t).getLast()); }

    @Test
    void theProcessCacheIsKeyedByKilnsClasses() {
        assertThat(ProgramCache.create(CompilerIdentity.of("x")).identity().fact("kiln.code")).isPresent().get()
                .satisfies(code -> assertThat(code).matches(KernelCache.cacheRoot().isPresent() ? "[0-9a-f]{64}" : "this process"));
    }

    private static byte[] sha256(byte[] bytes) {
        try {
            return MessageDigest.getInstance("SHA-256").digest(bytes);
        } catch (NoSuchAlgorithmException e) {
            throw new AssertionError(e);
        }
    }
}

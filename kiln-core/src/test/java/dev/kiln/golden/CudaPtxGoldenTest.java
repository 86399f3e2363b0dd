package dev.kiln.golden;

import dev.kiln.Tensor;
import dev.kiln.codegen.KernelProgram;
import dev.kiln.codegen.KernelLowering;
import dev.kiln.cuda.CudaCompiler;
import dev.kiln.cuda.Nvcc;
import dev.kiln.cuda.PtxKernel;
import dev.kiln.ir.UOp;
import dev.kiln.schedule.ScheduleItem;
import dev.kiln.schedule.Scheduler;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.lang.reflect.Modifier;
import java.net.URISyntaxException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.stream.IntStream;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Every kernel of the op test suite (every case of every golden group, scheduled, lowered and optimised
 * as the CUDA device does) rendered as CUDA and compiled to PTX with nvcc, so generated code that does
 * not compile is caught without a GPU. Skipped, with the reason printed, where there is no nvcc.
 */
class CudaPtxGoldenTest {
    /** Kernels per nvcc run: few processes (each costs about a second to start) of moderate size. */
    private static final int BATCH = 400;

    @Test
    void everyGoldenKernelCompilesToPtx() throws Exception {
        Nvcc.Discovery found = Nvcc.discover(System.getenv("PATH"));
        if (found.nvcc().isEmpty()) System.out.println("CUDA PTX compilation of the golden kernels skipped: " + found.reason());
        Assumptions.assumeTrue(found.nvcc().isPresent(), found.reason());
        CudaCompiler compiler = new CudaCompiler(found.nvcc().get());

        List<GoldenTestBase> groups = goldenGroups();
        TreeSet<String> covered = new TreeSet<>();
        for (GoldenTestBase g : groups) covered.add(g.group());
        assertThat(covered).as("golden groups with a test class").containsAll(groupFiles());

        long t0 = System.nanoTime();
        Map<KernelProgram, KernelProgram> unique = new LinkedHashMap<>(); // by structure, names aside
        int cases = 0, unbuildable = 0;
        for (GoldenTestBase g : groups) {
            Map<String, GoldenOp> ops = g.ops();
            for (GoldenCase c : GoldenCase.load(g.group())) {
                cases++;
                try {
                    List<Tensor> inputs = new ArrayList<>();
                    for (GoldenArray a : c.inputs()) inputs.add(a.toTensor());
                    List<UOp> roots = ops.get(c.op()).apply(inputs, c.args()).stream().map(Tensor::uop).toList();
                    for (ScheduleItem item : Scheduler.schedule(roots).items()) {
                        if (item instanceof ScheduleItem.Kernel k) {
                            KernelProgram p = CudaCompiler.optimize(KernelLowering.lower(k.output(), k.inputs(), "k" + unique.size()));
                            unique.putIfAbsent(p.anonymous(), p);
                        }
                    }
                } catch (RuntimeException e) {
                    unbuildable++; // a case that cannot be built fails in its group's own test
                }
            }
        }
        long t1 = System.nanoTime();
        List<KernelProgram> programs = List.copyOf(unique.values());
        ConcurrentLinkedQueue<PtxKernel> compiled = new ConcurrentLinkedQueue<>();
        IntStream.range(0, (programs.size() + BATCH - 1) / BATCH).parallel()
                .forEach(i -> compiled.addAll(compiler.compile(programs.subList(i * BATCH, Math.min(programs.size(), (i + 1) * BATCH)))));
        long t2 = System.nanoTime();
        System.out.printf("CUDA: %d golden cases (%d not buildable here), %d distinct kernels, lowered in %.1f s, "
                        + "compiled to PTX for %s in %.1f s (%s)%n", cases, unbuildable, programs.size(), (t1 - t0) / 1e9,
                compiler.nvcc().arch(), (t2 - t1) / 1e9, CudaCompiler.cacheStats());

        assertThat(programs).as("kernels of the golden suite").hasSizeGreaterThan(500);
        assertThat(compiled).hasSize(programs.size());
        for (PtxKernel k : compiled) {
            // every kernel is an entry of its module (PTX names extern "C" entries as they are)
            assertThat(k.module().ptx()).as(k.symbol()).contains(".entry " + k.symbol() + "(");
        }
    }

    /** One instance of every golden test class (every subclass of {@link GoldenTestBase} in this package). */
    private static List<GoldenTestBase> goldenGroups() throws IOException, URISyntaxException, ReflectiveOperationException {
        Path dir = Path.of(GoldenTestBase.class.getResource("GoldenTestBase.class").toURI()).getParent();
        List<GoldenTestBase> out = new ArrayList<>();
        try (Stream<Path> files = Files.list(dir)) {
            for (Path f : files.sorted().toList()) {
                String file = f.getFileName().toString();
                if (!file.endsWith(".class") || file.contains("$")) continue;
                Class<?> c = Class.forName(GoldenTestBase.class.getPackageName() + "." + file.substring(0, file.length() - 6));
                if (GoldenTestBase.class.isAssignableFrom(c) && !Modifier.isAbstract(c.getModifiers())) {
                    out.add((GoldenTestBase) c.getDeclaredConstructor().newInstance());
                }
            }
        }
        return out;
    }

    /** The groups that have a golden file. */
    private static TreeSet<String> groupFiles() throws IOException, URISyntaxException {
        Path dir = Path.of(GoldenTestBase.class.getResource("/golden").toURI());
        TreeSet<String> out = new TreeSet<>();
        try (Stream<Path> files = Files.list(dir)) {
            files.map(f -> f.getFileName().toString()).filter(n -> n.endsWith(".json")).forEach(n -> out.add(n.substring(0, n.length() - 5)));
        }
        return out;
    }
}

package dev.kiln.compile;

import dev.kiln.Tensor;
import dev.kiln.codegen.KernelLowering;
import dev.kiln.codegen.KernelProgram;
import dev.kiln.codegen.Opt;
import dev.kiln.codegen.Optimizer;
import dev.kiln.runtime.BeamOptions;
import dev.kiln.runtime.CompiledKernel;
import dev.kiln.runtime.CompilingDevice;
import dev.kiln.runtime.DeviceRegistry;
import dev.kiln.runtime.ExecutionPlan;
import dev.kiln.runtime.KernelTiming;
import dev.kiln.schedule.ScheduleItem;
import dev.kiln.schedule.Scheduler;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

/**
 * BEAM search through the CPU device's pipeline: it returns valid actions whose kernel computes what INTERP
 * does, its result is cached apart from the default programs and reused by a new pipeline (a new process)
 * without searching, the budget bounds it, and it is off unless asked for.
 */
class BeamSearchTest {
    @SuppressWarnings("unchecked")
    private static KernelPipeline<?, CompiledKernel> pipeline(Path dir) {
        KernelPipeline<?, CompiledKernel> p = ((CompilingDevice) DeviceRegistry.get("CPU")).pipeline();
        return p.withProgramFactory(id -> new ProgramCache(new KernelCache<>(dir, ProgramCache::decode), id.with("kiln.code", "test")));
    }

    private static List<ScheduleItem.Kernel> kernels(Tensor... outputs) {
        List<ScheduleItem.Kernel> out = new ArrayList<>();
        for (ScheduleItem item : Scheduler.schedule(Arrays.stream(outputs).map(Tensor::uop).toList()).items()) {
            if (item instanceof ScheduleItem.Kernel k) out.add(k);
        }
        return out;
    }

    /** A 16x16x16 sum over the last axis: a reduction far below the contraction threshold. */
    private static Tensor reduction() { return Tensor.randn(7, 16, 16, 16).realize().sum(2); }

    private static List<CompiledKernel> compile(KernelPipeline<?, CompiledKernel> p, List<ScheduleItem.Kernel> kernels, BeamOptions beam) {
        List<String> names = new ArrayList<>();
        for (int i = 0; i < kernels.size(); i++) names.add("k" + i);
        return p.compile(kernels, names, beam.tuning(KernelTiming.HOST));
    }

    private static KernelProgram lowered(ScheduleItem.Kernel k) { return KernelLowering.lower(k.output(), k.inputs(), "kernel"); }

    @Test
    void searchesOnceThenANewProcessReusesTheResultWithoutSearching(@TempDir Path dir) {
        List<ScheduleItem.Kernel> kernels = kernels(reduction());
        assertThat(kernels).hasSize(1);
        KernelPipeline<?, CompiledKernel> first = pipeline(dir);
        List<CompiledKernel> tuned = compile(first, kernels, BeamOptions.width(2).withPerKernel(Duration.ofMillis(1500)));
        assertThat(first.beamSearches()).isEqualTo(1);
        List<Opt> opts = tuned.getFirst().program().opts();
        // a valid action list: it applies to the lowered kernel and gives the program compiled
        assertThat(Optimizer.apply(lowered(kernels.getFirst()), opts).body()).isEqualTo(tuned.getFirst().program().body());

        KernelPipeline<?, CompiledKernel> second = pipeline(dir);
        List<CompiledKernel> again = compile(second, kernels, BeamOptions.width(2));
        assertThat(second.beamSearches()).isZero();
        assertThat(again.getFirst().program().opts()).isEqualTo(opts);
        assertThat(again.getFirst().source()).isEqualTo(tuned.getFirst().source());
    }

    @Test
    void beamAndDefaultProgramsNeverMix(@TempDir Path dir) {
        List<ScheduleItem.Kernel> kernels = kernels(reduction());
        KernelPipeline<?, CompiledKernel> p = pipeline(dir);
        compile(p, kernels, BeamOptions.width(2).withPerKernel(Duration.ofMillis(300)));
        assertThat(p.beamSearches()).isEqualTo(1);
        assertThat(p.programStats().compiles()).isZero(); // the BEAM result went to its own layer
        compile(p, kernels, BeamOptions.OFF);
        assertThat(p.programStats().compiles()).isEqualTo(1); // so the default layer still misses
    }

    @Test
    void aTinyBudgetReturnsQuicklyWithTheHeuristicsChoiceAndCachesNothingAsBeams(@TempDir Path dir) {
        List<ScheduleItem.Kernel> kernels = kernels(reduction());
        KernelPipeline<?, CompiledKernel> p = pipeline(dir);
        long start = System.nanoTime();
        List<CompiledKernel> c = compile(p, kernels, BeamOptions.width(4).withPerKernel(Duration.ZERO));
        long millis = (System.nanoTime() - start) / 1_000_000;
        assertThat(millis).isLessThan(1500);
        assertThat(c.getFirst().program().opts()).isEqualTo(p.optimize(lowered(kernels.getFirst())).opts());
        assertThat(p.beamSearches()).isZero();
        // not searched, so not cached as a BEAM result: with time to search, it is searched
        compile(p, kernels, BeamOptions.width(4).withPerKernel(Duration.ofMillis(300)));
        assertThat(p.beamSearches()).isEqualTo(1);
    }

    @Test
    void offByDefaultAndForContractions(@TempDir Path dir) {
        assertThat(BeamOptions.parse(k -> null, k -> null).on()).isFalse();
        assertThat(BeamOptions.parse(k -> null, Map.of(BeamOptions.ENV, "4")::get).width()).isEqualTo(4);
        assertThat(BeamOptions.parse(Map.of(BeamOptions.PROPERTY, "2")::get, Map.of(BeamOptions.ENV, "4")::get).width()).isEqualTo(2);
        KernelPipeline<?, CompiledKernel> p = pipeline(dir);
        List<ScheduleItem.Kernel> kernels = kernels(reduction());
        List<String> names = List.of("k0");
        if (!BeamOptions.current().on()) { // the process's own setting (KILN_BEAM unset in a normal test run)
            p.compile(kernels, names, BeamOptions.current().tuning(KernelTiming.HOST));
            assertThat(p.beamSearches()).isZero();
        }
        // a 64x64x64 matmul runs as a GEMM: BEAM leaves it to the heuristic
        Tensor a = Tensor.randn(1, 64, 64).realize(), b = Tensor.randn(2, 64, 64).realize();
        compile(p, kernels(a.matmul(b)), BeamOptions.width(2));
        assertThat(p.beamSearches()).isZero();
    }

    @Test
    void aTunedPlanComputesWhatInterpDoes() {
        Tensor x = Tensor.randn(3, 16, 16, 16).realize();
        Tensor y = x.sum(2).softmax(1);
        float[] expected = x.to("INTERP").sum(2).softmax(1).toFloatArray();
        try (ExecutionPlan plan = Tensor.prepare(BeamOptions.width(2).withPerKernel(Duration.ofMillis(800)), y)) {
            plan.execute();
            var got = plan.outputBuffer();
            assertThat(got.count()).isEqualTo(expected.length);
            for (int i = 0; i < expected.length; i++) assertThat(got.getDouble(i)).isCloseTo(expected[i], within(1e-4));
        }
    }

    @Test
    @SuppressWarnings("unchecked")
    void aCandidateThatFailsItsBatchCostsOnlyItself(@TempDir Path dir) {
        KernelProgram lowered = lowered(kernels(reduction()).getFirst());
        List<List<Opt>> candidates = List.of(List.of(), List.of(new Opt.Group(2, 4)), List.of(new Opt.Unroll(2, 4)), List.of(new Opt.Upcast(1, 2)));
        // a timer that fails any batch holding the GROUP candidate, as a compiler rejecting one source fails them all
        KernelTimer<CompiledKernel> timer = (program, kernels, deadline) -> {
            if (kernels.stream().anyMatch(k -> k.program().opts().equals(candidates.get(1)))) throw new IllegalStateException("rejected");
            return kernels.stream().mapToLong(k -> 1000 + k.program().opts().size()).toArray();
        };
        var p = (KernelPipeline<Object, CompiledKernel>) (Object) pipeline(dir);
        long[] t = p.time(lowered, candidates, timer, System.nanoTime() + 10_000_000_000L);
        assertThat(t).containsExactly(1000, Long.MAX_VALUE, 1001, 1001);
    }

    @Test
    void theSearchKeepsTheFastestAndNeverLosesToTheHeuristic() {
        KernelProgram lowered = lowered(kernels(reduction()).getFirst());
        List<Opt> heuristic = List.of(new Opt.Unroll(2, 2));
        // a made-up cost: fewer nanoseconds the more GROUP lanes, the heuristic's list costs 100
        BeamSearch.Cost cost = (candidates, deadline) -> candidates.stream().mapToLong(c -> c.equals(heuristic) ? 100
                : 200 - c.stream().filter(o -> o instanceof Opt.Group).mapToLong(o -> 10L * o.amount()).sum()).toArray();
        BeamSearch.Result r = BeamSearch.search(lowered, heuristic, 2, 1, System.nanoTime() + 5_000_000_000L, cost);
        assertThat(r.heuristicNanos()).isEqualTo(100);
        assertThat(r.nanos()).isLessThan(100);
        assertThat(r.opts()).anyMatch(o -> o instanceof Opt.Group);
        Optimizer.apply(lowered, r.opts()); // valid

        // everything slower than the heuristic: the heuristic it is
        BeamSearch.Result worse = BeamSearch.search(lowered, heuristic, 2, 1, System.nanoTime() + 5_000_000_000L,
                (candidates, deadline) -> candidates.stream().mapToLong(c -> c.equals(heuristic) ? 100 : 500).toArray());
        assertThat(worse.opts()).isEqualTo(heuristic);
    }
}

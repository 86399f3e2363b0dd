package dev.kiln.cli;

import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;

/** {@code kiln bench MODEL}: compile time, latency percentiles and throughput of a model. */
@Command(name = "bench", mixinStandardHelpOptions = true, sortOptions = false,
        description = "Benchmark a model: the time to prepare its plan, then the latency (min, median, p90, mean) of the timed"
                + " runs after the warm-up runs, and the throughput.")
final class BenchCommand extends ModelCommand {
    @Mixin
    RunsOptions runs;

    @Override
    int execute() {
        runs.validate();
        try (PreparedModel pm = prepare()) {
            long[] times = new long[runs.runs];
            int warmups;
            try (Progress p = progress("benchmarking " + pm.model().name())) {
                warmups = runs.warmUp(pm::execute);
                for (int i = 0; i < runs.runs; i++, p.update(i, runs.runs)) {
                    long start = System.nanoTime();
                    pm.execute();
                    times[i] = System.nanoTime() - start;
                }
            }
            out().printf("bench of %s on %s: %d kernels, %d runs after %d warm-up runs%n", pm.model().name(), pm.device().spec(),
                    pm.kernelCount(), runs.runs, warmups);
            out().print(new Reports.Latency(pm.compileNanos(), times).format());
        }
        return 0;
    }
}

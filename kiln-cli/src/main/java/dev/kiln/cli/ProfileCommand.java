package dev.kiln.cli;

import dev.kiln.runtime.ChromeTrace;
import dev.kiln.runtime.KernelProfile;
import dev.kiln.runtime.MachinePeakCache;
import dev.kiln.runtime.ProfileReport;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;

/** {@code kiln profile MODEL}: the per-kernel time table of a model and a Chrome trace of one run. */
@Command(name = "profile", mixinStandardHelpOptions = true, sortOptions = false,
        description = {"Profile a model: after the warm-up runs, time every kernel over the profiled runs and print the table"
                + " sorted by time (median per kernel: time, share, GFLOP/s, GB/s, and the share of the machine's peak: %% peak of"
                + " the all-core FMA peak at the widest vector width, %% BW of the streaming bandwidth; see kiln devices) with"
                + " totals; write the median run as a Chrome"
                + " trace (open it in ui.perfetto.dev)."})
final class ProfileCommand extends ModelCommand {
    @Mixin
    RunsOptions runs;

    @Mixin
    OutputDirOption output;

    @Option(names = "--trace", paramLabel = "FILE", description = "Where to write the trace (default: OUTPUT-DIR/MODEL.trace.json).")
    Path trace;

    @Option(names = "--opts", description = "Also print each kernel's optimisation actions (the heuristic's; BEAM search's when"
            + " KILN_BEAM=n is set).")
    boolean opts;

    @Override
    int execute() {
        runs.validate();
        try (PreparedModel pm = prepare(); OutputFiles files = new OutputFiles()) {
            List<List<KernelProfile>> profiles = new ArrayList<>();
            int warmups;
            try (Progress p = progress("profiling " + pm.model().name())) {
                warmups = runs.warmUp(pm::execute);
                for (int i = 0; i < runs.runs; i++, p.update(i, runs.runs)) profiles.add(pm.executeProfiled());
            }
            Path target = trace != null ? trace : output.dir.resolve(OutputFiles.safeName(pm.model().name()) + ".trace.json");
            ChromeTrace.write(files.stage(target), medianRun(profiles));
            files.commit();
            MachinePeakCache.Lookup peak = PeakLookup.lookup(err());
            out().printf("profile of %s on %s: %d kernels, median of %d runs after %d warm-up runs%n", pm.model().name(),
                    pm.device().spec(), pm.kernelCount(), runs.runs, warmups);
            out().print(ProfileReport.table(Reports.medianProfile(profiles), peak.peak()));
            if (opts) out().print(Reports.opts(pm.kernels()));
            out().println("roofline: " + PeakLookup.describe(peak));
            out().println("trace: " + target);
        }
        return 0;
    }

    /** The run whose total time is the median: a real timeline for the trace. */
    private static List<KernelProfile> medianRun(List<List<KernelProfile>> runs) {
        List<List<KernelProfile>> sorted = new ArrayList<>(runs);
        sorted.sort(Comparator.comparingLong(r -> r.stream().mapToLong(KernelProfile::elapsedNanos).sum()));
        return sorted.get(sorted.size() / 2);
    }
}

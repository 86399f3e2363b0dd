package dev.kiln.bench;

import ai.onnxruntime.OrtException;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * One ONNX model on Kiln and on ONNX Runtime (Java, CPU execution provider, all graph optimisations) in one
 * process, one after the other: batch latency medians and their ratio, and how far the two outputs are apart.
 * The peer figure of every model row in BENCHMARKS.md comes from this command:
 *
 * <pre>kiln-bench/bench.sh --main OnnxPeerBench MODEL.onnx [--device CPU] [--threads 2] [--warmup 5] [--runs 20]</pre>
 *
 * Inputs are {@code test_data_set_0/input_K.pb} beside the model when present (the shared model cases), else
 * {@code arange(n) / n} in each input's declared shape, f32 only. ONNX Runtime runs with {@code --threads}
 * intra-op threads (default: the cores, like Kiln's worker pool).
 */
public final class OnnxPeerBench {
    private OnnxPeerBench() {}

    public static void main(String[] args) throws OrtException {
        if (args.length == 0 || args[0].startsWith("--")) {
            System.err.println("usage: OnnxPeerBench MODEL.onnx [--device D] [--threads N] [--warmup N] [--runs N]");
            System.exit(2);
        }
        Path model = Path.of(args[0]);
        String device = "CPU";
        int threads = Runtime.getRuntime().availableProcessors(), warmup = 5, runs = 20;
        for (int i = 1; i + 1 < args.length; i += 2) {
            switch (args[i]) {
                case "--device" -> device = args[i + 1];
                case "--threads" -> threads = Integer.parseInt(args[i + 1]);
                case "--warmup" -> warmup = Integer.parseInt(args[i + 1]);
                case "--runs" -> runs = Integer.parseInt(args[i + 1]);
                default -> throw new IllegalArgumentException("unknown option " + args[i]);
            }
        }

        // Kiln: the graph on these inputs, prepared once, executed again and again; then ONNX Runtime, same inputs
        double[] kiln, ort;
        float[] kilnOut, ortOut;
        double kilnPrepareMs;
        try (KilnModelRun k = new KilnModelRun(model.toString(), device)) {
            kilnPrepareMs = k.prepareMs;
            kiln = time(k, warmup, runs);
            kilnOut = k.get();
        }
        try (OrtModelRun o = new OrtModelRun(model, threads)) {
            ort = time(o, warmup, runs);
            ortOut = o.get();
        }

        double maxDiff = 0, maxAbs = 0;
        if (ortOut.length != kilnOut.length) throw new IllegalStateException("output sizes differ: Kiln " + kilnOut.length + ", ORT " + ortOut.length);
        for (int i = 0; i < ortOut.length; i++) {
            maxDiff = Math.max(maxDiff, Math.abs(ortOut[i] - kilnOut[i]));
            maxAbs = Math.max(maxAbs, Math.abs(ortOut[i]));
        }

        String name = model.getParent() == null ? model.toString() : model.getParent().getFileName() + "/" + model.getFileName();
        System.out.printf(Locale.ROOT, "model %s, %d warm-up + %d timed runs each, ORT intra-op threads %d, %d cores%n", name, warmup, runs, threads,
                Runtime.getRuntime().availableProcessors());
        System.out.printf(Locale.ROOT, "  Kiln %-6s prepare %8.1f ms   latency median %9.3f ms  (min %.3f, max %.3f)%n", device, kilnPrepareMs,
                median(kiln), kiln[0], kiln[kiln.length - 1]);
        System.out.printf(Locale.ROOT, "  ONNX Runtime           latency median %9.3f ms  (min %.3f, max %.3f)%n", median(ort), ort[0], ort[ort.length - 1]);
        System.out.printf(Locale.ROOT, "  Kiln / ORT %.2fx   output 0: max |Kiln - ORT| %.3g (max |ORT| %.3g)%n", median(kiln) / median(ort), maxDiff, maxAbs);
    }

    /** Milliseconds of each timed run, sorted. */
    private static double[] time(Runnable run, int warmup, int runs) {
        for (int i = 0; i < warmup; i++) run.run();
        List<Double> ms = new ArrayList<>();
        for (int i = 0; i < runs; i++) {
            long t = System.nanoTime();
            run.run();
            ms.add((System.nanoTime() - t) / 1e6);
        }
        return ms.stream().mapToDouble(Double::doubleValue).sorted().toArray();
    }

    /** The median of sorted values. */
    static double median(double[] sorted) {
        int n = sorted.length;
        return n % 2 == 1 ? sorted[n / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2;
    }
}

package dev.kiln.bench;

import ai.onnxruntime.OnnxTensor;
import ai.onnxruntime.OrtEnvironment;
import ai.onnxruntime.OrtException;
import ai.onnxruntime.OrtSession;
import dev.kiln.Tensor;
import dev.kiln.onnx.OnnxModel;
import dev.kiln.onnx.TensorProtos;
import dev.kiln.onnx.ValueInfo;
import dev.kiln.runtime.Device;
import dev.kiln.runtime.DeviceRegistry;
import dev.kiln.runtime.ExecutionPlan;
import dev.kiln.types.DType;

import java.nio.FloatBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

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

        OnnxModel onnx = OnnxModel.load(model);
        // each input as float[] (f32) or long[] (i64: token ids 1.. in a 1000-word range, masks of ones)
        Map<String, Object> data = new LinkedHashMap<>();
        Map<String, long[]> shapes = new LinkedHashMap<>();
        for (int k = 0; k < onnx.inputs().size(); k++) {
            ValueInfo in = onnx.inputs().get(k);
            if (in.dtype() != DType.F32 && in.dtype() != DType.I64) {
                throw new IllegalArgumentException("input " + in.name() + " is " + in.dtype() + "; only f32 and i64 inputs");
            }
            Path pb = model.resolveSibling("test_data_set_0").resolve("input_" + k + ".pb");
            Tensor t;
            if (Files.exists(pb)) {
                t = TensorProtos.read(pb);
            } else {
                int[] dims = in.dims().stream().mapToInt(d -> {
                    if (!d.isFixed()) throw new IllegalArgumentException("input " + in.name() + " has a symbolic dim " + d + "; give input_" + in.name() + ".pb");
                    return (int) d.size();
                }).toArray();
                int n = Arrays.stream(dims).reduce(1, (a, b) -> a * b);
                if (in.dtype() == DType.I64) {
                    long[] v = new long[n];
                    boolean mask = in.name().contains("mask");
                    for (int i = 0; i < n; i++) v[i] = mask ? 1 : 1 + (i * 7919L) % 1000;
                    t = Tensor.of(v, dims);
                } else {
                    float[] v = new float[n];
                    for (int i = 0; i < n; i++) v[i] = (float) i / n;
                    t = Tensor.of(v, dims);
                }
            }
            if (t.dtype() == DType.I64) {
                long[] v = new long[(int) t.numel()];
                double[] dv = t.toDoubleArray();
                for (int i = 0; i < v.length; i++) v[i] = (long) dv[i];
                data.put(in.name(), v);
            } else {
                data.put(in.name(), t.toFloatArray());
            }
            shapes.put(in.name(), Arrays.stream(t.dims()).asLongStream().toArray());
        }

        // Kiln: the graph on these inputs, prepared once, executed again and again
        Device d = DeviceRegistry.get(device);
        Map<String, Tensor> inputs = new LinkedHashMap<>();
        data.forEach((name, v) -> {
            int[] dims = Arrays.stream(shapes.get(name)).mapToInt(x -> (int) x).toArray();
            inputs.put(name, (v instanceof long[] l ? Tensor.of(l, dims) : Tensor.of((float[]) v, dims)).to(d).realize());
        });
        long t0 = System.nanoTime();
        List<Tensor> outs = onnx.run(inputs);
        ExecutionPlan plan = Tensor.prepare(outs.stream().map(t -> t.to(d)).toArray(Tensor[]::new));
        double kilnPrepareMs = (System.nanoTime() - t0) / 1e6;
        double[] kiln = time(plan::execute, warmup, runs);
        float[] kilnOut = new float[(int) plan.outputBuffer(0).count()];
        for (int i = 0; i < kilnOut.length; i++) kilnOut[i] = (float) plan.outputBuffer(0).getDouble(i);

        // ONNX Runtime, same inputs
        OrtEnvironment env = OrtEnvironment.getEnvironment();
        double[] ort;
        float[] ortOut;
        try (OrtSession.SessionOptions opts = new OrtSession.SessionOptions()) {
            opts.setIntraOpNumThreads(threads);
            opts.setInterOpNumThreads(1);
            opts.setOptimizationLevel(OrtSession.SessionOptions.OptLevel.ALL_OPT);
            try (OrtSession session = env.createSession(model.toString(), opts)) {
                Map<String, OnnxTensor> feed = new LinkedHashMap<>();
                for (var e : data.entrySet()) {
                    feed.put(e.getKey(), e.getValue() instanceof long[] l
                            ? OnnxTensor.createTensor(env, java.nio.LongBuffer.wrap(l), shapes.get(e.getKey()))
                            : OnnxTensor.createTensor(env, FloatBuffer.wrap((float[]) e.getValue()), shapes.get(e.getKey())));
                }
                ort = time(() -> {
                    try (OrtSession.Result r = session.run(feed)) {
                        if (r.size() == 0) throw new IllegalStateException("no outputs");
                    } catch (OrtException e) {
                        throw new IllegalStateException(e);
                    }
                }, warmup, runs);
                try (OrtSession.Result r = session.run(feed)) {
                    FloatBuffer fb = ((OnnxTensor) r.get(0)).getFloatBuffer();
                    ortOut = new float[fb.remaining()];
                    fb.get(ortOut);
                }
                for (OnnxTensor t : feed.values()) t.close();
            }
        }

        double maxDiff = 0, maxAbs = 0;
        if (ortOut.length != kilnOut.length) throw new IllegalStateException("output sizes differ: Kiln " + kilnOut.length + ", ORT " + ortOut.length);
        for (int i = 0; i < ortOut.length; i++) {
            maxDiff = Math.max(maxDiff, Math.abs(ortOut[i] - kilnOut[i]));
            maxAbs = Math.max(maxAbs, Math.abs(ortOut[i]));
        }
        plan.close();

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

    private static double median(double[] sorted) {
        int n = sorted.length;
        return n % 2 == 1 ? sorted[n / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2;
    }
}

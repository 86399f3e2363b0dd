package dev.kiln.bench;

import dev.kiln.Tensor;
import dev.kiln.onnx.OnnxModel;
import dev.kiln.runtime.Device;
import dev.kiln.runtime.DeviceRegistry;
import dev.kiln.runtime.ExecutionPlan;

import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Supplier;

/**
 * An ONNX model on Kiln, prepared once on its {@link ModelInputs}: {@link #run} executes the plan, {@link #get} reads
 * output 0. Public, with JDK types only at its surface, so that {@link AlternatingBench} can load one per Kiln build in
 * class loaders of their own and drive them side by side.
 */
public final class KilnModelRun implements Runnable, Supplier<float[]>, AutoCloseable {
    private final ExecutionPlan plan;
    /** Milliseconds that loading, importing and preparing took. */
    final double prepareMs;

    public KilnModelRun(String model, String device) {
        long t0 = System.nanoTime();
        Path path = Path.of(model);
        OnnxModel onnx = OnnxModel.load(path);
        ModelInputs inputs = ModelInputs.of(path, onnx);
        Device d = DeviceRegistry.get(device);
        Map<String, Tensor> feed = new LinkedHashMap<>();
        for (String name : inputs.data().keySet()) feed.put(name, inputs.tensor(name).to(d).realize());
        List<Tensor> outs = onnx.run(feed);
        plan = Tensor.prepare(outs.stream().map(t -> t.to(d)).toArray(Tensor[]::new));
        prepareMs = (System.nanoTime() - t0) / 1e6;
    }

    @Override
    public void run() { plan.execute(); }

    @Override
    public float[] get() {
        float[] out = new float[(int) plan.outputBuffer(0).count()];
        for (int i = 0; i < out.length; i++) out[i] = (float) plan.outputBuffer(0).getDouble(i);
        return out;
    }

    @Override
    public void close() { plan.close(); }
}

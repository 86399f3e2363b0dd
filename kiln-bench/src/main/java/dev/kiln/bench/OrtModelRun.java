package dev.kiln.bench;

import ai.onnxruntime.OnnxTensor;
import ai.onnxruntime.OrtEnvironment;
import ai.onnxruntime.OrtException;
import ai.onnxruntime.OrtSession;
import dev.kiln.onnx.OnnxModel;

import java.nio.FloatBuffer;
import java.nio.LongBuffer;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.function.Supplier;

/**
 * An ONNX model on ONNX Runtime (CPU execution provider, all graph optimisations, {@code threads} intra-op threads) on
 * the same {@link ModelInputs} as {@link KilnModelRun}: {@link #run} runs the session, {@link #get} reads output 0.
 */
final class OrtModelRun implements Runnable, Supplier<float[]>, AutoCloseable {
    private final OrtSession.SessionOptions options;
    private final OrtSession session;
    private final Map<String, OnnxTensor> feed = new LinkedHashMap<>();

    OrtModelRun(Path model, int threads) throws OrtException {
        ModelInputs inputs = ModelInputs.of(model, OnnxModel.load(model));
        OrtEnvironment env = OrtEnvironment.getEnvironment();
        options = new OrtSession.SessionOptions();
        options.setIntraOpNumThreads(threads);
        options.setInterOpNumThreads(1);
        options.setOptimizationLevel(OrtSession.SessionOptions.OptLevel.ALL_OPT);
        session = env.createSession(model.toString(), options);
        for (var e : inputs.data().entrySet()) {
            long[] shape = inputs.shapes().get(e.getKey());
            feed.put(e.getKey(), e.getValue() instanceof long[] l ? OnnxTensor.createTensor(env, LongBuffer.wrap(l), shape)
                    : OnnxTensor.createTensor(env, FloatBuffer.wrap((float[]) e.getValue()), shape));
        }
    }

    @Override
    public void run() {
        try (OrtSession.Result r = session.run(feed)) {
            if (r.size() == 0) throw new IllegalStateException("no outputs");
        } catch (OrtException e) {
            throw new IllegalStateException(e);
        }
    }

    @Override
    public float[] get() {
        try (OrtSession.Result r = session.run(feed)) {
            FloatBuffer fb = ((OnnxTensor) r.get(0)).getFloatBuffer();
            float[] out = new float[fb.remaining()];
            fb.get(out);
            return out;
        } catch (OrtException e) {
            throw new IllegalStateException(e);
        }
    }

    @Override
    public void close() throws OrtException {
        for (OnnxTensor t : feed.values()) t.close();
        session.close();
        options.close();
    }
}

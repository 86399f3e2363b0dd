package dev.kiln.spark;

import dev.kiln.Tensor;
import dev.kiln.onnx.OnnxModel;
import dev.kiln.serve.CompiledGraph;
import dev.kiln.serve.Graph;
import dev.kiln.serve.Session;
import dev.kiln.types.Shape;
import dev.kiln.types.Variable;

import java.io.IOException;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentLinkedDeque;

/**
 * One model compiled once in this JVM as a serving graph whose leading axis is a symbolic batch of up to
 * {@link #batchSize()} rows, and the replicas that task threads run it through. A replica
 * ({@link CompiledGraph#copy()}) shares the compiled kernels and weights and owns only its input and output buffers,
 * so an executor with N task slots holds one compiled plan and at most N replicas, whatever the number of tasks.
 * Owned by {@link ExecutorModels}, which closes it.
 */
final class ServingModel implements AutoCloseable {
    private static final System.Logger LOG = System.getLogger(ServingModel.class.getName());

    private final OnnxModel onnx;
    private final CompiledGraph template;
    private final ModelSignature signature;
    private final int batchSize;
    private final ConcurrentLinkedDeque<CompiledGraph> idle = new ConcurrentLinkedDeque<>();
    private final List<CompiledGraph> replicas = new ArrayList<>(); // guarded by this
    private boolean closed; // guarded by this

    private ServingModel(OnnxModel onnx, CompiledGraph template, ModelSignature signature, int batchSize) {
        this.onnx = onnx;
        this.template = template;
        this.signature = signature;
        this.batchSize = batchSize;
    }

    /**
     * Loads {@code model} and compiles it for {@code device} with a batch axis of {@code batchSize} rows (1 for a model
     * whose batch axis is fixed at 1, which is logged).
     */
    static ServingModel compile(ModelFile model, String device, int batchSize) {
        OnnxModel onnx = null;
        try {
            onnx = OnnxModel.load(model.bytes(), model.source()); // the bytes came over the network: no file to write
            ModelSignature sig = ModelSignature.of(onnx, model.source());
            int rows = sig.batched() ? batchSize : 1;
            if (!sig.batched() && batchSize > 1) {
                LOG.log(System.Logger.Level.WARNING, "model " + model.source() + " has a batch axis fixed at 1: it scores one row per run, not "
                        + batchSize + " (export it with a symbolic batch axis to batch rows)");
            }
            Variable batch = sig.batched() ? new Variable(sig.batchSymbol(), 1, rows) : null;
            Graph g = new Graph();
            Map<String, Tensor> inputs = new LinkedHashMap<>();
            for (TensorSlot s : sig.inputs()) {
                int[] row = s.rowDims();
                Object[] dims = new Object[row.length + 1];
                dims[0] = batch != null ? batch : (Object) 1;
                for (int k = 0; k < row.length; k++) dims[k + 1] = row[k];
                inputs.put(s.name(), g.input(s.name(), s.dtype(), Shape.symbolic(dims)));
            }
            g.outputs(onnx.run(inputs).toArray(Tensor[]::new));
            CompiledGraph compiled = Session.on(device).compile(g);
            return new ServingModel(onnx, compiled, sig, rows);
        } catch (RuntimeException | Error e) {
            if (onnx != null) onnx.close();
            throw e;
        }
    }

    ModelSignature signature() { return signature; }

    /** Rows per run. */
    int batchSize() { return batchSize; }

    /** A replica for this thread's exclusive use until {@link #release}: an idle one, or a new copy. */
    CompiledGraph borrow() {
        CompiledGraph r = idle.pollFirst();
        if (r != null) return r;
        synchronized (this) {
            if (closed) throw new IllegalStateException("model " + signature.source() + " has been closed (the JVM is shutting down)");
            CompiledGraph c = template.copy(); // the template is never run, only copied, and only here under the lock
            replicas.add(c);
            return c;
        }
    }

    /** Gives a replica back for the next task. */
    void release(CompiledGraph replica) { idle.addFirst(replica); }

    /** Replicas made so far (at most the number of tasks that ran at once). */
    synchronized int replicaCount() { return replicas.size(); }

    /** Frees every replica, the compiled plan and the model; replicas still borrowed must not be used afterwards. */
    @Override
    public synchronized void close() {
        if (closed) return;
        closed = true;
        for (CompiledGraph r : replicas) r.close();
        template.close();
        onnx.close();
    }
}

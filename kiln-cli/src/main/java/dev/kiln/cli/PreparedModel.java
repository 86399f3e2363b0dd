package dev.kiln.cli;

import dev.kiln.Tensor;
import dev.kiln.onnx.OnnxPlan;
import dev.kiln.runtime.Buffer;
import dev.kiln.runtime.Device;
import dev.kiln.runtime.ExecutionPlan;
import dev.kiln.runtime.PreparedKernel;
import dev.kiln.runtime.KernelProfile;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * A model applied to concrete inputs and prepared as one execution plan on one device; it owns the
 * plan and the model, and frees both on {@link #close()} (the plan first: it may read the model's weights in place). An ONNX model with maxima for its symbolic dimensions is
 * prepared once for every size up to them ({@link OnnxPlan}) and bound to the inputs' sizes.
 */
final class PreparedModel implements AutoCloseable {
    /** One output after execution: its name, dims and the plan's buffer holding it. */
    record Output(String name, int[] dims, Buffer buffer) {}

    private final Model model;
    private final Device device;
    private final ExecutionPlan plan;
    private final List<int[]> dims;
    private final long compileNanos;
    private final OnnxPlan symbolic; // null unless prepared for symbolic sizes

    private PreparedModel(Model model, Device device, ExecutionPlan plan, List<int[]> dims, long compileNanos, OnnxPlan symbolic) {
        this.model = model;
        this.device = device;
        this.plan = plan;
        this.dims = dims;
        this.compileNanos = compileNanos;
        this.symbolic = symbolic;
    }

    /**
     * Prepares an ONNX model once for every size of its symbolic dimensions up to {@code maxDims}, then binds
     * the dimensions to the sizes of {@code inputs}; {@link #compileNanos()} is the
     * preparation alone.
     *
     * @throws IllegalArgumentException if a maximum is missing or unknown, an input exceeds it, or an operator
     *                                  cannot take symbolic sizes
     */
    static PreparedModel prepareSymbolic(OnnxFileModel model, Map<String, Tensor> inputs, Device device, Map<String, Integer> maxDims) {
        long start = System.nanoTime();
        OnnxPlan p = model.onnx().prepare(device, maxDims);
        long compile = System.nanoTime() - start;
        try {
            p.bind(inputs);
            List<int[]> dims = new ArrayList<>();
            for (int k = 0; k < model.outputNames().size(); k++) dims.add(p.outputDims(k));
            return new PreparedModel(model, device, p.plan(), dims, compile, p);
        } catch (RuntimeException e) {
            p.close();
            throw e;
        }
    }

    /**
     * Builds the model's graph on {@code inputs} and prepares it on {@code device}; the time taken is
     * {@link #compileNanos()}.
     */
    static PreparedModel prepare(Model model, Map<String, Tensor> inputs, Device device) {
        long start = System.nanoTime();
        List<Tensor> outputs = model.apply(inputs);
        if (outputs.size() != model.outputNames().size()) {
            throw new IllegalStateException(model.name() + " returned " + outputs.size() + " outputs for " + model.outputNames().size()
                    + " names " + model.outputNames());
        }
        List<Tensor> onDevice = new ArrayList<>();
        List<int[]> dims = new ArrayList<>();
        for (Tensor t : outputs) {
            onDevice.add(t.to(device));
            dims.add(t.dims());
        }
        ExecutionPlan plan = Tensor.prepare(onDevice.toArray(Tensor[]::new));
        return new PreparedModel(model, device, plan, dims, System.nanoTime() - start, null);
    }

    Model model() { return model; }

    Device device() { return device; }

    /** Wall time of building the graph and preparing the plan (scheduling, optimising, compiling kernels). */
    long compileNanos() { return compileNanos; }

    /** Number of compiled kernels in the plan. */
    int kernelCount() { return plan().kernels().size(); }

    /** The plan's compiled kernels, with the programs (and their optimisation actions) they came from. */
    List<PreparedKernel> kernels() { return plan().kernels(); }

    /** The plan now: a symbolic plan is built again when a run outgrows a loop's rows ({@link OnnxPlan#execute()}). */
    private ExecutionPlan plan() { return symbolic != null ? symbolic.plan() : plan; }

    void execute() {
        if (symbolic != null) symbolic.execute();
        else plan.execute();
    }

    List<KernelProfile> executeProfiled() { return plan().executeProfiled(); }

    /** The outputs of the last execution, in the model's order; valid until {@link #close()}. */
    List<Output> outputs() {
        List<Output> out = new ArrayList<>();
        // a symbolic plan's buffers are laid out for the maximum sizes: copy the outputs out at their sizes
        List<Tensor> compact = symbolic != null ? symbolic.outputs() : null;
        for (int i = 0; i < dims.size(); i++) {
            // a compact output's own dims: a data-dependent size (NonZero's count) is known only once the plan has run
            if (compact != null) out.add(new Output(model.outputNames().get(i), compact.get(i).dims(), compact.get(i).buffer().toHost()));
            else out.add(new Output(model.outputNames().get(i), dims.get(i), plan().outputBuffer(i).toHost()));
        }
        return out;
    }

    @Override
    public void close() {
        try {
            if (symbolic != null) symbolic.close();
            else plan.close();
        } finally {
            model.close();
        }
    }
}

package dev.kiln.cli;

import dev.kiln.Tensor;
import dev.kiln.runtime.Buffer;
import dev.kiln.runtime.Device;
import dev.kiln.runtime.ExecutionPlan;
import dev.kiln.runtime.KernelProfile;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * A model applied to concrete inputs and prepared as one execution plan on one device; it owns the
 * plan and frees it on {@link #close()}.
 */
final class PreparedModel implements AutoCloseable {
    /** One output after execution: its name, dims and the plan's buffer holding it. */
    record Output(String name, int[] dims, Buffer buffer) {}

    private final Model model;
    private final Device device;
    private final ExecutionPlan plan;
    private final List<int[]> dims;
    private final long compileNanos;

    private PreparedModel(Model model, Device device, ExecutionPlan plan, List<int[]> dims, long compileNanos) {
        this.model = model;
        this.device = device;
        this.plan = plan;
        this.dims = dims;
        this.compileNanos = compileNanos;
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
        return new PreparedModel(model, device, plan, dims, System.nanoTime() - start);
    }

    Model model() { return model; }

    Device device() { return device; }

    /** Wall time of building the graph and preparing the plan (scheduling, optimising, compiling kernels). */
    long compileNanos() { return compileNanos; }

    /** Number of compiled kernels in the plan. */
    int kernelCount() { return plan.kernels().size(); }

    void execute() { plan.execute(); }

    List<KernelProfile> executeProfiled() { return plan.executeProfiled(); }

    /** The outputs of the last execution, in the model's order; valid until {@link #close()}. */
    List<Output> outputs() {
        List<Output> out = new ArrayList<>();
        for (int i = 0; i < dims.size(); i++) out.add(new Output(model.outputNames().get(i), dims.get(i), plan.outputBuffer(i)));
        return out;
    }

    @Override
    public void close() { plan.close(); }
}

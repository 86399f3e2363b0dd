package dev.kiln.runtime;

import dev.kiln.types.DType;
import dev.kiln.types.Variable;
import dev.kiln.codegen.KernelProgram;
import dev.kiln.codegen.KernelLowering;
import dev.kiln.ir.UOp;
import dev.kiln.schedule.ScheduleItem;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/** A place where tensors live and graphs run. */
public interface Device {
    DeviceSpec spec();

    /**
     * The memory of this device when it is not host memory (a GPU's): how the runtime allocates, slices and
     * copies it. Empty (the default) for devices whose tensors live in host memory that Java reads directly.
     */
    default java.util.Optional<DeviceMemory> deviceMemory() { return java.util.Optional.empty(); }

    /** A zero-filled buffer of {@code count} elements on this device. */
    Buffer allocate(DType dtype, long count);

    /**
     * Evaluates a tensor-level graph and returns its value as a dense buffer on this device.
     *
     * @param bindings values for the variables the graph uses, each within its bounds
     */
    Buffer realize(UOp root, Map<Variable, Long> bindings);

    /**
     * This device's optimisation of a lowered kernel (loop splits, vectorisation, threads): what its
     * heuristic chooses. The default leaves the program as lowered.
     */
    default KernelProgram optimize(KernelProgram program) { return program; }

    /** Compiles lowered kernels for this device, as one batch; the result is in the same order. */
    List<CompiledKernel> compile(List<KernelProgram> programs);

    /**
     * Compiles scheduled kernels for this device, as one batch, the result in the same order: each is
     * lowered ({@link KernelLowering}), {@linkplain #optimize optimised} and named, then all are
     * {@linkplain #compile compiled}. Compiling devices do this through their {@link KernelPipeline}, which
     * serves kernels whose structure it has prepared before (in this process or, from its disk cache, in an
     * earlier one) without lowering, optimising or rendering them again; the programs and sources are the
     * same either way. The default, without caches, is for devices that evaluate programs (INTERP).
     *
     * @param names the kernels' names, one per kernel
     */
    default List<CompiledKernel> compileKernels(List<ScheduleItem.Kernel> kernels, List<String> names) {
        List<KernelProgram> programs = new ArrayList<>();
        for (int i = 0; i < kernels.size(); i++) programs.add(optimize(KernelLowering.lower(kernels.get(i).output(), kernels.get(i).inputs(), names.get(i))));
        return compile(programs);
    }

    /**
     * Compiles the kernels of {@code graphs} (each a list of outputs, as {@code prepare} takes them) ahead of
     * time, in a few large batches side by side, so that plans built from these graphs later find them
     * compiled: one compiler run (a javac task, a C compiler process) per batch costs far less than one per
     * plan. A graph that cannot be scheduled, or a batch with a kernel that cannot be compiled, is skipped:
     * building the plans reports the problem.
     */
    default void compileAhead(List<List<UOp>> graphs) { PlanBuilder.compileAhead(this, graphs); }
}

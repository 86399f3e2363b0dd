package dev.kiln.runtime;

import dev.kiln.codegen.KernelProgram;
import dev.kiln.compile.KernelPipeline;
import dev.kiln.schedule.ScheduleItem;
import dev.kiln.types.DType;
import dev.kiln.types.Variable;
import dev.kiln.ir.UOp;

import java.util.List;
import java.util.Map;

/**
 * A host device that compiles its kernels through a {@link KernelPipeline} (CPU, CLANG): its tensors live
 * off-heap, a graph is realised by preparing and running a plan, and optimisation and compilation are the
 * pipeline's. A device supplies its spec and its pipeline.
 */
public interface CompilingDevice extends Device {
    /** The pipeline this device's kernels go through. */
    KernelPipeline<?, CompiledKernel> pipeline();

    @Override
    default Buffer allocate(DType dtype, long count) { return Buffer.allocateOffHeap(spec().toString(), dtype, count); }

    @Override
    default Buffer realize(UOp root, Map<Variable, Long> bindings) { return PlanBuilder.realize(this, root, bindings); }

    /** The pipeline's choice of optimisation actions (the device's heuristic), applied. */
    @Override
    default KernelProgram optimize(KernelProgram program) { return pipeline().optimize(program); }

    @Override
    default List<CompiledKernel> compileKernels(List<ScheduleItem.Kernel> kernels, List<String> names) {
        return pipeline().compile(kernels, names, BeamOptions.current().tuning(KernelTiming.HOST)); // tuned when BEAM is on
    }

    @Override
    default List<CompiledKernel> compile(List<KernelProgram> programs) { return pipeline().compilePrograms(programs); }
}

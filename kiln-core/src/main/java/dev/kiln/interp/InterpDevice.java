package dev.kiln.interp;

import dev.kiln.types.DType;
import dev.kiln.runtime.DeviceSpec;
import dev.kiln.types.Variable;
import dev.kiln.codegen.KernelEvaluator;
import dev.kiln.codegen.KernelProgram;
import dev.kiln.codegen.ProgramText;
import dev.kiln.ir.UOp;
import dev.kiln.runtime.Buffer;
import dev.kiln.runtime.CompiledKernel;
import dev.kiln.runtime.Device;

import java.util.HashMap;
import java.util.List;
import java.util.Map;

/** The reference device: runs tensor graphs through the {@link Interpreter}, data on the Java heap. */
public final class InterpDevice implements Device {
    private final DeviceSpec spec;

    InterpDevice(DeviceSpec spec) { this.spec = spec; }

    @Override
    public DeviceSpec spec() { return spec; }

    @Override
    public Buffer allocate(DType dtype, long count) { return Buffer.allocateHeap(spec.toString(), dtype, count); }

    @Override
    public Buffer realize(UOp root, Map<Variable, Long> bindings) {
        Value v = new Interpreter(spec.toString(), bindings).evaluate(root);
        return Interpreter.toBuffer(spec.toString(), v);
    }

    /**
     * Kernels run by the {@link KernelEvaluator}: the reference path through scheduling and lowering.
     * They always run whole (a THREAD split is not offered, so the range is the full one).
     */
    @Override
    public List<CompiledKernel> compile(List<KernelProgram> programs) {
        return programs.stream().map(p -> new CompiledKernel(p, ProgramText.render(p), (bufs, vars, start, end) -> {
            Map<Variable, Long> bound = new HashMap<>();
            for (int i = 0; i < vars.length; i++) bound.put(p.variables().get(i), vars[i]);
            KernelEvaluator.run(p, List.of(bufs), bound);
        })).toList();
    }

    @Override
    public String toString() { return spec.toString(); }
}

package dev.kiln.serve;

import dev.kiln.runtime.Buffer;
import dev.kiln.runtime.DeviceSpec;
import dev.kiln.types.Variable;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.HashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;

/**
 * What a compiled graph and its replicas share: the description, the weights and their arena, which the
 * last of them to close frees.
 */
final class SharedGraphState {
    /** Alignment of every block a compiled graph allocates. */
    static final long ALIGN = 64;

    final DeviceSpec device;
    final Capabilities capabilities;
    final CompileOptions options;
    final List<TensorSpec> inputs, params, outputs;
    final Map<String, Integer> inputIndex = new HashMap<>(), paramIndex = new HashMap<>();
    final List<Variable> extentVariables;  // the variables of the inputs' symbolic axes, in order of first use
    final Buffer[] templateInputs;   // the input buffers the original plan was built on (replicas rebind these)
    final MemorySegment[] paramSegments;
    final boolean[] paramSet;
    final Arena arena;               // params and constants
    volatile int unsetParams;     // read by replicas on other threads before every run
    private int references = 1;

    SharedGraphState(DeviceSpec device, CompileOptions options, List<TensorSpec> inputs, List<TensorSpec> params, List<TensorSpec> outputs,
                     Buffer[] templateInputs, MemorySegment[] paramSegments, Arena arena) {
        this.device = device;
        this.capabilities = Capabilities.of(device);
        this.options = options;
        this.inputs = inputs;
        this.params = params;
        this.outputs = outputs;
        for (int i = 0; i < inputs.size(); i++) inputIndex.put(inputs.get(i).name(), i);
        LinkedHashSet<Variable> vars = new LinkedHashSet<>();
        for (TensorSpec in : inputs) for (int a = 0; a < in.shape().rank(); a++) if (in.shape().variable(a) != null) vars.add(in.shape().variable(a));
        this.extentVariables = List.copyOf(vars);
        for (int i = 0; i < params.size(); i++) paramIndex.put(params.get(i).name(), i);
        this.templateInputs = templateInputs;
        this.paramSegments = paramSegments;
        this.paramSet = new boolean[params.size()];
        this.unsetParams = params.size();
        this.arena = arena;
    }

    static long align(long bytes) { return (bytes + ALIGN - 1) / ALIGN * ALIGN; }

    synchronized void retain() { references++; }

    synchronized void release() {
        if (--references == 0) arena.close();
    }
}

package dev.kiln.runtime;

import dev.kiln.DType;
import dev.kiln.DeviceSpec;
import dev.kiln.Variable;
import dev.kiln.ir.UOp;

import java.util.Map;

/** A place where tensors live and graphs run. */
public interface Device {
    DeviceSpec spec();

    /** A zero-filled buffer of {@code count} elements on this device. */
    Buffer allocate(DType dtype, long count);

    /**
     * Evaluates a tensor-level graph and returns its value as a dense buffer on this device.
     *
     * @param bindings values for the variables the graph uses, each within its bounds
     */
    Buffer realize(UOp root, Map<Variable, Long> bindings);
}

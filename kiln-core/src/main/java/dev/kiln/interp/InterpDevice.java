package dev.kiln.interp;

import dev.kiln.DType;
import dev.kiln.DeviceSpec;
import dev.kiln.Variable;
import dev.kiln.ir.UOp;
import dev.kiln.runtime.Buffer;
import dev.kiln.runtime.Device;

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

    @Override
    public String toString() { return spec.toString(); }
}

package dev.kiln.cpu;

import dev.kiln.runtime.DeviceSpec;
import dev.kiln.runtime.Device;
import dev.kiln.runtime.DeviceProvider;

import javax.tools.ToolProvider;
import java.util.Optional;

/** Provides the CPU device; it needs the JDK's in-process Java compiler (a JRE without it cannot compile kernels). */
public final class CpuDeviceProvider implements DeviceProvider {
    @Override
    public String kind() { return "CPU"; }

    @Override
    public Optional<String> unavailableReason() {
        return ToolProvider.getSystemJavaCompiler() == null
                ? Optional.of("no Java compiler in this runtime (module jdk.compiler is missing; run on a JDK)")
                : Optional.empty();
    }

    @Override
    public Device create(DeviceSpec spec) { return new CpuDevice(spec); }
}

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
        return Compiler.PRESENT ? Optional.empty() : Optional.of("no Java compiler in this runtime (module jdk.compiler is missing; run on a JDK)");
    }

    /**
     * Whether the runtime has a Java compiler, looked up once (its modules do not change): {@link ToolProvider} runs a
     * service-loader search on every call, and {@code DeviceRegistry.get} asks on every call, which is every tensor an
     * ONNX model builds (4 % of ResNet-50's prepare with a warm kernel cache).
     */
    private static final class Compiler {
        static final boolean PRESENT = ToolProvider.getSystemJavaCompiler() != null;
    }

    @Override
    public Device create(DeviceSpec spec) { return new CpuDevice(spec); }
}

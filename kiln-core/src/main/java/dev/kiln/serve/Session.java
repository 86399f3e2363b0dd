package dev.kiln.serve;

import dev.kiln.runtime.DeviceSpec;
import dev.kiln.runtime.Device;
import dev.kiln.runtime.DeviceRegistry;

import java.util.Objects;
import java.util.Set;

/**
 * The entry point of the serving API: a device to compile {@link Graph}s for.
 * {@code Session.on("CPU").compile(graph)} gives a {@link CompiledGraph}.
 */
public final class Session {
    /** Device kinds whose buffers live in host memory, which the serving API reads and writes directly. */
    private static final Set<String> HOST_KINDS = Set.of("INTERP", "CPU", "CLANG");

    private final Device device;

    private Session(Device device) {
        this.device = Objects.requireNonNull(device, "device");
        if (!HOST_KINDS.contains(device.spec().kind())) {
            throw new UnsupportedOperationException("Session: the serving API runs on the host-memory devices " + HOST_KINDS.stream().sorted().toList()
                    + "; device " + device.spec() + " is not one of them");
        }
    }

    /**
     * A session on the device named {@code spec} (e.g. {@code "CPU"}, {@code "CLANG"}, {@code "INTERP"}).
     *
     * @throws IllegalArgumentException      if no such device kind is registered
     * @throws UnsupportedOperationException if the device is unavailable here (with the reason) or not a host device
     */
    public static Session on(String spec) { return on(DeviceSpec.parse(spec)); }

    /** As {@link #on(String)}. */
    public static Session on(DeviceSpec spec) { return new Session(DeviceRegistry.get(spec)); }

    /** A session on {@code device}. */
    public static Session on(Device device) { return new Session(device); }

    /** The session's device. */
    public Device device() { return device; }

    /** What graphs compiled by this session can do on its device. */
    public Capabilities capabilities() { return Capabilities.of(device.spec()); }

    /** {@code graph} compiled with the default options. */
    public CompiledGraph compile(Graph graph) { return compile(graph, CompileOptions.defaults()); }

    /**
     * {@code graph} scheduled, planned and compiled for this device: one execution plan whose input and
     * parameter buffers the returned graph owns. Close it to free them.
     *
     * @throws IllegalStateException    if the graph has no outputs
     * @throws IllegalArgumentException if an output reads a placeholder of another graph
     */
    public CompiledGraph compile(Graph graph, CompileOptions options) {
        Objects.requireNonNull(graph, "graph");
        Objects.requireNonNull(options, "options");
        return GraphCompiler.compile(device, graph, options);
    }

    @Override
    public String toString() { return "Session[" + device.spec() + "]"; }
}

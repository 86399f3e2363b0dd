package dev.kiln.serve;

import dev.kiln.runtime.DeviceSpec;

import java.util.EnumSet;
import java.util.Set;

/**
 * What a compiled graph's device offers through the serving API.
 *
 * <p>The host devices (INTERP, CPU, CLANG) keep every buffer in host memory: their handles are
 * device-resident by construction and their outputs are host-readable. INTERP evaluates kernels whole,
 * so it has no {@link Capability#THREADED_KERNELS}. All three honour an active extent (their kernels loop
 * only to a symbolic axis's value) and keep mixture-of-experts residency on the host.
 *
 * @param device    the device
 * @param supported the capabilities it offers
 */
public record Capabilities(DeviceSpec device, Set<Capability> supported) {
    public Capabilities {
        supported = supported.isEmpty() ? Set.of() : Set.copyOf(EnumSet.copyOf(supported));
    }

    /** The capabilities of a device kind the serving API runs on. */
    static Capabilities of(DeviceSpec device) {
        EnumSet<Capability> s = EnumSet.of(Capability.REPLICAS, Capability.ASYNC_COMMIT, Capability.HANDLES,
                Capability.DEVICE_RESIDENT_HANDLES, Capability.HOST_READABLE_OUTPUTS, Capability.TYPED_IO, Capability.PACKED_WEIGHTS,
                Capability.ACTIVE_EXTENT, Capability.MOE_RESIDENCY);
        if (!device.kind().equals("INTERP")) s.add(Capability.THREADED_KERNELS);
        return new Capabilities(device, s);
    }

    /** Whether the device offers {@code c}. */
    public boolean supports(Capability c) { return supported.contains(c); }

    /**
     * Checks that the device offers {@code c}.
     *
     * @param what the call that needs it, named in the exception
     * @throws UnsupportedCapabilityException if it does not
     */
    public void require(Capability c, String what) {
        if (!supports(c)) throw new UnsupportedCapabilityException(c, device, what);
    }
}

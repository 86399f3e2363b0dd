package dev.kiln.serve;

import dev.kiln.runtime.DeviceSpec;

/** A serving feature was asked of a device that does not offer it. */
public final class UnsupportedCapabilityException extends UnsupportedOperationException {
    private final transient Capability capability;
    private final DeviceSpec device;

    /** {@code capability} is missing on {@code device}; {@code what} names the call that needs it. */
    public UnsupportedCapabilityException(Capability capability, DeviceSpec device, String what) {
        super(what + " needs capability " + capability + ", which device " + device + " does not offer");
        this.capability = capability;
        this.device = device;
    }

    /** The missing capability. */
    public Capability capability() { return capability; }

    /** The device that lacks it. */
    public DeviceSpec device() { return device; }
}

package dev.kiln.interp;

import dev.kiln.runtime.DeviceSpec;
import dev.kiln.runtime.Device;
import dev.kiln.runtime.DeviceProvider;

import java.util.Optional;

/** Provides the INTERP device, which is available everywhere. */
public final class InterpDeviceProvider implements DeviceProvider {
    @Override
    public String kind() { return "INTERP"; }

    @Override
    public Optional<String> unavailableReason() { return Optional.empty(); }

    @Override
    public Device create(DeviceSpec spec) { return new InterpDevice(spec); }
}

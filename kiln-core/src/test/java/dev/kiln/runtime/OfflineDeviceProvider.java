package dev.kiln.runtime;


import java.util.Optional;

/** A test-only device kind that is registered but never available, for the "not available" error paths. */
public final class OfflineDeviceProvider implements DeviceProvider {
    static final String REASON = "test device kind that is always switched off";

    @Override
    public String kind() { return "OFFLINE"; }

    @Override
    public Optional<String> unavailableReason() { return Optional.of(REASON); }

    @Override
    public Device create(DeviceSpec spec) { throw new AssertionError("OFFLINE devices are never created"); }
}

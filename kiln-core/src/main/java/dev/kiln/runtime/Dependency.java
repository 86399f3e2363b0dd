package dev.kiln.runtime;


import java.util.Objects;

/**
 * Work queued on {@link UnifiedExecutor} starts only once {@code device}'s timeline has reached
 * {@code value}, i.e. once everything that device issued up to that value has finished.
 */
public record Dependency(DeviceSpec device, long value) {
    public Dependency {
        Objects.requireNonNull(device, "device");
        if (value < 0) throw new IllegalArgumentException("dependency on " + device + ": timeline value must be >= 0, got " + value);
    }
}

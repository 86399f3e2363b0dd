package dev.kiln.runtime;


import java.util.Optional;

/**
 * Creates the devices of one kind. Modules contribute providers through {@link java.util.ServiceLoader}
 * ({@code provides dev.kiln.runtime.DeviceProvider with ...}), so a new backend joins by adding a module.
 */
public interface DeviceProvider {
    /** The device kind, upper case, e.g. {@code CPU}. */
    String kind();

    /** Why devices of this kind cannot be created on this machine, or empty if they can. */
    Optional<String> unavailableReason();

    /** Creates the device; called once per spec by {@link DeviceRegistry}. */
    Device create(DeviceSpec spec);
}

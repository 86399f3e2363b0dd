package dev.kiln.testing;

import dev.kiln.runtime.DeviceSpec;
import dev.kiln.runtime.DeviceProvider;
import dev.kiln.runtime.DeviceRegistry;
import org.junit.jupiter.api.Assumptions;

import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Skips a test, never silently, when its device is unavailable on this machine (CLANG without a C
 * compiler): the reason is printed once per device and kind of test.
 */
public final class DeviceAssumptions {
    private DeviceAssumptions() {}

    private static final Set<String> REPORTED = ConcurrentHashMap.newKeySet();

    /** Skips the calling test unless {@code device} is available; {@code tests} names them in the printed reason. */
    public static void assumeAvailable(String device, String tests) {
        DeviceProvider p = DeviceRegistry.providers().get(DeviceSpec.parse(device).kind());
        Optional<String> reason = p == null ? Optional.of("no provider is registered") : p.unavailableReason();
        if (reason.isPresent() && REPORTED.add(tests + " " + device)) System.out.println(tests + " on " + device + " skipped: " + reason.get());
        Assumptions.assumeTrue(reason.isEmpty(), () -> device + " unavailable: " + reason.orElse(""));
    }
}

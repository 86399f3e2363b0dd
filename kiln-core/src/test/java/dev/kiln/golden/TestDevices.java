package dev.kiln.golden;

import dev.kiln.DeviceSpec;
import dev.kiln.runtime.DeviceProvider;
import dev.kiln.runtime.DeviceRegistry;
import org.junit.jupiter.api.Assumptions;

import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The devices every golden case runs on; a new device joins by adding its name here. A device this
 * machine cannot provide (CLANG without a C compiler) has its cases skipped with the reason, printed once.
 */
final class TestDevices {
    private TestDevices() {}

    static final List<String> ALL = List.of("INTERP", "CPU", "CLANG");

    /** Devices whose kernels are compiled up front in large batches (a C compiler run costs a process). */
    static final Set<String> PRECOMPILED = Set.of("CLANG");

    private static final Set<String> REPORTED = ConcurrentHashMap.newKeySet();

    /** Skips the calling test, never silently, when {@code device} is unavailable here. */
    static void assumeAvailable(String device) {
        DeviceProvider p = DeviceRegistry.providers().get(DeviceSpec.parse(device).kind());
        Optional<String> reason = p == null ? Optional.of("no provider is registered") : p.unavailableReason();
        if (reason.isPresent() && REPORTED.add(device)) System.out.println("golden tests on " + device + " skipped: " + reason.get());
        Assumptions.assumeTrue(reason.isEmpty(), () -> device + " unavailable: " + reason.orElse(""));
    }
}

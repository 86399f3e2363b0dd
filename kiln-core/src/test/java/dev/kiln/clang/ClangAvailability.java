package dev.kiln.clang;

import dev.kiln.runtime.DeviceRegistry;
import org.junit.jupiter.api.Assumptions;

import java.util.Optional;
import java.util.concurrent.atomic.AtomicBoolean;

/** The CLANG device's compiler for tests, or a skip with the reason (printed once) when the machine has none. */
final class ClangAvailability {
    private static final AtomicBoolean PRINTED = new AtomicBoolean();

    private ClangAvailability() {}

    /** The registered provider's compiler; skips the calling test (never silently) when there is none. */
    static CCompiler compiler() {
        ClangDeviceProvider provider = (ClangDeviceProvider) DeviceRegistry.providers().get("CLANG");
        Optional<String> reason = provider.unavailableReason();
        if (reason.isPresent() && PRINTED.compareAndSet(false, true)) {
            System.out.println("CLANG tests skipped: " + reason.get());
        }
        Assumptions.assumeTrue(reason.isEmpty(), () -> "CLANG device unavailable: " + reason.orElse(""));
        return provider.compiler().orElseThrow();
    }
}

package dev.kiln.golden;


import java.util.List;
import java.util.Set;

/**
 * The devices every golden case runs on; a new device joins by adding its name here. A device this
 * machine cannot provide (CLANG without a C compiler) has its cases skipped with the reason, printed once.
 */
final class TestDevices {
    private TestDevices() {}

    /**
     * Every device, or those named by {@code -Dkiln.test.devices=CUDA,CPU} (to run one device's cases, on a
     * machine lent for a short time).
     */
    static final List<String> ALL = System.getProperty("kiln.test.devices") == null ? List.of("INTERP", "CPU", "CLANG", "CUDA")
            : List.of(System.getProperty("kiln.test.devices").split(","));

    /** Devices whose kernels are compiled up front in large batches (a compiler run costs a process). */
    static final Set<String> PRECOMPILED = Set.of("CLANG", "CUDA");

    /** Skips the calling test, never silently, when {@code device} is unavailable here. */
    static void assumeAvailable(String device) { dev.kiln.testing.DeviceAssumptions.assumeAvailable(device, "golden tests"); }
}

package dev.kiln.cli;

import dev.kiln.Tensor;
import dev.kiln.runtime.DeviceProvider;
import dev.kiln.runtime.DeviceRegistry;
import picocli.CommandLine.Command;

import java.util.Map;
import java.util.TreeMap;

/**
 * {@code kiln devices}: the device kinds Kiln knows, whether each is available here, and why not; the
 * kernel cache; the machine's FMA peak and streaming bandwidth (measured once, then cached).
 */
@Command(name = "devices", mixinStandardHelpOptions = true,
        description = "List the device kinds found, whether each is available here and why not, the default device, the kernel cache"
                + " and the machine's peak: f32 FMA GFLOP/s at each native vector width (all cores and one thread) and streaming"
                + " read GB/s, measured once (about 2 s) and cached.")
final class DevicesCommand extends KilnCommand {
    @Override
    int execute() {
        String dflt;
        String dfltProblem = null;
        try {
            dflt = Tensor.defaultDevice().spec().kind();
        } catch (RuntimeException e) { // a KILN_DEVICE naming an unknown or unavailable device: still list what there is
            dflt = null;
            dfltProblem = e.getMessage();
        }
        for (Map.Entry<String, DeviceProvider> e : new TreeMap<>(DeviceRegistry.providers()).entrySet()) {
            String status = e.getValue().unavailableReason().map(r -> "unavailable: " + r).orElse("available");
            out().printf("%-8s %s%s%n", e.getKey(), status, e.getKey().equals(dflt) ? " (default)" : "");
        }
        if (dfltProblem != null) out().println("default device: " + ErrorHandler.oneLine(dfltProblem));
        out().println("kernel cache: " + DeviceRegistry.kernelCacheRoot().map(Object::toString).orElse("off"));
        out().println(PeakLookup.describe(PeakLookup.lookup(err())));
        return 0;
    }
}

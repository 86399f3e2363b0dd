package dev.kiln.cli;

import dev.kiln.Tensor;
import dev.kiln.runtime.DeviceProvider;
import dev.kiln.runtime.DeviceRegistry;
import dev.kiln.runtime.KernelCache;
import picocli.CommandLine.Command;

import java.util.Map;
import java.util.concurrent.Callable;

/** {@code kiln devices}: the device kinds Kiln knows, whether each is available here, and why not. */
@Command(name = "devices", mixinStandardHelpOptions = true, description = "List the devices found and why any is unavailable.")
public final class DevicesCommand implements Callable<Integer> {
    @Override
    public Integer call() {
        String dflt = Tensor.defaultDevice().spec().kind();
        for (Map.Entry<String, DeviceProvider> e : DeviceRegistry.providers().entrySet()) {
            String status = e.getValue().unavailableReason().map(r -> "unavailable: " + r).orElse("available");
            System.out.printf("%-8s %s%s%n", e.getKey(), status, e.getKey().equals(dflt) ? " (default)" : "");
        }
        System.out.println("kernel cache: " + KernelCache.cacheRoot().map(Object::toString).orElse("off"));
        return 0;
    }
}

package dev.kiln.cli;

import dev.kiln.runtime.DeviceSpec;
import dev.kiln.Tensor;
import dev.kiln.runtime.Device;
import dev.kiln.runtime.DeviceRegistry;
import picocli.CommandLine.Option;

/** {@code --device D}: the device to run on (default: Kiln's default device). */
final class DeviceOption {
    @Option(names = "--device", paramLabel = "D",
            description = "Device to run on, KIND or KIND:INDEX, e.g. CPU, INTERP, CLANG (default: KILN_DEVICE or CPU; see 'kiln devices').")
    String device;

    /**
     * The chosen device.
     *
     * @throws IllegalArgumentException if the name is malformed, unknown, or names a device unavailable here (with the reason)
     */
    Device resolve() {
        if (device == null) return Tensor.defaultDevice();
        DeviceSpec spec = DeviceSpec.parse(device);
        try {
            return DeviceRegistry.get(spec);
        } catch (UnsupportedOperationException e) {
            throw new IllegalArgumentException("--device " + device + ": " + e.getMessage(), e);
        }
    }
}

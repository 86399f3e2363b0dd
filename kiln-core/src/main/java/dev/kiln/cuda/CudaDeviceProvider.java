package dev.kiln.cuda;

import dev.kiln.runtime.Device;
import dev.kiln.runtime.DeviceProvider;
import dev.kiln.runtime.DeviceSpec;

import java.util.Optional;

/**
 * The CUDA device kind as this machine has it. It looks (once, on first use) for the NVIDIA driver's
 * {@code libcuda.so.1}, initialises it and counts the GPUs, and for nvcc, which compiles the kernels; where
 * one is missing it says which. {@code CUDA:n} is GPU {@code n} in the driver's order ({@link CudaDevice}).
 */
public final class CudaDeviceProvider implements DeviceProvider {
    /** The driver library, as the NVIDIA driver installs it. */
    static final String DRIVER = "libcuda.so.1";
    /** {@code CUDA_ERROR_NO_DEVICE}: the driver is installed but sees no GPU. */
    private static final int CUDA_ERROR_NO_DEVICE = 100;

    private volatile Probe probe;

    /** What the probe found: the GPUs and nvcc, or why they cannot be used. */
    private record Probe(CudaDriver driver, int gpus, Nvcc nvcc, String reason) {}

    @Override
    public String kind() { return "CUDA"; }

    @Override
    public Optional<String> unavailableReason() {
        Probe p = probe();
        return p.reason == null ? Optional.empty() : Optional.of(p.reason);
    }

    /**
     * @throws UnsupportedOperationException if CUDA is unavailable here (with the reason)
     * @throws IllegalArgumentException      if the machine has no GPU of that index
     */
    @Override
    public Device create(DeviceSpec spec) {
        Probe p = probe();
        if (p.reason != null) throw new UnsupportedOperationException("device " + spec + " is not available: " + p.reason);
        if (spec.index() >= p.gpus) {
            throw new IllegalArgumentException("device " + spec + ": this machine has " + p.gpus + " NVIDIA GPU(s), CUDA:0 to CUDA:" + (p.gpus - 1));
        }
        return new CudaDevice(spec, p.driver, p.nvcc);
    }

    private Probe probe() {
        Probe p = probe;
        if (p == null) {
            synchronized (this) {
                if (probe == null) probe = detect();
                p = probe;
            }
        }
        return p;
    }

    private static Probe detect() {
        CudaDriver driver;
        int gpus;
        try {
            driver = CudaDriver.get();
            gpus = driver.deviceCount();
        } catch (CudaException e) {
            if (e.result() == CUDA_ERROR_NO_DEVICE) return new Probe(null, 0, null, "no NVIDIA GPU (" + DRIVER + " is installed, cuInit reports CUDA_ERROR_NO_DEVICE)");
            return new Probe(null, 0, null, e.result() < 0 ? e.getMessage() : "the NVIDIA driver failed to initialise: " + e.getMessage());
        } catch (RuntimeException | LinkageError e) {
            return new Probe(null, 0, null, "the NVIDIA driver " + DRIVER + " is not usable: " + e);
        }
        if (gpus == 0) return new Probe(null, 0, null, "no NVIDIA GPU (cuDeviceGetCount is 0)");
        Nvcc.Discovery nvcc = Nvcc.discover(System.getenv("PATH"));
        if (nvcc.nvcc().isEmpty()) return new Probe(null, gpus, null, gpus + " NVIDIA GPU(s) found, but kernels cannot be compiled: " + nvcc.reason());
        return new Probe(driver, gpus, nvcc.nvcc().get(), null);
    }
}

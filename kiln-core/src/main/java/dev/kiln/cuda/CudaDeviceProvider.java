package dev.kiln.cuda;

import dev.kiln.runtime.DeviceSpec;
import dev.kiln.runtime.Device;
import dev.kiln.runtime.DeviceProvider;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.util.Optional;

/**
 * The CUDA device kind as this machine has it. It looks (once, on first use) for the NVIDIA driver's
 * {@code libcuda.so.1}, initialises it ({@code cuInit}) and counts the GPUs
 * ({@code cuDeviceGetCount}), and says truthfully why no CUDA device can be created: no driver, no GPU,
 * or, where both exist, that kernel execution through the driver API is not part of Kiln yet. What
 * works without a GPU is compilation: {@link CudaCompiler} renders kernels as CUDA and compiles them to
 * PTX with nvcc.
 */
public final class CudaDeviceProvider implements DeviceProvider {
    /** The driver library, as the NVIDIA driver installs it. */
    static final String DRIVER = "libcuda.so.1";
    /** {@code CUDA_ERROR_NO_DEVICE}: the driver is installed but sees no GPU. */
    private static final int CUDA_ERROR_NO_DEVICE = 100;

    private volatile String reason;

    @Override
    public String kind() { return "CUDA"; }

    @Override
    public Optional<String> unavailableReason() { return Optional.of(reason()); }

    /** @throws UnsupportedOperationException always, with the reason (see the class comment) */
    @Override
    public Device create(DeviceSpec spec) {
        throw new UnsupportedOperationException("device " + spec + " is not available: " + reason());
    }

    private String reason() {
        String r = reason;
        if (r == null) {
            synchronized (this) {
                if (reason == null) reason = probe();
                r = reason;
            }
        }
        return r;
    }

    /** What the driver says about this machine's GPUs. */
    private static String probe() {
        SymbolLookup driver;
        try {
            driver = SymbolLookup.libraryLookup(DRIVER, Arena.global());
        } catch (IllegalArgumentException e) {
            return "no " + DRIVER + " found (no NVIDIA driver on this machine)";
        }
        Linker linker = Linker.nativeLinker();
        try (Arena arena = Arena.ofConfined()) {
            // CUresult cuInit(unsigned int flags); CUresult cuDeviceGetCount(int* count)
            MethodHandle cuInit = linker.downcallHandle(driver.findOrThrow("cuInit"),
                    FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.JAVA_INT));
            MethodHandle cuDeviceGetCount = linker.downcallHandle(driver.findOrThrow("cuDeviceGetCount"),
                    FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.ADDRESS));
            int init = (int) cuInit.invokeExact(0);
            if (init == CUDA_ERROR_NO_DEVICE) return "no NVIDIA GPU (" + DRIVER + " is installed, cuInit reports CUDA_ERROR_NO_DEVICE)";
            if (init != 0) return "the NVIDIA driver failed to initialise (cuInit returned CUresult " + init + ")";
            MemorySegment count = arena.allocate(ValueLayout.JAVA_INT);
            int got = (int) cuDeviceGetCount.invokeExact(count);
            if (got != 0) return "cuDeviceGetCount failed (CUresult " + got + ")";
            int gpus = count.get(ValueLayout.JAVA_INT, 0);
            if (gpus == 0) return "no NVIDIA GPU (cuDeviceGetCount is 0)";
            return gpus + " NVIDIA GPU(s) found, but Kiln cannot run kernels on them yet: execution through the driver API "
                    + "is not implemented (kernels do compile to PTX: dev.kiln.cuda.CudaCompiler)";
        } catch (Throwable t) {
            return "the NVIDIA driver " + DRIVER + " is not usable: " + t;
        }
    }
}

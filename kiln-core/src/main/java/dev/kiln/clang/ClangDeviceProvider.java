package dev.kiln.clang;

import dev.kiln.runtime.DeviceSpec;
import dev.kiln.runtime.Device;
import dev.kiln.runtime.DeviceProvider;

import java.util.Optional;

/**
 * Provides the CLANG device when the machine has a C compiler that builds kernels Kiln can load
 * ({@link CCompiler#discover}: clang, else gcc, else cc on the {@code PATH}); otherwise the device is
 * unavailable and {@link #unavailableReason()} says why. The compiler is looked for, and checked by
 * building, loading and calling a small kernel, once: on first use.
 */
public final class ClangDeviceProvider implements DeviceProvider {
    private final String searchPath;
    private volatile CCompiler.Discovery discovery;

    /** Looks for the compiler on this process's {@code PATH}. */
    public ClangDeviceProvider() { this(System.getenv("PATH")); }

    /** Looks for the compiler on {@code searchPath} (a {@code PATH} value; empty finds none). */
    ClangDeviceProvider(String searchPath) { this.searchPath = searchPath; }

    @Override
    public String kind() { return "CLANG"; }

    @Override
    public Optional<String> unavailableReason() {
        CCompiler.Discovery d = discovery();
        return d.compiler().isPresent() ? Optional.empty() : Optional.of(d.reason());
    }

    /** The compiler the device uses, if there is one. */
    public Optional<CCompiler> compiler() { return discovery().compiler(); }

    /**
     * @throws UnsupportedOperationException if the device is unavailable here (with the reason)
     */
    @Override
    public Device create(DeviceSpec spec) {
        CCompiler.Discovery d = discovery();
        return new ClangDevice(spec, d.compiler().orElseThrow(() ->
                new UnsupportedOperationException("device " + spec + " is not available: " + d.reason())));
    }

    private CCompiler.Discovery discovery() {
        CCompiler.Discovery d = discovery;
        if (d == null) {
            synchronized (this) {
                if (discovery == null) discovery = CCompiler.discover(searchPath);
                d = discovery;
            }
        }
        return d;
    }
}

package dev.kiln.runtime;


import dev.kiln.compile.KernelCache;
import java.util.Map;
import java.util.ServiceLoader;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Finds device providers once and creates each device lazily, once per {@link DeviceSpec}.
 */
public final class DeviceRegistry {
    private static final Map<String, DeviceProvider> PROVIDERS = new TreeMap<>();
    private static final Map<DeviceSpec, Device> DEVICES = new ConcurrentHashMap<>();

    static {
        for (DeviceProvider p : ServiceLoader.load(DeviceProvider.class, DeviceRegistry.class.getClassLoader())) {
            PROVIDERS.putIfAbsent(p.kind(), p);
        }
    }

    private DeviceRegistry() {}

    /** The registered providers by kind. */
    public static Map<String, DeviceProvider> providers() { return Map.copyOf(PROVIDERS); }

    /**
     * The device for {@code spec}, created on first use.
     *
     * @throws IllegalArgumentException if no provider has that kind (the message lists the known kinds)
     * @throws UnsupportedOperationException if the kind is known but unavailable here (with the reason)
     */
    public static Device get(DeviceSpec spec) {
        DeviceProvider p = PROVIDERS.get(spec.kind());
        if (p == null) {
            throw new IllegalArgumentException("unknown device '" + spec + "'; registered devices: " + PROVIDERS.keySet());
        }
        p.unavailableReason().ifPresent(reason -> {
            throw new UnsupportedOperationException("device " + spec + " is not available: " + reason);
        });
        return DEVICES.computeIfAbsent(spec, p::create);
    }

    /** As {@link #get(DeviceSpec)} for a device name such as {@code "INTERP"}. */
    public static Device get(String name) { return get(DeviceSpec.parse(name)); }

    /**
     * The folder where compiling devices keep their kernel caches ({@code kiln.cache.dir} /
     * {@code KILN_CACHE_DIR}, else {@code ~/.cache/kiln}), or empty when the disk cache is off.
     */
    public static java.util.Optional<java.nio.file.Path> kernelCacheRoot() { return KernelCache.cacheRoot(); }
}

package dev.kiln.cuda;

import dev.kiln.compile.ContentStore;

import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * PTX modules by content ({@link ContentStore}, folder {@code cuda}): what the CUDA kernel cache's
 * entries point to, kept in this process once read.
 */
final class PtxModules {
    private static final ContentStore STORE = new ContentStore("cuda", ".ptx", "kiln-ptx-module:", "PTX module");
    /** Modules of this process (PTX text is small next to the kernels' programs it was compiled from). */
    private static final Map<String, PtxModule> LOADED = new ConcurrentHashMap<>();

    private PtxModules() {}

    /** Keeps {@code ptx} in this process, stores it on disk when the cache is on, and returns the reference to it. */
    static byte[] publish(String ptx) {
        byte[] bytes = ptx.getBytes(StandardCharsets.UTF_8);
        byte[] reference = STORE.publish(bytes);
        String sha = STORE.hashOf(reference);
        LOADED.putIfAbsent(sha, new PtxModule(sha, ptx));
        return reference;
    }

    /**
     * The module a reference names: from this process, or read from disk and checked.
     *
     * @throws IllegalArgumentException if the reference is malformed or its module is missing or damaged
     */
    static PtxModule resolve(byte[] reference) {
        String sha = STORE.hashOf(reference);
        PtxModule known = LOADED.get(sha);
        if (known != null) return known;
        byte[] bytes = STORE.read(sha);
        return LOADED.computeIfAbsent(sha, s -> new PtxModule(s, new String(bytes, StandardCharsets.UTF_8)));
    }
}

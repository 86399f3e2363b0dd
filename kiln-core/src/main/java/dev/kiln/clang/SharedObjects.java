package dev.kiln.clang;

import dev.kiln.compile.ContentStore;

/**
 * Shared objects by content ({@link ContentStore}, folder {@code clang}): what the CLANG device's kernel
 * cache entries point to, loaded once per process.
 */
final class SharedObjects {
    private static final ContentStore STORE = new ContentStore("clang", ".so", "kiln-c-shared-object:", "shared object");

    private SharedObjects() {}

    /** Loads {@code sharedObject}, stores it on disk when the cache is on, and returns the reference to it. */
    static byte[] publish(byte[] sharedObject) {
        NativeLibrary.load(sharedObject);
        return STORE.publish(sharedObject);
    }

    /**
     * The loaded library a reference names: loaded in this process already, or read from disk and checked.
     *
     * @throws IllegalArgumentException if the reference is malformed or its object is missing or damaged
     */
    static NativeLibrary resolve(byte[] reference) {
        String sha = STORE.hashOf(reference);
        return NativeLibrary.loaded(sha).orElseGet(() -> NativeLibrary.load(STORE.read(sha)));
    }
}

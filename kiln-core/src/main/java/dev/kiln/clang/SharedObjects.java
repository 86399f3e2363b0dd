package dev.kiln.clang;

import dev.kiln.runtime.CacheEviction;
import dev.kiln.runtime.KernelCache;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * Shared objects by content: what the CLANG device's kernel cache entries point to. A batch's kernels
 * share one shared object, so an entry holds a reference (the object's SHA-256), not the object: one
 * copy per object on disk however many kernels it holds. Objects live in the {@code clang} folder of
 * {@link KernelCache#cacheRoot()}, named by their hash, published atomically like kernel entries, and
 * checked against their name when read; with the disk cache off they live only in this process.
 *
 * <p>A reference to an object that is gone or damaged fails to load, and the kernel cache then discards
 * the entry and compiles the kernel again. Disk trouble never fails a compilation (warned once).
 */
final class SharedObjects {
    private static final String PREFIX = "kiln-c-shared-object:";
    private static final Optional<Path> FOLDER = KernelCache.cacheRoot().map(root -> root.resolve("clang"));
    private static final AtomicBoolean WARNED = new AtomicBoolean();

    private SharedObjects() {}

    /** Loads {@code sharedObject}, stores it on disk when the cache is on, and returns the reference to it. */
    static byte[] publish(byte[] sharedObject) {
        String sha = ExternalCommand.sha256(sharedObject);
        NativeLibrary.load(sharedObject);
        FOLDER.ifPresent(dir -> {
            Path file = dir.resolve(sha + ".so");
            if (Files.exists(file)) return;
            Path tmp = null;
            try {
                Files.createDirectories(dir);
                tmp = Files.createTempFile(dir, sha.substring(0, 16) + ".", ".tmp");
                Files.write(tmp, sharedObject);
                Files.move(tmp, file, StandardCopyOption.ATOMIC_MOVE);
            } catch (IOException | UnsupportedOperationException | SecurityException e) {
                if (tmp != null) tmp.toFile().delete();
                if (WARNED.compareAndSet(false, true)) {
                    System.getLogger(SharedObjects.class.getName()).log(System.Logger.Level.WARNING,
                            "kiln: cannot store compiled kernels in " + dir + " (" + e + "); they are not kept across processes");
                }
            }
        });
        return (PREFIX + sha).getBytes(StandardCharsets.US_ASCII);
    }

    /**
     * The loaded library a reference names: loaded in this process already, or read from disk and checked.
     *
     * @throws IllegalArgumentException if the reference is malformed or its object is missing or damaged
     */
    static NativeLibrary resolve(byte[] reference) {
        String text = new String(reference, StandardCharsets.US_ASCII);
        if (!text.startsWith(PREFIX) || !text.substring(PREFIX.length()).matches("[0-9a-f]{64}")) {
            throw new IllegalArgumentException("not a shared object reference: " + text.substring(0, Math.min(80, text.length())));
        }
        String sha = text.substring(PREFIX.length());
        Optional<NativeLibrary> loaded = NativeLibrary.loaded(sha);
        if (loaded.isPresent()) return loaded.get();
        Path file = FOLDER.map(dir -> dir.resolve(sha + ".so"))
                .orElseThrow(() -> new IllegalArgumentException("shared object " + sha + " is not in this process and the disk cache is off"));
        byte[] bytes;
        try {
            bytes = Files.readAllBytes(file);
        } catch (NoSuchFileException e) {
            throw new IllegalArgumentException("shared object " + file + " is missing");
        } catch (IOException e) {
            throw new IllegalArgumentException("cannot read shared object " + file + ": " + e);
        }
        if (!ExternalCommand.sha256(bytes).equals(sha)) {
            file.toFile().delete(); // damaged: recompiling publishes it again
            throw new IllegalArgumentException("shared object " + file + " does not match its hash");
        }
        CacheEviction.touch(file);
        return NativeLibrary.load(bytes);
    }
}

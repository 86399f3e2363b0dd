package dev.kiln.compile;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.HexFormat;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * Compiler products stored by content: a batch of kernels compiles to one artifact (a CLANG shared
 * object, a CUDA PTX module), and each kernel's cache entry holds a reference to it (its SHA-256), not
 * the artifact, so there is one copy per artifact on disk however many kernels it holds. Artifacts live
 * in a folder of {@link KernelCache#cacheRoot()}, named by their hash, published atomically like kernel
 * entries and checked against their name when read; with the disk cache off there is no folder, and
 * only artifacts of this process can be resolved.
 *
 * <p>A reference to an artifact that is gone (evicted, deleted) or damaged fails to resolve with an
 * {@link IllegalArgumentException}; the kernel cache then discards the entry and compiles again. Disk
 * trouble never fails a compilation (warned once per store).
 */
public final class ContentStore {
    private final String what;
    private final String prefix;
    private final String extension;
    private final Optional<Path> folder;
    private final AtomicBoolean warned = new AtomicBoolean();

    /**
     * @param folder    the folder under the cache root (a plain name)
     * @param extension the file name extension, with its dot
     * @param prefix    what a reference starts with, before the hash (part of the cache entries' format)
     * @param what      what the artifacts are, for messages ("shared object")
     */
    public ContentStore(String folder, String extension, String prefix, String what) {
        this.what = what;
        this.prefix = prefix;
        this.extension = extension;
        this.folder = KernelCache.cacheRoot().map(root -> root.resolve(folder));
    }

    /** The SHA-256 of {@code bytes} in lower-case hex. */
    public static String sha256(byte[] bytes) { return HexFormat.of().formatHex(CompilerIdentity.sha256(bytes)); }

    /** The SHA-256 of {@code text}'s UTF-8 bytes in lower-case hex. */
    public static String sha256(String text) { return sha256(text.getBytes(StandardCharsets.UTF_8)); }

    /** Stores {@code artifact} on disk when the cache is on, and returns the reference a cache entry keeps. */
    public byte[] publish(byte[] artifact) {
        String sha = sha256(artifact);
        folder.ifPresent(dir -> {
            Path file = dir.resolve(sha + extension);
            if (Files.exists(file)) return;
            Path tmp = null;
            try {
                Files.createDirectories(dir);
                tmp = Files.createTempFile(dir, sha.substring(0, 16) + ".", ".tmp");
                Files.write(tmp, artifact);
                Files.move(tmp, file, StandardCopyOption.ATOMIC_MOVE);
            } catch (IOException | UnsupportedOperationException | SecurityException e) {
                if (tmp != null) tmp.toFile().delete();
                if (warned.compareAndSet(false, true)) {
                    System.getLogger(ContentStore.class.getName()).log(System.Logger.Level.WARNING,
                            "kiln: cannot store " + what + "s in " + dir + " (" + e + "); they are not kept across processes");
                }
            }
        });
        return (prefix + sha).getBytes(StandardCharsets.US_ASCII);
    }

    /**
     * The hash a reference names.
     *
     * @throws IllegalArgumentException if {@code reference} is not one of this store's references
     */
    public String hashOf(byte[] reference) {
        String text = new String(reference, StandardCharsets.US_ASCII);
        if (!text.startsWith(prefix) || !text.substring(prefix.length()).matches("[0-9a-f]{64}")) {
            throw new IllegalArgumentException("not a " + what + " reference: " + text.substring(0, Math.min(80, text.length())));
        }
        return text.substring(prefix.length());
    }

    /**
     * The artifact stored under {@code sha}, read from disk and checked against its hash (a damaged file
     * is deleted); reading it marks it used for {@link CacheEviction}.
     *
     * @throws IllegalArgumentException if the disk cache is off or the artifact is missing, unreadable or damaged
     */
    public byte[] read(String sha) {
        Path file = folder.map(dir -> dir.resolve(sha + extension))
                .orElseThrow(() -> new IllegalArgumentException(what + " " + sha + " is not in this process and the disk cache is off"));
        byte[] bytes;
        try {
            bytes = Files.readAllBytes(file);
        } catch (NoSuchFileException e) {
            throw new IllegalArgumentException(what + " " + file + " is missing");
        } catch (IOException e) {
            throw new IllegalArgumentException("cannot read " + what + " " + file + ": " + e);
        }
        if (!sha256(bytes).equals(sha)) {
            file.toFile().delete(); // damaged: recompiling publishes it again
            throw new IllegalArgumentException(what + " " + file + " does not match its hash");
        }
        CacheEviction.touch(file);
        return bytes;
    }
}

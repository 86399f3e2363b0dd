package dev.kiln.cuda;

import dev.kiln.clang.ExternalCommand;
import dev.kiln.runtime.CacheEviction;
import dev.kiln.runtime.KernelCache;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * PTX modules by content: what the CUDA kernel cache's entries point to. A batch's kernels share one
 * module, so an entry holds a reference (the module's SHA-256), not the module: one copy per module on
 * disk however many kernels it holds (as the CLANG device's shared objects). Modules live in the
 * {@code cuda} folder of {@link KernelCache#cacheRoot()}, named by their hash, published atomically,
 * and checked against their name when read; with the disk cache off they live only in this process.
 */
final class PtxModules {
    private static final String PREFIX = "kiln-ptx-module:";
    private static final Optional<Path> FOLDER = KernelCache.cacheRoot().map(root -> root.resolve("cuda"));
    private static final AtomicBoolean WARNED = new AtomicBoolean();
    /** Modules of this process (PTX text is small next to the kernels' programs it was compiled from). */
    private static final Map<String, PtxModule> LOADED = new ConcurrentHashMap<>();

    private PtxModules() {}

    /** Keeps {@code ptx} in this process, stores it on disk when the cache is on, and returns the reference to it. */
    static byte[] publish(String ptx) {
        byte[] bytes = ptx.getBytes(StandardCharsets.UTF_8);
        String sha = ExternalCommand.sha256(bytes);
        LOADED.putIfAbsent(sha, new PtxModule(sha, ptx));
        FOLDER.ifPresent(dir -> {
            Path file = dir.resolve(sha + ".ptx");
            if (Files.exists(file)) return;
            Path tmp = null;
            try {
                Files.createDirectories(dir);
                tmp = Files.createTempFile(dir, sha.substring(0, 16) + ".", ".tmp");
                Files.write(tmp, bytes);
                Files.move(tmp, file, StandardCopyOption.ATOMIC_MOVE);
            } catch (IOException | UnsupportedOperationException | SecurityException e) {
                if (tmp != null) tmp.toFile().delete();
                if (WARNED.compareAndSet(false, true)) {
                    System.getLogger(PtxModules.class.getName()).log(System.Logger.Level.WARNING,
                            "kiln: cannot store PTX modules in " + dir + " (" + e + "); they are not kept across processes");
                }
            }
        });
        return (PREFIX + sha).getBytes(StandardCharsets.US_ASCII);
    }

    /**
     * The module a reference names: from this process, or read from disk and checked.
     *
     * @throws IllegalArgumentException if the reference is malformed or its module is missing or damaged
     */
    static PtxModule resolve(byte[] reference) {
        String text = new String(reference, StandardCharsets.US_ASCII);
        if (!text.startsWith(PREFIX) || !text.substring(PREFIX.length()).matches("[0-9a-f]{64}")) {
            throw new IllegalArgumentException("not a PTX module reference: " + text.substring(0, Math.min(80, text.length())));
        }
        String sha = text.substring(PREFIX.length());
        PtxModule known = LOADED.get(sha);
        if (known != null) return known;
        Path file = FOLDER.map(dir -> dir.resolve(sha + ".ptx"))
                .orElseThrow(() -> new IllegalArgumentException("PTX module " + sha + " is not in this process and the disk cache is off"));
        byte[] bytes;
        try {
            bytes = Files.readAllBytes(file);
        } catch (NoSuchFileException e) {
            throw new IllegalArgumentException("PTX module " + file + " is missing");
        } catch (IOException e) {
            throw new IllegalArgumentException("cannot read PTX module " + file + ": " + e);
        }
        if (!ExternalCommand.sha256(bytes).equals(sha)) {
            file.toFile().delete(); // damaged: recompiling publishes it again
            throw new IllegalArgumentException("PTX module " + file + " does not match its hash");
        }
        CacheEviction.touch(file);
        return LOADED.computeIfAbsent(sha, s -> new PtxModule(s, new String(bytes, StandardCharsets.UTF_8)));
    }
}

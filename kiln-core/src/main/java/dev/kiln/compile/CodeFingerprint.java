package dev.kiln.compile;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.URISyntaxException;
import java.net.URL;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.CodeSource;
import java.security.MessageDigest;
import java.util.Enumeration;
import java.util.HexFormat;
import java.util.Optional;
import java.util.TreeMap;
import java.util.stream.Stream;
import java.util.zip.CRC32;
import java.util.zip.ZipEntry;
import java.util.zip.ZipFile;

/**
 * A fingerprint of the Kiln classes this process runs: every {@code dev/kiln/**.class} file next to a
 * given class (in its jar, or under its class folder), by name, size and CRC-32 of the contents. A cache
 * of results that Kiln's own code computes (lowered and optimised programs, generated sources) keys its
 * entries by it, so that another Kiln build — another branch, a rebuilt jar with a changed heuristic —
 * never reads them, while an identical rebuild does.
 *
 * <p>Cheap enough for the first compilation of a process (20–40 ms cold for a jar): a jar's CRCs come
 * from its central directory without decompressing anything; a class folder's files are read once
 * (CRC-32 is native).
 */
public final class CodeFingerprint {
    private static final String PREFIX = "dev/kiln/";

    private CodeFingerprint() {}

    /**
     * The fingerprint of the Kiln classes loaded from the same jar or folder as {@code anchor}, or empty
     * when their location is not a readable jar or folder (a custom class loader, a runtime image).
     */
    public static Optional<String> of(Class<?> anchor) {
        CodeSource source = anchor.getProtectionDomain().getCodeSource();
        URL location = source == null ? null : source.getLocation();
        if (location == null || !"file".equals(location.getProtocol())) return Optional.empty();
        try {
            return of(Path.of(location.toURI()));
        } catch (URISyntaxException | IllegalArgumentException e) {
            return Optional.empty();
        }
    }

    /** The fingerprint of the Kiln classes in the jar or class folder {@code location}, or empty when it is neither. */
    static Optional<String> of(Path location) {
        // name -> {size, CRC}, in name order; fed to the digest as bytes, no text built: this runs once per
        // process, before the JIT has compiled anything
        TreeMap<String, long[]> classes = new TreeMap<>();
        try {
            if (Files.isDirectory(location)) {
                Path root = location.resolve(PREFIX);
                if (!Files.isDirectory(root)) return Optional.empty();
                try (Stream<Path> files = Files.walk(root)) {
                    for (Path f : (Iterable<Path>) files::iterator) {
                        String name = location.relativize(f).toString().replace('\\', '/');
                        if (!name.endsWith(".class")) continue;
                        byte[] bytes = Files.readAllBytes(f);
                        CRC32 crc = new CRC32();
                        crc.update(bytes);
                        classes.put(name, new long[] {bytes.length, crc.getValue()});
                    }
                }
            } else if (Files.isRegularFile(location)) {
                try (ZipFile jar = new ZipFile(location.toFile())) {
                    for (Enumeration<? extends ZipEntry> e = jar.entries(); e.hasMoreElements(); ) {
                        ZipEntry entry = e.nextElement();
                        String name = entry.getName();
                        if (name.startsWith(PREFIX) && name.endsWith(".class")) classes.put(name, new long[] {entry.getSize(), entry.getCrc()});
                    }
                }
            } else {
                return Optional.empty();
            }
        } catch (IOException | UncheckedIOException e) {
            return Optional.empty();
        }
        if (classes.isEmpty()) return Optional.empty();
        MessageDigest digest = CompilerIdentity.sha256();
        ByteBuffer numbers = ByteBuffer.allocate(2 * Long.BYTES);
        for (var c : classes.entrySet()) {
            digest.update(c.getKey().getBytes(StandardCharsets.UTF_8));
            digest.update(numbers.clear().putLong(c.getValue()[0]).putLong(c.getValue()[1]).array());
        }
        return Optional.of(HexFormat.of().formatHex(digest.digest()));
    }
}

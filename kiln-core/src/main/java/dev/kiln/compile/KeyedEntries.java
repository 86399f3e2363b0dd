package dev.kiln.compile;

import java.io.IOException;
import java.io.Reader;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.nio.file.AtomicMoveNotSupportedException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.TreeMap;

/**
 * Small facts a process learned about this machine (its measured peak, its C compiler), kept as one properties file
 * per key in a folder under the {@linkplain KernelCache#cacheRoot() cache root}, so the next process reads them instead
 * of finding them out again.
 *
 * <p>An entry repeats its key ({@code key.NAME}) and the format it was written in: one of another key (a copied or
 * shared folder), another format, or one that cannot be read is absent, never an error. Entries are written to a
 * temporary file and moved into place, so a reader in another process sees a whole entry or none; a folder that cannot
 * be written leaves the facts to this process.
 */
public final class KeyedEntries {
    private final Path folder;
    private final int format;

    /**
     * @param folder where entries live, or null for none (the disk cache off)
     * @param format the entries' format: an entry written in another is absent
     */
    public KeyedEntries(Path folder, int format) {
        this.folder = folder;
        this.format = format;
    }

    /** Entries in {@code name} under the cache root, or none when the disk cache is off. */
    public static KeyedEntries underCacheRoot(String name, int format) {
        return new KeyedEntries(KernelCache.cacheRoot().map(root -> root.resolve(name)).orElse(null), format);
    }

    /** The file of {@code key}'s entry, or empty with no folder. */
    public Optional<Path> file(Map<String, String> key) {
        return Optional.ofNullable(folder).map(f -> f.resolve(ContentStore.sha256(new TreeMap<>(key).toString()).substring(0, 16) + ".properties"));
    }

    /** {@code key}'s entry, without the key and format lines; empty when there is none, or it is foreign or unreadable. */
    public Optional<Properties> read(Map<String, String> key) {
        Optional<Path> file = file(key).filter(Files::isRegularFile);
        if (file.isEmpty()) return Optional.empty();
        Properties p = new Properties();
        try (Reader r = Files.newBufferedReader(file.get(), StandardCharsets.UTF_8)) {
            p.load(r);
        } catch (IOException | RuntimeException e) { // corrupt or unreadable: found out again
            return Optional.empty();
        }
        if (!Integer.toString(format).equals(p.getProperty("format"))) return Optional.empty();
        for (Map.Entry<String, String> e : key.entrySet()) {
            if (!e.getValue().equals(p.getProperty("key." + e.getKey()))) return Optional.empty();
        }
        Properties values = new Properties();
        p.stringPropertyNames().stream().filter(n -> !n.equals("format") && !n.startsWith("key.")).forEach(n -> values.setProperty(n, p.getProperty(n)));
        return Optional.of(values);
    }

    /** Stores {@code values} as {@code key}'s entry (replacing one there), or nothing when the folder cannot be written. */
    public void write(Map<String, String> key, Properties values, String comment) {
        Optional<Path> file = file(key);
        if (file.isEmpty()) return;
        Properties p = new Properties();
        key.forEach((k, v) -> p.setProperty("key." + k, v));
        p.setProperty("format", Integer.toString(format));
        values.stringPropertyNames().forEach(n -> p.setProperty(n, values.getProperty(n)));
        Path tmp = null;
        try {
            Files.createDirectories(folder);
            tmp = Files.createTempFile(folder, file.get().getFileName() + ".", ".tmp");
            try (Writer w = Files.newBufferedWriter(tmp, StandardCharsets.UTF_8)) {
                p.store(w, comment);
            }
            try {
                Files.move(tmp, file.get(), StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
            } catch (AtomicMoveNotSupportedException e) {
                Files.move(tmp, file.get(), StandardCopyOption.REPLACE_EXISTING);
            }
        } catch (IOException | UnsupportedOperationException | SecurityException e) {
            // the facts stay with this process; the next one finds them out again
            if (tmp != null) {
                try {
                    Files.deleteIfExists(tmp);
                } catch (IOException ignored) {
                    // nothing more to do: the folder is already failing us
                }
            }
        }
    }
}

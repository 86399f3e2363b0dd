package dev.kiln.compile;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.System.Logger.Level;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.attribute.BasicFileAttributes;
import java.nio.file.attribute.FileTime;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.UnaryOperator;
import java.util.stream.Stream;

/**
 * Keeps the on-disk caches under {@link KernelCache#cacheRoot()} within a size limit, least recently
 * used first. Every Kiln build, compiler and device adds entries of its own (a program cache entry is
 * keyed by the fingerprint of Kiln's classes), so without eviction the folder only grows.
 *
 * <p>The limit is the system property {@value #LIMIT_PROPERTY}, else the environment variable
 * {@value #LIMIT_ENV} (bytes, with an optional {@code K}, {@code M} or {@code G} suffix), else
 * {@value #DEFAULT_LIMIT_TEXT}; a file counts as the whole 4 KiB blocks it occupies. Once per process, when the first disk cache opens, and
 * at most once per {@link #PASS_INTERVAL} across processes ({@link #claimPass}), a background thread sums the cache's files; above the limit it deletes the least recently used ones until the total is
 * {@link #TARGET_SHARE} of the limit, so the next processes find room. Reading an entry from disk marks
 * it used ({@link #touch}). Temporary files of writers that died are deleted after {@link #STALE_TEMP}.
 *
 * <p>Deleting is always safe: a reader that loses an entry to eviction (in this or another process)
 * sees a miss or a reference it cannot resolve, and compiles and republishes the kernel.
 */
public final class CacheEviction {
    /** System property with the cache size limit in bytes (suffix K, M or G allowed). */
    public static final String LIMIT_PROPERTY = "kiln.cache.maxBytes";
    /** Environment variable with the cache size limit; the system property wins. */
    public static final String LIMIT_ENV = "KILN_CACHE_MAX_BYTES";
    static final String DEFAULT_LIMIT_TEXT = "1G";
    /** Eviction stops when the total is down to this share of the limit. */
    static final double TARGET_SHARE = 0.8;
    /** Age after which a writer's temporary file is taken as abandoned. */
    static final Duration STALE_TEMP = Duration.ofHours(1);
    private static final long BLOCK = 4096;

    private static final System.Logger LOG = System.getLogger("dev.kiln.cache");
    private static final AtomicBoolean STARTED = new AtomicBoolean();

    /** What one eviction pass found and did. */
    public record Result(long bytesBefore, long bytesAfter, int filesDeleted) {}

    private CacheEviction() {}

    /** Starts the background pass over {@link KernelCache#cacheRoot()} unless this process already did. */
    static void startOnce() {
        if (!STARTED.compareAndSet(false, true)) return;
        KernelCache.cacheRoot().ifPresent(root -> {
            long limit;
            try {
                limit = limit(System::getProperty, System::getenv);
            } catch (IllegalArgumentException e) {
                LOG.log(Level.WARNING, "kiln: " + e.getMessage() + "; the cache is not size-limited in this process");
                return;
            }
            if (!claimPass(root, Instant.now())) return;
            Thread.ofPlatform().daemon().name("kiln-cache-eviction").start(() -> {
                try {
                    Result r = evict(root, limit, Instant.now());
                    if (r.filesDeleted() > 0) {
                        LOG.log(Level.INFO, "kiln: cache " + root + " held " + r.bytesBefore() + " bytes, above its limit of " + limit
                                + "; deleted the " + r.filesDeleted() + " least recently used files, " + r.bytesAfter() + " bytes remain");
                    }
                } catch (IOException | UncheckedIOException e) {
                    LOG.log(Level.WARNING, "kiln: cannot trim the cache " + root + " (" + e + ")");
                }
            });
        });
    }

    /**
     * Whether this process should make the pass: none started in the last {@link #PASS_INTERVAL} (by the
     * modification time of {@value #STAMP} in {@code root}, which a pass touches when it starts). A pass walks every
     * file of the cache, and a server restarting, or a test run starting hundreds of JVMs, would otherwise walk them
     * all each time while it prepares its first plan (200,000 files: 0.6 s of a core).
     */
    static boolean claimPass(Path root, Instant now) {
        Path stamp = root.resolve(STAMP);
        try {
            if (Files.exists(stamp) && Files.getLastModifiedTime(stamp).toInstant().isAfter(now.minus(PASS_INTERVAL))) return false;
            Files.createDirectories(root);
            Files.write(stamp, new byte[0]);
            Files.setLastModifiedTime(stamp, FileTime.from(now));
            return true;
        } catch (IOException | UncheckedIOException e) {
            return true; // an unwritable stamp must not stop the cache from being trimmed
        }
    }

    /** The file whose modification time records the last pass. */
    static final String STAMP = "eviction.stamp";
    /** Passes over the cache are at least this far apart, across processes. */
    static final Duration PASS_INTERVAL = Duration.ofHours(1);

    /**
     * The configured limit in bytes.
     *
     * @throws IllegalArgumentException if the configured value is not a positive size
     */
    static long limit(UnaryOperator<String> properties, UnaryOperator<String> environment) {
        String text = properties.apply(LIMIT_PROPERTY);
        String from = LIMIT_PROPERTY;
        if (text == null || text.isBlank()) {
            text = environment.apply(LIMIT_ENV);
            from = LIMIT_ENV;
        }
        if (text == null || text.isBlank()) {
            text = DEFAULT_LIMIT_TEXT;
            from = "the default";
        }
        String t = text.strip().toUpperCase(java.util.Locale.ROOT);
        long unit = switch (t.charAt(t.length() - 1)) {
            case 'K' -> 1L << 10;
            case 'M' -> 1L << 20;
            case 'G' -> 1L << 30;
            default -> 1;
        };
        try {
            long n = Long.parseLong(unit == 1 ? t : t.substring(0, t.length() - 1));
            if (n > 0) return Math.multiplyExact(n, unit);
        } catch (NumberFormatException | ArithmeticException e) {
            // reported below
        }
        throw new IllegalArgumentException(from + " must be a positive size in bytes such as 500M or 2G, got '" + text + "'");
    }

    /**
     * One pass over {@code root}: deletes temporary files older than {@link #STALE_TEMP}, then, if the
     * other files hold more than {@code limit} bytes, the least recently modified ones until they hold at
     * most {@link #TARGET_SHARE} of it.
     */
    static Result evict(Path root, long limit, Instant now) throws IOException {
        if (!Files.isDirectory(root)) return new Result(0, 0, 0);
        record Entry(Path path, long size, FileTime used) {}
        List<Entry> entries = new ArrayList<>();
        int deleted = 0;
        try (Stream<Path> files = Files.walk(root)) {
            for (Path p : (Iterable<Path>) files::iterator) {
                BasicFileAttributes a;
                try {
                    a = Files.readAttributes(p, BasicFileAttributes.class);
                } catch (NoSuchFileException gone) {
                    continue; // another process removed or renamed it meanwhile
                }
                if (!a.isRegularFile()) continue;
                if (p.getFileName().toString().endsWith(".tmp")) {
                    if (a.lastModifiedTime().toInstant().isBefore(now.minus(STALE_TEMP)) && Files.deleteIfExists(p)) deleted++;
                    continue;
                }
                entries.add(new Entry(p, stored(a.size()), a.lastModifiedTime()));
            }
        }
        long before = 0;
        for (Entry e : entries) before += e.size();
        long total = before;
        if (total > limit) {
            entries.sort(Comparator.comparing(Entry::used));
            long target = (long) (limit * TARGET_SHARE);
            for (Entry e : entries) {
                if (total <= target) break;
                if (Files.deleteIfExists(e.path())) deleted++;
                total -= e.size();
            }
        }
        return new Result(before, total, deleted);
    }

    /** The bytes a file of {@code size} occupies: whole 4 KiB blocks, as file systems store small files. */
    static long stored(long size) { return (size + BLOCK - 1) / BLOCK * BLOCK; }

    /** Marks a cache file as used now, so eviction keeps it longer; a file that cannot be touched is left as it is. */
    public static void touch(Path file) {
        try {
            Files.setLastModifiedTime(file, FileTime.from(Instant.now()));
        } catch (IOException | UnsupportedOperationException ignored) {
            // a read-only cache still serves its entries; they are just evicted by age
        }
    }
}

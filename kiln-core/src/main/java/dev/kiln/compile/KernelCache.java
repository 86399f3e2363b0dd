package dev.kiln.compile;

import java.io.IOException;
import java.lang.System.Logger.Level;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.InvalidPathException;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.security.MessageDigest;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.LongAdder;
import java.util.function.BiConsumer;
import java.util.function.UnaryOperator;

/**
 * Compiled kernels, deduplicated in memory for the whole process and kept on disk across processes.
 * One instance serves one device (CPU Java classes, shared objects, PTX or cubins alike): compilers
 * produce binaries as bytes, and the device's {@link Loader} turns bytes into its program type
 * {@code P}.
 *
 * <p><b>Memory.</b> Kernels are keyed by an AST key (any object with value equality whose value
 * decides the source, e.g. a kernel program without its name) together with the
 * {@link CompilerIdentity}. A kernel requested by several threads at once is compiled once; the others
 * wait for it. A failed compilation is not remembered: its exception reaches every caller waiting for
 * that kernel, and the next request compiles again.
 *
 * <p><b>Disk.</b> An entry's key is the SHA-256 of the identity's fingerprint and the source, stored
 * as {@code <dir>/<first 2 hex digits>/<other 62>.bin}. An entry holds a magic number, the format
 * version, the payload length, the payload's SHA-256 and the payload. Entries are written to a
 * temporary file in the same folder and renamed into place atomically, so readers (in any process)
 * see a whole entry or none, and concurrent writers of one key simply replace each other's identical
 * work. An entry that fails any check (or that the loader rejects) is never used: it is deleted, the
 * kernel is recompiled and republished, and a warning is logged once per process. Disk trouble never
 * fails a compilation: an unreadable entry is a miss, and after the first failed write the cache
 * stops writing (both warned once per process). Compilers whose output format can change without a
 * change of source (a device's payload layout, say) must say so in their identity.
 *
 * <p><b>Location.</b> {@link #cacheRoot()}: system property {@value #DIR_PROPERTY}, else the
 * environment variable {@value #DIR_ENV}, else {@code $XDG_CACHE_HOME/kiln}, else
 * {@code ~/.cache/kiln}; the value {@value #OFF} turns the disk cache off. Kernels live in its
 * {@code kernels} folder, leaving the root to other caches (autotuning results, and other compiler
 * products in folders of their own: {@link #inCacheFolder}). {@link CacheEviction} keeps the root within a
 * size limit, least recently used entries first.
 *
 * @param <P> the device's loaded program type
 */
public final class KernelCache<P> {
    /** System property naming the cache root, or {@value #OFF}. */
    public static final String DIR_PROPERTY = "kiln.cache.dir";
    /** Environment variable naming the cache root, or {@value #OFF}; the system property wins. */
    public static final String DIR_ENV = "KILN_CACHE_DIR";
    /** The location value that turns the disk cache off. */
    public static final String OFF = "off";

    static final int FORMAT_VERSION = 1;
    private static final byte[] MAGIC = {'K', 'L', 'N', 'C'};
    /** Magic, format version (int), payload length (long), payload SHA-256. */
    static final int HEADER_BYTES = MAGIC.length + Integer.BYTES + Long.BYTES + 32;

    /** Turns one kernel's source into its binary; throws (unchecked) when the source does not compile. */
    @FunctionalInterface
    public interface Compiler {
        byte[] compile(String source);
    }

    /**
     * Turns many kernels into binaries in one go (one compiler run for many kernels is far cheaper
     * than one run each). It receives only the requests found neither in memory nor on disk.
     */
    @FunctionalInterface
    public interface BatchCompiler<K> {
        /** One binary per request, in the requests' order. */
        List<byte[]> compile(List<Request<K>> misses);
    }

    /** Turns a binary (fresh from a compiler, or read back from disk) into a runnable program. */
    @FunctionalInterface
    public interface Loader<P> {
        P load(byte[] binary);

        /**
         * Whether {@link #load} may run on several threads at once, for different binaries: the entries of a batch are
         * then read from disk side by side. Loaders that touch process-wide native state (a shared object, a GPU
         * context) keep the default, one entry at a time.
         */
        default boolean loadsConcurrently() { return false; }

        /**
         * {@code loader}, declared safe to run side by side ({@link #loadsConcurrently}): decoding a program or
         * defining a hidden class. ResNet-50's prepare with a warm cache read about 150 entries of each layer in a row.
         */
        static <P> Loader<P> concurrent(Loader<P> loader) {
            return new Loader<>() {
                @Override
                public P load(byte[] binary) { return loader.load(binary); }

                @Override
                public boolean loadsConcurrently() { return true; }
            };
        }
    }

    /**
     * One kernel to look up or compile.
     *
     * @param key      the AST key: value equality, and equal keys with equal identities have equal sources
     * @param source   the kernel's source, as the compiler takes it
     * @param identity the compiler that will compile it
     */
    public record Request<K>(K key, String source, CompilerIdentity identity) {
        public Request {
            Objects.requireNonNull(key, "key");
            Objects.requireNonNull(source, "source");
            Objects.requireNonNull(identity, "identity");
        }
    }

    /**
     * Counts since the cache was created.
     *
     * @param memoryHits       requests served by a kernel compiled (or being compiled) in this process
     * @param diskHits         kernels loaded from disk instead of compiled
     * @param compiles         kernels compiled (a batch of n misses counts n)
     * @param corruptDiscarded disk entries discarded because a check failed or the loader rejected them
     */
    public record Stats(long memoryHits, long diskHits, long compiles, long corruptDiscarded) {}

    private record MemoryKey(Object key, CompilerIdentity identity) {}

    private final Path directory;
    private final Loader<P> loader;
    private final Warnings warnings;
    private final Map<MemoryKey, CompletableFuture<P>> memory = new ConcurrentHashMap<>();
    private volatile boolean writable;
    private final LongAdder memoryHits = new LongAdder();
    private final LongAdder diskHits = new LongAdder();
    private final LongAdder compiles = new LongAdder();
    private final LongAdder corruptDiscarded = new LongAdder();

    /** A cache in the {@code kernels} folder of {@link #cacheRoot()}, or in memory only when that is off. */
    public KernelCache(Loader<P> loader) {
        this(cacheRoot().map(root -> root.resolve("kernels")).orElse(null), loader, Warnings.PROCESS);
    }

    /**
     * A cache in folder {@code folder} of {@link #cacheRoot()}, or in memory only when that is off: for
     * other compiler products than kernels, kept apart from them.
     */
    public static <P> KernelCache<P> inCacheFolder(String folder, Loader<P> loader) {
        if (folder.isBlank() || folder.contains("/") || folder.contains("\\") || folder.startsWith(".")) {
            throw new IllegalArgumentException("kernel cache: folder must be a plain name, got '" + folder + "'");
        }
        return new KernelCache<>(cacheRoot().map(root -> root.resolve(folder)).orElse(null), loader, Warnings.PROCESS);
    }

    /** A cache whose disk entries live directly under {@code directory} (created when first needed). */
    public KernelCache(Path directory, Loader<P> loader) {
        this(Objects.requireNonNull(directory, "directory"), loader, Warnings.PROCESS);
    }

    /** Tests pass their own {@link Warnings}: the process-wide once-only state would leak between them. */
    KernelCache(Path directory, Loader<P> loader, Warnings warnings) {
        this.directory = directory == null ? null : directory.toAbsolutePath();
        this.loader = Objects.requireNonNull(loader, "loader");
        this.warnings = warnings;
        this.writable = directory != null;
        if (directory != null) CacheEviction.startOnce();
    }

    /** A cache without a disk part. */
    public static <P> KernelCache<P> inMemory(Loader<P> loader) {
        return new KernelCache<>(null, loader, Warnings.PROCESS);
    }

    /**
     * The root folder of Kiln's on-disk caches as configured (see the class comment), or empty when
     * the configuration says {@value #OFF} (or names a path this platform cannot represent).
     */
    public static Optional<Path> cacheRoot() { return resolveRoot(System::getProperty, System::getenv); }

    static Optional<Path> resolveRoot(UnaryOperator<String> properties, UnaryOperator<String> environment) {
        String configured = nonBlank(properties.apply(DIR_PROPERTY));
        if (configured == null) configured = nonBlank(environment.apply(DIR_ENV));
        try {
            if (configured != null) {
                return configured.equalsIgnoreCase(OFF) ? Optional.empty() : Optional.of(Path.of(configured).toAbsolutePath());
            }
            String xdg = nonBlank(environment.apply("XDG_CACHE_HOME"));
            // The XDG spec says to ignore a relative XDG_CACHE_HOME.
            if (xdg != null && Path.of(xdg).isAbsolute()) return Optional.of(Path.of(xdg, "kiln"));
            return Optional.of(Path.of(properties.apply("user.home"), ".cache", "kiln"));
        } catch (InvalidPathException e) {
            Warnings.PROCESS.warn("path", "kiln: kernel cache location is not a valid path (" + e.getMessage()
                    + "); the disk cache is off");
            return Optional.empty();
        }
    }

    private static String nonBlank(String s) { return s == null || s.isBlank() ? null : s.strip(); }

    /** The folder holding this cache's disk entries, or empty for a memory-only cache. */
    public Optional<Path> directory() { return Optional.ofNullable(directory); }

    /** Whether new kernels are still published to disk (false when memory-only or after a failed write). */
    public boolean writable() { return writable; }

    /** A snapshot of the counters. */
    public Stats stats() {
        return new Stats(memoryHits.sum(), diskHits.sum(), compiles.sum(), corruptDiscarded.sum());
    }

    /**
     * The program for one kernel: from memory, else from disk, else compiled with {@code compiler},
     * loaded and published.
     *
     * @param astKey the AST key (see {@link Request#key()})
     * @throws RuntimeException whatever the compiler or the loader throws for this kernel
     */
    public P getOrCompile(Object astKey, String source, CompilerIdentity identity, Compiler compiler) {
        Objects.requireNonNull(compiler, "compiler");
        Map<Object, P> got = getOrCompileAll(List.of(new Request<>(astKey, source, identity)),
                misses -> List.of(compiler.compile(misses.getFirst().source())));
        return got.get(astKey);
    }

    /**
     * The programs for many kernels, by key in request order. Kernels found in memory or on disk are not
     * compiled; the others go to {@code compiler} in one call. Repeated keys are served once.
     *
     * @throws IllegalArgumentException if one key comes with two compiler identities
     * @throws IllegalStateException    if the compiler returns the wrong number of binaries, or a null one
     * @throws RuntimeException         whatever the compiler or the loader throws
     */
    public <K> Map<K, P> getOrCompileAll(List<Request<K>> requests, BatchCompiler<K> compiler) {
        Objects.requireNonNull(compiler, "compiler");
        Map<K, CompilerIdentity> identities = new HashMap<>();
        for (Request<K> r : requests) {
            CompilerIdentity before = identities.putIfAbsent(r.key(), r.identity());
            if (before != null && !before.equals(r.identity())) {
                throw new IllegalArgumentException("kernel cache: key " + r.key() + " requested with two compiler identities, "
                        + before + " and " + r.identity());
            }
        }
        // Claim every kernel nobody has claimed yet; a claimed one (done or in flight) is a memory hit.
        Map<K, CompletableFuture<P>> futures = new LinkedHashMap<>();
        List<Request<K>> claimed = new ArrayList<>();
        List<CompletableFuture<P>> claimedFutures = new ArrayList<>();
        for (Request<K> r : requests) {
            if (futures.containsKey(r.key())) continue;
            CompletableFuture<P> mine = new CompletableFuture<>();
            CompletableFuture<P> theirs = memory.putIfAbsent(new MemoryKey(r.key(), r.identity()), mine);
            if (theirs == null) {
                claimed.add(r);
                claimedFutures.add(mine);
                futures.put(r.key(), mine);
            } else {
                memoryHits.increment();
                futures.put(r.key(), theirs);
            }
        }
        // Finish every claimed kernel before waiting on anyone else's: no two callers can wait on each other.
        resolve(claimed, claimedFutures, compiler);
        LinkedHashMap<K, P> out = new LinkedHashMap<>();
        futures.forEach((k, f) -> out.put(k, join(f)));
        return Collections.unmodifiableSequencedMap(out);
    }

    private <K> void resolve(List<Request<K>> claimed, List<CompletableFuture<P>> futures, BatchCompiler<K> compiler) {
        if (claimed.isEmpty()) return;
        List<Request<K>> misses = new ArrayList<>();
        List<CompletableFuture<P>> missFutures = new ArrayList<>();
        List<byte[]> binaries;
        try {
            List<Optional<P>> read = readDisk(claimed);
            for (int i = 0; i < claimed.size(); i++) {
                Optional<P> fromDisk = read.get(i);
                if (fromDisk.isPresent()) {
                    futures.get(i).complete(fromDisk.get());
                } else {
                    misses.add(claimed.get(i));
                    missFutures.add(futures.get(i));
                }
            }
            if (misses.isEmpty()) return;
            binaries = compiler.compile(Collections.unmodifiableList(misses));
            if (binaries == null || binaries.size() != misses.size()) {
                throw new IllegalStateException("kernel cache: batch compiler returned "
                        + (binaries == null ? "null" : binaries.size() + " binaries") + " for " + misses.size() + " kernels");
            }
            compiles.add(misses.size());
        } catch (RuntimeException | Error e) {
            for (int i = 0; i < claimed.size(); i++) fail(claimed.get(i), futures.get(i), e);
            throw e;
        }
        // From here on a failure belongs to one kernel: the others are still served and published.
        Throwable first = null;
        for (int i = 0; i < misses.size(); i++) {
            try {
                byte[] binary = binaries.get(i);
                if (binary == null) {
                    throw new IllegalStateException("kernel cache: batch compiler returned no binary for kernel " + misses.get(i).key());
                }
                // Load before publishing: a binary the loader rejects must not reach the disk.
                P program = loader.load(binary);
                writeDisk(misses.get(i), binary);
                missFutures.get(i).complete(program);
            } catch (RuntimeException | Error e) {
                fail(misses.get(i), missFutures.get(i), e);
                if (first == null) first = e;
            }
        }
        if (first instanceof RuntimeException re) throw re;
        if (first instanceof Error err) throw err;
    }

    private void fail(Request<?> r, CompletableFuture<P> f, Throwable e) {
        if (f.isDone()) return;
        // Forget before failing, so that a later request compiles again instead of seeing this failure.
        memory.remove(new MemoryKey(r.key(), r.identity()), f);
        f.completeExceptionally(e);
    }

    private static <T> T join(CompletableFuture<T> f) {
        try {
            return f.join();
        } catch (CompletionException e) {
            if (e.getCause() instanceof RuntimeException re) throw re;
            if (e.getCause() instanceof Error err) throw err;
            throw e;
        }
    }

    // --- disk ---

    static String diskKey(String source, CompilerIdentity identity) {
        // The fingerprint has a fixed length, so the concatenation is unambiguous.
        return CompilerIdentity.sha256Hex(identity.fingerprint() + "\n" + source);
    }

    /** Where the entry for {@code source} compiled by {@code identity} lives (empty for a memory-only cache). */
    public Optional<Path> entryPath(String source, CompilerIdentity identity) {
        return directory().map(dir -> entryPath(dir, diskKey(source, identity)));
    }

    private static Path entryPath(Path dir, String key) {
        return dir.resolve(key.substring(0, 2)).resolve(key.substring(2) + ".bin");
    }

    /** {@link #readDisk(Request)} of each request, in order: side by side where the loader allows it and there are several. */
    private List<Optional<P>> readDisk(List<? extends Request<?>> requests) {
        if (directory == null) return Collections.nCopies(requests.size(), Optional.empty());
        return loader.loadsConcurrently() ? Concurrently.map(requests, this::readDisk) : requests.stream().map(this::readDisk).toList();
    }

    private Optional<P> readDisk(Request<?> r) {
        if (directory == null) return Optional.empty();
        Path file = entryPath(directory, diskKey(r.source(), r.identity()));
        byte[] bytes;
        try {
            bytes = Files.readAllBytes(file);
        } catch (NoSuchFileException e) {
            return Optional.empty();
        } catch (IOException e) {
            warnings.warn("io", "kiln: cannot read kernel cache entry " + file + " (" + e + "); compiling instead");
            return Optional.empty();
        }
        String why = check(bytes);
        if (why == null) {
            try {
                P program = loader.load(Arrays.copyOfRange(bytes, HEADER_BYTES, bytes.length));
                diskHits.increment();
                CacheEviction.touch(file);
                return Optional.of(program);
            } catch (RuntimeException | LinkageError e) {
                why = "the loader rejected it: " + e;
            }
        }
        corruptDiscarded.increment();
        try {
            Files.deleteIfExists(file);
        } catch (IOException ignored) {
            // Republishing replaces it anyway; if that fails too, the next read discards it again.
        }
        warnings.warn("corrupt", "kiln: discarded corrupt kernel cache entry " + file + ": " + why);
        return Optional.empty();
    }

    /** Why {@code entry} is not a valid entry, or null when it is. */
    static String check(byte[] entry) {
        if (entry.length == 0) return "empty file";
        if (entry.length < HEADER_BYTES) return "truncated header (" + entry.length + " of " + HEADER_BYTES + " bytes)";
        ByteBuffer b = ByteBuffer.wrap(entry);
        byte[] magic = new byte[MAGIC.length];
        b.get(magic);
        if (!Arrays.equals(magic, MAGIC)) return "bad magic " + HexFormat.of().formatHex(magic);
        int version = b.getInt();
        if (version != FORMAT_VERSION) return "format version " + version + ", expected " + FORMAT_VERSION;
        long length = b.getLong();
        long present = entry.length - HEADER_BYTES;
        if (length > present) return "truncated payload (" + present + " of " + length + " bytes)";
        if (length < present) return "payload length " + length + " but " + present + " bytes follow";
        byte[] digest = new byte[32];
        b.get(digest);
        byte[] actual = CompilerIdentity.sha256(Arrays.copyOfRange(entry, HEADER_BYTES, entry.length));
        return MessageDigest.isEqual(digest, actual) ? null : "payload checksum mismatch";
    }

    static byte[] encode(byte[] payload) {
        return ByteBuffer.allocate(HEADER_BYTES + payload.length)
                .put(MAGIC).putInt(FORMAT_VERSION).putLong(payload.length)
                .put(CompilerIdentity.sha256(payload)).put(payload)
                .array();
    }

    private void writeDisk(Request<?> r, byte[] binary) {
        if (!writable) return;
        Path file = entryPath(directory, diskKey(r.source(), r.identity()));
        Path tmp = null;
        try {
            Files.createDirectories(file.getParent());
            // A unique temporary name per writer: concurrent writers of one key never share a file.
            tmp = Files.createTempFile(file.getParent(), file.getFileName() + ".", ".tmp");
            // No fsync: an entry torn by a crash fails its checks and is recompiled.
            Files.write(tmp, encode(binary));
            Files.move(tmp, file, StandardCopyOption.ATOMIC_MOVE);
        } catch (IOException | UnsupportedOperationException | SecurityException e) {
            writable = false;
            if (tmp != null) {
                try {
                    Files.deleteIfExists(tmp);
                } catch (IOException ignored) {
                    // Nothing more to do: the folder is already failing us.
                }
            }
            warnings.warn("io", "kiln: cannot write the kernel cache in " + directory + " (" + e
                    + "); kernels are compiled without publishing them to disk");
        }
    }

    /**
     * Warnings shown once per process at {@code WARNING} (per kind, e.g. corrupt entries, disk errors);
     * repeats go to {@code DEBUG}, so a broken cache folder does not flood the log.
     */
    static final class Warnings {
        private static final System.Logger LOGGER = System.getLogger(KernelCache.class.getName());
        static final Warnings PROCESS = new Warnings((level, message) -> LOGGER.log(level, message));

        private final BiConsumer<Level, String> sink;
        private final Set<String> warned = ConcurrentHashMap.newKeySet();

        Warnings(BiConsumer<Level, String> sink) { this.sink = sink; }

        void warn(String kind, String message) {
            sink.accept(warned.add(kind) ? Level.WARNING : Level.DEBUG, message);
        }
    }
}

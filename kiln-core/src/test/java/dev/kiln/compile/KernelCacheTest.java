package dev.kiln.compile;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import java.io.IOException;
import java.lang.System.Logger.Level;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * The kernel cache with a fake compiler ("compiles" a source to the bytes of {@code "bin:" + source})
 * and a loader that refuses anything else, so a loaded program proves where its bytes came from.
 */
class KernelCacheTest {
    static final CompilerIdentity JAVAC = CompilerIdentity.of("javac", "java.version", "25.0.1", "vector.bits", "256");
    private static final CompilerIdentity JAVAC_512 = CompilerIdentity.of("javac", "java.version", "25.0.1", "vector.bits", "512");

    record Logged(Level level, String message) {}

    /** Counts its calls and the kernels it compiled; optionally slow, to widen race windows. */
    static final class FakeCompiler implements KernelCache.Compiler {
        final AtomicInteger calls = new AtomicInteger();
        final long delayMillis;

        FakeCompiler(long delayMillis) { this.delayMillis = delayMillis; }

        FakeCompiler() { this(0); }

        @Override
        public byte[] compile(String source) {
            calls.incrementAndGet();
            if (delayMillis > 0) {
                try {
                    Thread.sleep(delayMillis);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    throw new IllegalStateException(e);
                }
            }
            return binary(source);
        }
    }

    /** Programs are strings; it records every binary it is given. */
    static final class FakeLoader implements KernelCache.Loader<String> {
        final List<String> loaded = new CopyOnWriteArrayList<>();

        @Override
        public String load(byte[] binary) {
            String s = new String(binary, StandardCharsets.UTF_8);
            loaded.add(s);
            if (!s.startsWith("bin:")) throw new IllegalArgumentException("not a fake binary: " + s);
            return "program(" + s.substring(4) + ")";
        }
    }

    static byte[] binary(String source) { return ("bin:" + source).getBytes(StandardCharsets.UTF_8); }

    final List<Logged> log = new CopyOnWriteArrayList<>();
    final KernelCache.Warnings warnings = new KernelCache.Warnings((level, message) -> log.add(new Logged(level, message)));
    final FakeLoader loader = new FakeLoader();

    KernelCache<String> cache(Path dir) { return new KernelCache<>(dir, loader, warnings); }

    List<Logged> warningsLogged() { return log.stream().filter(l -> l.level() == Level.WARNING).toList(); }

    static List<Path> files(Path dir) throws IOException {
        if (!Files.exists(dir)) return List.of();
        try (Stream<Path> s = Files.walk(dir)) {
            return s.filter(Files::isRegularFile).sorted().toList();
        }
    }

    @Test
    void sameKernelTwiceInAProcessCompilesOnce(@TempDir Path dir) {
        var cache = cache(dir);
        var compiler = new FakeCompiler();
        String a = cache.getOrCompile("add", "a + b", JAVAC, compiler);
        String b = cache.getOrCompile("add", "a + b", JAVAC, compiler);
        assertThat(a).isEqualTo("program(a + b)");
        assertThat(b).isSameAs(a);
        assertThat(compiler.calls).hasValue(1);
        assertThat(cache.stats()).isEqualTo(new KernelCache.Stats(1, 0, 1, 0));
    }

    @Test
    void entryIsPublishedAtItsHashedPathWithNoTemporaryFilesLeft(@TempDir Path dir) throws IOException {
        var cache = cache(dir);
        cache.getOrCompile("add", "a + b", JAVAC, new FakeCompiler());
        Path entry = cache.entryPath("a + b", JAVAC).orElseThrow();
        String key = KernelCache.diskKey("a + b", JAVAC);
        assertThat(key).hasSize(64).matches("[0-9a-f]+");
        assertThat(entry).isEqualTo(dir.resolve(key.substring(0, 2)).resolve(key.substring(2) + ".bin"));
        assertThat(files(dir)).containsExactly(entry);
        byte[] bytes = Files.readAllBytes(entry);
        assertThat(KernelCache.check(bytes)).isNull();
        assertThat(Arrays.copyOfRange(bytes, KernelCache.HEADER_BYTES, bytes.length)).isEqualTo(binary("a + b"));
        assertThat(new String(bytes, 0, 4, StandardCharsets.US_ASCII)).isEqualTo("KLNC");
    }

    @Test
    void aNewCacheInstanceLoadsFromDiskWithoutCompiling(@TempDir Path dir) {
        cache(dir).getOrCompile("add", "a + b", JAVAC, new FakeCompiler());

        var fresh = cache(dir);   // as a new JVM would see it: empty memory, same folder
        String p = fresh.getOrCompile("add", "a + b", JAVAC, source -> {
            throw new AssertionError("must not compile a kernel that is on disk");
        });
        assertThat(p).isEqualTo("program(a + b)");
        assertThat(fresh.stats()).isEqualTo(new KernelCache.Stats(0, 1, 0, 0));
        assertThat(log).isEmpty();
    }

    @Test
    void aDifferentCompilerIdentityMissesInMemoryAndOnDisk(@TempDir Path dir) throws IOException {
        var cache = cache(dir);
        var compiler = new FakeCompiler();
        cache.getOrCompile("add", "a + b", JAVAC, compiler);
        cache.getOrCompile("add", "a + b", JAVAC_512, compiler);
        assertThat(compiler.calls).hasValue(2);

        var fresh = cache(dir);
        var again = new FakeCompiler();
        fresh.getOrCompile("add", "a + b", CompilerIdentity.of("javac", "java.version", "26", "vector.bits", "256"), again);
        assertThat(again.calls).hasValue(1);
        fresh.getOrCompile("add", "a + b", JAVAC_512, again);
        assertThat(again.calls).hasValue(1);
        assertThat(files(dir)).hasSize(3);
    }

    enum Damage {
        FLIPPED_PAYLOAD_BYTE, FLIPPED_CHECKSUM_BYTE, TRUNCATED_PAYLOAD, TRUNCATED_HEADER, WRONG_MAGIC, WRONG_VERSION,
        EMPTY, TRAILING_GARBAGE, WRONG_LENGTH;

        byte[] apply(byte[] entry) {
            byte[] e = entry.clone();
            return switch (this) {
                case FLIPPED_PAYLOAD_BYTE -> { e[e.length - 2] ^= 0x20; yield e; }
                case FLIPPED_CHECKSUM_BYTE -> { e[20] ^= 1; yield e; }
                case TRUNCATED_PAYLOAD -> Arrays.copyOf(e, e.length - 3);
                case TRUNCATED_HEADER -> Arrays.copyOf(e, 10);
                case WRONG_MAGIC -> { e[0] = 'X'; yield e; }
                case WRONG_VERSION -> { e[7] = 9; yield e; }
                case EMPTY -> new byte[0];
                case TRAILING_GARBAGE -> Arrays.copyOf(e, e.length + 5);
                case WRONG_LENGTH -> { e[15] -= 1; yield e; }
            };
        }

        String reason() {
            return switch (this) {
                case FLIPPED_PAYLOAD_BYTE, FLIPPED_CHECKSUM_BYTE -> "checksum mismatch";
                case TRUNCATED_PAYLOAD -> "truncated payload";
                case TRUNCATED_HEADER -> "truncated header";
                case WRONG_MAGIC -> "bad magic";
                case WRONG_VERSION -> "format version 9";
                case EMPTY -> "empty file";
                case TRAILING_GARBAGE, WRONG_LENGTH -> "bytes follow";
            };
        }
    }

    @ParameterizedTest
    @EnumSource(Damage.class)
    void aDamagedEntryIsNeverLoadedButRecompiledAndReplaced(Damage damage, @TempDir Path dir) throws IOException {
        String source = "x * y + z";
        cache(dir).getOrCompile("fma", source, JAVAC, new FakeCompiler());
        Path entry = cache(dir).entryPath(source, JAVAC).orElseThrow();
        byte[] good = Files.readAllBytes(entry);
        Files.write(entry, damage.apply(good));
        loader.loaded.clear();

        var fresh = cache(dir);
        var compiler = new FakeCompiler();
        assertThat(fresh.getOrCompile("fma", source, JAVAC, compiler)).isEqualTo("program(" + source + ")");
        assertThat(compiler.calls).hasValue(1);
        assertThat(loader.loaded).as("only the fresh binary is loaded").containsExactly("bin:" + source);
        assertThat(fresh.stats()).isEqualTo(new KernelCache.Stats(0, 0, 1, 1));
        assertThat(Files.readAllBytes(entry)).as("the entry is republished").isEqualTo(good);
        assertThat(warningsLogged()).singleElement().satisfies(w -> assertThat(w.message())
                .startsWith("kiln: discarded corrupt kernel cache entry " + entry + ": ")
                .contains(damage.reason()));
        assertThat(files(dir)).containsExactly(entry);
    }

    @Test
    void anEntryTheLoaderRejectsIsDiscardedAndRecompiled(@TempDir Path dir) throws IOException {
        var cache = cache(dir);
        Path entry = cache.entryPath("a - b", JAVAC).orElseThrow();
        Files.createDirectories(entry.getParent());
        // Passes every check, but is not something this device can load.
        Files.write(entry, KernelCache.encode("garbage".getBytes(StandardCharsets.UTF_8)));

        assertThat(cache.getOrCompile("sub", "a - b", JAVAC, new FakeCompiler())).isEqualTo("program(a - b)");
        assertThat(cache.stats().corruptDiscarded()).isEqualTo(1);
        assertThat(warningsLogged()).singleElement().satisfies(w -> assertThat(w.message()).contains("loader rejected it"));
        assertThat(KernelCache.check(Files.readAllBytes(entry))).isNull();
    }

    @Test
    void corruptEntriesAreWarnedAboutOnceAtWarningLevel(@TempDir Path dir) throws IOException {
        var seed = cache(dir);
        seed.getOrCompile("a", "A", JAVAC, new FakeCompiler());
        seed.getOrCompile("b", "B", JAVAC, new FakeCompiler());
        Files.write(seed.entryPath("A", JAVAC).orElseThrow(), new byte[0]);
        Files.write(seed.entryPath("B", JAVAC).orElseThrow(), new byte[0]);

        var fresh = cache(dir);
        fresh.getOrCompile("a", "A", JAVAC, new FakeCompiler());
        fresh.getOrCompile("b", "B", JAVAC, new FakeCompiler());
        assertThat(fresh.stats().corruptDiscarded()).isEqualTo(2);
        assertThat(warningsLogged()).hasSize(1);
        assertThat(log).hasSize(2).element(1).extracting(Logged::level).isEqualTo(Level.DEBUG);
    }

    @Test
    void eightThreadsAskingForOneKernelCompileItOnce(@TempDir Path dir) throws Exception {
        var cache = cache(dir);
        var compiler = new FakeCompiler(200);
        var start = new CountDownLatch(1);
        ExecutorService pool = Executors.newFixedThreadPool(8);
        try {
            List<Future<String>> results = new ArrayList<>();
            for (int t = 0; t < 8; t++) {
                results.add(pool.submit(() -> {
                    start.await();
                    return cache.getOrCompile("relu", "max(x, 0)", JAVAC, compiler);
                }));
            }
            start.countDown();
            String first = results.getFirst().get();
            for (Future<String> f : results) assertThat(f.get()).isSameAs(first);
        } finally {
            pool.shutdownNow();
        }
        assertThat(compiler.calls).hasValue(1);
        assertThat(cache.stats()).isEqualTo(new KernelCache.Stats(7, 0, 1, 0));
    }

    @Test
    void concurrentWritersOfOneKeyInSeveralCachesLeaveOneValidEntry(@TempDir Path dir) throws Exception {
        List<KernelCache<String>> caches = List.of(cache(dir), cache(dir), cache(dir), cache(dir));
        var start = new CountDownLatch(1);
        ExecutorService pool = Executors.newFixedThreadPool(8);
        try {
            List<Future<String>> results = new ArrayList<>();
            for (int t = 0; t < 8; t++) {
                var c = caches.get(t % caches.size());
                results.add(pool.submit(() -> {
                    start.await();
                    return c.getOrCompile("exp", "exp(x)", JAVAC, new FakeCompiler(20));
                }));
            }
            start.countDown();
            for (Future<String> f : results) assertThat(f.get()).isEqualTo("program(exp(x))");
        } finally {
            pool.shutdownNow();
        }
        Path entry = caches.getFirst().entryPath("exp(x)", JAVAC).orElseThrow();
        assertThat(files(dir)).containsExactly(entry);
        assertThat(KernelCache.check(Files.readAllBytes(entry))).isNull();
        assertThat(warningsLogged()).isEmpty();
    }

    @Test
    void batchCompilesOnlyTheMisses(@TempDir Path dir) {
        cache(dir).getOrCompile("onDisk", "D", JAVAC, new FakeCompiler());
        var cache = cache(dir);
        cache.getOrCompile("inMemory", "M", JAVAC, new FakeCompiler());

        List<List<String>> batches = new ArrayList<>();
        KernelCache.BatchCompiler<String> batch = misses -> {
            batches.add(misses.stream().map(KernelCache.Request::key).toList());
            return misses.stream().map(r -> binary(r.source())).toList();
        };
        List<KernelCache.Request<String>> requests = List.of(
                new KernelCache.Request<>("new1", "N1", JAVAC),
                new KernelCache.Request<>("inMemory", "M", JAVAC),
                new KernelCache.Request<>("onDisk", "D", JAVAC),
                new KernelCache.Request<>("new2", "N2", JAVAC),
                new KernelCache.Request<>("new1", "N1", JAVAC));
        Map<String, String> got = cache.getOrCompileAll(requests, batch);

        assertThat(batches).containsExactly(List.of("new1", "new2"));
        assertThat(got).containsExactly(
                Map.entry("new1", "program(N1)"), Map.entry("inMemory", "program(M)"),
                Map.entry("onDisk", "program(D)"), Map.entry("new2", "program(N2)"));
        // The miss counts once: the repeated "new1" is served by the same claim.
        assertThat(cache.stats()).isEqualTo(new KernelCache.Stats(1, 1, 3, 0));

        var fresh = cache(dir);
        Map<String, String> again = fresh.getOrCompileAll(requests, misses -> {
            throw new AssertionError("everything is on disk now: " + misses);
        });
        assertThat(again).isEqualTo(got);
        assertThat(fresh.getOrCompileAll(List.<KernelCache.Request<String>>of(), batch)).isEmpty();
        assertThat(batches).hasSize(1);
    }

    @Test
    void aFailedCompilationIsNotRememberedAndOthersInTheBatchSurviveALoadFailure(@TempDir Path dir) {
        var cache = cache(dir);
        assertThatThrownBy(() -> cache.getOrCompile("bad", "syntax error", JAVAC, source -> {
            throw new IllegalArgumentException("javac: " + source);
        })).isInstanceOf(IllegalArgumentException.class).hasMessage("javac: syntax error");
        assertThat(cache.getOrCompile("bad", "syntax error", JAVAC, new FakeCompiler())).isEqualTo("program(syntax error)");

        List<KernelCache.Request<String>> requests = List.of(
                new KernelCache.Request<>("ok", "OK", JAVAC), new KernelCache.Request<>("unloadable", "U", JAVAC));
        assertThatThrownBy(() -> cache.getOrCompileAll(requests, misses -> List.of(binary("OK"), "junk".getBytes(StandardCharsets.UTF_8))))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("not a fake binary");
        assertThat(cache.entryPath("OK", JAVAC).map(Files::exists)).contains(true);
        assertThat(cache.entryPath("U", JAVAC).map(Files::exists)).contains(false);
        var compiler = new FakeCompiler();
        assertThat(cache.getOrCompile("ok", "OK", JAVAC, compiler)).isEqualTo("program(OK)");
        assertThat(cache.getOrCompile("unloadable", "U", JAVAC, compiler)).isEqualTo("program(U)");
        assertThat(compiler.calls).hasValue(1);
    }

    @Test
    void aBatchCompilerReturningTheWrongCountIsAnError(@TempDir Path dir) {
        var cache = cache(dir);
        List<KernelCache.Request<String>> requests = List.of(
                new KernelCache.Request<>("a", "A", JAVAC), new KernelCache.Request<>("b", "B", JAVAC));
        assertThatThrownBy(() -> cache.getOrCompileAll(requests, misses -> List.of(binary("A"))))
                .isInstanceOf(IllegalStateException.class)
                .hasMessage("kernel cache: batch compiler returned 1 binaries for 2 kernels");
        assertThat(cache.getOrCompileAll(requests, misses -> misses.stream().map(r -> binary(r.source())).toList()))
                .containsOnlyKeys("a", "b");
    }

    @Test
    void oneKeyWithTwoIdentitiesInOneBatchIsRejected(@TempDir Path dir) {
        var cache = cache(dir);
        List<KernelCache.Request<String>> requests = List.of(
                new KernelCache.Request<>("a", "A", JAVAC), new KernelCache.Request<>("a", "A", JAVAC_512));
        assertThatThrownBy(() -> cache.getOrCompileAll(requests, misses -> List.of()))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("key a requested with two compiler identities");
    }

    @Test
    void anUnusableDirectoryStillCompilesAndWarnsOnce(@TempDir Path tmp) throws IOException {
        // A regular file where a folder should be: fails for root too, unlike permission bits.
        Path blocker = Files.writeString(tmp.resolve("blocker"), "not a folder");
        var cache = cache(blocker.resolve("kernels"));
        var compiler = new FakeCompiler();
        for (String s : List.of("A", "B", "C")) {
            assertThat(cache.getOrCompile(s, s, JAVAC, compiler)).isEqualTo("program(" + s + ")");
        }
        assertThat(cache.getOrCompileAll(List.of(new KernelCache.Request<>("D", "D", JAVAC)),
                misses -> List.of(binary("D")))).containsEntry("D", "program(D)");
        assertThat(compiler.calls).hasValue(3);
        assertThat(cache.writable()).isFalse();
        assertThat(warningsLogged()).singleElement().satisfies(w -> assertThat(w.message()).contains(blocker.toString()));
        assertThat(Files.readString(blocker)).isEqualTo("not a folder");
    }

    @Test
    void aReadOnlyCacheIsStillReadAfterAFailedWrite(@TempDir Path tmp) throws IOException {
        Path dir = tmp.resolve("kernels");
        cache(dir).getOrCompile("a", "A", JAVAC, new FakeCompiler());
        // Block the folder a new entry would need (its first two hex digits differ from A's).
        String keyB = KernelCache.diskKey("B", JAVAC);
        assertThat(keyB.substring(0, 2)).isNotEqualTo(KernelCache.diskKey("A", JAVAC).substring(0, 2));
        Files.writeString(dir.resolve(keyB.substring(0, 2)), "blocked");

        var cache = cache(dir);
        cache.getOrCompile("b", "B", JAVAC, new FakeCompiler());
        assertThat(cache.writable()).isFalse();
        assertThat(cache.getOrCompile("a", "A", JAVAC, source -> {
            throw new AssertionError("A is on disk");
        })).isEqualTo("program(A)");
        assertThat(cache.stats().diskHits()).isEqualTo(1);
    }

    @Test
    void offDisablesTheDiskCache(@TempDir Path tmp) {
        String before = System.getProperty(KernelCache.DIR_PROPERTY);
        try {
            System.setProperty(KernelCache.DIR_PROPERTY, "off");
            assertThat(KernelCache.cacheRoot()).isEmpty();
            var compiler = new FakeCompiler();
            var cache = new KernelCache<>(loader);
            assertThat(cache.directory()).isEmpty();
            assertThat(cache.writable()).isFalse();
            assertThat(cache.entryPath("A", JAVAC)).isEmpty();
            cache.getOrCompile("a", "A", JAVAC, compiler);
            new KernelCache<>(loader).getOrCompile("a", "A", JAVAC, compiler);
            assertThat(compiler.calls).hasValue(2);
            assertThat(KernelCache.inMemory(loader).directory()).isEmpty();
        } finally {
            restore(before);
        }
    }

    @Test
    void theSystemPropertyPlacesTheDefaultCache(@TempDir Path tmp) throws IOException {
        String before = System.getProperty(KernelCache.DIR_PROPERTY);
        try {
            System.setProperty(KernelCache.DIR_PROPERTY, tmp.toString());
            assertThat(KernelCache.cacheRoot()).contains(tmp);
            var cache = new KernelCache<>(loader);
            assertThat(cache.directory()).contains(tmp.resolve("kernels"));
            cache.getOrCompile("a", "A", JAVAC, new FakeCompiler());
            assertThat(files(tmp)).containsExactly(cache.entryPath("A", JAVAC).orElseThrow());
            assertThat(files(tmp).getFirst()).startsWith(tmp.resolve("kernels"));
        } finally {
            restore(before);
        }
    }

    private static void restore(String before) {
        if (before == null) System.clearProperty(KernelCache.DIR_PROPERTY);
        else System.setProperty(KernelCache.DIR_PROPERTY, before);
    }

    @Test
    void locationResolutionOrder() {
        Map<String, String> props = new HashMap<>(Map.of("user.home", "/home/ada"));
        Map<String, String> env = new HashMap<>();
        assertThat(KernelCache.resolveRoot(props::get, env::get)).contains(Path.of("/home/ada/.cache/kiln"));
        env.put("XDG_CACHE_HOME", "relative/cache");   // ignored, as the XDG spec says
        assertThat(KernelCache.resolveRoot(props::get, env::get)).contains(Path.of("/home/ada/.cache/kiln"));
        env.put("XDG_CACHE_HOME", "/var/cache/ada");
        assertThat(KernelCache.resolveRoot(props::get, env::get)).contains(Path.of("/var/cache/ada/kiln"));
        env.put(KernelCache.DIR_ENV, "/srv/kiln");
        assertThat(KernelCache.resolveRoot(props::get, env::get)).contains(Path.of("/srv/kiln"));
        props.put(KernelCache.DIR_PROPERTY, "/opt/kiln-cache");
        assertThat(KernelCache.resolveRoot(props::get, env::get)).contains(Path.of("/opt/kiln-cache"));
        props.put(KernelCache.DIR_PROPERTY, "  ");   // blank: as if unset
        assertThat(KernelCache.resolveRoot(props::get, env::get)).contains(Path.of("/srv/kiln"));
        env.put(KernelCache.DIR_ENV, "OFF");
        assertThat(KernelCache.resolveRoot(props::get, env::get)).isEmpty();
        props.put(KernelCache.DIR_PROPERTY, "/opt/kiln-cache");   // the property beats the environment's "off"
        assertThat(KernelCache.resolveRoot(props::get, env::get)).contains(Path.of("/opt/kiln-cache"));
        props.put(KernelCache.DIR_PROPERTY, "relative");
        assertThat(KernelCache.resolveRoot(props::get, env::get)).contains(Path.of("relative").toAbsolutePath());
    }

    @Test
    void resultMapIsUnmodifiable(@TempDir Path dir) {
        Map<String, String> got = cache(dir).getOrCompileAll(List.of(new KernelCache.Request<>("a", "A", JAVAC)),
                misses -> Collections.nCopies(misses.size(), binary("A")));
        assertThatThrownBy(() -> got.put("b", "x")).isInstanceOf(UnsupportedOperationException.class);
        assertThat(got).containsEntry("a", "program(A)");
    }
}

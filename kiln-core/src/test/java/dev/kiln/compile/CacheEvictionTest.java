package dev.kiln.compile;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.time.Duration;
import java.time.Instant;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** The disk caches stay within their size limit, least recently used files first. */
class CacheEvictionTest {
    private static final Instant NOW = Instant.parse("2026-11-21T12:00:00Z");

    private static Path file(Path root, String name, int bytes, Duration age) throws IOException {
        Path p = root.resolve(name);
        Files.createDirectories(p.getParent());
        Files.write(p, new byte[bytes]);
        Files.setLastModifiedTime(p, FileTime.from(NOW.minus(age)));
        return p;
    }

    @Test
    void passesAreAnHourApartAcrossProcesses(@TempDir Path root) throws IOException {
        Instant now = Instant.parse("2026-11-26T12:00:00Z");
        assertThat(CacheEviction.claimPass(root, now)).as("no pass yet").isTrue();
        assertThat(Files.getLastModifiedTime(root.resolve(CacheEviction.STAMP)).toInstant()).isEqualTo(now);
        assertThat(CacheEviction.claimPass(root, now.plus(Duration.ofMinutes(59)))).as("another process within the hour").isFalse();
        assertThat(CacheEviction.claimPass(root, now.plus(Duration.ofMinutes(61)))).as("an hour later").isTrue();
        assertThat(CacheEviction.claimPass(root.resolve("not-yet-made"), now)).as("a cache folder not made yet").isTrue();
    }

    @Test
    void aboveTheLimitTheLeastRecentlyUsedFilesGoUntilEightyPercentRemain(@TempDir Path root) throws IOException {
        // each file takes two 4 KiB blocks
        Path oldest = file(root, "kernels/aa/1.bin", 5000, Duration.ofDays(30));
        Path old = file(root, "programs/bb/2.bin", 5000, Duration.ofDays(20));
        Path recent = file(root, "clang/3.so", 8192, Duration.ofDays(2));
        Path newest = file(root, "cuda/4.ptx", 4097, Duration.ofMinutes(1));
        var r = CacheEviction.evict(root, 3 * 8192, NOW);
        assertThat(r).isEqualTo(new CacheEviction.Result(4 * 8192, 2 * 8192, 2));
        assertThat(oldest).doesNotExist();
        assertThat(old).doesNotExist();
        assertThat(recent).exists();
        assertThat(newest).exists();
    }

    @Test
    void withinTheLimitNothingIsDeleted(@TempDir Path root) throws IOException {
        Path a = file(root, "kernels/aa/1.bin", 400, Duration.ofDays(300));
        Path b = file(root, "kernels/ab/2.bin", 4096, Duration.ofDays(1));
        assertThat(CacheEviction.evict(root, 8192, NOW)).isEqualTo(new CacheEviction.Result(8192, 8192, 0));
        assertThat(a).exists();
        assertThat(b).exists();
        assertThat(CacheEviction.evict(root.resolve("missing"), 10, NOW)).isEqualTo(new CacheEviction.Result(0, 0, 0));
    }

    @Test
    void abandonedTemporaryFilesAreDeletedAndFreshOnesKept(@TempDir Path root) throws IOException {
        Path abandoned = file(root, "kernels/aa/1.bin.123.tmp", 10, Duration.ofHours(2));
        Path writing = file(root, "kernels/aa/2.bin.456.tmp", 10, Duration.ofMinutes(5));
        var r = CacheEviction.evict(root, 100_000, NOW);
        assertThat(r.filesDeleted()).isEqualTo(1);
        assertThat(r.bytesBefore()).as("temporary files do not count as entries").isZero();
        assertThat(abandoned).doesNotExist();
        assertThat(writing).exists();
    }

    @Test
    void aDiskHitMarksTheEntryUsed(@TempDir Path dir) throws IOException {
        KernelCacheTest t = new KernelCacheTest();
        t.cache(dir).getOrCompile("a", "A", KernelCacheTest.JAVAC, new KernelCacheTest.FakeCompiler());
        Path entry = KernelCacheTest.files(dir).getFirst();
        FileTime old = FileTime.from(NOW.minus(Duration.ofDays(10)));
        Files.setLastModifiedTime(entry, old);
        assertThat(t.cache(dir).getOrCompile("a", "A", KernelCacheTest.JAVAC, source -> {
            throw new AssertionError("A is on disk");
        })).isEqualTo("program(A)");
        assertThat(Files.getLastModifiedTime(entry)).isGreaterThan(old);
    }

    @Test
    void theLimitIsReadFromThePropertyThenTheEnvironmentWithUnits() {
        assertThat(CacheEviction.limit(Map.<String, String>of()::get, Map.<String, String>of()::get)).isEqualTo(1L << 30);
        assertThat(CacheEviction.limit(Map.of(CacheEviction.LIMIT_PROPERTY, "500M")::get, Map.of(CacheEviction.LIMIT_ENV, "2G")::get))
                .isEqualTo(500L << 20);
        assertThat(CacheEviction.limit(Map.<String, String>of()::get, Map.of(CacheEviction.LIMIT_ENV, " 2g ")::get)).isEqualTo(2L << 30);
        assertThat(CacheEviction.limit(Map.of(CacheEviction.LIMIT_PROPERTY, "4096")::get, Map.<String, String>of()::get)).isEqualTo(4096);
        assertThat(CacheEviction.limit(Map.of(CacheEviction.LIMIT_PROPERTY, "64k")::get, Map.<String, String>of()::get)).isEqualTo(64L << 10);
        for (String bad : new String[] {"0", "-5M", "lots", "G", "99999999999G"}) {
            assertThatThrownBy(() -> CacheEviction.limit(Map.of(CacheEviction.LIMIT_PROPERTY, bad)::get, Map.<String, String>of()::get))
                    .as(bad).isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining(CacheEviction.LIMIT_PROPERTY).hasMessageContaining("'" + bad + "'");
        }
        assertThatThrownBy(() -> CacheEviction.limit(Map.<String, String>of()::get, Map.of(CacheEviction.LIMIT_ENV, "1.5G")::get))
                .hasMessageContaining(CacheEviction.LIMIT_ENV).hasMessageContaining("'1.5G'");
    }
}

package dev.kiln.compile;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.time.Instant;
import java.util.function.Supplier;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** Compiler products by content: published once, read back checked, damage and loss reported so the kernel recompiles. */
class ContentStoreTest {
    private static <T> T withCacheRoot(Path root, Supplier<T> body) {
        String before = System.getProperty(KernelCache.DIR_PROPERTY);
        System.setProperty(KernelCache.DIR_PROPERTY, root.toString());
        try {
            return body.get();
        } finally {
            if (before == null) System.clearProperty(KernelCache.DIR_PROPERTY);
            else System.setProperty(KernelCache.DIR_PROPERTY, before);
        }
    }

    @Test
    void anArtifactIsStoredUnderItsHashAndReadBackChecked(@TempDir Path root) throws IOException {
        ContentStore store = withCacheRoot(root, () -> new ContentStore("things", ".thing", "kiln-thing:", "thing"));
        byte[] artifact = "some compiled code".getBytes(StandardCharsets.UTF_8);
        byte[] reference = store.publish(artifact);
        String sha = ContentStore.sha256(artifact);
        assertThat(new String(reference, StandardCharsets.US_ASCII)).isEqualTo("kiln-thing:" + sha);
        assertThat(store.hashOf(reference)).isEqualTo(sha);
        Path file = root.resolve("things").resolve(sha + ".thing");
        assertThat(file).hasBinaryContent(artifact);
        assertThat(store.publish(artifact)).as("publishing again").isEqualTo(reference);

        FileTime old = FileTime.from(Instant.parse("2020-01-01T00:00:00Z"));
        Files.setLastModifiedTime(file, old);
        assertThat(store.read(sha)).isEqualTo(artifact);
        assertThat(Files.getLastModifiedTime(file)).as("a read marks the file used").isGreaterThan(old);

        Files.write(file, "tampered".getBytes(StandardCharsets.UTF_8));
        assertThatThrownBy(() -> store.read(sha)).isInstanceOf(IllegalArgumentException.class).hasMessageContaining("thing")
                .hasMessageContaining("does not match its hash");
        assertThat(file).as("a damaged artifact is deleted").doesNotExist();
        assertThatThrownBy(() -> store.read(sha)).isInstanceOf(IllegalArgumentException.class).hasMessageContaining("is missing");
        assertThatThrownBy(() -> store.hashOf("kiln-other:abc".getBytes(StandardCharsets.US_ASCII)))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("not a thing reference");
    }

    @Test
    void withTheDiskCacheOffNothingIsStoredOrRead() {
        ContentStore store = withCacheRoot(Path.of(KernelCache.OFF), () -> new ContentStore("things", ".thing", "kiln-thing:", "thing"));
        byte[] reference = store.publish(new byte[] {1, 2, 3});
        assertThatThrownBy(() -> store.read(store.hashOf(reference))).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("disk cache is off");
    }
}

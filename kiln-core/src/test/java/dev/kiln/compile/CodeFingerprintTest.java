package dev.kiln.compile;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.TreeMap;
import java.util.zip.ZipEntry;
import java.util.zip.ZipOutputStream;

import static org.assertj.core.api.Assertions.assertThat;

/** The fingerprint of Kiln's classes that keys caches of what Kiln's own code computes. */
class CodeFingerprintTest {
    private static Path folder(Path at, Map<String, String> files) throws IOException {
        for (var e : files.entrySet()) {
            Path f = at.resolve(e.getKey());
            Files.createDirectories(f.getParent());
            Files.writeString(f, e.getValue());
        }
        return at;
    }

    private static Path jar(Path at, Map<String, String> files) throws IOException {
        try (OutputStream out = Files.newOutputStream(at); ZipOutputStream zip = new ZipOutputStream(out)) {
            for (var e : files.entrySet()) {
                zip.putNextEntry(new ZipEntry(e.getKey()));
                zip.write(e.getValue().getBytes(StandardCharsets.UTF_8));
                zip.closeEntry();
            }
        }
        return at;
    }

    private static final Map<String, String> CLASSES = new TreeMap<>(Map.of(
            "dev/kiln/Tensor.class", "tensor v1",
            "dev/kiln/cpu/JavaRenderer.class", "renderer v1",
            "dev/kiln/cpu/JavaRenderer$Expr.class", "expr v1",
            "META-INF/MANIFEST.MF", "Manifest-Version: 1.0\n",
            "org/other/Thing.class", "not kiln"));

    private static Map<String, String> with(String name, String content) {
        Map<String, String> m = new TreeMap<>(CLASSES);
        if (content == null) m.remove(name);
        else m.put(name, content);
        return m;
    }

    @Test
    void aJarAndAFolderWithTheSameClassesAgree(@TempDir Path dir) throws IOException {
        var inFolder = CodeFingerprint.of(folder(dir.resolve("classes"), CLASSES));
        var inJar = CodeFingerprint.of(jar(dir.resolve("kiln.jar"), CLASSES));
        assertThat(inFolder).isPresent().get().asString().matches("[0-9a-f]{64}");
        assertThat(inJar).isEqualTo(inFolder);
        assertThat(CodeFingerprint.of(jar(dir.resolve("again.jar"), CLASSES))).as("an identical rebuild").isEqualTo(inJar);
    }

    @Test
    void anyChangeToAKilnClassChangesIt(@TempDir Path dir) throws IOException {
        var base = CodeFingerprint.of(jar(dir.resolve("base.jar"), CLASSES));
        assertThat(CodeFingerprint.of(jar(dir.resolve("a.jar"), with("dev/kiln/cpu/JavaRenderer$Expr.class", "expr v2")))).isNotEqualTo(base);
        assertThat(CodeFingerprint.of(jar(dir.resolve("b.jar"), with("dev/kiln/codegen/Heuristics.class", "new")))).isNotEqualTo(base);
        assertThat(CodeFingerprint.of(jar(dir.resolve("c.jar"), with("dev/kiln/Tensor.class", null)))).isNotEqualTo(base);
        assertThat(CodeFingerprint.of(folder(dir.resolve("d"), with("dev/kiln/Tensor.class", "tensor v2")))).isNotEqualTo(base);
        // other files do not matter
        assertThat(CodeFingerprint.of(jar(dir.resolve("e.jar"), with("org/other/Thing.class", "changed")))).isEqualTo(base);
        assertThat(CodeFingerprint.of(jar(dir.resolve("f.jar"), with("dev/kiln/notes.txt", "text")))).isEqualTo(base);
    }

    @Test
    void withoutKilnClassesThereIsNone(@TempDir Path dir) throws IOException {
        assertThat(CodeFingerprint.of(dir.resolve("missing.jar"))).isEmpty();
        assertThat(CodeFingerprint.of(folder(dir.resolve("empty"), Map.of("org/A.class", "a")))).isEmpty();
        assertThat(CodeFingerprint.of(jar(dir.resolve("other.jar"), Map.of("org/A.class", "a")))).isEmpty();
        Files.writeString(dir.resolve("not-a.jar"), "plain text");
        assertThat(CodeFingerprint.of(dir.resolve("not-a.jar"))).isEmpty();
    }

    @Test
    void kilnItselfHasOne() {
        assertThat(CodeFingerprint.of(CodeFingerprint.class)).isPresent();
        assertThat(CodeFingerprint.of(String.class)).as("a class of the runtime image").isEmpty();
    }
}

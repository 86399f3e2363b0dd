package dev.kiln.cpu;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The program cache across processes, as a server restart meets it: a fresh JVM that finds a warm
 * cache lowers, optimises and renders nothing, and computes the same bits as one that did.
 */
class ProgramCacheProcessTest {
    private static String probe(String cacheDir) throws IOException, InterruptedException {
        List<String> cmd = new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "--add-modules", "jdk.incubator.vector", "--enable-native-access=ALL-UNNAMED",
                "-Dkiln.cache.dir=" + cacheDir, "-cp", System.getProperty("java.class.path"), ProgramCacheProbe.class.getName()));
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
        byte[] out = p.getInputStream().readAllBytes();
        assertThat(p.waitFor(120, TimeUnit.SECONDS)).isTrue();
        String text = new String(out, StandardCharsets.UTF_8);
        assertThat(p.exitValue()).as(text).isZero();
        return text;
    }

    private static String line(String text, String key) {
        return text.lines().filter(l -> l.startsWith(key + "=")).findFirst().orElseThrow(() -> new AssertionError(key + " missing in\n" + text));
    }

    @Test
    void aWarmCacheInANewProcessGivesTheSameKernelsAndBits(@TempDir Path dir) throws Exception {
        String cold = probe(dir.toString());
        String warm = probe(dir.toString());
        String none = probe("off");
        assertThat(line(cold, "compiles")).doesNotContain("compiles=0 ").contains("diskHits=0 ");
        assertThat(line(warm, "compiles")).startsWith("compiles=0 ").doesNotContain("diskHits=0 ").endsWith("corrupt=0");
        for (String key : List.of("output", "kernels")) {
            assertThat(line(warm, key)).as(key).isEqualTo(line(cold, key)).isEqualTo(line(none, key));
        }
    }
}

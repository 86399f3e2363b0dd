package dev.kiln.cpu;

import org.junit.jupiter.api.Test;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Every register tile compiles at each JIT tier. A hand-unrolled tile whose method C1 gives up on ("out of virtual
 * registers") runs as tier-2 code without vector intrinsics, every vector boxed, until C2 gets to it: a residual
 * variant written out beside its K loop once ran ResNet-50 at 2.5 s a run instead of 0.1 s, and no other test noticed.
 */
class TileCompileTest {
    @Test
    void noTileMethodIsSkippedByTheJit() throws Exception {
        List<String> cmd = List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "--add-modules", "jdk.incubator.vector", "--enable-native-access=ALL-UNNAMED", "-XX:+PrintCompilation",
                "-Dkiln.gemm.paddedImage=force", "-cp", System.getProperty("java.class.path"), TileCompileProbe.class.getName());
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertThat(p.waitFor(120, TimeUnit.SECONDS)).isTrue();
        assertThat(p.exitValue()).as(out).isZero();
        assertThat(out.lines().filter(l -> l.contains("done"))).hasSize(1);
        // the tiles were compiled at all (the probe reached them), and none was given up on
        assertThat(out.lines().filter(l -> l.contains("GemmMicroKernel::wideIntoRun"))).isNotEmpty();
        assertThat(out.lines().filter(l -> l.contains("GemmMicroKernel::imageTileEdge"))).isNotEmpty();
        assertThat(out.lines().filter(l -> l.contains("GemmMicroKernel::wideEdge"))).isNotEmpty();
        assertThat(out.lines().filter(l -> l.contains("GemmMicroKernel::wideQuarter"))).isNotEmpty();
        assertThat(out.lines().filter(l -> l.contains("GemmMicroKernel::imageTileQuarter"))).isNotEmpty();
        assertThat(out.lines().filter(l -> l.contains("GemmMicroKernel") && l.contains("COMPILE SKIPPED")).toList()).isEmpty();
    }
}

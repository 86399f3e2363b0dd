package dev.kiln.bench;

import org.junit.jupiter.api.Test;

import java.io.File;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** The alternating harness: its options, a second copy of kiln-core in a loader of its own, the blocks and the table. */
class AlternatingBenchTest {
    /** A conformance case with its inputs beside it (test_data_set_0), as the shared model cases have. */
    static final Path MATMUL = Path.of("../../shared/conformance/onnx-node/test_matmul_2d/model.onnx").toAbsolutePath().normalize();

    @Test
    void optionsHaveDefaultsAndRefuseWhatTheyDoNotKnow() {
        AlternatingBench.Options o = AlternatingBench.Options.parse(new String[] {"m.onnx"});
        assertThat(o.builds()).isEmpty();
        assertThat(o.ort()).isFalse();
        assertThat(o.runs()).isEqualTo(40);
        assertThat(o.block()).isEqualTo(10);
        assertThat(o.warmup()).isEqualTo(100);
        o = AlternatingBench.Options.parse(new String[] {"m.onnx", "--builds", "a, b", "--ort", "--runs", "6", "--block", "2"});
        assertThat(o.builds()).containsExactly("a", "b");
        assertThat(o.ort()).isTrue();
        assertThat(o.runs()).isEqualTo(6);
        assertThatThrownBy(() -> AlternatingBench.Options.parse(new String[0])).hasMessageContaining("usage");
        assertThatThrownBy(() -> AlternatingBench.Options.parse(new String[] {"m.onnx", "--speed", "2"})).hasMessageContaining("unknown option --speed");
        assertThatThrownBy(() -> AlternatingBench.Options.parse(new String[] {"m.onnx", "--runs"})).hasMessageContaining("--runs needs a value");
        assertThatThrownBy(() -> AlternatingBench.Options.parse(new String[] {"m.onnx", "--block", "0"})).hasMessageContaining("at least 1, was 0");
    }

    @Test
    void aBuildRunsFromItsOwnLoaderBesideThisClassPathsAndGivesTheSameOutput() throws Exception {
        // the kiln-core this test runs with, loaded a second time as a "build"
        String core = Arrays.stream(System.getProperty("java.class.path").split(File.pathSeparator))
                .filter(e -> e.contains("kiln-core")).findFirst().orElseThrow();
        AlternatingBench.main(new String[] {MATMUL.toString(), "--builds", core, "--warmup", "1", "--runs", "3", "--block", "2"});
        try (KilnModelRun here = new KilnModelRun(MATMUL.toString(), "CPU")) {
            here.run();
            assertThat(here.get()).hasSize(3 * 3); // test_matmul_2d: (3 x 4) . (4 x 3)
        }
    }

    @Test
    void blocksCompareEachVariantWithTheFirstRunBesideIt() {
        // the host halves its speed between blocks; b is 10 % faster than a in every block, c slower in one of three
        double[][] ms = {{10, 10, 20, 20, 40, 40}, {9, 9, 18, 18, 36, 36}, {9, 9, 22, 22, 36, 36}};
        String t = AlternatingBench.blockTable(List.of("a", "b", "c"), ms, 2);
        assertThat(t.lines().filter(l -> l.contains(" b ")).findFirst().orElseThrow()).contains("0.900x").contains("3 of 3");
        assertThat(t.lines().filter(l -> l.contains(" c ")).findFirst().orElseThrow()).contains("0.900x").contains("2 of 3");
        // a last block shorter than the others counts as one
        assertThat(AlternatingBench.blockTable(List.of("a", "b"), new double[][] {{10, 10, 10}, {5, 5, 20}}, 2)).contains("1.250x").contains("1 of 2");
    }

    @Test
    void theTableGivesMediansPercentilesAndRatios() {
        double[][] ms = {{1, 2, 3, 4}, {2, 4, 6, 8}, {1, 1, 1, 1}};
        String t = AlternatingBench.table(List.of("a", "b", "ONNX Runtime"), ms, true);
        assertThat(t).contains("a").contains("2.500").contains("1.000x").contains("2.50x");
        assertThat(t.lines().filter(l -> l.contains(" b ")).findFirst().orElseThrow()).contains("5.000").contains("2.000x").contains("5.00x");
    }
}

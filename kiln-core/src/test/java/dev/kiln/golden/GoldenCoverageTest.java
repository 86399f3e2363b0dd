package dev.kiln.golden;

import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.net.URISyntaxException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;

/** The contract: at least 150 distinct Tensor ops are covered by golden value tests. */
class GoldenCoverageTest {
    static List<String> groups() throws IOException, URISyntaxException {
        Path dir = Path.of(GoldenCoverageTest.class.getResource("/golden").toURI());
        try (Stream<Path> files = Files.list(dir)) {
            return files.map(p -> p.getFileName().toString()).filter(n -> n.endsWith(".json"))
                    .map(n -> n.substring(0, n.length() - 5)).sorted().toList();
        }
    }

    /** A golden file counts only if a test class runs it: {@code <Group>GoldenTest} with that group. */
    @Test
    void everyGroupHasATestClass() throws Exception {
        for (String g : groups()) {
            String cls = GoldenCoverageTest.class.getPackageName() + "." + Character.toUpperCase(g.charAt(0)) + g.substring(1) + "GoldenTest";
            Class<?> c = Class.forName(cls);
            var ctor = c.getDeclaredConstructor();
            ctor.setAccessible(true);
            assertThat(((GoldenTestBase) ctor.newInstance()).group()).as(cls).isEqualTo(g);
        }
    }

    @Test
    void atLeast150DistinctOpsHaveGoldenCases() throws Exception {
        Set<String> ops = new TreeSet<>();
        for (String g : groups()) ops.addAll(GoldenTestBase.opsOf(g));
        assertThat(ops.size()).as("distinct golden-tested ops: " + ops).isGreaterThanOrEqualTo(150);
    }
}

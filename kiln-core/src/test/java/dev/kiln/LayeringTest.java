package dev.kiln;

import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.spi.ToolProvider;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The layering of kiln-core's packages (docs/ARCHITECTURE.md), read from the compiled classes by {@code jdeps}: no
 * package cycle, and the compiler's floor packages depend only on the layers below them (schedule and codegen on
 * the IR alone). Also the size rule for
 * main sources: a file over 1,000 lines is a file with more than one responsibility. {@code Tensor} is the one
 * exception, up to 1,600: it is the whole public op surface, each method a line or two of Javadoc and delegation.
 */
class LayeringTest {
    private static final Path CLASSES = Path.of("target", "classes");
    private static final Pattern EDGE = Pattern.compile("^\\s+(dev\\.kiln[\\w.]*)\\s+->\\s+(dev\\.kiln[\\w.]*)\\s");

    /** Package -> the other Kiln packages its classes refer to. */
    private static Map<String, Set<String>> deps;

    @BeforeAll
    static void readDependencies() {
        ToolProvider jdeps = ToolProvider.findFirst("jdeps").orElseThrow(() -> new AssertionError("this JDK has no jdeps tool"));
        StringWriter out = new StringWriter(), err = new StringWriter();
        int rc = jdeps.run(new PrintWriter(out), new PrintWriter(err), "-verbose:package", "-filter:none", CLASSES.toString());
        assertThat(rc).as("jdeps exit status; stderr: %s", err).isZero();
        deps = new TreeMap<>();
        for (String line : out.toString().split("\n")) {
            Matcher m = EDGE.matcher(line);
            if (!m.find()) continue;
            deps.computeIfAbsent(m.group(1), k -> new TreeSet<>());
            if (!m.group(1).equals(m.group(2))) deps.get(m.group(1)).add(m.group(2));
        }
        assertThat(deps).as("jdeps found kiln-core's packages").containsKeys("dev.kiln", "dev.kiln.ir", "dev.kiln.runtime");
    }

    @Test
    void noPackageCycle() {
        List<List<String>> cycles = new ArrayList<>();
        for (String start : deps.keySet()) findCycle(start, new ArrayList<>(List.of(start)), cycles);
        assertThat(cycles).as("package cycles among %s", deps).isEmpty();
    }

    private static void findCycle(String at, List<String> path, List<List<String>> cycles) {
        for (String next : deps.getOrDefault(at, Set.of())) {
            if (next.equals(path.getFirst())) {
                // report each cycle once: from its smallest package
                if (path.stream().allMatch(p -> p.compareTo(path.getFirst()) >= 0)) cycles.add(List.copyOf(path));
            } else if (!path.contains(next) && next.compareTo(path.getFirst()) > 0) {
                path.add(next);
                findCycle(next, path, cycles);
                path.removeLast();
            }
        }
    }

    @Test
    void theFloorDependsOnNothing() {
        assertThat(deps.getOrDefault("dev.kiln.types", Set.of())).isEmpty();
    }

    @Test
    void theCompilerCoreDependsOnlyOnTheLayersBelowIt() {
        assertThat(deps.get("dev.kiln.ir")).isSubsetOf("dev.kiln.types");
        assertThat(deps.get("dev.kiln.schedule")).isSubsetOf("dev.kiln.types", "dev.kiln.ir");
        // the scheduler and the code generator are siblings over the IR: compile and runtime connect them
        assertThat(deps.get("dev.kiln.codegen")).isSubsetOf("dev.kiln.types", "dev.kiln.ir");
        // the kernel pipeline and its caches know the compiler, never the plans or devices that use them
        assertThat(deps.get("dev.kiln.compile")).isSubsetOf("dev.kiln.types", "dev.kiln.ir", "dev.kiln.schedule", "dev.kiln.codegen");
    }

    @Test
    void noMainSourceFileIsOverAThousandLines() throws IOException {
        Path repo = Path.of("").toAbsolutePath().getParent();
        List<String> tooLong = new ArrayList<>();
        try (Stream<Path> modules = Files.list(repo)) {
            for (Path module : modules.filter(m -> Files.isDirectory(m.resolve("src/main/java"))).toList()) {
                try (Stream<Path> files = Files.walk(module.resolve("src/main/java"))) {
                    for (Path f : files.filter(f -> f.toString().endsWith(".java")).toList()) {
                        long lines;
                        try (Stream<String> s = Files.lines(f)) { lines = s.count(); }
                        long limit = f.getFileName().toString().equals("Tensor.java") ? 1600 : 1000;
                        if (lines > limit) tooLong.add(repo.relativize(f) + " (" + lines + " lines)");
                    }
                }
            }
        }
        assertThat(tooLong).isEmpty();
    }
}

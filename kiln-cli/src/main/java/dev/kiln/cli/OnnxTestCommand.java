package dev.kiln.cli;

import dev.kiln.onnx.ConformanceRunner;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

/** {@code kiln onnx-test DIR...}: runs ONNX backend-test cases and compares every output with the reference. */
@Command(name = "onnx-test", mixinStandardHelpOptions = true, sortOptions = false,
        description = {"Run every ONNX backend-test case (a folder holding model.onnx and test_data_set_N/) found under the given"
                + " folders, print one line per case (PASS, FAIL with the worst mismatch, SKIP with the reason) and last the line"
                + " 'N passed, M failed, K skipped'.",
                "Exit status: 0 when no case failed, 1 when one did, 2 for bad input."})
final class OnnxTestCommand extends KilnCommand {
    @Mixin
    DeviceOption device;

    @Option(names = "--markdown", paramLabel = "FILE", description = "Also write the per-operator table (the CONFORMANCE.md format) to FILE.")
    Path markdown;

    @Parameters(paramLabel = "DIR", arity = "1..*", description = "A case folder, or a folder holding case folders.")
    List<Path> dirs;

    @Override
    int execute() {
        String d = device.resolve().spec().toString();
        for (Path dir : dirs) {
            if (!Files.isDirectory(dir)) {
                throw new IllegalArgumentException("DIR: expected a folder of ONNX test cases, got '" + dir + "'"
                        + (Files.exists(dir) ? " (not a folder)" : " (no such folder)"));
            }
            if (!hasCase(dir)) throw new IllegalArgumentException("DIR: no ONNX test case (a folder holding model.onnx) under '" + dir + "'");
        }
        try (OutputFiles files = new OutputFiles()) {
            Path staged = markdown == null ? null : files.stage(markdown); // a bad path fails before the cases run
            ConformanceRunner.Report report = ConformanceRunner.run(dirs, d, line -> {
                out().println(line);
                out().flush();
            });
            if (staged != null) {
                write(staged, ConformanceRunner.markdown(List.of(report)));
                files.commit();
            }
            return report.count(ConformanceRunner.Status.FAIL) > 0 ? ErrorHandler.FAILURE : 0;
        }
    }

    private static boolean hasCase(Path dir) {
        if (Files.isRegularFile(dir.resolve("model.onnx"))) return true;
        try (var s = Files.walk(dir, 3)) {
            return s.anyMatch(p -> p.getFileName().toString().equals("model.onnx"));
        } catch (IOException e) {
            throw new UncheckedIOException("cannot list " + dir + ": " + e.getMessage(), e);
        }
    }

    private static void write(Path file, String text) {
        try {
            Files.writeString(file, text);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot write " + file + ": " + e.getMessage(), e);
        }
    }
}

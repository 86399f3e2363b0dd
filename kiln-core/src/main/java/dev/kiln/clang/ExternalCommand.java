package dev.kiln.clang;

import java.io.File;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Comparator;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

/** Runs the external tools of the native devices (C compilers, nvcc) and cleans up after them. */
public final class ExternalCommand {
    private ExternalCommand() {}

    /** A finished command: its exit status and its output (stdout and stderr together). */
    public record Result(int exit, String output) {}

    /** Runs a command with its output (stdout and stderr) in a file, so nothing blocks on a full pipe. */
    public static Result run(List<String> cmd, Path workDir, long timeoutSeconds) {
        Path log = null;
        try {
            log = Files.createTempFile("kiln-tool-", ".log");
            ProcessBuilder pb = new ProcessBuilder(cmd).redirectErrorStream(true).redirectOutput(log.toFile())
                    .redirectInput(ProcessBuilder.Redirect.from(new File(File.separatorChar == '\\' ? "NUL" : "/dev/null")));
            if (workDir != null) pb.directory(workDir.toFile());
            Process p = pb.start();
            if (!p.waitFor(timeoutSeconds, TimeUnit.SECONDS)) {
                p.destroyForcibly();
                throw new IllegalStateException("'" + String.join(" ", cmd) + "' did not finish within " + timeoutSeconds + " s");
            }
            return new Result(p.exitValue(), Files.readString(log, StandardCharsets.UTF_8));
        } catch (IOException e) {
            throw new UncheckedIOException("cannot run '" + String.join(" ", cmd) + "': " + e.getMessage(), e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted while running '" + String.join(" ", cmd) + "'", e);
        } finally {
            if (log != null) {
                try {
                    Files.deleteIfExists(log);
                } catch (IOException ignored) {
                    // a leftover log in the temp folder is harmless
                }
            }
        }
    }

    /** Deletes a folder and everything in it, as far as it can. */
    public static void deleteTree(Path dir) {
        try (Stream<Path> files = Files.walk(dir)) {
            files.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
        } catch (IOException ignored) {
            // a leftover folder in the temp folder is harmless
        }
    }

    /** {@code code} with line numbers, as compiler messages refer to them. */
    public static String numbered(String code) {
        StringBuilder b = new StringBuilder();
        String[] lines = code.split("\n", -1);
        for (int i = 0; i < lines.length; i++) b.append(String.format(Locale.ROOT, "%5d  %s%n", i + 1, lines[i]));
        return b.toString();
    }
}

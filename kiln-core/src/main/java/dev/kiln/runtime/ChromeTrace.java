package dev.kiln.runtime;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.List;
import java.util.Locale;

/**
 * Writes profiles in the Chrome trace-event format ("X" complete events, times in microseconds), which
 * Perfetto (ui.perfetto.dev) and chrome://tracing open.
 */
public final class ChromeTrace {
    private ChromeTrace() {}

    /** Writes {@code profiles} to {@code file} atomically (a temporary file, then a rename). */
    public static void write(Path file, List<KernelProfile> profiles) {
        Path tmp = file.resolveSibling(file.getFileName() + ".tmp");
        try (Writer w = Files.newBufferedWriter(tmp, StandardCharsets.UTF_8)) {
            w.write(toJson(profiles));
        } catch (IOException e) {
            throw new UncheckedIOException("cannot write trace " + file, e);
        }
        try {
            Files.move(tmp, file, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot publish trace " + file, e);
        }
    }

    /** The trace document for {@code profiles}. */
    public static String toJson(List<KernelProfile> profiles) {
        StringBuilder sb = new StringBuilder("{\"displayTimeUnit\":\"ns\",\"traceEvents\":[");
        for (int i = 0; i < profiles.size(); i++) {
            KernelProfile p = profiles.get(i);
            if (i > 0) sb.append(',');
            sb.append(String.format(Locale.ROOT,
                    "{\"name\":%s,\"cat\":\"kernel\",\"ph\":\"X\",\"pid\":1,\"tid\":%s,\"ts\":%.3f,\"dur\":%.3f,"
                            + "\"args\":{\"flops\":%d,\"bytes\":%d,\"gflops\":%.3f,\"gbps\":%.3f}}",
                    quote(p.name()), quote(p.thread()), p.startNanos() / 1e3, p.elapsedNanos() / 1e3,
                    p.flops(), p.bytes(), p.gflops(), p.gbPerSecond()));
        }
        return sb.append("]}").toString();
    }

    private static String quote(String s) {
        StringBuilder sb = new StringBuilder("\"");
        for (char c : s.toCharArray()) {
            switch (c) {
                case '"' -> sb.append("\\\"");
                case '\\' -> sb.append("\\\\");
                case '\n' -> sb.append("\\n");
                default -> {
                    if (c < 0x20) sb.append(String.format("\\u%04x", (int) c));
                    else sb.append(c);
                }
            }
        }
        return sb.append('"').toString();
    }
}

package dev.kiln.io;

import com.code_intelligence.jazzer.junit.FuzzTest;
import dev.kiln.fuzz.FuzzCampaign;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.TreeMap;

/**
 * Coverage-guided fuzzing of the {@code .npy} reader with Jazzer (issue 13): the target of {@link NpyFuzzTest} (bytes
 * written to a file, {@link Npy#readArray}, a tensor on INTERP, realized); {@link NpyFormatException} is the one typed
 * outcome, any other throwable is a finding.
 *
 * <p>In the default test run Jazzer replays its inputs directory ({@code NpyJazzerTestInputs/readArray} on the test class
 * path, which the build fills from {@code fuzz/npy/seeds} and {@code fuzz/npy/crashers}); with {@code JAZZER_FUZZ=1} in the environment
 * it fuzzes, with coverage, for {@code maxDuration} ({@code -Djazzer.max_duration} and
 * {@code -Djazzer.max_executions} override it). See RELIABILITY.md.
 */
class NpyJazzerTest {
    private static Path file;
    /** Executions by outcome ("ok" or the exception's simple name), printed at the end: the long runs' counts. */
    private static final Map<String, Long> OUTCOMES = new TreeMap<>();

    @BeforeAll
    static void createFile() throws IOException {
        file = Files.createTempFile("kiln-npy-jazzer", ".npy");
    }

    @AfterAll
    static void deleteFile() throws IOException {
        System.out.println("NpyJazzerTest outcomes: " + OUTCOMES);
        Files.deleteIfExists(file);
    }

    @FuzzTest(maxDuration = "30s")
    void readArray(byte[] bytes) throws IOException {
        long t0 = System.nanoTime();
        String outcome = "ok";
        try {
            NpyFuzzTest.readArray(file, bytes);
        } catch (NpyFormatException e) {
            outcome = "NpyFormatException";
        }
        OUTCOMES.merge(outcome, 1L, Long::sum);
        long ms = (System.nanoTime() - t0) / 1_000_000;
        // as FuzzCampaign: an input slower than 10 s is a finding (a JUnit @Timeout would bound the whole fuzzing run)
        if (ms > FuzzCampaign.SLOW_MILLIS) throw new AssertionError("slow input: " + ms + " ms (" + outcome + ")");
    }
}

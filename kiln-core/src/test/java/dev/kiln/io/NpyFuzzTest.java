package dev.kiln.io;

import dev.kiln.fuzz.FuzzCampaign;
import dev.kiln.fuzz.ByteMutator;

import dev.kiln.runtime.DeviceRegistry;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Set;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;

/**
 * Fuzzing of the {@code .npy} reader (issue 13): any bytes given to {@link Npy#readArray} either read (and become a
 * tensor) or fail with {@link NpyFormatException}. The committed seeds ({@code fuzz/npy/seeds}) and crashers
 * ({@code fuzz/npy/crashers}) replay in every run; then a bounded, seeded mutation run (3,000 inputs or 10 s by default;
 * {@code kiln.fuzz.iterations}, {@code kiln.fuzz.seconds} and {@code kiln.fuzz.seed} set it, see RELIABILITY.md).
 */
class NpyFuzzTest {
    private static final List<String> TOKENS = List.of("{'descr': '<f4', 'fortran_order': False, 'shape': (", "(", ")", "((((((((", "[", "]",
            "'", "\"", "True", "False", "2147483647", "2147483648", "-1", "0", "9223372036854775807", "99999999999999999999", "L",
            "'shape'", "'descr'", "'fortran_order'", "<f8", ">i2", "|b1", "u8", "<c8", "|O", ",", ":", "}", "{", " ", "\n", "\u0093NUMPY");
    private static Path file;

    @BeforeAll
    static void createFile() throws IOException {
        // one file reused for every input: the reader's API takes a path
        file = Files.createTempFile("kiln-npy-fuzz", ".npy");
    }

    @AfterAll
    static void deleteFile() throws IOException {
        Files.deleteIfExists(file);
    }

    private static FuzzCampaign campaign() {
        return new FuzzCampaign("npy", NpyFuzzTest::readArray, Set.of(NpyFormatException.class));
    }

    private static void readArray(byte[] bytes) throws IOException {
        readArray(file, bytes);
    }

    /** The target (also {@link NpyJazzerTest}'s): {@code bytes} written to {@code file}, read, made a tensor on INTERP. */
    static void readArray(Path file, byte[] bytes) throws IOException {
        Files.write(file, bytes);
        Npy.readArray(file).toTensor(DeviceRegistry.get("INTERP")).realize();
    }

    @Test
    void seedsAndCrashersReplayTyped() {
        List<byte[]> seeds = FuzzCampaign.resources(NpyFuzzTest.class, "/fuzz/npy/seeds");
        List<byte[]> crashers = FuzzCampaign.resources(NpyFuzzTest.class, "/fuzz/npy/crashers");
        FuzzCampaign.Report r = campaign().replay(seeds).replay(crashers).report();
        System.out.println("NpyFuzzTest replay: " + r);
        assertThat(seeds).hasSizeGreaterThanOrEqualTo(5);
        assertThat(r.findings()).isEmpty();
        assertThat(r.outcomes().get("ok")).as("valid seeds read").isGreaterThanOrEqualTo(5);
    }

    @Test
    void mutatedInputsFailTyped() {
        List<byte[]> seeds = FuzzCampaign.resources(NpyFuzzTest.class, "/fuzz/npy/seeds");
        long seconds = FuzzCampaign.setting("kiln.fuzz.seconds", 10);
        // the campaign stops itself after its seconds; the margin catches one input that never returns (a hang)
        long iterations = FuzzCampaign.setting("kiln.fuzz.iterations", 3_000), seed = FuzzCampaign.setting("kiln.fuzz.seed", 13);
        FuzzCampaign.Report r = assertTimeoutPreemptively(Duration.ofSeconds(seconds + 120),
                () -> campaign().mutate(seeds, new ByteMutator(TOKENS), iterations, seconds, seed).report());
        System.out.println("NpyFuzzTest mutation: " + r);
        assertThat(r.findings()).as("inputs that ended outside success and NpyFormatException (saved under target/fuzz-findings/npy)").isEmpty();
    }
}

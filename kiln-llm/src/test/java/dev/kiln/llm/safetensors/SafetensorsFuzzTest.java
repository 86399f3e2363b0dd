package dev.kiln.llm.safetensors;

import dev.kiln.fuzz.ByteMutator;
import dev.kiln.fuzz.FuzzCampaign;
import dev.kiln.llm.ModelFileException;
import org.junit.jupiter.api.Test;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Set;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;

/**
 * Fuzzing of the safetensors reader (issue 13's harness): mutants of the committed file (written by the safetensors
 * package) are parsed and, when that succeeds, every tensor's data is read. Parsing either succeeds or throws
 * {@link ModelFileException}; anything else is a finding. 2,000 inputs or 10 s by default.
 */
class SafetensorsFuzzTest {
    private static final List<String> TOKENS = List.of("\"dtype\"", "\"shape\"", "\"data_offsets\"", "\"__metadata__\"", "\"F32\"", "\"BF16\"",
            "\"F16\"", "\"I64\"", "[", "]", "{", "}", ",", ":", "null", "-1", "1e400", "99999999999999999999", "[0,0]");

    private static FuzzCampaign campaign() {
        return new FuzzCampaign("safetensors", SafetensorsFuzzTest::readEverything, Set.of(ModelFileException.class));
    }

    static void readEverything(byte[] bytes) {
        SafetensorsFile f = SafetensorsFile.parse(MemorySegment.ofArray(bytes), Path.of("fuzz.safetensors"));
        for (SafetensorsTensor t : f.tensors()) {
            byte[] data = t.data().toArray(ValueLayout.JAVA_BYTE);
            if (data.length != t.numel() * t.dtype().itemSize()) throw new AssertionError(t + ": " + data.length + " bytes");
        }
    }

    @Test
    void mutatedFilesFailTyped() {
        List<byte[]> seeds = FuzzCampaign.resources(SafetensorsFuzzTest.class, "/safetensors/files");
        assertThat(campaign().replay(seeds).report().outcomes().get("ok")).isEqualTo(seeds.size());
        long seconds = FuzzCampaign.setting("kiln.fuzz.seconds", 10);
        long iterations = FuzzCampaign.setting("kiln.fuzz.iterations", 2_000), seed = FuzzCampaign.setting("kiln.fuzz.seed", 14);
        FuzzCampaign.Report r = assertTimeoutPreemptively(Duration.ofSeconds(seconds + 120),
                () -> campaign().mutate(seeds, new ByteMutator(TOKENS), iterations, seconds, seed).report());
        System.out.println("SafetensorsFuzzTest mutation: " + r);
        assertThat(r.findings()).as("inputs that ended outside success and ModelFileException (saved under target/fuzz-findings/safetensors)").isEmpty();
    }
}

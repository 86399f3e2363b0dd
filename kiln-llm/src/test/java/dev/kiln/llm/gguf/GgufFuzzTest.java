package dev.kiln.llm.gguf;

import dev.kiln.fuzz.ByteMutator;
import dev.kiln.fuzz.FuzzCampaign;
import dev.kiln.llm.ModelConfig;
import dev.kiln.llm.ModelFileException;
import org.junit.jupiter.api.Test;

import java.lang.foreign.MemorySegment;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Set;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;

/**
 * Fuzzing of the GGUF reader (issue 13's harness): mutants of the committed fixtures (gguf/files, written by llama.cpp's
 * writer) are parsed, and when that succeeds every metadata value, every typed getter, every tensor's dequantisation
 * and {@link ModelConfig#fromGguf} are exercised. Each step either succeeds or throws {@link ModelFileException};
 * anything else (an index exception, an OutOfMemoryError, an arithmetic exception) is a finding. 3,000 inputs or 10 s
 * by default ({@code kiln.fuzz.iterations}, {@code kiln.fuzz.seconds}, {@code kiln.fuzz.seed}).
 */
class GgufFuzzTest {
    private static final List<String> TOKENS = List.of("GGUF", "general.alignment", "general.architecture", "llama.", "tokenizer.ggml.tokens",
            "\u0003\u0000\u0000\u0000", "\u0002\u0000\u0000\u0000", "\u0009\u0000\u0000\u0000", "\u0008\u0000\u0000\u0000", "\u000c\u0000\u0000\u0000",
            "\u0000\u0001\u0000\u0000\u0000\u0000\u0000\u0000", "\u0040\u0000\u0000\u0000");

    private static FuzzCampaign campaign() {
        return new FuzzCampaign("gguf", GgufFuzzTest::readEverything, Set.of(ModelFileException.class));
    }

    static void readEverything(byte[] bytes) {
        GgufFile f = GgufFile.parse(MemorySegment.ofArray(bytes), Path.of("fuzz.gguf"));
        for (Map.Entry<String, Object> e : f.metadata().entrySet()) {
            touch(e.getValue());
            typed(() -> f.string(e.getKey()));
            typed(() -> f.integer(e.getKey()));
            typed(() -> f.real(e.getKey()));
            typed(() -> f.floats(e.getKey()));
            typed(() -> f.ints(e.getKey()));
            typed(() -> f.strings(e.getKey()));
        }
        for (GgufTensor t : f.tensors()) typed(t::dequantize);
        typed(() -> ModelConfig.fromGguf(f));
    }

    /** Reads every element, so that the compact lists decode each one. */
    private static void touch(Object v) {
        if (v instanceof List<?> l) for (Object x : l) touch(x);
    }

    /** Runs a step that may refuse the input with a ModelFileException; anything else propagates as a finding. */
    private static void typed(Runnable step) {
        try {
            step.run();
        } catch (ModelFileException expected) {
            // the typed refusal under test
        }
    }

    @Test
    void fixturesReadCompletely() {
        List<byte[]> seeds = FuzzCampaign.resources(GgufFuzzTest.class, "/gguf/files");
        FuzzCampaign.Report r = campaign().replay(seeds).report();
        assertThat(seeds).hasSizeGreaterThanOrEqualTo(6);
        assertThat(r.findings()).isEmpty();
        assertThat(r.outcomes().get("ok")).isEqualTo(seeds.size());
    }

    @Test
    void mutatedFilesFailTyped() {
        List<byte[]> seeds = FuzzCampaign.resources(GgufFuzzTest.class, "/gguf/files");
        long seconds = FuzzCampaign.setting("kiln.fuzz.seconds", 10);
        long iterations = FuzzCampaign.setting("kiln.fuzz.iterations", 3_000), seed = FuzzCampaign.setting("kiln.fuzz.seed", 14);
        FuzzCampaign.Report r = assertTimeoutPreemptively(Duration.ofSeconds(seconds + 120),
                () -> campaign().mutate(seeds, new ByteMutator(TOKENS), iterations, seconds, seed).report());
        System.out.println("GgufFuzzTest mutation: " + r);
        assertThat(r.findings()).as("inputs that ended outside success and ModelFileException (saved under target/fuzz-findings/gguf)").isEmpty();
        assertThat(r.executions()).isGreaterThanOrEqualTo(Math.min(iterations, 500));
    }
}

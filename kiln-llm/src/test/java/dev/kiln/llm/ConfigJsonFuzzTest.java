package dev.kiln.llm;

import dev.kiln.fuzz.ByteMutator;
import dev.kiln.fuzz.FuzzCampaign;
import org.junit.jupiter.api.Test;

import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Set;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;

/**
 * Fuzzing of the config.json loader (issue 13's harness): mutants of the committed configs either load or fail with a
 * {@link ModelFileException}. 2,000 inputs or 10 s by default.
 */
class ConfigJsonFuzzTest {
    private static final List<String> TOKENS = List.of("\"rope_scaling\"", "\"rope_parameters\"", "\"rope_type\"", "\"llama3\"", "\"linear\"",
            "\"num_key_value_heads\"", "\"head_dim\"", "\"eos_token_id\"", "\"sliding_window\"", "null", "-1", "0", "1e400", "[", "]", "{", "}", ",");

    @Test
    void mutatedConfigsFailTyped() {
        List<byte[]> seeds = FuzzCampaign.resources(ConfigJsonFuzzTest.class, "/config");
        FuzzCampaign campaign = new FuzzCampaign("config-json", b -> HfConfigReader.parse(b, Path.of("config.json")), Set.of(ModelFileException.class));
        assertThat(campaign.replay(seeds).report().outcomes().get("ok")).isEqualTo(seeds.size());
        long seconds = FuzzCampaign.setting("kiln.fuzz.seconds", 10);
        long iterations = FuzzCampaign.setting("kiln.fuzz.iterations", 2_000), seed = FuzzCampaign.setting("kiln.fuzz.seed", 14);
        FuzzCampaign.Report r = assertTimeoutPreemptively(Duration.ofSeconds(seconds + 120),
                () -> campaign.mutate(seeds, new ByteMutator(TOKENS), iterations, seconds, seed).report());
        System.out.println("ConfigJsonFuzzTest mutation: " + r);
        assertThat(r.findings()).as("inputs that ended outside success and ModelFileException (saved under target/fuzz-findings/config-json)").isEmpty();
    }
}

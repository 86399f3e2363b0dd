package dev.kiln.llm;

import dev.kiln.llm.gguf.GgufFile;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import java.net.URISyntaxException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.List;
import java.util.Optional;
import java.util.OptionalInt;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * ModelConfig from config.json files (written by transformers 5 itself, and in the 4.x format of Llama-3.2-1B's and
 * Qwen2.5-0.5B's published configs) and from GGUF files written by llama.cpp's writer (tools/golden/gen_gguf.py).
 */
class ModelConfigTest {

    static Path resource(String name) {
        try {
            return Path.of(ModelConfigTest.class.getResource(name).toURI());
        } catch (URISyntaxException e) {
            throw new IllegalStateException(e);
        }
    }

    @Test
    void llama32FromAPublishedConfig() {
        ModelConfig c = ModelConfig.fromConfigJson(resource("/config/llama32_1b_hf4.json"));
        assertThat(c).isEqualTo(new ModelConfig("llama", List.of("LlamaForCausalLM"), 2048, 8192, 16, 32, 8, 64, 64, 1e-5, 500000.0,
                Optional.of(new ModelConfig.RopeScaling("llama3", 32.0, 1.0, 4.0, 8192)), 131072, 128256, true, OptionalInt.empty(), false,
                OptionalInt.of(128000), List.of(128001)));
        assertThat(c.queriesPerKeyValueHead()).isEqualTo(4);
    }

    @Test
    void qwen25FromAPublishedConfig() {
        ModelConfig c = ModelConfig.fromConfigJson(resource("/config/qwen25_05b_hf4.json"));
        assertThat(c.modelType()).isEqualTo("qwen2");
        assertThat(c.headDim()).isEqualTo(64);                       // 896 / 14
        assertThat(c.numKeyValueHeads()).isEqualTo(2);
        assertThat(c.slidingWindow()).as("use_sliding_window is false").isEmpty();
        assertThat(c.attentionBias()).as("Qwen2 has q, k, v biases").isTrue();
        assertThat(c.tieWordEmbeddings()).isTrue();
        assertThat(c.ropeTheta()).isEqualTo(1e6);
        assertThat(c.ropeScaling()).isEmpty();
        assertThat(c.rmsNormEps()).isEqualTo(1e-6);
    }

    @Test
    void transformers5Configs() {
        ModelConfig llama = ModelConfig.fromConfigJson(resource("/config/llama_tf5.json"));
        assertThat(llama.ropeTheta()).isEqualTo(500000.0);
        assertThat(llama.ropeScaling()).contains(new ModelConfig.RopeScaling("llama3", 32.0, 1.0, 4.0, 8192));
        assertThat(llama.eosTokenIds()).containsExactly(2, 3);
        assertThat(llama.bosTokenId()).hasValue(1);
        assertThat(llama.headDim()).isEqualTo(16);
        assertThat(llama.architectures()).isEmpty();
        ModelConfig qwen = ModelConfig.fromConfigJson(resource("/config/qwen2_tf5.json"));
        assertThat(qwen.slidingWindow()).isEmpty();
        assertThat(qwen.ropeTheta()).isEqualTo(1e6);
        assertThat(qwen.ropeScaling()).isEmpty();
        ModelConfig mistral = ModelConfig.fromConfigJson(resource("/config/mistral_tf5.json"));
        assertThat(mistral.slidingWindow()).hasValue(4096);
        assertThat(mistral.headDim()).as("explicit head_dim, not 64 / 4").isEqualTo(32);
        assertThat(mistral.ropeDimensions()).isEqualTo(32);
        assertThat(mistral.attentionBias()).isFalse();
    }

    @Test
    void fromGgufAsLlamaCppWritesIt() {
        try (GgufFile f = GgufFile.open(resource("/gguf/files/llama.gguf"))) {
            assertThat(ModelConfig.fromGguf(f)).isEqualTo(new ModelConfig("llama", List.of(), 16, 40, 2, 4, 2, 4, 4, (double) 1e-5f, 500000.0,
                    Optional.of(new ModelConfig.RopeScaling("linear", 4.0, Double.NaN, Double.NaN, 512)), 2048, 32, false, OptionalInt.of(1024), false,
                    OptionalInt.of(1), List.of(2)));
        }
        try (GgufFile f = GgufFile.open(resource("/gguf/files/qwen2.gguf"))) {
            ModelConfig c = ModelConfig.fromGguf(f);
            assertThat(c.modelType()).isEqualTo("qwen2");
            assertThat(c.tieWordEmbeddings()).as("no output.weight").isTrue();
            assertThat(c.attentionBias()).as("blk.0.attn_q.bias").isTrue();
            assertThat(c.ropeTheta()).isEqualTo(1e6);
            assertThat(c.ropeScaling()).isEmpty();
            assertThat(c.slidingWindow()).isEmpty();
        }
    }

    @ParameterizedTest
    @CsvSource(delimiter = '|', value = {
            "'{}'                                                              | model_type: expected a string, not found",
            "'[]'                                                              | expected a JSON object, found array",
            "'{\"model_type\":'                                                | expected a JSON object, found invalid JSON",
            "'{\"model_type\":\"llama\"}'                                      | hidden_size: expected a positive integer, not found",
            "'{\"model_type\":\"llama\",\"hidden_size\":\"64\"}'               | hidden_size: expected a positive integer, found string \"64\"",
            "'{\"model_type\":\"llama\",\"hidden_size\":-64}'                  | hidden_size: expected a positive integer, found number -64",
            "'{\"model_type\":\"llama\",\"hidden_size\":1e10}'                 | hidden_size: expected a positive integer",
            "'{\"model_type\":7}'                                              | model_type: expected a string, found number 7",
    })
    void badConfigsNameTheKey(String json, String message) {
        assertThatThrownBy(() -> HfConfigReader.parse(json.getBytes(StandardCharsets.UTF_8), Path.of("config.json")))
                .isExactlyInstanceOf(ModelFileException.class).hasMessageStartingWith("config.json: ").hasMessageContaining(message);
    }

    private static final String BASE = "\"model_type\":\"llama\",\"hidden_size\":64,\"intermediate_size\":128,\"num_hidden_layers\":2,"
            + "\"num_attention_heads\":4,\"max_position_embeddings\":256,\"vocab_size\":100,\"rms_norm_eps\":1e-5";

    @ParameterizedTest
    @CsvSource(delimiter = '|', value = {
            "'\"num_key_value_heads\":3'                                           | num_key_value_heads: expected a divisor of num_attention_heads = 4, found 3",
            "'\"hidden_size\":66'                                                  | hidden_size: expected a multiple of num_attention_heads = 4 (head_dim is absent), found 66",
            "'\"rope_scaling\":{\"rope_type\":\"yarn\",\"factor\":4.0}'            | rope_scaling.rope_type: expected default, linear or llama3, found 'yarn'",
            "'\"rope_scaling\":{\"type\":\"dynamic\",\"factor\":4.0}'              | rope_scaling.type: expected default, linear or llama3, found 'dynamic'",
            "'\"rope_scaling\":{\"rope_type\":\"llama3\",\"factor\":8.0}'          | rope_scaling.low_freq_factor: expected a positive number, not found",
            "'\"rope_scaling\":{\"rope_type\":\"linear\",\"factor\":-1}'           | rope_scaling.factor: expected a positive number, found number -1",
            "'\"rope_parameters\":{\"rope_type\":\"default\",\"rope_theta\":\"x\"}' | rope_parameters.rope_theta: expected a number, found string",
            "'\"rope_parameters\":{\"rope_type\":\"llama3\",\"factor\":8.0,\"low_freq_factor\":1,\"high_freq_factor\":4}' | rope_parameters.original_max_position_embeddings: expected a positive integer, not found",
            "'\"eos_token_id\":100'                                                | eos_token_id: expected a token id below vocab_size = 100, found 100",
            "'\"eos_token_id\":[1,-2]'                                             | eos_token_id[1]: expected a non-negative integer, found number -2",
            "'\"bos_token_id\":1000'                                               | bos_token_id: expected a token id below vocab_size = 100, found 1000",
            "'\"rms_norm_eps\":0'                                                  | rms_norm_eps: expected a positive number below 1, found number 0",
            "'\"head_dim\":10,\"partial_rotary_factor\":0.5'                        | head_dim * partial_rotary_factor: expected an even number of at most head_dim = 10, found 5",
            "'\"model_type\":\"qwen2\",\"sliding_window\":4096,\"use_sliding_window\":true' | use_sliding_window: Qwen2's per-layer sliding window (max_window_layers) is not supported",
            "'\"layer_types\":[\"full_attention\",\"sliding_attention\"],\"sliding_window\":8' | layer_types: layers with and without a sliding window are not supported",
            "'\"tie_word_embeddings\":\"yes\"'                                     | tie_word_embeddings: expected true or false, found string",
    })
    void inconsistentConfigsNameTheKey(String extra, String message) {
        // a later duplicate would be refused as such, so the extra keys replace BASE's
        String json = "{" + extra + "," + BASE.replaceAll("\"(" + String.join("|", keys(extra)) + ")\":[^,]*,?", "") + "}";
        json = json.replace(",}", "}");
        String body = json;
        assertThatThrownBy(() -> HfConfigReader.parse(body.getBytes(StandardCharsets.UTF_8), Path.of("config.json")))
                .as(body).isExactlyInstanceOf(ModelFileException.class).hasMessageContaining(message);
    }

    private static List<String> keys(String extra) {
        return java.util.regex.Pattern.compile("\"([a-z_]+)\":").matcher(extra).results().map(m -> m.group(1)).toList();
    }

    @Test
    void theBaseConfigIsValid() {
        ModelConfig c = HfConfigReader.parse(("{" + BASE + "}").getBytes(StandardCharsets.UTF_8), Path.of("config.json"));
        assertThat(c.numKeyValueHeads()).isEqualTo(4);
        assertThat(c.ropeTheta()).isEqualTo(10000.0);
        assertThat(c.tieWordEmbeddings()).isFalse();
        assertThat(c.eosTokenIds()).isEmpty();
    }

    @Test
    void missingFileIsTyped() {
        assertThatThrownBy(() -> ModelConfig.fromConfigJson(Path.of("/nonexistent/config.json"))).isExactlyInstanceOf(ModelFileException.class)
                .hasMessageContaining("/nonexistent/config.json: cannot read the file");
    }
}

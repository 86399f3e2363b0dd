package dev.kiln.llm.gguf;

import dev.kiln.llm.ModelConfig;
import dev.kiln.llm.ModelFileException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

import java.lang.foreign.MemorySegment;
import java.nio.file.Path;
import java.util.function.Consumer;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** {@link ModelConfig#fromGguf} on hand-made metadata: every missing or inconsistent key is named. */
class GgufModelConfigTest {
    private static final int UINT32 = 4, FLOAT32 = 6, STRING = 8;

    /** llama.* keys as llama.cpp writes them; {@code change} then edits the list. */
    static GgufBuilder llama(Consumer<GgufBuilder> change) {
        GgufBuilder b = GgufBuilder.valid();
        u32(b, "llama.context_length", 256);
        u32(b, "llama.embedding_length", 64);
        u32(b, "llama.block_count", 2);
        u32(b, "llama.feed_forward_length", 128);
        u32(b, "llama.attention.head_count", 4);
        b.kv("llama.attention.layer_norm_rms_epsilon", FLOAT32, v -> v.u32(Float.floatToIntBits(1e-5f)));
        u32(b, "llama.vocab_size", 100);
        change.accept(b);
        return b;
    }

    static void u32(GgufBuilder b, String key, long value) { b.kv(key, UINT32, v -> v.u32(value)); }

    static ModelConfig config(GgufBuilder b) {
        return ModelConfig.fromGguf(GgufFile.parse(MemorySegment.ofArray(b.build()), Path.of("m.gguf")));
    }

    @Test
    void minimalLlamaMetadata() {
        ModelConfig c = config(llama(b -> {}));
        assertThat(c.numKeyValueHeads()).isEqualTo(4);
        assertThat(c.headDim()).isEqualTo(16);
        assertThat(c.ropeDimensions()).isEqualTo(16);
        assertThat(c.ropeTheta()).isEqualTo(10000.0);
        assertThat(c.tieWordEmbeddings()).isTrue();
        assertThat(c.vocabSize()).isEqualTo(100);
        assertThat(c.eosTokenIds()).isEmpty();
    }

    private static Arguments bad(String name, Consumer<GgufBuilder> change, String message) { return Arguments.of(name, change, message); }

    static Stream<Arguments> corruptions() {
        return Stream.of(
                bad("no architecture", b -> b.kvs.removeFirst(), "metadata key 'general.architecture': expected in the file, not found"),
                bad("no width", b -> b.kvs.remove(2), "metadata key 'llama.embedding_length': expected a positive integer, not found"),
                bad("width a string", b -> { b.kvs.remove(2); b.kv("llama.embedding_length", STRING, v -> v.str("64")); },
                        "metadata key 'llama.embedding_length': expected an integer (UINT8 to INT64), found STRING"),
                bad("zero layers", b -> { b.kvs.remove(3); u32(b, "llama.block_count", 0); }, "metadata key 'llama.block_count': expected a positive integer below 2^31, found 0"),
                bad("kv heads not a divisor", b -> u32(b, "llama.attention.head_count_kv", 3),
                        "llama.attention.head_count_kv: expected a divisor of llama.attention.head_count = 4, found 3"),
                bad("width not a multiple of heads", b -> { b.kvs.remove(2); u32(b, "llama.embedding_length", 66); },
                        "llama.embedding_length: expected a multiple of llama.attention.head_count = 4 (llama.attention.key_length is absent), found 66"),
                bad("no epsilon", b -> b.kvs.remove(6), "metadata key 'llama.attention.layer_norm_rms_epsilon': expected in the file, not found"),
                bad("yarn", b -> b.kv("llama.rope.scaling.type", STRING, v -> v.str("yarn")), "llama.rope.scaling.type: expected none or linear, found 'yarn'"),
                bad("linear without factor", b -> b.kv("llama.rope.scaling.type", STRING, v -> v.str("linear")),
                        "metadata key 'llama.rope.scaling.factor': expected in the file, not found"),
                bad("rope dims above head dim", b -> u32(b, "llama.rope.dimension_count", 32),
                        "llama.rope.dimension_count: expected an even number of at most llama.attention.key_length = 16, found 32"),
                bad("no vocabulary size", b -> { b.kvs.remove(7); b.noTensors(); },
                        "llama.vocab_size: expected it, or tokenizer.ggml.tokens, or a 2-d token_embd.weight; found none"),
                bad("eos beyond the vocabulary", b -> u32(b, "tokenizer.ggml.eos_token_id", 100),
                        "tokenizer.ggml.eos_token_id: expected a token id below the vocabulary size = 100, found 100"));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("corruptions")
    void refusedNamingTheKey(String name, Consumer<GgufBuilder> change, String message) {
        assertThatThrownBy(() -> config(llama(change))).isExactlyInstanceOf(ModelFileException.class)
                .hasMessageStartingWith("m.gguf: ").hasMessageContaining(message);
    }
}

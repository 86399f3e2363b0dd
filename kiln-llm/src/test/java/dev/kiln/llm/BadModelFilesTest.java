package dev.kiln.llm;

import dev.kiln.llm.model.LlmFixtures;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** Model files that are missing, truncated, inconsistent or of another architecture: a ModelFileException naming what is wrong. */
class BadModelFilesTest {
    @TempDir
    Path tmp;

    private static final Path HF = LlmFixtures.root().resolve("llama/hf"), GGUF = LlmFixtures.root().resolve("llama/llama-q8_0.gguf");

    private static ModelOptions small() { return ModelOptions.defaults().withContextLength(16); }

    @Test
    void nothingThereIsNamed() {
        assertThatThrownBy(() -> LanguageModel.open(tmp.resolve("absent.gguf"), small())).isInstanceOf(ModelFileException.class)
                .hasMessageContaining("absent.gguf").hasMessageContaining("found nothing");
        assertThatThrownBy(() -> LanguageModel.open(tmp, small())).isInstanceOf(ModelFileException.class).hasMessageContaining("config.json");
    }

    private Path folderWith(String configFrom, String configTo) throws IOException {
        Path dir = Files.createDirectory(tmp.resolve("model"));
        for (String f : new String[] {"tokenizer.json", "tokenizer_config.json", "model.safetensors"}) Files.copy(HF.resolve(f), dir.resolve(f));
        String config = Files.readString(HF.resolve("config.json"));
        assertThat(config).contains(configFrom);
        Files.writeString(dir.resolve("config.json"), config.replace(configFrom, configTo));
        return dir;
    }

    @Test
    void aMissingTensorIsNamed() throws IOException {
        Path dir = folderWith("\"num_hidden_layers\": 2", "\"num_hidden_layers\": 3");
        assertThatThrownBy(() -> LanguageModel.open(dir, small())).isInstanceOf(ModelFileException.class)
                .hasMessageContaining("tensor 'blk.2.attn_norm.weight'").hasMessageContaining("not found");
    }

    @Test
    void aTensorOfTheWrongShapeIsNamed() throws IOException {
        Path dir = folderWith("\"intermediate_size\": 128", "\"intermediate_size\": 96");
        assertThatThrownBy(() -> LanguageModel.open(dir, small())).isInstanceOf(ModelFileException.class)
                .hasMessageContaining("tensor 'blk.0.ffn_gate.weight': expected shape [96, 64], found [128, 64]");
    }

    @Test
    void aTokenizerLargerThanTheVocabularyIsRefused() throws IOException {
        Path dir = folderWith("\"vocab_size\": 384", "\"vocab_size\": 383");
        assertThatThrownBy(() -> LanguageModel.open(dir, small())).isInstanceOf(ModelFileException.class).hasMessageContaining("384 tokens");
    }

    /** The tokenizer loads while the graph compiles (on a thread of its own): its errors still come out of open(), typed. */
    @Test
    void aBrokenTokenizerIsNamed() throws IOException {
        Path dir = folderWith("\"model_type\": \"llama\"", "\"model_type\": \"llama\"");
        Files.writeString(dir.resolve("tokenizer.json"), "{\"model\": ");
        assertThatThrownBy(() -> LanguageModel.open(dir, small())).isInstanceOf(ModelFileException.class).hasMessageContaining("tokenizer.json");
        byte[] g = Files.readAllBytes(GGUF);
        replaceAll(g, "tokenizer.ggml.tokens", "tokenizer.ggml.tokenz");
        Path f = Files.write(tmp.resolve("no-tokens.gguf"), g);
        assertThatThrownBy(() -> LanguageModel.open(f, small())).isInstanceOf(ModelFileException.class).hasMessageContaining("tokenizer.ggml.tokens");
    }

    @Test
    void anotherArchitectureIsRefused() throws IOException {
        Path dir = folderWith("\"model_type\": \"llama\"", "\"model_type\": \"gpt_neox\"");
        assertThatThrownBy(() -> LanguageModel.open(dir, small())).isInstanceOf(ModelFileException.class)
                .hasMessageContaining("found 'gpt_neox' (not supported)");
        // the same for a GGUF file: every llama.* key and the architecture renamed
        byte[] g = Files.readAllBytes(GGUF);
        replaceAll(g, "llama.", "bloom.");
        int at = indexOf(g, "general.architecture".getBytes(StandardCharsets.US_ASCII), 0) + "general.architecture".length() + 4 + 8;
        System.arraycopy("bloom".getBytes(StandardCharsets.US_ASCII), 0, g, at, 5);
        Path f = Files.write(tmp.resolve("bloom.gguf"), g);
        assertThatThrownBy(() -> LanguageModel.open(f, small())).isInstanceOf(ModelFileException.class).hasMessageContaining("found 'bloom'");
    }

    @Test
    void aGgufFileWithoutATensorOrCutShortIsRefused() throws IOException {
        byte[] g = Files.readAllBytes(GGUF);
        replaceAll(g, "blk.1.ffn_up.weight", "blk.1.ffn_xx.weight");
        Path renamed = Files.write(tmp.resolve("renamed.gguf"), g);
        assertThatThrownBy(() -> LanguageModel.open(renamed, small())).isInstanceOf(ModelFileException.class)
                .hasMessageContaining("tensor 'blk.1.ffn_up.weight': expected shape [128, 64], not found");
        Path cut = Files.write(tmp.resolve("cut.gguf"), Arrays.copyOf(Files.readAllBytes(GGUF), 60_000));
        assertThatThrownBy(() -> LanguageModel.open(cut, small())).isInstanceOf(ModelFileException.class).hasMessageContaining("cut.gguf");
        Path text = Files.writeString(tmp.resolve("notes.gguf"), "not a model");
        assertThatThrownBy(() -> LanguageModel.open(text, small())).isInstanceOf(ModelFileException.class);
    }

    private static void replaceAll(byte[] data, String from, String to) {
        byte[] f = from.getBytes(StandardCharsets.US_ASCII), t = to.getBytes(StandardCharsets.US_ASCII);
        int n = 0;
        for (int i = indexOf(data, f, 0); i >= 0; i = indexOf(data, f, i + 1), n++) System.arraycopy(t, 0, data, i, t.length);
        assertThat(n).as("occurrences of " + from).isPositive();
    }

    private static int indexOf(byte[] data, byte[] what, int from) {
        outer:
        for (int i = from; i <= data.length - what.length; i++) {
            for (int j = 0; j < what.length; j++) if (data[i + j] != what[j]) continue outer;
            return i;
        }
        return -1;
    }
}

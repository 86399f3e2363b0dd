package dev.kiln.llm.tokenizer;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.kiln.llm.ModelFileException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Consumer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * Bad and hostile files: every problem is a {@link ModelFileException} naming the field, never an index or cast
 * exception, and nothing is allocated in proportion to a size the file merely claims.
 */
class TokenizerErrorsTest {
    @TempDir
    Path temp;

    private static Map<String, Object> spm() { return new HashMap<>(Fixtures.ggufMetadata("spm")); }

    private static Map<String, Object> llama3() { return new HashMap<>(Fixtures.ggufMetadata("llama3")); }

    private static void rejectsGguf(Map<String, Object> meta, String... fragments) {
        assertThatThrownBy(() -> Tokenizer.fromGguf(meta, Path.of("model.gguf")))
                .isInstanceOf(ModelFileException.class)
                .hasMessageContaining("model.gguf")
                .hasMessageContainingAll(fragments);
    }

    @Test
    void ggufModelAndTokens() {
        Map<String, Object> m = spm();
        m.remove("tokenizer.ggml.model");
        rejectsGguf(m, "tokenizer.ggml.model", "missing");
        m = spm();
        m.put("tokenizer.ggml.model", "bert");
        rejectsGguf(m, "tokenizer.ggml.model", "\"bert\"");
        m = spm();
        m.put("tokenizer.ggml.model", 7L);
        rejectsGguf(m, "tokenizer.ggml.model", "expected a string", "Long 7");
        m = spm();
        m.remove("tokenizer.ggml.tokens");
        rejectsGguf(m, "tokenizer.ggml.tokens", "missing");
        m = spm();
        m.put("tokenizer.ggml.tokens", "not a list");
        rejectsGguf(m, "tokenizer.ggml.tokens", "expected an array");
        m = spm();
        m.put("tokenizer.ggml.tokens", List.of());
        rejectsGguf(m, "tokenizer.ggml.tokens", "at least one");
        m = spm();
        List<Object> tokens = new ArrayList<>((List<?>) m.get("tokenizer.ggml.tokens"));
        tokens.set(5, 42L);
        m.put("tokenizer.ggml.tokens", tokens);
        rejectsGguf(m, "tokenizer.ggml.tokens[5]", "expected a string");
        m = spm();
        tokens = new ArrayList<>((List<?>) m.get("tokenizer.ggml.tokens"));
        tokens.set(7, tokens.get(300));
        m.put("tokenizer.ggml.tokens", tokens);
        rejectsGguf(m, "tokenizer.ggml.tokens[300]", "distinct");
    }

    @Test
    void ggufHugeArraysAreRejectedByTheirSize() {
        Map<String, Object> m = spm();
        // a list that claims to be huge without holding anything: the size check comes before any allocation
        m.put("tokenizer.ggml.tokens", Collections.nCopies(GgufTokenizerLoader.MAX_TOKENS + 1, "x"));
        rejectsGguf(m, "tokenizer.ggml.tokens", "at most");
        m = llama3();
        m.put("tokenizer.ggml.merges", Collections.nCopies(GgufTokenizerLoader.MAX_MERGES + 1, "a b"));
        rejectsGguf(m, "tokenizer.ggml.merges", "at most");
    }

    @Test
    void ggufMismatchedLengthsAndBadValues() {
        Map<String, Object> m = spm();
        m.put("tokenizer.ggml.scores", ((List<?>) m.get("tokenizer.ggml.scores")).subList(0, 999));
        rejectsGguf(m, "tokenizer.ggml.scores", "expected 1000", "found 999");
        m = spm();
        m.put("tokenizer.ggml.token_type", ((List<?>) m.get("tokenizer.ggml.token_type")).subList(0, 10));
        rejectsGguf(m, "tokenizer.ggml.token_type", "expected 1000", "found 10");
        m = spm();
        List<Object> types = new ArrayList<>((List<?>) m.get("tokenizer.ggml.token_type"));
        types.set(9, 99L);
        m.put("tokenizer.ggml.token_type", types);
        rejectsGguf(m, "tokenizer.ggml.token_type[9]", "1..6", "99");
        m = spm();
        List<Object> scores = new ArrayList<>((List<?>) m.get("tokenizer.ggml.scores"));
        scores.set(3, "high");
        m.put("tokenizer.ggml.scores", scores);
        rejectsGguf(m, "tokenizer.ggml.scores[3]", "expected a number");
        m = spm();
        m.put("tokenizer.ggml.add_bos_token", "yes");
        rejectsGguf(m, "tokenizer.ggml.add_bos_token", "expected a boolean");
        m = spm();
        m.put("tokenizer.chat_template", List.of("not", "a", "string"));
        rejectsGguf(m, "tokenizer.chat_template", "expected a string");
    }

    @Test
    void ggufSpecialIdsOutOfRange() {
        for (String key : List.of("bos_token_id", "eos_token_id", "unknown_token_id", "padding_token_id",
                "eot_token_id", "eom_token_id")) {
            Map<String, Object> m = spm();
            m.put("tokenizer.ggml." + key, 1000L);
            rejectsGguf(m, "tokenizer.ggml." + key, "0..999", "1000");
            m.put("tokenizer.ggml." + key, -1L);
            rejectsGguf(m, "tokenizer.ggml." + key, "-1");
        }
        Map<String, Object> m = llama3();
        m.remove("tokenizer.ggml.bos_token_id");
        rejectsGguf(m, "tokenizer.ggml.add_bos_token", "no tokenizer.ggml.bos_token_id");
    }

    @Test
    void ggufMergesAndPreTokenizer() {
        Map<String, Object> m = llama3();
        m.remove("tokenizer.ggml.merges");
        rejectsGguf(m, "tokenizer.ggml.merges", "missing");
        m = llama3();
        List<Object> merges = new ArrayList<>((List<?>) m.get("tokenizer.ggml.merges"));
        merges.set(4, "nospace");
        m.put("tokenizer.ggml.merges", merges);
        rejectsGguf(m, "tokenizer.ggml.merges[4]", "\"left right\"");
        merges.set(4, "\u00e6\u00f8 x");
        rejectsGguf(m, "tokenizer.ggml.merges[4]", "not one");
        merges.set(4, 12L);
        rejectsGguf(m, "tokenizer.ggml.merges[4]", "expected a string");
        m = llama3();
        m.put("tokenizer.ggml.pre", "tekken");
        rejectsGguf(m, "tokenizer.ggml.pre", "\"tekken\"");
    }

    private Path writeJson(Consumer<ObjectNode> change) throws IOException {
        ObjectNode root = (ObjectNode) Fixtures.read(Fixtures.dir("llama3").resolve("tokenizer.json"));
        change.accept(root);
        Path dir = Files.createTempDirectory(temp, "tok");
        Path file = dir.resolve("tokenizer.json");
        Fixtures.JSON.writeValue(file.toFile(), root);
        return file;
    }

    private void rejectsJson(Consumer<ObjectNode> change, String... fragments) throws IOException {
        Path file = writeJson(change);
        assertThatThrownBy(() -> Tokenizer.fromTokenizerJson(file)).isInstanceOf(ModelFileException.class)
                .hasMessageContaining(file.toString()).hasMessageContainingAll(fragments);
    }

    @Test
    void tokenizerJsonModel() throws IOException {
        rejectsJson(r -> ((ObjectNode) r.get("model")).put("type", "WordPiece"), "model.type", "expected BPE",
                "WordPiece");
        rejectsJson(r -> r.remove("model"), "model", "expected an object");
        rejectsJson(r -> ((ObjectNode) r.get("model")).put("dropout", 0.1), "model.dropout");
        rejectsJson(r -> ((ObjectNode) r.get("model")).put("continuing_subword_prefix", "##"),
                "model.continuing_subword_prefix");
        rejectsJson(r -> ((ObjectNode) r.get("model").get("vocab")).put("extra", 5000), "without gaps");
        rejectsJson(r -> ((ObjectNode) r.get("model").get("vocab")).put("extra", 5), "distinct ids", "5");
        rejectsJson(r -> ((ObjectNode) r.get("model").get("vocab")).put("extra", "five"), "model.vocab[\"extra\"]",
                "expected an integer");
        rejectsJson(r -> ((ObjectNode) r.get("model").get("vocab")).put("extra", Integer.MAX_VALUE),
                "model.vocab[\"extra\"]", "expected an integer in");
        rejectsJson(r -> ((ArrayNode) r.get("model").get("merges")).set(3, "\u00e6\u00f8 x"), "model.merges[3]",
                "not one");
        rejectsJson(r -> ((ArrayNode) r.get("model").get("merges")).set(3, "a b c"), "model.merges[3]",
                "\"left right\"");
        rejectsJson(r -> ((ArrayNode) r.get("model").get("merges")).set(3, 7), "model.merges[3]");
        // an added token given the id of a different model entry
        rejectsJson(r -> ((ObjectNode) r.get("added_tokens").get(0)).put("id", 5), "added_tokens[0]",
                "\"<|begin_of_text|>\"");
    }

    @Test
    void tokenizerJsonComponents() throws IOException {
        rejectsJson(r -> r.putObject("normalizer").put("type", "Lowercase"), "normalizer.type", "Lowercase");
        rejectsJson(r -> r.putObject("pre_tokenizer").put("type", "Whitespace"), "pre_tokenizer.type", "Whitespace");
        rejectsJson(r -> r.putObject("pre_tokenizer").put("type", "Split").put("behavior", "Isolated")
                .putObject("pattern").put("Regex", "(unclosed"), "pre_tokenizer.pattern.Regex", "(unclosed");
        rejectsJson(r -> r.putObject("pre_tokenizer").put("type", "Split").put("behavior", "Sideways")
                .putObject("pattern").put("String", " "), "pre_tokenizer.behavior", "Sideways");
        rejectsJson(r -> r.putNull("decoder"), "decoder", "found nothing");
        rejectsJson(r -> r.putObject("decoder").put("type", "WordPiece"), "decoder.type", "WordPiece");
        rejectsJson(r -> r.putObject("post_processor").put("type", "Bogus"), "post_processor.type", "Bogus");
    }

    @Test
    void unreadableAndMalformedFiles() throws IOException {
        Path missing = temp.resolve("missing/tokenizer.json");
        assertThatThrownBy(() -> Tokenizer.fromTokenizerJson(missing)).isInstanceOf(ModelFileException.class)
                .hasMessageContaining("cannot read the file: no such file").hasMessageNotContaining("Exception");
        Path truncated = temp.resolve("truncated.json");
        String whole = Files.readString(Fixtures.dir("llama3").resolve("tokenizer.json"));
        Files.writeString(truncated, whole.substring(0, whole.length() / 2), StandardCharsets.UTF_8);
        assertThatThrownBy(() -> Tokenizer.fromTokenizerJson(truncated)).isInstanceOf(ModelFileException.class)
                .hasMessageContaining("found invalid JSON");
        Path array = temp.resolve("array.json");
        Files.writeString(array, "[1, 2, 3]");
        assertThatThrownBy(() -> Tokenizer.fromTokenizerJson(array)).isInstanceOf(ModelFileException.class)
                .hasMessageContaining("expected an object");
    }

    @Test
    void badTokenizerConfigIsNamed() throws IOException {
        Path file = writeJson(r -> { });
        Files.writeString(file.resolveSibling("tokenizer_config.json"), "{\"bos_token\": \"<nope>\"}");
        assertThatThrownBy(() -> Tokenizer.fromTokenizerJson(file)).isInstanceOf(ModelFileException.class)
                .hasMessageContaining("tokenizer_config.json").hasMessageContaining("<nope>");
        Files.writeString(file.resolveSibling("tokenizer_config.json"), "{\"add_eos_token\": true, \"eos_token\": null}");
        assertThat(Tokenizer.fromTokenizerJson(file).specialTokens().hasEos()).isTrue(); // found by its usual name
    }
}

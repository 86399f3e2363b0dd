package dev.kiln.llm.tokenizer;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.net.URISyntaxException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The reference tokenizations tools/golden/gen_tokenizers.py wrote under src/test/resources/tokenizer: the files of
 * each tokenizer, and the GGUF metadata with the Java types the GGUF reader gives its values.
 */
final class Fixtures {
    private Fixtures() {}

    static final ObjectMapper JSON = new ObjectMapper();

    /** One expected encoding: the ids of the text and its decodings ({@code null} where not compared). */
    record Case(String text, boolean addSpecial, boolean parseSpecial, int[] ids, String decoded, String decodedSkip) {
        String label() {
            String t = text.length() > 30 ? text.substring(0, 30) + "…" : text;
            return (addSpecial ? "+add " : "") + (parseSpecial ? "+parse " : "") + JSON.valueToTree(t).toString();
        }
    }

    static Path dir(String name) {
        try {
            return Path.of(Fixtures.class.getResource("/tokenizer/" + name + "/cases.json").toURI()).getParent();
        } catch (URISyntaxException e) {
            throw new IllegalStateException(e);
        }
    }

    static JsonNode read(Path file) {
        try (InputStream in = Files.newInputStream(file)) {
            return JSON.readTree(in);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    static List<Case> cases(String name, String field) {
        List<Case> out = new ArrayList<>();
        for (JsonNode c : read(dir(name).resolve("cases.json")).get(field)) {
            out.add(new Case(c.get("text").textValue(), c.get("add_special").booleanValue(),
                    c.get("parse_special").booleanValue(), ids(c.get("ids")), text(c.get("decoded")),
                    text(c.get("decoded_skip"))));
        }
        return out;
    }

    static int[] ids(JsonNode array) {
        int[] ids = new int[array.size()];
        for (int i = 0; i < ids.length; i++) ids[i] = array.get(i).intValue();
        return ids;
    }

    private static String text(JsonNode node) {
        return node == null || node.isNull() ? null : node.textValue();
    }

    /** gguf_metadata.json as a GGUF reader returns it: String, Long, Double, Boolean and List values. */
    static Map<String, Object> ggufMetadata(String name) {
        Map<String, Object> map = new LinkedHashMap<>();
        read(dir(name).resolve("gguf_metadata.json")).properties().forEach(e -> map.put(e.getKey(), value(e.getValue())));
        return map;
    }

    static Object value(JsonNode node) {
        if (node.isTextual()) return node.textValue();
        if (node.isBoolean()) return node.booleanValue();
        if (node.isIntegralNumber()) return node.longValue();
        if (node.isNumber()) return node.doubleValue();
        if (node.isArray()) {
            List<Object> list = new ArrayList<>(node.size());
            node.forEach(v -> list.add(value(v)));
            return list;
        }
        throw new IllegalArgumentException("no GGUF value for " + node);
    }

    /**
     * A copy of the llama3 tokenizer.json (and its config) in {@code folder} with another pre-tokenizer: the smollm and
     * gpt2 fixtures reuse llama3's vocabulary.
     */
    static Path llama3With(JsonNode preTokenizer, Path folder) {
        try {
            ObjectNode root = (ObjectNode) read(dir("llama3").resolve("tokenizer.json"));
            root.set("pre_tokenizer", preTokenizer);
            Path file = folder.resolve("tokenizer.json");
            JSON.writeValue(file.toFile(), root);
            Files.copy(dir("llama3").resolve("tokenizer_config.json"), folder.resolve("tokenizer_config.json"));
            return file;
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}

package dev.kiln.llm.model;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.kiln.io.Npy;
import dev.kiln.llm.LanguageModel;
import dev.kiln.llm.ModelOptions;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.foreign.ValueLayout;
import java.net.URISyntaxException;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The tiny models of tools/golden/gen_llm_models.py (kiln-llm/src/test/resources/llm) and their references, and
 * models opened once per test class run (opening compiles the graph).
 */
public final class LlmFixtures {
    private LlmFixtures() {}

    /** One model file with the reference computed for its weights. */
    public record Case(String model, String file, String ref) {
        public Path path() { return root().resolve(model).resolve(file); }

        public Path refDir() { return root().resolve(model).resolve("ref-" + ref); }

        @Override public String toString() { return model + "/" + file; }
    }

    /** Every model file: each Hugging Face folder and each GGUF file. */
    public static final List<Case> CASES = List.of(
            new Case("llama", "hf", "f32"), new Case("llama", "llama-f32.gguf", "f32"), new Case("llama", "llama-q8_0.gguf", "q8_0"),
            new Case("mistral", "hf", "f32"), new Case("mistral", "mistral-f16.gguf", "f16"),
            new Case("qwen2", "hf", "f32"), new Case("qwen2", "qwen2-q8_0.gguf", "q8_0"), new Case("qwen2", "qwen2-q4_0.gguf", "q4_0"));

    /** The block-quantised GGUF files (Q8_0, Q4_0). */
    public static final List<Case> QUANTISED = CASES.stream().filter(c -> c.ref().startsWith("q")).toList();

    private static final Map<String, LanguageModel> OPEN = new ConcurrentHashMap<>();

    public static Path root() {
        try {
            return Path.of(LlmFixtures.class.getResource("/llm").toURI());
        } catch (URISyntaxException e) {
            throw new IllegalStateException(e);
        }
    }

    /** The model of {@code c} with a 64-token context, opened once and shared (closed when the JVM exits). */
    public static LanguageModel open(Case c) {
        return OPEN.computeIfAbsent(c.toString(), k -> LanguageModel.open(c.path(), ModelOptions.defaults().withContextLength(64)));
    }

    /** A .npy file of f32 as rows. */
    public static float[][] rows(Path npy) {
        Npy.Array a = Npy.readArray(npy);
        int[] s = a.shape();
        float[][] out = new float[s[0]][s[1]];
        for (int r = 0; r < s[0]; r++) for (int j = 0; j < s[1]; j++) out[r][j] = a.data().getAtIndex(ValueLayout.JAVA_FLOAT, (long) r * s[1] + j);
        return out;
    }

    public static JsonNode json(Path file) {
        try {
            return new ObjectMapper().readTree(file.toFile());
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    public static int[] ints(JsonNode array) {
        int[] out = new int[array.size()];
        for (int i = 0; i < out.length; i++) out[i] = array.get(i).intValue();
        return out;
    }
}

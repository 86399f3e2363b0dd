package dev.kiln.llm;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.StreamReadConstraints;
import com.fasterxml.jackson.core.StreamReadFeature;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Optional;
import java.util.OptionalDouble;
import java.util.OptionalInt;

/**
 * Reads a Hugging Face {@code config.json} into a {@link ModelConfig}. A key whose value is JSON {@code null} counts
 * as absent, as transformers writes optional fields that way. RoPE settings come from {@code rope_parameters}
 * (transformers 5) or from the top-level {@code rope_theta} and {@code rope_scaling} (4.x, most published
 * checkpoints).
 */
final class HfConfigReader {
    /** config.json files are a few kB; a bigger one is not a config. */
    static final long MAX_BYTES = 16 << 20;
    private static final ObjectMapper JSON = new ObjectMapper(JsonFactory.builder()
            .streamReadConstraints(StreamReadConstraints.builder().maxNestingDepth(64).build())
            .enable(StreamReadFeature.STRICT_DUPLICATE_DETECTION).build())
            .enable(DeserializationFeature.FAIL_ON_TRAILING_TOKENS);

    private final Path file;
    private final JsonNode root;

    private HfConfigReader(Path file, JsonNode root) {
        this.file = file;
        this.root = root;
    }

    static ModelConfig read(Path file) {
        byte[] bytes;
        try {
            long size = Files.size(file);
            if (size > MAX_BYTES) throw new ModelFileException(file, "expected a config.json of at most " + MAX_BYTES + " bytes, found " + size);
            bytes = Files.readAllBytes(file);
        } catch (IOException e) {
            throw ModelFileException.unreadable(file, e);
        }
        return parse(bytes, file);
    }

    static ModelConfig parse(byte[] json, Path file) {
        JsonNode root;
        try {
            root = JSON.readTree(json);
        } catch (IOException e) {
            String why = e instanceof JsonProcessingException j ? j.getOriginalMessage() : e.toString();
            throw new ModelFileException(file, "expected a JSON object, found invalid JSON: " + why, e);
        }
        if (root == null || !root.isObject()) throw new ModelFileException(file, "expected a JSON object, found " + kind(root));
        return new HfConfigReader(file, root).config();
    }

    private ModelConfig config() {
        String modelType = string(root, "model_type").orElseThrow(() -> absent("model_type", "a string"));
        List<String> architectures = new ArrayList<>();
        JsonNode arch = present(root, "architectures");
        if (arch != null) {
            if (!arch.isArray()) throw wrong("architectures", "an array of strings", arch);
            for (JsonNode a : arch) {
                if (!a.isTextual()) throw wrong("architectures", "an array of strings", arch);
                architectures.add(a.textValue());
            }
        }
        int hidden = positive("hidden_size");
        int heads = positive("num_attention_heads");
        int kvHeads = optionalPositive(root, "num_key_value_heads").orElse(heads);
        OptionalInt explicitHeadDim = optionalPositive(root, "head_dim");
        int headDim = explicitHeadDim.isPresent() ? explicitHeadDim.getAsInt()
                : ConfigChecks.headDim(file, hidden, heads, "hidden_size", "num_attention_heads", "head_dim");
        double partial = number(root, "partial_rotary_factor").orElse(1.0);
        if (!(partial > 0 && partial <= 1)) throw wrong("partial_rotary_factor", "a number in (0, 1]", root.get("partial_rotary_factor"));
        double eps = number(root, "rms_norm_eps").orElseThrow(() -> absent("rms_norm_eps", "a positive number"));
        if (!(eps > 0 && eps < 1)) throw wrong("rms_norm_eps", "a positive number below 1", root.get("rms_norm_eps"));
        JsonNode ropeParameters = present(root, "rope_parameters");
        JsonNode ropeOwner = ropeParameters != null ? ropeParameters : root;
        String ropeOwnerName = ropeParameters != null ? "rope_parameters." : "";
        if (ropeParameters != null && !ropeParameters.isObject()) throw wrong("rope_parameters", "an object", ropeParameters);
        double theta = number(ropeOwner, ropeOwnerName, "rope_theta").orElse(10000.0);
        if (!(theta > 0 && Double.isFinite(theta))) throw wrong(ropeOwnerName + "rope_theta", "a positive number", ropeOwner.get("rope_theta"));
        Optional<ModelConfig.RopeScaling> scaling = ropeParameters != null ? ropeScaling(ropeParameters, "rope_parameters")
                : Optional.ofNullable(present(root, "rope_scaling")).flatMap(n -> ropeScaling(n, "rope_scaling"));
        int vocab = positive("vocab_size");
        ModelConfig c = new ModelConfig(modelType, architectures, hidden, positive("intermediate_size"), positive("num_hidden_layers"), heads, kvHeads,
                headDim, (int) Math.round(headDim * partial), eps, theta, scaling, positive("max_position_embeddings"), vocab,
                bool("tie_word_embeddings").orElse(false), slidingWindow(modelType),
                modelType.equals("qwen2") || bool("attention_bias").orElse(false), optionalNonNegative(root, "bos_token_id"), eos());
        ConfigChecks.check(file, new ConfigChecks.Names("num_attention_heads", "num_key_value_heads", "head_dim", "head_dim * partial_rotary_factor",
                "vocab_size", "bos_token_id", "eos_token_id"), c);
        return c;
    }

    private Optional<ModelConfig.RopeScaling> ropeScaling(JsonNode node, String name) {
        if (!node.isObject()) throw wrong(name, "an object", node);
        String typeKey = present(node, "rope_type") != null ? "rope_type" : "type"; // "type" in older configs
        String type = string(node, name + ".", typeKey).orElseThrow(() -> absent(name + ".rope_type", "a string"));
        return switch (type) {
            case "default" -> Optional.empty();
            case "linear" -> Optional.of(new ModelConfig.RopeScaling("linear", factor(node, name), Double.NaN, Double.NaN,
                    optionalPositive(node, name + ".", "original_max_position_embeddings").orElse(0)));
            case "llama3" -> Optional.of(new ModelConfig.RopeScaling("llama3", factor(node, name), positiveNumber(node, name, "low_freq_factor"),
                    positiveNumber(node, name, "high_freq_factor"), optionalPositive(node, name + ".", "original_max_position_embeddings")
                    .orElseThrow(() -> absent(name + ".original_max_position_embeddings", "a positive integer"))));
            default -> throw new ModelFileException(file, name + "." + typeKey + ": expected default, linear or llama3, found '" + type + "' (not supported)");
        };
    }

    private double factor(JsonNode node, String name) { return positiveNumber(node, name, "factor"); }

    private double positiveNumber(JsonNode node, String owner, String key) {
        double v = number(node, owner + ".", key).orElseThrow(() -> absent(owner + "." + key, "a positive number"));
        if (!(v > 0 && Double.isFinite(v))) throw wrong(owner + "." + key, "a positive number", node.get(key));
        return v;
    }

    private OptionalInt slidingWindow(String modelType) {
        OptionalInt window = optionalPositive(root, "sliding_window");
        if (!bool("use_sliding_window").orElse(true)) return OptionalInt.empty();
        JsonNode layerTypes = present(root, "layer_types");
        if (layerTypes != null) {
            if (!layerTypes.isArray()) throw wrong("layer_types", "an array of strings", layerTypes);
            boolean sliding = false, full = false;
            for (JsonNode t : layerTypes) {
                sliding |= "sliding_attention".equals(t.textValue());
                full |= "full_attention".equals(t.textValue());
            }
            if (sliding && full) throw new ModelFileException(file, "layer_types: layers with and without a sliding window are not supported");
            if (full) return OptionalInt.empty();
        }
        // Qwen2 windows only the layers from max_window_layers on: one window for every layer would be a wrong answer
        if (window.isPresent() && modelType.equals("qwen2")) {
            throw new ModelFileException(file, "use_sliding_window: Qwen2's per-layer sliding window (max_window_layers) is not supported; expected false");
        }
        return window;
    }

    private List<Integer> eos() {
        JsonNode eos = present(root, "eos_token_id");
        if (eos == null) return List.of();
        if (eos.isArray()) {
            List<Integer> ids = new ArrayList<>();
            for (int i = 0; i < eos.size(); i++) ids.add(nonNegative(eos.get(i), "eos_token_id[" + i + "]"));
            return ids;
        }
        return List.of(nonNegative(eos, "eos_token_id"));
    }

    // -----------------------------------------------------------------------------------------------------------------
    // typed reads

    private int positive(String key) { return optionalPositive(root, key).orElseThrow(() -> absent(key, "a positive integer")); }

    private OptionalInt optionalPositive(JsonNode owner, String key) { return optionalPositive(owner, "", key); }

    /** {@code prefix} names the object {@code owner} is in errors ("rope_scaling."). */
    private OptionalInt optionalPositive(JsonNode owner, String prefix, String key) {
        JsonNode n = present(owner, key);
        if (n == null) return OptionalInt.empty();
        if (!n.isIntegralNumber() || !n.canConvertToInt() || n.intValue() < 1) throw wrong(prefix + key, "a positive integer", n);
        return OptionalInt.of(n.intValue());
    }

    private OptionalInt optionalNonNegative(JsonNode owner, String key) {
        JsonNode n = present(owner, key);
        return n == null ? OptionalInt.empty() : OptionalInt.of(nonNegative(n, key));
    }

    private int nonNegative(JsonNode n, String key) {
        if (n == null || !n.isIntegralNumber() || !n.canConvertToInt() || n.intValue() < 0) throw wrong(key, "a non-negative integer", n);
        return n.intValue();
    }

    private OptionalDouble number(JsonNode owner, String key) { return number(owner, "", key); }

    private OptionalDouble number(JsonNode owner, String prefix, String key) {
        JsonNode n = present(owner, key);
        if (n == null) return OptionalDouble.empty();
        if (!n.isNumber()) throw wrong(prefix + key, "a number", n);
        return OptionalDouble.of(n.doubleValue());
    }

    private Optional<Boolean> bool(String key) {
        JsonNode n = present(root, key);
        if (n == null) return Optional.empty();
        if (!n.isBoolean()) throw wrong(key, "true or false", n);
        return Optional.of(n.booleanValue());
    }

    private Optional<String> string(JsonNode owner, String key) { return string(owner, "", key); }

    private Optional<String> string(JsonNode owner, String prefix, String key) {
        JsonNode n = present(owner, key);
        if (n == null) return Optional.empty();
        if (!n.isTextual()) throw wrong(prefix + key, "a string", n);
        return Optional.of(n.textValue());
    }

    /** The value of {@code key}, or null when absent or JSON null. */
    private static JsonNode present(JsonNode owner, String key) {
        JsonNode n = owner.get(key);
        return n == null || n.isNull() ? null : n;
    }

    private ModelFileException absent(String key, String expected) {
        return new ModelFileException(file, key + ": expected " + expected + ", not found");
    }

    private ModelFileException wrong(String key, String expected, JsonNode found) {
        String text = found == null ? "nothing" : found.toString();
        if (text.length() > 80) text = text.substring(0, 80) + "...";
        return new ModelFileException(file, key + ": expected " + expected + ", found " + kind(found) + " " + text);
    }

    private static String kind(JsonNode node) {
        return node == null ? "nothing" : node.getNodeType().name().toLowerCase(Locale.ROOT);
    }
}

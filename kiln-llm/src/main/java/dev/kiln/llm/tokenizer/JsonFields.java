package dev.kiln.llm.tokenizer;

import com.fasterxml.jackson.databind.JsonNode;
import dev.kiln.llm.ModelFileException;

import java.nio.file.Path;

/**
 * Typed access to the nodes of a JSON file ({@code tokenizer.json}, {@code tokenizer_config.json}); every wrong or
 * missing value is a {@link ModelFileException} naming the field by its path ({@code model.merges[12]}), what was
 * expected and what was found.
 */
final class JsonFields {
    private final Path file;

    JsonFields(Path file) {
        this.file = file;
    }

    Path file() { return file; }

    ModelFileException error(String field, String detail) {
        return new ModelFileException(file, field + ": " + detail);
    }

    /** Whether {@code node} has {@code name} with a non-null value. */
    static boolean has(JsonNode node, String name) {
        JsonNode v = node.get(name);
        return v != null && !v.isNull();
    }

    JsonNode object(JsonNode node, String name, String field) {
        JsonNode v = node.get(name);
        if (v == null || !v.isObject()) throw error(field, "expected an object, found " + describe(v));
        return v;
    }

    JsonNode array(JsonNode node, String name, String field, int max) {
        JsonNode v = node.get(name);
        if (v == null || !v.isArray()) throw error(field, "expected an array, found " + describe(v));
        if (v.size() > max) throw error(field, "expected at most " + max + " entries, found " + v.size());
        return v;
    }

    String string(JsonNode node, String name, String field) {
        JsonNode v = node.get(name);
        if (v == null || !v.isTextual()) throw error(field, "expected a string, found " + describe(v));
        return v.textValue();
    }

    /** The string, or {@code null} where the field is missing or null. */
    String optionalString(JsonNode node, String name, String field) {
        return has(node, name) ? string(node, name, field) : null;
    }

    boolean bool(JsonNode node, String name, String field, boolean absent) {
        JsonNode v = node.get(name);
        if (v == null || v.isNull()) return absent;
        if (!v.isBoolean()) throw error(field, "expected a boolean, found " + describe(v));
        return v.booleanValue();
    }

    int integer(JsonNode v, String field, int min, int max) {
        if (v == null || !v.canConvertToInt() || !v.isIntegralNumber()) {
            throw error(field, "expected an integer, found " + describe(v));
        }
        int i = v.intValue();
        if (i < min || i > max) throw error(field, "expected an integer in " + min + ".." + max + ", found " + i);
        return i;
    }

    static String describe(JsonNode v) {
        if (v == null || v.isMissingNode()) return "nothing (the field is missing)";
        if (v.isNull()) return "null";
        if (v.isObject()) return "an object";
        if (v.isArray()) return "an array of " + v.size();
        if (v.isTextual()) {
            String s = v.textValue();
            return "\"" + (s.length() > 40 ? s.substring(0, 40) + "…" : s) + "\"";
        }
        return v.toString();
    }
}

package dev.kiln.llm.tokenizer;

import dev.kiln.llm.ModelFileException;

import java.nio.file.Path;
import java.util.List;
import java.util.Map;

/**
 * Typed access to GGUF metadata as the GGUF reader maps it (strings as String, integers as Long, floats as Double,
 * booleans as Boolean, arrays as List), each wrong or missing value reported as a {@link ModelFileException} naming
 * the key, what was expected and what was found.
 */
final class GgufFields {
    private final Map<String, ?> metadata;
    private final Path file;

    GgufFields(Map<String, ?> metadata, Path file) {
        this.metadata = metadata;
        this.file = file;
    }

    ModelFileException error(String key, String detail) {
        return new ModelFileException(file, key + ": " + detail);
    }

    boolean has(String key) { return metadata.get(key) != null; }

    String string(String key) {
        Object v = metadata.get(key);
        if (v == null) throw error(key, "expected a string, found nothing (the key is missing)");
        if (!(v instanceof String s)) throw error(key, "expected a string, found " + describe(v));
        return s;
    }

    String optionalString(String key) { return has(key) ? string(key) : null; }

    boolean bool(String key, boolean absent) {
        Object v = metadata.get(key);
        if (v == null) return absent;
        if (!(v instanceof Boolean b)) throw error(key, "expected a boolean, found " + describe(v));
        return b;
    }

    /** A token id under {@code key}, checked against the vocabulary size; {@code absent} if the key is missing. */
    int tokenId(String key, int absent, int vocabularySize) {
        Object v = metadata.get(key);
        if (v == null) return absent;
        if (!(v instanceof Long || v instanceof Integer)) throw error(key, "expected an integer, found " + describe(v));
        long id = ((Number) v).longValue();
        if (id < 0 || id >= vocabularySize) {
            throw error(key, "expected a token id in 0.." + (vocabularySize - 1) + ", found " + id);
        }
        return (int) id;
    }

    /** The array under {@code key} ({@code null} if missing and not required), at most {@code max} long. */
    List<?> list(String key, boolean required, int max) {
        Object v = metadata.get(key);
        if (v == null) {
            if (required) throw error(key, "expected an array, found nothing (the key is missing)");
            return null;
        }
        if (!(v instanceof List<?> list)) throw error(key, "expected an array, found " + describe(v));
        if (list.size() > max) throw error(key, "expected at most " + max + " entries, found " + list.size());
        return list;
    }

    String stringAt(List<?> list, String key, int i) {
        Object v = list.get(i);
        if (!(v instanceof String s)) throw error(key + "[" + i + "]", "expected a string, found " + describe(v));
        return s;
    }

    double numberAt(List<?> list, String key, int i) {
        Object v = list.get(i);
        if (!(v instanceof Number n)) throw error(key + "[" + i + "]", "expected a number, found " + describe(v));
        return n.doubleValue();
    }

    long integerAt(List<?> list, String key, int i) {
        Object v = list.get(i);
        if (!(v instanceof Long || v instanceof Integer || v instanceof Short || v instanceof Byte)) {
            throw error(key + "[" + i + "]", "expected an integer, found " + describe(v));
        }
        return ((Number) v).longValue();
    }

    static String describe(Object v) {
        if (v == null) return "null";
        String text = v instanceof String s ? "\"" + (s.length() > 40 ? s.substring(0, 40) + "…" : s) + "\""
                : v instanceof List<?> l ? "an array of " + l.size()
                : String.valueOf(v);
        return v.getClass().getSimpleName() + " " + text;
    }
}

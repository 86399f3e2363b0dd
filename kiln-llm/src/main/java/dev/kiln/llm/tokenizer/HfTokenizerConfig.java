package dev.kiln.llm.tokenizer;

import com.fasterxml.jackson.databind.JsonNode;

/**
 * What a {@code tokenizer_config.json} beside a {@code tokenizer.json} adds: the names of the special tokens, whether
 * BOS and EOS are added (overriding the post-processor, as transformers' Llama tokenizers do) and the chat template.
 * Token names are texts, resolved against the vocabulary by the loader; {@code null} where the file says nothing.
 */
record HfTokenizerConfig(String bos, String eos, String pad, String unk, Boolean addBos, Boolean addEos,
                         String chatTemplate) {
    static final HfTokenizerConfig NONE = new HfTokenizerConfig(null, null, null, null, null, null, null);

    static HfTokenizerConfig parse(JsonNode root, JsonFields f) {
        if (!root.isObject()) throw f.error("(root)", "expected an object, found " + JsonFields.describe(root));
        return new HfTokenizerConfig(token(root, "bos_token", f), token(root, "eos_token", f),
                token(root, "pad_token", f), token(root, "unk_token", f), flag(root, "add_bos_token", f),
                flag(root, "add_eos_token", f), template(root, f));
    }

    /** A token is written as its text or as an AddedToken object with a "content". */
    private static String token(JsonNode root, String name, JsonFields f) {
        JsonNode v = root.get(name);
        if (v == null || v.isNull()) return null;
        if (v.isTextual()) return v.textValue();
        if (v.isObject()) return f.string(v, "content", name + ".content");
        throw f.error(name, "expected a string or an object with a content, found " + JsonFields.describe(v));
    }

    private static Boolean flag(JsonNode root, String name, JsonFields f) {
        return JsonFields.has(root, name) ? f.bool(root, name, name, false) : null;
    }

    /** A string, or a list of {name, template} of which the one named "default" (else the first) is taken. */
    private static String template(JsonNode root, JsonFields f) {
        JsonNode v = root.get("chat_template");
        if (v == null || v.isNull()) return null;
        if (v.isTextual()) return v.textValue();
        if (v.isArray() && !v.isEmpty()) {
            JsonNode chosen = v.get(0);
            for (JsonNode t : v) if (t.isObject() && "default".equals(t.path("name").asText(null))) chosen = t;
            return f.string(chosen, "template", "chat_template[].template");
        }
        throw f.error("chat_template", "expected a string or a list of named templates, found "
                + JsonFields.describe(v));
    }
}

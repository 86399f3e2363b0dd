package dev.kiln.llm.tokenizer;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.kiln.llm.ModelFileException;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * Builds a {@link Tokenizer} from a Hugging Face {@code tokenizer.json} (BPE models only) and, if present, the
 * {@code tokenizer_config.json} beside it. Token types: model entries are {@link TokenType#NORMAL} ({@code <0xXX>}
 * entries {@link TokenType#BYTE} with byte fallback), special added tokens {@link TokenType#CONTROL}, other added
 * tokens {@link TokenType#USER_DEFINED}, the model's unk_token {@link TokenType#UNKNOWN}.
 */
final class HfTokenizerLoader {
    private HfTokenizerLoader() {}

    /** Bounds for hostile files: the largest real tokenizer.json files are some tens of megabytes. */
    static final long MAX_FILE_BYTES = 512L << 20;
    static final int MAX_TOKENS = GgufTokenizerLoader.MAX_TOKENS;
    static final int MAX_MERGES = GgufTokenizerLoader.MAX_MERGES;

    private static final ObjectMapper JSON = new ObjectMapper();

    static Tokenizer load(Path file) {
        JsonFields f = new JsonFields(file);
        JsonNode root = read(file, f);
        if (!root.isObject()) throw f.error("(root)", "expected an object, found " + JsonFields.describe(root));
        HfTokenizerConfig config = config(file.resolveSibling("tokenizer_config.json"));
        HfComponents components = new HfComponents(f);

        JsonNode model = f.object(root, "model", "model");
        String type = JsonFields.has(model, "type") ? f.string(model, "type", "model.type") : "BPE";
        if (!type.equals("BPE")) throw f.error("model.type", "expected BPE, found \"" + type + "\"");
        checkUnsupportedOptions(model, f);
        boolean byteFallback = f.bool(model, "byte_fallback", "model.byte_fallback", false);

        // ids: the model's vocabulary, then the added tokens (which may repeat model entries with the same id)
        Map<Integer, String> byId = new HashMap<>();
        JsonNode vocabNode = f.object(model, "vocab", "model.vocab");
        if (vocabNode.size() > MAX_TOKENS) {
            throw f.error("model.vocab", "expected at most " + MAX_TOKENS + " entries, found " + vocabNode.size());
        }
        for (Map.Entry<String, JsonNode> e : vocabNode.properties()) {
            int id = f.integer(e.getValue(), "model.vocab[\"" + e.getKey() + "\"]", 0, MAX_TOKENS - 1);
            String before = byId.putIfAbsent(id, e.getKey());
            if (before != null) {
                throw f.error("model.vocab[\"" + e.getKey() + "\"]", "expected distinct ids, found " + id
                        + ", which \"" + before + "\" has too");
            }
        }
        JsonNode added = root.has("added_tokens") && !root.get("added_tokens").isNull()
                ? f.array(root, "added_tokens", "added_tokens", MAX_TOKENS) : JSON.createArrayNode();
        Map<Integer, SpecialSplitter.Flags> flags = new HashMap<>();
        Map<Integer, Boolean> special = new HashMap<>();
        for (int i = 0; i < added.size(); i++) {
            String at = "added_tokens[" + i + "]";
            JsonNode a = added.get(i);
            int id = f.integer(a.get("id"), at + ".id", 0, MAX_TOKENS - 1);
            String content = f.string(a, "content", at + ".content");
            String before = byId.putIfAbsent(id, content);
            if (before != null && !before.equals(content)) {
                throw f.error(at, "expected the content of id " + id + ", \"" + before + "\", found \"" + content + "\"");
            }
            special.put(id, f.bool(a, "special", at + ".special", false));
            flags.put(id, new SpecialSplitter.Flags(f.bool(a, "lstrip", at + ".lstrip", false),
                    f.bool(a, "rstrip", at + ".rstrip", false), f.bool(a, "single_word", at + ".single_word", false)));
        }
        int n = byId.keySet().stream().mapToInt(Integer::intValue).max().orElse(-1) + 1;
        if (n == 0) throw f.error("model.vocab", "expected at least one token, found none");
        String[] texts = new String[n];
        Map<String, Integer> seen = HashMap.newHashMap(n);
        for (int id = 0; id < n; id++) {
            texts[id] = byId.get(id);
            if (texts[id] == null) throw f.error("model.vocab", "expected ids 0.." + (n - 1) + " without gaps, found "
                    + "no token with id " + id);
            Integer other = seen.putIfAbsent(texts[id], id);
            if (other != null) throw f.error("added_tokens", "expected distinct texts, found \"" + texts[id]
                    + "\" as ids " + other + " and " + id);
        }

        String unkText = f.optionalString(model, "unk_token", "model.unk_token");
        int unk = unkText == null ? SpecialTokens.NONE : idOf(seen, unkText, f, "model.unk_token");
        TokenType[] types = new TokenType[n];
        for (int id = 0; id < n; id++) {
            Boolean isSpecial = special.get(id);
            types[id] = id == unk ? TokenType.UNKNOWN
                    : isSpecial != null ? (isSpecial ? TokenType.CONTROL : TokenType.USER_DEFINED)
                    : byteFallback && TextDecoding.byteValue(texts[id]) >= 0 ? TokenType.BYTE
                    : TokenType.NORMAL;
        }

        HfComponents.Specials post = components.specials(root.get("post_processor"), "post_processor", n);
        int bos = configToken(config.bos(), seen, post.prefix(), List.of("<s>", "<|begin_of_text|>"), file, true);
        int eos = configToken(config.eos(), seen, post.suffix(), List.of("</s>", "<|end_of_text|>", "<|endoftext|>"),
                file, false);
        int pad = config.pad() == null ? SpecialTokens.NONE : idOf(seen, config.pad(), configFields(file), "pad_token");
        if (unk == SpecialTokens.NONE && config.unk() != null) unk = idOf(seen, config.unk(), configFields(file), "unk_token");
        SpecialTokens ids = new SpecialTokens(bos, eos, SpecialTokens.NONE, SpecialTokens.NONE, pad, unk);

        int[] prefix = config.addBos() == null ? post.prefix() : flagged(config.addBos(), bos, file, "add_bos_token");
        int[] suffix = config.addEos() == null ? post.suffix() : flagged(config.addEos(), eos, file, "add_eos_token");

        TextDecoding decoding = components.decoding(root.get("decoder"), "decoder");
        Vocabulary vocab = new Vocabulary(texts, types, new float[n], ids, decoding);
        PairTable merges = merges(model, vocab, f);
        TokenModel bpe = new BpeModel(vocab, merges, f.bool(model, "ignore_merges", "model.ignore_merges", false),
                byteFallback, unk, f.bool(model, "fuse_unk", "model.fuse_unk", false));
        Pipeline pipeline = new Pipeline(components.normalizer(root.get("normalizer"), "normalizer"),
                components.preTokenizer(root.get("pre_tokenizer"), "pre_tokenizer"), bpe);
        return new Tokenizer(vocab, new SpecialSplitter(vocab, flags), pipeline, prefix, suffix, config.chatTemplate());
    }

    private static JsonNode read(Path file, JsonFields f) {
        try {
            long size = Files.size(file);
            if (size > MAX_FILE_BYTES) {
                throw f.error("(file)", "expected at most " + MAX_FILE_BYTES + " bytes, found " + size);
            }
            return JSON.readTree(file.toFile());
        } catch (com.fasterxml.jackson.core.JsonProcessingException e) {
            throw new ModelFileException(file, "expected JSON, found invalid JSON: " + e.getOriginalMessage(), e);
        } catch (IOException e) {
            throw ModelFileException.unreadable(file, e);
        }
    }

    private static HfTokenizerConfig config(Path file) {
        if (!Files.isRegularFile(file)) return HfTokenizerConfig.NONE;
        JsonFields f = configFields(file);
        return HfTokenizerConfig.parse(read(file, f), f);
    }

    private static JsonFields configFields(Path tokenizerJson) {
        return new JsonFields(tokenizerJson.resolveSibling("tokenizer_config.json"));
    }

    /** Options that change what BPE produces and that none of the supported families uses. */
    private static void checkUnsupportedOptions(JsonNode model, JsonFields f) {
        for (String affix : List.of("continuing_subword_prefix", "end_of_word_suffix")) {
            String v = f.optionalString(model, affix, "model." + affix);
            if (v != null && !v.isEmpty()) throw f.error("model." + affix, "expected null or \"\", found \"" + v + "\"");
        }
        JsonNode dropout = model.get("dropout");
        if (dropout != null && !dropout.isNull() && !(dropout.isNumber() && dropout.doubleValue() == 0)) {
            throw f.error("model.dropout", "expected null (dropout makes encoding random), found " + dropout);
        }
    }

    /** Merges as "left right" strings or [left, right] pairs, in rank order, all of known tokens. */
    private static PairTable merges(JsonNode model, Vocabulary vocab, JsonFields f) {
        JsonNode list = f.array(model, "merges", "model.merges", MAX_MERGES);
        PairTable table = new PairTable(list.size());
        for (int i = 0; i < list.size(); i++) {
            String at = "model.merges[" + i + "]";
            JsonNode m = list.get(i);
            String left;
            String right;
            if (m.isTextual()) {
                String[] parts = m.textValue().split(" ", -1);
                if (parts.length != 2) throw f.error(at, "expected \"left right\", found " + JsonFields.describe(m));
                left = parts[0];
                right = parts[1];
            } else if (m.isArray() && m.size() == 2 && m.get(0).isTextual() && m.get(1).isTextual()) {
                left = m.get(0).textValue();
                right = m.get(1).textValue();
            } else {
                throw f.error(at, "expected \"left right\" or [left, right], found " + JsonFields.describe(m));
            }
            table.put(mergeToken(vocab, left, at, f), mergeToken(vocab, right, at, f), i,
                    mergeToken(vocab, left + right, at, f));
        }
        return table;
    }

    private static int mergeToken(Vocabulary vocab, String text, String at, JsonFields f) {
        int id = vocab.id(text);
        if (id < 0) throw f.error(at, "expected tokens of model.vocab, found \"" + text + "\", which is not one");
        return id;
    }

    private static int idOf(Map<String, Integer> ids, String text, JsonFields f, String field) {
        Integer id = ids.get(text);
        if (id == null) throw f.error(field, "expected a token of the vocabulary, found \"" + text + "\"");
        return id;
    }

    /**
     * BOS (EOS): the config's token; else the post-processor's first (last) special token; else a token with one of
     * the usual names.
     */
    private static int configToken(String name, Map<String, Integer> ids, int[] post, List<String> usual, Path file,
                                   boolean first) {
        if (name != null) return idOf(ids, name, configFields(file), first ? "bos_token" : "eos_token");
        if (post.length > 0) return first ? post[0] : post[post.length - 1];
        for (String u : usual) if (ids.containsKey(u)) return ids.get(u);
        return SpecialTokens.NONE;
    }

    private static int[] flagged(boolean add, int id, Path file, String field) {
        if (!add) return new int[0];
        if (id == SpecialTokens.NONE) {
            throw configFields(file).error(field, "is true, but there is no such token (" + field.substring(4, 7)
                    + "_token)");
        }
        return new int[] {id};
    }
}

package dev.kiln.llm.tokenizer;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Pattern;

/**
 * Builds a {@link Tokenizer} from GGUF metadata the way llama.cpp's {@code llama_vocab::load} reads it. Defaults
 * follow llama.cpp: for {@code "llama"} BOS 1, EOS 2, unknown 0, add BOS, prefix a space; for {@code "gpt2"} add BOS
 * only for Llama 3's pre-tokenizer. Unlike llama.cpp, which warns and carries on, inconsistent metadata (arrays of
 * different lengths, duplicate tokens, ids out of range, merges of unknown tokens) is an error.
 */
final class GgufTokenizerLoader {
    private GgufTokenizerLoader() {}

    /** Bounds for hostile files; real vocabularies have at most a few hundred thousand entries. */
    static final int MAX_TOKENS = 1 << 22;
    static final int MAX_MERGES = 1 << 22;

    private static final String PREFIX = "tokenizer.ggml.";

    static Tokenizer load(Map<String, ?> metadata, Path file) {
        GgufFields f = new GgufFields(metadata, file);
        String model = f.string(PREFIX + "model");
        boolean spm = switch (model) {
            case "llama" -> true;
            case "gpt2" -> false;
            default -> throw f.error(PREFIX + "model", "expected \"llama\" (SentencePiece BPE) or \"gpt2\" "
                    + "(byte-level BPE), found \"" + model + "\"");
        };
        String[] texts = tokens(f);
        int n = texts.length;
        float[] scores = scores(f, n);
        TokenType[] types = types(f, n);

        String pre = spm ? null : f.optionalString(PREFIX + "pre");
        PreTokenizer preTokenizer = spm ? new PreTokenizer.None() : byteLevelPreTokenizer(f, pre);
        boolean llama3 = pre != null && List.of("llama3", "llama-v3", "llama-bpe", "falcon3").contains(pre);

        SpecialTokens special = new SpecialTokens(
                f.tokenId(PREFIX + "bos_token_id", spm && n > 1 ? 1 : SpecialTokens.NONE, n),
                f.tokenId(PREFIX + "eos_token_id", spm && n > 2 ? 2 : SpecialTokens.NONE, n),
                f.tokenId(PREFIX + "eot_token_id", SpecialTokens.NONE, n),
                f.tokenId(PREFIX + "eom_token_id", SpecialTokens.NONE, n),
                f.tokenId(PREFIX + "padding_token_id", SpecialTokens.NONE, n),
                f.tokenId(PREFIX + "unknown_token_id", spm && n > 0 ? 0 : SpecialTokens.NONE, n));
        boolean addBos = f.bool(PREFIX + "add_bos_token", spm || llama3);
        boolean addEos = f.bool(PREFIX + "add_eos_token", false);
        boolean addSpacePrefix = spm && f.bool(PREFIX + "add_space_prefix", true);
        if (addBos && !special.hasBos()) {
            throw f.error(PREFIX + "add_bos_token", "is true, but there is no " + PREFIX + "bos_token_id");
        }
        if (addEos && !special.hasEos()) {
            throw f.error(PREFIX + "add_eos_token", "is true, but there is no " + PREFIX + "eos_token_id");
        }

        TextDecoding decoding = spm ? new TextDecoding.SentencePiece(addSpacePrefix) : new TextDecoding.ByteLevelBytes();
        Vocabulary vocab = new Vocabulary(texts, types, scores, special, decoding);
        Pipeline pipeline;
        if (spm) {
            List<Normalizer> steps = new ArrayList<>();
            if (addSpacePrefix) steps.add(new Normalizer.Prepend(" "));
            steps.add(new Normalizer.Replace(Pattern.compile(" ", Pattern.LITERAL), "\u2581"));
            pipeline = new Pipeline(new Normalizer.Sequence(steps), preTokenizer, new SpmModel(vocab));
        } else {
            PairTable merges = merges(f, vocab);
            pipeline = new Pipeline(new Normalizer.Identity(), preTokenizer,
                    new BpeModel(vocab, merges, llama3, false, SpecialTokens.NONE, false));
        }
        int[] prefix = addBos ? new int[] {special.bos()} : new int[0];
        int[] suffix = addEos ? new int[] {special.eos()} : new int[0];
        return new Tokenizer(vocab, new SpecialSplitter(vocab, Map.of()), pipeline, prefix, suffix,
                f.optionalString("tokenizer.chat_template"));
    }

    private static String[] tokens(GgufFields f) {
        String key = PREFIX + "tokens";
        List<?> list = f.list(key, true, MAX_TOKENS);
        if (list.isEmpty()) throw f.error(key, "expected at least one token, found none");
        String[] texts = new String[list.size()];
        Map<String, Integer> seen = HashMap.newHashMap(texts.length);
        for (int i = 0; i < texts.length; i++) {
            String t = f.stringAt(list, key, i);
            if (t.isEmpty()) t = "[EMPTY_" + i + "]"; // llama.cpp's name for an empty entry, which nothing matches
            Integer before = seen.putIfAbsent(t, i);
            if (before != null) {
                throw f.error(key + "[" + i + "]", "expected distinct tokens, found \"" + t + "\" again (first at "
                        + before + ")");
            }
            texts[i] = t;
        }
        return texts;
    }

    private static float[] scores(GgufFields f, int n) {
        String key = PREFIX + "scores";
        List<?> list = f.list(key, false, MAX_TOKENS);
        float[] scores = new float[n];
        if (list == null) return scores;
        if (list.size() != n) throw f.error(key, "expected " + n + " scores (one per token), found " + list.size());
        for (int i = 0; i < n; i++) scores[i] = (float) f.numberAt(list, key, i);
        return scores;
    }

    private static TokenType[] types(GgufFields f, int n) {
        String key = PREFIX + "token_type";
        List<?> list = f.list(key, false, MAX_TOKENS);
        TokenType[] types = new TokenType[n];
        Arrays.fill(types, TokenType.NORMAL);
        if (list == null) return types;
        if (list.size() != n) throw f.error(key, "expected " + n + " types (one per token), found " + list.size());
        for (int i = 0; i < n; i++) {
            long code = f.integerAt(list, key, i);
            types[i] = TokenType.ofGgufCode(code);
            if (types[i] == null) throw f.error(key + "[" + i + "]", "expected a token type 1..6, found " + code);
        }
        return types;
    }

    /** Merges "left right" in rank order; both sides and their concatenation must be tokens. */
    private static PairTable merges(GgufFields f, Vocabulary vocab) {
        String key = PREFIX + "merges";
        List<?> list = f.list(key, true, MAX_MERGES);
        PairTable table = new PairTable(list.size());
        for (int i = 0; i < list.size(); i++) {
            String merge = f.stringAt(list, key, i);
            int space = merge.indexOf(' ', 1); // from 1, as llama.cpp: a merge's left side may itself be a space
            if (space < 0) throw f.error(key + "[" + i + "]", "expected \"left right\", found \"" + merge + "\"");
            String left = merge.substring(0, space);
            String right = merge.substring(space + 1);
            table.put(tokenOf(f, vocab, key, i, left), tokenOf(f, vocab, key, i, right), i,
                    tokenOf(f, vocab, key, i, left + right));
        }
        return table;
    }

    private static int tokenOf(GgufFields f, Vocabulary vocab, String key, int i, String text) {
        int id = vocab.id(text);
        if (id < 0) throw f.error(key + "[" + i + "]", "expected tokens of " + PREFIX + "tokens, found \"" + text
                + "\", which is not one");
        return id;
    }

    /** llama.cpp's regexes for {@code tokenizer.ggml.pre}, applied in turn, then the bytes as characters. */
    private static PreTokenizer byteLevelPreTokenizer(GgufFields f, String pre) {
        List<String> patterns = switch (pre == null ? "default" : pre) {
            case "default" -> SplitPatterns.LLAMA_CPP_DEFAULT;
            case "llama3", "llama-v3", "llama-bpe", "falcon3", "dbrx", "smaug-bpe" -> List.of(SplitPatterns.LLAMA3);
            case "qwen2", "stablelm2", "megrez", "deepseek-r1-qwen" -> List.of(SplitPatterns.QWEN2);
            case "smollm", "starcoder", "refact", "command-r", "codeshell", "exaone", "minerva-7b" ->
                    List.of(SplitPatterns.DIGIT, SplitPatterns.GPT2);
            case "gpt-2", "gpt2", "phi-2", "roberta-bpe", "mpt", "olmo", "jais" -> List.of(SplitPatterns.GPT2);
            default -> throw f.error(PREFIX + "pre", "expected a supported pre-tokenizer (default, llama-bpe, "
                    + "llama3, qwen2, smollm, gpt-2 and their aliases), found \"" + pre + "\"");
        };
        List<PreTokenizer> steps = new ArrayList<>();
        for (String p : patterns) {
            steps.add(new PreTokenizer.Split(SplitPatterns.compile(p), PreTokenizer.Behavior.ISOLATED, false));
        }
        steps.add(new PreTokenizer.ByteLevelStep(false, false));
        return new PreTokenizer.Sequence(steps);
    }
}

package dev.kiln.llm.tokenizer;

import java.util.BitSet;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * The token table both tokenizer families share: text, type and score of each id, the reverse map, the
 * {@code <0xXX>} byte tokens, the special ids and the bytes each token decodes to. Loaders validate their files
 * before building one, so the constructor only assumes a consistent table (no duplicate texts).
 */
final class Vocabulary {
    /** Token texts llama.cpp takes as end of turn when a file names none, in order of preference. */
    private static final List<String> EOT_NAMES = List.of("<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>",
            "<|endoftext|>", "<EOT>", "<\uFF5Cend\u2581of\u2581sentence\uFF5C>");
    /** Token texts that end generation wherever they occur (llama.cpp's list), besides EOS, EOT and EOM. */
    private static final List<String> EOG_NAMES = List.of("<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>",
            "<|endoftext|>", "<|eom_id|>", "<EOT>");

    private final String[] texts;
    private final TokenType[] types;
    private final float[] scores;
    private final Map<String, Integer> ids;
    private final int[] byteTokens = new int[256];
    private final SpecialTokens special;
    private final BitSet endOfGeneration = new BitSet();
    private final byte[][] pieces;
    private final TextDecoding decoding;

    /**
     * A table of {@code texts.length} tokens. End-of-turn and end-of-message ids left {@link SpecialTokens#NONE}
     * are found by their usual texts, and tokens that end generation become {@link TokenType#CONTROL} (llama.cpp
     * overrides their types the same way, since converters often mark them normal).
     */
    Vocabulary(String[] texts, TokenType[] types, float[] scores, SpecialTokens special, TextDecoding decoding) {
        this.texts = texts.clone();
        this.types = types.clone();
        this.scores = scores.clone();
        this.decoding = decoding;
        this.ids = HashMap.newHashMap(texts.length);
        for (int i = 0; i < texts.length; i++) ids.put(texts[i], i);
        for (int b = 0; b < 256; b++) byteTokens[b] = id(String.format("<0x%02X>", b));

        int eot = special.eot();
        for (int i = 0; eot == SpecialTokens.NONE && i < EOT_NAMES.size(); i++) eot = id(EOT_NAMES.get(i));
        int eom = special.eom() != SpecialTokens.NONE ? special.eom() : id("<|eom_id|>");
        this.special = new SpecialTokens(special.bos(), special.eos(), eot, eom, special.pad(), special.unk());
        for (String name : EOG_NAMES) markEndOfGeneration(id(name));
        markEndOfGeneration(this.special.eos());
        markEndOfGeneration(eot);
        markEndOfGeneration(eom);

        this.pieces = new byte[texts.length][];
        for (int i = 0; i < texts.length; i++) pieces[i] = decoding.bytesOf(this.texts[i], this.types[i]);
    }

    private void markEndOfGeneration(int id) {
        if (id == SpecialTokens.NONE) return;
        endOfGeneration.set(id);
        if (types[id] == TokenType.NORMAL) types[id] = TokenType.CONTROL;
    }

    int size() { return texts.length; }

    /** The id of the token with this exact text, or {@link SpecialTokens#NONE}. */
    int id(String text) {
        Integer id = ids.get(text);
        return id == null ? SpecialTokens.NONE : id;
    }

    String text(int id) { return texts[id]; }

    TokenType type(int id) { return types[id]; }

    float score(int id) { return scores[id]; }

    /** The id of the {@code <0xXX>} token for byte {@code b}, or {@link SpecialTokens#NONE}. */
    int byteToken(int b) { return byteTokens[b]; }

    SpecialTokens special() { return special; }

    boolean isEndOfGeneration(int id) { return endOfGeneration.get(id); }

    /** The bytes token {@code id} decodes to (its text for control and added tokens). */
    byte[] piece(int id) { return pieces[id]; }

    TextDecoding decoding() { return decoding; }
}

package dev.kiln.llm.tokenizer;

/** Turns one pre-tokenized word into token ids. */
sealed interface TokenModel permits SpmModel, BpeModel {
    /** Appends the ids of {@code word} (non-empty) to {@code out}. */
    void encode(String word, Ints out);
}

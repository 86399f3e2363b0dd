package dev.kiln.llm.generate;

/**
 * A language model's state for one sequence: the tokens seen so far, as a KV cache, and the logits of the next one.
 * {@link TokenStream} drives one; {@code dev.kiln.llm.LanguageModel#newDecoder()} makes them. Not thread-safe: one
 * sequence, one thread at a time.
 */
public interface Decoder extends AutoCloseable {
    /** The most tokens a sequence may hold. */
    int contextLength();

    /** The vocabulary size: the length of the logits. */
    int vocabularySize();

    /** How many tokens the sequence holds. */
    int position();

    /**
     * Runs {@code tokens} through the model after the sequence so far (a prompt, or one generated token) and returns
     * the logits of the token that would follow the last of them.
     *
     * @throws ContextOverflowException if the sequence would pass {@link #contextLength()}; nothing is run then
     * @throws IllegalArgumentException if {@code tokens} is empty or holds an id outside the vocabulary
     */
    float[] append(int... tokens);

    /** Forgets the sequence: the next {@link #append} starts at position 0. */
    void reset();

    /** Frees what the decoder holds (or returns it to its model for reuse). */
    @Override
    void close();
}

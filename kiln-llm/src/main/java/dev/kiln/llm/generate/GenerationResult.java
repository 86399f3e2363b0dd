package dev.kiln.llm.generate;

import java.util.Objects;

/**
 * A finished generation.
 *
 * @param text   the generated text (without the prompt, a stop string or an end token)
 * @param tokens the generated ids, an end token included
 * @param finish why it ended
 * @param stats  its timings
 */
public record GenerationResult(String text, int[] tokens, FinishReason finish, GenerationStats stats) {
    public GenerationResult {
        Objects.requireNonNull(text);
        tokens = tokens.clone();
        Objects.requireNonNull(finish);
        Objects.requireNonNull(stats);
    }

    @Override public int[] tokens() { return tokens.clone(); }
}

package dev.kiln.llm.generate;

/**
 * How long a generation took.
 *
 * @param promptTokens    tokens in the prompt
 * @param generatedTokens tokens generated (an end token included)
 * @param prefillNanos    time to run the prompt through the model, up to its logits
 * @param decodeSteps     single-token runs after the prompt
 * @param decodeNanos     their time
 * @param samplingNanos   time spent choosing tokens and decoding text
 */
public record GenerationStats(int promptTokens, int generatedTokens, long prefillNanos, int decodeSteps, long decodeNanos, long samplingNanos) {
    /** Prompt tokens per second of prefill; 0 before the prompt ran. */
    public double prefillTokensPerSecond() { return prefillNanos == 0 ? 0 : promptTokens * 1e9 / prefillNanos; }

    /** Decode steps per second; 0 before the first. */
    public double decodeTokensPerSecond() { return decodeNanos == 0 ? 0 : decodeSteps * 1e9 / decodeNanos; }

    @Override
    public String toString() {
        return String.format(java.util.Locale.ROOT, "prompt %d tokens, %.1f tokens/s; generated %d tokens, decode %.1f tokens/s", promptTokens,
                prefillTokensPerSecond(), generatedTokens, decodeTokensPerSecond());
    }
}

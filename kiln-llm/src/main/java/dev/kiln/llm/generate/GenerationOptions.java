package dev.kiln.llm.generate;

import java.util.List;
import java.util.Objects;

/**
 * What to generate and when to stop.
 *
 * @param maxTokens  the most tokens to generate; 0 generates until the context is full. A prompt plus a positive
 *                   {@code maxTokens} that does not fit the context is a {@link ContextOverflowException} before
 *                   anything runs (as OpenAI's API refuses it)
 * @param stop       stop strings: generation ends where the text first contains one, and the text returned ends
 *                   before it; while the text's end might still grow into one, that part is held back from streaming
 * @param ignoreEos  keep going past end-of-generation tokens (EOS, end of turn), which otherwise end generation
 * @param sampling   how each token is chosen
 */
public record GenerationOptions(int maxTokens, List<String> stop, boolean ignoreEos, SamplingOptions sampling) {
    public GenerationOptions {
        if (maxTokens < 0) throw new IllegalArgumentException("maxTokens must be >= 0 (0 = up to the context), got " + maxTokens);
        stop = List.copyOf(stop);
        for (String s : stop) if (s.isEmpty()) throw new IllegalArgumentException("stop strings must not be empty");
        Objects.requireNonNull(sampling, "sampling");
    }

    /** Until an end-of-generation token or the end of the context, no stop string, {@link SamplingOptions#defaults()}. */
    public static GenerationOptions defaults() { return new GenerationOptions(0, List.of(), false, SamplingOptions.defaults()); }

    /** {@link #defaults()} choosing greedily. */
    public static GenerationOptions greedy() { return defaults().withSampling(SamplingOptions.greedy()); }

    public GenerationOptions withMaxTokens(int n) { return new GenerationOptions(n, stop, ignoreEos, sampling); }

    public GenerationOptions withStop(String... strings) { return new GenerationOptions(maxTokens, List.of(strings), ignoreEos, sampling); }

    public GenerationOptions withIgnoreEos(boolean ignore) { return new GenerationOptions(maxTokens, stop, ignore, sampling); }

    public GenerationOptions withSampling(SamplingOptions s) { return new GenerationOptions(maxTokens, stop, ignoreEos, s); }
}

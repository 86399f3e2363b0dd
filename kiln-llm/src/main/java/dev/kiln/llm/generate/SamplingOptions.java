package dev.kiln.llm.generate;

import java.util.OptionalLong;

/**
 * How the next token is chosen from the logits; see {@link Sampler} for the order the steps apply in. The defaults
 * change nothing (temperature 1, every filter off, no penalty), as OpenAI's API does.
 *
 * @param temperature       logits are divided by it; 0 is greedy (the most likely token, the lowest id on a tie)
 * @param topK              keep the k most likely tokens; 0 keeps all
 * @param topP              keep the most likely tokens whose probabilities sum to at least p (nucleus); 1 keeps all
 * @param minP              drop tokens less likely than {@code minP} times the most likely one; 0 keeps all
 * @param repetitionPenalty a logit of a token among the last {@code penaltyLastN} is divided by it when positive,
 *                          multiplied when negative (CTRL's penalty, as transformers and llama.cpp apply it); 1 is off
 * @param presencePenalty   subtracted once from the logit of every token among the last {@code penaltyLastN}
 *                          (OpenAI's presence penalty); 0 is off
 * @param penaltyLastN      how many of the latest tokens (prompt included) the penalties look at; llama.cpp's 64
 * @param seed              the random draw's seed: the same seed, options and model give the same tokens; empty
 *                          draws a fresh seed per generation
 */
public record SamplingOptions(double temperature, int topK, double topP, double minP, double repetitionPenalty, double presencePenalty,
                              int penaltyLastN, OptionalLong seed) {
    public SamplingOptions {
        if (!(temperature >= 0) || Double.isInfinite(temperature)) throw new IllegalArgumentException("temperature must be finite and >= 0, got " + temperature);
        if (topK < 0) throw new IllegalArgumentException("topK must be >= 0 (0 = off), got " + topK);
        if (!(topP > 0 && topP <= 1)) throw new IllegalArgumentException("topP must be in (0, 1], got " + topP);
        if (!(minP >= 0 && minP <= 1)) throw new IllegalArgumentException("minP must be in [0, 1], got " + minP);
        if (!(repetitionPenalty > 0) || Double.isInfinite(repetitionPenalty)) {
            throw new IllegalArgumentException("repetitionPenalty must be finite and > 0 (1 = off), got " + repetitionPenalty);
        }
        if (!Double.isFinite(presencePenalty)) throw new IllegalArgumentException("presencePenalty must be finite, got " + presencePenalty);
        if (penaltyLastN < 0) throw new IllegalArgumentException("penaltyLastN must be >= 0, got " + penaltyLastN);
        java.util.Objects.requireNonNull(seed, "seed");
    }

    /** Temperature 1, no filter, no penalty, a fresh seed. */
    public static SamplingOptions defaults() { return new SamplingOptions(1, 0, 1, 0, 1, 0, 64, OptionalLong.empty()); }

    /** Always the most likely token. */
    public static SamplingOptions greedy() { return defaults().withTemperature(0); }

    public SamplingOptions withTemperature(double t) { return new SamplingOptions(t, topK, topP, minP, repetitionPenalty, presencePenalty, penaltyLastN, seed); }

    public SamplingOptions withTopK(int k) { return new SamplingOptions(temperature, k, topP, minP, repetitionPenalty, presencePenalty, penaltyLastN, seed); }

    public SamplingOptions withTopP(double p) { return new SamplingOptions(temperature, topK, p, minP, repetitionPenalty, presencePenalty, penaltyLastN, seed); }

    public SamplingOptions withMinP(double p) { return new SamplingOptions(temperature, topK, topP, p, repetitionPenalty, presencePenalty, penaltyLastN, seed); }

    public SamplingOptions withRepetitionPenalty(double p) {
        return new SamplingOptions(temperature, topK, topP, minP, p, presencePenalty, penaltyLastN, seed);
    }

    public SamplingOptions withPresencePenalty(double p) {
        return new SamplingOptions(temperature, topK, topP, minP, repetitionPenalty, p, penaltyLastN, seed);
    }

    public SamplingOptions withPenaltyLastN(int n) {
        return new SamplingOptions(temperature, topK, topP, minP, repetitionPenalty, presencePenalty, n, seed);
    }

    public SamplingOptions withSeed(long s) {
        return new SamplingOptions(temperature, topK, topP, minP, repetitionPenalty, presencePenalty, penaltyLastN, OptionalLong.of(s));
    }

    /** Whether the choice is greedy (temperature 0). */
    public boolean isGreedy() { return temperature == 0; }
}

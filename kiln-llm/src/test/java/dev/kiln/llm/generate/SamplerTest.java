package dev.kiln.llm.generate;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.within;

class SamplerTest {
    private static final int[] NONE = new int[0];

    private static float[] logitsOf(double... probabilities) {
        float[] l = new float[probabilities.length];
        for (int i = 0; i < l.length; i++) l[i] = (float) Math.log(probabilities[i]);
        return l;
    }

    /** Frequencies of each id over {@code n} draws. */
    private static double[] frequencies(SamplingOptions o, float[] logits, int n) {
        Sampler s = new Sampler(o);
        double[] f = new double[logits.length];
        for (int i = 0; i < n; i++) f[s.sample(logits, NONE, 0)] += 1.0 / n;
        return f;
    }

    @Test
    void greedyTakesTheLargestLogitAndTheLowestIdOnATie() {
        Sampler s = new Sampler(SamplingOptions.greedy());
        assertThat(s.sample(new float[] {1, 3, 2}, NONE, 0)).isEqualTo(1);
        assertThat(s.sample(new float[] {1, 3, 3}, NONE, 0)).isEqualTo(1);
        assertThat(s.sample(new float[] {Float.NEGATIVE_INFINITY, -5}, NONE, 0)).isEqualTo(1);
    }

    @Test
    void temperatureOneDrawsTheSoftmaxDistribution() {
        double[] f = frequencies(SamplingOptions.defaults().withSeed(1), logitsOf(1 / 6.0, 2 / 6.0, 3 / 6.0), 60_000);
        assertThat(f[0]).isCloseTo(1 / 6.0, within(0.01));
        assertThat(f[1]).isCloseTo(2 / 6.0, within(0.01));
        assertThat(f[2]).isCloseTo(3 / 6.0, within(0.01));
    }

    @Test
    void aLowerTemperatureSharpens() {
        // p^(1/T) with T = 0.5: 1 : 4 : 9
        double[] f = frequencies(SamplingOptions.defaults().withTemperature(0.5).withSeed(2), logitsOf(1 / 6.0, 2 / 6.0, 3 / 6.0), 60_000);
        assertThat(f[0]).isCloseTo(1 / 14.0, within(0.01));
        assertThat(f[1]).isCloseTo(4 / 14.0, within(0.01));
        assertThat(f[2]).isCloseTo(9 / 14.0, within(0.01));
    }

    @Test
    void topKKeepsTheKMostLikely() {
        double[] f = frequencies(SamplingOptions.defaults().withTopK(2).withSeed(3), logitsOf(0.1, 0.2, 0.3, 0.4), 40_000);
        assertThat(f[0]).isZero();
        assertThat(f[1]).isZero();
        assertThat(f[2]).isCloseTo(3 / 7.0, within(0.01));
        assertThat(f[3]).isCloseTo(4 / 7.0, within(0.01));
    }

    @Test
    void topPKeepsTheNucleus() {
        // 0.5 + 0.3 passes 0.75: the two most likely tokens stay, renormalised
        double[] f = frequencies(SamplingOptions.defaults().withTopP(0.75).withSeed(4), logitsOf(0.3, 0.05, 0.5, 0.15), 40_000);
        assertThat(f[1]).isZero();
        assertThat(f[3]).isZero();
        assertThat(f[2]).isCloseTo(0.5 / 0.8, within(0.01));
        assertThat(f[0]).isCloseTo(0.3 / 0.8, within(0.01));
    }

    @Test
    void minPDropsTokensFarLessLikelyThanTheBest() {
        // floor 0.25 * 0.5 = 0.125: 0.05 goes, 0.15 stays
        double[] f = frequencies(SamplingOptions.defaults().withMinP(0.25).withSeed(5), logitsOf(0.5, 0.3, 0.15, 0.05), 40_000);
        assertThat(f[3]).isZero();
        assertThat(f[2]).isCloseTo(0.15 / 0.95, within(0.01));
    }

    @Test
    void repetitionPenaltyDividesPositiveAndMultipliesNegativeLogits() {
        Sampler s = new Sampler(SamplingOptions.greedy().withRepetitionPenalty(2));
        assertThat(s.sample(new float[] {2, 2.1f, -1}, new int[] {1}, 1)).isEqualTo(0); // 2.1 -> 1.05
        assertThat(s.sample(new float[] {-1, -2, -0.6f}, new int[] {2, 2, 2}, 3)).isEqualTo(0); // -0.6 -> -1.2, once
        assertThat(s.sample(new float[] {-1, -2, -0.6f}, new int[] {7}, 1)).isEqualTo(2); // an id outside the logits is ignored
    }

    @Test
    void presencePenaltySubtractsOncePerTokenWithinTheWindow() {
        Sampler s = new Sampler(SamplingOptions.greedy().withPresencePenalty(1).withPenaltyLastN(2));
        float[] l = {1, 1.5f, 1.2f};
        assertThat(s.sample(l, new int[] {1, 1, 1}, 3)).isEqualTo(2);      // 1.5 -> 0.5
        assertThat(s.sample(l, new int[] {1, 0, 2}, 3)).isEqualTo(1);      // token 1 is outside the last 2
        assertThat(s.sample(l, new int[] {1, 0, 2, 9}, 2)).isEqualTo(2);   // only the first 2 entries are the history
        assertThat(l).containsExactly(1, 1.5f, 1.2f);                      // the caller's logits are untouched
    }

    @Test
    void aSeedReproducesTheDrawsAndAnotherSeedDoesNot() {
        float[] l = new float[50];
        for (int i = 0; i < l.length; i++) l[i] = (float) Math.sin(i);
        SamplingOptions o = SamplingOptions.defaults().withTopP(0.95).withMinP(0.01);
        int[] a = draws(o.withSeed(42), l), b = draws(o.withSeed(42), l), c = draws(o.withSeed(43), l);
        assertThat(a).containsExactly(b);
        assertThat(a).isNotEqualTo(c);
    }

    private static int[] draws(SamplingOptions o, float[] l) {
        Sampler s = new Sampler(o);
        int[] out = new int[40];
        for (int i = 0; i < out.length; i++) out[i] = s.sample(l, NONE, 0);
        return out;
    }

    @Test
    void nanLogitsAreNeverChosenAndNothingToChooseIsAnError() {
        double[] f = frequencies(SamplingOptions.defaults().withSeed(6), new float[] {Float.NaN, 0, Float.NEGATIVE_INFINITY}, 1000);
        assertThat(f[1]).isEqualTo(1.0, within(1e-9));
        assertThatThrownBy(() -> new Sampler(SamplingOptions.defaults()).sample(new float[] {Float.NaN}, NONE, 0))
                .isInstanceOf(IllegalStateException.class).hasMessageContaining("NaN");
    }

    @Test
    void optionsOutOfRangeAreRefused() {
        assertThatThrownBy(() -> SamplingOptions.defaults().withTemperature(-1)).hasMessageContaining("temperature");
        assertThatThrownBy(() -> SamplingOptions.defaults().withTopP(0)).hasMessageContaining("topP");
        assertThatThrownBy(() -> SamplingOptions.defaults().withTopK(-1)).hasMessageContaining("topK");
        assertThatThrownBy(() -> SamplingOptions.defaults().withMinP(1.5)).hasMessageContaining("minP");
        assertThatThrownBy(() -> SamplingOptions.defaults().withRepetitionPenalty(0)).hasMessageContaining("repetitionPenalty");
        assertThatThrownBy(() -> GenerationOptions.defaults().withStop("")).hasMessageContaining("empty");
        assertThatThrownBy(() -> GenerationOptions.defaults().withMaxTokens(-1)).hasMessageContaining("maxTokens");
    }
}

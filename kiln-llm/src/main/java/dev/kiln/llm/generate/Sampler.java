package dev.kiln.llm.generate;

import java.util.Arrays;
import java.util.SplittableRandom;

/**
 * Chooses the next token from a model's logits, in this order (llama.cpp's chain, which transformers follows too):
 * <ol>
 *   <li>penalties on the logits of the last {@code penaltyLastN} tokens: repetition (divide a positive logit,
 *       multiply a negative one), then presence (subtract);</li>
 *   <li>temperature 0: the largest logit, the lowest id on a tie; nothing below runs and nothing random is drawn;</li>
 *   <li>top-k (the k largest logits), then softmax of {@code logit / temperature} over what is left, then top-p (the
 *       most likely tokens until their probabilities sum to at least p, in descending order), then min-p (tokens at
 *       least {@code minP} times as likely as the most likely);</li>
 *   <li>one draw from what is left, renormalised, with a {@link SplittableRandom} seeded by the options' seed.</li>
 * </ol>
 * Ties among equal probabilities are ordered by id, so a seed gives the same tokens on every run and machine. Not
 * thread-safe: one per generation.
 */
public final class Sampler {
    private final SamplingOptions options;
    private final SplittableRandom random;
    private int[] order = new int[0];   // candidate ids, most likely first
    private double[] probs = new double[0];

    /** A sampler with {@code options}; a seedless options draws a fresh seed here. */
    public Sampler(SamplingOptions options) {
        this.options = options;
        this.random = new SplittableRandom(options.seed().orElseGet(() -> new SplittableRandom().nextLong()));
    }

    /**
     * The next token for {@code logits} (not modified), given the sequence so far: {@code history[0..length)}, the
     * prompt and what was generated, the last entries being the latest.
     */
    public int sample(float[] logits, int[] history, int length) {
        float[] l = penalised(logits, history, length);
        if (options.isGreedy()) return argmax(l);
        int n = candidates(l);
        double t = options.temperature(), max = l[order[0]] / t, sum = 0;
        for (int i = 0; i < n; i++) sum += probs[i] = Math.exp(l[order[i]] / t - max);
        for (int i = 0; i < n; i++) probs[i] /= sum;
        if (options.topP() < 1) {
            double cumulative = 0;
            int keep = 0;
            while (keep < n && cumulative < options.topP()) cumulative += probs[keep++];
            n = Math.max(keep, 1);
        }
        if (options.minP() > 0) {
            double floor = options.minP() * probs[0];
            int keep = 1;
            while (keep < n && probs[keep] >= floor) keep++;
            n = keep;
        }
        double total = 0;
        for (int i = 0; i < n; i++) total += probs[i];
        double u = random.nextDouble() * total;
        for (int i = 0; i < n; i++) {
            u -= probs[i];
            if (u < 0) return order[i];
        }
        return order[n - 1]; // rounding left a sliver of u
    }

    /** The logits with the penalties applied (a copy when there are any). */
    private float[] penalised(float[] logits, int[] history, int length) {
        double rep = options.repetitionPenalty(), presence = options.presencePenalty();
        if ((rep == 1 && presence == 0) || options.penaltyLastN() == 0 || length == 0) return logits;
        float[] l = logits.clone();
        boolean[] seen = new boolean[l.length];
        for (int i = Math.max(0, length - options.penaltyLastN()); i < length; i++) {
            int id = history[i];
            if (id < 0 || id >= l.length || seen[id]) continue;
            seen[id] = true; // once per token, however often it occurred
            float v = l[id];
            v = (float) (v > 0 ? v / rep : v * rep);
            l[id] = (float) (v - presence);
        }
        return l;
    }

    private static int argmax(float[] l) {
        int best = 0;
        for (int i = 1; i < l.length; i++) if (l[i] > l[best]) best = i;
        return best;
    }

    /**
     * Fills {@link #order} with the candidate ids, most likely first (by id among equals), after top-k, and returns
     * how many there are. NaN logits are never candidates.
     */
    private int candidates(float[] l) {
        if (order.length < l.length) {
            order = new int[l.length];
            probs = new double[l.length];
        }
        int n = 0;
        for (int i = 0; i < l.length; i++) if (!Float.isNaN(l[i]) && l[i] != Float.NEGATIVE_INFINITY) order[n++] = i;
        if (n == 0) throw new IllegalStateException("sampling: every logit is NaN or -infinity");
        int k = options.topK() > 0 ? Math.min(options.topK(), n) : n;
        // sort by logit descending, then id ascending: a long key per candidate, sorted once
        long[] keys = new long[n];
        for (int i = 0; i < n; i++) keys[i] = ((long) descendingBits(l[order[i]]) << 32) | order[i];
        Arrays.sort(keys);
        for (int i = 0; i < k; i++) order[i] = (int) keys[i];
        return k;
    }

    /** An int that sorts ascending as {@code v} sorts descending. */
    private static int descendingBits(float v) {
        int bits = Float.floatToIntBits(v + 0.0f); // -0.0 as 0.0
        int ascending = bits < 0 ? ~bits : bits | Integer.MIN_VALUE; // IEEE order as unsigned
        return ~ascending ^ Integer.MIN_VALUE; // descending, as a signed int
    }
}

package dev.kiln.llm.model;

import dev.kiln.llm.LanguageModel;
import dev.kiln.llm.ModelOptions;
import dev.kiln.llm.generate.Decoder;

import java.util.Arrays;

/**
 * Run by {@link BatchInvarianceTest} in a JVM of its own (the reduction order is chosen once per process): for each
 * quantised model and each way of taking x (f32, quantised), one sequence steps alone on a decoder and, beside seven
 * others, in a full 8-slot {@link BatchedDecode}; prints one line per model and mode, "same bits" when every logit of
 * every step is the same float, else the first step and count that differ.
 */
public final class BatchInvarianceProbe {
    private static final String[] PROMPTS = {"Once upon a time", "hello", "The quick brown fox", "a b c", "x", "Kiln", "JVM tensors", "zz top"};
    private static final int STEPS = 8;

    public static void main(String[] args) {
        System.out.println("order=" + System.getProperty("kiln.reductions"));
        for (LlmFixtures.Case c : LlmFixtures.QUANTISED) {
            for (boolean quantised : new boolean[] {false, true}) {
                ModelOptions options = ModelOptions.defaults().withContextLength(64).withDevice(args[0]).withQuantizedActivations(quantised);
                try (LanguageModel m = LanguageModel.open(c.path(), options)) {
                    System.out.println(c + " x " + (quantised ? "quantised" : "f32") + ": " + compare(m));
                }
            }
        }
    }

    private static String compare(LanguageModel m) {
        try (BatchedDecode batch = m.compiled().newBatchedDecode(PROMPTS.length); Decoder alone = m.newDecoder()) {
            float[] logits = alone.append(m.encode(PROMPTS[0]));
            int[] next = new int[PROMPTS.length];
            for (int s = 0; s < PROMPTS.length; s++) {
                try (Decoder d = m.newDecoder()) {
                    next[s] = argmax(d.append(m.encode(PROMPTS[s])));
                    batch.admit(s, d);
                }
            }
            boolean[] active = new boolean[PROMPTS.length];
            Arrays.fill(active, true);
            for (int step = 0; step < STEPS; step++) {
                next[0] = argmax(logits);
                float[][] all = batch.step(next.clone(), active);
                logits = alone.append(next[0]);
                int differ = 0;
                for (int i = 0; i < logits.length; i++) if (Float.floatToRawIntBits(logits[i]) != Float.floatToRawIntBits(all[0][i])) differ++;
                if (differ > 0) return "step " + step + ": " + differ + " of " + logits.length + " logits differ";
                for (int s = 1; s < PROMPTS.length; s++) next[s] = argmax(all[s]);
            }
            return "same bits";
        }
    }

    private static int argmax(float[] v) {
        int best = 0;
        for (int i = 1; i < v.length; i++) if (v[i] > v[best]) best = i;
        return best;
    }
}

package dev.kiln.llm.model;

import dev.kiln.llm.ModelConfig;

import java.util.Optional;

/**
 * RoPE's inverse frequencies and the cos/sin tables built from them, computed in f32 the way transformers computes
 * them ({@code 1 / theta^(2i/d)}, then the scaling, then {@code cos(pos * inv)}), so that Kiln's angles are
 * transformers' to the last bit or two.
 *
 * <p>Scaling: {@code linear} divides every frequency by its factor; {@code llama3} divides low frequencies by the
 * factor, keeps high ones and interpolates between ({@code _compute_llama3_parameters}); a GGUF file's
 * {@code rope_freqs.weight} divides each frequency by its own factor, as llama.cpp does (its converter writes Llama 3's
 * scaling that way, with the same branches, so both sources give the same frequencies).
 */
public final class Rope {
    private Rope() {}

    /**
     * The {@code ropeDimensions / 2} inverse frequencies of {@code config}, with the file's per-frequency divisors when
     * it has them.
     *
     * @throws IllegalArgumentException if {@code factors} does not have one value per frequency
     */
    public static float[] inverseFrequencies(ModelConfig config, Optional<float[]> factors) {
        int d = config.ropeDimensions(), half = d / 2;
        float theta = (float) config.ropeTheta();
        float[] inv = new float[half];
        for (int i = 0; i < half; i++) inv[i] = 1f / (float) Math.pow(theta, (float) (2 * i) / (float) d);
        config.ropeScaling().ifPresent(s -> {
            switch (s.type()) {
                case "linear" -> {
                    for (int i = 0; i < half; i++) inv[i] = inv[i] / (float) s.factor();
                }
                case "llama3" -> llama3(inv, s);
                default -> throw new IllegalArgumentException("RoPE scaling '" + s.type() + "' is not supported");
            }
        });
        if (factors.isPresent()) {
            float[] f = factors.get();
            if (f.length != half) throw new IllegalArgumentException("rope_freqs.weight: expected " + half + " factors, one per frequency, found " + f.length);
            for (int i = 0; i < half; i++) inv[i] = inv[i] / f[i];
        }
        return inv;
    }

    private static void llama3(float[] inv, ModelConfig.RopeScaling s) {
        float factor = (float) s.factor(), low = (float) s.lowFreqFactor(), high = (float) s.highFreqFactor();
        float old = s.originalMaxPositionEmbeddings();
        float lowWavelen = old / low, highWavelen = old / high;
        for (int i = 0; i < inv.length; i++) {
            float wavelen = (float) (2 * Math.PI) / inv[i];
            float scaled = wavelen > lowWavelen ? inv[i] / factor : inv[i];
            if (!(wavelen < highWavelen) && !(wavelen > lowWavelen)) {
                float smooth = (old / wavelen - low) / (high - low);
                scaled = (1 - smooth) * scaled / factor + smooth * scaled;
            }
            inv[i] = scaled;
        }
    }

    /** {@code cos} and {@code sin} of the angle {@code p * inv[i]} at {@code [p * inv.length + i]}, for every position {@code p < positions}. */
    public static float[][] cosSinTables(float[] inv, int positions) {
        int half = inv.length;
        float[] cos = new float[positions * half], sin = new float[positions * half];
        for (int p = 0; p < positions; p++) {
            for (int i = 0; i < half; i++) {
                float angle = p * inv[i]; // an f32 product, as transformers' f32 outer product
                cos[p * half + i] = (float) Math.cos(angle);
                sin[p * half + i] = (float) Math.sin(angle);
            }
        }
        return new float[][] {cos, sin};
    }
}

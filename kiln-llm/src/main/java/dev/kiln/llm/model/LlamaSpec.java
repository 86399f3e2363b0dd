package dev.kiln.llm.model;

import dev.kiln.llm.ModelConfig;
import dev.kiln.llm.ModelFileException;

import java.nio.file.Path;
import java.util.Set;

/**
 * What the Llama-family graph needs to know of a model: its sizes, and the few ways the family's members differ
 * (QKV biases for Qwen2, a sliding window for Mistral, tied embeddings, the rotary layout of the weights).
 *
 * @param vocab           rows of the token embedding and of the output projection
 * @param hidden          model width
 * @param layers          transformer blocks
 * @param heads           query heads
 * @param kvHeads         key/value heads (grouped-query attention: {@code heads} is a multiple)
 * @param headDim         per-head width
 * @param ffn             SwiGLU width
 * @param rmsNormEps      RMSNorm's epsilon
 * @param qkvBias         whether q, k and v projections have biases
 * @param slidingWindow   how many positions a query sees (itself included), or 0 for all before it
 * @param interleavedRope whether Q/K rows are in GGML's interleaved-pair rotary layout (see {@link WeightSource})
 * @param inverseFrequencies RoPE's {@code headDim / 2} inverse frequencies, scaling applied
 */
public record LlamaSpec(int vocab, int hidden, int layers, int heads, int kvHeads, int headDim, int ffn, double rmsNormEps, boolean qkvBias,
                        int slidingWindow, boolean interleavedRope, float[] inverseFrequencies) {
    public LlamaSpec {
        inverseFrequencies = inverseFrequencies.clone();
        if (heads % kvHeads != 0) throw new IllegalArgumentException("heads " + heads + " is not a multiple of kvHeads " + kvHeads);
        if (inverseFrequencies.length * 2 != headDim) {
            throw new IllegalArgumentException(inverseFrequencies.length + " inverse frequencies for head dimension " + headDim);
        }
    }

    /**
     * The spec of {@code config}, whose weights come from {@code weights}.
     *
     * @throws ModelFileException if the architecture is not one of the family, or RoPE rotates part of a head only
     */
    public static LlamaSpec of(ModelConfig config, WeightSource weights) {
        Path file = weights.file();
        Set<String> supported = weights.architectures();
        if (!supported.contains(config.modelType())) {
            throw new ModelFileException(file, "model_type (general.architecture): expected one of " + supported.stream().sorted().toList()
                    + ", found '" + config.modelType() + "' (not supported)");
        }
        if (config.ropeDimensions() != config.headDim()) {
            throw new ModelFileException(file, "rope dimensions: expected the head dimension " + config.headDim() + ", found " + config.ropeDimensions()
                    + " (partial rotary embeddings are not part of the Llama family)");
        }
        float[] inv;
        try {
            inv = Rope.inverseFrequencies(config, weights.ropeFrequencyFactors());
        } catch (IllegalArgumentException e) {
            throw new ModelFileException(file, e.getMessage(), e);
        }
        return new LlamaSpec(config.vocabSize(), config.hiddenSize(), config.numHiddenLayers(), config.numAttentionHeads(), config.numKeyValueHeads(),
                config.headDim(), config.intermediateSize(), config.rmsNormEps(), config.attentionBias(), config.slidingWindow().orElse(0),
                weights.interleavedRope(), inv);
    }

    @Override public float[] inverseFrequencies() { return inverseFrequencies.clone(); }

    /** Width of the query projection: {@code heads * headDim}. */
    public int qDim() { return heads * headDim; }

    /** Width of a key (and value) cache row: {@code kvHeads * headDim}. */
    public int kvDim() { return kvHeads * headDim; }
}

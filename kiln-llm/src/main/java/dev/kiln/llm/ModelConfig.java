package dev.kiln.llm;

import dev.kiln.llm.gguf.GgufFile;

import java.nio.file.Path;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.OptionalInt;

/**
 * The hyperparameters of a Llama-family model (Llama 2 and 3, Mistral, Qwen2, SmolLM), read either from a Hugging
 * Face {@code config.json} ({@link #fromConfigJson}) or from a GGUF file's metadata ({@link #fromGguf}), so that one
 * graph builder serves both. Field names follow {@code config.json}.
 *
 * <p>Both loaders check what they read: positive sizes, {@code num_attention_heads} a multiple of
 * {@code num_key_value_heads}, {@code hidden_size} a multiple of the heads when there is no explicit head dimension,
 * token ids within the vocabulary, a supported RoPE scaling. A file that fails gets a {@link ModelFileException}
 * naming the file, the key, what was expected and what was found.
 *
 * @param modelType             {@code config.json}'s {@code model_type}, or GGUF's {@code general.architecture}
 *                              ({@code llama}, {@code mistral}, {@code qwen2}; llama.cpp writes Mistral as {@code llama})
 * @param architectures         {@code config.json}'s {@code architectures} (e.g. {@code LlamaForCausalLM}); empty for GGUF
 * @param hiddenSize            the model width ({@code {arch}.embedding_length})
 * @param intermediateSize      the MLP width ({@code {arch}.feed_forward_length})
 * @param numHiddenLayers       transformer blocks ({@code {arch}.block_count})
 * @param numAttentionHeads     query heads ({@code {arch}.attention.head_count})
 * @param numKeyValueHeads      key/value heads, for grouped-query attention; {@code numAttentionHeads} when not given
 * @param headDim               per-head width: {@code head_dim} ({@code {arch}.attention.key_length}) when given, else
 *                              {@code hiddenSize / numAttentionHeads}
 * @param ropeDimensions        how many of a head's dimensions RoPE rotates: {@code {arch}.rope.dimension_count}, or
 *                              {@code headDim} (times {@code partial_rotary_factor} when set)
 * @param rmsNormEps            RMSNorm's epsilon ({@code {arch}.attention.layer_norm_rms_epsilon})
 * @param ropeTheta             RoPE's base frequency ({@code {arch}.rope.freq_base}); 10000 when not given
 * @param ropeScaling           RoPE scaling, when the file declares one. llama.cpp's converter writes Llama 3's scaling
 *                              not as metadata but as a tensor, {@code rope_freqs.weight}, of per-frequency divisors:
 *                              for a GGUF file that tensor, not this field, carries it
 * @param maxPositionEmbeddings the context length the model was trained for ({@code {arch}.context_length})
 * @param vocabSize             the vocabulary size ({@code {arch}.vocab_size}, else the token list's length, else the
 *                              embedding's rows)
 * @param tieWordEmbeddings     whether the output projection is the token embedding (a GGUF file has no
 *                              {@code output.weight} then)
 * @param slidingWindow         the attention window of every layer, when there is one (Mistral); empty when
 *                              {@code use_sliding_window} is false (Qwen2)
 * @param attentionBias         whether the attention projections have biases: Qwen2's q, k and v always, Llama's when
 *                              {@code attention_bias} is set; in a GGUF file, whether {@code blk.0.attn_q.bias} exists
 * @param bosTokenId            the beginning-of-sequence token ({@code tokenizer.ggml.bos_token_id}), when given
 * @param eosTokenIds           the end-of-sequence tokens ({@code eos_token_id} may be a list; GGUF has one,
 *                              {@code tokenizer.ggml.eos_token_id}); possibly empty
 */
public record ModelConfig(String modelType, List<String> architectures, int hiddenSize, int intermediateSize, int numHiddenLayers,
                          int numAttentionHeads, int numKeyValueHeads, int headDim, int ropeDimensions, double rmsNormEps, double ropeTheta,
                          Optional<RopeScaling> ropeScaling, int maxPositionEmbeddings, int vocabSize, boolean tieWordEmbeddings,
                          OptionalInt slidingWindow, boolean attentionBias, OptionalInt bosTokenId, List<Integer> eosTokenIds) {

    /**
     * RoPE scaling. {@code llama3} (Llama 3.1 and 3.2) scales low frequencies by {@code factor}, keeps high ones and
     * interpolates between {@code lowFreqFactor} and {@code highFreqFactor} wavelengths of
     * {@code originalMaxPositionEmbeddings}; {@code linear} divides every position by {@code factor}.
     *
     * @param type                          {@code llama3} or {@code linear}
     * @param factor                        the scaling factor
     * @param lowFreqFactor                 llama3 only; NaN for linear
     * @param highFreqFactor                llama3 only; NaN for linear
     * @param originalMaxPositionEmbeddings the pre-scaling context length; 0 when a linear scaling does not give it
     */
    public record RopeScaling(String type, double factor, double lowFreqFactor, double highFreqFactor, int originalMaxPositionEmbeddings) {
        public RopeScaling {
            Objects.requireNonNull(type);
        }
    }

    public ModelConfig {
        Objects.requireNonNull(modelType);
        architectures = List.copyOf(architectures);
        Objects.requireNonNull(ropeScaling);
        Objects.requireNonNull(slidingWindow);
        Objects.requireNonNull(bosTokenId);
        eosTokenIds = List.copyOf(eosTokenIds);
    }

    /**
     * Reads a Hugging Face {@code config.json}, in the format of transformers 4.x (top-level {@code rope_theta} and
     * {@code rope_scaling}) or 5.x ({@code rope_parameters}).
     *
     * @throws ModelFileException if the file cannot be read, is not JSON, or lacks or mistypes a needed key
     */
    public static ModelConfig fromConfigJson(Path file) { return HfConfigReader.read(file); }

    /**
     * Reads the {@code {arch}.*} hyperparameters of a GGUF file, {@code {arch}} being its {@code general.architecture},
     * with the keys and types llama.cpp's converter writes.
     *
     * @throws ModelFileException if a needed key is absent or of the wrong type
     */
    public static ModelConfig fromGguf(GgufFile file) { return GgufConfigReader.read(file); }

    /** Query heads per key/value head (the group size of grouped-query attention): {@code numAttentionHeads / numKeyValueHeads}. */
    public int queriesPerKeyValueHead() { return numAttentionHeads / numKeyValueHeads; }
}

package dev.kiln.llm;

import dev.kiln.types.DType;

/**
 * How {@link LanguageModel#open(java.nio.file.Path, ModelOptions)} prepares a model.
 *
 * @param device        the Kiln device to run on ({@code CPU}, {@code CLANG}, {@code INTERP}), or null for the default
 *                      device ({@code KILN_DEVICE} / {@code -Dkiln.device}, else CPU)
 * @param contextLength the most tokens a sequence may hold (the KV caches are allocated for it); 0 takes the model's
 *                      {@code max_position_embeddings}, capped at {@link #DEFAULT_MAX_CONTEXT} so that a model trained
 *                      for 128k tokens does not allocate caches for them unasked
 * @param prefillChunk  the most prompt tokens one run of the model takes (longer prompts run in pieces; the plan's
 *                      buffers are laid out for it); 0 takes the smaller of 256 and the context
 * @param kvCacheType   {@link DType#F32} or {@link DType#F16} (half the memory, keys and values rounded to f16)
 * @param quantizedActivations whether the products with Q8_0 and Q4_0 weights first quantise x to Q8_0 blocks, as
 *                      llama.cpp does, so that greedy choices follow llama.cpp's where its rounding decides them; the
 *                      blocks' sums are then exact integer sums (decode is not faster for it on the hosts measured; a long
 *                      prompt's prefill is, about 1.2x, with AVX-512 VNNI): CLANG only, off by default (x in f32)
 */
public record ModelOptions(String device, int contextLength, int prefillChunk, DType kvCacheType, boolean quantizedActivations) {
    /** The context a model gets when {@code contextLength} is 0 and it was trained for more. */
    public static final int DEFAULT_MAX_CONTEXT = 4096;

    public ModelOptions {
        if (contextLength < 0) throw new IllegalArgumentException("contextLength must be >= 0 (0 = the model's), got " + contextLength);
        if (prefillChunk < 0) throw new IllegalArgumentException("prefillChunk must be >= 0 (0 = the default), got " + prefillChunk);
        if (kvCacheType != DType.F32 && kvCacheType != DType.F16) throw new IllegalArgumentException("kvCacheType must be F32 or F16, got " + kvCacheType);
    }

    /** The default device, the model's context (at most {@value #DEFAULT_MAX_CONTEXT}), chunks of 256, an f32 cache. */
    public static ModelOptions defaults() { return new ModelOptions(null, 0, 0, DType.F32, false); }

    public ModelOptions withDevice(String d) { return new ModelOptions(d, contextLength, prefillChunk, kvCacheType, quantizedActivations); }

    public ModelOptions withContextLength(int n) { return new ModelOptions(device, n, prefillChunk, kvCacheType, quantizedActivations); }

    public ModelOptions withPrefillChunk(int n) { return new ModelOptions(device, contextLength, n, kvCacheType, quantizedActivations); }

    public ModelOptions withKvCacheType(DType t) { return new ModelOptions(device, contextLength, prefillChunk, t, quantizedActivations); }

    public ModelOptions withQuantizedActivations(boolean on) { return new ModelOptions(device, contextLength, prefillChunk, kvCacheType, on); }
}

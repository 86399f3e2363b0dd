/**
 * The Llama family as Kiln graphs. {@link dev.kiln.llm.model.WeightSource} finds a model's tensors under llama.cpp's
 * names in a GGUF file ({@link dev.kiln.llm.model.GgufWeights}) or a Hugging Face folder
 * ({@link dev.kiln.llm.model.SafetensorsWeights}); {@link dev.kiln.llm.model.LlamaSpec} and
 * {@link dev.kiln.llm.model.LlamaWeights} say what the model is and check its tensors; {@link dev.kiln.llm.model.Rope}
 * computes RoPE's frequencies (Llama 3 and linear scaling, GGUF's {@code rope_freqs}); {@link dev.kiln.llm.model.LlamaGraph}
 * is the model written once as a serving {@link dev.kiln.serve.Graph} whose chunk and sequence lengths are symbolic, so
 * one compiled plan serves prefill and decode; {@link dev.kiln.llm.model.LlamaModel} compiles it and hands out
 * {@link dev.kiln.llm.generate.Decoder}s, each a sequence in KV-cache handles.
 */
package dev.kiln.llm.model;

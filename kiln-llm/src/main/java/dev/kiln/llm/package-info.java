/**
 * Language models on Kiln: model files ({@code dev.kiln.llm.gguf}, {@code dev.kiln.llm.safetensors}),
 * tokenizers ({@code dev.kiln.llm.tokenizer}), the Llama family as graphs ({@code dev.kiln.llm.model}) and generation
 * ({@code dev.kiln.llm.generate}); {@link dev.kiln.llm.LanguageModel} puts them together.
 */
package dev.kiln.llm;

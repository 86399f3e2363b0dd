/**
 * Language models on Kiln: model files ({@code dev.kiln.llm.gguf}, {@code dev.kiln.llm.safetensors}),
 * tokenizers ({@code dev.kiln.llm.tokenizer}) and the Llama family.
 */
package dev.kiln.llm;

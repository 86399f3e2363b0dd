/**
 * Tokenizers of language models: {@link dev.kiln.llm.tokenizer.Tokenizer} encodes text to token ids and decodes them,
 * {@link dev.kiln.llm.tokenizer.TokenDecoder} decodes a stream of generated ids without breaking characters. Loaded
 * from GGUF metadata (SentencePiece BPE of Llama 2 and Mistral, byte-level BPE of Llama 3, Qwen2 and SmolLM) or from a
 * Hugging Face {@code tokenizer.json}.
 */
package dev.kiln.llm.tokenizer;

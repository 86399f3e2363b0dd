/**
 * Chat templates: a model's Jinja chat template (GGUF {@code tokenizer.chat_template}, Hugging Face
 * {@code tokenizer_config.json}) rendered over a list of {@link dev.kiln.llm.chat.ChatMessage}s as transformers'
 * {@code apply_chat_template} renders it (Python jinja2 semantics: trim_blocks, lstrip_blocks, {@code tojson},
 * {@code raise_exception}, {@code strftime_now}).
 */
package dev.kiln.llm.chat;

/**
 * safetensors model files (Hugging Face's format): {@link dev.kiln.llm.safetensors.SafetensorsFile} maps a file and
 * checks its JSON header against the data, {@link dev.kiln.llm.safetensors.SafetensorsTensor} is one tensor read in
 * place.
 */
package dev.kiln.llm.safetensors;

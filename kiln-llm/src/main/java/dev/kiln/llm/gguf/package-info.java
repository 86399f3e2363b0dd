/**
 * GGUF model files (llama.cpp's format, versions 2 and 3): {@link dev.kiln.llm.gguf.GgufFile} maps a file and checks
 * its structure, {@link dev.kiln.llm.gguf.GgufTensor} is one tensor read in place, {@link dev.kiln.llm.gguf.GgmlType}
 * the element types with their reference dequantisation to f32.
 */
package dev.kiln.llm.gguf;

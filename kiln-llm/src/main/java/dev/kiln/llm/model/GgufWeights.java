package dev.kiln.llm.model;

import dev.kiln.Tensor;
import dev.kiln.llm.ModelFileException;
import dev.kiln.llm.gguf.GgufFile;
import dev.kiln.llm.gguf.GgufTensor;

import java.nio.file.Path;
import java.util.Optional;

/**
 * The tensors of a GGUF file, as llama.cpp's converter names them. F32, F16 and BF16 tensors are wrapped in place;
 * block-quantised ones (Q8_0, Q4_0, Q4_1, Q4_K, Q5_K, Q6_K) are {@link dev.kiln.llm.gguf.BlockTensor}s over their blocks
 * in the mapped file: {@link LlamaGraph} multiplies by them and looks their rows up in place, with f32 products and
 * sums, and nothing dequantises a whole matrix.
 */
public record GgufWeights(GgufFile gguf) implements WeightSource {
    @Override
    public Path file() { return gguf.file(); }

    @Override
    public Optional<Tensor> find(String name) { return gguf.findTensor(name).map(GgufTensor::toTensor); }

    /** llama.cpp permutes Q/K rows for the llama architecture (Llama, Mistral, SmolLM), not for Qwen2. */
    @Override
    public boolean interleavedRope() { return "llama".equals(gguf.string("general.architecture")); }

    /** {@code llama} (Llama 2 and 3, Mistral, SmolLM: llama.cpp's converter writes them all so) and {@code qwen2}. */
    @Override
    public java.util.Set<String> architectures() { return java.util.Set.of("llama", "qwen2"); }

    @Override
    public Optional<float[]> ropeFrequencyFactors() {
        Optional<GgufTensor> t = gguf.findTensor("rope_freqs.weight");
        if (t.isEmpty()) return Optional.empty();
        if (t.get().ne().length != 1) {
            throw new ModelFileException(gguf.file(), "tensor 'rope_freqs.weight': expected 1 dimension, found " + t.get().ne().length);
        }
        return Optional.of(t.get().dequantize());
    }

    @Override
    public void close() { gguf.close(); }
}

package dev.kiln.llm.model;

import dev.kiln.Tensor;

import java.nio.file.Path;
import java.util.Optional;

/**
 * A model's tensors under llama.cpp's names ({@code token_embd.weight}, {@code blk.0.attn_q.weight},
 * {@code output_norm.weight}, ...), whichever file they come from, so that one graph builder reads both.
 * Tensors are f32, f16 or bf16 Kiln tensors over the mapped file where the file holds those types; block-quantised
 * GGUF tensors are f32 tensors over their blocks, which the graph reads in place (see {@link GgufWeights}).
 */
public sealed interface WeightSource extends AutoCloseable permits GgufWeights, SafetensorsWeights {
    /** The file (or model folder) the weights come from, named in errors. */
    Path file();

    /** The tensor named {@code name}, with its row-major shape, or empty when the file has none. */
    Optional<Tensor> find(String name);

    /**
     * Whether the rows of the Q and K projections are in GGML's rotary layout, pairs of adjacent dimensions rotated
     * together ({@code true} for llama.cpp's llama architecture, whose converter permutes them), rather than Hugging
     * Face's rotate-half layout ({@code false}). The two layouts give the same attention scores when the rotation
     * matches the layout, so the graph rotates as the weights are laid out and needs no copy of them.
     */
    boolean interleavedRope();

    /**
     * Per-frequency divisors of RoPE's inverse frequencies stored as a tensor ({@code rope_freqs.weight}: how
     * llama.cpp's converter writes Llama 3's RoPE scaling), or empty.
     */
    Optional<float[]> ropeFrequencyFactors();

    /**
     * The architectures ({@code model_type}, GGUF {@code general.architecture}) whose weights this kind of file holds in
     * a layout the graph knows: for GGUF, the names llama.cpp's converter writes for the Llama family.
     */
    java.util.Set<String> architectures();

    /** Unmaps the files; tensors found here must not be used afterwards. */
    @Override
    void close();
}

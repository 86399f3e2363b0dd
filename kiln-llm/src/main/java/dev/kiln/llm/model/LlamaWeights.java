package dev.kiln.llm.model;

import dev.kiln.Tensor;
import dev.kiln.llm.ModelFileException;
import dev.kiln.types.DType;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * The tensors of a Llama-family model, found under llama.cpp's names and checked against the {@link LlamaSpec}:
 * a missing tensor or one of the wrong shape is a {@link ModelFileException} naming it, never a failure inside a graph.
 * Matrices are (out, in), as both Hugging Face and GGUF store them.
 *
 * <p>F16 and BF16 tensors are widened to f32 once, here (a copy of twice their size): a product that widens
 * half-precision weights as it reads them does not run on the packed GEMM, which made a 128-token prefill five times
 * slower on SmolLM-135M's shapes (decode, bound by memory, was no faster either). F32 tensors stay in place over the
 * mapped file. Reading half-precision and quantised weights in place is a later step.
 *
 * @param tokenEmbedding (vocab, hidden)
 * @param output         (vocab, hidden): the output projection, the token embedding itself when tied
 * @param outputNorm     (hidden)
 * @param layers         one per block
 */
public record LlamaWeights(Tensor tokenEmbedding, Tensor output, Tensor outputNorm, List<Layer> layers) {
    /** One block's tensors; biases are null unless the spec has QKV biases. */
    public record Layer(Tensor attnNorm, Tensor q, Tensor k, Tensor v, Tensor qBias, Tensor kBias, Tensor vBias, Tensor attnOutput,
                        Tensor ffnNorm, Tensor gate, Tensor up, Tensor down) {}

    public LlamaWeights {
        layers = List.copyOf(layers);
    }

    /**
     * Finds and checks every tensor of {@code spec} in {@code source}; {@code tied} says whether the output projection
     * is the token embedding (then a separate {@code output.weight} is not read).
     */
    public static LlamaWeights load(LlamaSpec spec, WeightSource source, boolean tied) {
        Loader l = new Loader(source);
        Tensor embedding = l.get("token_embd.weight", spec.vocab(), spec.hidden());
        Tensor output = tied ? embedding : l.get("output.weight", spec.vocab(), spec.hidden());
        Tensor norm = l.get("output_norm.weight", spec.hidden());
        List<Layer> layers = new ArrayList<>();
        for (int i = 0; i < spec.layers(); i++) {
            String b = "blk." + i + ".";
            layers.add(new Layer(l.get(b + "attn_norm.weight", spec.hidden()),
                    l.get(b + "attn_q.weight", spec.qDim(), spec.hidden()), l.get(b + "attn_k.weight", spec.kvDim(), spec.hidden()),
                    l.get(b + "attn_v.weight", spec.kvDim(), spec.hidden()),
                    spec.qkvBias() ? l.get(b + "attn_q.bias", spec.qDim()) : null, spec.qkvBias() ? l.get(b + "attn_k.bias", spec.kvDim()) : null,
                    spec.qkvBias() ? l.get(b + "attn_v.bias", spec.kvDim()) : null, l.get(b + "attn_output.weight", spec.hidden(), spec.qDim()),
                    l.get(b + "ffn_norm.weight", spec.hidden()), l.get(b + "ffn_gate.weight", spec.ffn(), spec.hidden()),
                    l.get(b + "ffn_up.weight", spec.ffn(), spec.hidden()), l.get(b + "ffn_down.weight", spec.hidden(), spec.ffn())));
        }
        return new LlamaWeights(embedding, output, norm, layers);
    }

    /** Fails unless every tensor is f32 (weights built by hand must be widened as {@link #load} does). */
    void requireF32() {
        List<Tensor> all = new ArrayList<>(List.of(tokenEmbedding, output, outputNorm));
        for (Layer l : layers) {
            all.addAll(java.util.stream.Stream.of(l.attnNorm(), l.q(), l.k(), l.v(), l.qBias(), l.kBias(), l.vBias(), l.attnOutput(), l.ffnNorm(),
                    l.gate(), l.up(), l.down()).filter(java.util.Objects::nonNull).toList());
        }
        for (Tensor t : all) if (t.dtype() != DType.F32) throw new IllegalArgumentException("Llama weights must be f32, found " + t);
    }

    private record Loader(WeightSource source) {
        Tensor get(String name, int... shape) {
            Tensor t = source.find(name).orElseThrow(() -> new ModelFileException(source.file(), "tensor '" + name + "': expected shape "
                    + Arrays.toString(shape) + ", not found"));
            if (!Arrays.equals(t.dims(), shape)) {
                throw new ModelFileException(source.file(), "tensor '" + name + "': expected shape " + Arrays.toString(shape) + ", found "
                        + Arrays.toString(t.dims()));
            }
            return t.dtype() == DType.F32 ? t : t.cast(DType.F32).realize().asConstant();
        }
    }
}

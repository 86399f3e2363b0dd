package dev.kiln.llm.model;

import dev.kiln.Tensor;
import dev.kiln.llm.ModelFileException;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * The tensors of a Llama-family model, found under llama.cpp's names and checked against the {@link LlamaSpec}:
 * a missing tensor or one of the wrong shape is a {@link ModelFileException} naming it, never a failure inside a graph.
 * Matrices are (out, in), as both Hugging Face and GGUF store them.
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

    private record Loader(WeightSource source) {
        Tensor get(String name, int... shape) {
            Tensor t = source.find(name).orElseThrow(() -> new ModelFileException(source.file(), "tensor '" + name + "': expected shape "
                    + Arrays.toString(shape) + ", not found"));
            if (!Arrays.equals(t.dims(), shape)) {
                throw new ModelFileException(source.file(), "tensor '" + name + "': expected shape " + Arrays.toString(shape) + ", found "
                        + Arrays.toString(t.dims()));
            }
            return t;
        }
    }
}

package dev.kiln.llm;

import dev.kiln.llm.gguf.GgufFile;
import dev.kiln.llm.gguf.GgufTensor;

import java.util.List;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.OptionalLong;

/**
 * Reads a {@link ModelConfig} from GGUF metadata, with the keys llama.cpp's converter writes
 * ({@code convert_hf_to_gguf.py}; the key names of gguf-py's {@code Keys}), {@code {arch}} being
 * {@code general.architecture}. What the metadata does not say comes from the tensors, as llama.cpp does: tied
 * embeddings when there is no {@code output.weight}, attention biases when {@code blk.0.attn_q.bias} exists.
 */
final class GgufConfigReader {
    private final GgufFile f;
    private final String arch;

    private GgufConfigReader(GgufFile f) {
        this.f = f;
        this.arch = f.string("general.architecture");
    }

    static ModelConfig read(GgufFile f) { return new GgufConfigReader(f).config(); }

    private String key(String suffix) { return arch + "." + suffix; }

    private ModelConfig config() {
        int hidden = positive(key("embedding_length"));
        int heads = positive(key("attention.head_count"));
        int kvHeads = optionalPositive(key("attention.head_count_kv")).orElse(heads);
        OptionalInt keyLength = optionalPositive(key("attention.key_length"));
        int headDim = keyLength.isPresent() ? keyLength.getAsInt()
                : ConfigChecks.headDim(f.file(), hidden, heads, key("embedding_length"), key("attention.head_count"), key("attention.key_length"));
        double eps = f.real(key("attention.layer_norm_rms_epsilon"));
        if (!(eps > 0 && eps < 1)) throw new ModelFileException(f.file(), key("attention.layer_norm_rms_epsilon") + ": expected a positive number below 1, found " + eps);
        double theta = f.optionalReal(key("rope.freq_base")).orElse(10000.0);
        if (!(theta > 0 && Double.isFinite(theta))) throw new ModelFileException(f.file(), key("rope.freq_base") + ": expected a positive number, found " + theta);
        int vocab = vocabSize();
        ModelConfig c = new ModelConfig(arch, List.of(), hidden, positive(key("feed_forward_length")), positive(key("block_count")), heads, kvHeads,
                headDim, optionalPositive(key("rope.dimension_count")).orElse(headDim), eps, theta, ropeScaling(), positive(key("context_length")), vocab,
                f.findTensor("output.weight").isEmpty(), optionalPositive(key("attention.sliding_window")),
                f.findTensor("blk.0.attn_q.bias").isPresent(), tokenId("tokenizer.ggml.bos_token_id"),
                tokenId("tokenizer.ggml.eos_token_id").stream().boxed().toList());
        ConfigChecks.check(f.file(), new ConfigChecks.Names(key("attention.head_count"), key("attention.head_count_kv"), key("attention.key_length"),
                key("rope.dimension_count"), "the vocabulary size", "tokenizer.ggml.bos_token_id", "tokenizer.ggml.eos_token_id"), c);
        return c;
    }

    private int vocabSize() {
        OptionalInt declared = optionalPositive(key("vocab_size"));
        if (declared.isPresent()) return declared.getAsInt();
        if (f.metadata().containsKey("tokenizer.ggml.tokens")) {
            int n = f.array("tokenizer.ggml.tokens").size();
            if (n > 0) return n;
        }
        Optional<GgufTensor> embedding = f.findTensor("token_embd.weight");
        if (embedding.isPresent() && embedding.get().ne().length == 2) return embedding.get().ne()[1];
        throw new ModelFileException(f.file(), key("vocab_size") + ": expected it, or tokenizer.ggml.tokens, or a 2-d token_embd.weight; found none");
    }

    private Optional<ModelConfig.RopeScaling> ropeScaling() {
        Optional<String> type = f.optionalString(key("rope.scaling.type"));
        if (type.isEmpty() || type.get().equals("none")) return Optional.empty();
        if (!type.get().equals("linear")) {
            throw new ModelFileException(f.file(), key("rope.scaling.type") + ": expected none or linear, found '" + type.get() + "' (not supported)");
        }
        double factor = f.real(key("rope.scaling.factor"));
        if (!(factor > 0 && Double.isFinite(factor))) throw new ModelFileException(f.file(), key("rope.scaling.factor") + ": expected a positive number, found " + factor);
        return Optional.of(new ModelConfig.RopeScaling("linear", factor, Double.NaN, Double.NaN,
                optionalPositive(key("rope.scaling.original_context_length")).orElse(0)));
    }

    private int positive(String key) {
        OptionalInt v = optionalPositive(key);
        if (v.isEmpty()) throw new ModelFileException(f.file(), "metadata key '" + key + "': expected a positive integer, not found");
        return v.getAsInt();
    }

    private OptionalInt optionalPositive(String key) {
        OptionalLong v = f.optionalInteger(key);
        if (v.isEmpty()) return OptionalInt.empty();
        if (v.getAsLong() < 1 || v.getAsLong() > Integer.MAX_VALUE) {
            throw new ModelFileException(f.file(), "metadata key '" + key + "': expected a positive integer below 2^31, found " + v.getAsLong());
        }
        return OptionalInt.of((int) v.getAsLong());
    }

    private OptionalInt tokenId(String key) {
        OptionalLong v = f.optionalInteger(key);
        if (v.isEmpty()) return OptionalInt.empty();
        if (v.getAsLong() < 0 || v.getAsLong() > Integer.MAX_VALUE) {
            throw new ModelFileException(f.file(), "metadata key '" + key + "': expected a token id, found " + v.getAsLong());
        }
        return OptionalInt.of((int) v.getAsLong());
    }
}

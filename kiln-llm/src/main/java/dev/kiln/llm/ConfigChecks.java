package dev.kiln.llm;

import java.nio.file.Path;
import java.util.List;
import java.util.OptionalInt;

/**
 * The checks both {@link ModelConfig} loaders apply once every value is read: relations between the fields that a
 * graph builder relies on. Each message names the file's own keys, which differ between config.json and GGUF.
 */
final class ConfigChecks {
    private ConfigChecks() {}

    /** The file's names for the fields the checks mention. */
    record Names(String heads, String kvHeads, String headDim, String ropeDims, String vocab, String bos, String eos) {}

    static void check(Path file, Names n, ModelConfig c) {
        if (c.numAttentionHeads() % c.numKeyValueHeads() != 0) {
            throw new ModelFileException(file, n.kvHeads() + ": expected a divisor of " + n.heads() + " = " + c.numAttentionHeads() + ", found "
                    + c.numKeyValueHeads());
        }
        if (c.ropeDimensions() > c.headDim() || c.ropeDimensions() % 2 != 0) {
            throw new ModelFileException(file, n.ropeDims() + ": expected an even number of at most " + n.headDim() + " = " + c.headDim() + ", found "
                    + c.ropeDimensions());
        }
        tokenId(file, n.bos(), c.bosTokenId(), c.vocabSize(), n.vocab());
        List<Integer> eos = c.eosTokenIds();
        for (int id : eos) tokenId(file, n.eos(), OptionalInt.of(id), c.vocabSize(), n.vocab());
    }

    private static void tokenId(Path file, String key, OptionalInt id, int vocab, String vocabKey) {
        if (id.isPresent() && (id.getAsInt() < 0 || id.getAsInt() >= vocab)) {
            throw new ModelFileException(file, key + ": expected a token id below " + vocabKey + " = " + vocab + ", found " + id.getAsInt());
        }
    }

    /** {@code hidden / heads}, which must divide exactly when the file gives no head dimension. */
    static int headDim(Path file, int hidden, int heads, String hiddenKey, String headsKey, String headDimKey) {
        if (hidden % heads != 0) {
            throw new ModelFileException(file, hiddenKey + ": expected a multiple of " + headsKey + " = " + heads + " (" + headDimKey
                    + " is absent), found " + hidden);
        }
        return hidden / heads;
    }
}

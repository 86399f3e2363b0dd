package dev.kiln.llm.tokenizer;

import java.util.List;

/**
 * What happens to a text segment between special tokens: normalizer, pre-tokenizer, then the model on each word.
 * The GGUF loader builds the same steps llama.cpp hard-codes; the {@code tokenizer.json} loader builds the file's.
 */
record Pipeline(Normalizer normalizer, PreTokenizer preTokenizer, TokenModel model) {
    void encode(String segment, boolean atStart, Ints out) {
        String normalized = normalizer.apply(segment);
        if (normalized.isEmpty()) return;
        for (PreTokenizer.Piece piece : preTokenizer.apply(List.of(new PreTokenizer.Piece(normalized, atStart)))) {
            if (!piece.text().isEmpty()) model.encode(piece.text(), out);
        }
    }
}

package dev.kiln.llm.tokenizer;

import java.nio.charset.StandardCharsets;
import java.util.PriorityQueue;

/**
 * SentencePiece BPE as llama.cpp runs it for {@code tokenizer.ggml.model = "llama"} (Llama 2, Mistral): the word
 * (spaces already "▁") starts as one symbol per code point, and the adjacent pair whose concatenation is the vocabulary
 * entry with the highest score merges first (the leftmost on ties), until no adjacent pair forms an entry. A symbol
 * that is no entry (a character outside the vocabulary) falls back to its UTF-8 bytes as {@code <0xXX>} tokens, or to
 * the unknown token where the vocabulary has no byte tokens. A priority queue over adjacent pairs makes this
 * O(n log n) rather than rescanning the word per merge.
 */
final class SpmModel implements TokenModel {
    private record Candidate(float score, int left, int right, int leftEnd, int rightEnd, int tokenId) {}

    private final Vocabulary vocab;

    SpmModel(Vocabulary vocab) {
        this.vocab = vocab;
    }

    @Override public void encode(String word, Ints out) {
        Symbols symbols = new Symbols(word.length());
        for (int i = 0; i < word.length(); ) {
            int n = Character.charCount(word.codePointAt(i));
            symbols.add(i, i + n, vocab.id(word.substring(i, i + n)));
            i += n;
        }
        PriorityQueue<Candidate> queue = new PriorityQueue<>((a, b) -> a.score != b.score
                ? Float.compare(b.score, a.score) : Integer.compare(a.left, b.left));
        for (int i = 1; i < symbols.count; i++) offer(word, symbols, i - 1, i, queue);
        while (!queue.isEmpty()) {
            Candidate c = queue.poll();
            // stale if either side has merged since: a symbol only grows, so its end tells
            if (!symbols.alive(c.left) || !symbols.alive(c.right) || symbols.next[c.left] != c.right
                    || symbols.end[c.left] != c.leftEnd || symbols.end[c.right] != c.rightEnd) {
                continue;
            }
            symbols.merge(c.left, c.right, c.tokenId);
            if (symbols.prev[c.left] >= 0) offer(word, symbols, symbols.prev[c.left], c.left, queue);
            if (symbols.next[c.left] >= 0) offer(word, symbols, c.left, symbols.next[c.left], queue);
        }
        for (int i = 0; i >= 0 && symbols.count > 0; i = symbols.next[i]) {
            if (symbols.id[i] >= 0) out.add(symbols.id[i]);
            else fallBack(word.substring(symbols.start[i], symbols.end[i]), out);
        }
    }

    private void offer(String word, Symbols symbols, int left, int right, PriorityQueue<Candidate> queue) {
        int id = vocab.id(word.substring(symbols.start[left], symbols.end[right]));
        if (id < 0) return;
        queue.add(new Candidate(vocab.score(id), left, right, symbols.end[left], symbols.end[right], id));
    }

    /** Bytes of a character the vocabulary lacks: {@code <0xXX>} tokens, else the unknown token per byte. */
    private void fallBack(String text, Ints out) {
        for (byte b : text.getBytes(StandardCharsets.UTF_8)) {
            int id = vocab.byteToken(b & 0xFF);
            if (id < 0) id = vocab.special().unk();
            if (id >= 0) out.add(id);
        }
    }
}

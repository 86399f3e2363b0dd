package dev.kiln.llm.tokenizer;

import java.nio.charset.StandardCharsets;
import java.util.PriorityQueue;

/**
 * BPE with ranked merges, as Hugging Face's {@code BPE} model and llama.cpp's {@code gpt2} vocabulary run it: the word
 * starts as one symbol per code point (for byte-level BPE, per byte character), and the adjacent pair with the lowest
 * merge rank merges first (the leftmost on ties) until no pair has a merge. Options as in {@code tokenizer.json}:
 * {@code ignoreMerges} takes a word that is a vocabulary entry whole (Llama 3); a character outside the vocabulary
 * becomes its {@code <0xXX>} byte tokens with {@code byteFallback}, else the unknown token ({@code fuseUnk} joins a run
 * of them into one), else it is dropped, as both Hugging Face and llama.cpp do.
 */
final class BpeModel implements TokenModel {
    private record Candidate(int rank, int left, int right, int leftId, int rightId, int merged) {}

    private final Vocabulary vocab;
    private final PairTable merges;
    private final boolean ignoreMerges;
    private final boolean byteFallback;
    private final int unk;
    private final boolean fuseUnk;

    BpeModel(Vocabulary vocab, PairTable merges, boolean ignoreMerges, boolean byteFallback, int unk, boolean fuseUnk) {
        this.vocab = vocab;
        this.merges = merges;
        this.ignoreMerges = ignoreMerges;
        this.byteFallback = byteFallback;
        this.unk = unk;
        this.fuseUnk = fuseUnk;
    }

    @Override public void encode(String word, Ints out) {
        if (ignoreMerges) {
            int whole = vocab.id(word);
            if (whole >= 0) {
                out.add(whole);
                return;
            }
        }
        Symbols symbols = initialSymbols(word);
        PriorityQueue<Candidate> queue = new PriorityQueue<>((a, b) -> a.rank != b.rank
                ? Integer.compare(a.rank, b.rank) : Integer.compare(a.left, b.left));
        for (int i = 1; i < symbols.count; i++) offer(symbols, i - 1, i, queue);
        while (!queue.isEmpty()) {
            Candidate c = queue.poll();
            // stale if either side has merged since: then its id or its neighbour changed
            if (!symbols.alive(c.left) || !symbols.alive(c.right) || symbols.next[c.left] != c.right
                    || symbols.id[c.left] != c.leftId || symbols.id[c.right] != c.rightId) {
                continue;
            }
            symbols.merge(c.left, c.right, c.merged);
            if (symbols.prev[c.left] >= 0) offer(symbols, symbols.prev[c.left], c.left, queue);
            if (symbols.next[c.left] >= 0) offer(symbols, c.left, symbols.next[c.left], queue);
        }
        for (int i = 0; i >= 0 && symbols.count > 0; i = symbols.next[i]) out.add(symbols.id[i]);
    }

    private Symbols initialSymbols(String word) {
        Symbols symbols = new Symbols(word.length() * 4); // a character is at most 4 byte tokens
        for (int i = 0; i < word.length(); ) {
            int n = Character.charCount(word.codePointAt(i));
            String ch = word.substring(i, i + n);
            int id = vocab.id(ch);
            if (id >= 0) {
                symbols.add(i, i + n, id);
            } else if (byteFallback && allBytesKnown(ch)) {
                for (byte b : ch.getBytes(StandardCharsets.UTF_8)) {
                    // byte symbols share the character's range; they are never looked up by text
                    symbols.add(i, i + n, vocab.byteToken(b & 0xFF));
                }
            } else if (unk >= 0) {
                int last = symbols.count - 1;
                if (fuseUnk && last >= 0 && symbols.id[last] == unk) symbols.end[last] = i + n;
                else symbols.add(i, i + n, unk);
            }
            i += n;
        }
        return symbols;
    }

    private boolean allBytesKnown(String ch) {
        for (byte b : ch.getBytes(StandardCharsets.UTF_8)) if (vocab.byteToken(b & 0xFF) < 0) return false;
        return true;
    }

    private void offer(Symbols symbols, int left, int right, PriorityQueue<Candidate> queue) {
        long m = merges.get(symbols.id[left], symbols.id[right]);
        if (m < 0) return;
        queue.add(new Candidate(PairTable.rank(m), left, right, symbols.id[left], symbols.id[right],
                PairTable.merged(m)));
    }
}

package dev.kiln.llm.tokenizer;

/**
 * A word as a doubly linked list of symbols, each a range of the word's chars, that merging joins pairwise. A merge
 * folds the right symbol into the left one and unlinks it; the merge queue's stale entries are recognised because a
 * symbol only ever grows.
 */
final class Symbols {
    final int[] start;
    final int[] end;
    final int[] id;
    final int[] prev;
    final int[] next;
    int count;

    Symbols(int capacity) {
        start = new int[capacity];
        end = new int[capacity];
        id = new int[capacity];
        prev = new int[capacity];
        next = new int[capacity];
    }

    /** Appends a symbol covering {@code [from, to)} with token id {@code tokenId} (negative: none yet). */
    void add(int from, int to, int tokenId) {
        int i = count++;
        start[i] = from;
        end[i] = to;
        id[i] = tokenId;
        prev[i] = i - 1;
        next[i] = -1;
        if (i > 0) next[i - 1] = i;
    }

    boolean alive(int i) { return end[i] > start[i]; }

    /** Folds {@code right} (the next symbol of {@code left}) into {@code left}, which becomes token {@code tokenId}. */
    void merge(int left, int right, int tokenId) {
        end[left] = end[right];
        id[left] = tokenId;
        end[right] = start[right]; // empty: dead
        next[left] = next[right];
        if (next[right] >= 0) prev[next[right]] = left;
    }
}

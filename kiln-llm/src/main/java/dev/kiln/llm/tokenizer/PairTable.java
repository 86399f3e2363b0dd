package dev.kiln.llm.tokenizer;

import java.util.Arrays;

/**
 * BPE merges as an open-addressing hash table from a pair of token ids to (rank, merged id), so the merge loop looks
 * pairs up without boxing or building strings.
 */
final class PairTable {
    private static final long EMPTY = -1L;

    private final long[] keys;
    private final long[] values;
    private final int mask;

    PairTable(int expected) {
        int capacity = Integer.highestOneBit(Math.max(4, expected) * 2 - 1) << 1;
        keys = new long[capacity];
        values = new long[capacity];
        mask = capacity - 1;
        Arrays.fill(keys, EMPTY);
    }

    private static long key(int left, int right) { return (long) left << 32 | (right & 0xFFFFFFFFL); }

    private int slot(long key) {
        long h = key * 0x9E3779B97F4A7C15L;
        return (int) (h >>> 32) & mask;
    }

    /** Records that {@code left right} merges with {@code rank} into {@code merged}; an earlier rank is kept. */
    void put(int left, int right, int rank, int merged) {
        long k = key(left, right);
        int s = slot(k);
        while (keys[s] != EMPTY) {
            if (keys[s] == k) return; // a repeated merge: the first (lowest) rank wins, as in Hugging Face
            s = (s + 1) & mask;
        }
        keys[s] = k;
        values[s] = (long) rank << 32 | (merged & 0xFFFFFFFFL);
    }

    /** The packed (rank, merged id) of the pair, or -1 if it does not merge. */
    long get(int left, int right) {
        long k = key(left, right);
        for (int s = slot(k); keys[s] != EMPTY; s = (s + 1) & mask) {
            if (keys[s] == k) return values[s];
        }
        return -1;
    }

    static int rank(long packed) { return (int) (packed >>> 32); }

    static int merged(long packed) { return (int) packed; }
}

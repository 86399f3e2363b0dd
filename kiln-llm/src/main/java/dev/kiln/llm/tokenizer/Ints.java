package dev.kiln.llm.tokenizer;

import java.util.Arrays;

/** A growable {@code int} list: token ids are collected without boxing them. */
final class Ints {
    private int[] values = new int[16];
    private int size;

    void add(int value) {
        if (size == values.length) values = Arrays.copyOf(values, size * 2);
        values[size++] = value;
    }

    void addAll(int[] more) {
        for (int v : more) add(v);
    }

    int size() { return size; }

    int get(int index) {
        if (index >= size) throw new IndexOutOfBoundsException(index);
        return values[index];
    }

    int[] toArray() { return Arrays.copyOf(values, size); }
}

package dev.kiln.ir;

import java.util.Arrays;

/**
 * An immutable int list with value equality, used as a {@link UOp} argument (axes, permutations,
 * padding and shrink bounds) so that equal graphs intern to the same node.
 */
public final class Ints {
    private final int[] values;

    private Ints(int[] values) { this.values = values; }

    public static Ints of(int... values) { return new Ints(values.clone()); }

    public int size() { return values.length; }

    public int get(int i) { return values[i]; }

    public int[] toArray() { return values.clone(); }

    public boolean contains(int v) {
        for (int x : values) if (x == v) return true;
        return false;
    }

    @Override
    public boolean equals(Object o) { return o instanceof Ints i && Arrays.equals(values, i.values); }

    @Override
    public int hashCode() { return Arrays.hashCode(values); }

    @Override
    public String toString() { return Arrays.toString(values); }
}

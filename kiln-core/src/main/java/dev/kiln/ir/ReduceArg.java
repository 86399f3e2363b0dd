package dev.kiln.ir;

/**
 * The argument of a {@link Op#REDUCE} node: which reduction, over which axes. Reduced axes keep
 * size 1 in the result.
 */
public record ReduceArg(Kind kind, Ints axes) {
    /** The four reductions. */
    public enum Kind { SUM, PROD, MAX, MIN }
}

package dev.kiln.ir;

import java.util.Objects;

/**
 * The argument of an {@link Op#CHECK} node: how an index that comes from data (a gather's or scatter's index tensor)
 * is checked against the size of the axis it indexes (the node's second source, a constant or a symbolic size), and
 * what an error names when it falls outside.
 *
 * <p>At tensor level {@code op} names the operation as its caller knows it ({@code "gather"},
 * {@code "Gather node 'g'"}) and {@code axis} the indexed axis of its data. In a lowered kernel both are dropped
 * (equal kernels of different operations share one program and one binary: caches key on structure, never on
 * names) and {@code site} numbers the check among the kernel's checks, in the order
 * {@link dev.kiln.codegen.KernelLowering#indexChecks} lists them; a kernel reports a failed check by its site and
 * the index, and the runtime finds the operation's name and the axis's size again from the plan step's list.
 *
 * @param op            the operation, as errors name it; empty in a lowered kernel
 * @param axis          the indexed axis of the operation's data; -1 in a lowered kernel
 * @param negativeWraps whether {@code -size..-1} are valid and count from the end (ONNX, NumPy), or are errors
 *                      (PyTorch's gather, scatter and embedding)
 * @param site          the check's number in its kernel; 0 at tensor level
 */
public record IndexCheck(String op, int axis, boolean negativeWraps, int site) {
    public IndexCheck {
        Objects.requireNonNull(op, "op");
        if (site < 0) throw new IllegalArgumentException("index check of " + op + ": site " + site + " is negative");
    }

    /** A tensor-level check of an index into axis {@code axis} of {@code op}'s data. */
    public static IndexCheck of(String op, int axis, boolean negativeWraps) { return new IndexCheck(op, axis, negativeWraps, 0); }

    /** This check as a lowered kernel holds it: without names, numbered {@code site}. */
    public IndexCheck atSite(int site) { return new IndexCheck("", -1, negativeWraps, site); }

    /** The smallest valid index into an axis of {@code size} elements. */
    public long min(long size) { return negativeWraps ? -size : 0; }

    /** Whether {@code index} is valid for an axis of {@code size} elements (none is, for an empty axis). */
    public boolean admits(long index, long size) { return index >= min(size) && index < size; }
}

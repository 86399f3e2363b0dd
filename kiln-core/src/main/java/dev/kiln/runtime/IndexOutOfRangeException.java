package dev.kiln.runtime;

/**
 * An index that came from data (a gather's or scatter's index tensor) was outside the axis it indexes. It names
 * the operation ({@code "Gather node 'g'"} for an ONNX node, the {@code Tensor} method otherwise), the index, the
 * axis and the valid range. Thrown by the run that met the index, on every device: INTERP stops at the index, the
 * compiled devices finish the kernel (reading nothing out of bounds) and throw before the run returns, so no
 * output computed from the index is ever handed out as a result. The index is the caller's (or the model's
 * input's), hence an {@link IllegalArgumentException}.
 */
public final class IndexOutOfRangeException extends IllegalArgumentException {
    private static final long serialVersionUID = 1L;

    private final String op;
    private final int axis;
    private final long index;
    private final long min;
    private final long max;

    /**
     * An index {@code index} of {@code op} outside {@code [min, max]}, the valid indices of {@code op}'s axis {@code axis}
     * (of {@code max + 1} elements).
     */
    public IndexOutOfRangeException(String op, int axis, long index, long min, long max) {
        super(message(op, axis, index, min, max));
        this.op = op;
        this.axis = axis;
        this.index = index;
        this.min = min;
        this.max = max;
    }

    private static String message(String op, int axis, long index, long min, long max) {
        String valid = max < min ? "the axis is empty, no index is valid" : "valid are " + min + " to " + max;
        return op + ": index " + index + " is out of range for axis " + axis + " of size " + (max + 1) + "; " + valid;
    }

    /** The operation the index was for. */
    public String op() { return op; }

    /** The axis of the operation's data that the index indexes. */
    public int axis() { return axis; }

    /** The index found. */
    public long index() { return index; }

    /** The smallest valid index (negative where negative indices count from the end). */
    public long min() { return min; }

    /** The largest valid index. */
    public long max() { return max; }
}

package dev.kiln.codegen;

import java.util.List;

/**
 * A contraction's epilogue simple enough for a GEMM to apply while it stores its last K block, instead of a pass of
 * its own over the output: {@code min(max(((sums + t1) + t2), lower), upper)}, each part optional. This is what
 * convolutions and linear layers end in: a bias per output channel or per column, a residual, ReLU or a clamp
 * (ReLU6). The parts are applied in this order, as the epilogue's expression applies them, so the result is the
 * generated epilogue's, bit for bit.
 *
 * @param addends  f32 loads added to the sums in order (at most two), each over the contraction's variables: an
 *                 {@link Contraction.Operand} without gates whose K strides are 0
 * @param hasLower whether {@code max(x, lower)} applies (Java's {@code Math.max}: NaN propagates)
 * @param lower    the lower bound (0 for ReLU)
 * @param hasUpper whether {@code min(x, upper)} applies: {@code x < upper || x != x ? x : upper}, which is
 *                 {@code Math.min} since the upper bound is never zero (it is matched only then)
 * @param upper    the upper bound
 * @param lowerFrom where the lower bound is read when the run begins (ONNX Clip's {@code min} input: a one-element
 *                  tensor), or null where it is {@code lower}
 * @param upperFrom the same for the upper bound; a bound read so must be checked as {@code upper} is (not 0, not NaN)
 *                  before the epilogue is applied in place of the generated one ({@link #boundsApply})
 */
public record StoreEpilogue(List<Contraction.Operand> addends, boolean hasLower, float lower, boolean hasUpper, float upper,
                            Bound lowerFrom, Bound upperFrom) {
    public StoreEpilogue {
        addends = List.copyOf(addends);
        if (addends.size() > 2) throw new IllegalArgumentException("a store epilogue adds at most two loads, got " + addends.size());
        if (hasUpper && upperFrom == null && (upper == 0 || Float.isNaN(upper))) throw new IllegalArgumentException("upper bound " + upper + " is not min's");
        if (lowerFrom != null && !hasLower || upperFrom != null && !hasUpper) throw new IllegalArgumentException("a bound read from a buffer it does not apply");
    }

    /** An epilogue whose bounds are constants. */
    public StoreEpilogue(List<Contraction.Operand> addends, boolean hasLower, float lower, boolean hasUpper, float upper) {
        this(addends, hasLower, lower, hasUpper, upper, null, null);
    }

    /** Element {@code element} of kernel parameter {@code param}. */
    public record Bound(int param, long element) {}

    /** Whether both bounds are constants. */
    public boolean constantBounds() { return lowerFrom == null && upperFrom == null; }

    /** Whether an upper bound read at run time, {@code upper}, is one {@code Math.min} gives the epilogue's value for. */
    public static boolean boundsApply(float upper) { return upper != 0 && !Float.isNaN(upper); }
}

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
 */
public record StoreEpilogue(List<Contraction.Operand> addends, boolean hasLower, float lower, boolean hasUpper, float upper) {
    public StoreEpilogue {
        addends = List.copyOf(addends);
        if (addends.size() > 2) throw new IllegalArgumentException("a store epilogue adds at most two loads, got " + addends.size());
        if (hasUpper && (upper == 0 || Float.isNaN(upper))) throw new IllegalArgumentException("upper bound " + upper + " is not min's");
    }
}

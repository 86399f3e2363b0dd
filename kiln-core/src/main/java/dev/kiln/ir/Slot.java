package dev.kiln.ir;

import dev.kiln.types.DType;

/**
 * A kernel-local name, the argument of a {@link Op#DEFINE_VAR} node inside a lowered kernel: a buffer
 * parameter (read with {@link Op#LOAD}, written with {@link Op#STORE}) or a register (an accumulator or
 * temporary). Symbolic integers use {@link dev.kiln.types.Variable} instead.
 *
 * @param kind  parameter or register
 * @param index the parameter's position, or the register's number within its kernel
 * @param dtype the element type
 */
public record Slot(Kind kind, int index, DType dtype) {
    /** What a slot names. */
    public enum Kind { PARAM, REGISTER }

    /** The DEFINE_VAR node of this slot. */
    public UOp uop() { return UOp.of(Op.DEFINE_VAR, dtype, this); }

    /** A short name for renderers: {@code p0}, {@code acc3}. */
    public String name() { return (kind == Kind.PARAM ? "p" : "acc") + index; }
}

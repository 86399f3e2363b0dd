package dev.kiln.ir;

/**
 * The closed set of primitive operations. Every device implements all of them; everything else
 * (softmax, convolution, attention, ...) is composed from these by the front end.
 *
 * <p>Division comes in two explicit flavours: {@link #DIV}/{@link #MOD} truncate toward zero (C
 * semantics; on floats {@code DIV} is IEEE division and {@code MOD} is {@code fmod}), while
 * {@link #FLOORDIV}/{@link #FLOORMOD} round toward negative infinity (Python semantics: the remainder
 * takes the divisor's sign).
 */
public enum Op {
    // unary
    EXP2(Group.UNARY), LOG2(Group.UNARY), SIN(Group.UNARY), SQRT(Group.UNARY), RECIP(Group.UNARY),
    NEG(Group.UNARY), TRUNC(Group.UNARY),
    /** Value conversion to the node's dtype. */
    CAST(Group.UNARY),
    /** Reinterpretation of the bits as the node's dtype (same item size). */
    BITCAST(Group.UNARY),
    /**
     * {@code CHECK(index, size[, gate])}: an index that comes from data, checked against the size of the axis it
     * indexes (an i64 node of the index's shape: a constant, or a symbolic size); the value is the index, unchanged.
     * Arg is an {@link IndexCheck} (whether negative indices count from the end, and what an error names). Where
     * the index is out of range the run fails with an error naming the operation, the index and the valid range;
     * devices that cannot stop mid-kernel record the failure and carry on with the value (every read it reaches
     * is gated or clamped anyway), and the run reports it before returning. The front end puts it on the index of
     * a gather or scatter, so the check is explicit where a data-dependent index enters the graph, never inferred
     * from the gates that padding and concatenation use (those are out of range by design). In a lowered kernel
     * an optional third source is a bool gate: the check applies only where it holds (a padded region computes
     * indices that are never used).
     */
    CHECK(Group.UNARY),
    // binary
    ADD(Group.BINARY), MUL(Group.BINARY), DIV(Group.BINARY), MOD(Group.BINARY),
    FLOORDIV(Group.BINARY), FLOORMOD(Group.BINARY), MAX(Group.BINARY),
    CMPLT(Group.BINARY), CMPNE(Group.BINARY), CMPEQ(Group.BINARY),
    AND(Group.BINARY), OR(Group.BINARY), XOR(Group.BINARY), SHL(Group.BINARY), SHR(Group.BINARY),
    /** Threefry-2x32 (20 rounds) of a u64 counter under a u64 key; a counter-based random generator. */
    THREEFRY(Group.BINARY),
    // ternary
    /** {@code src0 ? src1 : src2}. */
    WHERE(Group.TERNARY),
    // reduce: arg is a {@link ReduceArg}; reduced axes keep size 1
    REDUCE(Group.REDUCE),
    // movement: arg describes the view
    RESHAPE(Group.MOVEMENT), PERMUTE(Group.MOVEMENT), EXPAND(Group.MOVEMENT), PAD(Group.MOVEMENT),
    SHRINK(Group.MOVEMENT), FLIP(Group.MOVEMENT),
    // buffers and meta
    /** A scalar constant; arg is a {@link Long} (bool and integers) or {@link Double} (floats). */
    CONST(Group.BUFFER),
    /** A realised buffer; arg is a {@link BufferRef} (the runtime's {@code Buffer}). */
    BUFFER(Group.BUFFER),
    /** A symbolic integer; arg is a {@link dev.kiln.types.Variable}. */
    DEFINE_VAR(Group.BUFFER),
    /**
     * {@code [0, 1, ..., n-1]} as i32 or i64; arg is its 1-D {@link dev.kiln.types.Shape} (the axis may be symbolic).
     * Like CONST it needs no memory: a kernel computes it from the loop index, so a comparison with it (a
     * one-hot mask, a causal mask) is index arithmetic, and the lowerer can fold a one-hot sum into a load.
     */
    ARANGE(Group.BUFFER),
    /** Kernel level: read {@code src0} (a buffer) at flat index {@code src1}. */
    LOAD(Group.BUFFER),
    /** Move the value to another device; arg is the target device name. */
    COPY(Group.BUFFER),
    /** Force materialisation; the value is unchanged. */
    CONTIGUOUS(Group.BUFFER),
    /** Write {@code src1} into the realised buffer {@code src0}; the value is the new contents. */
    ASSIGN(Group.BUFFER),
    /** A host function over realised inputs; arg is a {@link CustomFunction}. */
    CUSTOM(Group.BUFFER);

    /** Families of ops. */
    public enum Group { UNARY, BINARY, TERNARY, REDUCE, MOVEMENT, BUFFER }

    private final Group group;

    Op(Group group) { this.group = group; }

    public Group group() { return group; }

    /** Elementwise ops: the value at an index depends only on the sources at that index. */
    public boolean isElementwise() {
        return group == Group.UNARY || group == Group.BINARY || group == Group.TERNARY;
    }

    public boolean isMovement() { return group == Group.MOVEMENT; }

    /** Binary ops whose result does not depend on operand order. */
    public boolean isCommutative() {
        return switch (this) {
            case ADD, MUL, MAX, CMPNE, CMPEQ, AND, OR, XOR -> true;
            default -> false;
        };
    }

    /** Ops whose result is a boolean. */
    public boolean isComparison() {
        return this == CMPLT || this == CMPNE || this == CMPEQ;
    }
}

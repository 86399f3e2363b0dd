package dev.kiln.types;

import java.util.ArrayList;
import java.util.EnumSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;

/**
 * Element types of Kiln tensors.
 *
 * <p>Promotion follows one explicit lattice (see {@link #promote}): booleans widen to the smallest
 * integers, signed and unsigned integers widen to the next integer that holds both, the widest
 * integers widen to the half-precision floats, and {@code f16}/{@code bf16} meet at {@code f32}.
 * Reductions of half-precision values accumulate in {@code f32} ({@link #accumulator()}).
 *
 * <p>{@link #Q8_0} and {@link #Q4_0} are packed block-quantised weight formats (32 values per block,
 * one f16 scale per block). They are storage formats: arithmetic happens after dequantisation.
 */
public enum DType {
    BOOL("bool", Kind.BOOL, 1, 1),
    I8("i8", Kind.SIGNED, 1, 8),
    U8("u8", Kind.UNSIGNED, 1, 8),
    I16("i16", Kind.SIGNED, 2, 16),
    U16("u16", Kind.UNSIGNED, 2, 16),
    I32("i32", Kind.SIGNED, 4, 32),
    U32("u32", Kind.UNSIGNED, 4, 32),
    I64("i64", Kind.SIGNED, 8, 64),
    U64("u64", Kind.UNSIGNED, 8, 64),
    F16("f16", Kind.FLOAT, 2, 16),
    BF16("bf16", Kind.FLOAT, 2, 16),
    F32("f32", Kind.FLOAT, 4, 32),
    F64("f64", Kind.FLOAT, 8, 64),
    /** 32 signed 8-bit values and one f16 scale: 34 bytes per block. */
    Q8_0("q8_0", Kind.PACKED, 34, 8),
    /** 32 signed 4-bit values and one f16 scale: 18 bytes per block. */
    Q4_0("q4_0", Kind.PACKED, 18, 4);

    /** The family a dtype belongs to. */
    public enum Kind { BOOL, SIGNED, UNSIGNED, FLOAT, PACKED }

    /** Values per block of the packed formats. */
    public static final int QUANT_BLOCK = 32;

    private final String shortName;
    private final Kind kind;
    private final int bytes;
    private final int bits;

    DType(String shortName, Kind kind, int bytes, int bits) {
        this.shortName = shortName;
        this.kind = kind;
        this.bytes = bytes;
        this.bits = bits;
    }

    /** Short lower-case name, e.g. {@code f32}. */
    public String shortName() { return shortName; }

    public Kind kind() { return kind; }

    /**
     * Bytes per element; for packed formats, bytes per block of {@link #QUANT_BLOCK} values.
     */
    public int itemSize() { return bytes; }

    /** Bits of one value (for packed formats, of one quantised value before scaling). */
    public int bits() { return bits; }

    public boolean isFloat() { return kind == Kind.FLOAT; }

    public boolean isInt() { return kind == Kind.SIGNED || kind == Kind.UNSIGNED; }

    public boolean isUnsigned() { return kind == Kind.UNSIGNED; }

    public boolean isBool() { return kind == Kind.BOOL; }

    public boolean isPacked() { return kind == Kind.PACKED; }

    /**
     * Bytes needed to store {@code count} elements.
     *
     * @throws IllegalArgumentException if {@code count} is negative or its bytes do not fit a long (never for the
     *     element count of a {@link Shape}, which is bounded by {@link Shape#MAX_NUMEL})
     */
    public long byteSize(long count) {
        long units = isPacked() ? count / QUANT_BLOCK : count; // what itemSize() counts: blocks or elements
        if (count < 0 || units > Long.MAX_VALUE / bytes) {
            throw new IllegalArgumentException(count + " elements of " + shortName + (count < 0 ? " is a negative count" : " take more than 2^63 - 1 bytes"));
        }
        if (isPacked()) {
            if (count % QUANT_BLOCK != 0) {
                throw new IllegalArgumentException(
                        "a " + shortName + " buffer holds whole blocks of " + QUANT_BLOCK + " values, got " + count);
            }
            return count / QUANT_BLOCK * bytes;
        }
        return count * bytes;
    }

    /** The dtype reductions and dot products of this dtype accumulate in. */
    public DType accumulator() {
        return switch (this) {
            case F16, BF16 -> F32;
            case BOOL, I8, I16, I32, I64 -> I64;
            case U8, U16, U32, U64 -> U64;
            default -> this;
        };
    }

    /** Smallest value of an integer or boolean dtype (as a signed long; u64 is 0). */
    public long minInt() {
        return switch (kind) {
            case BOOL, UNSIGNED -> 0;
            case SIGNED -> bits == 64 ? Long.MIN_VALUE : -(1L << (bits - 1));
            default -> throw new IllegalStateException(shortName + " is not an integer dtype");
        };
    }

    /** Largest value of an integer or boolean dtype; u64 saturates at {@link Long#MAX_VALUE}. */
    public long maxInt() {
        return switch (kind) {
            case BOOL -> 1;
            case SIGNED -> bits == 64 ? Long.MAX_VALUE : (1L << (bits - 1)) - 1;
            case UNSIGNED -> bits == 64 ? Long.MAX_VALUE : (1L << bits) - 1;
            default -> throw new IllegalStateException(shortName + " is not an integer dtype");
        };
    }

    // The lattice: each dtype lists the dtypes it widens to directly.
    private static final Map<DType, List<DType>> PARENTS = Map.ofEntries(
            Map.entry(BOOL, List.of(I8, U8)),
            Map.entry(I8, List.of(I16)),
            Map.entry(I16, List.of(I32)),
            Map.entry(I32, List.of(I64)),
            Map.entry(I64, List.of(F16, BF16)),
            Map.entry(U8, List.of(I16, U16)),
            Map.entry(U16, List.of(I32, U32)),
            Map.entry(U32, List.of(I64, U64)),
            Map.entry(U64, List.of(F16, BF16)),
            Map.entry(F16, List.of(F32)),
            Map.entry(BF16, List.of(F32)),
            Map.entry(F32, List.of(F64)),
            Map.entry(F64, List.of()));

    private Set<DType> upperSet() {
        Set<DType> out = EnumSet.of(this);
        List<DType> work = new ArrayList<>(List.of(this));
        while (!work.isEmpty()) {
            for (DType p : PARENTS.getOrDefault(work.removeLast(), List.of())) {
                if (out.add(p)) work.add(p);
            }
        }
        return out;
    }

    /**
     * The least upper bound of two dtypes in the promotion lattice, e.g. {@code i8+u8 -> i16},
     * {@code i32+f16 -> f16}, {@code f16+bf16 -> f32}.
     *
     * <p>A signed integer and {@code u64} have two minimal common bounds, {@code f16} and {@code bf16},
     * neither wider than the other; they promote to the least type above both, {@code f32} (as in JAX).
     * This one corner is not associative: {@code (i64+u64)+f16} is {@code f32}, {@code i64+(u64+f16)}
     * is {@code f16}.
     *
     * @throws IllegalArgumentException for packed dtypes, which take no part in arithmetic
     */
    public static DType promote(DType a, DType b) {
        if (a.isPacked() || b.isPacked()) {
            throw new IllegalArgumentException("packed dtype " + (a.isPacked() ? a : b).shortName
                    + " takes no part in arithmetic; dequantise it first");
        }
        if (a == b) return a;
        Set<DType> common = a.upperSet();
        common.retainAll(b.upperSet());
        // the types above every minimal common bound: just that bound's upper set when it is unique
        Set<DType> bounds = EnumSet.copyOf(common);
        for (DType m : common) {
            if (common.stream().noneMatch(c -> c != m && c.upperSet().contains(m))) bounds.retainAll(m.upperSet());
        }
        for (DType d : values()) { // declaration order lists narrower types first
            if (bounds.contains(d) && d.upperSet().containsAll(bounds)) return d;
        }
        throw new AssertionError("lattice has no upper bound for " + a + ", " + b);
    }

    /** Parses a short name such as {@code f32} or {@code bf16} (case-insensitive). */
    public static DType parse(String name) {
        String n = name.toLowerCase(Locale.ROOT);
        for (DType d : values()) if (d.shortName.equals(n)) return d;
        throw new IllegalArgumentException("unknown dtype '" + name + "'; expected one of "
                + java.util.Arrays.stream(values()).map(DType::shortName).toList());
    }

    @Override
    public String toString() { return shortName; }
}

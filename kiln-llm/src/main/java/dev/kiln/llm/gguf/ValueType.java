package dev.kiln.llm.gguf;

/**
 * The GGUF metadata value types ({@code enum gguf_type}), by id, with the fewest bytes a value of the type takes in
 * the file: the bound that keeps a claimed array length from exceeding what the file can hold.
 */
enum ValueType {
    UINT8(1), INT8(1), UINT16(2), INT16(2), UINT32(4), INT32(4), FLOAT32(4), BOOL(1),
    /** A 64-bit length, then the bytes. */
    STRING(8),
    /** A 32-bit element type, a 64-bit length, then the elements. */
    ARRAY(12),
    UINT64(8), INT64(8), FLOAT64(8);

    private static final ValueType[] BY_ID = values();

    /** Bytes of one value for the fixed-size types; the least for STRING and ARRAY. */
    final int minBytes;

    ValueType(int minBytes) { this.minBytes = minBytes; }

    /** The type with id {@code id}, or null: the ids are the declaration order, 0 to 12. */
    static ValueType byId(int id) { return id >= 0 && id < BY_ID.length ? BY_ID[id] : null; }

    boolean isInteger() { return this != FLOAT32 && this != FLOAT64 && this != BOOL && this != STRING && this != ARRAY; }

    boolean isFloat() { return this == FLOAT32 || this == FLOAT64; }

    /** Whether a value has a fixed size (all but STRING and ARRAY). */
    boolean isFixed() { return this != STRING && this != ARRAY; }
}

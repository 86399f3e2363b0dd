package dev.kiln.serve;

import dev.kiln.types.DType;

import java.util.Objects;

/**
 * Values as little-endian bytes of a dtype (packed formats in GGML block layout, see {@link DTypeCodec}):
 * what {@link ExecutableGraph#runTyped} takes and returns.
 *
 * @param dtype the element type of the bytes
 * @param bytes the data; not copied
 */
public record TypedValues(DType dtype, byte[] bytes) {
    public TypedValues {
        Objects.requireNonNull(dtype, "dtype");
        Objects.requireNonNull(bytes, "bytes");
    }

    /** {@code values} encoded as {@code dtype} ({@link DTypeCodec#fromFloats}). */
    public static TypedValues of(DType dtype, float... values) { return new TypedValues(dtype, DTypeCodec.fromFloats(values, dtype)); }

    /** Number of values the bytes hold. */
    public long count() { return DTypeCodec.count(dtype, bytes.length); }

    /** The values decoded to floats ({@link DTypeCodec#toFloats}). */
    public float[] toFloats() { return DTypeCodec.toFloats(bytes, dtype); }
}

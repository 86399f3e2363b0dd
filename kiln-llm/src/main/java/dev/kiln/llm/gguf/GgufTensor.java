package dev.kiln.llm.gguf;

import dev.kiln.Tensor;
import dev.kiln.llm.ModelFileException;
import dev.kiln.runtime.MemoryBudget;
import dev.kiln.types.DType;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.Objects;

/**
 * One tensor of a {@link GgufFile}: its name, ggml type, shape and the bytes of its data, a zero-copy slice of the
 * file's mapping that stays readable until the file is closed.
 *
 * <p>Shapes come in two orders. ggml lists dimensions innermost first: {@link #ne()}{@code [0]} is the length of a row
 * (the contiguous dimension), so a {@code [rows, cols]} weight has {@code ne = {cols, rows}}. Kiln's {@link #shape()}
 * is row-major, the reverse. Block-quantised types pack each row into whole blocks, so {@code ne[0]} is a multiple of
 * the type's block size and rows start on block boundaries.
 *
 * <p>The canonical constructor checks that the components agree (the reader has also checked them against the file),
 * so a tensor built by hand, for a kernel test, is as safe to dequantise as one read from a file.
 *
 * @param file     the file it was read from, named in errors
 * @param name     the tensor's name, e.g. {@code blk.0.attn_q.weight}
 * @param type     its ggml type
 * @param ne       dimensions in ggml order (ne0 innermost), 1 to 4 of them, each at least 1
 * @param offset   where its data starts, relative to the file's data section (as stored in the file)
 * @param byteSize bytes of data: {@code type.rowBytes(ne0)} times the product of the other dimensions
 * @param data     the data, {@code byteSize} bytes
 */
public record GgufTensor(Path file, String name, GgmlType type, int[] ne, long offset, long byteSize, MemorySegment data) {
    private static final System.Logger LOG = System.getLogger(GgufTensor.class.getName());

    public GgufTensor {
        Objects.requireNonNull(file);
        Objects.requireNonNull(name);
        Objects.requireNonNull(type);
        Objects.requireNonNull(data);
        ne = ne.clone();
        if (ne.length < 1 || ne.length > 4) throw new IllegalArgumentException(name + ": expected 1 to 4 dimensions, got " + ne.length);
        long numel = 1;
        for (int d : ne) {
            if (d < 1) throw new IllegalArgumentException(name + ": dimensions must be at least 1, got " + Arrays.toString(ne));
            numel = Math.multiplyExact(numel, d);
        }
        long expected = Math.multiplyExact(type.rowBytes(ne[0]), numel / ne[0]);
        if (byteSize != expected || data.byteSize() != byteSize || offset < 0) {
            throw new IllegalArgumentException(name + ": " + type + " " + Arrays.toString(ne) + " takes " + expected + " bytes; byteSize is "
                    + byteSize + ", the data segment has " + data.byteSize() + ", offset " + offset);
        }
    }

    /** Dimensions in ggml order, innermost first. */
    @Override public int[] ne() { return ne.clone(); }

    /** Dimensions in Kiln's row-major order: {@code ne} reversed. */
    public int[] shape() {
        int[] s = new int[ne.length];
        for (int i = 0; i < ne.length; i++) s[i] = ne[ne.length - 1 - i];
        return s;
    }

    /** The number of values. */
    public long numel() {
        long n = 1;
        for (int d : ne) n *= d; // cannot overflow: the constructor computed it exactly
        return n;
    }

    /** Values per row: {@code ne[0]}. */
    public int rowLength() { return ne[0]; }

    /** The number of rows: the product of all dimensions but {@code ne[0]}. */
    public long rows() { return numel() / ne[0]; }

    /** Bytes per row. */
    public long rowBytes() { return type.rowBytes(ne[0]); }

    /**
     * Dequantises row {@code row} ({@link #rowLength()} values) into {@code dst[dstOffset..]}, bit for bit as ggml does.
     *
     * @throws ModelFileException        if Kiln does not support the tensor's type
     * @throws IndexOutOfBoundsException if {@code row} is not a row of the tensor or {@code dst} is too short
     */
    public void dequantizeRow(long row, float[] dst, int dstOffset) {
        requireSupported();
        Objects.checkIndex(row, rows());
        Objects.checkFromIndexSize(dstOffset, ne[0], dst.length);
        long bytes = rowBytes();
        Dequantize.row(type, data.asSlice(row * bytes, bytes), dst, dstOffset, ne[0]);
    }

    /**
     * All values as f32, in row-major order.
     *
     * @throws ModelFileException if Kiln does not support the tensor's type, or it holds more values than a Java array
     */
    public float[] dequantize() {
        requireSupported();
        long n = numel();
        if (n > Integer.MAX_VALUE - 8) throw new ModelFileException(file, "tensor '" + name + "': " + n + " values do not fit one float[]; dequantize by row");
        float[] out = new float[(int) n];
        for (long r = 0, rows = rows(); r < rows; r++) dequantizeRow(r, out, (int) (r * ne[0]));
        return out;
    }

    /**
     * The tensor as a Kiln {@link Tensor} of {@link #shape()}, on the default device. F32, F16 and BF16 data is wrapped
     * in place ({@link Tensor#wrapConstant}, no copy): the tensor is valid until the file is closed. A block-quantised
     * tensor is an f32 tensor whose values are dequantised where a graph reads them as values, over its blocks wrapped in
     * place; products with it and lookups of its rows read the blocks directly ({@link BlockTensor}). On a device with
     * its own memory (a GPU) the data is copied there.
     *
     * @throws ModelFileException if Kiln does not support the tensor's type, or its data is not aligned to its element
     *                            size (a file whose {@code general.alignment} is below 4)
     */
    public Tensor toTensor() {
        requireSupported();
        int[] shape = shape();
        DType dtype = switch (type) {
            case F32 -> DType.F32;
            case F16 -> DType.F16;
            case BF16 -> DType.BF16;
            default -> null;
        };
        if (dtype != null) {
            if (ByteOrder.nativeOrder() != ByteOrder.LITTLE_ENDIAN) throw new UnsupportedOperationException("GGUF data is little-endian; this machine is not");
            if (data.address() % dtype.itemSize() != 0) {
                throw new ModelFileException(file, "tensor '" + name + "': " + type + " data at offset " + offset + " is not aligned to its "
                        + dtype.itemSize() + "-byte elements");
            }
            return Tensor.defaultDevice().deviceMemory().isPresent() ? Tensor.fromSegment(data, dtype, shape) : Tensor.wrapConstant(data, dtype, shape);
        }
        return BlockTensor.valueOf(this);
    }

    private void requireSupported() {
        if (!type.isSupported()) {
            throw new ModelFileException(file, "tensor '" + name + "': type " + type + " (ggml id " + type.id()
                    + ") is not supported; expected F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q4_K, Q5_K or Q6_K");
        }
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof GgufTensor t && file.equals(t.file) && name.equals(t.name) && type == t.type && Arrays.equals(ne, t.ne)
                && offset == t.offset && byteSize == t.byteSize && data.equals(t.data);
    }

    @Override
    public int hashCode() { return Objects.hash(file, name, type, Arrays.hashCode(ne), offset, byteSize); }

    @Override
    public String toString() { return "GgufTensor[" + name + ", " + type + ", ne=" + Arrays.toString(ne) + ", offset=" + offset + ", " + byteSize + " bytes]"; }
}

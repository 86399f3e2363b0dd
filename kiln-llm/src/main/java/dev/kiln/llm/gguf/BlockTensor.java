package dev.kiln.llm.gguf;

import dev.kiln.Tensor;
import dev.kiln.types.DType;
import dev.kiln.types.Variable;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.WeakHashMap;

/**
 * A block-quantised GGUF tensor (Q8_0, Q4_0, Q4_1, Q4_K, Q5_K, Q6_K) as a Kiln tensor. Its value is the dequantised f32
 * tensor, but that value is computed only where a graph reads it as such; a graph builder that multiplies by it or looks
 * rows of it up asks {@link #of} for the block tensor behind it and uses {@link #linear} or {@link #embedding}, which read
 * the blocks in place from the mapped file ({@link QuantizedMatmul}). No f32 copy of the weights exists then (the CLANG
 * device's products with x quantised read Q8_0 and Q4_0 matrices from a copy interleaved by 16 rows, the same bytes
 * reordered: {@link NativeBlockProducts#interleaved}).
 */
public final class BlockTensor {
    /** The block tensor behind each value tensor made here (weak: a tensor no graph holds is forgotten). */
    private static final Map<Tensor, BlockTensor> KNOWN = Collections.synchronizedMap(new WeakHashMap<>());

    private final GgufTensor source;
    private final Tensor bytes; // (rows, rowBytes) u8 over the mapped file
    private final int rows, cols;

    private BlockTensor(GgufTensor source, Tensor bytes) {
        this.source = source;
        this.bytes = bytes;
        this.cols = source.rowLength();
        this.rows = Math.toIntExact(source.rows());
    }

    /** The value tensor of {@code t} (f32, {@link GgufTensor#shape()}), computed by dequantising where it is read as values. */
    static Tensor valueOf(GgufTensor t) {
        int rows = Math.toIntExact(t.rows()), rowBytes = Math.toIntExact(t.rowBytes());
        MemorySegment data = t.data();
        Tensor bytes = Tensor.defaultDevice().deviceMemory().isPresent() ? Tensor.fromSegment(data, DType.U8, rows, rowBytes)
                : Tensor.wrapConstant(data, DType.U8, rows, rowBytes);
        BlockTensor b = new BlockTensor(t, bytes);
        int k = t.rowLength();
        Tensor value = Tensor.host("dequantize " + t.name(), DType.F32, t.shape(), (in, out) -> {
            float[] row = new float[k];
            for (int r = 0; r < rows; r++) {
                Dequantize.row(t.type(), in.getFirst().asSlice((long) r * rowBytes, rowBytes), row, 0, k);
                MemorySegment.copy(row, 0, out, ValueLayout.JAVA_FLOAT, 4L * r * k, k);
            }
        }, bytes);
        KNOWN.put(value, b);
        return value;
    }

    /** The block tensor whose value {@code t} is, if it is one made by {@link GgufTensor#toTensor()}. */
    public static Optional<BlockTensor> of(Tensor t) { return Optional.ofNullable(KNOWN.get(t)); }

    /** The GGUF tensor read. */
    public GgufTensor source() { return source; }

    /**
     * {@code x · valueᵀ} for {@code x} (r, cols) f32 and this tensor a (n, cols) matrix: (r, n), from the blocks in place.
     * When {@code active} is given, only the first {@code active} rows of {@code x} are computed (the result's first axis
     * is symbolic in it, as a chunk of tokens is).
     *
     * @throws IllegalArgumentException if x is not (r, cols) f32
     */
    public Tensor linear(Tensor x, Variable active) { return linear(x, active, null); }

    /**
     * {@link #linear(Tensor, Variable)}, with the dot products of a few rows run by {@code natives} (the CLANG device's,
     * see {@link NativeBlockProducts}), or by the Vector API when it is null.
     */
    public Tensor linear(Tensor x, Variable active, NativeBlockProducts natives) {
        return product(x, active, natives, List.of(this), natives != null && natives.interleaves(source.type(), rows));
    }

    /**
     * Whether {@link #linearStacked} takes {@code parts} with {@code natives}: two or more matrices of one type and row
     * length, every one but the last a multiple of {@value NativeBlockProducts#INTERLEAVED_ROWS} rows, that {@code
     * natives} reads {@linkplain NativeBlockProducts#interleaves interleaved}.
     */
    public static boolean stackable(NativeBlockProducts natives, List<BlockTensor> parts) {
        if (natives == null || parts.size() < 2) return false;
        BlockTensor first = parts.getFirst();
        long n = 0;
        for (int p = 0; p < parts.size(); p++) {
            BlockTensor b = parts.get(p);
            if (b.source.type() != first.source.type() || b.cols != first.cols || p < parts.size() - 1 && b.rows % NativeBlockProducts.INTERLEAVED_ROWS != 0) return false;
            n += b.rows;
        }
        return n <= Integer.MAX_VALUE && natives.interleaves(first.source.type(), (int) n);
    }

    /**
     * {@code x} times every one of {@code parts} at once: (r, the parts' rows summed), each part's columns after the
     * previous part's, the same bits as {@link #linear} of each. A layer's q, k and v (or its gate and up) read one x:
     * stacked, their products are one call, split over the workers and quantising x once, over one interleaved matrix
     * ({@link NativeBlockProducts#interleaved(List, List, int)}).
     *
     * @throws IllegalArgumentException if the parts are not {@link #stackable} with {@code natives}, or x is not (r, cols) f32
     */
    public static Tensor linearStacked(Tensor x, Variable active, NativeBlockProducts natives, List<BlockTensor> parts) {
        if (!stackable(natives, parts)) {
            throw new IllegalArgumentException("linearStacked: " + parts + " cannot be stacked (two or more of one type and row length, whole groups of "
                    + NativeBlockProducts.INTERLEAVED_ROWS + " rows but the last, read interleaved by the native products)");
        }
        return product(x, active, natives, parts, true);
    }

    /**
     * {@code x} times {@code parts} stacked by rows, as one host step: the blocks read in place (one part), or ({@code
     * interleave}) {@code natives}' interleaved copy of them.
     */
    private static Tensor product(Tensor x, Variable active, NativeBlockProducts natives, List<BlockTensor> parts, boolean interleave) {
        BlockTensor first = parts.getFirst();
        first.checkX(x);
        int max = x.dim(0), k = first.cols, n = parts.stream().mapToInt(b -> b.rows).sum();
        GgmlType type = first.source.type();
        List<GgufTensor> sources = parts.stream().map(b -> b.source).toList();
        Tensor[] inputs = new Tensor[parts.size() + 2];
        inputs[0] = x;
        inputs[1] = count(active, max);
        for (int p = 0; p < parts.size(); p++) inputs[p + 2] = parts.get(p).bytes;
        String name = "matmul " + type + " " + String.join("+", sources.stream().map(GgufTensor::name).toList());
        if (interleave) natives.plan(sources);
        Tensor y = Tensor.host(name, DType.F32, new int[] {max, n}, (in, out) -> {
            MemorySegment w = interleave ? natives.interleaved(sources, in.subList(2, in.size()), k) : in.get(2);
            QuantizedMatmul.multiply(type, w, n, k, in.get(0), QuantizedMatmul.activeRows(in.get(1), max), out, natives, interleave);
        }, inputs);
        return active == null ? y : y.withSymbolicDim(0, active);
    }

    /** Rows of the matrix (its products' columns). */
    public int rows() { return rows; }

    private void checkX(Tensor x) {
        if (x.ndim() != 2 || x.dim(1) != cols || x.dtype() != DType.F32) {
            throw new IllegalArgumentException("linear with " + source.type() + " '" + source.name() + "' (" + rows + ", " + cols + "): x must be (r, " + cols
                    + ") f32, got " + x.dtype() + x.shape());
        }
    }

    /**
     * The rows {@code ids} selects (an embedding lookup): (r, cols) f32 for {@code ids} (r) integers, only the first
     * {@code active} computed when given.
     *
     * @throws IllegalArgumentException if ids is not 1-D integers
     */
    public Tensor embedding(Tensor ids, Variable active) {
        if (ids.ndim() != 1 || !ids.dtype().isInt()) throw new IllegalArgumentException("embedding: ids must be 1-D integers, got " + ids.dtype() + ids.shape());
        int max = ids.dim(0), n = rows, k = cols;
        GgmlType type = source.type();
        Tensor y = Tensor.host("embedding " + type + " " + source.name(), DType.F32, new int[] {max, k},
                (in, out) -> QuantizedMatmul.gatherRows(type, in.get(2), n, k, in.get(0), QuantizedMatmul.activeRows(in.get(1), max), out),
                ids.dtype() == DType.I32 ? ids : ids.cast(DType.I32), count(active, max), bytes);
        return active == null ? y : y.withSymbolicDim(0, active);
    }

    /**
     * The number of active rows as an i64 tensor of one element, a host step's input ({@code max} when {@code active}
     * is null), read back by {@link QuantizedMatmul#activeRows}.
     */
    public static Tensor count(Variable active, int max) {
        return active == null ? Tensor.of(new long[] {max}, 1) : Tensor.variable(active).reshape(1);
    }

    @Override
    public String toString() { return "BlockTensor[" + source + "]"; }
}

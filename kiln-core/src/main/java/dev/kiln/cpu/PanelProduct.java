package dev.kiln.cpu;

import java.lang.foreign.MemorySegment;

/**
 * The packed GEMM's register tile ({@link GemmMicroKernel}) for host code that packs its own operands: kiln-llm's
 * block-quantised products dequantise a panel of weights straight into B's layout and meet it with the activations,
 * at the tile's speed rather than through a second, smaller tile of their own.
 *
 * <p>Layouts are the packed GEMM's: A as {@link #ROWS} rows side by side, step by step ({@code a[aAt + k * ROWS + i]},
 * {@link #packRow}; rows past the valid ones are read, so pad them, with zeros), B as one panel of {@link #COLUMNS}
 * columns ({@code b[bAt + k * COLUMNS + j]}). Exported to {@code dev.kiln.llm} only.
 */
public final class PanelProduct {
    /** The rows of A one tile multiplies. */
    public static final int ROWS = GemmMicroKernel.MR;
    /** The columns of one B panel. */
    public static final int COLUMNS = GemmMicroKernel.NR;

    private PanelProduct() {}

    /**
     * Row {@code i} of a tile's A ({@code kc} floats from {@code src[from..]}) into its panel at {@code aAt}:
     * {@code a[aAt + k * ROWS + i]}.
     */
    public static void packRow(float[] src, int from, int kc, float[] a, int aAt, int i) {
        java.util.Objects.checkIndex(i, ROWS);
        java.util.Objects.checkFromIndexSize(aAt, ROWS * kc, a.length);
        GemmMicroKernel.dealRow(src, from, kc, a, aAt + i);
    }

    /** Scratch for {@link #multiply}'s sums; one per thread. */
    public static float[] newTile() { return new float[GemmMicroKernel.TILE_FLOATS]; }

    /**
     * {@code C[i][j] = Σ_k A[i][k] B[k][j]} over {@code kc} steps for the first {@code rows} rows and {@code cols}
     * columns, stored at the floats {@code c[cAt + i * cRowStride + j]}, or added to them when {@code add}.
     *
     * @throws IllegalArgumentException when {@code rows} or {@code cols} exceed the tile or {@code tile} is too short
     * @throws IndexOutOfBoundsException when an element lies outside its array or segment
     */
    public static void multiply(float[] a, int aAt, float[] b, int bAt, int kc, int rows, int cols, MemorySegment c, long cAt,
                                long cRowStride, boolean add, float[] tile) {
        if (rows < 0 || rows > ROWS || cols < 0 || cols > COLUMNS || tile.length < ROWS * COLUMNS) {
            throw new IllegalArgumentException("panel product: " + rows + " x " + cols + " outputs with a tile of " + tile.length
                    + " floats; the tile is " + ROWS + " x " + COLUMNS);
        }
        java.util.Objects.checkFromIndexSize(aAt, ROWS * kc, a.length);
        java.util.Objects.checkFromIndexSize(bAt, kc * COLUMNS, b.length);
        GemmMicroKernel.sums(a, aAt, b, bAt, kc, rows, cols, tile);
        for (int i = 0; i < rows; i++) GemmMicroKernel.storeRow(tile, i * COLUMNS, c, 4 * (cAt + i * cRowStride), cols, !add);
    }
}

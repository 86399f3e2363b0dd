package dev.kiln.cpu;

import dev.kiln.codegen.Contraction;
import dev.kiln.codegen.StoreEpilogue;

import java.lang.foreign.MemorySegment;
import java.util.Arrays;

/**
 * A contraction at fixed run-time extents: A and B as packable sides, C's address tables, and for each
 * column of C how many columns from it on are contiguous (so a register tile's row is one vector store).
 */
final class GemmPlan {
    final GemmSide a, b;
    /** B read from a padded copy of its image instead of packed, when it is a unit-stride convolution's; else null. */
    final PaddedImage image;
    final long[] cBatch, cRow, cCol;
    /** {@code contiguous[n]}: the number of columns {@code n, n+1, ...} whose C addresses step by 1. */
    final int[] contiguous;
    final int batches, m, n, k;
    final long cMin, cMax;

    /** The epilogue the tiles apply as they store the last K block, or null when it runs as its own kernel. */
    final TileEpilogue epilogue;

    /** Whether A's rows and B's columns are contiguous along K, so few rows run as dot products ({@link GemmDots}). */
    final boolean dots;

    GemmPlan(Contraction c, StoreEpilogue storeEpilogue, int[] batchVars, int[] mVars, int[] nVars, int[] kVars, long[] extents) {
        a = new GemmSide(c.a(), batchVars, mVars, kVars, extents);
        b = new GemmSide(c.b(), batchVars, kVars, nVars, extents);
        String mode = paddedImageMode();
        PaddedImage im = mode.equals("false") ? null : PaddedImage.of(c.b(), batchVars, kVars, nVars, extents);
        long[] strides = c.c().strides();
        cBatch = GemmSide.table(batchVars, extents, strides);
        for (int i = 0; i < cBatch.length; i++) cBatch[i] += c.c().offset();
        cRow = GemmSide.table(mVars, extents, strides);
        cCol = GemmSide.table(nVars, extents, strides);
        batches = cBatch.length;
        m = cRow.length;
        n = cCol.length;
        k = a.cols;
        image = im != null && (mode.equals("force") || im.pays(m, n)) ? im : null;
        epilogue = storeEpilogue == null ? null : new TileEpilogue(storeEpilogue, batchVars, mVars, nVars, extents);
        dots = image == null && a.rowsContiguous() && b.columnsContiguous();
        contiguous = new int[n];
        for (int j = n - 1; j >= 0; j--) {
            contiguous[j] = j + 1 < n && cCol[j + 1] == cCol[j] + 1 ? contiguous[j + 1] + 1 : 1;
        }
        if (batches == 0 || m == 0 || n == 0) {
            cMin = Long.MAX_VALUE;
            cMax = Long.MIN_VALUE;
        } else {
            cMin = Arrays.stream(cBatch).min().orElseThrow() + Arrays.stream(cRow).min().orElseThrow()
                    + Arrays.stream(cCol).min().orElseThrow();
            cMax = Arrays.stream(cBatch).max().orElseThrow() + Arrays.stream(cRow).max().orElseThrow()
                    + Arrays.stream(cCol).max().orElseThrow();
        }
    }

    /**
     * {@code -Dkiln.gemm.paddedImage=false} packs every B, {@code =force} reads a padded image wherever one applies (to
     * compare the two, or to rule the image out); {@code auto} by default. Read per plan.
     */
    static String paddedImageMode() { return System.getProperty("kiln.gemm.paddedImage", "auto"); }

    /** Throws {@link IndexOutOfBoundsException} when an element read or written lies outside its buffer. */
    void checkBounds(MemorySegment[] buffers) {
        if (batches == 0 || m == 0 || n == 0) return;
        long size = buffers[0].byteSize() / 4;
        if (cMin < 0 || cMax >= size) {
            throw new IndexOutOfBoundsException("contraction result (parameter 0) writes elements " + cMin + ".." + cMax
                    + " of a buffer of " + size + " floats");
        }
        if (k == 0) return;
        a.checkBounds(buffers[a.param], "operand A");
        b.checkBounds(buffers[b.param], "operand B");
    }

    /**
     * This plan for a run over {@code buffers}: itself where its epilogue's bounds are constants; else the same plan
     * with the bounds read from the buffers (ONNX Clip's min and max inputs), or without the epilogue where the upper
     * bound read is not one the tiles apply ({@link StoreEpilogue#boundsApply}: the caller then runs the generated
     * epilogue). The last such plan is kept, so runs with the same bounds make nothing new.
     */
    GemmPlan forRun(MemorySegment[] buffers) {
        if (epilogue == null || !epilogue.readsBounds()) return this;
        float lower = epilogue.lowerOf(buffers), upper = epilogue.upperOf(buffers);
        if (Float.isNaN(upper)) {
            GemmPlan plain = unfused;
            if (plain == null) unfused = plain = new GemmPlan(this, null);
            return plain;
        }
        GemmPlan last = bound;
        if (last != null && Float.floatToRawIntBits(last.epilogue.lowerOrNone()) == Float.floatToRawIntBits(lower)
                && Float.floatToRawIntBits(last.epilogue.upperOrNone()) == Float.floatToRawIntBits(upper)) return last;
        GemmPlan made = new GemmPlan(this, epilogue.withBounds(lower, upper));
        bound = made;
        return made;
    }

    /** {@link #forRun}'s last plan with bounds read, and its plan without the epilogue (racy caches: any is right). */
    private volatile GemmPlan bound, unfused;

    /** {@code p} with epilogue {@code e} (null: none). */
    private GemmPlan(GemmPlan p, TileEpilogue e) {
        a = p.a;
        b = p.b;
        image = p.image;
        cBatch = p.cBatch;
        cRow = p.cRow;
        cCol = p.cCol;
        contiguous = p.contiguous;
        batches = p.batches;
        m = p.m;
        n = p.n;
        k = p.k;
        cMin = p.cMin;
        cMax = p.cMax;
        dots = p.dots;
        epilogue = e;
    }

    /** {@link #checkBounds}, and the epilogue's reads when the tiles apply it. */
    void checkAllBounds(MemorySegment[] buffers) {
        checkBounds(buffers);
        if (epilogue != null && batches > 0 && m > 0 && n > 0) epilogue.checkBounds(buffers);
    }
}

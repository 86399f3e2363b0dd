package dev.kiln.cpu;

import dev.kiln.codegen.Contraction;
import dev.kiln.codegen.Contraction.Gate;
import dev.kiln.codegen.Contraction.Operand;
import dev.kiln.codegen.Contraction.Role;
import dev.kiln.codegen.Contraction.Var;
import dev.kiln.codegen.ContractionMatcher;
import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.List;

import static dev.kiln.cpu.GemmKernelTest.buffers;
import static dev.kiln.cpu.GemmKernelTest.mismatches;
import static dev.kiln.cpu.GemmKernelTest.reference;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * {@link StencilKernel} against the double-precision definition of the contraction ({@link GemmKernelTest}'s
 * reference and error bound), on buffers exactly as long as their valid elements: a read of padding, or past a run,
 * fails the segment's bounds check. Row widths below, at and above a vector's lanes, padded and unpadded edges,
 * stride 2, dilation, several rows of A per batch point, symbolic limits and non-finite weights.
 */
class StencilKernelTest {
    private static final ValueLayout.OfFloat F = ValueLayout.JAVA_FLOAT_UNALIGNED;

    private static Var v(String name, Role role, long extent) { return new Var(name, role, extent, -1); }

    /**
     * A grouped NCHW convolution with {@code m} output channels per group of one input channel ({@code m = 1}: depthwise),
     * batch {@code nb}, {@code ch} groups, {@code h x w} input, {@code r x r} window, stride {@code s}, padding {@code p},
     * dilation {@code d}.
     */
    static Contraction depthwise(int nb, int ch, int m, int h, int w, int r, int s, int p, int d) {
        int oh = (h + 2 * p - d * (r - 1) - 1) / s + 1, ow = (w + 2 * p - d * (r - 1) - 1) / s + 1;
        List<Var> vars = List.of(v("b", Role.BATCH, nb), v("c", Role.BATCH, ch), v("m", Role.M, m), v("oh", Role.N, oh),
                v("ow", Role.N, ow), v("kh", Role.K, r), v("kw", Role.K, r));
        Operand weights = new Operand(1, 0, new long[] {0, (long) m * r * r, (long) r * r, 0, 0, r, 1}, List.of());
        Operand x = new Operand(2, -(long) p * w - p, new long[] {(long) ch * h * w, (long) h * w, 0, (long) s * w, s, (long) d * w, d},
                List.of(new Gate(new long[] {0, 0, 0, s, 0, d, 0}, p, h + p), new Gate(new long[] {0, 0, 0, 0, s, 0, d}, p, w + p)));
        Operand out = new Operand(0, 0, new long[] {(long) ch * m * oh * ow, (long) m * oh * ow, (long) oh * ow, ow, 1, 0, 0}, List.of());
        return new Contraction(vars, weights, x, out);
    }

    static void check(Contraction c, long[] vals) {
        assertThat(ContractionMatcher.stencilColumn(c)).as("column variable of " + c).isGreaterThanOrEqualTo(0);
        try (Arena arena = Arena.ofShared()) {
            MemorySegment[] bufs = buffers(arena, c, 42);
            new StencilKernel(c).run(bufs, vals);
            GemmKernelTest.Reference ref = reference(c, bufs, vals, -1);
            assertThat(mismatches(ref, bufs[0])).as(c.toString()).isEmpty();
            long written = 0;
            for (long i = 0; i < bufs[0].byteSize() / 4; i++) if (!Float.isNaN(bufs[0].get(F, 4 * i))) written++;
            assertThat(written).as("C elements written").isEqualTo(ref.exact().length);
        }
    }

    @Test
    void depthwiseConvolutionsOfEveryRowWidth() {
        for (int w : new int[] {3, 7, 13, 16, 17, 28, 33, 56}) {
            check(depthwise(1, 5, 1, 6, w, 3, 1, 1, 1), new long[0]);   // 'same' padding
            check(depthwise(2, 3, 1, 7, w, 3, 1, 0, 1), new long[0]);   // no padding: no gates fail
        }
    }

    @Test
    void strideTwoDilationAndWideWindows() {
        for (int w : new int[] {7, 14, 29, 56, 67}) {
            check(depthwise(1, 4, 1, 9, w, 3, 2, 1, 1), new long[0]);
            check(depthwise(1, 3, 1, 9, w, 3, 1, 2, 2), new long[0]);
            check(depthwise(1, 2, 1, 8, w, 5, 2, 2, 1), new long[0]);
            check(depthwise(1, 2, 1, 9, w, 7, 1, 3, 1), new long[0]);
        }
    }

    @Test
    void severalRowsPerGroupAndWorkSplitOverWorkers() {
        check(depthwise(1, 4, 3, 10, 21, 3, 1, 1, 1), new long[0]);
        check(depthwise(2, 96, 1, 28, 28, 3, 1, 1, 1), new long[0]);  // large enough to split
        check(depthwise(1, 2, 1, 40, 40, 3, 2, 1, 1), new long[0]);   // few outer points: split by rows
    }

    @Test
    void symbolicBatch() {
        Contraction d = depthwise(4, 3, 1, 6, 20, 3, 1, 1, 1);
        List<Var> vars = new java.util.ArrayList<>(d.vars());
        vars.set(0, new Var("b", Role.BATCH, 4, 0));
        Contraction c = new Contraction(vars, d.a(), d.b(), d.c());
        check(c, new long[] {4});
        check(c, new long[] {2});
        check(c, new long[] {0});
    }

    @Test
    void aNonFiniteWeightReachesThePaddedSums() {
        // the loops multiply the padding's zeros by every weight: NaN * 0 and inf * 0 are NaN at every output
        Contraction c = depthwise(1, 2, 1, 5, 20, 3, 1, 1, 1);
        try (Arena arena = Arena.ofShared()) {
            MemorySegment[] bufs = buffers(arena, c, 3);
            bufs[1].set(F, 0, Float.POSITIVE_INFINITY); // channel 0, tap (0, 0): padding at the top row and left column
            new StencilKernel(c).run(bufs, new long[0]);
            for (int x = 0; x < 20; x++) assertThat(bufs[0].get(F, 4L * x)).as("top row, column " + x).isNaN();
            assertThat(bufs[0].get(F, 4L * 20)).as("second row, first column").isNaN();
            assertThat(bufs[0].get(F, 4L * 21)).as("second row, second column: no padding read").isInfinite();
        }
    }

    @Test
    void theBoundCatchesADroppedTap() {
        Contraction c = depthwise(1, 3, 1, 8, 40, 3, 1, 1, 1);
        try (Arena arena = Arena.ofShared()) {
            MemorySegment[] bufs = buffers(arena, c, 5);
            new StencilKernel(c).run(bufs, new long[0]);
            assertThat(mismatches(reference(c, bufs, new long[0], -1), bufs[0])).isEmpty();
            assertThat(mismatches(reference(c, bufs, new long[0], 4), bufs[0])).as("the centre tap left out").isNotEmpty();
        }
    }
}

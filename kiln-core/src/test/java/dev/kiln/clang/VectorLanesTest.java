package dev.kiln.clang;

import dev.kiln.Tensor;
import dev.kiln.runtime.ExecutionPlan;
import dev.kiln.testing.DeviceAssumptions;
import dev.kiln.types.DType;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.EnumSource;

import java.util.Random;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * What the C renderer writes for the lanes of a loop the compiler vectorises: a stride-2 load fetched with two
 * vector loads and a permute ({@code kiln_every_other_*}), and max and min as selects ({@code kiln_vmax_*},
 * {@code kiln_vmin_*}). Both must give INTERP's values bit for bit, NaN (any NaN), infinities and the order of
 * signed zeros (+0 above -0) included.
 */
class VectorLanesTest {
    /**
     * Normal values with NaN and infinities scattered in, and zeros of random signs in every run of {@code zeroRun}
     * elements whose number {@code % 3 == 0}, so that whole windows or rows hold only zeros, where the order +0 > -0
     * decides.
     */
    private static double[] specialValues(int n, int zeroRun, long seed) {
        Random r = new Random(seed);
        double[] v = new double[n];
        for (int i = 0; i < n; i++) {
            boolean zeros = i / zeroRun % 3 == 0;
            v[i] = zeros ? (r.nextBoolean() ? 0.0 : -0.0) : switch (r.nextInt(40)) {
                case 0 -> Double.NaN;
                case 1 -> Double.POSITIVE_INFINITY;
                case 2 -> Double.NEGATIVE_INFINITY;
                default -> r.nextGaussian();
            };
        }
        return v;
    }

    private static void assertSameBits(DType dt, double[] want, double[] got, String what) {
        assertThat(got).hasSameSizeAs(want);
        for (int i = 0; i < want.length; i++) {
            boolean same = Double.isNaN(want[i]) ? Double.isNaN(got[i]) : Double.doubleToRawLongBits(want[i]) == Double.doubleToRawLongBits(got[i]);
            if (!same) assertThat(got[i]).as("%s %s element %d: %s, want %s (bits differ)", what, dt, i, got[i], want[i]).isNaN();
        }
    }

    /** The plan's output after a run (f32 widened to double keeps NaN, infinities and the sign of zero). */
    private static double[] run(ExecutionPlan plan, int n) {
        plan.execute();
        double[] out = new double[n];
        for (int i = 0; i < n; i++) out[i] = plan.outputBuffer().getDouble(i);
        return out;
    }

    /**
     * A 3 x 3 stride-2 max pooling reads every other element of a row into its lanes; GCC would leave that loop
     * scalar, so the renderer fetches those elements itself. 37 columns give 18 outputs a row: one whole group and a
     * last one that overlaps it (16 lanes), or two groups and a last (8 lanes). Padded by one, the rows above and
     * below the image are gated off: where the gate holds the reads are in range (`GatedBounds`), so they carry no
     * run-time check and are fetched under the gate.
     */
    @ParameterizedTest
    @CsvSource({"F32, 0", "F64, 0", "F32, 1", "F64, 1"})
    void aStrideTwoMaxPoolingFetchesEveryOtherElementIntoItsLanes(DType dt, int pad) {
        DeviceAssumptions.assumeAvailable("CLANG", "vector lane tests");
        int c = 6, h = 37, w = 37;
        Tensor x = Tensor.of(dt, specialValues(c * h * w, 3 * w, 7), 1, c, h, w);
        int[] k = {3, 3}, s = {2, 2}, p = {pad, pad};
        double[] want = x.to("INTERP").maxPool2d(k, s, p, null, false).toDoubleArray();
        try (ExecutionPlan plan = x.to("CLANG").maxPool2d(k, s, p, null, false).prepare()) {
            String source = plan.kernels().getLast().source();
            String type = dt == DType.F32 ? "f32" : "f64";
            assertThat(source).as("the stride-2 loads are fetched\n%s", source).containsPattern("kiln_every_other_" + type + "x\\d+\\(")
                    .as("and the lanes' maximum is branch-free").contains("kiln_vmax_" + type + "(")
                    .as("with no run-time range check").doesNotContain("kiln_in_range");
            assertSameBits(dt, want, run(plan, want.length), "max pooling padded by " + pad);
        }
    }

    /** A reduction along rows is grouped in lanes, each accumulating the maximum or minimum of its share there. */
    @ParameterizedTest
    @EnumSource(value = DType.class, names = {"F32", "F64"})
    void maximaAndMinimaInLanesKeepNanAndSignedZeroRules(DType dt) {
        DeviceAssumptions.assumeAvailable("CLANG", "vector lane tests");
        Tensor x = Tensor.of(dt, specialValues(30 * 300, 300, 11), 30, 300);
        String type = dt == DType.F32 ? "f32" : "f64";
        for (boolean max : new boolean[] {true, false}) {
            double[] want = (max ? x.to("INTERP").max(1) : x.to("INTERP").min(1)).toDoubleArray();
            try (ExecutionPlan plan = (max ? x.to("CLANG").max(1) : x.to("CLANG").min(1)).prepare()) {
                String source = plan.kernels().getLast().source();
                assertThat(source).as("the lanes' %s\n%s", max ? "maximum" : "minimum", source).contains("kiln_v" + (max ? "max_" : "min_") + type + "(");
                assertSameBits(dt, want, run(plan, want.length), max ? "max" : "min");
            }
        }
    }
}

package dev.kiln.cpu;

import dev.kiln.Tensor;
import dev.kiln.codegen.ContractionMatcher;
import dev.kiln.runtime.DeviceRegistry;
import dev.kiln.runtime.ExecutionPlan;
import dev.kiln.testing.TestGraphs;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.function.Function;
import java.util.stream.Stream;

import static dev.kiln.cpu.ContractionKernelTest.floats;
import static dev.kiln.cpu.ContractionKernelTest.interp;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * Depthwise and small-group convolutions as MobileNet, EfficientNet and ShuffleNet have them (3 x 3 and 5 x 5 windows,
 * stride 1 and 2, 'same' padding, planes of 7 to 112, channel counts that are a multiple of nothing, a bias and
 * ReLU6 after them) run as {@link StencilKernel}s, over padded planes ({@link PlaneStencil}) where it applies, and agree
 * with INTERP within the numerics policy's bound: {@code |got - exact| <= 2·K·u·sum|w·x| + 2u·|exact|}, with
 * {@code sum|w·x|} the same convolution of absolute values. The bound fails for a kernel that drops a tap
 * ({@link #theBoundCatchesADroppedTap}).
 */
class DepthwiseConvolutionTest {

    /**
     * A convolution of a {@code 1 x ch x size x size} image with {@code ch * multiplier} filters of {@code perGroup} input
     * channels each ({@code perGroup = 1}: depthwise).
     */
    record Conv(int ch, int size, int window, int stride, int perGroup, int multiplier, boolean epilogue) {
        int groups() { return ch / perGroup; }

        int outChannels() { return groups() * multiplier; }

        int outSize() { return (size + 2 * (window / 2) - window) / stride + 1; }

        int taps() { return perGroup * window * window; }

        Tensor apply(Tensor x, Tensor w, Tensor bias) {
            int p = window / 2;
            Tensor y = x.conv2d(w, null, new int[]{stride, stride}, new int[]{p, p}, null, groups());
            return epilogue ? y.add(bias.reshape(outChannels(), 1, 1).to(y.device())).relu6() : y;
        }

        /** Whether the stencil reads padded planes: a 2-D window over one input channel, unless a wide stride-2 row. */
        boolean planes() { return perGroup == 1 && (stride == 1 || outSize() < StencilKernel.WIDE_STRIDED_COLUMNS); }

        /**
         * A convolution with the fewest channels, past {@code atLeast} and odd (a multiple of no vector or group size), for
         * which it is a contraction worth a kernel of its own (smaller ones keep their loops).
         */
        static Conv of(int atLeast, int size, int window, int stride, int perGroup, int multiplier, boolean epilogue) {
            Conv shape = new Conv(perGroup, size, window, stride, perGroup, multiplier, epilogue);
            long perChannel = (long) shape.outSize() * shape.outSize() * window * window * multiplier;
            int groups = (int) Math.max(atLeast, (70_000 + perChannel - 1) / perChannel);
            if (groups % 2 == 0) groups++;
            return new Conv(groups * perGroup, size, window, stride, perGroup, multiplier, epilogue);
        }

        @Override
        public String toString() {
            return ch + " channels " + size + "x" + size + ", " + window + "x" + window + " stride " + stride
                    + (perGroup > 1 ? ", " + perGroup + " per group" : "") + (multiplier > 1 ? ", multiplier " + multiplier : "")
                    + (epilogue ? ", + bias, relu6" : "");
        }
    }

    static Stream<Arguments> convolutions() {
        List<Conv> convs = new ArrayList<>();
        for (int size : new int[]{7, 14, 28, 56, 112}) {
            for (int stride : new int[]{1, 2}) {
                convs.add(Conv.of(3, size, 3, stride, 1, 1, stride == 1));
                if (size <= 28) convs.add(Conv.of(3, size, 5, stride, 1, 1, stride == 2));
            }
        }
        convs.add(Conv.of(3, 9, 3, 1, 1, 1, true));      // a plane row narrower than a vector, odd rows
        // planes of at most four vectors are read flat: one vector (4 x 4), two (5 x 5), four (8 x 8), a filter pair per channel
        convs.add(Conv.of(3, 4, 3, 1, 1, 1, true));
        convs.add(Conv.of(3, 5, 3, 1, 1, 1, false));
        convs.add(Conv.of(3, 8, 3, 1, 1, 1, true));
        convs.add(Conv.of(3, 7, 3, 1, 1, 2, true));
        convs.add(Conv.of(3, 15, 3, 2, 1, 1, false));    // an odd input width: the last plane column is padding
        convs.add(Conv.of(3, 29, 3, 2, 1, 1, true));     // the same, its rows split as they are read (wider than a vector)
        convs.add(Conv.of(3, 57, 3, 2, 1, 1, true));     // split as read, the last pair of vectors from an odd column
        convs.add(Conv.of(3, 10, 3, 1, 1, 2, true));     // two filters per channel (a depth multiplier)
        convs.add(Conv.of(3, 14, 3, 1, 2, 1, false));    // two input channels per group: row by row
        convs.add(Conv.of(3, 120, 3, 2, 1, 1, true));    // a stride-2 row of 60 outputs: row by row
        return Stream.of("CPU", "CLANG").flatMap(d -> convs.stream().map(c -> Arguments.of(d, c)));
    }

    @ParameterizedTest(name = "{0}: {1}")
    @MethodSource("convolutions")
    void agreesWithInterpWithinTheBound(String device, Conv c) {
        assumeAvailable(device);
        Tensor x = TestGraphs.data(1, 1, c.ch(), c.size(), c.size()), w = TestGraphs.data(2, c.outChannels(), c.perGroup(), c.window(), c.window());
        Tensor bias = TestGraphs.data(3, c.outChannels());
        try (ExecutionPlan plan = c.apply(x.to(device), w.to(device), bias).prepare()) {
            StencilKernel stencil = stencilOf(plan).orElseThrow(() -> new AssertionError(c + ": no stencil among " + plan.kernels()));
            assertThat(stencil.readsPlanes()).as(c + ": reads padded planes").isEqualTo(c.planes());
            assertThat(stencil.appliesEpilogue()).as(c + ": applies the epilogue as it stores").isEqualTo(c.planes() && c.epilogue());
            plan.execute();
            assertWithinBound(c.toString(), floats(plan.outputBuffer()), c, x, w, bias);
        }
    }

    @Test
    void theBoundCatchesADroppedTap() {
        Conv c = Conv.of(3, 14, 3, 1, 1, 1, false);
        Tensor x = TestGraphs.data(1, 1, c.ch(), 14, 14), w = TestGraphs.data(2, c.ch(), 1, 3, 3);
        // the centre tap's weight zeroed: what a kernel that leaves it out computes
        float[] wv = interp(w);
        for (int ch = 0; ch < c.ch(); ch++) wv[ch * 9 + 4] = 0;
        float[] dropped = interp(c.apply(x, Tensor.of(wv, c.ch(), 1, 3, 3), null));
        assertThatThrownBy(() -> assertWithinBound("dropped tap", dropped, c, x, w, null)).isInstanceOf(AssertionError.class);
        // and the taps' weights swapped left for right
        float[] flipped = interp(c.apply(x, w.flip(3), null));
        assertThatThrownBy(() -> assertWithinBound("flipped window", flipped, c, x, w, null)).isInstanceOf(AssertionError.class);
    }

    static Stream<Conv> epilogueCases() {
        return Stream.of(Conv.of(3, 7, 3, 1, 1, 1, true), Conv.of(3, 14, 3, 2, 1, 1, true), Conv.of(3, 56, 3, 1, 1, 1, true),
                Conv.of(3, 10, 3, 1, 1, 2, true));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("epilogueCases")
    void anEpilogueAppliedAsTheRowsStoreEqualsTheSameOpsAfterTheSumsBitForBit(Conv c) {
        float[] xv = interp(TestGraphs.data(1, 1, c.ch(), c.size(), c.size()));
        // non-finite values and signed zeros go through the same operations either way
        xv[0] = Float.NaN;
        xv[xv.length / 2] = Float.POSITIVE_INFINITY;
        xv[1] = -0.0f;
        Tensor x = Tensor.of(xv, 1, c.ch(), c.size(), c.size()).to("CPU").realize(), w = TestGraphs.data(2, c.outChannels(), 1, 3, 3).to("CPU");
        float[] bv = interp(TestGraphs.data(3, c.outChannels()));
        bv[0] = Float.NEGATIVE_INFINITY;
        Tensor bias = Tensor.of(bv, c.outChannels());
        float[] fused;
        try (ExecutionPlan plan = c.apply(x, w, bias).prepare()) {
            assertThat(stencilOf(plan).orElseThrow().appliesEpilogue()).as(c + ": applies the epilogue as it stores").isTrue();
            plan.execute();
            fused = floats(plan.outputBuffer());
        }
        // the same sums (the same stencil), stored as they are, then the epilogue's operations as a kernel of their own
        Conv sumsOnly = new Conv(c.ch(), c.size(), c.window(), c.stride(), c.perGroup(), c.multiplier(), false);
        Tensor sums = sumsOnly.apply(x, w, null).realize();
        float[] separate = sums.add(bias.reshape(c.outChannels(), 1, 1).to("CPU")).relu6().toFloatArray();
        boolean nan = false;
        for (float v : fused) nan |= Float.isNaN(v);
        assertThat(nan).as(c + ": NaNs reached the output").isTrue();
        for (int i = 0; i < fused.length; i++) {
            assertThat(Float.floatToIntBits(fused[i])).as(c + ": element " + i + " (" + fused[i] + " vs " + separate[i] + ")")
                    .isEqualTo(Float.floatToIntBits(separate[i]));
        }
    }

    /**
     * Weights given as a constant are read from A once, when the plan is bound ({@code StencilKernel.packWeights}); the
     * floats are those of weights read per plane, for planes read flat (7 x 7), banded (56 x 56), split at stride 2, and two
     * filters per channel, with a NaN and a -0.0 among the weights.
     */
    @ParameterizedTest(name = "{0}")
    @MethodSource("epilogueCases")
    void constantWeightsReadOnceGiveTheFloatsOfWeightsReadPerPlane(Conv c) {
        Tensor x = TestGraphs.data(1, 1, c.ch(), c.size(), c.size()).to("CPU").realize();
        float[] wv = interp(TestGraphs.data(2, c.outChannels(), 1, 3, 3));
        wv[5] = Float.NaN;
        wv[wv.length - 1] = -0.0f;
        Tensor w = Tensor.of(wv, c.outChannels(), 1, 3, 3).to("CPU").realize(), bias = TestGraphs.data(3, c.outChannels());
        float[] perPlane, once;
        try (ExecutionPlan plan = c.apply(x, w, bias).prepare()) {
            plan.execute();
            perPlane = floats(plan.outputBuffer());
        }
        try (ExecutionPlan plan = c.apply(x, w.asConstant(), bias).prepare()) {
            plan.execute();
            once = floats(plan.outputBuffer());
        }
        for (int i = 0; i < once.length; i++) {
            assertThat(Float.floatToIntBits(once[i])).as(c + ": element " + i + " (" + once[i] + " vs " + perPlane[i] + ")")
                    .isEqualTo(Float.floatToIntBits(perPlane[i]));
        }
    }

    /**
     * ONNX's Clip gives its bounds as tensors: the stencil reads them when the run begins, and leaves an upper bound of 0
     * (where {@code Math.min} and the epilogue's {@code minimum} differ on -0.0) to the generated epilogue.
     */
    @ParameterizedTest(name = "clamp to [-1, {0}]")
    @org.junit.jupiter.params.provider.ValueSource(floats = {6f, 0f})
    void boundsGivenAsTensorsAreReadWhenTheRunBegins(float upper) {
        Conv c = Conv.of(3, 14, 3, 1, 1, 1, false);
        float[] xv = interp(TestGraphs.data(1, 1, c.ch(), 14, 14));
        xv[1] = -0.0f;
        xv[2] = Float.NaN;
        Tensor x = Tensor.of(xv, 1, c.ch(), 14, 14).to("CPU").realize(), w = TestGraphs.data(2, c.ch(), 1, 3, 3).to("CPU");
        Tensor bias = TestGraphs.data(3, c.ch()).reshape(c.ch(), 1, 1).to("CPU");
        Tensor lo = Tensor.of(new float[]{-1f}, 1).to("CPU").realize(), hi = Tensor.of(new float[]{upper}, 1).to("CPU").realize();
        Function<Tensor, Tensor> epilogue = y -> y.add(bias).clamp(lo, hi);
        float[] fused;
        try (ExecutionPlan plan = epilogue.apply(c.apply(x, w, null)).prepare()) {
            assertThat(stencilOf(plan).orElseThrow().appliesEpilogue()).as("applies the epilogue as it stores").isTrue();
            plan.execute();
            fused = floats(plan.outputBuffer());
        }
        float[] separate = epilogue.apply(c.apply(x, w, null).realize()).toFloatArray();
        for (int i = 0; i < fused.length; i++) {
            assertThat(Float.floatToIntBits(fused[i])).as("element " + i + " (" + fused[i] + " vs " + separate[i] + ")")
                    .isEqualTo(Float.floatToIntBits(separate[i]));
        }
    }

    @ParameterizedTest(name = "stride {0}")
    @org.junit.jupiter.params.provider.ValueSource(ints = {1, 2})
    void aNonFiniteWeightReachesEverySumThatReadsPadding(int stride) {
        Conv c = Conv.of(3, 14, 3, stride, 1, 1, false);
        float[] wv = interp(TestGraphs.data(2, c.ch(), 1, 3, 3));
        wv[0] = Float.POSITIVE_INFINITY; // channel 0, tap (0, 0): the top row and left column read padding there
        wv[9 + 8] = Float.NaN;            // channel 1, tap (2, 2): NaN at every output
        Tensor x = TestGraphs.data(1, 1, c.ch(), 14, 14), w = Tensor.of(wv, c.ch(), 1, 3, 3);
        float[] expected = interp(c.apply(x, w, null));
        try (ExecutionPlan plan = c.apply(x.to("CPU"), w.to("CPU"), null).prepare()) {
            assertThat(stencilOf(plan).orElseThrow().readsPlanes()).isTrue();
            plan.execute();
            float[] got = floats(plan.outputBuffer());
            int nan = 0;
            for (int i = 0; i < got.length; i++) {
                assertThat(Float.isNaN(got[i])).as("element " + i + ": " + got[i] + " vs " + expected[i]).isEqualTo(Float.isNaN(expected[i]));
                if (Float.isInfinite(expected[i])) assertThat(got[i]).as("element " + i).isEqualTo(expected[i]);
                if (Float.isNaN(got[i])) nan++;
            }
            int out = c.outSize();
            assertThat(nan).as("NaN outputs: channel 0's top row and left column, all of channel 1").isEqualTo(2 * out - 1 + out * out);
        }
    }

    private static Optional<StencilKernel> stencilOf(ExecutionPlan plan) {
        return plan.kernels().stream().map(k -> ContractionMatcher.matchReorderable(k.program())).flatMap(Optional::stream)
                .filter(m -> m.kind() == ContractionMatcher.Kind.STENCIL)
                .map(m -> new StencilKernel(m.contraction(), ContractionKernel.fusable(m).orElse(null))).findFirst();
    }

    private static void assertWithinBound(String name, float[] got, Conv c, Tensor x, Tensor w, Tensor bias) {
        // sum|w·x| (a bias and relu6 after it are the epilogue's rounding, bounded by 2u|exact|)
        Conv sums = new Conv(c.ch(), c.size(), c.window(), c.stride(), c.perGroup(), c.multiplier(), false);
        ContractionKernelTest.assertWithinBound(name, got, interp(c.apply(x, w, bias)), interp(sums.apply(x.abs(), w.abs(), null)), c.taps());
    }

    private static void assumeAvailable(String device) {
        var reason = DeviceRegistry.providers().get(device).unavailableReason();
        Assumptions.assumeTrue(reason.isEmpty(), () -> device + " unavailable: " + reason.orElse(""));
    }
}

package dev.kiln.cpu;

import dev.kiln.Tensor;
import dev.kiln.runtime.Device;
import dev.kiln.runtime.DeviceRegistry;
import dev.kiln.runtime.ExecutionPlan;
import dev.kiln.runtime.PreparedKernel;
import dev.kiln.testing.TestGraphs;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

import java.util.function.BiFunction;
import java.util.function.Function;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * Contractions on the CPU device run as a packed GEMM plus their epilogue, and agree with INTERP within the
 * numerics policy's bound for reassociated float sums (docs/ARCHITECTURE.md, "Numerics"):
 * {@code |got - exact| <= 2·K·u·sum|a·b| + 2u·|exact|} per element, with {@code sum|a·b|} computed by the same
 * contraction over absolute values. The bound is tight enough that one dropped term fails it (tested).
 */
class ContractionKernelTest {
    private static final double U = Math.ulp(1.0f) / 2; // unit roundoff of f32

    /** A contraction as a function of its two operands, with the sizes of its operands and K. */
    private record Case(int[] aShape, int[] bShape, int k, BiFunction<Tensor, Tensor, Tensor> f) {}

    static Stream<Arguments> cases() {
        return Stream.of("CPU", "CLANG").flatMap(device -> shapes().map(a -> Arguments.of(device, a.get()[0], a.get()[1])));
    }

    static Stream<Arguments> shapes() {
        return Stream.of(
                Arguments.of("matmul 200x96 · 96x130", new Case(new int[]{200, 96}, new int[]{96, 130}, 96, Tensor::matmul)),
                Arguments.of("odd sizes 67x131 · 131x45", new Case(new int[]{67, 131}, new int[]{131, 45}, 131, Tensor::matmul)),
                Arguments.of("x · Wᵀ + relu", new Case(new int[]{64, 80}, new int[]{72, 80}, 80, (a, w) -> a.matmul(w.transpose(0, 1)).relu())),
                Arguments.of("batched 3x40x24 · 3x24x50", new Case(new int[]{3, 40, 24}, new int[]{3, 24, 50}, 24, Tensor::matmul)),
                Arguments.of("conv 3x3 pad 1 + relu", new Case(new int[]{1, 16, 14, 14}, new int[]{32, 16, 3, 3}, 144,
                        (x, w) -> x.conv2d(w, null, null, new int[]{1, 1}, null, 1).relu())),
                Arguments.of("conv 3x3 stride 2 pad 1, batch 2", new Case(new int[]{2, 8, 15, 13}, new int[]{24, 8, 3, 3}, 72,
                        (x, w) -> x.conv2d(w, null, new int[]{2, 2}, new int[]{1, 1}, null, 1))),
                Arguments.of("conv 7x7 stride 2 pad 3", new Case(new int[]{1, 3, 32, 32}, new int[]{16, 3, 7, 7}, 147,
                        (x, w) -> x.conv2d(w, null, new int[]{2, 2}, new int[]{3, 3}, null, 1))),
                // a first layer's 27-long sums: the padded image's column tiles computed in groups, row tile by row tile
                Arguments.of("conv 3x3 stride 2 pad 1 from 3 channels", new Case(new int[]{1, 3, 70, 70}, new int[]{40, 3, 3, 3}, 27,
                        (x, w) -> x.conv2d(w, null, new int[]{2, 2}, new int[]{1, 1}, null, 1))),
                // rows of 34 output columns read every other input column: two whole vectors per row (two loads and a
                // permute each) and single elements after them, whatever the vector width
                Arguments.of("conv 3x3 stride 2 unpadded, 34 columns", new Case(new int[]{1, 16, 21, 69}, new int[]{32, 16, 3, 3}, 144,
                        (x, w) -> x.conv2d(w, null, new int[]{2, 2}, null, null, 1))),
                // N = 49 fits two panels, so the rows are split between the workers and B is packed once for both
                // (packSharedB), K blocks shared out: three blocks of 384 here, and a batch of 3 with two blocks each
                Arguments.of("conv 3x3 pad 1 at 7x7, 128 rows, K 1152", new Case(new int[]{1, 128, 7, 7}, new int[]{128, 128, 3, 3}, 1152,
                        (x, w) -> x.conv2d(w, null, null, new int[]{1, 1}, null, 1))),
                Arguments.of("conv 3x3 pad 1 at 7x7, batch 3, K 576", new Case(new int[]{3, 64, 7, 7}, new int[]{64, 64, 3, 3}, 576,
                        (x, w) -> x.conv2d(w, null, null, new int[]{1, 1}, null, 1).relu())),
                Arguments.of("conv 1x1", new Case(new int[]{1, 32, 9, 9}, new int[]{48, 32, 1, 1}, 32, (x, w) -> x.conv2d(w, null))),
                Arguments.of("grouped conv, 2 groups", new Case(new int[]{1, 16, 10, 10}, new int[]{32, 8, 3, 3}, 72,
                        (x, w) -> x.conv2d(w, null, null, new int[]{1, 1}, null, 2))),
                Arguments.of("dilated conv", new Case(new int[]{1, 8, 12, 12}, new int[]{16, 8, 3, 3}, 72,
                        (x, w) -> x.conv2d(w, null, null, new int[]{2, 2}, new int[]{2, 2}, 1))));
    }

    @ParameterizedTest(name = "{0}: {1}")
    @MethodSource("cases")
    void runsAsAGemmWithinTheBoundOfReassociatedSums(String device, String name, Case c) {
        if (device.equals("CLANG")) {
            var reason = DeviceRegistry.providers().get("CLANG").unavailableReason();
            org.junit.jupiter.api.Assumptions.assumeTrue(reason.isEmpty(), () -> "CLANG device unavailable: " + reason.orElse(""));
        }
        Tensor a = TestGraphs.data(1, c.aShape()), b = TestGraphs.data(2, c.bShape());
        Tensor onCpu = c.f().apply(a.to(device), b.to(device));
        try (ExecutionPlan plan = onCpu.prepare()) {
            assertThat(plan.kernels()).as(name + ": kernels").anySatisfy(k -> assertThat(k.source()).contains("packed GEMM"));
            plan.execute();
            assertWithinBound(name, floats(plan.outputBuffer()), c, a, b, c.k());
        }
    }

    /** Convolutions whose B the GEMM can read from a padded copy of the image, in stride phases ({@link PaddedImage}). */
    static Stream<Arguments> paddedImageCases() {
        Stream<Arguments> convs = Stream.of(
                Arguments.of("3x3 pad 1, 13x13 (last tile one vector)", new Case(new int[]{1, 16, 13, 13}, new int[]{24, 16, 3, 3}, 144,
                        (x, w) -> x.conv2d(w, null, null, new int[]{1, 1}, null, 1).relu())),
                Arguments.of("3x3 pad 1, K 576 (one block from the image, two packed)", new Case(new int[]{1, 64, 9, 11}, new int[]{16, 64, 3, 3}, 576,
                        (x, w) -> x.conv2d(w, null, null, new int[]{1, 1}, null, 1))),
                // positive terms: sines cancel over so long a sum, and a block dropped would still be within the bound
                Arguments.of("3x3 pad 1, K 4680 in two blocks from the image", new Case(new int[]{1, 520, 6, 7}, new int[]{16, 520, 3, 3}, 4680,
                        (x, w) -> x.add(3f).realize().conv2d(w.add(3f).realize(), null, null, new int[]{1, 1}, null, 1).relu())),
                Arguments.of("3x3 pad 1, batch 2, 11x9", new Case(new int[]{2, 8, 11, 9}, new int[]{24, 8, 3, 3}, 72,
                        (x, w) -> x.conv2d(w, null, null, new int[]{1, 1}, null, 1))),
                Arguments.of("5x5 pad 1 (output narrower than the padding), 40 wide", new Case(new int[]{1, 4, 6, 40}, new int[]{8, 4, 5, 5}, 100,
                        (x, w) -> x.conv2d(w, null, null, new int[]{1, 1}, null, 1))),
                Arguments.of("grouped, 2 groups", new Case(new int[]{1, 16, 10, 10}, new int[]{32, 8, 3, 3}, 72,
                        (x, w) -> x.conv2d(w, null, null, new int[]{1, 1}, null, 2))),
                Arguments.of("dilated 2, pad 2", new Case(new int[]{1, 8, 12, 12}, new int[]{16, 8, 3, 3}, 72,
                        (x, w) -> x.conv2d(w, null, null, new int[]{2, 2}, new int[]{2, 2}, 1))),
                Arguments.of("3x3 stride 2 pad 1, batch 2, odd sizes", new Case(new int[]{2, 8, 15, 13}, new int[]{24, 8, 3, 3}, 72,
                        (x, w) -> x.conv2d(w, null, new int[]{2, 2}, new int[]{1, 1}, null, 1).relu())),
                Arguments.of("7x7 stride 2 pad 3 (a stem)", new Case(new int[]{1, 3, 32, 32}, new int[]{16, 3, 7, 7}, 147,
                        (x, w) -> x.conv2d(w, null, new int[]{2, 2}, new int[]{3, 3}, null, 1))),
                Arguments.of("stride 2 x 1, pad 1", new Case(new int[]{1, 8, 11, 10}, new int[]{16, 8, 3, 3}, 72,
                        (x, w) -> x.conv2d(w, null, new int[]{2, 1}, new int[]{1, 1}, null, 1))),
                Arguments.of("stride 2, dilated 2, pad 2", new Case(new int[]{1, 8, 17, 19}, new int[]{16, 8, 3, 3}, 72,
                        (x, w) -> x.conv2d(w, null, new int[]{2, 2}, new int[]{2, 2}, new int[]{2, 2}, 1))),
                // images of more than 64 K floats, copied by plane ranges side by side on the workers
                Arguments.of("3x3 pad 1, 20 planes of 62 x 62", new Case(new int[]{1, 20, 60, 60}, new int[]{8, 20, 3, 3}, 180,
                        (x, w) -> x.conv2d(w, null, null, new int[]{1, 1}, null, 1))),
                Arguments.of("3x3 stride 2 pad 1, 20 planes of 66 x 66", new Case(new int[]{1, 20, 64, 64}, new int[]{8, 20, 3, 3}, 180,
                        (x, w) -> x.conv2d(w, null, new int[]{2, 2}, new int[]{1, 1}, null, 1))),
                Arguments.of("stride 3, pad 1, 40 channels", new Case(new int[]{1, 8, 20, 22}, new int[]{40, 8, 3, 3}, 72,
                        (x, w) -> x.conv2d(w, null, new int[]{3, 3}, new int[]{1, 1}, null, 1))),
                Arguments.of("3x3 stride 2, no padding: the window read from the addresses", new Case(new int[]{1, 3, 47, 49}, new int[]{32, 3, 3, 3}, 27,
                        (x, w) -> x.conv2d(w, null, new int[]{2, 2}, null, null, 1).relu())),
                Arguments.of("3x3, no padding, batch 2", new Case(new int[]{2, 8, 11, 9}, new int[]{24, 8, 3, 3}, 72,
                        (x, w) -> x.conv2d(w, null, null, null, null, 1))),
                Arguments.of("3x3 dilated 2, no padding", new Case(new int[]{1, 8, 15, 17}, new int[]{16, 8, 3, 3}, 72,
                        (x, w) -> x.conv2d(w, null, null, null, new int[]{2, 2}, 1))),
                Arguments.of("3x3 stride 2, dilated 2, no padding", new Case(new int[]{1, 8, 19, 21}, new int[]{16, 8, 3, 3}, 72,
                        (x, w) -> x.conv2d(w, null, new int[]{2, 2}, null, new int[]{2, 2}, 1))));
        return convs.flatMap(a -> Stream.of("force", "false").map(mode -> Arguments.of(mode, a.get()[0], a.get()[1])));
    }

    @ParameterizedTest(name = "paddedImage={0}: {1}")
    @MethodSource("paddedImageCases")
    void aPaddedImageAndPackedPanelsGiveTheSameBoundedSums(String mode, String name, Case c) {
        String before = System.getProperty("kiln.gemm.paddedImage");
        System.setProperty("kiln.gemm.paddedImage", mode);
        try {
            Tensor a = TestGraphs.data(1, c.aShape()), b = TestGraphs.data(2, c.bShape());
            try (ExecutionPlan plan = c.f().apply(a.to("CPU"), b.to("CPU")).prepare()) {
                var gemms = plan.kernels().stream().map(k -> dev.kiln.codegen.ContractionMatcher.matchReorderable(k.program()))
                        .flatMap(java.util.Optional::stream).map(m -> new GemmKernel(m.contraction())).toList();
                assertThat(gemms).as(name + ": contractions").hasSize(1);
                assertThat(gemms.getFirst().readsPaddedImage()).as(name + ": reads a padded image").isEqualTo(mode.equals("force"));
                plan.execute();
                assertWithinBound(name, floats(plan.outputBuffer()), c, a, b, c.k());
            }
        } finally {
            if (before == null) System.clearProperty("kiln.gemm.paddedImage");
            else System.setProperty("kiln.gemm.paddedImage", before);
        }
    }

    /** Epilogues the tiles apply as they store: bias per row or per column, a residual, ReLU, a clamp. */
    static Stream<Arguments> storeEpilogueCases() {
        Tensor bias16 = TestGraphs.data(7, 16), bias24 = TestGraphs.data(8, 24);
        BiFunction<Tensor, Tensor, Tensor> conv = (x, w) -> x.conv2d(w, null, null, new int[]{1, 1}, null, 1);
        return Stream.of(
                Arguments.of("conv + bias + relu", new int[]{1, 8, 11, 13}, new int[]{16, 8, 3, 3}, conv,
                        (Function<Tensor, Tensor>) y -> y.add(bias16.reshape(16, 1, 1).to(y.device())).relu()),
                Arguments.of("1x1 conv + bias + relu, full tiles stored from the registers", new int[]{1, 16, 32, 33}, new int[]{32, 16, 1, 1},
                        (BiFunction<Tensor, Tensor, Tensor>) (x, w) -> x.conv2d(w, null, null, null, null, 1),
                        (Function<Tensor, Tensor>) y -> y.add(TestGraphs.data(11, 32).reshape(32, 1, 1).to(y.device())).relu()),
                Arguments.of("1x1 conv + bias + residual, relu, full tiles stored from the registers", new int[]{1, 16, 32, 33}, new int[]{36, 16, 1, 1},
                        (BiFunction<Tensor, Tensor, Tensor>) (x, w) -> x.conv2d(w, null, null, null, null, 1),
                        (Function<Tensor, Tensor>) y -> y.add(TestGraphs.data(12, 36).reshape(36, 1, 1).to(y.device()))
                                .add(TestGraphs.data(13, 1, 36, 32, 33).to(y.device())).relu()),
                Arguments.of("x · W + residual, full tiles stored from the registers", new int[]{48, 64}, new int[]{64, 64},
                        (BiFunction<Tensor, Tensor, Tensor>) Tensor::matmul,
                        (Function<Tensor, Tensor>) y -> y.add(TestGraphs.data(14, 48, 64).to(y.device()))),
                Arguments.of("conv + bias + relu, 40 wide: full image tiles stored from the registers", new int[]{1, 8, 6, 40}, new int[]{24, 8, 3, 3},
                        conv, (Function<Tensor, Tensor>) y -> y.add(bias24.reshape(24, 1, 1).to(y.device())).relu()),
                Arguments.of("conv + bias + residual, relu, K 576 in two blocks", new int[]{1, 64, 9, 11}, new int[]{16, 64, 3, 3}, conv,
                        (Function<Tensor, Tensor>) y -> y.add(bias16.reshape(16, 1, 1).to(y.device())).add(TestGraphs.data(9, 1, 16, 9, 11).to(y.device())).relu()),
                Arguments.of("conv + residual, relu (no bias: the residual is the first addend)", new int[]{1, 8, 12, 30}, new int[]{16, 8, 3, 3}, conv,
                        (Function<Tensor, Tensor>) y -> y.add(TestGraphs.data(15, 1, 16, 12, 30).to(y.device())).relu()),
                Arguments.of("conv stride 2 + bias, relu6", new int[]{2, 8, 15, 13}, new int[]{16, 8, 3, 3},
                        (BiFunction<Tensor, Tensor, Tensor>) (x, w) -> x.conv2d(w, null, new int[]{2, 2}, new int[]{1, 1}, null, 1),
                        (Function<Tensor, Tensor>) y -> y.add(bias16.reshape(16, 1, 1).to(y.device())).relu6()),
                Arguments.of("x · Wᵀ + bias per column, odd sizes", new int[]{37, 80}, new int[]{24, 80},
                        (BiFunction<Tensor, Tensor, Tensor>) (x, w) -> x.matmul(w.transpose(0, 1)),
                        (Function<Tensor, Tensor>) y -> y.add(bias24.to(y.device()))),
                Arguments.of("x · W + residual, clamp(-1, 2)", new int[]{40, 72}, new int[]{72, 24}, (BiFunction<Tensor, Tensor, Tensor>) Tensor::matmul,
                        (Function<Tensor, Tensor>) y -> y.add(TestGraphs.data(10, 40, 24).to(y.device())).clamp(-1.0, 2.0)));
    }

    /** {@link #storeEpilogueCases} with B packed as the GEMM chooses, and read from a padded image wherever one applies. */
    static Stream<Arguments> storeEpilogueCasesEitherWay() {
        return storeEpilogueCases().flatMap(a -> Stream.of("auto", "force").map(mode -> {
            Object[] x = a.get();
            return Arguments.of(mode, x[0], x[1], x[2], x[3], x[4]);
        }));
    }

    @ParameterizedTest(name = "paddedImage={0}: {1}")
    @MethodSource("storeEpilogueCasesEitherWay")
    void anEpilogueAppliedByTheTilesEqualsTheSameOpsAfterTheSumsBitForBit(String mode, String name, int[] aShape, int[] bShape,
                                                                         BiFunction<Tensor, Tensor, Tensor> contraction, Function<Tensor, Tensor> epilogue) {
        String before = System.getProperty("kiln.gemm.paddedImage");
        if (mode.equals("force")) System.setProperty("kiln.gemm.paddedImage", mode);
        try {
            epilogueBitForBit(name, aShape, bShape, contraction, epilogue);
        } finally {
            if (before == null) System.clearProperty("kiln.gemm.paddedImage");
            else System.setProperty("kiln.gemm.paddedImage", before);
        }
    }

    private static void epilogueBitForBit(String name, int[] aShape, int[] bShape, BiFunction<Tensor, Tensor, Tensor> contraction,
                                          Function<Tensor, Tensor> epilogue) {
        float[] av = interp(TestGraphs.data(1, aShape));
        // non-finite values and signed zeros go through the same operations either way
        av[0] = Float.NaN;
        av[1] = Float.POSITIVE_INFINITY;
        av[2] = -0.0f;
        Tensor x = Tensor.of(av, aShape).to("CPU").realize(), w = TestGraphs.data(2, bShape).to("CPU");
        float[] fused;
        try (ExecutionPlan plan = epilogue.apply(contraction.apply(x, w)).prepare()) {
            assertThat(plan.kernels()).as(name).anySatisfy(k -> assertThat(k.source()).contains("applied by the tiles as they store"));
            plan.execute();
            fused = floats(plan.outputBuffer());
        }
        // the same sums (the same GEMM), stored as they are, then the epilogue's operations as a kernel of their own
        float[] separate = epilogue.apply(contraction.apply(x, w).realize()).toFloatArray();
        boolean nan = false;
        for (float v : fused) nan |= Float.isNaN(v);
        assertThat(nan).as(name + ": NaNs reached the output").isTrue();
        for (int i = 0; i < fused.length; i++) {
            assertThat(Float.floatToIntBits(fused[i])).as(name + ": element " + i + " (" + fused[i] + " vs " + separate[i] + ")")
                    .isEqualTo(Float.floatToIntBits(separate[i]));
        }
    }

    @Test
    void theBoundCatchesOneDroppedTerm() {
        Case c = new Case(new int[]{64, 96}, new int[]{96, 80}, 96, Tensor::matmul);
        Tensor a = TestGraphs.data(1, c.aShape()), b = TestGraphs.data(2, c.bShape());
        // the same product without its last term, as a kernel that drops one k would compute it
        float[] dropped = interp(a.slice(1, 0, 95, 1).matmul(b.slice(0, 0, 95, 1)));
        assertThatThrownBy(() -> assertWithinBound("dropped term", dropped, c, a, b, c.k())).isInstanceOf(AssertionError.class);
        float[] wrongIndex = interp(a.matmul(b.flip(0)));
        assertThatThrownBy(() -> assertWithinBound("wrong index", wrongIndex, c, a, b, c.k())).isInstanceOf(AssertionError.class);
    }

    @Test
    void anInPlaceUpdateReadsItsInputsBeforeOverwritingThem() {
        Tensor x = TestGraphs.data(3, 64, 64).add(0).realize(), w = TestGraphs.data(4, 64, 64);
        float[] expected = interp(x.matmul(w).add(x));
        Tensor updated = x.assign(x.matmul(w).add(x));
        float[] got = updated.realize().toFloatArray();
        float[] sums = interp(x.abs().matmul(w.abs()));
        for (int i = 0; i < got.length; i++) {
            double bound = 2 * 64 * U * sums[i] * 2 + 4 * U * Math.abs(expected[i]) + 1e-30;
            assertThat(Math.abs((double) got[i] - expected[i])).as("element " + i).isLessThanOrEqualTo(bound);
        }
    }

    /**
     * A symbolic row count: the GEMM runs only to the run's rows. With W transposed ({@code x · Wᵀ + bias}, the
     * epilogue applied as the sums store), up to 8 rows are dot products ({@link GemmDots}: 1 and 3 here), more the
     * packed nest.
     */
    @ParameterizedTest(name = "{0}, W transposed: {1}")
    @org.junit.jupiter.params.provider.CsvSource({"CPU, false", "CLANG, false", "CPU, true", "CLANG, true"})
    void symbolicRowsRunOnlyToTheirSizeAndNeverReadPastIt(String device, boolean transposed) {
        var reason = DeviceRegistry.providers().get(device).unavailableReason();
        org.junit.jupiter.api.Assumptions.assumeTrue(reason.isEmpty(), () -> device + " unavailable: " + reason.orElse(""));
        dev.kiln.types.Variable rows = new dev.kiln.types.Variable("rows", 1, 64);
        Tensor input = Tensor.zeros(64, 96).to(device).contiguous().realize();
        Tensor w = transposed ? TestGraphs.data(2, 80, 96).transpose(0, 1) : TestGraphs.data(2, 96, 80);
        Tensor bias = transposed ? TestGraphs.data(5, 80) : Tensor.zeros(80);
        Tensor y = input.withSymbolicDim(0, rows).matmul(w.to(device)).add(bias.to(device)).relu();
        java.lang.foreign.MemorySegment in = input.buffer().segment();
        try (ExecutionPlan plan = y.prepare()) {
            assertThat(plan.kernels()).anySatisfy(k -> assertThat(k.source()).contains("packed GEMM"));
            for (int n : new int[]{1, 3, 17, 64}) {
                Tensor x = TestGraphs.data(3 + n, n, 96);
                float[] values = interp(x);
                for (long i = 0; i < 64 * 96; i++) {
                    in.setAtIndex(java.lang.foreign.ValueLayout.JAVA_FLOAT, i, i < values.length ? values[(int) i] : Float.NaN);
                }
                plan.executeWithVars(java.util.Map.of("rows", (long) n));
                float[] all = floats(plan.outputBuffer()), got = java.util.Arrays.copyOf(all, n * 80);
                assertWithinBound(device + " rows=" + n, got, interp(x.matmul(w).add(bias).relu()), interp(x.abs().matmul(w.abs()).add(bias.abs())), 96);
            }
        }
    }

    /** Asserts {@code got} is the contraction of {@code a}, {@code b} within the policy's bound. */
    private static void assertWithinBound(String name, float[] got, Case c, Tensor a, Tensor b, int k) {
        // sum|a·b| (relu of non-negative sums changes nothing)
        assertWithinBound(name, got, interp(c.f().apply(a, b)), interp(c.f().apply(a.abs(), b.abs())), k);
    }

    /**
     * Asserts {@code got} is {@code exact}, a sum of {@code k} products whose magnitudes sum to {@code sums}, within the
     * policy's bound {@code 2 k u sums + 2 u |exact|} (the second term: an epilogue's rounding after the sum).
     */
    static void assertWithinBound(String name, float[] got, float[] exact, float[] sums, int k) {
        assertThat(got).as(name + ": size").hasSameSizeAs(exact);
        for (int i = 0; i < got.length; i++) {
            double bound = 2 * k * U * sums[i] + 2 * U * Math.abs(exact[i]) + 1e-30;
            double err = Math.abs((double) got[i] - exact[i]);
            if (!(err <= bound)) {
                throw new AssertionError(name + ": element " + i + " is " + got[i] + ", expected " + exact[i] + " within " + bound
                        + " (error " + err + ")");
            }
        }
    }

    /**
     * ONNX's Clip gives its bounds as tensors (MobileNet's ReLU6 after every 1 x 1 and the first convolution): the GEMM's
     * tiles read them when each run begins and clamp as they store, the same floats as the epilogue run on its own; an
     * upper bound of 0 (where {@code Math.min} and the epilogue's {@code minimum} differ on -0.0) or NaN goes to the
     * generated epilogue. Bounds changed between runs of one plan are read again.
     */
    @Test
    void boundsGivenAsTensorsAreReadWhenEachRunBegins() {
        float[] xv = interp(TestGraphs.data(1, 1, 16, 14, 14));
        xv[1] = -0.0f;
        xv[2] = Float.NaN;
        Tensor x = Tensor.of(xv, 1, 16, 14, 14).to("CPU").realize(), w = TestGraphs.data(2, 32, 16, 1, 1).to("CPU");
        Tensor bias = TestGraphs.data(3, 32).reshape(32, 1, 1).to("CPU");
        Tensor lo = Tensor.of(new float[]{-1f}, 1).to("CPU").realize(), hi = Tensor.of(new float[]{6f}, 1).to("CPU").realize();
        Function<Tensor, Tensor> epilogue = y -> y.add(bias).clamp(lo, hi);
        Tensor sums = x.conv2d(w, null).realize();
        try (ExecutionPlan plan = epilogue.apply(x.conv2d(w, null)).prepare()) {
            assertThat(plan.kernels().getFirst().source()).contains("packed GEMM").contains("with the bounds read when the run begins");
            for (float upper : new float[]{6f, 0.25f, 0f, Float.NaN, 6f}) {
                hi.buffer().setDouble(0, upper);
                plan.execute();
                float[] fused = floats(plan.outputBuffer()), separate = epilogue.apply(sums).toFloatArray();
                for (int i = 0; i < fused.length; i++) {
                    assertThat(Float.floatToIntBits(fused[i])).as("upper " + upper + ", element " + i + " (" + fused[i] + " vs " + separate[i] + ")")
                            .isEqualTo(Float.floatToIntBits(separate[i]));
                }
            }
        }
    }

    static float[] floats(dev.kiln.runtime.Buffer b) {
        float[] out = new float[(int) b.count()];
        for (int i = 0; i < out.length; i++) out[i] = (float) b.getDouble(i);
        return out;
    }

    static float[] interp(Tensor t) {
        Device interp = DeviceRegistry.get("INTERP");
        return floats(interp.realize(t.uop(), java.util.Map.of()));
    }
}

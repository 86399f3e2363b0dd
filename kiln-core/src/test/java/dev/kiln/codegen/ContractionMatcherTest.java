package dev.kiln.codegen;

import dev.kiln.Tensor;
import dev.kiln.codegen.Contraction.Role;
import dev.kiln.schedule.Schedule;
import dev.kiln.schedule.ScheduleItem;
import dev.kiln.schedule.Scheduler;
import dev.kiln.testing.TestGraphs;
import dev.kiln.types.DType;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.function.Supplier;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The contraction a kernel is recognised as computes the kernel: the sums of the {@link Contraction} (evaluated
 * naively, in the kernel's order of k, so bit for bit) followed by the epilogue equal the kernel's own loops
 * ({@link KernelEvaluator}) on random data. A wrong stride, offset, gate or role changes some element.
 */
class ContractionMatcherTest {
    static Stream<Arguments> contractions() {
        Tensor a = TestGraphs.data(1, 64, 32), b = TestGraphs.data(2, 32, 48), bias = TestGraphs.data(3, 48);
        Tensor w = TestGraphs.data(4, 48, 32);
        Tensor x = TestGraphs.data(5, 1, 8, 10, 10), k3 = TestGraphs.data(6, 16, 8, 3, 3), cb = TestGraphs.data(7, 16);
        Tensor x2 = TestGraphs.data(8, 2, 8, 9, 11), x3 = TestGraphs.data(14, 2, 16, 9, 11), k1 = TestGraphs.data(9, 32, 16, 1, 1), kg = TestGraphs.data(10, 32, 4, 3, 3);
        Tensor q = TestGraphs.data(11, 4, 32, 16), kk = TestGraphs.data(12, 4, 16, 40), res = TestGraphs.data(13, 64, 48);
        Tensor xd = TestGraphs.data(15, 1, 16, 24, 24), xd2 = TestGraphs.data(16, 1, 16, 48, 48), kd = TestGraphs.data(17, 16, 1, 3, 3);
        Tensor db = TestGraphs.data(18, 16);
        // grouped-query attention's probabilities times values, the heads and their groups merged into the output's rows
        Tensor probs = TestGraphs.data(19, 2, 4, 32, 64), values = TestGraphs.data(20, 64, 2 * 16);
        Tensor v4 = values.reshape(64, 2, 16).permute(1, 0, 2).unsqueeze(1);
        Tensor row = TestGraphs.data(21, 1, 1024), fc = TestGraphs.data(22, 64, 1024), fcBias = TestGraphs.data(23, 64);
        return Stream.of(
                Arguments.of("a classifier at batch 1: x times W transposed + bias (dot products)",
                        (Supplier<Tensor>) () -> row.matmul(fc.transpose(0, 1)).add(fcBias), 1, 64, 1024, 1),
                Arguments.of("attention values, heads merged: (v // 64, (v // 16) % 4, v % 16)",
                        (Supplier<Tensor>) () -> probs.matmul(v4).permute(2, 0, 1, 3).reshape(32, 128), 128, 16, 64, 2),
                Arguments.of("matmul", (Supplier<Tensor>) () -> a.matmul(b), 64, 48, 32, 1),
                Arguments.of("linear + bias + relu", (Supplier<Tensor>) () -> a.matmul(b).add(bias).relu(), 64, 48, 32, 1),
                Arguments.of("x times W transposed", (Supplier<Tensor>) () -> a.matmul(w.transpose(0, 1)), 64, 48, 32, 1),
                Arguments.of("matmul + residual", (Supplier<Tensor>) () -> a.matmul(b).add(res), 64, 48, 32, 1),
                Arguments.of("batched matmul", (Supplier<Tensor>) () -> q.matmul(kk), 32, 40, 16, 4),
                Arguments.of("conv 3x3 pad 1 + bias + relu", (Supplier<Tensor>) () -> x.conv2d(k3, cb, null, new int[]{1, 1}, null, 1).relu(), 16, 100, 72, 1),
                Arguments.of("conv 3x3 stride 2 pad 1, batch 2", (Supplier<Tensor>) () -> x2.conv2d(k3, null, new int[]{2, 2}, new int[]{1, 1}, null, 1), 16, 60, 72, 1),
                Arguments.of("conv 3x3 dilation 2 pad 2", (Supplier<Tensor>) () -> x.conv2d(k3, null, null, new int[]{2, 2}, new int[]{2, 2}, 1), 16, 100, 72, 1),
                Arguments.of("conv 1x1, batch 2", (Supplier<Tensor>) () -> x3.conv2d(k1, null), 32, 198, 16, 1),
                Arguments.of("grouped conv", (Supplier<Tensor>) () -> x.conv2d(kg, null, null, new int[]{1, 1}, null, 2), 16, 100, 36, 2),
                Arguments.of("depthwise 3x3 pad 1 + bias + relu6 (a stencil)",
                        (Supplier<Tensor>) () -> xd.conv2d(kd, db, null, new int[]{1, 1}, null, 16).relu6(), 1, 576, 9, 16),
                Arguments.of("depthwise 3x3 stride 2 (a stencil)",
                        (Supplier<Tensor>) () -> xd2.conv2d(kd, null, new int[]{2, 2}, new int[]{1, 1}, null, 16), 1, 576, 9, 16));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("contractions")
    void recognisedContractionComputesTheKernelBitForBit(String name, Supplier<Tensor> graph, int m, int n, int k, int batch) {
        KernelProgram program = onlyContraction(graph.get());
        ContractionMatcher.Match match = ContractionMatcher.match(program).orElseThrow(() -> new AssertionError(name + " not recognised:\n" + ProgramText.render(program)));
        Contraction c = match.contraction();
        assertThat(List.of(c.extent(Role.M), c.extent(Role.N), c.extent(Role.K), c.extent(Role.BATCH)))
                .as(name + ": M, N, K, batch of " + c).containsExactly((long) m, (long) n, (long) k, (long) batch);
        try (Arena arena = Arena.ofConfined()) {
            List<MemorySegment> expected = buffers(program, arena), actual = new ArrayList<>();
            for (MemorySegment s : expected) actual.add(arena.allocate(s.byteSize()).copyFrom(s));
            KernelEvaluator.run(program, expected, Map.of());
            ContractionReference.sums(c, actual.toArray(MemorySegment[]::new), new long[0]);
            KernelEvaluator.run(match.epilogue(), actual, Map.of());
            TestGraphs.assertSameBits(name, DType.F32, program.sizes().getFirst(), expected.getFirst(), actual.getFirst());
        }
    }

    @Test
    void fewRowsAreAStencilOrDotProductsElseAGemm() {
        Tensor xd = TestGraphs.data(1, 1, 16, 24, 24), kd = TestGraphs.data(2, 16, 1, 3, 3), k3 = TestGraphs.data(3, 16, 16, 3, 3);
        assertThat(match(xd.conv2d(kd, null, null, new int[]{1, 1}, null, 16)).orElseThrow().kind()).isEqualTo(ContractionMatcher.Kind.STENCIL);
        assertThat(match(xd.conv2d(k3, null, null, new int[]{1, 1}, null, 1)).orElseThrow().kind()).isEqualTo(ContractionMatcher.Kind.GEMM);
        // a vector-matrix product: one row, but K = 512 is no window, and W's columns are not contiguous along K
        assertThat(match(TestGraphs.data(4, 1, 512).matmul(TestGraphs.data(5, 512, 256)))).isEmpty();
        // with W transposed (a classifier, ONNX Gemm's transB) each output is a dot product along contiguous rows
        assertThat(match(TestGraphs.data(4, 1, 512).matmul(TestGraphs.data(6, 256, 512).transpose(0, 1))).orElseThrow().kind())
                .isEqualTo(ContractionMatcher.Kind.DOTS);
        // but not when the sums are short: K = 128 keeps its loops
        assertThat(match(TestGraphs.data(4, 1, 128).matmul(TestGraphs.data(7, 1024, 128).transpose(0, 1)))).isEmpty();
    }

    @Test
    void epilogueIsIdentityOnlyWhenTheKernelStoresTheSums() {
        Tensor a = TestGraphs.data(1, 64, 32), b = TestGraphs.data(2, 32, 48);
        assertThat(ContractionMatcher.match(onlyContraction(a.matmul(b))).orElseThrow().identity()).isTrue();
        assertThat(ContractionMatcher.match(onlyContraction(a.matmul(b).relu())).orElseThrow().identity()).isFalse();
    }

    @Test
    void otherKernelsAreNotContractions() {
        Tensor x = TestGraphs.data(1, 1, 8, 10, 10), dw = TestGraphs.data(2, 8, 1, 3, 3), a = TestGraphs.data(3, 64, 32);
        assertThat(match(x.conv2d(dw, null, null, new int[]{1, 1}, null, 8))).as("depthwise: one row per channel").isEmpty();
        assertThat(match(a.sum(1))).as("a plain sum").isEmpty();
        assertThat(match(a.mul(a).sum(1))).as("a sum of squares: M is 1").isEmpty();
        assertThat(match(a.exp().add(1))).as("elementwise").isEmpty();
        assertThat(match(TestGraphs.data(4, 4, 8).matmul(TestGraphs.data(5, 8, 4)))).as("too small to pay for packing").isEmpty();
        Tensor i = Tensor.of(DType.I32, new long[64 * 32], 64, 32).realize();
        assertThat(match(i.matmul(i.transpose(0, 1)))).as("integers").isEmpty();
    }

    private static Optional<ContractionMatcher.Match> match(Tensor t) {
        Schedule s = Scheduler.schedule(List.of(t.uop()));
        ScheduleItem.Kernel last = null;
        for (ScheduleItem item : s.items()) if (item instanceof ScheduleItem.Kernel k) last = k;
        return ContractionMatcher.match(KernelLowering.lower(last.output(), last.inputs(), "k"));
    }

    /** The one kernel of {@code t} with a reduction (its inputs are realised). */
    private static KernelProgram onlyContraction(Tensor t) {
        Schedule s = Scheduler.schedule(List.of(t.uop()));
        List<KernelProgram> kernels = new ArrayList<>();
        for (ScheduleItem item : s.items()) if (item instanceof ScheduleItem.Kernel k) kernels.add(KernelLowering.lower(k.output(), k.inputs(), "k"));
        assertThat(kernels).as("kernels of the graph").hasSize(1);
        return kernels.getFirst();
    }

    /** A buffer of random values for each of {@code p}'s parameters (seeded). */
    static List<MemorySegment> buffers(KernelProgram p, Arena arena) {
        java.util.Random random = new java.util.Random(42);
        List<MemorySegment> out = new ArrayList<>();
        for (long size : p.sizes()) {
            MemorySegment s = arena.allocate(ValueLayout.JAVA_FLOAT, Math.max(1, size));
            for (long i = 0; i < size; i++) s.setAtIndex(ValueLayout.JAVA_FLOAT, i, (float) random.nextGaussian());
            out.add(s);
        }
        return out;
    }
}

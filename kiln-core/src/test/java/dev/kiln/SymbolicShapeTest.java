package dev.kiln;

import dev.kiln.types.Variable;
import dev.kiln.types.Shape;
import dev.kiln.types.DType;
import dev.kiln.codegen.Stmt;
import dev.kiln.models.SmallModels;
import dev.kiln.runtime.ExecutionPlan;
import dev.kiln.runtime.PreparedKernel;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.Arrays;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.within;

/**
 * Symbolic dimensions: one plan serves every size up to the maximum, kernels loop only to the size, and
 * rows past it are never read (the tests fill them with NaN, which would spread into any result that
 * read them).
 */
class SymbolicShapeTest {
    private static final ValueLayout.OfFloat F = ValueLayout.JAVA_FLOAT;
    private static final int T = 16, D = 8;

    private static void assumeAvailable(String device) { dev.kiln.testing.DeviceAssumptions.assumeAvailable(device, "symbolic shape tests"); }

    private static float[] data(int n, long seed) {
        float[] out = new float[n];
        for (int i = 0; i < n; i++) out[i] = (float) Math.sin(seed * 31 + i * 0.37);
        return out;
    }

    @ParameterizedTest
    @ValueSource(strings = {"INTERP", "CPU", "CLANG"})
    void aTransformerBlockServesEverySequenceLengthFromOnePlan(String device) {
        assumeAvailable(device);
        Variable seq = new Variable("seq", 1, T);
        Tensor input = Tensor.zeros(1, T, D).to(device).contiguous().realize();
        Tensor x = input.withSymbolicDim(1, seq);
        assertThat(x.shape()).hasToString("[1, seq<=16, 8]");
        Tensor y = SmallModels.transformerBlock(x, 2);
        assertThat(y.shape().variable(1)).isEqualTo(seq);
        MemorySegment in = input.buffer().segment();
        try (ExecutionPlan plan = y.prepare()) {
            assertThat(plan.variables()).contains(seq);
            for (int s = 1; s <= T; s++) {
                float[] rows = data(s * D, s);
                float[] padded = new float[T * D];
                Arrays.fill(padded, Float.NaN);
                System.arraycopy(rows, 0, padded, 0, rows.length);
                MemorySegment.copy(padded, 0, in, F, 0, padded.length);
                plan.executeWithVars(Map.of("seq", (long) s));
                float[] got = new float[s * D];
                MemorySegment.copy(plan.outputBuffer().segment(), F, 0, got, 0, got.length);
                float[] want = SmallModels.transformerBlock(Tensor.of(rows, 1, s, D).to("INTERP"), 2).toFloatArray();
                for (int i = 0; i < want.length; i++) {
                    assertThat(got[i]).as("%s seq %d element %d", device, s, i).isCloseTo(want[i], within(1e-4f + 1e-4f * Math.abs(want[i])));
                }
            }
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"CPU", "CLANG"})
    void kernelsLoopOnlyToTheSize(String device) {
        assumeAvailable(device);
        Variable n = new Variable("n", 0, 64);
        Tensor input = Tensor.zeros(64, 4).to(device).contiguous().realize();
        Tensor y = input.withSymbolicDim(0, n).exp().sum(new int[] {1}, true).add(1);
        try (ExecutionPlan plan = y.prepare()) {
            PreparedKernel k = plan.kernels().getLast();
            Stmt.Loop outer = (Stmt.Loop) k.program().body().body().getFirst();
            assertThat(outer.limit()).isEqualTo(n);
            plan.outputBuffer().segment().fill((byte) 0);
            plan.executeWithVars(Map.of("n", 5L));
            float[] out = new float[64];
            MemorySegment.copy(plan.outputBuffer().segment(), F, 0, out, 0, 64);
            for (int i = 0; i < 64; i++) assertThat(out[i]).as("row %d", i).isEqualTo(i < 5 ? 5f : 0f);
            plan.executeWithVars(Map.of("n", 0L)); // nothing to compute
            assertThatThrownBy(() -> plan.executeWithVars(Map.of("n", 65L))).isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("'n'").hasMessageContaining("[0, 64]");
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"INTERP", "CPU"})
    void reductionsOverASymbolicAxisCountOnlyTheRows(String device) {
        Variable n = new Variable("n", 1, 8);
        Tensor input = Tensor.of(data(32, 3), 8, 4).to(device).contiguous().realize();
        Tensor x = input.withSymbolicDim(0, n);
        Tensor stats = Tensor.stack(0, x.mean(0), x.var(0), x.max(0), x.softmax(0).sum(0));
        try (ExecutionPlan plan = stats.prepare()) {
            for (int s = 1; s <= 8; s++) {
                plan.executeWithVars(Map.of("n", (long) s));
                float[] got = new float[16];
                MemorySegment.copy(plan.outputBuffer().segment(), F, 0, got, 0, 16);
                Tensor exact = Tensor.of(Arrays.copyOf(data(32, 3), s * 4), s, 4).to("INTERP");
                float[] want = Tensor.stack(0, exact.mean(0), exact.var(0), exact.max(0), exact.softmax(0).sum(0)).toFloatArray();
                for (int i = 0; i < 16; i++) {
                    if (Float.isNaN(want[i])) assertThat(got[i]).as("n %d element %d", s, i).isNaN();
                    else assertThat(got[i]).as("n %d element %d", s, i).isCloseTo(want[i], within(1e-5f));
                }
            }
        }
    }

    @Test
    void shapesWithVariablesPrintCompareAndCarry() {
        Variable s = new Variable("s", 1, 10);
        Shape a = Shape.symbolic(2, s, 3);
        assertThat(a.dim(1)).isEqualTo(10);
        assertThat(a.numel()).isEqualTo(60);
        assertThat(a).isNotEqualTo(Shape.of(2, 10, 3)).isEqualTo(Shape.symbolic(2, s, 3));
        assertThat(a.maxShape()).isEqualTo(Shape.of(2, 10, 3));
        assertThat(a.reshaped(2, 10, 3, 1)).isEqualTo(Shape.symbolic(2, s, 3, 1));
        assertThat(Shape.symbolic(s, 6).reshaped(10, 2, 3)).isEqualTo(Shape.symbolic(s, 2, 3));
        assertThat(a.permute(1, 0, 2)).isEqualTo(Shape.symbolic(s, 2, 3));
    }

    @Test
    void operationsThatWouldReadPastTheSizeAreRejected() {
        Variable s = new Variable("s", 1, 10), t = new Variable("t", 1, 10);
        Tensor x = Tensor.zeros(10, 4).realize().withSymbolicDim(0, s);
        assertThatThrownBy(() -> x.reshape(40)).isInstanceOf(IllegalArgumentException.class).hasMessageContaining("symbolic axis 0 (s)");
        assertThatThrownBy(() -> x.reshape(5, 8)).isInstanceOf(IllegalArgumentException.class).hasMessageContaining("merge or split");
        assertThatThrownBy(() -> x.pad(new int[][] {{1, 0}, {0, 0}})).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("symbolic axis 0");
        assertThatThrownBy(() -> x.flip(0)).isInstanceOf(IllegalArgumentException.class).hasMessageContaining("symbolic axis 0");
        Tensor other = Tensor.zeros(10, 4).realize().withSymbolicDim(0, t);
        assertThatThrownBy(() -> x.add(other)).isInstanceOf(IllegalArgumentException.class).hasMessageContaining("symbolic sizes s and t");
        assertThatThrownBy(() -> Tensor.zeros(9, 4).realize().withSymbolicDim(0, s)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("maximum 10");
        assertThatThrownBy(() -> x.withSymbolicDim(0, t)).isInstanceOf(IllegalArgumentException.class).hasMessageContaining("already symbolic");
    }

    @Test
    void aFixedTableTakesTheVariableOfTheAxisItMeets() {
        Variable s = new Variable("s", 1, 4);
        Tensor x = Tensor.ones(4, 3).contiguous().realize().withSymbolicDim(0, s);
        Tensor table = Tensor.arange(4).cast(DType.F32).reshape(4, 1); // laid out for the maximum
        Tensor y = x.mul(table);
        assertThat(y.shape()).isEqualTo(Shape.symbolic(s, 3));
        try (ExecutionPlan plan = y.prepare()) {
            plan.executeWithVars(Map.of("s", 3L));
            float[] got = new float[9];
            MemorySegment.copy(plan.outputBuffer().segment(), F, 0, got, 0, 9);
            assertThat(got).containsExactly(0, 0, 0, 1, 1, 1, 2, 2, 2);
        }
    }
}

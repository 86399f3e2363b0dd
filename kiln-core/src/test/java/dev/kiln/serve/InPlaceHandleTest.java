package dev.kiln.serve;

import dev.kiln.Tensor;
import dev.kiln.types.DType;
import dev.kiln.types.Variable;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * A graph that writes one of its inputs in place ({@link Tensor#assign} on a graph input): a handle the graph updates
 * itself, as a KV cache is, with no output fed back; with a symbolic first axis only the rows below its variable.
 */
class InPlaceHandleTest {

    @ParameterizedTest
    @ValueSource(strings = {"INTERP", "CPU", "CLANG"})
    void aRunUpdatesTheInputInPlace(String device) {
        dev.kiln.testing.DeviceAssumptions.assumeAvailable(device, "in-place handle tests");
        Graph g = new Graph();
        Tensor acc = g.input("acc", DType.F32, 4), x = g.input("x", DType.F32, 4);
        Tensor updated = acc.assign(acc.add(x));
        g.outputs(updated.mul(2.0));
        try (CompiledGraph c = Session.on(device).compile(g)) {
            c.bindHandle("acc", new float[4]);
            for (int run = 1; run <= 3; run++) {
                float[] y = c.run(Map.of("x", new float[] {1, 2, 3, 4})).getFirst();
                assertThat(y).containsExactly(2f * run, 4f * run, 6f * run, 8f * run);
            }
            assertThat(c.readHandle("acc")).containsExactly(3, 6, 9, 12);
        }
    }

    /** Rows past the symbolic axis's value are neither computed nor written: they keep what they held. */
    @ParameterizedTest
    @ValueSource(strings = {"INTERP", "CPU"})
    void onlyTheActiveRowsAreWritten(String device) {
        Variable n = new Variable("n", 1, 4);
        Graph g = new Graph();
        Tensor rows = g.input("rows", DType.F32, 4, 2);
        Tensor active = rows.withSymbolicDim(0, n);
        Tensor updated = active.assign(active.add(1.0));
        g.outputs(updated.sum());
        try (CompiledGraph c = Session.on(device).compile(g)) {
            c.bindHandle("rows", new float[] {0, 0, 10, 10, 20, 20, 30, 30});
            c.setVariable("n", 2);
            float[] total = c.run(Map.of()).getFirst();
            assertThat(total).containsExactly(1 + 1 + 11 + 11);
            assertThat(c.readHandle("rows")).containsExactly(1, 1, 11, 11, 20, 20, 30, 30);
        }
    }
    /**
     * A handle's first elements copied into another graph's handle in place (a sequence moved between graphs): the rest of
     * the target keeps what it held; a dtype or size that does not match, or an unbound handle, is refused naming both.
     */
    @ParameterizedTest
    @ValueSource(strings = {"INTERP", "CPU"})
    void copyHandleMovesTheFirstElementsBetweenGraphs(String device) {
        Graph g = new Graph();
        Tensor acc = g.input("acc", DType.F32, 3, 2);
        g.outputs(acc.assign(acc.add(1.0)).sum());
        Graph h = new Graph();
        Tensor other = h.input("kv", DType.F32, 4, 2), half = h.input("half", DType.F16, 4, 2);
        h.outputs(other.add(half.cast(DType.F32)).sum());
        try (CompiledGraph a = Session.on(device).compile(g); CompiledGraph b = Session.on(device).compile(h)) {
            a.bindHandle("acc", new float[] {0, 1, 2, 3, 4, 5});
            a.run(Map.of());
            b.bindHandle("kv", new float[] {-1, -1, -1, -1, -1, -1, -1, -1});
            b.bindHandle("half", new float[8]);
            b.copyHandle("kv", a, "acc", 4);
            assertThat(b.readHandle("kv")).containsExactly(1, 2, 3, 4, -1, -1, -1, -1);
            assertThat(a.readHandle("acc")).containsExactly(1, 2, 3, 4, 5, 6);
            assertThatThrownBy(() -> b.copyHandle("half", a, "acc", 2)).isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("'acc' is f32").hasMessageContaining("'half' is f16");
            assertThatThrownBy(() -> b.copyHandle("kv", a, "acc", 7)).isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("7 elements");
            assertThatThrownBy(() -> a.copyHandle("acc", b, "nope", 1)).isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("no handle 'nope' is bound");
        }
    }
}

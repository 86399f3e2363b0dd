package dev.kiln.serve;

import dev.kiln.types.DType;
import dev.kiln.Tensor;
import org.junit.jupiter.api.Test;

import java.lang.foreign.MemorySegment;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import static dev.kiln.serve.ServeFixtures.compiledMlp;
import static dev.kiln.serve.ServeFixtures.data;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** Bad input to the serving API: typed exceptions naming the thing, the expected and the given. */
class CompiledGraphErrorsTest {
    private static final Session CPU = Session.on("CPU");

    @Test
    void graphDeclarationErrors() {
        Graph g = new Graph();
        g.input("x", DType.F32, 2);
        assertThatThrownBy(() -> g.input("x", DType.F32, 3)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("input: name 'x' is already declared as input x: f32[2]");
        assertThatThrownBy(() -> g.param("x", DType.F32, 3)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("param: name 'x' is already declared");
        assertThatThrownBy(() -> g.param("w", DType.Q8_0, 32)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("packed dtype q8_0").hasMessageContaining("setParamTyped");
        assertThatThrownBy(() -> g.input(" ", DType.F32, 1)).isInstanceOf(IllegalArgumentException.class).hasMessageContaining("blank");
        assertThatThrownBy(() -> g.tensor("y")).isInstanceOf(IllegalArgumentException.class).hasMessageContaining("'y'").hasMessageContaining("[x]");
        assertThatThrownBy(() -> CPU.compile(g)).isInstanceOf(IllegalStateException.class).hasMessageContaining("no outputs");
        assertThatThrownBy(g::outputs).isInstanceOf(IllegalArgumentException.class).hasMessageContaining("at least one output");
        g.outputs(g.tensor("x").mul(2));
        assertThatThrownBy(() -> g.outputs(g.tensor("x"))).isInstanceOf(IllegalStateException.class).hasMessageContaining("already fixed");
    }

    @Test
    void placeholdersHaveNoDataOutsideACompiledGraph() {
        Graph g = new Graph();
        Tensor x = g.input("x", DType.F32, 2);
        assertThatThrownBy(() -> x.add(1).toFloatArray()).hasMessageContaining("input 'x' is a graph placeholder with no data");
    }

    @Test
    void anOutputMayNotReadAnotherGraphsInput() {
        Graph other = new Graph();
        Tensor y = other.input("y", DType.F32, 2);
        Graph g = new Graph();
        Tensor x = g.input("x", DType.F32, 2);
        g.outputs(x.add(y));
        assertThatThrownBy(() -> CPU.compile(g)).isInstanceOf(IllegalArgumentException.class).hasMessageContaining("input 'y' of another graph");
    }

    @Test
    void unknownNamesListTheKnownOnes() {
        try (CompiledGraph c = compiledMlp(CPU)) {
            assertThatThrownBy(() -> c.run(Map.of("z", new float[8]))).isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("run: unknown input 'z'").hasMessageContaining("[x: f32[2, 4]]");
            assertThatThrownBy(() -> c.run(Map.of("w1", new float[32]))).isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("'w1' is a param: set it with setParam");
            assertThatThrownBy(() -> c.setParam("w9", new float[1])).isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("setParam: unknown param 'w9'").hasMessageContaining("w1: f32[4, 8]").hasMessageContaining("w2: f32[8, 3]");
            assertThatThrownBy(() -> c.setParam("x", new float[8])).isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("'x' is an input");
            assertThatThrownBy(() -> c.bindHandle("kv", new float[1])).isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("bindHandle: unknown input 'kv'").hasMessageContaining("[x: f32[2, 4]]");
            assertThatThrownBy(() -> c.readHandle("x")).isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("readHandle: no handle 'x' is bound; bound handles are []");
            assertThatThrownBy(() -> c.setHandleFeed("x", 0)).isInstanceOf(IllegalArgumentException.class).hasMessageContaining("no handle 'x'");
            assertThatThrownBy(() -> c.runTyped(Map.of("q", TypedValues.of(DType.F32, 1)))).isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("runTyped: unknown input 'q'");
        }
    }

    @Test
    void wrongLengthsNameExpectedAndGiven() {
        try (CompiledGraph c = compiledMlp(CPU)) {
            assertThatThrownBy(() -> c.run(Map.of("x", new float[7]))).isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("run: input 'x' (f32[2, 4]) expects 8 values, got 7");
            assertThatThrownBy(() -> c.setParam("b1", new float[9])).isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("setParam: param 'b1' (f32[8]) expects 8 values, got 9");
            assertThatThrownBy(() -> c.setParam("b1", MemorySegment.ofArray(new byte[31]))).isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("expects 32 bytes, got 31");
            assertThatThrownBy(() -> c.runSlots(new float[][] {new float[8], new float[8]})).isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("runSlots: expects 1 inputs").hasMessageContaining("got 2");
            assertThatThrownBy(() -> c.runSlots(new float[][] {new float[3]})).isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("runSlots: input 'x' (f32[2, 4]) expects 8 values, got 3");
            assertThatThrownBy(() -> c.runSlots(new float[][] {null})).isInstanceOf(IllegalArgumentException.class).hasMessageContaining("is null");
            assertThatThrownBy(() -> c.run(Map.of())).isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("run: missing inputs [x: f32[2, 4]]");
            assertThatThrownBy(() -> c.runTyped(Map.of("x", new TypedValues(DType.F32, new byte[12])))).isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("runTyped: input 'x' (f32[2, 4]) expects 32 bytes of f32 (8 values), got 12");
            assertThatThrownBy(() -> c.setParamTyped("b1", new byte[34], DType.Q8_0)).isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("param 'b1' (f32[8]) has 8 values, not a whole number of q8_0 blocks of 32");
        }
    }

    @Test
    void wrongDtypesAreRefused() {
        Graph g = new Graph();
        Tensor i = g.input("i", DType.I32, 4);
        Tensor w = g.param("w", DType.I8, 32);
        g.outputs(i.add(w.sum().cast(DType.I32)));
        try (CompiledGraph c = CPU.compile(g)) {
            assertThatThrownBy(() -> c.runTyped(Map.of("i", TypedValues.of(DType.F32, 1, 2, 3, 4)))).isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("runTyped: input 'i' is i32, given f32 values");
            assertThatThrownBy(() -> c.setParamTyped("w", new byte[32 * 2], DType.F16)).isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("setParamTyped: param 'w' is i8, given f16 bytes");
            assertThatThrownBy(() -> c.setParamTyped("w", new byte[34], DType.Q8_0)).isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("param 'w' is i8; packed q8_0 weights dequantise into a float param only");
        }
    }

    @Test
    void handlesOfTheWrongSizeOrFeedAreRefused() {
        Graph g = new Graph();
        Tensor s = g.input("s", DType.F32, 4);
        Tensor x = g.input("x", DType.F32, 4);
        g.outputs(s.add(x), s.sum(), s.add(x).cast(DType.I32));
        try (CompiledGraph c = CPU.compile(g)) {
            assertThatThrownBy(() -> c.bindHandle("s", new float[5])).isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("bindHandle: handle 's' has 5 values, input 's' (f32[4]) holds 4");
            assertThat(c.hasHandle("s")).isFalse();
            c.bindHandle("s", new float[4]);
            assertThatThrownBy(() -> c.setHandleFeed("s", 1)).isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("output 1 (f32[]) cannot feed handle 's' (f32[4])");
            assertThatThrownBy(() -> c.setHandleFeed("s", 2)).isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("output 2 (i32[4]) cannot feed handle 's' (f32[4])");
            assertThatThrownBy(() -> c.setHandleFeed("s", 3)).isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("output 3 does not exist; the graph has 3 outputs");
            assertThatThrownBy(() -> c.runFeedHandle(Map.of("x", new float[4]), "s", 1)).isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("runFeedHandle: output 1");
            Map<String, float[]> both = new HashMap<>();
            both.put("s", new float[4]);
            both.put("x", new float[4]);
            assertThatThrownBy(() -> c.run(both)).isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("input 's' is bound to a handle");
            assertThatThrownBy(() -> c.runSlots(new float[][] {new float[4], new float[4]})).isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("runSlots: input 0 's' is bound to a handle; pass null");
        }
    }

    @Test
    void unsetParamsAndReplicaWritesAreStateErrors() {
        try (CompiledGraph c = CPU.compile(ServeFixtures.mlp())) {
            c.setParam("w1", new float[32]);
            assertThatThrownBy(() -> c.run(Map.of("x", new float[8]))).isInstanceOf(IllegalStateException.class)
                    .hasMessageContaining("run: params never set: [b1, w2]");
            assertThatThrownBy(() -> c.commitNoWait(Map.of("x", new float[8]))).isInstanceOf(IllegalStateException.class)
                    .hasMessageContaining("params never set");
        }
        try (CompiledGraph c = compiledMlp(CPU); CompiledGraph r = c.copy()) {
            assertThatThrownBy(() -> r.setParam("b1", new float[8])).isInstanceOf(IllegalStateException.class)
                    .hasMessageContaining("param 'b1' is shared read-only with the graph this replica was copied from");
        }
    }

    @Test
    void aBadCallWritesNothingAndAClosedGraphRefusesEverything() {
        Graph g = new Graph();
        Tensor a = g.input("a", DType.F32, 2);
        Tensor b = g.input("b", DType.F32, 2);
        g.outputs(a.add(b));
        CompiledGraph c = CPU.compile(g);
        assertThat(c.run(Map.of("a", new float[] {1, 2}, "b", new float[] {3, 4})).get(0)).containsExactly(4, 6);
        assertThatThrownBy(() -> c.run(Map.of("a", new float[] {9, 9}, "b", new float[3]))).isInstanceOf(IllegalArgumentException.class);
        float[][] keep = {new float[] {1, 2}, new float[] {3, 4}};
        c.runSlots(keep);
        assertThat(c.run(Map.of("a", new float[] {1, 2}, "b", new float[] {3, 4})).get(0)).containsExactly(4, 6);
        c.close();
        c.close(); // idempotent
        for (Runnable r : List.<Runnable>of(() -> c.run(Map.of()), () -> c.runSlots(keep), c::arena, c::copy, c::syncPending,
                () -> c.setParam("a", new float[2]), () -> c.commitNoWait(Map.of()))) {
            assertThatThrownBy(r::run).isInstanceOf(IllegalStateException.class).hasMessageContaining("compiled graph is closed");
        }
    }

    @Test
    void aDeviceOutsideTheServingApiIsRefused() {
        assertThatThrownBy(() -> Session.on("OFFLINE")).isInstanceOf(UnsupportedOperationException.class).hasMessageContaining("not available");
        assertThatThrownBy(() -> Session.on("NOPE")).isInstanceOf(IllegalArgumentException.class).hasMessageContaining("unknown device 'NOPE'");
        assertThatThrownBy(() -> new CompileOptions(0)).isInstanceOf(IllegalArgumentException.class).hasMessageContaining("stagingSlots must be >= 1, got 0");
    }

    @Test
    void typedValuesNameTheirShortfall() {
        assertThatThrownBy(() -> TypedValues.of(DType.Q4_0, data(31, 1))).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("q4_0 packs blocks of 32 values; 31 values given");
        assertThatThrownBy(() -> new TypedValues(DType.I32, new byte[6]).count()).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("6 bytes are not a whole number of i32 elements (4 bytes each)");
    }
}

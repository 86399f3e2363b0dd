package dev.kiln.serve;

import dev.kiln.types.DType;
import dev.kiln.Tensor;
import dev.kiln.types.Variable;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.List;
import java.util.Map;

import static dev.kiln.serve.ServeFixtures.compiledMlp;
import static dev.kiln.serve.ServeFixtures.data;
import static dev.kiln.serve.ServeFixtures.mlpReference;
import static dev.kiln.serve.ServeFixtures.session;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.within;

/** Behaviour of every CompiledGraph method on every host device. */
class CompiledGraphTest {
    private static final ValueLayout.OfFloat F = ValueLayout.JAVA_FLOAT_UNALIGNED;

    private static void assertClose(float[] actual, float[] expected) {
        assertThat(actual).hasSize(expected.length);
        for (int i = 0; i < expected.length; i++) assertThat(actual[i]).as("element " + i).isCloseTo(expected[i], within(1e-5f + 1e-5f * Math.abs(expected[i])));
    }

    @ParameterizedTest
    @ValueSource(strings = {"INTERP", "CPU", "CLANG"})
    void runReturnsOutputsInDeclaredOrder(String device) {
        try (CompiledGraph c = compiledMlp(session(device))) {
            assertThat(c.inputs()).extracting(TensorSpec::name).containsExactly("x");
            assertThat(c.params()).extracting(TensorSpec::name).containsExactly("w1", "b1", "w2");
            assertThat(c.outputs()).extracting(TensorSpec::toString).containsExactly("output0: f32[2, 3]", "output1: f32[2]");
            for (int run = 0; run < 5; run++) {
                float[] x = data(8, 10 + run);
                List<float[]> out = c.run(Map.of("x", x));
                float[][] ref = mlpReference(x);
                assertClose(out.get(0), ref[0]);
                assertClose(out.get(1), ref[1]);
            }
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"INTERP", "CPU", "CLANG"})
    void paramsCanBeSetFromASegmentAndChangeLaterRuns(String device) {
        try (CompiledGraph c = compiledMlp(session(device)); Arena a = Arena.ofConfined()) {
            float[] x = data(8, 4);
            float[] before = c.run(Map.of("x", x)).get(1);
            MemorySegment zeros = a.allocate(8 * 4);
            c.setParam("b1", zeros);
            float[] after = c.run(Map.of("x", x)).get(1);
            assertThat(after).isNotEqualTo(before);
            c.setParam("b1", ServeFixtures.B1);
            assertThat(c.run(Map.of("x", x)).get(1)).containsExactly(before);
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"INTERP", "CPU", "CLANG"})
    void rawViewsAreReadOnlyAndDieAtTheNextRun(String device) {
        try (CompiledGraph c = compiledMlp(session(device))) {
            float[] x = data(8, 5);
            List<MemorySegment> views = c.runRaw(Map.of("x", x));
            float[][] ref = mlpReference(x);
            assertThat(views).hasSize(2);
            assertThat(views.get(0).isReadOnly()).isTrue();
            assertThat(views.get(0).byteSize()).isEqualTo(6 * 4);
            float[] y = new float[6];
            MemorySegment.copy(views.get(0), F, 0, y, 0, 6);
            assertClose(y, ref[0]);
            // zero-copy: the views are the output block that runSlots' arena() shows, not copies of it
            OutputSlots slots = c.runSlots(new float[][] {x});
            List<MemorySegment> fresh = c.runRaw(Map.of("x", x));
            for (int i = 0; i < 2; i++) {
                assertThat(fresh.get(i).address()).as("output %d", i).isEqualTo(c.arena().address() + slots.offset(i));
            }
            assertThatThrownBy(() -> views.get(0).get(F, 0)).as("a view of an earlier run").isInstanceOf(IllegalStateException.class);
            List<MemorySegment> current = fresh;
            assertThatThrownBy(() -> current.get(0).set(F, 0, 1f)).isInstanceOf(IllegalArgumentException.class).hasMessageContaining("read-only");
            c.run(Map.of("x", x));
            assertThatThrownBy(() -> current.get(0).get(F, 0)).isInstanceOf(IllegalStateException.class);
            assertThatThrownBy(() -> current.get(1).get(F, 0)).isInstanceOf(IllegalStateException.class);
            List<MemorySegment> again = c.runRaw(Map.of("x", x));
            c.close();
            assertThatThrownBy(() -> again.get(0).get(F, 0)).isInstanceOf(IllegalStateException.class);
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"INTERP", "CPU", "CLANG"})
    void slotsPointIntoOneStableArena(String device) {
        try (CompiledGraph c = compiledMlp(session(device))) {
            MemorySegment arena = c.arena();
            assertThat(arena.isReadOnly()).isTrue();
            float[][] in = {data(8, 6)};
            OutputSlots s = c.runSlots(in);
            assertThat(s.count()).isEqualTo(2);
            assertThat(s.length(0)).isEqualTo(6);
            assertThat(s.length(1)).isEqualTo(2);
            assertThat(s.dtype(0)).isEqualTo(DType.F32);
            assertThat(s.offset(1)).isGreaterThanOrEqualTo(s.offset(0) + 6 * 4);
            float[] y = new float[6], hs = new float[2];
            MemorySegment.copy(arena, F, s.offset(0), y, 0, 6);
            MemorySegment.copy(arena, F, s.offset(1), hs, 0, 2);
            float[][] ref = mlpReference(in[0]);
            assertClose(y, ref[0]);
            assertClose(hs, ref[1]);
            in[0] = data(8, 7);
            assertThat(c.runSlots(in)).isSameAs(s);
            assertThat(c.arena()).isSameAs(arena);
            MemorySegment.copy(arena, F, s.offset(0), y, 0, 6);
            assertClose(y, mlpReference(in[0])[0]);
            assertThat(c.run(Map.of("x", in[0])).get(0)).containsExactly(y);
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"INTERP", "CPU", "CLANG"})
    void aReplicaHasItsOwnInputsAndOutputsAndSharesTheWeights(String device) {
        try (CompiledGraph c = compiledMlp(session(device)); CompiledGraph r = c.copy()) {
            assertThat(r.isReplica()).isTrue();
            assertThat(r.plan().kernels()).hasSameSizeAs(c.plan().kernels());
            for (int i = 0; i < c.plan().kernels().size(); i++) {
                assertThat(r.plan().kernels().get(i)).as("kernels are shared, not recompiled").isSameAs(c.plan().kernels().get(i));
            }
            float[] x1 = data(8, 8), x2 = data(8, 9);
            float[] y1 = c.run(Map.of("x", x1)).get(0);
            float[] y2 = r.run(Map.of("x", x2)).get(0);
            assertThat(c.run(Map.of("x", x1)).get(0)).containsExactly(y1);
            assertClose(y2, mlpReference(x2)[0]);
            c.setParam("b1", new float[8]); // the weights are shared: the replica sees the original's change
            assertThat(r.run(Map.of("x", x2)).get(0)).isNotEqualTo(y2);
            CompiledGraph rr = r.copy();
            assertThat(rr.run(Map.of("x", x1)).get(0)).containsExactly(c.run(Map.of("x", x1)).get(0));
            rr.close();
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"INTERP", "CPU", "CLANG"})
    void weightsOutliveTheOriginalWhileAReplicaIsOpen(String device) {
        CompiledGraph c = compiledMlp(session(device));
        CompiledGraph r = c.copy();
        float[] x = data(8, 3);
        float[] y = c.run(Map.of("x", x)).get(0);
        c.close();
        assertThat(r.run(Map.of("x", x)).get(0)).containsExactly(y);
        r.close();
        assertThatThrownBy(() -> r.run(Map.of("x", x))).isInstanceOf(IllegalStateException.class).hasMessageContaining("closed");
    }

    @ParameterizedTest
    @ValueSource(strings = {"INTERP", "CPU", "CLANG"})
    void aHandleIsFedAsItsInputAndUpdatedByItsFeed(String device) {
        // state' = state * decay + x; output0 = state', output1 = state' summed
        Graph g = new Graph();
        Tensor state = g.input("state", DType.F32, 4);
        Tensor x = g.input("x", DType.F32, 4);
        Tensor decay = g.param("decay", DType.F32);
        Tensor next = state.mul(decay).add(x);
        g.outputs(next, next.sum());
        try (CompiledGraph c = session(device).compile(g)) {
            c.setParam("decay", new float[] {0.5f});
            c.bindHandle("state", new float[] {1, 2, 3, 4});
            assertThat(c.hasHandle("state")).isTrue();
            assertThat(c.hasHandle("x")).isFalse();
            // no feed: the handle keeps its value
            assertThat(c.run(Map.of("x", new float[4])).get(0)).containsExactly(0.5f, 1, 1.5f, 2);
            assertThat(c.readHandle("state")).containsExactly(1, 2, 3, 4);
            c.setHandleFeed("state", 0);
            c.run(Map.of("x", new float[] {1, 1, 1, 1}));
            assertThat(c.readHandle("state")).containsExactly(1.5f, 2, 2.5f, 3);
            float[][] in = {null, new float[] {0, 0, 0, 2}};
            c.runSlots(in);
            assertThat(c.readHandle("state")).containsExactly(0.75f, 1, 1.25f, 3.5f);
            c.clearHandleFeed("state");
            c.run(Map.of("x", new float[4]));
            assertThat(c.readHandle("state")).containsExactly(0.75f, 1, 1.25f, 3.5f);
            float[] fed = c.runFeedHandle(Map.of("x", new float[4]), "state", 0);
            assertThat(fed).containsExactly(0.375f, 0.5f, 0.625f, 1.75f);
            assertThat(c.readHandle("state")).containsExactly(fed);
            try (CompiledGraph r = c.copy()) { // a replica starts from a copy of the handle
                assertThat(r.readHandle("state")).containsExactly(fed);
                r.runFeedHandle(Map.of("x", new float[4]), "state", 0);
                assertThat(c.readHandle("state")).containsExactly(fed);
            }
            c.bindHandle("state", new float[] {8, 8, 8, 8});
            assertThat(c.run(Map.of("x", new float[4])).get(1)).containsExactly(16f);
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"INTERP", "CPU", "CLANG"})
    void variablesAreBoundBeforeARun(String device) {
        Variable n = new Variable("n", 1, 8);
        Graph g = new Graph();
        Tensor x = g.input("x", DType.F32, 8);
        g.outputs(Tensor.where(Tensor.arange(8).lt(Tensor.variable(n)), x, 0.0f).sum());
        try (CompiledGraph c = session(device).compile(g)) {
            assertThatThrownBy(() -> c.run(Map.of("x", new float[8]))).isInstanceOf(IllegalStateException.class)
                    .hasMessageContaining("variables without a value: [n]");
            float[] ones = {1, 1, 1, 1, 1, 1, 1, 1};
            for (int v = 1; v <= 8; v++) {
                c.setVariable("n", v);
                assertThat(c.run(Map.of("x", ones)).get(0)).containsExactly((float) v);
            }
            assertThatThrownBy(() -> c.setVariable("n", 9)).isInstanceOf(IllegalArgumentException.class).hasMessageContaining("[1, 8]");
            assertThatThrownBy(() -> c.setVariable("m", 1)).isInstanceOf(IllegalArgumentException.class).hasMessageContaining("n[1, 8]");
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"INTERP", "CPU", "CLANG"})
    void anOutputMayBeAnInputOrAConstant(String device) {
        Graph g = new Graph();
        Tensor x = g.input("x", DType.F32, 3);
        g.outputs(x, Tensor.of(new float[] {1, 2, 3}).add(x));
        try (CompiledGraph c = session(device).compile(g)) {
            List<float[]> out = c.run(Map.of("x", new float[] {4, 5, 6}));
            assertThat(out.get(0)).containsExactly(4, 5, 6);
            assertThat(out.get(1)).containsExactly(5, 7, 9);
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"INTERP", "CPU", "CLANG"})
    void capabilitiesAreTruthful(String device) {
        try (CompiledGraph c = compiledMlp(session(device))) {
            Capabilities caps = c.capabilities();
            assertThat(caps.device().toString()).isEqualTo(device);
            assertThat(caps.supported()).contains(Capability.REPLICAS, Capability.ASYNC_COMMIT, Capability.HANDLES, Capability.DEVICE_RESIDENT_HANDLES,
                    Capability.HOST_READABLE_OUTPUTS, Capability.TYPED_IO, Capability.PACKED_WEIGHTS);
            assertThat(caps.supports(Capability.THREADED_KERNELS)).isEqualTo(!device.equals("INTERP"));
            assertThat(caps.supports(Capability.ACTIVE_EXTENT)).isTrue();
            assertThat(caps.supports(Capability.MOE_RESIDENCY)).isTrue();
            Capabilities without = new Capabilities(caps.device(), java.util.EnumSet.of(Capability.REPLICAS));
            assertThatThrownBy(() -> without.require(Capability.ACTIVE_EXTENT, "setActiveExtent"))
                    .isInstanceOf(UnsupportedCapabilityException.class)
                    .hasMessageContaining("setActiveExtent needs capability ACTIVE_EXTENT, which device " + device + " does not offer")
                    .satisfies(e -> assertThat(((UnsupportedCapabilityException) e).capability()).isEqualTo(Capability.ACTIVE_EXTENT));
        }
    }
}

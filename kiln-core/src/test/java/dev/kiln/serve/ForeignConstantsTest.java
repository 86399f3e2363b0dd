package dev.kiln.serve;

import dev.kiln.Tensor;
import dev.kiln.runtime.DeviceRegistry;
import dev.kiln.types.DType;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A constant of one host device in a graph compiled for another (weights wrapped on the default CPU device, a model
 * compiled for CLANG): read in place, not copied into the compiled graph, while a mutable buffer of another device is
 * still copied. Seen from outside by writing the caller's memory after compiling: a plan reading in place sees it.
 */
class ForeignConstantsTest {
    @Test
    void aHostConstantIsReadInPlaceByAnotherHostDevice() {
        var reason = DeviceRegistry.providers().get("CLANG").unavailableReason();
        Assumptions.assumeTrue(reason.isEmpty(), () -> "CLANG device unavailable: " + reason.orElse(""));
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment weights = arena.allocateFrom(ValueLayout.JAVA_FLOAT, 1f, 2f, 3f);
            Tensor w = Tensor.wrapConstant(weights, DType.F32, 3); // on the default device, CPU
            Tensor copied = Tensor.of(new float[] {10f, 20f, 30f}, 3);  // an ordinary (mutable) CPU tensor
            assertThat(w.device().spec().kind()).isNotEqualTo("CLANG");
            Graph g = new Graph();
            Tensor x = g.input("x", DType.F32, 3);
            g.outputs(x.mul(w).add(copied));
            try (CompiledGraph c = Session.on("CLANG").compile(g)) {
                assertThat(c.run(Map.of("x", new float[] {1f, 1f, 1f})).getFirst()).containsExactly(11f, 22f, 33f);
                weights.setAtIndex(ValueLayout.JAVA_FLOAT, 1, 5f); // the caller's memory, read by the plan as it runs
                List<float[]> out = c.run(Map.of("x", new float[] {1f, 1f, 1f}));
                assertThat(out.getFirst()).containsExactly(11f, 25f, 33f);
            }
        }
    }
}

package dev.kiln.serve;

import dev.kiln.types.DType;
import dev.kiln.serve.moe.MixtureOfExperts;
import dev.kiln.serve.moe.MoeResidencyStats;
import dev.kiln.Tensor;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.util.List;
import java.util.Map;

import static dev.kiln.serve.ServeFixtures.data;
import static dev.kiln.serve.ServeFixtures.session;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** Mixture-of-experts residency, top-k capture and statistics through a compiled graph and its replicas. */
class MoeServingTest {
    private static final int T = 6, D = 8, FF = 16, E = 4, K = 2;

    private static CompiledGraph compile(Session s) {
        Graph g = new Graph();
        Tensor x = g.input("x", DType.F32, T, D);
        Tensor router = g.param("router", DType.F32, D, E);
        Tensor gate = g.param("gate", DType.F32, E, FF, D), up = g.param("up", DType.F32, E, FF, D), down = g.param("down", DType.F32, E, D, FF);
        Tensor h = MixtureOfExperts.layer(x, router, gate, up, down, K);
        g.outputs(MixtureOfExperts.layer(h, router, gate, up, down, K)); // two layers sharing weights
        CompiledGraph c = s.compile(g);
        c.setParam("router", data(D * E, 1));
        c.setParam("gate", data(E * FF * D, 2));
        c.setParam("up", data(E * FF * D, 3));
        c.setParam("down", data(E * D * FF, 4));
        return c;
    }

    @ParameterizedTest
    @ValueSource(strings = {"INTERP", "CPU", "CLANG"})
    void residencyChangesStatisticsNotResults(String device) {
        try (CompiledGraph c = compile(session(device))) {
            Map<String, float[]> in = Map.of("x", data(T * D, 9));
            float[] all = c.run(in).getFirst();
            MoeResidencyStats resident = c.takeMoeResidencyStats().orElseThrow();
            assertThat(resident.layers()).hasSize(2);
            assertThat(resident.hits()).isEqualTo(2L * T * K);
            assertThat(resident.misses()).isZero();

            assertThat(c.enableMoeTopkCapture(E)).isTrue();
            c.setMoeResidentExpertsPerLayer(new boolean[][] {{true, false, true, false}, {false, false, false, false}});
            float[] masked = c.run(in).getFirst();
            assertThat(masked).containsExactly(all);
            MoeResidencyStats stats = c.takeMoeResidencyStats().orElseThrow();
            List<int[]> chosen = c.takeMoeTopkCapture().orElseThrow();
            assertThat(chosen).hasSize(2);
            long misses0 = java.util.Arrays.stream(chosen.get(0)).filter(e -> e == 1 || e == 3).count();
            assertThat(stats.layers().get(0).misses()).isEqualTo(misses0);
            assertThat(stats.layers().get(0).hits()).isEqualTo(T * K - misses0);
            assertThat(stats.layers().get(1).misses()).isEqualTo(T * K);
            assertThat(stats.bytesStaged()).isPositive();
            assertThat(c.takeMoeTopkCapture()).isEmpty();

            c.setMoeResidentExperts(new boolean[E]); // none resident, the same answer
            assertThat(c.run(in).getFirst()).containsExactly(all);
            try (CompiledGraph replica = c.copy()) { // a replica starts with its own state: everything resident
                assertThat(replica.run(in).getFirst()).containsExactly(all);
                assertThat(replica.takeMoeResidencyStats().orElseThrow().misses()).isZero();
            }
            assertThatThrownBy(() -> c.setMoeResidentExperts(new boolean[3])).isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("4").hasMessageContaining("3");
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"CPU"})
    void aGraphWithoutExpertsSaysSo(String device) {
        try (CompiledGraph c = ServeFixtures.compiledMlp(session(device))) {
            assertThat(c.enableMoeTopkCapture(E)).isFalse();
            assertThat(c.takeMoeResidencyStats()).isEmpty();
            assertThatThrownBy(() -> c.setMoeResidentExperts(new boolean[E])).isInstanceOf(IllegalArgumentException.class);
        }
    }
}

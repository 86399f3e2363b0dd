package dev.kiln.serve.moe;

import dev.kiln.Tensor;
import dev.kiln.types.DType;
import dev.kiln.runtime.ExecutionPlan;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** Bad input to the mixture-of-experts layers and their runtime state. */
class MoeErrorsTest {
    static final int D = 4, FF = 6, E = 3;

    static Tensor x = Tensor.zeros(5, D), router = Tensor.zeros(D, E), gate = Tensor.zeros(E, FF, D), up = Tensor.zeros(E, FF, D),
            down = Tensor.zeros(E, D, FF);

    @Test
    void shapesThatDoNotFit() {
        assertThatThrownBy(() -> MixtureOfExperts.layer(Tensor.zeros(5, D + 1), router, gate, up, down, 1))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("mixtureOfExperts: router [4, 3] must be (d, experts) with d = 5 of x [5, 5]");
        assertThatThrownBy(() -> MixtureOfExperts.layer(x, Tensor.zeros(D), gate, up, down, 1))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("router [4] must be (d, experts)");
        assertThatThrownBy(() -> MixtureOfExperts.layer(x, router, gate, Tensor.zeros(E + 1, FF, D), down, 1))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("mixtureOfExperts: up [4, 6, 4] must be (experts, ff, d) = (3, ff, 4)");
        assertThatThrownBy(() -> MixtureOfExperts.layer(x, router, Tensor.zeros(E, FF + 1, D), up, down, 1))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("mixtureOfExperts: gate [3, 7, 4] must match up [3, 6, 4]");
        assertThatThrownBy(() -> MixtureOfExperts.layer(x, router, gate, up, Tensor.zeros(E, FF, D), 1))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("mixtureOfExperts: down [3, 6, 4] must be (experts, d, ff) = (3, 4, 6)");
        assertThatThrownBy(() -> MixtureOfExperts.layer(Tensor.scalar(1.0), router, gate, up, down, 1))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("mixtureOfExperts: x [] needs a feature axis");
    }

    @Test
    void topKOutOfRange() {
        assertThatThrownBy(() -> MixtureOfExperts.layer(x, router, gate, up, down, E + 1))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("mixtureOfExperts: topK 4 out of range 1..3");
        assertThatThrownBy(() -> MixtureOfExperts.mlpLayer(x, router, up, down, 0, true, "relu"))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("mixtureOfExpertsMlp: topK 0 out of range 1..3");
    }

    @Test
    void dtypesAndActivations() {
        assertThatThrownBy(() -> MixtureOfExperts.layer(Tensor.zeros(DType.I32, 5, D), router, gate, up, down, 1))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("must have float dtypes, got i32[5, 4]");
        assertThatThrownBy(() -> MixtureOfExperts.mlpLayer(x, router, up, down, 1, true, "tanh"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("mixtureOfExpertsMlp: unknown activation 'tanh' (expected relu, silu or gelu_tanh)");
    }

    @Test
    void masksOfTheWrongLengthOrCount() {
        Tensor y = MixtureOfExperts.layer(x, router, gate, up, down, 2);
        try (ExecutionPlan plan = Tensor.prepare(y, MixtureOfExperts.layer(y, Tensor.zeros(D, E + 1), Tensor.zeros(E + 1, FF, D),
                Tensor.zeros(E + 1, FF, D), Tensor.zeros(E + 1, D, FF), 1))) {
            assertThatThrownBy(() -> MoeLayers.of(plan).getFirst().setResident(new boolean[E + 2]))
                    .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("setResident: mask has 5 entries, the layer has 3 experts");
            assertThatThrownBy(() -> MoeLayers.setResidentExperts(plan, new boolean[E]))
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("setMoeResidentExperts: mask has 3 entries, MoE layer 1 has 4 experts");
            assertThatThrownBy(() -> MoeLayers.setResidentExpertsPerLayer(plan, new boolean[][] {new boolean[E]}))
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("setMoeResidentExpertsPerLayer: 1 masks given, the graph has 2 MoE layers");
            assertThatThrownBy(() -> MoeLayers.setResidentExpertsPerLayer(plan, new boolean[][] {new boolean[E], new boolean[E]}))
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("setMoeResidentExpertsPerLayer: mask 1 has 3 entries, MoE layer 1 has 4 experts");
            assertThatThrownBy(() -> MoeLayers.enableTopkCapture(plan, E))
                    .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("enableMoeTopkCapture: expected 3 experts, MoE layer 1 has 4");
            // a rejected call changes nothing
            org.assertj.core.api.Assertions.assertThat(MoeLayers.of(plan).getFirst().resident()).containsOnly(true);
            org.assertj.core.api.Assertions.assertThat(MoeLayers.of(plan).getFirst().topkCapture()).isFalse();
        }
        try (ExecutionPlan plan = Tensor.of(1f).neg().prepare()) {
            assertThatThrownBy(() -> MoeLayers.setResidentExperts(plan, new boolean[E]))
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("setMoeResidentExperts: the graph has no mixture-of-experts layer to apply a mask of 3 experts to");
            assertThatThrownBy(() -> plan.customState(0))
                    .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("customState: step 0 of 1 is not a stateful custom function");
        }
    }
}

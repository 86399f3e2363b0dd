package dev.kiln.serve;

import dev.kiln.types.DType;
import dev.kiln.types.Shape;
import dev.kiln.Tensor;
import dev.kiln.types.Variable;
import dev.kiln.models.SmallModels;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.util.List;
import java.util.Map;

import static dev.kiln.serve.ServeFixtures.data;
import static dev.kiln.serve.ServeFixtures.session;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.within;

/** Bucketed dynamic shapes: a power-of-two ladder of graphs with a symbolic sequence axis, run at every length. */
class BucketingTest {
    private static final int D = 8, HEADS = 2;

    /** A causal transformer block over x (1, seq, D), seq symbolic up to {@code upper}, plus a mean over the sequence. */
    static Graph model(int upper) {
        Graph g = new Graph();
        Tensor x = g.input("x", DType.F32, Shape.symbolic(1, new Variable("seq", 1, upper), D));
        Tensor y = SmallModels.transformerBlock(x, HEADS);
        return g.outputs(y, y.mean(1));
    }

    @Test
    void aPowerOfTwoLadderCoversItsRange() {
        try (BucketedCompileCache c = BucketedCompileCache.powerOfTwoLadder(Session.on("CPU"), 8, 256)) {
            assertThat(c.buckets().stream().map(BucketedCompileCache.Bucket::upper)).containsExactly(8, 16, 32, 64, 128, 256);
            assertThat(c.bucketFor(1)).isEqualTo(new BucketedCompileCache.Bucket(1, 8));
            assertThat(c.bucketFor(17)).isEqualTo(new BucketedCompileCache.Bucket(17, 32));
            assertThat(c.bucketFor(256).upper()).isEqualTo(256);
            assertThatThrownBy(() -> c.bucketFor(257)).isInstanceOf(IllegalArgumentException.class).hasMessageContaining("[1, 256]");
            assertThatThrownBy(() -> c.bucketFor(0)).isInstanceOf(IllegalArgumentException.class).hasMessageContaining("extent 0");
        }
        try (BucketedCompileCache c = BucketedCompileCache.powerOfTwoLadder(Session.on("CPU"), 5, 100)) {
            assertThat(c.buckets().stream().map(BucketedCompileCache.Bucket::upper)).containsExactly(8, 16, 32, 64, 128);
        }
        assertThatThrownBy(() -> BucketedCompileCache.powerOfTwoLadder(Session.on("CPU"), 0, 8)).isInstanceOf(IllegalArgumentException.class);
    }

    /** Every length 1..256 through the ladder equals the model computed at exactly that length by INTERP. */
    @ParameterizedTest
    @ValueSource(strings = {"CPU", "CLANG"})
    void everyLengthThroughTheLadderEqualsAnExactSizeRun(String device) {
        try (BucketedCompileCache cache = BucketedCompileCache.powerOfTwoLadder(session(device), 8, 256)) {
            for (int s = 1; s <= 256; s += device.equals("CPU") ? 1 : 5) {
                float[] x = data(s * D, s);
                List<float[]> got = cache.runPadded(s, Map.of("x", x), BucketingTest::model);
                Tensor exact = SmallModels.transformerBlock(Tensor.of(x, 1, s, D).to("INTERP"), HEADS);
                float[][] want = {exact.toFloatArray(), exact.mean(1).toFloatArray()};
                assertThat(got.get(0)).as("length %d", s).hasSize(s * D);
                for (int o = 0; o < 2; o++) {
                    for (int i = 0; i < want[o].length; i++) {
                        assertThat(got.get(o)[i]).as("%s length %d output %d element %d", device, s, o, i)
                                .isCloseTo(want[o][i], within(2e-4f + 2e-4f * Math.abs(want[o][i])));
                    }
                }
            }
        }
    }

    @Test
    void activeExtentErrorsNameWhatIsWrong() {
        try (CompiledGraph g = Session.on("CPU").compile(model(16))) {
            assertThatThrownBy(() -> g.setActiveExtent(4, 32)).isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("compiled at extent 16").hasMessageContaining("upper 32");
            assertThatThrownBy(() -> g.setActiveExtent(0, 16)).isInstanceOf(IllegalArgumentException.class).hasMessageContaining("[1, 16]");
            g.setActiveExtent(3, 16);
            g.clearActiveExtent();
        }
        try (CompiledGraph g = Session.on("CPU").compile(ServeFixtures.mlp())) {
            assertThatThrownBy(() -> g.setActiveExtent(1, 2)).isInstanceOf(IllegalStateException.class).hasMessageContaining("no symbolic axis");
        }
        try (BucketedCompileCache c = BucketedCompileCache.powerOfTwoLadder(Session.on("CPU"), 8, 16)) {
            assertThatThrownBy(() -> c.getOrCompile(3, upper -> ServeFixtures.mlp())).isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("bucket 8").hasMessageContaining("no symbolic axis");
            assertThatThrownBy(() -> c.runPadded(3, Map.of("x", new float[5]), BucketingTest::model)).isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("expects 24 values").hasMessageContaining("got 5");
            assertThatThrownBy(() -> c.runPadded(3, Map.of("y", new float[24]), BucketingTest::model)).isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("unknown input 'y'");
        }
    }

    /** The kernels stop at the active extent: rows past it hold NaN and never reach the active rows. */
    @ParameterizedTest
    @ValueSource(strings = {"INTERP", "CPU", "CLANG"})
    void rowsPastTheActiveExtentAreNeverRead(String device) {
        try (CompiledGraph g = session(device).compile(model(16))) {
            float[] x = new float[16 * D];
            java.util.Arrays.fill(x, Float.NaN);
            System.arraycopy(data(5 * D, 5), 0, x, 0, 5 * D);
            g.setActiveExtent(5, 16);
            List<float[]> out = g.run(Map.of("x", x));
            for (int i = 0; i < 5 * D; i++) assertThat(out.get(0)[i]).as("element %d", i).isFinite();
            for (int i = 0; i < D; i++) assertThat(out.get(1)[i]).as("mean %d", i).isFinite();
        }
    }
}

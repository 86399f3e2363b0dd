package dev.kiln.cpu;

import dev.kiln.Tensor;
import dev.kiln.runtime.ExecutionPlan;
import dev.kiln.runtime.PreparedKernel;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The CPU device computes f32 {@code exp2} with a polynomial helper ({@code exp2f} in the generated
 * class) instead of {@code Math.pow}; it must give INTERP's value, {@code (float) Math.pow(2, x)}, bit for
 * bit. This test takes every 4099th bit pattern (all binades, NaNs and infinities among them), a million
 * values spread over [-126, 128], where the polynomial's error is largest relative to the rounding of
 * the result, and the special values; {@code dev.kiln.bench.Exp2Verifier} checks all 2^32 by hand.
 */
class Exp2Test {
    private static final float[] SPECIAL = {0f, -0f, 1f, -1f, 0.5f, 127f, 127.99999f, 128f, -126f, -126.00001f, -125.99999f, -149f, -150f,
            -150.00002f, -149.99998f, Float.MIN_VALUE, Float.MAX_VALUE, -Float.MAX_VALUE, Float.NaN, Float.POSITIVE_INFINITY, Float.NEGATIVE_INFINITY};

    @Test
    void f32Exp2EqualsTheInterpreterOnEveryBinade() {
        float[] x = inputs(0);
        // an odd count: no vector lanes, the scalar helper on every element
        check(x, "exp2f(", false);
    }

    @Test
    void f32Exp2InVectorLanesEqualsTheInterpreterOnEveryBinade() {
        // a count of whole vectors: the double polynomial in vector lanes, exp2f for the lanes it leaves
        float[] x = inputs(64 - (2 * (1 << 20) + SPECIAL.length) % 64);
        check(x, "exp2fLanes(", true);
    }

    /**
     * Every float whose 2^x is subnormal ([-150, -126), about 1.7 million), where the helper rounds its own value to the
     * subnormal grid instead of calling Math.pow, and the odd count leaves every element to the scalar helper.
     */
    @Test
    void f32Exp2EqualsTheInterpreterForEverySubnormalResult() {
        int from = Float.floatToRawIntBits(-126f) + 1, to = Float.floatToRawIntBits(-150f);
        float[] x = new float[(to - from + 1) | 1];
        for (int i = 0; i < x.length; i++) x[i] = Float.intBitsToFloat(Math.min(to, from + i));
        check(x, "exp2f(", false);
    }

    /** The sample, with {@code extra} more values (zeros and the special values again) at the end. */
    private static float[] inputs(int extra) {
        int sweep = 1 << 20, n = 2 * sweep + SPECIAL.length;
        float[] x = new float[n + extra];
        for (int i = 0; i < sweep; i++) {
            x[i] = Float.intBitsToFloat((int) (i * 4099L));
            x[sweep + i] = -126f + 254f * i / sweep + (float) Math.scalb((double) (i % 977), -30); // off the grid of the steps
        }
        System.arraycopy(SPECIAL, 0, x, 2 * sweep, SPECIAL.length);
        for (int i = 0; i < extra; i++) x[n + i] = SPECIAL[i % SPECIAL.length];
        return x;
    }

    private static void check(float[] x, String marker, boolean vectors) {
        Tensor cpu = Tensor.of(x).to("CPU").exp2();
        try (ExecutionPlan plan = cpu.prepare()) {
            assertThat(plan.kernels()).extracting(PreparedKernel::source).as("the kernel computes exp2 with " + marker)
                    .anyMatch(s -> s.contains(marker) && s.contains("FloatVector") == vectors);
        }
        float[] got = cpu.toFloatArray();
        float[] want = Tensor.of(x).to("INTERP").exp2().toFloatArray();
        for (int i = 0; i < x.length; i++) {
            assertThat(Float.floatToRawIntBits(got[i])).as("exp2(%s) [bits %08x]: %s vs %s", x[i], Float.floatToRawIntBits(x[i]), got[i], want[i])
                    .isEqualTo(Float.floatToRawIntBits(want[i]));
        }
    }
}

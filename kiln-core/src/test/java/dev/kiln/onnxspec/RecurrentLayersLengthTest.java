package dev.kiln.onnxspec;

import dev.kiln.Tensor;
import dev.kiln.runtime.ExecutionPlan;
import dev.kiln.types.DType;
import org.junit.jupiter.api.Test;

import java.util.Random;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

/**
 * Recurrent layers are linear in the sequence length (issue 13): the plan of an LSTM has as many steps for 2,000
 * time steps as for 8, and the long one still computes the recurrence (checked against a double-precision loop).
 */
class RecurrentLayersLengthTest {

    private static float[] random(Random r, int n, double scale) {
        float[] f = new float[n];
        for (int i = 0; i < n; i++) f[i] = (float) ((r.nextDouble() * 2 - 1) * scale);
        return f;
    }

    private static double sigmoid(double v) { return 1 / (1 + Math.exp(-v)); }

    @Test
    void lstmPlanDoesNotGrowWithTheSequence() {
        int hidden = 3, in = 2, batch = 1;
        Random rnd = new Random(7);
        float[] w = random(rnd, 4 * hidden * in, 0.5), r = random(rnd, 4 * hidden * hidden, 0.5), b = random(rnd, 8 * hidden, 0.2);
        int[] lengths = {8, 2000};
        int[] steps = new int[2];
        for (int k = 0; k < 2; k++) {
            int t = lengths[k];
            float[] x = random(rnd, t * batch * in, 1.0);
            RecurrentOutputs o = RecurrentLayers.lstm(Tensor.of(x, t, batch, in), Tensor.of(w, 1, 4 * hidden, in), Tensor.of(r, 1, 4 * hidden, hidden),
                    Tensor.of(b, 1, 8 * hidden), null, null, null, null, "forward", null, null, null, null, false, 0);
            try (ExecutionPlan plan = o.yH().prepare()) {
                plan.execute();
                steps[k] = plan.preparedOps().size();
                // the reference: gates i, o, f, c
                double[] h = new double[hidden], c = new double[hidden];
                for (int s = 0; s < t; s++) {
                    double[] g = new double[4 * hidden];
                    for (int j = 0; j < 4 * hidden; j++) {
                        double v = b[j] + b[4 * hidden + j];
                        for (int i = 0; i < in; i++) v += x[s * in + i] * w[j * in + i];
                        for (int i = 0; i < hidden; i++) v += h[i] * r[j * hidden + i];
                        g[j] = v;
                    }
                    for (int j = 0; j < hidden; j++) {
                        double ig = sigmoid(g[j]), og = sigmoid(g[hidden + j]), fg = sigmoid(g[2 * hidden + j]), cc = Math.tanh(g[3 * hidden + j]);
                        c[j] = fg * c[j] + ig * cc;
                        h[j] = og * Math.tanh(c[j]);
                    }
                }
                for (int j = 0; j < hidden; j++) assertThat(plan.outputBuffer().getDouble(j)).isCloseTo(h[j], within(1e-4));
            }
        }
        assertThat(steps[1]).isEqualTo(steps[0]);
    }
}

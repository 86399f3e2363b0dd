package dev.kiln.serve;

import dev.kiln.types.DType;
import dev.kiln.Tensor;


/** Devices, graphs and data shared by the serving tests. */
final class ServeFixtures {
    private ServeFixtures() {}

    /** Skips the calling test, never silently, when {@code device} is unavailable here (CLANG without a C compiler). */
    static Session session(String device) {
        dev.kiln.testing.DeviceAssumptions.assumeAvailable(device, "serving tests");
        return Session.on(device);
    }

    /** Deterministic, irregular values in about [-1, 1]. */
    static float[] data(int n, int seed) {
        float[] out = new float[n];
        for (int i = 0; i < n; i++) out[i] = (float) Math.sin(seed * 7.31 + i * 1.713 + 0.1);
        return out;
    }

    /** Inputs x[2, 4]; params w1[4, 8], b1[8], w2[8, 3]; outputs relu(x w1 + b1) w2 and the hidden sum. */
    static Graph mlp() {
        Graph g = new Graph();
        Tensor x = g.input("x", DType.F32, 2, 4);
        Tensor w1 = g.param("w1", DType.F32, 4, 8);
        Tensor b1 = g.param("b1", DType.F32, 8);
        Tensor w2 = g.param("w2", DType.F32, 8, 3);
        Tensor h = x.matmul(w1).add(b1).relu();
        return g.outputs(h.matmul(w2), h.sum(1));
    }

    static final float[] W1 = data(32, 1), B1 = data(8, 2), W2 = data(24, 3);

    static CompiledGraph compiledMlp(Session s) {
        CompiledGraph c = s.compile(mlp());
        c.setParam("w1", W1);
        c.setParam("b1", B1);
        c.setParam("w2", W2);
        return c;
    }

    /** The MLP's outputs computed in plain Java (double accumulation). */
    static float[][] mlpReference(float[] x) {
        float[] h = new float[16];
        float[] y = new float[6];
        float[] hs = new float[2];
        for (int r = 0; r < 2; r++) {
            for (int j = 0; j < 8; j++) {
                double a = B1[j];
                for (int k = 0; k < 4; k++) a += (double) x[r * 4 + k] * W1[k * 8 + j];
                h[r * 8 + j] = (float) Math.max(a, 0);
                hs[r] += h[r * 8 + j];
            }
            for (int j = 0; j < 3; j++) {
                double a = 0;
                for (int k = 0; k < 8; k++) a += (double) h[r * 8 + k] * W2[k * 3 + j];
                y[r * 3 + j] = (float) a;
            }
        }
        return new float[][] {y, hs};
    }
}

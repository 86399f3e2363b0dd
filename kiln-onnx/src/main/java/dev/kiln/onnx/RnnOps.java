package dev.kiln.onnx;

import dev.kiln.Tensor;
import dev.kiln.onnxspec.RecurrentLayers;
import dev.kiln.onnxspec.RecurrentOutputs;

import java.util.ArrayList;
import java.util.List;

import static dev.kiln.onnx.OnnxOps.add;

/**
 * The recurrent operators RNN, GRU and LSTM, mapped onto {@link RecurrentLayers#rnn}, {@link RecurrentLayers#gru} and
 * {@link RecurrentLayers#lstm}: this class only reads the attributes (layout from opset 14).
 */
final class RnnOps {
    private RnnOps() {}

    static void register() {
        add("RNN", 7, c -> outputs(RecurrentLayers.rnn(c.in(0), c.in(1), c.in(2), c.opt(3), c.opt(4), c.opt(5), direction(c), activations(c), alpha(c), beta(c),
                clip(c), layout(c))));
        add("GRU", 7, c -> outputs(RecurrentLayers.gru(c.in(0), c.in(1), c.in(2), c.opt(3), c.opt(4), c.opt(5), direction(c), activations(c), alpha(c), beta(c),
                clip(c), c.a.b("linear_before_reset", false), layout(c))));
        add("LSTM", 7, c -> outputs(RecurrentLayers.lstm(c.in(0), c.in(1), c.in(2), c.opt(3), c.opt(4), c.opt(5), c.opt(6), c.opt(7), direction(c),
                activations(c), alpha(c), beta(c), clip(c), c.a.b("input_forget", false), layout(c))));
    }

    private static String direction(OpContext c) { return c.a.s("direction", "forward"); }

    private static String[] activations(OpContext c) { return c.a.strings("activations"); }

    private static double[] alpha(OpContext c) { return doubles(c.a.floats("activation_alpha")); }

    private static double[] beta(OpContext c) { return doubles(c.a.floats("activation_beta")); }

    private static Double clip(OpContext c) { return c.a.has("clip") ? c.a.f("clip", 0) : null; }

    private static int layout(OpContext c) { return c.opset >= 14 ? c.a.int32("layout", 0) : 0; }

    private static double[] doubles(float[] f) {
        if (f == null) return null;
        double[] d = new double[f.length];
        for (int k = 0; k < f.length; k++) d[k] = f[k];
        return d;
    }

    /** Y and Y_h, and Y_c for LSTM. */
    private static List<Tensor> outputs(RecurrentOutputs o) {
        List<Tensor> out = new ArrayList<>(List.of(o.y(), o.yH()));
        if (o.yC() != null) out.add(o.yC());
        return out;
    }
}

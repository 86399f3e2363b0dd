package dev.kiln.onnx;

import dev.kiln.types.DType;
import dev.kiln.Tensor;
import dev.kiln.onnxspec.MelWeightMatrix;
import dev.kiln.onnxspec.TfIdfVectorizer;

import static dev.kiln.onnx.OnnxOps.add;
import static dev.kiln.onnx.OnnxOps.one;

/** Signal processing (windows, DFT, STFT, mel filters) and n-gram counting (TfIdfVectorizer). */
final class SignalOps {
    private SignalOps() {}

    private interface WindowFn {
        Tensor of(int size, boolean periodic, DType dtype);
    }

    static void register() {
        window("HannWindow", Tensor::hannWindow);
        window("HammingWindow", Tensor::hammingWindow);
        window("BlackmanWindow", Tensor::blackmanWindow);
        add("DFT", 17, c -> {
            Tensor x = c.in(0);
            Integer length = c.has(1) ? c.scalarInt(1) : null;
            // opset 20 moved the axis to input 2 (default -2, counted over the rank with the complex axis)
            long axis = c.opset >= 20 ? (c.has(2) ? c.scalarLong(2) : -2) : c.a.i("axis", 1);
            return one(x.dft(c.axis(axis, x.ndim(), "axis"), c.a.b("inverse", false), c.a.b("onesided", false), length));
        });
        add("STFT", 17, c -> one(c.in(0).stft(c.scalarInt(1), c.opt(2), c.has(3) ? c.scalarInt(3) : null, c.a.b("onesided", true))));
        add("MelWeightMatrix", 17, c -> {
            DType dt = TensorProtos.dtype(c.a.int32("output_datatype", 1), "output_datatype");
            return one(c.here(MelWeightMatrix.of(c.scalarInt(0), c.scalarInt(1), c.scalarInt(2), c.scalar(3), c.scalar(4), dt)));
        }, (n, opset) -> ElementwiseOps.castTarget(n.attrs().i("output_datatype", 1)));
        add("TfIdfVectorizer", 9, c -> {
            float[] w = c.a.floats("weights");
            double[] weights = null;
            if (w != null) {
                weights = new double[w.length];
                for (int k = 0; k < w.length; k++) weights[k] = w[k];
            }
            // pool_strings is reported unsupported at load; without either, the pool is missing
            if (!c.a.has("pool_int64s")) throw c.bad("the attribute pool_int64s is required (the n-grams to count)");
            return one(TfIdfVectorizer.apply(c.in(0), c.a.int32("min_gram_length", 0), c.a.int32("max_gram_length", 0), c.a.int32("max_skip_count", 0),
                    c.a.s("mode", ""), c.a.longs("pool_int64s"), c.a.ints("ngram_counts"), c.a.ints("ngram_indexes"), weights));
        }, (n, opset) -> n.attrs().has("pool_strings") ? "pool_strings (string n-grams) is not supported: Kiln has no string dtype" : null);
    }

    /** A window of the size given by input 0 (periodic unless the attribute says 0), as {@code output_datatype}. */
    private static void window(String op, WindowFn f) {
        add(op, 17, c -> {
            DType dt = TensorProtos.dtype(c.a.int32("output_datatype", 1), "output_datatype");
            return one(c.here(f.of((int) c.scalar(0), c.a.b("periodic", true), dt)));
        }, (n, opset) -> ElementwiseOps.castTarget(n.attrs().i("output_datatype", 1)));
    }
}

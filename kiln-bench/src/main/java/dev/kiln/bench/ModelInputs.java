package dev.kiln.bench;

import dev.kiln.Tensor;
import dev.kiln.onnx.OnnxModel;
import dev.kiln.onnx.TensorProtos;
import dev.kiln.onnx.ValueInfo;
import dev.kiln.types.DType;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * The inputs a model benchmark feeds, the same for Kiln and ONNX Runtime: {@code test_data_set_0/input_K.pb} beside the
 * model when present (the shared model cases), else {@code arange(n) / n} in each f32 input's declared shape, and for
 * i64 inputs token ids 1.. in a 1000-word range (masks of ones).
 *
 * @param data   each input as {@code float[]} (f32) or {@code long[]} (i64), by name
 * @param shapes each input's shape, by name
 */
record ModelInputs(Map<String, Object> data, Map<String, long[]> shapes) {

    static ModelInputs of(Path model, OnnxModel onnx) {
        Map<String, Object> data = new LinkedHashMap<>();
        Map<String, long[]> shapes = new LinkedHashMap<>();
        for (int k = 0; k < onnx.inputs().size(); k++) {
            ValueInfo in = onnx.inputs().get(k);
            if (in.dtype() != DType.F32 && in.dtype() != DType.I64) {
                throw new IllegalArgumentException("input " + in.name() + " is " + in.dtype() + "; only f32 and i64 inputs");
            }
            Path pb = model.resolveSibling("test_data_set_0").resolve("input_" + k + ".pb");
            Tensor t;
            if (Files.exists(pb)) {
                t = TensorProtos.read(pb);
            } else {
                int[] dims = in.dims().stream().mapToInt(d -> {
                    if (!d.isFixed()) throw new IllegalArgumentException("input " + in.name() + " has a symbolic dim " + d + "; give input_" + in.name() + ".pb");
                    return (int) d.size();
                }).toArray();
                int n = Arrays.stream(dims).reduce(1, (a, b) -> a * b);
                if (in.dtype() == DType.I64) {
                    long[] v = new long[n];
                    boolean mask = in.name().contains("mask");
                    for (int i = 0; i < n; i++) v[i] = mask ? 1 : 1 + (i * 7919L) % 1000;
                    t = Tensor.of(v, dims);
                } else {
                    float[] v = new float[n];
                    for (int i = 0; i < n; i++) v[i] = (float) i / n;
                    t = Tensor.of(v, dims);
                }
            }
            if (t.dtype() == DType.I64) {
                long[] v = new long[(int) t.numel()];
                double[] dv = t.toDoubleArray();
                for (int i = 0; i < v.length; i++) v[i] = (long) dv[i];
                data.put(in.name(), v);
            } else {
                data.put(in.name(), t.toFloatArray());
            }
            shapes.put(in.name(), Arrays.stream(t.dims()).asLongStream().toArray());
        }
        return new ModelInputs(data, shapes);
    }

    /** Input {@code name} as a Kiln tensor. */
    Tensor tensor(String name) {
        int[] dims = Arrays.stream(shapes.get(name)).mapToInt(x -> (int) x).toArray();
        return data.get(name) instanceof long[] l ? Tensor.of(l, dims) : Tensor.of((float[]) data.get(name), dims);
    }
}

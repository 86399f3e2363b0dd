package dev.kiln.golden;

import com.fasterxml.jackson.databind.JsonNode;
import dev.kiln.types.DType;
import dev.kiln.Tensor;

/** One array of a golden case: dtype, shape and flat C-order values. */
record GoldenArray(DType dtype, int[] shape, double[] floats, long[] ints) {
    static GoldenArray parse(JsonNode n) {
        DType dt = DType.parse(n.get("dtype").asText());
        JsonNode s = n.get("shape");
        int[] shape = new int[s.size()];
        for (int i = 0; i < shape.length; i++) shape[i] = s.get(i).asInt();
        JsonNode d = n.get("data");
        if (dt.isFloat()) {
            double[] v = new double[d.size()];
            for (int i = 0; i < v.length; i++) v[i] = d.get(i).asDouble();
            return new GoldenArray(dt, shape, v, null);
        }
        long[] v = new long[d.size()];
        for (int i = 0; i < v.length; i++) v[i] = d.get(i).asLong();
        return new GoldenArray(dt, shape, null, v);
    }

    Tensor toTensor() {
        Tensor t = floats != null ? Tensor.of(dtype, floats, shape) : Tensor.of(dtype, ints, shape);
        return shape.length == 0 ? t.reshape() : t; // Tensor.of reads an empty shape as 1-D
    }

    int size() { return floats != null ? floats.length : ints.length; }
}

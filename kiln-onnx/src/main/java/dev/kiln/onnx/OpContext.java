package dev.kiln.onnx;

import dev.kiln.types.DType;
import dev.kiln.Tensor;
import dev.kiln.runtime.Device;

import java.util.Arrays;
import java.util.List;

/**
 * What an operator implementation sees of one node while the graph is built: its inputs as tensors on the
 * build device, their values where the operator needs them at build time (shapes, axes, pads), the attributes,
 * and the model's opset.
 */
final class OpContext {
    final Node node;
    final long opset;
    final Device device;
    final Attrs a;
    private final List<Tensor> inputs;
    private final GraphBuilder builder;

    OpContext(Node node, long opset, Device device, List<Tensor> inputs, GraphBuilder builder) {
        this.node = node;
        this.opset = opset;
        this.device = device;
        this.a = node.attrs();
        this.inputs = inputs;
        this.builder = builder;
    }

    /** The number of inputs the node lists (omitted optional ones included). */
    int inputCount() { return inputs.size(); }

    /** True when input {@code i} is given (listed and not an empty name). */
    boolean has(int i) { return i < inputs.size() && inputs.get(i) != null; }

    /** Input {@code i}, which the operator requires. */
    Tensor in(int i) {
        if (!has(i)) throw bad("needs input " + i + ", the node gives " + inputs.size() + " inputs " + node.inputs());
        return inputs.get(i);
    }

    /** Input {@code i}, or null when it is omitted. */
    Tensor opt(int i) { return has(i) ? inputs.get(i) : null; }

    /** The values of input {@code i} as longs (integers; floats truncated), known at build time. */
    long[] longs(int i) { return builder.valuesOf(node.inputs().get(i), in(i)).toLongArray(); }

    /** The values of input {@code i} as ints (clamped to the int range), known at build time. */
    int[] ints(int i) { return clampToInt(longs(i)); }

    /** The values of input {@code i} as doubles, known at build time. */
    double[] doubles(int i) { return builder.valuesOf(node.inputs().get(i), in(i)).toDoubleArray(); }

    /** The single value of scalar (one-element) input {@code i}, known at build time. */
    double scalar(int i) {
        double[] v = doubles(i);
        if (v.length != 1) throw bad("input " + i + " must hold one value, it has shape " + in(i).shape());
        return v[0];
    }

    /** The number of outputs the node lists. */
    int outputCount() { return node.outputs().size(); }

    /** True when output {@code k} is listed and named. */
    boolean wantsOutput(int k) { return k < node.outputs().size() && !node.outputs().get(k).isEmpty(); }

    /** {@code t} on the build device. */
    Tensor here(Tensor t) { return t.to(device); }

    /** A tensor of {@code dtype} holding {@code values}, on the build device. */
    Tensor constant(DType dtype, long[] values, int... shape) { return Tensor.of(dtype, values, shape).to(device); }

    /** A tensor of {@code dtype} holding {@code values}, on the build device. */
    Tensor constant(DType dtype, double[] values, int... shape) { return Tensor.of(dtype, values, shape).to(device); }

    /** A 0-d tensor of {@code dtype} on the build device. */
    Tensor scalarOf(Number value, DType dtype) { return Tensor.scalar(value, dtype).to(device); }

    /** A message-ready exception for an unsupported attribute value or input of this node. */
    UnsupportedOnnxOpException unsupported(String reason) {
        return new UnsupportedOnnxOpException(node.opType(), node.domainName(), opset, node.label(), reason);
    }

    /** A bad-input exception naming this node. */
    IllegalArgumentException bad(String problem) {
        return new IllegalArgumentException(node.opType() + " node '" + node.label() + "': " + problem);
    }

    /** An axis attribute or value normalised to {@code [0, rank)}. */
    int axis(long axis, int rank, String what) {
        long a = axis < 0 ? axis + rank : axis;
        if (a < 0 || a >= rank) throw bad(what + " " + axis + " is out of range for rank " + rank);
        return (int) a;
    }

    static int[] clampToInt(long[] v) {
        return Arrays.stream(v).mapToInt(x -> (int) Math.max(Integer.MIN_VALUE, Math.min(Integer.MAX_VALUE, x))).toArray();
    }
}

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
    /**
     * Whether the node's outputs are folded: computed now and kept as constants (its inputs are small constants), so
     * an operator may compute them directly instead of as a lazy graph the INTERP device then evaluates.
     */
    final boolean folding;

    OpContext(Node node, long opset, Device device, List<Tensor> inputs, GraphBuilder builder, boolean folding) {
        this.node = node;
        this.opset = opset;
        this.device = device;
        this.a = node.attrs();
        this.inputs = inputs;
        this.builder = builder;
        this.folding = folding;
    }

    /** The number of inputs the node lists (omitted optional ones included). */
    int inputCount() { return inputs.size(); }

    /** The builder of the graph this node is in (an operator with a subgraph builds it from there). */
    GraphBuilder builder() { return builder; }

    /** True when input {@code i} is given (listed and not an empty name). */
    boolean has(int i) { return i < inputs.size() && inputs.get(i) != null; }

    /** Input {@code i}, which the operator requires. */
    Tensor in(int i) {
        if (!has(i) && given(i)) {
            // named but not a tensor: a sequence or optional where this operator reads a tensor
            throw bad("input " + i + " ('" + node.inputs().get(i) + "') is " + builder.value(node.inputs().get(i), device).describe() + ", expected a tensor");
        }
        if (!has(i)) throw bad("needs input " + i + ", the node gives " + inputs.size() + " inputs " + node.inputs());
        return inputs.get(i);
    }

    /** Input {@code i} of any kind (a tensor, sequence or optional), which the operator requires. */
    OnnxValue value(int i) {
        if (i >= node.inputs().size() || node.inputs().get(i).isEmpty()) throw bad("needs input " + i + ", the node gives " + node.inputs());
        return builder.value(node.inputs().get(i), device);
    }

    /** True when input {@code i} is listed and named (of any kind). */
    boolean given(int i) { return i < node.inputs().size() && !node.inputs().get(i).isEmpty(); }

    /** Input {@code i}, or null when it is omitted. */
    Tensor opt(int i) { return has(i) ? inputs.get(i) : null; }

    /** The values of input {@code i} as longs (integers; floats truncated), known at build time. */
    long[] longs(int i) {
        Tensor t = in(i); // first: a missing input is named, not an index error
        return builder.valuesOf(node.inputs().get(i), t).toLongArray();
    }

    /** The values of input {@code i} as ints (clamped to the int range), known at build time. */
    int[] ints(int i) { return clampToInt(longs(i)); }

    /** The values of input {@code i} as doubles, known at build time. */
    double[] doubles(int i) {
        Tensor t = in(i);
        return builder.valuesOf(node.inputs().get(i), t).toDoubleArray();
    }

    /** True when input {@code i} is given and a constant (an initializer or folded), so its values are known now. */
    boolean isConstant(int i) { return has(i) && builder.isConstant(node.inputs().get(i)); }

    /** The single value of scalar (one-element) input {@code i}, known at build time. */
    double scalar(int i) {
        double[] v = doubles(i);
        if (v.length != 1) throw bad("input " + i + " must hold one value, it has shape " + in(i).shape());
        return v[0];
    }

    /** The single value of scalar (one-element) integer input {@code i}, known at build time. */
    long scalarLong(int i) {
        long[] v = longs(i);
        // an empty or longer tensor where ONNX wants one value (TopK's k, CumSum's axis, Range's bounds) is the model's fault
        if (v.length != 1) throw bad("input " + i + " must hold one value, it has shape " + in(i).shape());
        return v[0];
    }

    /** {@link #scalarLong} clamped to the int range, as {@link #ints} clamps: a huge value stays huge and is refused by the operator. */
    int scalarInt(int i) { return (int) Math.max(Integer.MIN_VALUE, Math.min(Integer.MAX_VALUE, scalarLong(i))); }

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

    /** A bad-model exception naming the model, this node and its operator. */
    OnnxFormatException bad(String problem) {
        return new OnnxFormatException(builder.source(), node.opType() + " node '" + node.label() + "': " + problem);
    }

    /**
     * The INTS attribute {@code name} (null when absent), which must hold exactly {@code n} values when given:
     * per-axis lists such as strides and pads are read by position, so a short list is an error here, not an
     * index error later.
     */
    int[] attrInts(String name, int n, String expected) {
        int[] v = a.ints(name);
        if (v != null && v.length != n) throw bad(name + " " + Arrays.toString(v) + " has " + v.length + " values, expected " + n + " (" + expected + ")");
        return v;
    }

    /** {@code t}, input {@code i}, checked to have rank {@code min} to {@code max}, as the operator requires. */
    Tensor ranked(int i, int min, int max) {
        Tensor t = in(i);
        if (t.ndim() < min || t.ndim() > max) {
            String want = min == max ? "rank " + min : max == Integer.MAX_VALUE ? "rank " + min + " or more" : "rank " + min + " to " + max;
            throw bad("input " + i + " ('" + node.inputs().get(i) + "') must have " + want + ", got shape " + t.shape());
        }
        return t;
    }

    /**
     * Checks constant indices against an axis of {@code size} elements under ONNX's rule (valid: {@code [-size, size-1]}),
     * when input {@code i} is a constant: an out-of-range index is an error, never a silent read of nothing. Indices known
     * only at run time are not checked here.
     */
    void checkIndices(int i, long size, String axisName) {
        if (!isConstant(i) || in(i).numel() > INDEX_CHECK_LIMIT) return;
        long[] idx = longs(i);
        for (int k = 0; k < idx.length; k++) {
            if (idx[k] < -size || idx[k] >= size) {
                throw bad("index " + idx[k] + " (element " + k + " of input " + i + " '" + node.inputs().get(i) + "') is out of range for " + axisName
                        + " of size " + size + "; valid are " + -size + " to " + (size - 1));
            }
        }
    }

    /** Constant index tensors larger than this are not read at build time (the check would cost a copy of them). */
    private static final long INDEX_CHECK_LIMIT = 1 << 22;

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

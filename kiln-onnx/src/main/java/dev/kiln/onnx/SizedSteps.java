package dev.kiln.onnx;

import dev.kiln.SizedHostFunction;
import dev.kiln.Tensor;
import dev.kiln.runtime.Buffer;
import dev.kiln.types.DType;
import dev.kiln.types.Variable;

import java.lang.foreign.MemorySegment;
import java.util.List;

/**
 * The run-time half of the {@link DataDependentOps data-dependent operators}: where their deciding inputs have no values
 * while the graph is built (a prepared {@link OnnxPlan}'s inputs, or values computed from them), the selection becomes a
 * sized host step ({@link Tensor#hostSized}) that makes it when the plan runs, laid out at the operator's static maximum
 * and read by everything downstream only up to the count it gives. The selection itself is the operator's one
 * implementation, shared with the build-time path.
 */
final class SizedSteps {
    private SizedSteps() {}

    /** Whether the elements of inputs {@code deciding} of {@code c}'s node (those given) are known while the graph is built. */
    static boolean knownNow(OpContext c, int... deciding) {
        List<String> names = new java.util.ArrayList<>();
        for (int i : deciding) if (c.given(i)) names.add(c.node.inputs().get(i));
        return c.builder().valuesKnownNow(names);
    }

    /**
     * The host step of {@code c}'s node: output {@code dtype} of shape {@code capacity}, whose axis {@code axis} is bound
     * when it runs to the count {@code fn} returns. The step is named after the node (errors name it), the variable after
     * the node's first output.
     */
    static Tensor step(OpContext c, DType dtype, int[] capacity, int axis, SizedHostFunction fn, Tensor... inputs) {
        for (int i = 0; i < inputs.length; i++) {
            if (inputs[i].shape().isSymbolic()) {
                throw c.unsupported("input " + inputs[i].shape() + " has a symbolic size, and its selection is made when the plan runs over "
                        + "whole inputs; prepare the model with fixed sizes for this input");
            }
        }
        Variable extent = new Variable("extent of '" + c.node.outputs().getFirst() + "'", 0, capacity[axis]);
        return Tensor.hostSized(name(c), dtype, capacity, axis, extent, fn, inputs);
    }

    /** The node as errors name it: {@code NonZero node 'nz'}. */
    static String name(OpContext c) { return c.node.opType() + " node '" + c.node.label() + "'"; }

    /** The {@code n} elements of a host step's input of {@code dtype}, as doubles. */
    static double[] doubles(MemorySegment in, DType dtype, int n) {
        Buffer b = new Buffer("CPU", dtype, n, in);
        double[] out = new double[n];
        for (int i = 0; i < n; i++) out[i] = b.getDouble(i);
        return out;
    }

    /** The one value of a host step's one-element input of {@code dtype}, as a long (floats truncated). */
    static long longValue(MemorySegment in, DType dtype) {
        Buffer b = new Buffer("CPU", dtype, 1, in);
        return dtype.isFloat() ? (long) b.getDouble(0) : b.getLong(0);
    }

    /** Writes {@code values} as int64 into a host step's output, from element 0. */
    static void writeLongs(MemorySegment out, long[] values, int count) {
        Buffer b = new Buffer("CPU", DType.I64, count, out);
        for (int i = 0; i < count; i++) b.setLong(i, values[i]);
    }

    /** The inputs as an array, for {@link Tensor#hostSized}'s varargs. */
    static Tensor[] array(List<Tensor> inputs) { return inputs.toArray(Tensor[]::new); }
}

package dev.kiln.onnx;

import dev.kiln.SizedHostFunction;
import dev.kiln.Tensor;
import dev.kiln.runtime.Buffer;
import dev.kiln.types.DType;
import dev.kiln.types.Shape;
import dev.kiln.types.Variable;

import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;

/**
 * The run-time half of the {@link DataDependentOps data-dependent operators}: where their deciding inputs have no values
 * while the graph is built (a prepared {@link OnnxPlan}'s inputs, or values computed from them), the selection becomes a
 * sized host step ({@link Tensor#hostSized}) that makes it when the plan runs, laid out at the operator's static maximum
 * and read by everything downstream only up to the count it gives. The selection itself is the operator's one
 * implementation, shared with the build-time path. An input of a symbolic size (boxes up to a maximum) is handed to the
 * selection at its size in the run: its variables are inputs of the step, and its leading corner is copied out dense.
 */
final class SizedSteps {
    private SizedSteps() {}

    /** A selection over its inputs' values at their sizes in this run: it writes the output and returns the count. */
    @FunctionalInterface
    interface Selection {
        /**
         * @param inputs each input's values, dense in C order at {@code dims}
         * @param dims   each input's dims in this run
         * @param output the output, laid out at the capacity
         * @return the extent written along the sized axis
         */
        long select(List<MemorySegment> inputs, List<int[]> dims, MemorySegment output);
    }

    /** Whether the elements of inputs {@code deciding} of {@code c}'s node (those given) are known while the graph is built. */
    static boolean knownNow(OpContext c, int... deciding) {
        List<String> names = new ArrayList<>();
        for (int i : deciding) if (c.given(i)) names.add(c.node.inputs().get(i));
        return c.builder().valuesKnownNow(names);
    }

    /**
     * The host step of {@code c}'s node: output {@code dtype} of shape {@code capacity}, whose axis {@code axis} is bound
     * when it runs to the count {@code fn} returns. The step is named after the node (errors name it), the variable after
     * the node's first output.
     */
    static Tensor step(OpContext c, DType dtype, int[] capacity, int axis, Selection fn, Tensor... inputs) {
        return step(c, c.node.outputs().getFirst(), dtype, capacity, axis, fn, inputs);
    }

    /** {@link #step}, its variable named after the node's output {@code output}. */
    static Tensor step(OpContext c, String output, DType dtype, int[] capacity, int axis, Selection fn, Tensor... inputs) {
        AtRunDims p = atRunDims(fn, inputs);
        Variable extent = new Variable("extent of '" + output + "'", 0, capacity[axis]);
        return Tensor.hostSized(name(c), dtype, capacity, axis, extent, p.body(), p.inputs().toArray(Tensor[]::new));
    }

    /**
     * A plain host step of {@code c}'s node ({@code what} names it beside the node) that reads its inputs at their sizes in
     * the run, as {@link #step} does, and writes an output of static layout {@code dims} (the count {@code fn} returns is
     * not used): a companion of a sized step whose own size is an input's (Unique's inverse indices).
     */
    static Tensor hostStep(OpContext c, String what, DType dtype, int[] dims, Selection fn, Tensor... inputs) {
        AtRunDims p = atRunDims(fn, inputs);
        SizedHostFunction body = p.body();
        return Tensor.host(name(c) + " " + what, dtype, dims, (in, out) -> body.apply(in, out), p.inputs().toArray(Tensor[]::new));
    }

    /** A host step's inputs ({@code inputs}, then the variables of their symbolic axes) and its body over them. */
    private record AtRunDims(List<Tensor> inputs, SizedHostFunction body) {}

    private static AtRunDims atRunDims(Selection fn, Tensor... inputs) {
        List<Tensor> all = new ArrayList<>(List.of(inputs));
        int[][] maxDims = new int[inputs.length][], sizeAt = new int[inputs.length][]; // per input axis: the step input holding its size, or -1
        long[] itemBytes = new long[inputs.length];
        for (int i = 0; i < inputs.length; i++) {
            Shape s = inputs[i].shape();
            maxDims[i] = s.toArray();
            itemBytes[i] = inputs[i].dtype().byteSize(1);
            sizeAt[i] = new int[s.rank()];
            for (int a = 0; a < s.rank(); a++) {
                sizeAt[i][a] = s.variable(a) == null ? -1 : all.size();
                if (s.variable(a) != null) all.add(Tensor.variable(s.variable(a)).to(inputs[i].device())); // with the step, on its device
            }
        }
        SizedHostFunction body = (in, out) -> {
            List<MemorySegment> dense = new ArrayList<>();
            List<int[]> dims = new ArrayList<>();
            for (int i = 0; i < inputs.length; i++) {
                int[] d = maxDims[i].clone();
                for (int a = 0; a < d.length; a++) if (sizeAt[i][a] >= 0) d[a] = (int) longValue(in.get(sizeAt[i][a]), DType.I64);
                dense.add(java.util.Arrays.equals(d, maxDims[i]) ? in.get(i) : corner(in.get(i), maxDims[i], d, itemBytes[i]));
                dims.add(d);
            }
            return fn.select(dense, dims, out);
        };
        return new AtRunDims(all, body);
    }

    /** The leading {@code dims} corner of a C-order buffer laid out at {@code max}, copied out dense in C order. */
    static MemorySegment corner(MemorySegment from, int[] max, int[] dims, long item) {
        MemorySegment out = MemorySegment.ofArray(new byte[Math.toIntExact(Shape.of(dims).numel() * item)]);
        copyBox(from, max, out, dims, dims, item);
        return out;
    }

    /** Writes a dense C-order tensor of {@code dims} into the leading corner of {@code to}, laid out at {@code max}. */
    static void place(MemorySegment from, int[] dims, MemorySegment to, int[] max, long item) { copyBox(from, dims, to, max, dims, item); }

    /**
     * The leading {@code dims} box of {@code from} (C order, laid out at {@code fromLayout}) into the leading box of
     * {@code to} (laid out at {@code toLayout}), a run of the last axis at a time: the runs are contiguous on both sides.
     */
    private static void copyBox(MemorySegment from, int[] fromLayout, MemorySegment to, int[] toLayout, int[] dims, long item) {
        long n = Shape.of(dims).numel();
        if (n == 0) return;
        if (java.util.Arrays.equals(fromLayout, dims) && java.util.Arrays.equals(toLayout, dims)) {
            MemorySegment.copy(from, 0, to, 0, n * item);
            return;
        }
        int r = dims.length; // at least 1: a scalar's layouts equal its dims
        long run = dims[r - 1];
        long[] fromStride = Shape.of(fromLayout).strides(), toStride = Shape.of(toLayout).strides();
        int[] idx = new int[r - 1];
        for (long k = 0; k < n / run; k++) {
            long src = 0, dst = 0;
            for (int a = 0; a < r - 1; a++) {
                src += idx[a] * fromStride[a];
                dst += idx[a] * toStride[a];
            }
            MemorySegment.copy(from, src * item, to, dst * item, run * item);
            for (int a = r - 2; a >= 0 && ++idx[a] == dims[a]; a--) idx[a] = 0;
        }
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

    /** The number of elements of {@code dims}. */
    static int numel(int[] dims) { return Math.toIntExact(Shape.of(dims).numel()); }
}

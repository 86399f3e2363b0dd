package dev.kiln.onnx;

import dev.kiln.Tensor;
import dev.kiln.runtime.Device;
import dev.kiln.types.DType;
import dev.kiln.types.Shape;
import dev.kiln.types.Variable;

import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * A loop-carried tensor the body extends by one element per iteration with Concat ({@link ListAccumulators.Grows}: a greedy
 * decoder's {@code tokens = torch.cat([tokens, tok])}), built as the loop's scan output of the elements: the body is traced
 * once with the state empty (0 long on the axis), so Concat gives the element, and the loop is one body plan whatever its
 * length. The final value is the initial tensor joined with the rows along the axis: built from them when the iterations are
 * known now, and in a prepared plan by a sized host step whose output is laid out at the initial length plus the rows'
 * capacity and whose axis is bound, when the plan runs, to the length the iterations made.
 */
final class GrownTensors {
    private GrownTensors() {}

    /** The state's stand-in while the body is traced: the initial tensor's shape, 0 long on the axis. */
    static Tensor empty(ListAccumulators.Grows g, Device device) {
        int[] dims = g.initial().dims();
        dims[g.axis()] = 0;
        return Tensor.zeros(g.initial().dtype(), dims).to(device);
    }

    /** The body's extended state, traced from the empty stand-in: the iteration's element, which must fit the initial tensor. */
    static Tensor element(ListAccumulators.Grows g, Tensor t, String output) {
        Tensor init = g.initial();
        boolean fits = t.dtype() == init.dtype() && t.ndim() == init.ndim() && !t.shape().isSymbolic();
        for (int a = 0; fits && a < t.ndim(); a++) fits = a == g.axis() || t.dim(a) == init.dim(a);
        if (!fits) {
            throw new IllegalArgumentException("the body's '" + output + "' appends " + t.dtype() + t.shape() + " along axis " + g.axis() + " to "
                    + init.dtype() + init.shape() + "; the element must match it on every other axis");
        }
        return t;
    }

    /** The final value from the rows of {@code ran} iterations known now: the initial tensor, then each element along the axis. */
    static Tensor joined(ListAccumulators.Grows g, Tensor rows) {
        int ran = rows.dim(0), a = g.axis(), rank = rows.ndim();
        if (ran == 0) return g.initial();
        int[] order = new int[rank];
        for (int x = 0, k = 1; x < rank; x++) order[x] = x == a ? 0 : k++;
        Tensor moved = rows.permute(order); // [..., ran, element's length on the axis, ...] at a and a + 1
        int[] dims = g.initial().dims();
        dims[a] = ran * rows.dim(1 + a);
        return Tensor.cat(a, g.initial(), moved.reshape(dims));
    }

    /**
     * The final value in a prepared plan, from the scan output {@code rows} whose first axis is bound to the iterations when
     * the plan runs: a sized host step that writes the initial tensor, then each row, along the axis, and gives the length.
     */
    static Tensor inPlan(OpContext c, ListAccumulators.Grows g, Tensor rows) {
        Tensor init = g.initial();
        int a = g.axis(), capacity = rows.dim(0), n0 = init.dim(a), k = rows.dim(1 + a);
        Variable ran = rows.shape().variable(0);
        if (ran == null) throw new IllegalStateException(SizedSteps.name(c) + ": the rows of a grown value in a plan have a symbolic first axis");
        int[] dims = init.dims();
        long max = (long) n0 + (long) k * capacity;
        if (max > Integer.MAX_VALUE - 8) throw c.unsupported("a value grown to " + max + " along axis " + a + " is more than a tensor's axis holds");
        dims[a] = (int) max;
        DType dt = init.dtype();
        long outer = 1, inner = dt.byteSize(1);
        for (int x = 0; x < a; x++) outer *= dims[x];
        for (int x = a + 1; x < dims.length; x++) inner *= dims[x];
        long initChunk = n0 * inner, elementChunk = k * inner, outChunk = max * inner, rowBytes = outer * elementChunk;
        long outerCount = outer;
        String name = c.node.outputs().get(g.state());
        Variable length = new Variable("length of '" + name + "'", n0, (int) max);
        return Tensor.hostSized(SizedSteps.name(c) + " output '" + name + "'", dt, dims, a, length, (in, out) -> {
            long iterations = SizedSteps.longValue(in.get(1), DType.I64);
            for (long o = 0; o < outerCount; o++) {
                MemorySegment.copy(in.get(2), o * initChunk, out, o * outChunk, initChunk);
                for (long r = 0; r < iterations; r++) {
                    MemorySegment.copy(in.getFirst(), r * rowBytes + o * elementChunk, out, o * outChunk + initChunk + r * elementChunk, elementChunk);
                }
            }
            return n0 + k * iterations;
        }, rows, Tensor.variable(ran), init.contiguous());
    }
    /** The name the Concat of {@code g} reads the state under in {@link #renamed}: no ONNX value has it. */
    static String emptyName(OnnxGraph body, ListAccumulators.Grows g) { return "\0kiln:grown:" + body.inputs().get(2 + g.state()); }

    /** The name the last reads of {@code g} read the state's one-long tail under in {@link #renamed}: no ONNX value has it. */
    static String tailName(OnnxGraph body, ListAccumulators.Grows g) { return "\0kiln:tail:" + body.inputs().get(2 + g.state()); }

    /**
     * The body with the Concat of {@code g} reading the state under {@link #emptyName}, bound to the empty stand-in (so it gives
     * the iteration's element), and its last reads reading it under {@link #tailName}, bound to its one-long tail; its whole
     * reads read the state's own name.
     */
    static OnnxGraph renamed(OnnxGraph body, ListAccumulators.Grows g) {
        String empty = emptyName(body, g), tail = tailName(body, g);
        List<Node> nodes = new ArrayList<>();
        for (Node n : body.nodes()) {
            List<String> in = new ArrayList<>(n.inputs());
            if (n.index() == g.concat().index()) in.set(0, empty);
            else if (g.lastReads().stream().anyMatch(r -> r.index() == n.index())) in.set(0, tail);
            else {
                nodes.add(n);
                continue;
            }
            nodes.add(new Node(n.index(), n.opType(), n.domain(), n.name(), List.copyOf(in), n.outputs(), n.attrs()));
        }
        return new OnnxGraph(body.source(), List.copyOf(nodes), body.initializers(), body.inputs(), body.outputs(), body.opsets());
    }

    /**
     * A grown tensor the body reads whole ({@link ListAccumulators.Grows#wholeReads}): carried as a buffer laid out at
     * {@code capacity} along the axis (the initial length plus an element per row the loop keeps) and its length, an i64
     * scalar that binds {@code length} before each iteration, so the body reads the tensor as it is so far.
     */
    record Whole(ListAccumulators.Grows grows, Variable length, int capacity) {
        /**
         * {@code g} for a loop keeping {@code rows} rows of elements {@code element} long on the axis; at most as many as
         * a tensor's axis holds.
         */
        static Whole of(OpContext c, ListAccumulators.Grows g, int element, int rows) {
            int first = g.initial().dim(g.axis());
            long capacity = first + (long) element * rows;
            if (capacity > Integer.MAX_VALUE - 8) throw c.unsupported("a value grown to " + capacity + " along axis " + g.axis() + " is more than a tensor's axis holds");
            String name = c.node.outputs().get(g.state());
            // never shorter than at first: a read of a constant length from its end is one of the body's shapes
            return new Whole(g, new Variable("length of '" + name + "' in " + SizedSteps.name(c), first, capacity), (int) capacity);
        }

        /** The buffer's initial value: the initial tensor, zeros after it. */
        Tensor initialBuffer() {
            int[][] pads = new int[grows.initial().ndim()][2];
            pads[grows.axis()][1] = capacity - grows.initial().dim(grows.axis());
            return grows.initial().pad(pads);
        }

        /** The initial length. */
        Tensor initialLength(Device device) { return Tensor.scalar(grows.initial().dim(grows.axis()), DType.I64).to(device); }

        /** The tensor so far, as the body reads it: the buffer's first {@code length} along the axis. */
        Tensor view(Tensor buffer) { return buffer.withSymbolicDim(grows.axis(), length); }

        /** The next buffer: {@code element} written at {@code at} along the axis (past the capacity, nothing is). */
        Tensor appended(Tensor buffer, Tensor at, Tensor element) {
            int a = grows.axis(), k = element.dim(a), rank = buffer.ndim();
            if (k == 0) return buffer;
            int[] along = new int[rank];
            Arrays.fill(along, 1);
            along[a] = capacity;
            Tensor from = Tensor.arange(capacity).to(buffer.device()).cast(DType.I64).reshape(along).sub(at);
            Tensor inside = from.ge(0L).logicalAnd(from.lt((long) k));
            int[] dims = element.dims();
            dims[a] = capacity;
            Tensor picked = element.gather(a, from.clamp(0L, (long) Math.max(0, k - 1)).expand(dims));
            return Tensor.where(inside, picked, buffer);
        }
    }

    /** The last element of {@code t} along {@code axis} (one long there), or null where the axis is empty. */
    static Tensor last(Tensor t, int axis) {
        int n = t.dim(axis);
        return n == 0 ? null : t.slice(axis, n - 1, n, 1);
    }

    /**
     * Why last read {@code r} of {@code g}'s state, built by {@code b}, may not read the state's one-long tail in its place;
     * null where it reads exactly the last element along the axis: a Gather of index -1 along the axis, or a Slice from -1 to
     * the end (step 1) of the axis alone, its operands constants.
     */
    static String lastReadProblem(GraphBuilder b, Node r, ListAccumulators.Grows g) {
        int rank = g.initial().ndim();
        String what = r.opType() + " node '" + r.label() + "'";
        if (r.opType().equals("Gather")) {
            long axis = r.attrs().i("axis", 0);
            long[] index = b.constantIntegers(r.inputs().get(1));
            if (normalised(axis, rank) != g.axis() || index == null || index.length == 0 || Arrays.stream(index).anyMatch(v -> v != -1)) {
                return what + " reads other than its last element along axis " + g.axis();
            }
            return null;
        }
        long[] starts, ends, axes, steps = null;
        if (b.graph().opsetFor(r.domain()) < 10) {
            starts = r.attrs().longs("starts");
            ends = r.attrs().longs("ends");
            axes = r.attrs().longs("axes");
        } else {
            List<String> in = r.inputs();
            starts = b.constantIntegers(in.get(1));
            ends = b.constantIntegers(in.get(2));
            axes = in.size() > 3 && !in.get(3).isEmpty() ? b.constantIntegers(in.get(3)) : null;
            if (in.size() > 3 && !in.get(3).isEmpty() && axes == null) return what + " slices along axes known only when the loop runs";
            steps = in.size() > 4 && !in.get(4).isEmpty() ? b.constantIntegers(in.get(4)) : new long[] {1};
        }
        boolean last = starts != null && ends != null && steps != null && starts.length == 1 && ends.length == 1 && steps.length == 1
                && (axes == null ? 0 : axes.length == 1 ? normalised(axes[0], rank) : -1) == g.axis() && starts[0] == -1
                && ends[0] >= Integer.MAX_VALUE && steps[0] == 1;
        return last ? null : what + " reads other than its last element along axis " + g.axis();
    }

    private static long normalised(long axis, int rank) { return axis < 0 ? axis + rank : axis; }
}

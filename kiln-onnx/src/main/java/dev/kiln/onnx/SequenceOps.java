package dev.kiln.onnx;

import dev.kiln.Tensor;
import dev.kiln.types.DType;
import onnx.Onnx.GraphProto;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import static dev.kiln.onnx.OnnxOps.addHost;

/**
 * The sequence operators (SequenceConstruct to SequenceMap) on {@link OnnxValue.SequenceValue}s: host values whose
 * length is known when the graph is built, each element a tensor of the graph. A length or position that would come from
 * a value known only when the model runs is refused, never guessed.
 */
final class SequenceOps {
    private SequenceOps() {}

    static void register() {
        addHost("SequenceConstruct", 11, SequenceOps::construct, null);
        addHost("SequenceEmpty", 11, c -> List.of(new OnnxValue.SequenceValue(List.of(), TensorProtos.dtype(c.a.int32("dtype", 1), "SequenceEmpty's dtype"))), null);
        addHost("SequenceAt", 11, SequenceOps::at, null);
        addHost("SequenceInsert", 11, SequenceOps::insert, null);
        addHost("SequenceErase", 11, SequenceOps::erase, null);
        addHost("SequenceLength", 11, OnnxOps.Kind.HOST_STRUCTURE, SequenceOps::length, null);
        addHost("ConcatFromSequence", 11, SequenceOps::concat, null);
        addHost("SplitToSequence", 11, SequenceOps::split, null);
        // a body's operators are checked at load like any subgraph's
        addHost("SequenceMap", 17, SequenceOps::map, ControlFlowOps::checkSubgraphs);
    }

    static OnnxValue tensor(Tensor t) { return new OnnxValue.TensorValue(t); }

    /** Input {@code i}, which must be a sequence. */
    static OnnxValue.SequenceValue sequence(OpContext c, int i) {
        if (c.value(i) instanceof OnnxValue.SequenceValue s) return s;
        if (c.value(i) instanceof OnnxValue.StackedSequence s) {
            throw c.unsupported("input " + i + " ('" + c.node.inputs().get(i) + "') is " + s.describe() + " (a loop's list in a prepared plan); "
                    + c.node.opType() + " needs its length while the graph is built, and only ConcatFromSequence and SequenceLength take such a "
                    + "sequence (run the model with OnnxModel.run)");
        }
        throw c.bad("input " + i + " ('" + c.node.inputs().get(i) + "') must be a sequence, got " + c.value(i).describe());
    }

    /** Input {@code i}, which must be a tensor. */
    static Tensor tensorIn(OpContext c, int i) {
        if (c.value(i) instanceof OnnxValue.TensorValue(Tensor t)) return t;
        throw c.bad("input " + i + " ('" + c.node.inputs().get(i) + "') must be a tensor, got " + c.value(i).describe());
    }

    private static List<OnnxValue> construct(OpContext c) {
        if (c.inputCount() == 0) throw c.bad("needs at least one input");
        List<Tensor> elements = new ArrayList<>();
        for (int i = 0; i < c.inputCount(); i++) elements.add(tensorIn(c, i));
        DType dt = elements.getFirst().dtype();
        for (int i = 1; i < elements.size(); i++) {
            if (elements.get(i).dtype() != dt) throw c.bad("input " + i + " is " + elements.get(i).dtype() + ", input 0 is " + dt + "; a sequence holds one dtype");
        }
        return List.of(new OnnxValue.SequenceValue(elements, dt));
    }

    /**
     * Input {@code i}, a position in a sequence of {@code length} elements, normalised: valid are {@code -length} to
     * {@code length - 1}, or to {@code length} where {@code end} is allowed (an insertion at the back). The position is
     * needed while the graph is built: it picks an element, or decides the sequence's order.
     */
    private static int position(OpContext c, int i, int length, boolean end) {
        if (!c.given(i)) return end ? length : length - 1;
        Tensor p = tensorIn(c, i);
        if (p.dtype() != DType.I32 && p.dtype() != DType.I64) throw c.bad("position must be I32 or I64, got " + p.dtype());
        if (p.numel() != 1) throw c.bad("position must hold one value, got shape " + p.shape());
        long v = c.scalarLong(i);
        long max = end ? length : length - 1;
        if (v < -length || v > max) {
            throw c.bad("position " + v + " is out of range for a sequence of length " + length + "; valid are " + -length + " to " + max);
        }
        return (int) (v < 0 ? v + length : v);
    }

    private static List<OnnxValue> at(OpContext c) {
        OnnxValue.SequenceValue s = sequence(c, 0);
        if (!c.given(1)) throw c.bad("needs input 1 (position)");
        int at;
        try {
            at = position(c, 1, s.elements().size(), false);
        } catch (UnsupportedOperationException e) {
            // a position known only when the plan runs (a loop body's iteration number): where the elements are the rows of
            // one tensor (a loop's list, a sequence a loop body reads), a gather, whose index check names the node when it
            // is out of range; else the position's values are needed now, and the refusal stands
            if (s.rows() == null) throw e;
            Tensor p = tensorIn(c, 1), rows = s.rows();
            return List.of(tensor(rows.indexSelect(0, p.reshape(1).cast(DType.I64)).reshape(java.util.Arrays.copyOfRange(rows.dims(), 1, rows.ndim()))));
        }
        return List.of(tensor(s.elements().get(at)));
    }

    private static List<OnnxValue> insert(OpContext c) {
        OnnxValue.SequenceValue s = sequence(c, 0);
        Tensor t = tensorIn(c, 1);
        if (t.dtype() != s.dtype()) throw c.bad("the tensor is " + t.dtype() + ", the sequence holds " + s.dtype());
        List<Tensor> out = new ArrayList<>(s.elements());
        out.add(position(c, 2, out.size(), true), t);
        return List.of(new OnnxValue.SequenceValue(out, s.dtype()));
    }

    private static List<OnnxValue> erase(OpContext c) {
        OnnxValue.SequenceValue s = sequence(c, 0);
        if (s.elements().isEmpty()) throw c.bad("cannot erase from an empty sequence");
        List<Tensor> out = new ArrayList<>(s.elements());
        out.remove(position(c, 1, out.size(), false));
        return List.of(new OnnxValue.SequenceValue(out, s.dtype()));
    }

    /** SequenceLength: a constant, or for a loop's list in a prepared plan the number of its rows in the run (a value of the graph). */
    private static List<OnnxValue> length(OpContext c) {
        if (c.value(0) instanceof OnnxValue.StackedSequence(Tensor rows, DType dt)) {
            return List.of(tensor(Tensor.variable(rows.shape().variable(0)).cast(DType.I64).reshape().to(c.device)));
        }
        return List.of(tensor(Tensor.scalar(sequence(c, 0).elements().size(), DType.I64).to(c.device)));
    }

    /**
     * ConcatFromSequence of a loop's list, whose elements are the rows of one tensor (its first axis symbolic in a prepared
     * plan, static where the loop ran while the graph was built): stacked along {@code axis}, that tensor with its first
     * axis moved there; joined along an existing axis, where each element is 1 long on it (a decoder's appended token), the
     * rows with that axis dropped, and longer elements with a static count, the rows' first axis merged into that axis.
     * Longer elements and a symbolic count would make a symbolic size times a constant, which Kiln's shapes do not hold:
     * refused naming the node.
     */
    private static List<OnnxValue> concatStacked(OpContext c, Tensor rows) {
        boolean stack = c.a.i("new_axis", 0) != 0;
        int rank = rows.ndim() - 1;
        int axis = c.axis(c.a.i("axis", 0), stack ? rank + 1 : rank, "axis");
        if (stack) return List.of(tensor(axis == 0 ? rows : rows.permute(firstTo(rows.ndim(), axis))));
        if (rows.shape().variable(0) == null && rows.shape().variable(1 + axis) == null && rows.dim(1 + axis) != 1) {
            // as many elements as known now (a loop run while the graph is built): the rows' first axis moved next to the
            // joined one and merged with it, element t's run at t times its length
            Tensor moved = rows.permute(firstTo(rows.ndim(), axis));
            int[] dims = new int[rank];
            for (int a = 0, k = 0; a < rows.ndim(); a++) {
                if (a == axis + 1) continue;
                dims[k++] = a == axis ? moved.dim(a) * moved.dim(a + 1) : moved.dim(a);
            }
            return List.of(tensor(moved.reshape(dims)));
        }
        if (rows.shape().variable(1 + axis) != null || rows.dim(1 + axis) != 1) {
            throw c.unsupported("joining a loop's list whose length is known only when the plan runs along axis " + axis + ", where each element "
                    + "is " + rows.shape().toString() + "'s " + rows.dim(1 + axis) + " long, gives a symbolic size times " + rows.dim(1 + axis)
                    + ", which a prepared plan cannot lay out (run the model with OnnxModel.run)");
        }
        Tensor dropped = rows.squeeze(1 + axis);
        return List.of(tensor(axis == 0 ? dropped : dropped.permute(firstTo(dropped.ndim(), axis))));
    }

    /** The order of axes that moves axis 0 of a rank-{@code rank} tensor to {@code to}, the others keeping their order. */
    private static int[] firstTo(int rank, int to) {
        int[] order = new int[rank];
        for (int a = 0, k = 1; a < rank; a++) order[a] = a == to ? 0 : k++;
        return order;
    }

    /** ConcatFromSequence: the elements joined along {@code axis}, or stacked along a new one where {@code new_axis} is 1. */
    private static List<OnnxValue> concat(OpContext c) {
        if (!c.a.has("axis")) throw c.bad("needs the attribute axis");
        if (c.value(0) instanceof OnnxValue.StackedSequence(Tensor rows, DType dt)) return concatStacked(c, rows);
        OnnxValue.SequenceValue s = sequence(c, 0);
        if (s.elements().isEmpty()) throw c.bad("cannot concatenate an empty sequence (its result has no shape)");
        // a loop's list read whole: its one tensor of rows, not a join of one piece per iteration
        if (s.rows() != null) return concatStacked(c, s.rows());
        boolean stack = c.a.i("new_axis", 0) != 0;
        Tensor first = s.elements().getFirst();
        int rank = first.ndim();
        int axis = c.axis(c.a.i("axis", 0), stack ? rank + 1 : rank, "axis");
        Tensor[] ts = s.elements().toArray(Tensor[]::new);
        for (int k = 1; k < ts.length; k++) {
            if (ts[k].ndim() != rank) throw c.bad("element " + k + " has shape " + ts[k].shape() + ", element 0 has " + first.shape());
        }
        return List.of(tensor(stack ? Tensor.stack(axis, ts) : Tensor.cat(axis, ts)));
    }

    /**
     * SplitToSequence: pieces of the input along {@code axis}, of the sizes {@code split} gives (one size for every piece,
     * the last one shorter; or a size per piece), or of size 1 (squeezed unless {@code keepdims} is 1) without it. The
     * sizes decide the sequence's length, so they must be constants.
     */
    private static List<OnnxValue> split(OpContext c) {
        Tensor x = tensorIn(c, 0);
        if (x.ndim() == 0) throw c.bad("cannot split a scalar");
        int axis = c.axis(c.a.i("axis", 0), x.ndim(), "axis");
        int size = x.dim(axis);
        List<Tensor> pieces = new ArrayList<>();
        if (!c.given(1)) {
            boolean keep = c.a.i("keepdims", 1) != 0;
            for (int k = 0; k < size; k++) {
                Tensor p = x.slice(axis, k, k + 1, 1);
                pieces.add(keep ? p : p.squeeze(axis));
            }
            if (size == 0 || x.shape().isSymbolic()) return List.of(new OnnxValue.SequenceValue(pieces, x.dtype()));
            // the pieces are x's rows along the axis: kept as one tensor, so what reads the sequence whole (ConcatFromSequence, a
            // loop body's SequenceAt) reads x, not a join of one piece per element
            int[] order = new int[x.ndim()];
            order[0] = axis;
            for (int a = 0, o = 1; a < x.ndim(); a++) if (a != axis) order[o++] = a;
            Tensor rows = axis == 0 ? x : x.permute(order);
            return List.of(new OnnxValue.SequenceValue(pieces, x.dtype(), keep ? rows.unsqueeze(1 + axis) : rows));
        } else {
            if (!c.isConstant(1)) {
                throw c.unsupported("split ('" + c.node.inputs().get(1) + "') is not a constant: it decides the sequence's length, which Kiln needs when the graph is built");
            }
            Tensor sp = tensorIn(c, 1);
            long[] sizes = c.longs(1);
            if (sp.ndim() == 0) {
                long chunk = sizes[0];
                if (chunk <= 0) throw c.bad("split " + chunk + " must be positive");
                for (long start = 0; start < size; start += chunk) pieces.add(x.slice(axis, (int) start, (int) Math.min(size, start + chunk), 1));
            } else {
                if (sp.ndim() != 1) throw c.bad("split must be a scalar or 1-D, got shape " + sp.shape());
                long sum = 0;
                for (long v : sizes) {
                    if (v < 0) throw c.bad("split " + java.util.Arrays.toString(sizes) + " has a negative size");
                    sum += v;
                }
                if (sum != size) throw c.bad("split " + java.util.Arrays.toString(sizes) + " sums to " + sum + ", the axis has " + size);
                int start = 0;
                for (long v : sizes) {
                    pieces.add(x.slice(axis, start, start + (int) v, 1));
                    start += (int) v;
                }
            }
        }
        return List.of(new OnnxValue.SequenceValue(pieces, x.dtype()));
    }

    /**
     * SequenceMap: the body applied to each element of the input sequences (all of one length), an additional tensor input
     * given whole to every step; output k is the sequence of the body's output k. The length is known now, so the body is
     * built once per element, like an inlined If branch.
     */
    private static List<OnnxValue> map(OpContext c) {
        GraphBuilder outer = c.builder();
        GraphProto proto = c.a.graph("body");
        OnnxGraph body = OnnxGraph.subgraph(proto, outer.source() + " SequenceMap node '" + c.node.label() + "' body", c.a.external(),
                outer.graph().opsets(), outer.definedNames());
        if (body.inputs().size() != c.inputCount()) {
            throw c.bad("the body takes " + body.inputs().size() + " inputs, the node gives " + c.inputCount());
        }
        if (body.outputs().size() != c.outputCount()) throw c.bad("the body gives " + body.outputs().size() + " outputs, the node has " + c.outputCount());
        int length = sequence(c, 0).elements().size();
        List<OnnxValue> ins = new ArrayList<>();
        for (int i = 0; i < c.inputCount(); i++) {
            OnnxValue v = c.value(i);
            if (v instanceof OnnxValue.SequenceValue s && s.elements().size() != length) {
                throw c.bad("input " + i + " ('" + c.node.inputs().get(i) + "') has " + s.elements().size() + " elements, input 0 has " + length);
            }
            if (v instanceof OnnxValue.OptionalValue || v instanceof OnnxValue.StringValue || v instanceof OnnxValue.StackedSequence) {
                throw c.bad("input " + i + " is " + v.describe() + "; SequenceMap takes sequences and tensors");
            }
            ins.add(v);
        }
        Map<String, Tensor> reads = new HashMap<>(), constants = new HashMap<>();
        Map<String, OnnxValue> hostReads = new HashMap<>();
        for (String r : body.outerReads()) {
            if (outer.hostValue(r) != null) hostReads.put(r, outer.hostValue(r));
            else (outer.isConstant(r) ? constants : reads).put(r, outer.outerValue(r, c.device));
        }
        List<List<Tensor>> outs = new ArrayList<>();
        for (int k = 0; k < c.outputCount(); k++) outs.add(new ArrayList<>());
        for (int e = 0; e < length; e++) {
            Map<String, Tensor> bound = new HashMap<>(reads);
            for (int i = 0; i < ins.size(); i++) {
                Tensor t = switch (ins.get(i)) {
                    case OnnxValue.SequenceValue s -> s.elements().get(e);
                    case OnnxValue.TensorValue(Tensor whole) -> whole;
                    case OnnxValue.OptionalValue o -> throw new AssertionError(o);
                    case OnnxValue.StackedSequence s -> throw new AssertionError(s);
                    case OnnxValue.StringValue s -> throw new AssertionError(s);
                };
                bound.put(body.inputs().get(i), t);
            }
            List<OnnxValue> step = c.builder().nested(body, c.device).buildValues(bound, constants, hostReads);
            for (int k = 0; k < step.size(); k++) {
                if (!(step.get(k) instanceof OnnxValue.TensorValue(Tensor t))) {
                    throw c.unsupported("body output " + k + " is " + step.get(k).describe() + "; Kiln's sequences hold tensors");
                }
                outs.get(k).add(t);
            }
        }
        List<OnnxValue> result = new ArrayList<>();
        for (int k = 0; k < outs.size(); k++) {
            // an empty sequence takes its dtype from the body's declared output
            DType dt = outs.get(k).isEmpty() ? declaredDtype(c, proto, k) : outs.get(k).getFirst().dtype();
            result.add(new OnnxValue.SequenceValue(outs.get(k), dt));
        }
        return result;
    }

    private static DType declaredDtype(OpContext c, GraphProto body, int k) {
        var type = body.getOutput(k).getType();
        if (!type.hasTensorType() || type.getTensorType().getElemType() == 0) {
            throw c.unsupported("the input sequences are empty and the body's output " + k + " declares no tensor dtype for the empty result");
        }
        return TensorProtos.dtype(type.getTensorType().getElemType(), "body output " + k);
    }
}

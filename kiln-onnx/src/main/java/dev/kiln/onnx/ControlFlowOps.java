package dev.kiln.onnx;

import dev.kiln.Tensor;
import dev.kiln.types.DType;
import onnx.Onnx.GraphProto;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import static dev.kiln.onnx.OnnxOps.add;

/**
 * Operators with subgraphs: Scan (opset 9 on) on {@link Tensor#scan}, Loop ({@link LoopOp}, on {@link Tensor#loop}), and If. A subgraph is parsed and checked like a
 * graph ({@link OnnxGraph#subgraph}) and built by a {@link GraphBuilder} of its own: a scan's body once, over the scan's
 * stand-ins; an If's branch inline, over the enclosing graph's values.
 */
final class ControlFlowOps {
    private ControlFlowOps() {}

    static void register() {
        // never folded: a body may read values of the enclosing graph that are not the node's inputs
        add("Scan", 9, OnnxOps.Kind.NO_FOLD, ControlFlowOps::scan, ControlFlowOps::checkSubgraphs);
        // never folded either: a branch may read values of the enclosing graph that are not the node's inputs
        OnnxOps.addHost("If", 1, ControlFlowOps::ifThenElse, ControlFlowOps::checkSubgraphs);
        OnnxOps.addHost("Loop", 1, LoopOp::apply, ControlFlowOps::checkSubgraphs);
    }

    /** At load: every operator of the node's subgraphs (and of graphs within them) is supported; a node that is not is named. */
    static String checkSubgraphs(Node n, long opset) {
        // a missing graph attribute is the validator's to report
        for (GraphProto g : n.attrs().graphs()) {
            for (Node inner : OnnxGraph.nodes(g, n.opType() + " node '" + n.label() + "' subgraph", n.attrs().external())) OnnxOps.check(inner, opset);
        }
        return null;
    }

    /**
     * ONNX If: the outputs of then_branch when the boolean condition holds, else of else_branch. A condition known when
     * the graph is built (a constant) builds only its branch; one known only when it runs builds both and selects each
     * output element-wise where the branches agree in dtype and shape. Where they give an output in different shapes, a
     * condition known now (under run) picks the branch's; in a prepared plan a sized step copies the chosen one
     * ({@link #chosen}).
     */
    private static List<OnnxValue> ifThenElse(OpContext c) {
        Tensor cond = c.in(0);
        if (cond.numel() != 1) throw c.bad("the condition must hold one value, got shape " + cond.shape());
        GraphBuilder outer = c.builder();
        String name = c.node.inputs().getFirst();
        if (outer.isConstant(name)) {
            boolean holds = outer.valuesOf(name, cond).toDoubleArray()[0] != 0;
            return branch(c, holds ? "then_branch" : "else_branch");
        }
        List<OnnxValue> then = branch(c, "then_branch"), otherwise = branch(c, "else_branch");
        if (then.stream().anyMatch(v -> !(v instanceof OnnxValue.TensorValue)) || otherwise.stream().anyMatch(v -> !(v instanceof OnnxValue.TensorValue))) {
            // a sequence or optional is a value of the build: which one the node gives is decided by the condition's value now
            // (valuesOf refuses, naming why, where the condition is known only when a prepared plan runs)
            boolean holds = outer.valuesOf(name, cond).toDoubleArray()[0] != 0;
            return holds ? then : otherwise;
        }
        List<OnnxValue> out = new ArrayList<>();
        Tensor holds = cond.reshape().cast(dev.kiln.types.DType.BOOL);
        Boolean known = null; // the condition's value, read once, where it is known now and some output's shapes differ
        for (int k = 0; k < then.size(); k++) {
            Tensor a = ((OnnxValue.TensorValue) then.get(k)).tensor(), b = ((OnnxValue.TensorValue) otherwise.get(k)).tensor();
            if (a.dtype() == b.dtype() && a.shape().equals(b.shape())) {
                out.add(new OnnxValue.TensorValue(Tensor.where(holds, a, b)));
                continue;
            }
            if (a.dtype() != b.dtype()) {
                throw c.bad("output " + k + " is " + a.dtype() + a.shape() + " in then_branch and " + b.dtype() + b.shape()
                        + " in else_branch; an If's branches give each output in one type");
            }
            if (outer.valuesKnownNow(List.of(name))) {
                // the condition is known now (under run): the output is its branch's, at that branch's shape
                if (known == null) known = outer.valuesOf(name, cond).toDoubleArray()[0] != 0;
                out.add(known ? then.get(k) : otherwise.get(k));
                continue;
            }
            if (a.ndim() != b.ndim() && outer.capacities() != null) return assumedBranch(c, cond);
            if (a.ndim() != b.ndim()) {
                throw c.unsupported("output " + k + " is " + a.dtype() + a.shape() + " in then_branch and " + b.dtype() + b.shape()
                        + " in else_branch, with a condition known only when the plan runs; Kiln selects between branches of one rank "
                        + "(run the model with OnnxModel.run)");
            }
            out.add(new OnnxValue.TensorValue(chosen(c, k, cond, a, b)));
        }
        return out;
    }

    /**
     * Output {@code k} of an If whose condition is known only when a prepared plan runs and whose branches give it in
     * different shapes (of one rank and dtype: a data-dependent count in one branch, say): a sized host step that copies the
     * chosen branch's value, at its size in the run, into a layout of the larger of the two on every axis, and binds the first
     * differing axis to the chosen one's length. Each further differing axis is bound by a small sized step of its own (a
     * step binds one variable) that the copy reads, so every reader of the output runs once all its sizes are bound. Both
     * branches are computed on every run, as where they agree.
     */
    private static Tensor chosen(OpContext c, int k, Tensor cond, Tensor a, Tensor b) {
        dev.kiln.types.Shape sa = a.shape(), sb = b.shape();
        List<Integer> differing = new ArrayList<>();
        int[] capacity = new int[a.ndim()];
        for (int x = 0; x < a.ndim(); x++) {
            capacity[x] = Math.max(a.dim(x), b.dim(x));
            // an axis alike in both (a fixed size, or the same variable, as an input's symbolic batch) stays as it is
            if (a.dim(x) != b.dim(x) || !java.util.Objects.equals(sa.variable(x), sb.variable(x))) differing.add(x);
        }
        String output = c.node.outputs().get(k);
        Tensor flag = cond.reshape();
        List<Tensor> inputs = new ArrayList<>(List.of(flag, a, b));
        List<dev.kiln.types.Variable> bound = new ArrayList<>();
        for (int x : differing.subList(1, differing.size())) {
            dev.kiln.types.Variable v = new dev.kiln.types.Variable("extent of '" + output + "' axis " + x, 0, capacity[x]);
            inputs.add(axisStep(c, flag, a, b, x, v));
            bound.add(v);
        }
        DType dt = a.dtype(), ct = cond.dtype();
        long item = dt.byteSize(1);
        int along = differing.getFirst();
        Tensor y = SizedSteps.step(c, output, dt, capacity, along, (in, dims, out) -> {
            boolean holds = SizedSteps.doubles(in.getFirst(), ct, 1)[0] != 0;
            int pick = holds ? 1 : 2;
            SizedSteps.place(in.get(pick), dims.get(pick), out, capacity, item);
            return dims.get(pick)[along];
        }, inputs.toArray(Tensor[]::new));
        for (int j = 1; j < differing.size(); j++) y = y.withSymbolicDim(differing.get(j), bound.get(j - 1));
        for (int x = 0; x < a.ndim(); x++) if (!differing.contains(x) && sa.variable(x) != null) y = y.withSymbolicDim(x, sa.variable(x));
        return y;
    }

    /**
     * A sized host step that binds {@code v} to the length of axis {@code x} of the branch the condition {@code flag} chooses
     * when the plan runs (a static size, or the value of that branch's variable there). Its output, {@code v}'s capacity of
     * bytes laid out and never written, serves only to order the copy of the chosen value after it.
     */
    private static Tensor axisStep(OpContext c, Tensor flag, Tensor a, Tensor b, int x, dev.kiln.types.Variable v) {
        dev.kiln.types.Variable va = a.shape().variable(x), vb = b.shape().variable(x);
        int fa = a.dim(x), fb = b.dim(x);
        DType ct = flag.dtype();
        List<Tensor> inputs = new ArrayList<>(List.of(flag));
        // a branch's symbolic length is its variable's value in the run, an input of the step
        int ia = -1, ib = -1;
        if (va != null) {
            ia = inputs.size();
            inputs.add(Tensor.variable(va).to(flag.device()));
        }
        if (vb != null) {
            ib = inputs.size();
            inputs.add(Tensor.variable(vb).to(flag.device()));
        }
        int atA = ia, atB = ib;
        return Tensor.hostSized(SizedSteps.name(c) + " axis " + x + " of '" + v.name() + "'", DType.U8, new int[] {(int) v.max()}, 0, v, (in, out) -> {
            boolean holds = SizedSteps.doubles(in.getFirst(), ct, 1)[0] != 0;
            if (holds) return atA < 0 ? fa : SizedSteps.longValue(in.get(atA), DType.I64);
            return atB < 0 ? fb : SizedSteps.longValue(in.get(atB), DType.I64);
        }, inputs.toArray(Tensor[]::new));
    }

    /**
     * An If whose condition is known only when a prepared plan runs and whose branches give an output of different ranks:
     * no one plan holds both (a tensor's rank, and everything built on it, is fixed when the graph is built), so the plan is
     * built with one branch, the one its {@link PlanCapacities#branch} says (then_branch at first), inline as for a constant
     * condition. Every value the branch reads of the enclosing graph (but constants) and every output it gives passes
     * through a check of the condition, so the check runs before any of the branch's steps and before anything reads its
     * outputs: a run whose condition chose the other branch fails there with a {@link PlanCapacities.WrongBranch}, and the
     * {@link OnnxPlan} runs again with the other build ({@link OnnxPlan#execute()}). The checks copy what they pass on.
     */
    private static List<OnnxValue> assumedBranch(OpContext c, Tensor cond) {
        GraphBuilder outer = c.builder();
        String key = outer.source() + ": " + SizedSteps.name(c);
        boolean holds = outer.capacities().branch(key);
        Tensor flag = cond.reshape();
        DType ct = cond.dtype();
        java.util.function.UnaryOperator<Tensor> checked = t -> {
            long bytes = t.dtype().byteSize(t.numel());
            Tensor y = Tensor.host(SizedSteps.name(c) + " check of its condition", t.dtype(), t.dims(), (in, out) -> {
                if ((SizedSteps.doubles(in.getFirst(), ct, 1)[0] != 0) != holds) throw new PlanCapacities.WrongBranch(key, !holds);
                java.lang.foreign.MemorySegment.copy(in.get(1), 0, out, 0, bytes);
            }, flag, t);
            for (int x = 0; x < t.ndim(); x++) if (t.shape().variable(x) != null) y = y.withSymbolicDim(x, t.shape().variable(x));
            return y;
        };
        List<OnnxValue> out = new ArrayList<>();
        for (OnnxValue v : branch(c, holds ? "then_branch" : "else_branch", checked)) {
            out.add(v instanceof OnnxValue.TensorValue(Tensor t) ? new OnnxValue.TensorValue(checked.apply(t)) : v);
        }
        return out;
    }

    /** Branch {@code attr} of an If node built inline: it has no inputs, and reads the enclosing graph's values by name. */
    private static List<OnnxValue> branch(OpContext c, String attr) { return branch(c, attr, t -> t); }

    /** {@link #branch(OpContext, String)}, each value it reads of the enclosing graph but constants passed through {@code reads}. */
    private static List<OnnxValue> branch(OpContext c, String attr, java.util.function.UnaryOperator<Tensor> reads) {
        GraphProto proto = c.a.graph(attr);
        GraphBuilder outer = c.builder();
        OnnxGraph g = OnnxGraph.subgraph(proto, outer.source() + " If node '" + c.node.label() + "' " + attr, c.a.external(), outer.graph().opsets(),
                outer.definedNames());
        if (!g.inputs().isEmpty()) throw c.bad(attr + " has inputs " + g.inputs() + "; an If branch takes none");
        if (g.outputs().size() != c.outputCount()) {
            throw c.bad(attr + " gives " + g.outputs().size() + " outputs, the node has " + c.outputCount());
        }
        Map<String, Tensor> values = new HashMap<>(), constants = new HashMap<>();
        Map<String, OnnxValue> hosts = new HashMap<>();
        for (String r : g.outerReads()) {
            if (outer.hostValue(r) != null) hosts.put(r, outer.hostValue(r));
            else if (outer.isConstant(r)) constants.put(r, outer.outerValue(r, c.device));
            else values.put(r, reads.apply(outer.outerValue(r, c.device)));
        }
        return outer.nested(g, c.device).buildValues(values, constants, hosts);
    }

    /**
     * ONNX Scan: N state inputs, then M scan inputs each sliced along its scan axis (forward or reverse); the body
     * maps (states, slices) to (next states, K per-step outputs); the results are the final states, then the per-step
     * outputs stacked along their scan-output axes (forward or reverse).
     */
    private static List<Tensor> scan(OpContext c) {
        GraphProto proto = c.a.graph("body");
        int m = c.a.int32("num_scan_inputs", -1);
        int inputs = c.inputCount();
        if (m < 1 || m > inputs) throw c.bad("num_scan_inputs is " + m + ", expected 1 to the node's " + inputs + " inputs");
        int n = inputs - m;
        for (int i = 0; i < inputs; i++) c.in(i); // every input is required: states and scan inputs alike
        GraphBuilder outer = c.builder();
        OnnxGraph body = OnnxGraph.subgraph(proto, outer.source() + " Scan node '" + c.node.label() + "' body", c.a.external(), outer.graph().opsets(),
                outer.definedNames());
        if (body.inputs().size() != inputs) {
            throw c.bad("the body takes " + body.inputs().size() + " inputs, the node gives " + n + " states and " + m + " scan inputs");
        }
        int k = body.outputs().size() - n;
        if (k < 0) throw c.bad("the body gives " + body.outputs().size() + " outputs, fewer than the " + n + " states");
        int[] inAxes = c.attrInts("scan_input_axes", m, "one per scan input"), inDirs = c.attrInts("scan_input_directions", m, "one per scan input");
        int[] outAxes = c.attrInts("scan_output_axes", k, "one per scan output"), outDirs = c.attrInts("scan_output_directions", k, "one per scan output");

        List<Tensor> initial = new ArrayList<>(), sequences = new ArrayList<>();
        for (int i = 0; i < n; i++) initial.add(c.in(i));
        for (int j = 0; j < m; j++) {
            Tensor x = c.in(n + j);
            if (x.ndim() == 0) throw c.bad("scan input " + j + " ('" + c.node.inputs().get(n + j) + "') is a scalar; it needs an axis to scan");
            int axis = c.axis(inAxes == null ? 0 : inAxes[j], x.ndim(), "scan_input_axes[" + j + "]");
            x = x.permute(axisFirst(axis, x.ndim()));
            sequences.add(direction(c, inDirs, j, "scan_input_directions") ? x.flip(0) : x);
        }
        OuterReads reads = OuterReads.of(body, outer, c);
        if (!reads.sequences().isEmpty()) {
            throw c.unsupported("the body reads " + reads.sequences() + ", sequences of the enclosing graph; a Scan's body reads tensors");
        }
        Map<String, Tensor> outerConstants = reads.constants();
        List<String> outerNames = reads.names();
        List<Tensor> outerValues = reads.values();
        List<Tensor> results = Tensor.scan((state, slices, constants) -> {
            Map<String, Tensor> bound = new LinkedHashMap<>();
            for (int i = 0; i < n; i++) bound.put(body.inputs().get(i), state.get(i));
            for (int j = 0; j < m; j++) bound.put(body.inputs().get(n + j), slices.get(j));
            for (int r = 0; r < outerNames.size(); r++) bound.put(outerNames.get(r), constants.get(r));
            return outer.nested(body, c.device).build(bound, outerConstants);
        }, initial, sequences, outerValues);

        List<Tensor> out = new ArrayList<>(results.subList(0, n));
        for (int j = 0; j < k; j++) {
            Tensor y = results.get(n + j); // (steps, ...)
            if (direction(c, outDirs, j, "scan_output_directions")) y = y.flip(0);
            int axis = c.axis(outAxes == null ? 0 : outAxes[j], y.ndim(), "scan_output_axes[" + j + "]");
            out.add(y.permute(firstTo(axis, y.ndim())));
        }
        return out;
    }

    private static boolean direction(OpContext c, int[] dirs, int j, String name) {
        int d = dirs == null ? 0 : dirs[j];
        if (d != 0 && d != 1) throw c.bad(name + "[" + j + "] is " + d + ", expected 0 (forward) or 1 (reverse)");
        return d == 1;
    }

    /** The permutation that brings {@code axis} to the front. */
    private static int[] axisFirst(int axis, int rank) {
        int[] order = new int[rank];
        order[0] = axis;
        for (int i = 0, o = 1; i < rank; i++) if (i != axis) order[o++] = i;
        return order;
    }

    /** The permutation that moves the front axis to {@code axis}. */
    private static int[] firstTo(int axis, int rank) {
        int[] order = new int[rank];
        for (int j = 0; j < rank; j++) order[j] = j < axis ? j + 1 : j == axis ? 0 : j;
        return order;
    }
}

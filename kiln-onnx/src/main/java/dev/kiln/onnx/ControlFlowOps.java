package dev.kiln.onnx;

import dev.kiln.Tensor;
import onnx.Onnx.GraphProto;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import static dev.kiln.onnx.OnnxOps.add;

/**
 * Operators with a subgraph: Scan (opset 9 on), on {@link Tensor#scan}. The body is parsed and checked like a graph
 * ({@link OnnxGraph#subgraph}) and built once, by a {@link GraphBuilder} of its own, over the scan's stand-ins.
 */
final class ControlFlowOps {
    private ControlFlowOps() {}

    static void register() {
        // never folded: a body may read values of the enclosing graph that are not the node's inputs
        add("Scan", 9, OnnxOps.Kind.NO_FOLD, ControlFlowOps::scan, ControlFlowOps::checkBody);
    }

    /** At load: every operator of the body (and of bodies within it) is supported; a node that is not is named. */
    private static String checkBody(Node n, long opset) {
        GraphProto body = n.attrs().graph("body");
        if (body == null) return null; // the validator reports the missing attribute
        for (Node inner : OnnxGraph.nodes(body, "Scan node '" + n.label() + "' body", n.attrs().external())) OnnxOps.check(inner, opset);
        return null;
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
        // what the body reads of the enclosing graph: constants stay constants in it; other values become the scan's constants
        Map<String, Tensor> outerConstants = new HashMap<>();
        List<String> outerNames = new ArrayList<>();
        List<Tensor> outerValues = new ArrayList<>();
        for (String name : body.outerReads()) {
            if (outer.isConstant(name)) outerConstants.put(name, outer.outerValue(name, c.device));
            else {
                outerNames.add(name);
                outerValues.add(outer.outerValue(name, c.device));
            }
        }
        List<Tensor> results = Tensor.scan((state, slices, constants) -> {
            Map<String, Tensor> bound = new LinkedHashMap<>();
            for (int i = 0; i < n; i++) bound.put(body.inputs().get(i), state.get(i));
            for (int j = 0; j < m; j++) bound.put(body.inputs().get(n + j), slices.get(j));
            for (int r = 0; r < outerNames.size(); r++) bound.put(outerNames.get(r), constants.get(r));
            return new GraphBuilder(body, c.device).build(bound, outerConstants);
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

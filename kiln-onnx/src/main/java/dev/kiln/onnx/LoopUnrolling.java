package dev.kiln.onnx;

import dev.kiln.Tensor;
import dev.kiln.runtime.DeviceRegistry;
import dev.kiln.types.DType;
import onnx.Onnx.GraphProto;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * ONNX Loop carrying sequences or optionals: a {@link Tensor#scan} carries tensors of one shape, but a sequence's length
 * and elements change from step to step, so the body is built once per iteration, inline, with the iteration number a
 * constant (a SequenceAt or Slice of it is then known while the graph is built). The trip count and the initial
 * condition are read when the graph is built; the body's condition must stay true, as for a scanned loop.
 */
final class LoopUnrolling {
    /** More iterations than this would build a graph of that many copies of the body: refused. */
    static final int MAX_ITERATIONS = 4096;

    private LoopUnrolling() {}

    static List<OnnxValue> unroll(OpContext c) {
        GraphBuilder outer = c.builder();
        List<String> in = c.node.inputs();
        if (!c.given(0)) throw c.unsupported("a Loop without a trip count M runs until its condition fails, known only while it runs");
        long[] m = c.longs(0);
        if (m.length != 1 || m[0] < 0) throw c.bad("trip count M is " + java.util.Arrays.toString(m) + ", expected one value from 0");
        if (m[0] > MAX_ITERATIONS) {
            throw c.unsupported("a Loop carrying sequences or optionals is built once per iteration; " + m[0] + " iterations is over Kiln's " + MAX_ITERATIONS);
        }
        boolean run = !c.given(1) || c.longs(1).length == 1 && c.longs(1)[0] != 0;
        if (c.given(1) && c.longs(1).length != 1) throw c.bad("the condition must hold one value");
        int iterations = run ? (int) m[0] : 0;
        GraphProto proto = c.a.graph("body");
        OnnxGraph body = OnnxGraph.subgraph(proto, outer.source() + " Loop node '" + c.node.label() + "' body", c.a.external(), outer.graph().opsets(),
                outer.definedNames());
        int n = Math.max(0, in.size() - 2);
        if (body.inputs().size() != n + 2) throw c.bad("the body takes " + body.inputs().size() + " inputs, expected " + (n + 2));
        int k = body.outputs().size() - 1 - n;
        if (k < 0) throw c.bad("the body gives " + body.outputs().size() + " outputs, expected at least " + (n + 1));
        if (!LoopOp.conditionStaysTrue(body)) {
            throw c.unsupported("the body computes its condition output; a loop that may end early has a number of steps known only while it runs");
        }
        if (k > 0 && iterations == 0) throw c.unsupported("no iteration runs, and Kiln cannot give the scan outputs' shapes without one");
        Map<String, Tensor> reads = new HashMap<>(), constants = new HashMap<>();
        Map<String, OnnxValue> hostReads = new HashMap<>();
        for (String r : body.outerReads()) {
            if (outer.hostValue(r) != null) hostReads.put(r, outer.hostValue(r));
            else (outer.isConstant(r) ? constants : reads).put(r, outer.outerValue(r, c.device));
        }
        List<OnnxValue> state = new ArrayList<>();
        for (int i = 0; i < n; i++) state.add(c.value(2 + i));
        List<List<Tensor>> scans = new ArrayList<>();
        for (int j = 0; j < k; j++) scans.add(new ArrayList<>());
        var interp = DeviceRegistry.get("INTERP");
        Tensor yes = Tensor.of(new boolean[] {true}).reshape().to(interp).realize();
        for (int it = 0; it < iterations; it++) {
            Map<String, Tensor> tensors = new HashMap<>(reads), fixed = new HashMap<>(constants);
            Map<String, OnnxValue> hosts = new HashMap<>(hostReads);
            fixed.put(body.inputs().get(0), Tensor.scalar(it, DType.I64).to(interp).realize());
            fixed.put(body.inputs().get(1), yes);
            for (int i = 0; i < n; i++) {
                String name = body.inputs().get(2 + i);
                OnnxValue v = state.get(i);
                // a body that gives a sequence (or tensor) for a state its input declares optional passes it on present
                if (proto.getInput(2 + i).getType().hasOptionalType() && !(v instanceof OnnxValue.OptionalValue)) v = new OnnxValue.OptionalValue(v);
                if (v instanceof OnnxValue.TensorValue(Tensor t)) tensors.put(name, t);
                else hosts.put(name, v);
            }
            List<OnnxValue> out = outer.nested(body, c.device).buildValues(tensors, fixed, hosts);
            state = new ArrayList<>(out.subList(1, 1 + n));
            for (int j = 0; j < k; j++) {
                if (!(out.get(1 + n + j) instanceof OnnxValue.TensorValue(Tensor t))) {
                    throw c.unsupported("scan output " + j + " is " + out.get(1 + n + j).describe() + "; Loop stacks tensors");
                }
                scans.get(j).add(t);
            }
        }
        List<OnnxValue> result = new ArrayList<>(state);
        for (List<Tensor> s : scans) result.add(new OnnxValue.TensorValue(Tensor.stack(0, s.toArray(Tensor[]::new))));
        return result;
    }
}

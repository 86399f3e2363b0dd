package dev.kiln.onnx;

import dev.kiln.LoopLimit;
import dev.kiln.LoopLimitException;
import dev.kiln.Tensor;
import dev.kiln.runtime.DeviceRegistry;
import dev.kiln.types.DType;
import onnx.Onnx.GraphProto;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * ONNX Loop that cannot be one plan, the slower path {@link LoopOp} takes only where it must: one carrying a sequence or an
 * optional the body does more with than append to (a sequence's length and elements are values of the build, and change from
 * step to step), a tensor whose shape the body changes and also reads (a decoder attending over its growing tokens), or a
 * body that needs an iteration's values while it is built (a Slice to the iteration number): Kiln's loop bodies have static
 * shapes. The body is built once
 * per iteration, inline, with the iteration number a constant (a SequenceAt or Slice of it is then known while the graph is
 * built). The trip count and the initial condition are read when the graph is built; a condition the body computes is
 * read after each iteration, which computes that iteration's tensors then (so each next iteration starts from computed
 * values and the work stays linear in the iterations). Reading values while the graph is built needs them known then:
 * under {@link OnnxModel#run}, or constants; a prepared plan refuses the loop otherwise ({@link GraphBuilder#valuesOf}).
 * Each loop built this way says so, and why, once per process (INFO, this class's logger).
 */
final class LoopUnrolling {
    /** More iterations than this would build a graph of that many copies of the body: refused. */
    static final int MAX_ITERATIONS = 4096;

    private static final System.Logger LOG = System.getLogger(LoopUnrolling.class.getName());
    /** What has been logged: the loops (model and node) built per iteration, with why. */
    private static final java.util.Set<String> SAID = java.util.concurrent.ConcurrentHashMap.newKeySet();

    private LoopUnrolling() {}

    /** The messages logged so far, each naming a loop built per iteration and why (for tests). */
    static java.util.Set<String> said() { return java.util.Collections.unmodifiableSet(SAID); }

    /** The loop of {@code c}'s node built once per iteration, because of {@code why} (logged once per model and node). */
    static List<OnnxValue> unroll(OpContext c, String why) {
        List<OnnxValue> out = unrolled(c, why);
        String message = c.builder().source() + ": " + SizedSteps.name(c) + " is built once per iteration, not as one body plan: " + why;
        if (SAID.add(message)) LOG.log(System.Logger.Level.INFO, message);
        return out;
    }

    private static List<OnnxValue> unrolled(OpContext c, String why) {
        GraphBuilder outer = c.builder();
        long m = c.given(0) ? c.scalarLong(0) : Long.MAX_VALUE;
        boolean run = !c.given(1) || c.longs(1).length == 1 && c.longs(1)[0] != 0;
        if (c.given(1) && c.longs(1).length != 1) throw c.bad("the condition must hold one value");
        GraphProto proto = c.a.graph("body");
        OnnxGraph body = LoopOp.body(c);
        int n = Math.max(0, c.node.inputs().size() - 2);
        int k = body.outputs().size() - 1 - n;
        boolean forLoop = LoopOp.conditionStaysTrue(body);
        long bound = Math.min(m, LoopLimit.maxIterations());
        if (forLoop && run && bound > MAX_ITERATIONS) {
            throw c.unsupported("this Loop is built once per iteration (" + why + "); " + m + " iterations is over Kiln's " + MAX_ITERATIONS);
        }
        if (!forLoop) {
            List<String> deciding = new ArrayList<>(c.node.inputs());
            deciding.addAll(body.outerReads());
            if (!outer.valuesKnownNow(deciding)) {
                throw c.unsupported("this Loop is built once per iteration (" + why + ") and its body computes its condition, which is "
                        + "read after each iteration while the graph is built; a prepared plan has no input values then (run the model with OnnxModel.run)");
            }
        }
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
        for (long it = 0; run && it < m; it++) {
            if (it >= LoopLimit.maxIterations()) throw new LoopLimitException(c.node.opType() + " node '" + c.node.label() + "'", LoopLimit.maxIterations());
            if (it >= MAX_ITERATIONS) {
                throw c.unsupported("this Loop is built once per iteration (" + why + "); it was still running after Kiln's " + MAX_ITERATIONS);
            }
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
            if (!forLoop) {
                if (!(out.getFirst() instanceof OnnxValue.TensorValue(Tensor cond)) || cond.numel() != 1) {
                    throw c.bad("the body's condition output is " + out.getFirst().describe() + ", expected one boolean");
                }
                // this iteration's values computed now: the next iteration, and the condition after it, start from them
                for (OnnxValue v : state) if (v instanceof OnnxValue.TensorValue(Tensor t)) t.realize();
                for (List<Tensor> s : scans) s.getLast().realize();
                run = cond.realize().toDoubleArray()[0] != 0;
            }
        }
        if (k > 0 && scans.getFirst().isEmpty()) throw c.unsupported("no iteration runs, and Kiln cannot give the scan outputs' shapes without one");
        List<OnnxValue> result = new ArrayList<>(state);
        for (List<Tensor> s : scans) result.add(new OnnxValue.TensorValue(Tensor.stack(0, s.toArray(Tensor[]::new))));
        return result;
    }
}

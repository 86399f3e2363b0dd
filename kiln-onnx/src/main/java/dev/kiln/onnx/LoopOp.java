package dev.kiln.onnx;

import dev.kiln.LoopLimit;
import dev.kiln.LoopResult;
import dev.kiln.LoopStep;
import dev.kiln.Tensor;
import dev.kiln.runtime.ExtentOutOfRangeException;
import dev.kiln.types.DType;
import dev.kiln.types.Variable;
import onnx.Onnx.GraphProto;

import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * ONNX Loop over tensors, on {@link Tensor#loop}: the body is built once, over stand-ins, into a plan of its own that runs
 * once per iteration with the loop-carried values kept in the loop's buffers. The trip count M and the initial condition
 * are read when the plan runs, and a body that computes its condition has it computed by its plan, so a prepared plan
 * serves every count. A body whose condition is its condition input (or a constant true) is a for-loop: the host step
 * never reads a condition.
 *
 * <p>Scan outputs have one row per iteration. Where the number of iterations is known when the graph is built (M and the
 * initial condition constants, the condition never computed) they are the loop's outputs as they are. Otherwise their
 * length is known only once the loop has run, a data-dependent size like NonZero's: the loop is run while the graph is
 * built (its inputs are known then under {@link OnnxModel#run}), first with room for M rows (at most
 * {@value #FIRST_CAPACITY}) and again with room for all when more ran, and the outputs are its rows that ran. A prepared
 * plan, whose inputs have no values while it is built, lays them out at a capacity (a small constant M, else the rows the
 * plan reserves in its {@link PlanCapacities}, which it grows when a run needs more) and binds their length when it runs to
 * the iterations that ran, as NonZero's count is bound ({@link SizedSteps}). A list the body only appends to, or a tensor it
 * only extends with Concat ({@link ListAccumulators}), is built as one more scan output, under {@link OnnxModel#run} and in a
 * prepared plan alike; where the body also reads such a tensor, its last element is carried beside the states, and the
 * whole of it so far in a buffer laid out at the most the loop's rows let it grow to, its length binding a variable of
 * the body's plan before each iteration ({@link GrownTensors.Whole}, on {@link LoopStep.Size}). Only a body that cannot be
 * one plan over stand-ins (other sequences and optionals, a loop-carried tensor whose shape changes otherwise, a read of a
 * grown tensor that its symbolic length does not allow, an operator that needs an iteration's values while it is built)
 * is built once per iteration instead ({@link LoopUnrolling}, which logs why), where the values are known while the graph
 * is built or the loop is a for-loop, and refused otherwise.
 */
final class LoopOp {
    /** Rows kept for the scan outputs on the first run of a loop of unknown length (M when smaller). */
    static final int FIRST_CAPACITY = 1024;

    private LoopOp() {}

    /**
     * Why the body cannot be one plan over stand-ins: a loop-carried value whose shape or dtype the body changes, or a body
     * that needs an iteration's values while it is built (a shape computed from the iteration number or a state).
     */
    private static final class PerIteration extends RuntimeException {
        PerIteration(String message, Throwable cause) { super(message, cause, false, false); }
    }

    /** A read of a grown tensor taken for a read of its last element reads more of it: it is built again as a whole read. */
    private static final class ReadsWhole extends RuntimeException {
        final int node;

        ReadsWhole(int node) {
            super(null, null, false, false);
            this.node = node;
        }
    }

    static List<OnnxValue> apply(OpContext c) {
        Set<Integer> readWhole = new HashSet<>();
        while (true) {
            try {
                return apply(c, readWhole);
            } catch (ReadsWhole e) {
                if (!readWhole.add(e.node)) throw new IllegalStateException("node " + e.node + " was already built as a whole read", e);
            }
        }
    }

    private static List<OnnxValue> apply(OpContext c, Set<Integer> readWhole) {
        GraphBuilder outer = c.builder();
        OnnxGraph body = body(c);
        int n = Math.max(0, c.node.inputs().size() - 2), k = body.outputs().size() - 1 - n;
        // a list the body only appends to, or a tensor it only extends with Concat, is a scan output by another name: one
        // plan, whether the values are known now (under run) or only when a prepared plan runs
        List<ListAccumulators.Accumulator> lists = ListAccumulators.of(c, body, n, readWhole);
        if (lists == null) {
            return LoopUnrolling.unroll(c, "it carries a sequence or optional that the body does more with than append to (its length and "
                    + "elements are values of the build, known one iteration at a time)");
        }
        for (String r : body.outerReads()) {
            // a sequence of tensors of one shape is read as one tensor of its rows (OuterReads); others are values of the build
            if (outer.hostValue(r) != null && OuterReads.stackable(outer.hostValue(r)) == null) {
                return LoopUnrolling.unroll(c, "the body reads '" + r + "', " + outer.hostValue(r).describe() + " of the enclosing graph, which is "
                        + "no one tensor a body plan could take as an input (an optional, an empty sequence, or tensors of different shapes)");
            }
        }
        Tensor m = c.given(0) ? c.in(0) : null, cond = c.given(1) ? c.in(1) : null;
        if (m != null && (m.numel() != 1 || m.dtype().isFloat() || m.dtype().isBool())) {
            throw c.bad("trip count M must be one integer, got " + m.dtype() + m.shape());
        }
        if (cond != null && cond.numel() != 1) throw c.bad("the condition must hold one value, got shape " + cond.shape());
        boolean forLoop = conditionStaysTrue(body);
        long known = knownIterations(c, forLoop);
        Layout shape = new Layout(n, k, lists);
        OuterReads reads = OuterReads.of(body, outer, c);
        // what decides the number of iterations: the node's inputs and what the body reads of the enclosing graph
        List<String> deciding = new ArrayList<>(c.node.inputs());
        deciding.addAll(reads.names());
        int rows = k + lists.size();
        try {
            Loop loop = new Loop(c, body, shape, forLoop, reads, m, cond);
            if (rows == 0 || known >= 0) {
                // no rows to count, or as many as known now: the loop's outputs as they are
                int capacity = rows == 0 ? 0 : (int) Math.min(known, Integer.MAX_VALUE - 8);
                LoopResult r = loop.at(capacity);
                return shape.values(c, r.states(), r.outputs(), capacity);
            }
            if (!outer.valuesKnownNow(deciding)) return shape.values(c, plannedRun(c, loop), -1);
            long limit = m == null ? FIRST_CAPACITY : Math.max(0, c.longs(0)[0]);
            int capacity = (int) Math.min(limit, FIRST_CAPACITY);
            LoopResult r = loop.realizedAt(capacity, limit);
            capacity = r.outputs().getFirst().dim(0);
            long ran = r.iterations().toLongArray()[0];
            if (ran > capacity) {
                // more iterations than rows: run again with a row for each (the body is deterministic, so it runs as many)
                if (ran > Integer.MAX_VALUE - 8) throw c.unsupported(ran + " iterations are more rows than a scan output holds");
                r = loop.at((int) ran).realize();
            }
            List<Tensor> outputs = new ArrayList<>();
            for (Tensor y : r.outputs()) outputs.add(y.slice(0, 0, (int) ran, 1));
            return shape.values(c, r.states(), outputs, (int) ran);
        } catch (PerIteration e) {
            // built per iteration where M and the condition are known now: all of them under run, and in a prepared plan a
            // for-loop whose M (and initial condition) are constants
            boolean constants = c.given(0) && c.isConstant(0) && (!c.given(1) || c.isConstant(1));
            if (forLoop && constants || outer.valuesKnownNow(deciding)) return LoopUnrolling.unroll(c, e.getMessage());
            throw c.unsupported(e.getMessage() + "; such a loop is built once per iteration, which needs its inputs' values while the graph is "
                    + "built, and a prepared plan has none (run the model with OnnxModel.run)");
        }
    }

    /**
     * The loop in a prepared plan whose iterations are known only when it runs: its final states, then its sized rows. The
     * lengths of the grown tensors it reads whole grow with its rows: a run past them fails on the length, and the plan grows.
     */
    private static List<List<Tensor>> plannedRun(OpContext c, Loop loop) {
        LoopResult r = loop.at(planCapacity(c));
        PlanCapacities capacities = c.builder().capacities();
        for (Variable v : loop.lengths()) capacities.register(capacityKey(c), v);
        return List.of(r.states(), planned(c, r));
    }

    /**
     * The loop to build at a number of rows: its step, initial states and sizes, which depend on the rows where the body
     * reads a grown tensor whole (its buffer holds the initial tensor and an element a row). Such an element's length is
     * learnt by tracing the body once before (a loop of no rows, never run).
     */
    private static final class Loop {
        private final OpContext c;
        private final OnnxGraph body;
        private final Layout layout;
        private final boolean forLoop;
        private final OuterReads reads;
        private final Tensor m, cond;
        private final List<Integer> elements = new ArrayList<>();
        private List<Variable> lengths = List.of();

        Loop(OpContext c, OnnxGraph body, Layout layout, boolean forLoop, OuterReads reads, Tensor m, Tensor cond) {
            this.c = c;
            this.body = body;
            this.layout = layout;
            this.forLoop = forLoop;
            this.reads = reads;
            this.m = m;
            this.cond = cond;
            List<ListAccumulators.Grows> wholes = layout.wholes();
            if (!wholes.isEmpty()) {
                for (int j = 0; j < wholes.size(); j++) elements.add(1);
                LoopResult probe = at(0);
                for (int j = 0; j < wholes.size(); j++) {
                    ListAccumulators.Grows g = wholes.get(j);
                    elements.set(j, probe.outputs().get(layout.k() + layout.lists().indexOf(g)).dim(1 + g.axis()));
                }
            }
        }

        /** The variables the lengths of the grown tensors read whole bind, in the last loop built. */
        List<Variable> lengths() { return lengths; }

        /** The loop with its outputs stacked at {@code rows} rows (lazy). */
        LoopResult at(int rows) {
            List<GrownTensors.Whole> wholes = new ArrayList<>();
            List<ListAccumulators.Grows> grows = layout.wholes();
            for (int j = 0; j < grows.size(); j++) wholes.add(GrownTensors.Whole.of(c, grows.get(j), elements.get(j), rows));
            List<Tensor> initial = new ArrayList<>();
            for (int i : layout.carried()) initial.add(c.in(2 + i));
            for (ListAccumulators.Grows g : layout.tails()) initial.add(GrownTensors.last(g.initial(), g.axis()));
            List<LoopStep.Size> sizes = new ArrayList<>();
            for (GrownTensors.Whole w : wholes) {
                initial.add(w.initialBuffer().to(c.device));
                sizes.add(new LoopStep.Size(w.length(), initial.size()));
                initial.add(w.initialLength(c.device));
            }
            lengths = wholes.stream().map(GrownTensors.Whole::length).toList();
            return Tensor.loop(step(c, body, layout, forLoop, reads, wholes), m, cond, initial, reads.values(), rows, sizes.toArray(LoopStep.Size[]::new));
        }

        /**
         * The loop at {@code rows} rows, run now; where a grown tensor it reads whole outgrows its buffer (more iterations
         * than rows), run again at twice the rows, up to {@code limit}.
         */
        LoopResult realizedAt(int rows, long limit) {
            while (true) {
                try {
                    return at(rows).realize();
                } catch (ExtentOutOfRangeException e) {
                    long more = Math.min(2L * Math.max(1, rows), Math.min(limit, Integer.MAX_VALUE - 8));
                    if (!lengths.contains(e.variable()) || more <= rows) throw e;
                    rows = (int) more;
                }
            }
        }
    }

    /**
     * Where the body's values go: of the loop's {@code n} states, those carried as tensors ({@code carried}, the loop
     * construct's first states) and the lists it appends to ({@code lists}, the construct's outputs after the {@code k} scan
     * outputs), the last element of each grown tensor the body reads ({@code tails}, the construct's states after the carried
     * ones); and back to the node's outputs, the N final states then the K scan outputs.
     */
    private record Layout(int n, int k, List<ListAccumulators.Accumulator> lists, List<Integer> carried) {
        Layout(int n, int k, List<ListAccumulators.Accumulator> lists) { this(n, k, lists, carriedOf(n, lists)); }

        /** The grown tensors whose last element the body reads, each carried as a one-long tail after the carried states. */
        List<ListAccumulators.Grows> tails() {
            List<ListAccumulators.Grows> out = new ArrayList<>();
            for (ListAccumulators.Accumulator a : lists) if (a instanceof ListAccumulators.Grows g && !g.lastReads().isEmpty()) out.add(g);
            return out;
        }

        /** The grown tensors the body reads whole, each carried as a buffer and its length after the tails. */
        List<ListAccumulators.Grows> wholes() {
            List<ListAccumulators.Grows> out = new ArrayList<>();
            for (ListAccumulators.Accumulator a : lists) if (a instanceof ListAccumulators.Grows g && !g.wholeReads().isEmpty()) out.add(g);
            return out;
        }

        private static List<Integer> carriedOf(int n, List<ListAccumulators.Accumulator> lists) {
            List<Integer> out = new ArrayList<>();
            for (int i = 0; i < n; i++) {
                int state = i;
                if (lists.stream().noneMatch(a -> a.state() == state)) out.add(i);
            }
            return out;
        }

        /** The accumulator of state {@code i}, or null where it is carried as a tensor. */
        ListAccumulators.Accumulator list(int i) { return lists.stream().filter(a -> a.state() == i).findFirst().orElse(null); }

        List<OnnxValue> values(OpContext c, List<List<Tensor>> statesAndRows, int ran) { return values(c, statesAndRows.get(0), statesAndRows.get(1), ran); }

        /**
         * The node's outputs from the construct's final states and stacked rows; {@code ran} the iterations, or -1 where they
         * are known only when the plan runs (a list is then a {@link OnnxValue.StackedSequence} over its sized rows, a grown
         * tensor a sized host step's output).
         */
        List<OnnxValue> values(OpContext c, List<Tensor> states, List<Tensor> rows, int ran) {
            List<OnnxValue> out = new ArrayList<>();
            for (int i = 0, s = 0, q = 0; i < n; i++) {
                ListAccumulators.Accumulator a = list(i);
                if (a == null) {
                    out.add(new OnnxValue.TensorValue(states.get(s++)));
                    continue;
                }
                Tensor stacked = rows.get(k + q++);
                out.add(switch (a) {
                    case ListAccumulators.ListOf l when ran < 0 -> new OnnxValue.StackedSequence(stacked, l.dtype());
                    case ListAccumulators.ListOf l -> OnnxValue.SequenceValue.ofRows(stacked);
                    case ListAccumulators.Grows g when ran < 0 -> new OnnxValue.TensorValue(GrownTensors.inPlan(c, g, stacked));
                    case ListAccumulators.Grows g -> new OnnxValue.TensorValue(GrownTensors.joined(g, stacked));
                });
            }
            for (int j = 0; j < k; j++) out.add(new OnnxValue.TensorValue(rows.get(j)));
            return out;
        }
    }

    /**
     * The rows a prepared plan lays a loop's scan outputs out at when the iterations are known only when it runs: the trip
     * count M where it is a constant within the loop limit (no run needs more), else the capacity the plan reserves for this
     * loop ({@link PlanCapacities}: a first guess, grown by the plan when a run needs more).
     */
    private static int planCapacity(OpContext c) {
        if (c.given(0) && c.isConstant(0)) {
            long m = Math.max(0, c.longs(0)[0]);
            if (m <= Math.min(LoopLimit.maxIterations(), PlanCapacities.FIRST_ROWS)) return (int) m;
        }
        PlanCapacities capacities = c.builder().capacities();
        if (capacities == null) throw new IllegalStateException(SizedSteps.name(c) + ": built for a plan without the plan's capacities");
        int rows = capacities.rows(capacityKey(c));
        // a constant M smaller than the capacity bounds the iterations: no need for more rows than it
        return c.given(0) && c.isConstant(0) ? (int) Math.min(rows, Math.max(0, c.longs(0)[0])) : rows;
    }

    /** The loop as the plan's capacities name it: its node within its graph. */
    private static String capacityKey(OpContext c) { return c.builder().source() + ": " + SizedSteps.name(c); }

    /**
     * The scan outputs of a loop that may stop early, in a prepared plan: laid out at a capacity, their first axis bound when
     * the plan runs to the iterations that ran (a sized host step over the first output and {@link LoopResult#iterations()},
     * the others copied after it, so every reader runs once the count is bound). A run of more iterations than the capacity
     * fails that step with an {@link dev.kiln.runtime.ExtentOutOfRangeException} on a variable registered with the plan's
     * capacities, which the plan answers by building itself again with more rows ({@link OnnxPlan#execute()}).
     */
    private static List<Tensor> planned(OpContext c, LoopResult r) {
        List<Tensor> outputs = r.outputs();
        int capacity = outputs.getFirst().dim(0);
        boolean bounded = c.given(0) && c.isConstant(0) && capacity >= Math.max(0, c.longs(0)[0]);
        if (capacity == 0 && bounded) return outputs; // no rows whatever runs
        String name = SizedSteps.name(c);
        Variable ran = new Variable("iterations of " + name, 0, capacity);
        if (!bounded) c.builder().capacities().register(capacityKey(c), ran);
        Tensor first = outputs.getFirst();
        long firstRow = capacity == 0 ? 0 : first.dtype().byteSize(first.numel() / capacity);
        List<Tensor> sized = new ArrayList<>();
        sized.add(Tensor.hostSized(name, first.dtype(), first.dims(), 0, ran, (in, out) -> {
            // the iterations that ran; past the capacity the plan's step refuses the count, and the plan grows
            long n = SizedSteps.longValue(in.get(1), DType.I64);
            MemorySegment.copy(in.getFirst(), 0, out, 0, Math.min(n, capacity) * firstRow);
            return n;
        }, first, r.iterations()));
        for (int j = 1; j < outputs.size(); j++) {
            Tensor y = outputs.get(j);
            long bytes = y.dtype().byteSize(y.numel());
            // reads the first output, so it runs after the step that binds the count; its rows past the count are never read
            sized.add(Tensor.host(name + " scan output " + j, y.dtype(), y.dims(), (in, out) -> MemorySegment.copy(in.get(1), 0, out, 0, bytes),
                    sized.getFirst(), y).withSymbolicDim(0, ran));
        }
        return sized;
    }

    /** The body, parsed and checked against the node: iteration, condition and N loop-carried inputs; condition and N outputs, then scan outputs. */
    static OnnxGraph body(OpContext c) {
        GraphBuilder outer = c.builder();
        GraphProto proto = c.a.graph("body");
        OnnxGraph body = OnnxGraph.subgraph(proto, outer.source() + " Loop node '" + c.node.label() + "' body", c.a.external(), outer.graph().opsets(),
                outer.definedNames());
        int n = Math.max(0, c.node.inputs().size() - 2);
        if (body.inputs().size() != n + 2) {
            throw c.bad("the body takes " + body.inputs().size() + " inputs, expected " + (n + 2) + " (iteration, condition, " + n + " loop-carried values)");
        }
        if (body.outputs().size() < n + 1) {
            throw c.bad("the body gives " + body.outputs().size() + " outputs, expected at least " + (n + 1) + " (condition, " + n + " loop-carried values)");
        }
        return body;
    }

    /**
     * The number of iterations when it is known now: M and the initial condition constants (or absent) and the body's
     * condition never computed; or none when the initial condition is a constant false. Else -1.
     */
    private static long knownIterations(OpContext c, boolean forLoop) {
        if (c.given(1) && c.isConstant(1) && c.longs(1)[0] == 0) return 0;
        if (!forLoop || !c.given(0) || !c.isConstant(0) || c.given(1) && !c.isConstant(1)) return -1;
        long m = c.longs(0)[0];
        if (m > LoopLimit.maxIterations()) return -1; // the loop fails at its limit when it runs; no rows are reserved for it
        return Math.max(0, m);
    }

    /** The body as a loop step: built by a builder of its own over the step's stand-ins. */
    private static LoopStep step(OpContext c, OnnxGraph body, Layout layout, boolean forLoop, OuterReads reads, List<GrownTensors.Whole> wholes) {
        Tensor yes = Tensor.of(new boolean[] {true}).reshape().to(c.device).realize();
        List<ListAccumulators.Grows> tails = layout.tails(), whole = layout.wholes();
        // a grown tensor the body also reads: its Concat reads it under another name, bound to the empty stand-in, its last
        // reads under a third, bound to the carried tail, and its whole reads its own name, bound to the tensor so far
        OnnxGraph built = body;
        for (ListAccumulators.Accumulator a : layout.lists()) {
            if (a instanceof ListAccumulators.Grows g && (tails.contains(g) || whole.contains(g))) built = GrownTensors.renamed(built, g);
        }
        OnnxGraph traced = built;
        int firstWhole = layout.carried().size() + tails.size();
        return (iteration, state, constants) -> {
            Map<String, Tensor> bound = new LinkedHashMap<>();
            bound.put(body.inputs().get(0), iteration);
            for (int j = 0; j < layout.carried().size(); j++) bound.put(body.inputs().get(2 + layout.carried().get(j)), state.get(j));
            Map<String, OnnxValue> lists = new HashMap<>();
            for (int r = 0; r < reads.names().size(); r++) {
                String name = reads.names().get(r);
                if (reads.sequences().contains(name)) lists.put(name, OnnxValue.SequenceValue.ofRows(constants.get(r)));
                else bound.put(name, constants.get(r));
            }
            Map<String, Tensor> fixed = new HashMap<>(reads.constants());
            // an iteration runs only while the condition holds: the body's condition input is true whenever it is read
            fixed.put(body.inputs().get(1), yes);
            // an accumulator starts each iteration empty: the body appends this iteration's element to it, the step's output
            for (ListAccumulators.Accumulator a : layout.lists()) {
                String name = body.inputs().get(2 + a.state());
                switch (a) {
                    case ListAccumulators.ListOf l -> lists.put(name, new OnnxValue.SequenceValue(List.of(), l.dtype()));
                    case ListAccumulators.Grows g when tails.contains(g) || whole.contains(g) -> {
                        fixed.put(GrownTensors.emptyName(body, g), GrownTensors.empty(g, c.device));
                        if (tails.contains(g)) bound.put(GrownTensors.tailName(body, g), state.get(layout.carried().size() + tails.indexOf(g)));
                        int w = whole.indexOf(g);
                        if (w >= 0) bound.put(name, wholes.get(w).view(state.get(firstWhole + 2 * w)));
                    }
                    case ListAccumulators.Grows g -> fixed.put(name, GrownTensors.empty(g, c.device));
                }
            }
            List<OnnxValue> out;
            GraphBuilder builder = c.builder().nested(traced, c.device);
            try {
                out = builder.buildValues(bound, fixed, lists);
            } catch (UnsupportedOnnxOpException e) {
                // an operator of the body needs values it has only when the loop runs (a Slice to the iteration number, a
                // SequenceAt of it): the body is not one plan over stand-ins, but may be built with each iteration's values
                throw new PerIteration("the body cannot be built once for every iteration: " + e.getMessage(), e);
            } catch (OnnxFormatException e) {
                // a tensor the body grows and reads whole has a symbolic length, which some reads cannot take (a Slice
                // from its end): built per iteration, where the length is known; a fault of the model itself recurs there
                if (whole.isEmpty()) throw e;
                throw new PerIteration("the body reads a tensor it grows in a way its length known only when the loop runs does not allow: "
                        + e.getMessage(), e);
            }
            for (ListAccumulators.Grows g : tails) {
                for (Node r : g.lastReads()) {
                    String problem = GrownTensors.lastReadProblem(builder, r, g);
                    if (problem != null) throw new ReadsWhole(r.index()); // built again, reading the tensor so far
                }
            }
            List<Tensor> nextTails = new ArrayList<>(), nextWholes = new ArrayList<>();
            List<Tensor> next = new ArrayList<>(), rows = new ArrayList<>();
            for (int j = 0; j < layout.carried().size(); j++) {
                int i = layout.carried().get(j);
                Tensor was = state.get(j), now = tensorOutput(body, out, 1 + i);
                if (now.dtype() != was.dtype() || !now.shape().equals(was.shape())) {
                    throw new PerIteration("loop-carried value " + i + " ('" + body.outputs().get(1 + i) + "') is " + was.dtype() + was.shape()
                            + " on entry and " + now.dtype() + now.shape() + " after an iteration", null);
                }
                next.add(now);
            }
            for (int j = 0; j < layout.k(); j++) rows.add(tensorOutput(body, out, 1 + layout.n() + j));
            for (ListAccumulators.Accumulator a : layout.lists()) {
                OnnxValue v = out.get(1 + a.state());
                switch (a) {
                    case ListAccumulators.ListOf l -> {
                        if (!(v instanceof OnnxValue.SequenceValue appended) || appended.elements().size() != 1) {
                            throw new IllegalStateException("the body's list '" + body.outputs().get(1 + a.state()) + "' is " + v.describe()
                                    + " after an iteration that started it empty; expected the one tensor it appends");
                        }
                        rows.add(appended.elements().getFirst());
                    }
                    case ListAccumulators.Grows g -> {
                        Tensor element = GrownTensors.element(g, tensorOutput(body, out, 1 + a.state()), body.outputs().get(1 + a.state()));
                        rows.add(element);
                        if (tails.contains(g)) {
                            // the next tail: the element's last, or the tail as it was where the element is empty
                            Tensor last = GrownTensors.last(element, g.axis());
                            nextTails.add(last != null ? last : state.get(layout.carried().size() + tails.indexOf(g)));
                        }
                        int w = whole.indexOf(g);
                        if (w >= 0) {
                            Tensor buffer = state.get(firstWhole + 2 * w), length = state.get(firstWhole + 2 * w + 1);
                            nextWholes.add(wholes.get(w).appended(buffer, length, element));
                            nextWholes.add(length.add((long) element.dim(g.axis())));
                        }
                    }
                }
            }
            next.addAll(nextTails);
            next.addAll(nextWholes);
            Tensor condition = forLoop ? null : tensorOutput(body, out, 0);
            if (condition != null && condition.numel() != 1) throw new IllegalArgumentException("the body's condition output has shape " + condition.shape()
                    + ", expected one value");
            return new LoopStep.Next(condition == null ? null : condition.cast(DType.BOOL), next, rows);
        };
    }

    /** The body's output {@code k}, which must be a tensor (reported by the Loop node as unsupported otherwise). */
    private static Tensor tensorOutput(OnnxGraph body, List<OnnxValue> out, int k) {
        if (out.get(k) instanceof OnnxValue.TensorValue(Tensor t)) return t;
        throw new UnsupportedOperationException("output '" + body.outputs().get(k) + "' of " + body.source() + " is " + out.get(k).describe()
                + "; this graph's outputs must be tensors");
    }

    /**
     * Whether the body's condition output is its condition input (directly or through Identity), or a constant true (a
     * Constant node or an initializer): the exporters' form of a for-loop.
     */
    static boolean conditionStaysTrue(OnnxGraph body) {
        String condIn = body.inputs().get(1), name = body.outputs().getFirst();
        for (int guard = 0; guard < 64; guard++) {
            if (name.equals(condIn)) return true;
            Tensor init = body.initializers().get(name);
            if (init != null) return init.numel() == 1 && init.toDoubleArray()[0] != 0;
            Node producer = body.producer(name);
            if (producer == null) return false;
            switch (producer.opType()) {
                case "Identity" -> name = producer.inputs().getFirst();
                case "Constant" -> {
                    Tensor v = producer.attrs().tensor("value");
                    return v != null && v.numel() == 1 && v.toDoubleArray()[0] != 0;
                }
                default -> { return false; }
            }
        }
        return false;
    }
}

package dev.kiln;

import dev.kiln.ir.CustomFunction;
import dev.kiln.ir.GraphRewriter;
import dev.kiln.ir.Op;
import dev.kiln.ir.PatternMatcher;
import dev.kiln.ir.UOp;
import dev.kiln.ir.UPat;
import dev.kiln.runtime.Buffer;
import dev.kiln.runtime.Device;
import dev.kiln.runtime.DeviceRegistry;
import dev.kiln.runtime.ExecutionPlan;
import dev.kiln.runtime.ExtentOutOfRangeException;
import dev.kiln.runtime.PlanBuilder;
import dev.kiln.runtime.VariableSource;
import dev.kiln.types.DType;
import dev.kiln.types.Shape;
import dev.kiln.types.Variable;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Collections;
import java.util.EnumSet;
import java.util.HashSet;
import java.util.IdentityHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;

import static dev.kiln.ir.PatternMatcher.rule;

/**
 * {@link Tensor#scan}: a loop whose body is traced once and compiled once, so that building, planning and the
 * plan's size do not grow with the number of steps (an unrolled recurrence grows all three, and its schedule
 * faster than linearly).
 *
 * <p>The scan is one host step of the enclosing plan (a stateful {@link CustomFunction}). Its state, made once
 * per plan, is a plan of the body over buffers of its own: per run, the constants and the initial state are
 * copied in, then per step this step's slices; the body's plan runs; its per-step outputs are copied to their
 * place in the result and its next state back into the state buffers. The result is one block, final states
 * first, then each output stacked over the steps, which the returned tensors view.
 *
 * <p>{@link Tensor#loop} is the same construct with a number of steps known only while it runs: the trip count and the
 * initial condition are inputs of the host step, read when it runs, and the body's plan also computes the condition that
 * decides whether another iteration runs. Its result block starts with the number of iterations that ran; its outputs
 * are stacked at a capacity fixed when it is built, and a caller that needs them at their length slices them by that
 * number. A loop still running after its limit ({@link LoopLimit}) fails with a {@link LoopLimitException}.
 */
final class Scans {
    private Scans() {}

    private static final dev.kiln.ir.OnceLog LOG = new dev.kiln.ir.OnceLog(Scans.class);

    /**
     * A stand-in for one of the body's arguments while it is traced; the scan's own plan replaces it by a buffer. Its
     * values exist only while the scan runs: a step that needs them while it is traced (a shape read from them) cannot be
     * built, which is an {@link UnsupportedOperationException}, not a misuse.
     */
    private record StepArgument(String name) implements CustomFunction.Input {
        @Override
        public void apply(List<MemorySegment> inputs, MemorySegment output) {
            throw new UnsupportedOperationException("scan: '" + name + "', an argument of a scan step, has values only while the scan runs; "
                    + "the step cannot read them while it is built (a shape or a count computed from them)");
        }
    }

    /** A value the scan returns: where it lies in the result block, and its shape and dtype. */
    private record Part(DType dtype, Shape shape, long offsetBytes, long rowBytes) {
        long bytes() { return dtype.byteSize(shape.numel()); }
    }

    /**
     * What a loop adds to a scan: whether the host step reads a trip count and an initial condition (its first inputs,
     * in that order), whether the body computes a condition (its plan's first output), how many iterations the outputs
     * keep, the most it may run, its name for errors, and the variables it binds from its state before each iteration.
     */
    private record LoopSpec(String name, boolean tripCount, boolean condition, boolean conditionOutput, int capacity, long maxIterations,
                            List<LoopStep.Size> sizes) {
        int leadingInputs() { return (tripCount ? 1 : 0) + (condition ? 1 : 0); }
    }

    /** {@code steps} < 0: the sequences' first axis, of which there must be at least one. */
    /** {@code fn} as the IR's custom-function body ({@link Tensor#host}). */
    static CustomFunction.Body body(HostFunction fn) { return fn::apply; }

    /** Whether {@code u} is a value supplied from outside (a graph input, a scan argument), or a reshape of one. */
    static boolean isInput(UOp u) {
        while (u.op() == Op.RESHAPE) u = u.src(0);
        return u.op() == Op.CUSTOM && u.src().isEmpty() && u.functionArg().body() instanceof CustomFunction.Input;
    }

    static List<Tensor> scan(ScanStep step, int steps, List<Tensor> initial, List<Tensor> sequences, List<Tensor> constants) {
        Objects.requireNonNull(step, "scan: step");
        List<Tensor> init = copyOf(initial, "initial state"), seqs = copyOf(sequences, "sequences"), consts = copyOf(constants, "constants");
        if (seqs.isEmpty() && steps < 0) throw new IllegalArgumentException("scan: needs at least one sequence (its first axis is the number of steps) or a number of steps");
        if (steps > Integer.MAX_VALUE - 8) throw new IllegalArgumentException("scan: " + steps + " steps is more than a scan runs");
        Device device = !seqs.isEmpty() ? seqs.getFirst().device() : !init.isEmpty() ? init.getFirst().device()
                : !consts.isEmpty() ? consts.getFirst().device() : Tensor.defaultDevice();
        int given = steps;
        for (int i = 0; i < seqs.size(); i++) {
            Tensor s = seqs.get(i);
            if (s.ndim() == 0) throw new IllegalArgumentException("scan: sequence " + i + " is a scalar; a sequence is scanned along its first axis");
            if (s.shape().variable(0) != null) {
                throw new IllegalArgumentException("scan: sequence " + i + " has a symbolic first axis " + s.shape() + "; the number of steps must be static");
            }
            if (steps < 0) steps = s.dim(0);
            else if (s.dim(0) != steps) {
                throw new IllegalArgumentException("scan: sequence " + i + " " + s.shape() + " has " + s.dim(0) + " steps, "
                        + (given >= 0 ? "the scan has " : "sequence 0 has ") + steps);
            }
        }
        for (List<Tensor> group : List.of(init, seqs, consts)) for (Tensor t : group) checkStatic(t);

        // trace the body once over stand-ins
        List<UOp> arguments = new ArrayList<>();
        List<Tensor> stateIn = standIns("state", init, device, arguments);
        List<Tensor> sliceIn = new ArrayList<>();
        for (int i = 0; i < seqs.size(); i++) {
            Tensor s = seqs.get(i);
            int[] dims = java.util.Arrays.copyOfRange(s.dims(), 1, s.ndim());
            sliceIn.add(standIn("slice " + i, s.dtype(), Shape.of(dims), device, arguments));
        }
        List<Tensor> constIn = standIns("constant", consts, device, arguments);
        List<Tensor> traced = step.step(Collections.unmodifiableList(stateIn), Collections.unmodifiableList(sliceIn), Collections.unmodifiableList(constIn));
        if (traced == null || traced.size() < init.size()) {
            throw new IllegalArgumentException("scan: the step returned " + (traced == null ? "null" : traced.size() + " tensors") + "; it must return the "
                    + init.size() + " next states first, then its outputs");
        }
        List<UOp> roots = new ArrayList<>();
        for (int i = 0; i < traced.size(); i++) {
            Tensor t = Objects.requireNonNull(traced.get(i), "scan: the step's result " + i);
            checkStatic(t);
            if (i < init.size() && (t.dtype() != init.get(i).dtype() || !t.shape().equals(init.get(i).shape()))) {
                throw new IllegalArgumentException("scan: the step's next state " + i + " is " + t.dtype() + t.shape() + ", the state is "
                        + init.get(i).dtype() + init.get(i).shape());
            }
            if (t.dtype().isPacked()) throw new IllegalArgumentException("scan: the step's result " + i + " has packed dtype " + t.dtype());
            roots.add(t.to(device).uop());
        }
        checkLeaves(roots, arguments);

        // the result block: final states, then the outputs stacked over the steps
        List<Part> parts = new ArrayList<>();
        long offset = 0;
        for (int i = 0; i < traced.size(); i++) {
            Tensor t = traced.get(i);
            Shape shape = i < init.size() ? t.shape() : Shape.of(prepend(steps, t.dims()));
            Part p = new Part(t.dtype(), shape, offset, t.dtype().byteSize(t.numel()));
            parts.add(p);
            offset += p.bytes();
        }
        Body body = new Body(device.spec().toString(), List.copyOf(roots), List.copyOf(arguments), init.size(), seqs.size(), steps, List.copyOf(parts), null);
        List<Tensor> inputs = new ArrayList<>();
        inputs.addAll(init);
        inputs.addAll(seqs);
        inputs.addAll(consts);
        List<Tensor> out = results("scan", body, inputs, device);
        return List.copyOf(out.subList(1, out.size()));
    }

    /**
     * The host step of {@code body} over {@code inputs}: its result block, then a view of each of the body's parts. One
     * dtype shared by every part makes the block that dtype and the views slices of it; several share a byte block, out
     * of which each is copied (a view cannot change the item size).
     */
    private static List<Tensor> results(String what, Body body, List<Tensor> inputs, Device device) {
        List<Part> parts = body.parts;
        DType common = parts.isEmpty() ? DType.U8 : parts.getFirst().dtype();
        for (Part p : parts) if (p.dtype() != common) common = null;
        long bytes = parts.isEmpty() ? 0 : parts.getLast().offsetBytes() + parts.getLast().bytes();
        DType blockType = common != null ? common : DType.U8;
        long blockCount = bytes / blockType.itemSize();
        if (blockCount > Integer.MAX_VALUE - 8) throw new IllegalArgumentException(what + ": its results take " + bytes + " bytes, more than one tensor holds");
        Tensor block = inputs.isEmpty() ? new Tensor(UOp.of(Op.CUSTOM, blockType, new CustomFunction(what, Shape.of((int) blockCount), body), List.of()), device)
                : Tensor.custom(what, blockType, new int[] {(int) blockCount}, body, inputs.toArray(Tensor[]::new));
        List<Tensor> out = new ArrayList<>();
        out.add(block);
        for (Part p : parts) {
            if (common != null) {
                int from = (int) (p.offsetBytes() / common.itemSize());
                out.add(block.slice(0, from, from + (int) p.shape().numel(), 1).reshape(p.shape().toArray()));
            } else {
                out.add(Tensor.custom(what + "_result", p.dtype(), p.shape().toArray(),
                        (in, o) -> MemorySegment.copy(in.getFirst(), p.offsetBytes(), o, 0, p.bytes()), block));
            }
        }
        return out;
    }

    /** {@code steps}, a number of steps a caller gives (unlike the -1 of "the sequences' length"). */
    static int requireSteps(int steps) {
        if (steps < 0) throw new IllegalArgumentException("scan: steps must be >= 0, got " + steps);
        return steps;
    }

    /** {@link Tensor#loop}: see {@link LoopStep}. */
    static LoopResult loop(LoopStep step, Tensor tripCount, Tensor condition, List<Tensor> initial, List<Tensor> constants, int capacity,
                           List<LoopStep.Size> sizes, long maxIterations) {
        Objects.requireNonNull(step, "loop: step");
        String name = Indexing.OP_NAME.orElse("loop");
        List<Tensor> init = copyOf(initial, "initial state"), consts = copyOf(constants, "constants");
        List<LoopStep.Size> sized = List.copyOf(Objects.requireNonNull(sizes, "loop: sizes"));
        Set<Variable> bound = new HashSet<>();
        for (LoopStep.Size z : sized) {
            if (z.state() < 0 || z.state() >= init.size()) {
                throw new IllegalArgumentException(name + ": size '" + z.variable().name() + "' reads state " + z.state() + ", the loop carries " + init.size());
            }
            Tensor s = init.get(z.state());
            if (s.dtype() != DType.I64 || s.ndim() != 0) {
                throw new IllegalArgumentException(name + ": size '" + z.variable().name() + "' reads state " + z.state() + ", which is " + s.dtype() + s.shape()
                        + "; a size is an i64 scalar state");
            }
            if (!bound.add(z.variable())) throw new IllegalArgumentException(name + ": variable '" + z.variable().name() + "' is bound by two sizes");
        }
        if (capacity < 0) throw new IllegalArgumentException(name + ": capacity must be >= 0, got " + capacity);
        if (maxIterations < 1) throw new IllegalArgumentException(name + ": maxIterations must be >= 1, got " + maxIterations);
        Device device = !init.isEmpty() ? init.getFirst().device() : !consts.isEmpty() ? consts.getFirst().device()
                : tripCount != null ? tripCount.device() : condition != null ? condition.device() : Tensor.defaultDevice();
        List<Tensor> leading = new ArrayList<>();
        if (tripCount != null) {
            if (tripCount.numel() != 1 || tripCount.dtype().isFloat() || tripCount.dtype().isBool()) {
                throw new IllegalArgumentException(name + ": the trip count must be one integer, got " + tripCount.dtype() + tripCount.shape());
            }
            leading.add(tripCount.reshape().cast(DType.I64).to(device)); // the host step's inputs, like its state, on the loop's device
        }
        if (condition != null) {
            if (condition.numel() != 1) throw new IllegalArgumentException(name + ": the condition must be one value, got shape " + condition.shape());
            leading.add(condition.reshape().cast(DType.BOOL).to(device));
        }
        for (List<Tensor> group : List.of(init, consts, leading)) for (Tensor t : group) checkStatic(t);

        // trace the body once over stand-ins; the iteration number is the last argument
        List<UOp> arguments = new ArrayList<>();
        List<Tensor> stateIn = standIns("state", init, device, arguments);
        List<Tensor> constIn = standIns("constant", consts, device, arguments);
        Tensor iteration = standIn("iteration", DType.I64, Shape.of(), device, arguments);
        LoopStep.Next next = Objects.requireNonNull(step.step(iteration, Collections.unmodifiableList(stateIn), Collections.unmodifiableList(constIn)),
                name + ": the step returned null");
        if (next.state().size() != init.size()) {
            throw new IllegalArgumentException(name + ": the step returned " + next.state().size() + " next states, the loop carries " + init.size());
        }
        List<UOp> roots = new ArrayList<>();
        Tensor cond = next.condition();
        if (cond != null) {
            if (cond.numel() != 1) throw new IllegalArgumentException(name + ": the step's condition must be one value, got shape " + cond.shape());
            checkStatic(cond);
            roots.add(cond.reshape().cast(DType.BOOL).to(device).uop());
        }
        for (int i = 0; i < init.size(); i++) {
            Tensor t = Objects.requireNonNull(next.state().get(i), name + ": the step's next state " + i);
            checkStatic(t);
            if (t.dtype() != init.get(i).dtype() || !t.shape().equals(init.get(i).shape())) {
                throw new IllegalArgumentException(name + ": the step's next state " + i + " is " + t.dtype() + t.shape() + ", the state is "
                        + init.get(i).dtype() + init.get(i).shape() + "; a loop's state keeps its shape and dtype");
            }
            roots.add(t.to(device).uop());
        }
        for (int j = 0; j < next.outputs().size(); j++) {
            Tensor t = Objects.requireNonNull(next.outputs().get(j), name + ": the step's output " + j);
            checkStatic(t);
            if (t.dtype().isPacked()) throw new IllegalArgumentException(name + ": the step's output " + j + " has packed dtype " + t.dtype());
            roots.add(t.to(device).uop());
        }
        checkLeaves(roots, arguments);
        for (Variable v : shapeVariables(roots)) {
            if (!bound.contains(v)) {
                throw new IllegalArgumentException(name + ": the step sizes a value by variable '" + v.name() + "', which none of the loop's sizes binds "
                        + "(a loop binds only the variables of its sizes, from its state)");
            }
        }

        // the result block: the iterations that ran, the final states, then the outputs stacked at the capacity
        List<Part> parts = new ArrayList<>();
        parts.add(new Part(DType.I64, Shape.of(), 0, 0));
        long offset = DType.I64.itemSize();
        for (int i = 0; i < init.size(); i++) {
            Part p = new Part(init.get(i).dtype(), init.get(i).shape(), offset, 0);
            parts.add(p);
            offset += p.bytes();
        }
        for (Tensor t : next.outputs()) {
            Part p = new Part(t.dtype(), Shape.of(prepend(capacity, t.dims())), offset, t.dtype().byteSize(t.numel()));
            parts.add(p);
            offset += p.bytes();
        }
        LoopSpec spec = new LoopSpec(name, tripCount != null, condition != null, cond != null, capacity, maxIterations, sized);
        Body body = new Body(device.spec().toString(), List.copyOf(roots), List.copyOf(arguments), init.size(), 0, -1, List.copyOf(parts), spec);
        List<Tensor> inputs = new ArrayList<>(leading);
        inputs.addAll(init);
        inputs.addAll(consts);
        List<Tensor> out = results("loop", body, inputs, device);
        return new LoopResult(out.getFirst(), out.get(1), out.subList(2, 2 + init.size()), out.subList(2 + init.size(), out.size()));
    }

    private static List<Tensor> copyOf(List<Tensor> list, String what) {
        Objects.requireNonNull(list, "scan: " + what);
        for (int i = 0; i < list.size(); i++) Objects.requireNonNull(list.get(i), "scan: " + what + " " + i);
        return List.copyOf(list);
    }

    /**
     * The variables that size any value the roots are computed from, but for those a host step among them binds when it
     * runs (a data-dependent count inside the body).
     */
    private static Set<Variable> shapeVariables(List<UOp> roots) {
        Set<Variable> out = new LinkedHashSet<>(), produced = new HashSet<>();
        Set<UOp> seen = Collections.newSetFromMap(new IdentityHashMap<>());
        ArrayDeque<UOp> work = new ArrayDeque<>(roots);
        while (!work.isEmpty()) {
            UOp u = work.pop();
            if (!seen.add(u)) continue;
            if (u.shape().isSymbolic()) {
                for (int a = 0; a < u.shape().rank(); a++) if (u.shape().variable(a) != null) out.add(u.shape().variable(a));
            }
            if (u.op() == Op.DEFINE_VAR && u.arg() instanceof Variable v) out.add(v);
            if (u.op() == Op.CUSTOM && u.functionArg().producedVariable() != null) produced.add(u.functionArg().producedVariable());
            work.addAll(u.src());
        }
        out.removeAll(produced);
        return out;
    }

    private static void checkStatic(Tensor t) {
        if (t.shape().isSymbolic()) throw new IllegalArgumentException("scan: " + t.shape() + " has symbolic axes; a scan's values have static shapes");
    }

    private static int[] prepend(int first, int[] dims) {
        int[] out = new int[dims.length + 1];
        out[0] = first;
        System.arraycopy(dims, 0, out, 1, dims.length);
        return out;
    }

    private static List<Tensor> standIns(String what, List<Tensor> like, Device device, List<UOp> arguments) {
        List<Tensor> out = new ArrayList<>();
        for (int i = 0; i < like.size(); i++) out.add(standIn(what + " " + i, like.get(i).dtype(), like.get(i).shape(), device, arguments));
        return out;
    }

    private static Tensor standIn(String name, DType dtype, Shape shape, Device device, List<UOp> arguments) {
        UOp u = UOp.of(Op.CUSTOM, dtype, new CustomFunction("scan " + name, shape, new StepArgument(name)), List.of());
        arguments.add(u);
        return new Tensor(u, device);
    }

    /** Refuses a body that reads a value the scan cannot give it: a value supplied from outside, such as another graph's input. */
    private static void checkLeaves(List<UOp> roots, List<UOp> arguments) {
        Set<UOp> own = Collections.newSetFromMap(new IdentityHashMap<>());
        own.addAll(arguments);
        Set<UOp> seen = Collections.newSetFromMap(new IdentityHashMap<>());
        ArrayDeque<UOp> work = new ArrayDeque<>(roots);
        while (!work.isEmpty()) {
            UOp u = work.pop();
            if (!seen.add(u)) continue;
            // a host function with inputs (a nested scan, say) computes from what the step gives it; one without inputs
            // stands for a value supplied from outside (a graph's input, another scan's argument) that this plan never sees
            if (u.op() == Op.CUSTOM && u.src().isEmpty() && !own.contains(u)) {
                throw new IllegalArgumentException("scan: the step reads '" + u.functionArg().name() + "', a value supplied from outside the scan (a graph "
                        + "input, or another scan's argument); pass it to the scan as a constant");
            }
            work.addAll(u.src());
        }
    }

    /**
     * The scan or loop as a host step: the traced body and where each of its values goes. The body's arguments are its
     * states, then a scan's sequences, then the constants, then a loop's iteration number; its plan's outputs are a
     * loop's condition (when it computes one), then the next states, then the per-step outputs.
     */
    private static final class Body implements CustomFunction.Stateful<Run> {
        private final String device;
        private final List<UOp> roots, arguments;
        private final int states, sequences, steps;
        private final List<Part> parts;
        /** Null for a scan. */
        private final LoopSpec loop;
        /** Where the next states start among the plan's outputs, and the states among the parts. */
        private final int stateResults, stateParts;

        Body(String device, List<UOp> roots, List<UOp> arguments, int states, int sequences, int steps, List<Part> parts, LoopSpec loop) {
            this.device = device;
            this.roots = roots;
            this.arguments = arguments;
            this.states = states;
            this.sequences = sequences;
            this.steps = steps;
            this.parts = parts;
            this.loop = loop;
            this.stateResults = loop != null && loop.conditionOutput() ? 1 : 0;
            this.stateParts = loop != null ? 1 : 0;
        }

        @Override
        public Run newState() { return newState(device); }

        @Override
        public Run newState(String placedOn) { return new Run(this, placedOn); }

        @Override
        public void apply(List<MemorySegment> inputs, MemorySegment output) {
            try (Run run = newState()) {
                apply(inputs, output, run);
            }
        }

        @Override
        public void apply(List<MemorySegment> in, MemorySegment out, Run run) {
            if (loop != null) {
                loop(in, out, run);
                return;
            }
            int consts = arguments.size() - states - sequences;
            for (int c = 0; c < consts; c++) run.fill(states + sequences + c, in.get(states + sequences + c), 0);
            for (int s = 0; s < states; s++) run.fill(s, in.get(s), 0);
            for (int t = 0; t < steps; t++) {
                for (int q = 0; q < sequences; q++) {
                    int a = states + q;
                    run.fill(a, in.get(a), t * run.bytes(a));
                }
                run.plan.execute();
                for (int k = states; k < parts.size(); k++) {
                    Part p = parts.get(k);
                    MemorySegment.copy(run.result(k), 0, out, p.offsetBytes() + t * p.rowBytes(), p.rowBytes());
                }
                run.carry();
            }
            for (int s = 0; s < states; s++) MemorySegment.copy(run.argument(s), 0, out, parts.get(s).offsetBytes(), parts.get(s).bytes());
        }

        /** A loop's run: while the trip count is not reached and the condition holds, one iteration of the body's plan. */
        private void loop(List<MemorySegment> in, MemorySegment out, Run run) {
            int lead = loop.leadingInputs();
            long tripCount = loop.tripCount() ? in.getFirst().get(ValueLayout.JAVA_LONG_UNALIGNED, 0) : Long.MAX_VALUE;
            boolean going = !loop.condition() || in.get(lead - 1).get(ValueLayout.JAVA_BYTE, 0) != 0;
            int consts = arguments.size() - states - 1;
            for (int c = 0; c < consts; c++) run.fill(states + c, in.get(lead + states + c), 0);
            for (int s = 0; s < states; s++) run.fill(s, in.get(lead + s), 0);
            MemorySegment iteration = run.argument(arguments.size() - 1);
            int outputs = parts.size() - 1 - states, firstOutput = stateResults + states;
            long t = 0;
            for (; going && t < tripCount; t++) {
                if (t >= loop.maxIterations()) throw new LoopLimitException(loop.name(), loop.maxIterations());
                iteration.set(ValueLayout.JAVA_LONG_UNALIGNED, 0, t);
                run.bindSizes(loop);
                run.plan.execute();
                if (loop.conditionOutput()) going = run.result(0).get(ValueLayout.JAVA_BYTE, 0) != 0;
                if (t < loop.capacity()) {
                    for (int j = 0; j < outputs; j++) {
                        Part p = parts.get(1 + states + j);
                        MemorySegment.copy(run.result(firstOutput + j), 0, out, p.offsetBytes() + t * p.rowBytes(), p.rowBytes());
                    }
                }
                run.carry();
            }
            out.set(ValueLayout.JAVA_LONG_UNALIGNED, parts.getFirst().offsetBytes(), t);
            for (int s = 0; s < states; s++) {
                Part p = parts.get(1 + s);
                MemorySegment.copy(run.argument(s), 0, out, p.offsetBytes(), p.bytes());
            }
        }
    }

    /** One plan's scan: the body's plan over buffers of its own. Closed with the enclosing plan. */
    private static final class Run implements AutoCloseable {
        private final Body body;
        private final Arena arena = Arena.ofShared();
        private final Buffer[] argumentBuffers;
        private final ExecutionPlan plan;
        /** Whether a next state may be read from a state buffer another next state overwrites first (the step swaps or keeps states). */
        private final boolean stageCarry;
        private final MemorySegment carryScratch;
        /** For each of the plan's variables, the loop's size that binds it. */
        private final int[] sizeIndex;

        Run(Body body, String placedOn) {
            this.body = body;
            Device at = DeviceRegistry.get(placedOn);
            if (at.deviceMemory().isPresent()) {
                // the scan's host step reads and writes host memory; its body runs on the host device beside it
                String reason = "scan on " + placedOn + ": its step runs on CPU, as a host step of the plan (its inputs and results are copied "
                        + "through host memory on every execution)";
                LOG.info(reason);
                at = DeviceRegistry.get("CPU");
            }
            String where = at.spec().toString();
            try {
                argumentBuffers = new Buffer[body.arguments.size()];
                Map<UOp, UOp> replacement = new IdentityHashMap<>();
                for (int i = 0; i < argumentBuffers.length; i++) {
                    UOp a = body.arguments.get(i);
                    long count = a.shape().numel();
                    argumentBuffers[i] = new Buffer(where, a.dtype(), count, arena.allocate(Math.max(1, a.dtype().byteSize(count)), 64));
                    UOp node = UOp.buffer(argumentBuffers[i]); // one axis of all the elements: viewed in the argument's shape
                    replacement.put(a, node.shape().equals(a.shape()) ? node : UOp.of(Op.RESHAPE, a.dtype(), a.shape(), node));
                }
                PatternMatcher bind = new PatternMatcher(List.of(
                        rule(UPat.anyOf(EnumSet.of(Op.CUSTOM)).where(replacement::containsKey).named("a"), m -> replacement.get(m.get("a")))));
                plan = PlanBuilder.build(at, GraphRewriter.substitute(body.roots, bind));
                // the plan's variables are its own steps' or the sizes' (the loop was refused otherwise): which size binds each
                List<LoopStep.Size> sizes = body.loop != null ? body.loop.sizes() : List.of();
                sizeIndex = new int[plan.variables().size()];
                for (int i = 0; i < sizeIndex.length; i++) {
                    Variable v = plan.variables().get(i);
                    sizeIndex[i] = plan.variableSource(i) instanceof VariableSource.Step ? -1
                            : java.util.stream.IntStream.range(0, sizes.size()).filter(z -> sizes.get(z).variable().equals(v)).findFirst()
                            .orElseThrow(() -> new IllegalStateException("scan: the body's plan has variable '" + v.name() + "', which no size binds"));
                }
                boolean overlaps = false;
                long stateBytes = 0;
                for (int s = 0; s < body.states; s++) {
                    stateBytes += statePart(s).bytes();
                    for (int o = 0; o < body.states; o++) {
                        if (o != s && nextState(o).asOverlappingSlice(argument(s)).isPresent()) overlaps = true;
                    }
                }
                stageCarry = overlaps;
                carryScratch = overlaps ? arena.allocate(Math.max(1, stateBytes), 64) : null;
            } catch (RuntimeException | Error e) {
                arena.close();
                throw e;
            }
        }

        MemorySegment argument(int i) { return argumentBuffers[i].segment(); }

        /**
         * Binds each of the loop's sizes to its state's value for the next iteration: past its variable's range, the
         * iteration fails before the body runs (the state outgrew what its values are laid out for).
         */
        void bindSizes(LoopSpec loop) {
            for (int i = 0; i < sizeIndex.length; i++) {
                if (sizeIndex[i] < 0) continue; // bound by a step of the body
                LoopStep.Size z = loop.sizes().get(sizeIndex[i]);
                long value = argument(z.state()).get(ValueLayout.JAVA_LONG_UNALIGNED, 0);
                Variable v = z.variable();
                if (value < v.min() || value > v.max()) {
                    throw new ExtentOutOfRangeException(loop.name(), v, value, loop.name() + ": state " + z.state() + " sizes the next iteration by "
                            + value + " for '" + v.name() + "', outside [" + v.min() + ", " + v.max() + "] (more than the values it sizes are laid out for)");
                }
                plan.setVariable(i, value);
            }
        }

        MemorySegment result(int i) { return plan.outputBuffer(i).segment(); }

        /** The body's next state {@code s}, among the plan's outputs. */
        MemorySegment nextState(int s) { return result(body.stateResults + s); }

        /** Where state {@code s} goes in the result block. */
        Part statePart(int s) { return body.parts.get(body.stateParts + s); }

        long bytes(int argument) { return argumentBuffers[argument].dtype().byteSize(argumentBuffers[argument].count()); }

        void fill(int argument, MemorySegment source, long offset) { MemorySegment.copy(source, offset, argument(argument), 0, bytes(argument)); }

        /** Copies the next states into the state buffers. */
        void carry() {
            if (!stageCarry) {
                for (int s = 0; s < body.states; s++) MemorySegment.copy(nextState(s), 0, argument(s), 0, statePart(s).bytes());
                return;
            }
            long at = 0;
            for (int s = 0; s < body.states; s++) {
                long n = statePart(s).bytes();
                MemorySegment.copy(nextState(s), 0, carryScratch, at, n);
                at += n;
            }
            at = 0;
            for (int s = 0; s < body.states; s++) {
                long n = statePart(s).bytes();
                MemorySegment.copy(carryScratch, at, argument(s), 0, n);
                at += n;
            }
        }

        @Override
        public void close() {
            try {
                plan.close();
            } finally {
                arena.close();
            }
        }
    }
}

package dev.kiln.onnx;

import dev.kiln.types.DType;
import dev.kiln.types.Shape;
import dev.kiln.Tensor;
import dev.kiln.types.Variable;
import dev.kiln.runtime.Buffer;
import dev.kiln.runtime.Device;
import dev.kiln.runtime.DeviceRegistry;
import dev.kiln.runtime.Transfers;
import dev.kiln.runtime.ExecutionPlan;

import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * An ONNX model prepared once as one {@link ExecutionPlan} that serves every size of its symbolic input
 * dimensions up to their maxima ({@link OnnxModel#prepare}). Each symbolic dimension name is a {@link Variable};
 * the plan's input buffers are laid out at the maximum sizes, and {@link #bind} copies the given inputs into them
 * and sets the variables from their shapes. Sizes that the data decides (NonZero's count, the boxes NonMaxSuppression
 * keeps) are variables too, bound by the plan's own steps while it runs (see {@link DataDependentOps}), so one plan
 * serves every count and {@link #outputs()} gives each output at the extent of that run. The plan, and with it every
 * buffer, is freed by {@link #close()}; it may read the model's external data in place, so close it before the
 * {@link OnnxModel}.
 */
public final class OnnxPlan implements AutoCloseable {
    private static final System.Logger LOG = System.getLogger(OnnxPlan.class.getName());
    private static final Set<String> LOGGED = java.util.concurrent.ConcurrentHashMap.newKeySet();

    private final OnnxModel model;
    private final Device device;
    private final Map<String, Variable> variables;
    private final List<Tensor> inputBuffers; // realised at the maximum sizes, in model input order
    private final Map<String, Tensor> symbolicInputs; // the same buffers, their symbolic axes bound to the variables
    /** The rows reserved for loops of unknown length; they grow, and the plan is built again, when a run needs more. */
    private final PlanCapacities capacities = new PlanCapacities();
    /** The loop limit in force when the plan was prepared: a build again after growing keeps it. */
    private final long loopLimit;
    /**
     * The builds kept, by the branches they take where an If's branches give outputs of different ranks (empty for most
     * models: one build): a run whose condition chose another branch switches to its build, made at most once.
     */
    private final Map<Map<String, Boolean>, Built> builds = new java.util.HashMap<>();
    private List<Tensor> outputs; // the plan's outputs, with symbolic shapes
    private ExecutionPlan plan;
    private Map<String, Long> bound;

    private OnnxPlan(OnnxModel model, Device device, Map<String, Variable> variables, List<Tensor> inputBuffers, Map<String, Tensor> symbolicInputs) {
        this.model = model;
        this.device = device;
        this.variables = variables;
        this.inputBuffers = inputBuffers;
        this.symbolicInputs = symbolicInputs;
        this.loopLimit = dev.kiln.LoopLimit.maxIterations();
    }

    /** Builds the graph over the input buffers at the current capacities and prepares its plan. */
    private void build() {
        capacities.newBuild();
        dev.kiln.LoopLimit.with(loopLimit, () -> {
            List<Tensor> outs = GraphBuilder.forPlan(model, device, capacities).build(symbolicInputs);
            ExecutionPlan p = Tensor.prepare(outs.toArray(Tensor[]::new));
            outputs = List.copyOf(outs);
            plan = p;
            builds.put(capacities.branches(), new Built(p, outputs));
            return p;
        });
    }

    /** One build of the graph: its plan and outputs. */
    private record Built(ExecutionPlan plan, List<Tensor> outputs) {}

    static OnnxPlan prepare(OnnxModel model, Device device, Map<String, Integer> maxDims) {
        String src = model.source();
        Set<String> symbols = new LinkedHashSet<>();
        for (ValueInfo v : model.inputs()) if (v.dims() != null) for (ValueInfo.Dim d : v.dims()) if (d.isSymbolic()) symbols.add(d.symbol());
        for (String name : maxDims.keySet()) {
            if (!symbols.contains(name)) {
                throw new IllegalArgumentException("prepare: " + src + " has no symbolic input dimension '" + name + "'; its symbolic dimensions are "
                        + symbols);
            }
        }
        Map<String, Variable> vars = new LinkedHashMap<>();
        for (ValueInfo v : model.inputs()) {
            if (v.dims() == null) throw new IllegalArgumentException("prepare: input '" + v.name() + "' of " + src + " declares no shape");
            for (int k = 0; k < v.dims().size(); k++) {
                ValueInfo.Dim d = v.dims().get(k);
                if (d.isFixed()) continue;
                if (!d.isSymbolic()) {
                    throw new IllegalArgumentException("prepare: axis " + k + " of input '" + v.name() + "' (" + v + ") of " + src
                            + " has neither a size nor a name; only named symbolic dimensions can be given a maximum");
                }
                Integer max = maxDims.get(d.symbol());
                if (max == null) {
                    throw new IllegalArgumentException("prepare: input '" + v.name() + "' (" + v + ") of " + src + " has the symbolic dimension '"
                            + d.symbol() + "'; give its maximum size");
                }
                if (max < 1) throw new IllegalArgumentException("prepare: the maximum of dimension '" + d.symbol() + "' must be at least 1, got " + max);
                vars.putIfAbsent(d.symbol(), new Variable(d.symbol(), 1, max));
            }
        }
        List<Tensor> buffers = new ArrayList<>();
        Map<String, Tensor> symbolicInputs = new LinkedHashMap<>();
        for (ValueInfo v : model.inputs()) {
            int[] max = new int[v.dims().size()];
            for (int k = 0; k < max.length; k++) {
                ValueInfo.Dim d = v.dims().get(k);
                max[k] = d.isFixed() ? Math.toIntExact(d.size()) : Math.toIntExact(vars.get(d.symbol()).max());
            }
            Tensor buffer = Tensor.zeros(v.dtype(), max).to(device).contiguous().realize();
            buffers.add(buffer);
            Tensor t = buffer;
            for (int k = 0; k < max.length; k++) if (v.dims().get(k).isSymbolic()) t = t.withSymbolicDim(k, vars.get(v.dims().get(k).symbol()));
            symbolicInputs.put(v.name(), t);
        }
        OnnxPlan prepared = new OnnxPlan(model, device, Collections.unmodifiableMap(vars), List.copyOf(buffers), Collections.unmodifiableMap(symbolicInputs));
        prepared.build();
        return prepared;
    }

    /** The variable of each symbolic dimension name, with its range {@code [1, max]}. */
    public Map<String, Variable> variables() { return variables; }

    /**
     * The plan (for profiling or inspecting its kernels); it runs with the sizes of the last {@link #bind}. A run whose loop
     * ran more iterations than the plan reserved rows for replaces it with one built with more room, and one whose If took
     * the branch it was not built with by the build for that branch (see {@link #execute()}).
     */
    public ExecutionPlan plan() { return plan; }

    /**
     * Checks the inputs against the model and the maxima, copies them into the plan's input buffers and sets every
     * symbolic dimension's variable from their shapes, without running; {@link #execute()} and the plan's own
     * execute methods then run with them.
     *
     * @param inputs a realised tensor for every model input, by name
     * @return the size of each symbolic dimension
     * @throws IllegalArgumentException if an input is missing or unknown, its dtype or rank differs, a fixed size
     *                                  differs, a symbolic size exceeds its maximum or differs between inputs
     */
    public Map<String, Long> bind(Map<String, Tensor> inputs) {
        Map<String, Long> sizes = model.bindDims(inputs);
        for (var e : sizes.entrySet()) {
            Variable v = variables.get(e.getKey());
            if (e.getValue() < v.min() || e.getValue() > v.max()) {
                throw new IllegalArgumentException("run: dimension '" + e.getKey() + "' is " + e.getValue() + ", the plan was prepared for "
                        + v.min() + " to " + v.max());
            }
        }
        for (int i = 0; i < inputBuffers.size(); i++) {
            Tensor given = inputs.get(model.inputs().get(i).name()).contiguous().realize();
            Tensor into = inputBuffers.get(i);
            Buffer target = into.buffer();
            MemorySegment source = given.buffer().toHost().segment();
            if (target.isHostMemory()) {
                copyInto(source, given.dims(), target.segment(), into.dims(), into.dtype());
            } else { // laid out in host memory, then copied to the device whole
                Buffer staged = Buffer.allocateOffHeap(target.device(), target.dtype(), target.count());
                copyInto(source, given.dims(), staged.segment(), into.dims(), into.dtype());
                Transfers.copyFromHost(staged.segment(), DeviceRegistry.get(target.device()), target.segment(), target.dtype().byteSize(target.count()));
            }
        }
        bound = Map.copyOf(sizes);
        setVariables();
        return sizes;
    }

    private void setVariables() {
        for (var e : bound.entrySet()) {
            // a size no step of the plan reads (an output that is an input as it is) is known from the binding alone
            int i = plan.variables().indexOf(variables.get(e.getKey()));
            if (i >= 0) plan.setVariable(i, e.getValue());
        }
    }

    /**
     * Runs the plan with the inputs and sizes of the last {@link #bind}. A loop whose length is known only when it runs (a
     * TorchScript {@code while}) has its scan outputs laid out at a capacity ({@link PlanCapacities}); a run with more
     * iterations than that builds the plan again with room for at least twice as many, and runs again on the same inputs
     * (the input buffers are kept), which is logged once per model and loop. An If whose branches give outputs of different
     * ranks is built with one branch; a run whose condition chose the other repeats on a build with that one (made once, then
     * kept beside the first: a plan alternating between them switches without building), logged once per If and branch.
     */
    public void execute() {
        if (bound == null) throw new IllegalStateException("execute: no inputs bound yet; call bind or run first");
        Set<String> switched = new java.util.HashSet<>();
        while (true) {
            try {
                plan.execute();
                return;
            } catch (RuntimeException e) {
                PlanCapacities.WrongBranch w = PlanCapacities.wrongBranchIn(e);
                if (w != null) {
                    if (!switched.add(w.node())) {
                        // an If inside a loop body whose condition changes between iterations: neither build serves the run
                        throw new UnsupportedOnnxOpException(w.node(), "its branches give outputs of different ranks, and its condition chose both "
                                + "in one run (an If inside a loop body); a prepared plan holds one rank per value (run the model with OnnxModel.run)");
                    }
                    if (LOGGED.add(model.source() + "\0" + w.node() + "\0" + w.holds())) {
                        LOG.log(System.Logger.Level.INFO, w.node() + ": its branches give outputs of different ranks and a run chose "
                                + (w.holds() ? "then_branch" : "else_branch") + "; the plan is built for it once, kept beside the other, and the run repeated");
                    }
                    capacities.choose(w);
                    Built b = builds.get(capacities.branches());
                    if (b != null) {
                        plan = b.plan();
                        outputs = b.outputs();
                    } else {
                        build();
                    }
                    setVariables();
                    continue;
                }
                PlanCapacities.Growth g = capacities.growthFor(e);
                if (g == null) throw e;
                if (LOGGED.add(model.source() + "\0" + g.loop())) {
                    LOG.log(System.Logger.Level.INFO, g.loop() + ": a run needed " + g.needed() + " rows of its outputs, the plan "
                            + "had reserved " + g.was() + "; the plan is built again with room for " + g.rows() + " and the run repeated");
                }
                capacities.grow(g);
                // every build was laid out at the old rows: this one is built again, the others when a run needs them
                List<Built> old = List.copyOf(builds.values());
                builds.clear();
                try {
                    build();
                } finally {
                    for (Built b : old) b.plan().close();
                }
                setVariables();
            }
        }
    }

    /** {@link #bind}, one run; the outputs at their sizes, in graph order, as realised tensors on the default device. */
    public List<Tensor> run(Map<String, Tensor> inputs) {
        bind(inputs);
        execute();
        return outputs();
    }

    /**
     * The dims of output {@code k} at the sizes of the last {@link #bind}; an extent decided by the data (the rows NonZero
     * or NonMaxSuppression selected) at its value in the last run.
     */
    public int[] outputDims(int k) {
        if (bound == null) throw new IllegalStateException("outputDims: no inputs bound yet");
        if (k < 0 || k >= outputs.size()) {
            throw new IndexOutOfBoundsException("outputDims: output " + k + " of " + model.source() + ", which has " + outputs.size()
                    + " outputs " + model.outputs().stream().map(ValueInfo::name).toList());
        }
        Shape s = outputs.get(k).shape();
        int[] d = s.toArray();
        for (int a = 0; a < d.length; a++) {
            Variable v = s.variable(a);
            if (v == null) continue;
            // an input's dimension as bound; a data-dependent size (NonZero's count) as the plan's step produced it this run
            Long given = bound.get(v.name());
            d[a] = Math.toIntExact(given != null ? given : plan.variableValue(plan.variables().indexOf(v)));
        }
        return d;
    }

    /** The outputs of the last run at their sizes, copied out of the plan (rows past a size are left behind). */
    public List<Tensor> outputs() {
        List<Tensor> out = new ArrayList<>();
        for (int k = 0; k < outputs.size(); k++) {
            int[] dims = outputDims(k);
            DType dt = outputs.get(k).dtype();
            MemorySegment compact = MemorySegment.ofArray(new byte[Math.toIntExact(dt.byteSize(Shape.of(dims).numel()))]);
            copyInto(plan.outputBuffer(k).toHost().segment(), outputs.get(k).shape().maxShape().toArray(), compact, dims, dims, dt);
            out.add(Tensor.fromSegment(compact, dt, dims));
        }
        return out;
    }

    /** Copies a dense tensor of {@code dims} into the leading corner of a dense buffer laid out for {@code into}. */
    private static void copyInto(MemorySegment from, int[] dims, MemorySegment to, int[] into, DType dt) {
        copyInto(from, dims, to, into, dims, dt);
    }

    /**
     * Copies the leading {@code region} corner from a dense buffer laid out for {@code fromDims} to one laid out
     * for {@code toDims}, one innermost row at a time.
     */
    private static void copyInto(MemorySegment from, int[] fromDims, MemorySegment to, int[] toDims, int[] region, DType dt) {
        int r = region.length;
        if (Shape.of(region).numel() == 0) return;
        if (r == 0) {
            MemorySegment.copy(from, 0, to, 0, dt.byteSize(1));
            return;
        }
        long[] fs = Shape.of(fromDims).strides(), ts = Shape.of(toDims).strides();
        long rowBytes = dt.byteSize(region[r - 1]);
        int[] idx = new int[r - 1];
        while (true) {
            long fo = 0, to_ = 0;
            for (int a = 0; a < r - 1; a++) {
                fo += idx[a] * fs[a];
                to_ += idx[a] * ts[a];
            }
            MemorySegment.copy(from, dt.byteSize(fo), to, dt.byteSize(to_), rowBytes);
            int a = r - 2;
            while (a >= 0 && ++idx[a] == region[a]) idx[a--] = 0;
            if (a < 0) return;
        }
    }

    @Override
    public void close() {
        for (Built b : builds.values()) b.plan().close();
        plan.close(); // (closing twice is harmless)
    }

    @Override
    public String toString() {
        return "OnnxPlan[" + model + ", variables " + variables.values() + ", bound " + (bound == null ? "none" : bound) + ", outputs "
                + Arrays.toString(outputs.stream().map(Tensor::shape).toArray()) + "]";
    }
}

package dev.kiln.serve;

import dev.kiln.types.DType;
import dev.kiln.runtime.DeviceSpec;
import dev.kiln.types.Shape;
import dev.kiln.types.Variable;
import dev.kiln.ir.Op;
import dev.kiln.ir.UOp;
import dev.kiln.runtime.Buffer;
import dev.kiln.runtime.Device;
import dev.kiln.runtime.ExecutionPlan;
import dev.kiln.runtime.PlanBuilder;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;

/**
 * A {@link Graph} compiled for one device: one {@link ExecutionPlan} whose input and parameter buffers
 * this object owns. See {@link ExecutableGraph} for the contract; this class documents how it is kept.
 *
 * <p><b>Memory.</b> Each compiled graph owns a shared arena holding its inputs (handles are inputs that
 * keep their value), the output block that {@link #arena()} shows, and the staging ring of asynchronous
 * commits. Parameters and constants live in a second arena shared with every replica and freed when the
 * last of them is closed. Every run copies the plan's outputs into the output block, so the block holds
 * the outputs contiguously at fixed offsets whatever the plan's own layout.
 *
 * <p><b>Raw views.</b> {@link #runRaw} returns read-only views of the output block itself (no copy beyond
 * the one every run makes), re-scoped to an arena of that run; the next run (of any kind) or
 * {@link #close()} closes that arena before touching the block, so a stale view throws
 * {@link IllegalStateException} on access and never shows another run's data.
 *
 * <p><b>Asynchronous runs.</b> A commit copies its inputs into a free slot of a small staging ring
 * ({@link CompileOptions#stagingSlots()}; the caller blocks while every slot is taken) and queues the run
 * on the graph's single executor thread. That thread copies the slot into the plan's input buffers,
 * frees the slot and runs; runs are strictly ordered, so the inputs of run k+1 reach the plan's buffers
 * only after run k has finished reading them, while the caller stages run k+1 during run k. Every
 * synchronous method first waits for queued runs.
 *
 * <p><b>Replicas.</b> {@link #copy()} replicates the plan ({@link ExecutionPlan#replicate}): the same steps
 * and compiled kernels, fresh intermediates and outputs, the replica's own input buffers; parameters and
 * constants are shared, and read-only on the replica.
 */
public final class CompiledGraph implements ExecutableGraph {
    private static final long ALIGN = 64;

    /** What the original and its replicas share: the description, the weights and their arena. */
    private static final class Shared {
        final DeviceSpec device;
        final Capabilities capabilities;
        final CompileOptions options;
        final List<TensorSpec> inputs, params, outputs;
        final Map<String, Integer> inputIndex = new HashMap<>(), paramIndex = new HashMap<>();
        final List<Variable> extentVariables;  // the variables of the inputs' symbolic axes, in order of first use
        final Buffer[] templateInputs;   // the input buffers the original plan was built on (replicas rebind these)
        final MemorySegment[] paramSegments;
        final boolean[] paramSet;
        final Arena arena;               // params and constants
        volatile int unsetParams;     // read by replicas on other threads before every run
        int references = 1;

        Shared(DeviceSpec device, CompileOptions options, List<TensorSpec> inputs, List<TensorSpec> params, List<TensorSpec> outputs,
               Buffer[] templateInputs, MemorySegment[] paramSegments, Arena arena) {
            this.device = device;
            this.capabilities = Capabilities.of(device);
            this.options = options;
            this.inputs = inputs;
            this.params = params;
            this.outputs = outputs;
            for (int i = 0; i < inputs.size(); i++) inputIndex.put(inputs.get(i).name(), i);
            java.util.LinkedHashSet<Variable> vars = new java.util.LinkedHashSet<>();
            for (TensorSpec in : inputs) for (int a = 0; a < in.shape().rank(); a++) if (in.shape().variable(a) != null) vars.add(in.shape().variable(a));
            this.extentVariables = List.copyOf(vars);
            for (int i = 0; i < params.size(); i++) paramIndex.put(params.get(i).name(), i);
            this.templateInputs = templateInputs;
            this.paramSegments = paramSegments;
            this.paramSet = new boolean[params.size()];
            this.unsetParams = params.size();
            this.arena = arena;
        }

        synchronized void retain() { references++; }

        synchronized void release() {
            if (--references == 0) arena.close();
        }
    }

    private final Shared shared;
    private final boolean replica;
    private final ExecutionPlan plan;
    private final Arena arena;                 // inputs, output block, staging ring
    private final MemorySegment[] inputs;      // per input, the plan reads it
    private final MemorySegment[] planOutputs; // per output, where the plan writes it
    private final MemorySegment outputBlock;
    private final MemorySegment[] outputs;     // per output, its slice of the block
    private final MemorySegment arenaView;
    private final OutputSlots slots;
    private final boolean[] handle;            // per input
    private final int[] feed;                  // per input: the output copied into it after each run, or -1
    private final long[] varValues;            // per plan variable, its value for the next runs
    private final boolean[] varSet;            // per plan variable, whether it has one
    private Arena rawArena;
    private boolean closed;

    // asynchronous commits
    private final MemorySegment[] staging;
    private final BlockingQueue<Integer> freeSlots;
    private ExecutorService executor;
    private Future<?> last;
    private volatile RuntimeException asyncFailure;

    private CompiledGraph(Shared shared, boolean replica, ExecutionPlan plan, Arena arena, MemorySegment[] inputs) {
        this.shared = shared;
        this.replica = replica;
        this.plan = plan;
        this.arena = arena;
        this.inputs = inputs;
        int n = shared.outputs.size();
        this.planOutputs = new MemorySegment[n];
        long[] offsets = new long[n], lengths = new long[n];
        long end = 0;
        for (int i = 0; i < n; i++) {
            TensorSpec o = shared.outputs.get(i);
            planOutputs[i] = plan.outputBuffer(i).segment().asSlice(0, o.byteSize());
            offsets[i] = end;
            lengths[i] = o.numel();
            end = align(end + o.byteSize());
        }
        this.outputBlock = arena.allocate(Math.max(end, 1), ALIGN);
        this.outputs = new MemorySegment[n];
        for (int i = 0; i < n; i++) outputs[i] = outputBlock.asSlice(offsets[i], shared.outputs.get(i).byteSize());
        this.arenaView = outputBlock.asReadOnly();
        this.slots = new OutputSlots(offsets, lengths, shared.outputs.stream().map(TensorSpec::dtype).toList());
        this.varValues = new long[plan.variables().size()];
        this.varSet = new boolean[varValues.length];
        for (int v = 0; v < varValues.length; v++) { // a symbolic axis of an input runs at its whole extent until told otherwise
            Variable var = plan.variables().get(v);
            if (shared.extentVariables.contains(var)) {
                varValues[v] = var.max();
                varSet[v] = true;
            }
        }
        this.handle = new boolean[shared.inputs.size()];
        this.feed = new int[shared.inputs.size()];
        Arrays.fill(feed, -1);
        long stagingBytes = 0;
        for (TensorSpec s : shared.inputs) stagingBytes = align(stagingBytes + s.byteSize());
        this.staging = new MemorySegment[shared.options.stagingSlots()];
        this.freeSlots = new ArrayBlockingQueue<>(staging.length);
        for (int s = 0; s < staging.length; s++) {
            staging[s] = arena.allocate(Math.max(stagingBytes, 1), ALIGN);
            freeSlots.add(s);
        }
    }

    private static long align(long bytes) { return (bytes + ALIGN - 1) / ALIGN * ALIGN; }

    // ---------------------------------------------------------------- compiling

    /** Compiles {@code graph} for {@code device}: placeholders become owned buffers, constants move to the device. */
    static CompiledGraph compile(Device device, Graph graph, CompileOptions options) {
        List<UOp> roots = graph.outputNodes();
        String where = device.spec().toString();
        Arena weights = Arena.ofShared();
        Arena own = Arena.ofShared();
        try {
            List<TensorSpec> inputSpecs = graph.inputs(), paramSpecs = graph.params();
            Buffer[] inputBuffers = new Buffer[inputSpecs.size()];
            MemorySegment[] paramSegments = new MemorySegment[paramSpecs.size()];
            Map<Graph.Placeholder, UOp> replacement = new IdentityHashMap<>();
            int in = 0, pa = 0;
            for (Graph.Placeholder p : graph.placeholders()) {
                TensorSpec s = p.spec();
                Buffer b = new Buffer(where, s.dtype(), s.numel(), (p.param() ? weights : own).allocate(Math.max(s.byteSize(), 1), ALIGN));
                if (p.param()) paramSegments[pa++] = b.segment();
                else inputBuffers[in++] = b;
                UOp node = UOp.buffer(b);
                Shape laid = s.shape().maxShape(); // the placeholder node has the maximum shape; the graph made its symbolic axes
                replacement.put(p, node.shape().equals(laid) ? node : UOp.of(Op.RESHAPE, s.dtype(), laid, node));
            }
            List<UOp> rewritten = rewrite(roots, graph, replacement, where, weights);
            ExecutionPlan plan = PlanBuilder.build(device, rewritten);
            List<TensorSpec> outputSpecs = new ArrayList<>();
            for (int i = 0; i < rewritten.size(); i++) {
                UOp r = rewritten.get(i);
                outputSpecs.add(new TensorSpec("output" + i, r.dtype(), r.shape()));
            }
            Shared shared = new Shared(device.spec(), options, List.copyOf(inputSpecs), List.copyOf(paramSpecs), List.copyOf(outputSpecs),
                    inputBuffers, paramSegments, weights);
            MemorySegment[] inputSegments = Arrays.stream(inputBuffers).map(Buffer::segment).toArray(MemorySegment[]::new);
            return new CompiledGraph(shared, false, plan, own, inputSegments);
        } catch (RuntimeException | Error e) {
            own.close();
            weights.close();
            throw e;
        }
    }

    /**
     * The output nodes with every placeholder replaced by its buffer and every constant buffer of another
     * device copied (once, into the shared arena) to this one.
     */
    private static List<UOp> rewrite(List<UOp> roots, Graph graph, Map<Graph.Placeholder, UOp> replacement, String where, Arena weights) {
        Map<UOp, UOp> done = new IdentityHashMap<>();
        List<UOp> out = new ArrayList<>();
        for (UOp root : roots) {
            for (UOp u : root.toposort()) {
                if (done.containsKey(u)) continue;
                Graph.Placeholder p = Graph.placeholderOf(u);
                UOp next;
                if (p != null) {
                    if (p.graph() != graph) {
                        throw new IllegalArgumentException("compile: an output reads " + (p.param() ? "param" : "input") + " '" + p.spec().name()
                                + "' of another graph");
                    }
                    next = replacement.get(p);
                } else if (u.op() == Op.BUFFER && !((Buffer) u.arg()).device().equals(where)) {
                    Buffer b = (Buffer) u.arg();
                    long bytes = b.dtype().byteSize(b.count());
                    MemorySegment s = weights.allocate(Math.max(bytes, 1), ALIGN);
                    MemorySegment.copy(b.segment(), 0, s, 0, bytes);
                    next = UOp.buffer(new Buffer(where, b.dtype(), b.count(), s));
                } else {
                    List<UOp> src = new ArrayList<>(u.src().size());
                    for (UOp s : u.src()) src.add(done.get(s));
                    next = u.withSrc(src);
                }
                done.put(u, next);
            }
            out.add(done.get(root));
        }
        return out;
    }

    // ---------------------------------------------------------------- description

    @Override
    public DeviceSpec device() { return shared.device; }

    @Override
    public Capabilities capabilities() { return shared.capabilities; }

    @Override
    public List<TensorSpec> inputs() { return shared.inputs; }

    @Override
    public List<TensorSpec> params() { return shared.params; }

    @Override
    public List<TensorSpec> outputs() { return shared.outputs; }

    /** The execution plan this graph runs (its kernels, their sources and its buffers). */
    public ExecutionPlan plan() { return plan; }

    /** Whether this graph is a replica made by {@link #copy()}. */
    public boolean isReplica() { return replica; }

    @Override
    public String toString() {
        return "CompiledGraph[" + shared.device + ", inputs " + shared.inputs + ", params " + shared.params + ", outputs " + shared.outputs
                + (replica ? ", replica" : "") + "]";
    }

    // ---------------------------------------------------------------- parameters and variables

    @Override
    public void setParam(String name, float[] values) {
        int p = paramToSet(name, "setParam");
        TensorSpec s = shared.params.get(p);
        checkLength("setParam", "param", s, values.length);
        DTypeCodec.writeFloats(values, shared.paramSegments[p], s.dtype());
        markSet(p);
    }

    @Override
    public void setParam(String name, MemorySegment bytes) {
        int p = paramToSet(name, "setParam");
        TensorSpec s = shared.params.get(p);
        if (bytes.byteSize() != s.byteSize()) {
            throw new IllegalArgumentException("setParam: param '" + name + "' (" + s.dtype() + s.shape() + ") expects " + s.byteSize()
                    + " bytes, got " + bytes.byteSize());
        }
        MemorySegment.copy(bytes, 0, shared.paramSegments[p], 0, s.byteSize());
        markSet(p);
    }

    @Override
    public void setParamTyped(String name, byte[] bytes, DType dtype) { setParamTyped(name, MemorySegment.ofArray(bytes), dtype); }

    @Override
    public void setParamTyped(String name, MemorySegment bytes, DType dtype) {
        shared.capabilities.require(Capability.TYPED_IO, "setParamTyped");
        int p = paramToSet(name, "setParamTyped");
        TensorSpec s = shared.params.get(p);
        if (dtype.isPacked()) {
            shared.capabilities.require(Capability.PACKED_WEIGHTS, "setParamTyped(" + dtype + ")");
            if (!s.dtype().isFloat()) {
                throw new IllegalArgumentException("setParamTyped: param '" + name + "' is " + s.dtype() + "; packed " + dtype
                        + " weights dequantise into a float param only");
            }
        } else if (dtype != s.dtype()) {
            throw new IllegalArgumentException("setParamTyped: param '" + name + "' is " + s.dtype() + ", given " + dtype
                    + " bytes (give its own dtype, or packed q8_0/q4_0 for a float param)");
        }
        checkTypedBytes("setParamTyped", "param", s, dtype, bytes.byteSize());
        DTypeCodec.typedToBuffer(bytes, dtype, shared.paramSegments[p], s.dtype(), s.numel());
        markSet(p);
    }

    private int paramToSet(String name, String op) {
        prepareAccess();
        Integer p = shared.paramIndex.get(name);
        if (p == null) {
            String hint = shared.inputIndex.containsKey(name) ? " ('" + name + "' is an input: feed it to run)" : "";
            throw new IllegalArgumentException(op + ": unknown param '" + name + "'" + hint + "; params are " + shared.params);
        }
        if (replica) {
            throw new IllegalStateException(op + ": param '" + name + "' is shared read-only with the graph this replica was copied from; set it there");
        }
        return p;
    }

    private void markSet(int p) {
        dev.kiln.serve.moe.MoeLayers.weightsChanged(plan); // staged copies of non-resident experts are stale now
        synchronized (shared) {
            if (!shared.paramSet[p]) {
                shared.paramSet[p] = true;
                shared.unsetParams--;
            }
        }
    }

    @Override
    public void setVariable(String name, long value) {
        prepareAccess();
        for (int i = 0; i < varValues.length; i++) {
            Variable v = plan.variables().get(i);
            if (v.name().equals(name)) {
                varValues[i] = v.bind(value).value();
                varSet[i] = true;
                return;
            }
        }
        throw new IllegalArgumentException("setVariable: the graph has no variable '" + name + "'; its variables are "
                + plan.variables().stream().map(v -> v.name() + "[" + v.min() + ", " + v.max() + "]").toList());
    }

    @Override
    public void setActiveExtent(int actual, int upper) {
        shared.capabilities.require(Capability.ACTIVE_EXTENT, "setActiveExtent");
        Variable v = extentVariable("setActiveExtent");
        if (upper != v.max()) {
            throw new IllegalArgumentException("setActiveExtent: the graph was compiled at extent " + v.max() + " of '" + v.name()
                    + "', given upper " + upper);
        }
        if (actual < v.min() || actual > upper) {
            throw new IllegalArgumentException("setActiveExtent: actual " + actual + " is outside [" + v.min() + ", " + upper + "] of '"
                    + v.name() + "'");
        }
        setVariable(v.name(), actual);
    }

    @Override
    public void clearActiveExtent() {
        Variable v = extentVariable("clearActiveExtent");
        setVariable(v.name(), v.max());
    }

    /** The one variable of the inputs' symbolic axes: the axis an active extent applies to. */
    Variable extentVariable(String op) {
        if (shared.extentVariables.size() != 1) {
            throw new IllegalStateException(op + ": " + (shared.extentVariables.isEmpty()
                    ? "the graph's inputs have no symbolic axis; declare the bucketed axis with a Variable (Shape.symbolic) so kernels can stop at the active extent"
                    : "the graph's inputs have several symbolic axes " + shared.extentVariables.stream().map(Variable::name).toList()
                            + "; give each its value with setVariable"));
        }
        return shared.extentVariables.getFirst();
    }

    // ---------------------------------------------------------------- synchronous runs

    @Override
    public List<float[]> run(Map<String, float[]> in) {
        prepareAccess();
        checkFloatInputs("run", in);
        checkRunnable("run");
        for (var e : in.entrySet()) {
            int i = shared.inputIndex.get(e.getKey());
            DTypeCodec.writeFloats(e.getValue(), inputs[i], shared.inputs.get(i).dtype());
        }
        execute();
        List<float[]> out = new ArrayList<>(outputs.length);
        for (int i = 0; i < outputs.length; i++) out.add(readOutput(i));
        return out;
    }

    @Override
    public List<MemorySegment> runRaw(Map<String, float[]> in) {
        shared.capabilities.require(Capability.HOST_READABLE_OUTPUTS, "runRaw");
        prepareAccess();
        checkFloatInputs("runRaw", in);
        checkRunnable("runRaw");
        for (var e : in.entrySet()) {
            int i = shared.inputIndex.get(e.getKey());
            DTypeCodec.writeFloats(e.getValue(), inputs[i], shared.inputs.get(i).dtype());
        }
        execute();
        // Views of the output block itself, re-scoped to an arena of this run: closing that arena at the next
        // run kills the views, while the block's memory stays owned (and freed) by the graph's own arena.
        rawArena = Arena.ofShared();
        List<MemorySegment> views = new ArrayList<>(outputs.length);
        for (MemorySegment o : outputs) views.add(o.reinterpret(o.byteSize(), rawArena, null).asReadOnly());
        return List.copyOf(views);
    }

    @Override
    public OutputSlots runSlots(float[]... in) {
        shared.capabilities.require(Capability.HOST_READABLE_OUTPUTS, "runSlots");
        prepareAccess();
        if (in.length != inputs.length) {
            throw new IllegalArgumentException("runSlots: expects " + inputs.length + " inputs in declaration order " + shared.inputs
                    + " (null for a handle), got " + in.length);
        }
        for (int i = 0; i < in.length; i++) {
            TensorSpec s = shared.inputs.get(i);
            if (handle[i]) {
                if (in[i] != null) throw new IllegalArgumentException("runSlots: input " + i + " '" + s.name() + "' is bound to a handle; pass null");
            } else if (in[i] == null) {
                throw new IllegalArgumentException("runSlots: input " + i + " '" + s.name() + "' (" + s.dtype() + s.shape() + ") is null");
            } else if (in[i].length != s.numel()) {
                checkLength("runSlots", "input", s, in[i].length);
            }
        }
        checkRunnable("runSlots");
        for (int i = 0; i < in.length; i++) if (!handle[i]) DTypeCodec.writeFloats(in[i], inputs[i], shared.inputs.get(i).dtype());
        execute();
        return slots;
    }

    @Override
    public MemorySegment arena() {
        shared.capabilities.require(Capability.HOST_READABLE_OUTPUTS, "arena");
        checkOpen();
        return arenaView;
    }

    @Override
    public List<TypedValues> runTyped(Map<String, TypedValues> in) {
        shared.capabilities.require(Capability.TYPED_IO, "runTyped");
        prepareAccess();
        for (var e : in.entrySet()) {
            TensorSpec s = inputToFeed("runTyped", e.getKey());
            TypedValues v = e.getValue();
            if (v == null) throw new IllegalArgumentException("runTyped: input '" + s.name() + "' has no values");
            if (v.dtype() != s.dtype()) {
                throw new IllegalArgumentException("runTyped: input '" + s.name() + "' is " + s.dtype() + ", given " + v.dtype() + " values");
            }
            checkTypedBytes("runTyped", "input", s, v.dtype(), v.bytes().length);
        }
        checkAllGiven("runTyped", in.keySet());
        checkRunnable("runTyped");
        for (var e : in.entrySet()) {
            int i = shared.inputIndex.get(e.getKey());
            TensorSpec s = shared.inputs.get(i);
            DTypeCodec.typedToBuffer(MemorySegment.ofArray(e.getValue().bytes()), s.dtype(), inputs[i], s.dtype(), s.numel());
        }
        execute();
        List<TypedValues> out = new ArrayList<>(outputs.length);
        for (int i = 0; i < outputs.length; i++) {
            TensorSpec s = shared.outputs.get(i);
            out.add(new TypedValues(s.dtype(), DTypeCodec.bufferToTyped(outputs[i], s.dtype(), s.numel())));
        }
        return out;
    }

    /** Waits for committed runs and invalidates the last raw views: any access to buffers starts here. */
    private void prepareAccess() {
        checkOpen();
        if (last != null) syncPending();
        invalidateRaw();
    }

    private void invalidateRaw() {
        if (rawArena != null) {
            rawArena.close();
            rawArena = null;
        }
    }

    private void checkRunnable(String op) {
        if (shared.unsetParams != 0) {
            List<String> unset = new ArrayList<>();
            synchronized (shared) {
                for (int i = 0; i < shared.paramSet.length; i++) if (!shared.paramSet[i]) unset.add(shared.params.get(i).name());
            }
            if (!unset.isEmpty()) throw new IllegalStateException(op + ": params never set: " + unset + " (setParam before running)");
        }
        for (boolean set : varSet) {
            if (set) continue;
            List<String> missing = new ArrayList<>();
            for (int i = 0; i < varSet.length; i++) if (!varSet[i]) missing.add(plan.variables().get(i).name());
            throw new IllegalStateException(op + ": variables without a value: " + missing + " (setVariable before running)");
        }
    }

    /** Runs the plan on the current input buffers, then applies handle feeds and fills the output block. */
    private void execute() {
        for (int i = 0; i < varValues.length; i++) plan.setVariable(i, varValues[i]);
        plan.execute();
        for (int i = 0; i < feed.length; i++) {
            if (feed[i] >= 0) MemorySegment.copy(planOutputs[feed[i]], 0, inputs[i], 0, planOutputs[feed[i]].byteSize());
        }
        for (int i = 0; i < outputs.length; i++) MemorySegment.copy(planOutputs[i], 0, outputs[i], 0, outputs[i].byteSize());
    }

    private float[] readOutput(int i) {
        float[] out = new float[Math.toIntExact(shared.outputs.get(i).numel())];
        DTypeCodec.readFloats(outputs[i], shared.outputs.get(i).dtype(), out);
        return out;
    }

    // ---------------------------------------------------------------- checks of inputs

    private TensorSpec inputToFeed(String op, String name) {
        Integer i = shared.inputIndex.get(name);
        if (i == null) {
            String hint = shared.paramIndex.containsKey(name) ? " ('" + name + "' is a param: set it with setParam)" : "";
            throw new IllegalArgumentException(op + ": unknown input '" + name + "'" + hint + "; inputs are " + shared.inputs);
        }
        if (handle[i]) {
            throw new IllegalArgumentException(op + ": input '" + name + "' is bound to a handle; the run reads the handle, so do not give it");
        }
        return shared.inputs.get(i);
    }

    private void checkFloatInputs(String op, Map<String, float[]> in) {
        for (var e : in.entrySet()) {
            TensorSpec s = inputToFeed(op, e.getKey());
            if (e.getValue() == null) throw new IllegalArgumentException(op + ": input '" + s.name() + "' has no values");
            checkLength(op, "input", s, e.getValue().length);
        }
        checkAllGiven(op, in.keySet());
    }

    private void checkAllGiven(String op, java.util.Set<String> given) {
        if (given.size() == inputs.length - handles()) return; // every key was checked to be a distinct fed input
        List<String> missing = new ArrayList<>();
        for (int i = 0; i < inputs.length; i++) if (!handle[i] && !given.contains(shared.inputs.get(i).name())) missing.add(shared.inputs.get(i).toString());
        throw new IllegalArgumentException(op + ": missing inputs " + missing + "; every input not bound to a handle must be given");
    }

    private int handles() {
        int n = 0;
        for (boolean h : handle) if (h) n++;
        return n;
    }

    private static void checkLength(String op, String what, TensorSpec s, long given) {
        if (given != s.numel()) {
            throw new IllegalArgumentException(op + ": " + what + " '" + s.name() + "' (" + s.dtype() + s.shape() + ") expects " + s.numel()
                    + " values, got " + given);
        }
    }

    private static void checkTypedBytes(String op, String what, TensorSpec s, DType given, long bytes) {
        if (given.isPacked() && s.numel() % DType.QUANT_BLOCK != 0) {
            throw new IllegalArgumentException(op + ": " + what + " '" + s.name() + "' (" + s.dtype() + s.shape() + ") has " + s.numel()
                    + " values, not a whole number of " + given + " blocks of " + DType.QUANT_BLOCK);
        }
        long expected = given.byteSize(s.numel());
        if (bytes != expected) {
            throw new IllegalArgumentException(op + ": " + what + " '" + s.name() + "' (" + s.dtype() + s.shape() + ") expects " + expected + " bytes of "
                    + given + " (" + s.numel() + " values), got " + bytes);
        }
    }

    // ---------------------------------------------------------------- mixture of experts

    @Override
    public void setMoeResidentExperts(boolean[] mask) {
        shared.capabilities.require(Capability.MOE_RESIDENCY, "setMoeResidentExperts");
        prepareAccess();
        dev.kiln.serve.moe.MoeLayers.setResidentExperts(plan, mask);
    }

    @Override
    public void setMoeResidentExpertsPerLayer(boolean[][] masks) {
        shared.capabilities.require(Capability.MOE_RESIDENCY, "setMoeResidentExpertsPerLayer");
        prepareAccess();
        dev.kiln.serve.moe.MoeLayers.setResidentExpertsPerLayer(plan, masks);
    }

    @Override
    public boolean enableMoeTopkCapture(int numExperts) {
        shared.capabilities.require(Capability.MOE_RESIDENCY, "enableMoeTopkCapture");
        prepareAccess();
        return dev.kiln.serve.moe.MoeLayers.enableTopkCapture(plan, numExperts);
    }

    @Override
    public java.util.Optional<List<int[]>> takeMoeTopkCapture() {
        shared.capabilities.require(Capability.MOE_RESIDENCY, "takeMoeTopkCapture");
        prepareAccess();
        return dev.kiln.serve.moe.MoeLayers.takeTopkCapture(plan);
    }

    @Override
    public java.util.Optional<dev.kiln.serve.moe.MoeResidencyStats> takeMoeResidencyStats() {
        shared.capabilities.require(Capability.MOE_RESIDENCY, "takeMoeResidencyStats");
        prepareAccess();
        return dev.kiln.serve.moe.MoeLayers.takeResidencyStats(plan);
    }

    // ---------------------------------------------------------------- replicas

    @Override
    public CompiledGraph copy() {
        shared.capabilities.require(Capability.REPLICAS, "copy");
        prepareAccess();
        Arena own = Arena.ofShared();
        try {
            Map<Buffer, Buffer> rebind = new IdentityHashMap<>();
            MemorySegment[] mine = new MemorySegment[inputs.length];
            for (int i = 0; i < inputs.length; i++) {
                Buffer template = shared.templateInputs[i];
                mine[i] = own.allocate(Math.max(inputs[i].byteSize(), 1), ALIGN).asSlice(0, inputs[i].byteSize());
                MemorySegment.copy(inputs[i], 0, mine[i], 0, inputs[i].byteSize());
                rebind.put(template, new Buffer(template.device(), template.dtype(), template.count(), mine[i]));
            }
            ExecutionPlan replicaPlan = plan.replicate(rebind);
            shared.retain();
            CompiledGraph c = new CompiledGraph(shared, true, replicaPlan, own, mine);
            System.arraycopy(handle, 0, c.handle, 0, handle.length);
            System.arraycopy(feed, 0, c.feed, 0, feed.length);
            System.arraycopy(varValues, 0, c.varValues, 0, varValues.length);
            System.arraycopy(varSet, 0, c.varSet, 0, varSet.length);
            return c;
        } catch (RuntimeException | Error e) {
            own.close();
            throw e;
        }
    }

    // ---------------------------------------------------------------- handles

    @Override
    public void bindHandle(String name, float[] values) {
        shared.capabilities.require(Capability.HANDLES, "bindHandle");
        prepareAccess();
        Integer i = shared.inputIndex.get(name);
        if (i == null) throw new IllegalArgumentException("bindHandle: unknown input '" + name + "'; a handle binds an input, inputs are " + shared.inputs);
        TensorSpec s = shared.inputs.get(i);
        if (values.length != s.numel()) {
            throw new IllegalArgumentException("bindHandle: handle '" + name + "' has " + values.length + " values, input '" + name + "' (" + s.dtype()
                    + s.shape() + ") holds " + s.numel());
        }
        DTypeCodec.writeFloats(values, inputs[i], s.dtype());
        handle[i] = true;
    }

    @Override
    public float[] readHandle(String name) {
        prepareAccess();
        int i = boundHandle("readHandle", name);
        float[] out = new float[Math.toIntExact(shared.inputs.get(i).numel())];
        DTypeCodec.readFloats(inputs[i], shared.inputs.get(i).dtype(), out);
        return out;
    }

    @Override
    public boolean hasHandle(String name) {
        checkOpen();
        Integer i = shared.inputIndex.get(name);
        return i != null && handle[i];
    }

    @Override
    public void setHandleFeed(String name, int outputIndex) {
        shared.capabilities.require(Capability.DEVICE_RESIDENT_HANDLES, "setHandleFeed");
        prepareAccess();
        int i = boundHandle("setHandleFeed", name);
        checkFeed("setHandleFeed", i, outputIndex);
        feed[i] = outputIndex;
    }

    @Override
    public void clearHandleFeed(String name) {
        prepareAccess();
        feed[boundHandle("clearHandleFeed", name)] = -1;
    }

    @Override
    public float[] runFeedHandle(Map<String, float[]> in, String name, int outputIndex) {
        shared.capabilities.require(Capability.DEVICE_RESIDENT_HANDLES, "runFeedHandle");
        prepareAccess();
        int h = boundHandle("runFeedHandle", name);
        checkFeed("runFeedHandle", h, outputIndex);
        checkFloatInputs("runFeedHandle", in);
        checkRunnable("runFeedHandle");
        for (var e : in.entrySet()) {
            int i = shared.inputIndex.get(e.getKey());
            DTypeCodec.writeFloats(e.getValue(), inputs[i], shared.inputs.get(i).dtype());
        }
        execute();
        MemorySegment.copy(planOutputs[outputIndex], 0, inputs[h], 0, planOutputs[outputIndex].byteSize());
        return readOutput(outputIndex);
    }

    private int boundHandle(String op, String name) {
        Integer i = shared.inputIndex.get(name);
        if (i == null || !handle[i]) {
            List<String> bound = new ArrayList<>();
            for (int j = 0; j < handle.length; j++) if (handle[j]) bound.add(shared.inputs.get(j).name());
            throw new IllegalArgumentException(op + ": no handle '" + name + "' is bound" + (i == null ? " (no such input)" : "")
                    + "; bound handles are " + bound);
        }
        return i;
    }

    private void checkFeed(String op, int input, int outputIndex) {
        TensorSpec h = shared.inputs.get(input);
        if (outputIndex < 0 || outputIndex >= outputs.length) {
            throw new IllegalArgumentException(op + ": output " + outputIndex + " does not exist; the graph has " + outputs.length + " outputs " + shared.outputs);
        }
        TensorSpec o = shared.outputs.get(outputIndex);
        if (o.dtype() != h.dtype() || o.numel() != h.numel()) {
            throw new IllegalArgumentException(op + ": output " + outputIndex + " (" + o.dtype() + o.shape() + ") cannot feed handle '" + h.name()
                    + "' (" + h.dtype() + h.shape() + "): dtype and size must match");
        }
    }

    // ---------------------------------------------------------------- asynchronous runs

    @Override
    public void commitNoWait(Map<String, float[]> in) {
        shared.capabilities.require(Capability.ASYNC_COMMIT, "commitNoWait");
        commit("commitNoWait", in, null, 0);
    }

    @Override
    public List<List<float[]>> runPipelined(List<Map<String, float[]>> inputSets) {
        shared.capabilities.require(Capability.ASYNC_COMMIT, "runPipelined");
        checkOpen();
        for (int k = 0; k < inputSets.size(); k++) {
            try {
                checkFloatInputs("runPipelined", inputSets.get(k));
            } catch (IllegalArgumentException e) {
                throw new IllegalArgumentException("runPipelined: input set " + k + ": " + e.getMessage(), e);
            }
        }
        checkRunnable("runPipelined");
        float[][][] results = new float[inputSets.size()][][];
        for (int k = 0; k < inputSets.size(); k++) commit("runPipelined", inputSets.get(k), results, k);
        syncPending();
        List<List<float[]>> out = new ArrayList<>(results.length);
        for (float[][] r : results) out.add(List.of(r));
        return out;
    }

    /**
     * Stages {@code in} in a free slot of the ring (waiting for one) and queues the run; with
     * {@code results}, the run's outputs are copied into {@code results[index]}.
     */
    private void commit(String op, Map<String, float[]> in, float[][][] results, int index) {
        checkOpen();
        invalidateRaw();
        checkFloatInputs(op, in);
        checkRunnable(op);
        if (asyncFailure != null) syncPending(); // report a failed earlier run before queueing more
        int slot = takeSlot();
        MemorySegment stage = staging[slot];
        long offset = 0;
        boolean[] given = new boolean[inputs.length];
        for (int i = 0; i < inputs.length; i++) {
            TensorSpec s = shared.inputs.get(i);
            float[] v = in.get(s.name());
            if (v != null) {
                DTypeCodec.writeFloats(v, stage.asSlice(offset, s.byteSize()), s.dtype());
                given[i] = true;
            }
            offset = align(offset + s.byteSize());
        }
        if (executor == null) {
            executor = Executors.newSingleThreadExecutor(Thread.ofPlatform().daemon().name("kiln-serve-" + shared.device).factory());
        }
        last = executor.submit(() -> runStaged(slot, given, results, index));
    }

    /** On the executor thread: moves a staged run's inputs into the plan's buffers, frees the slot, runs. */
    private void runStaged(int slot, boolean[] given, float[][][] results, int index) {
        try {
            if (asyncFailure != null) return; // an earlier run failed: later ones are skipped, syncPending reports it
            long offset = 0;
            for (int i = 0; i < inputs.length; i++) {
                long bytes = shared.inputs.get(i).byteSize();
                if (given[i]) MemorySegment.copy(staging[slot], offset, inputs[i], 0, bytes);
                offset = align(offset + bytes);
            }
            freeSlots.add(slot);
            slot = -1;
            execute();
            if (results != null) {
                float[][] r = new float[outputs.length][];
                for (int i = 0; i < outputs.length; i++) r[i] = readOutput(i);
                results[index] = r;
            }
        } catch (RuntimeException e) {
            asyncFailure = e;
        } finally {
            if (slot >= 0) freeSlots.add(slot);
        }
    }

    private int takeSlot() {
        try {
            return freeSlots.take();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("commit: interrupted while waiting for a free staging slot", e);
        }
    }

    @Override
    public void syncPending() {
        checkOpen();
        Future<?> f = last;
        if (f != null) {
            try {
                f.get(); // one executor thread runs commits in order: the last one done means all are
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IllegalStateException("syncPending: interrupted while waiting for committed runs", e);
            } catch (ExecutionException e) {
                throw new IllegalStateException("syncPending: a committed run failed", e.getCause());
            }
            last = null;
        }
        RuntimeException failure = asyncFailure;
        if (failure != null) {
            asyncFailure = null;
            throw failure;
        }
    }

    // ---------------------------------------------------------------- closing

    /** Waits for {@code f} even if interrupted (the interrupt is kept); its failure is not reported. */
    private static void awaitQuietly(Future<?> f) {
        if (f == null) return;
        boolean interrupted = false;
        while (true) {
            try {
                f.get();
                break;
            } catch (InterruptedException e) {
                interrupted = true;
            } catch (ExecutionException e) {
                break; // closing: a failure nobody synced for goes with the graph
            }
        }
        if (interrupted) Thread.currentThread().interrupt();
    }

    private void checkOpen() {
        if (closed) throw new IllegalStateException("compiled graph is closed");
    }

    @Override
    public void close() {
        if (closed) return;
        try {
            awaitQuietly(last); // memory is freed only after the executor has stopped touching it
        } finally {
            closed = true;
            if (executor != null) executor.shutdownNow();
            invalidateRaw();
            plan.close();
            arena.close();
            shared.release();
        }
    }
}

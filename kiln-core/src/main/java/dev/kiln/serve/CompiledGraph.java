package dev.kiln.serve;

import dev.kiln.runtime.Buffer;
import dev.kiln.runtime.DeviceSpec;
import dev.kiln.runtime.ExecutionPlan;
import dev.kiln.runtime.RunGuard;
import dev.kiln.serve.moe.MoeLayers;
import dev.kiln.serve.moe.MoeResidencyStats;
import dev.kiln.types.DType;
import dev.kiln.types.Variable;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

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
 *
 * <p><b>Threads.</b> A compiled graph runs one call at a time: a second thread entering a run, a commit or a
 * method that changes parameters, variables or handles while another thread is inside one gets a
 * {@link dev.kiln.runtime.ConcurrentUseException} (one compare-and-set on entry; never a silent wrong result).
 * Give each thread its own {@link #copy()}.
 */
public final class CompiledGraph implements ExecutableGraph {
    private final SharedGraphState shared;
    private final boolean replica;
    private final ExecutionPlan plan;
    private final Arena arena;                 // inputs, output block, staging ring
    private final IoBlock io;
    private final Handles handles;
    private final InputChecks checks;
    private final Params params;
    private final Variables variables;
    private final StagingRing ring;
    // detects a second thread entering a run or changing the graph while one is in progress: the plan's own guard,
    // so that the plan's entry inside a run is a re-entry and a run costs one compare-and-set, not two. The
    // executor thread of committed runs holds it while it runs one (StagingRing), so a committing thread holds
    // commitGuard instead, and a synchronous call first waits for its own thread's committed runs.
    private final RunGuard guard;
    private final RunGuard commitGuard = new RunGuard();
    private static final String REPLICA_API = "give each thread its own replica (CompiledGraph.copy())";
    private boolean closed;

    CompiledGraph(SharedGraphState shared, boolean replica, ExecutionPlan plan, Arena arena, MemorySegment[] inputs) {
        this.shared = shared;
        this.replica = replica;
        this.plan = plan;
        this.guard = plan.runGuard();
        this.arena = arena;
        this.io = new IoBlock(shared, plan, arena, inputs);
        this.variables = new Variables(shared, plan);
        this.handles = new Handles(shared);
        this.checks = new InputChecks(shared, handles);
        this.params = new Params(shared, replica, plan);
        this.ring = new StagingRing(shared, io, arena, this::execute, () -> guard.enter(this, REPLICA_API), guard::exit);
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

    /**
     * The dims of output {@code i} after the last run. An axis whose extent a host step of the graph decides while it runs
     * ({@link dev.kiln.Tensor#hostSized}: NonZero's count, the boxes a non-maximum suppression keeps) is at that run's
     * count, and {@link #run}, {@link #runTyped} and {@link #runFeedHandle} give such an output at these dims (C order, the
     * rows past the count left out), while {@link #runRaw}, {@link #runSlots} and {@link #arena()} keep its layout at the
     * capacity; every other axis is at its compiled size, as {@link #outputs()} gives it.
     *
     * @throws IndexOutOfBoundsException if the graph has no output {@code i}
     */
    public int[] outputDims(int i) {
        checkOpen();
        java.util.Objects.checkIndex(i, shared.outputs.size());
        return io.outputDims(i);
    }

    /** The execution plan this graph runs (its kernels, their sources and its buffers). */
    public ExecutionPlan plan() { return plan; }

    /** Whether this graph is a replica made by {@link #copy()}. */
    public boolean isReplica() { return replica; }

    @Override
    public String toString() {
        return "CompiledGraph[" + shared.device + ", inputs " + shared.inputs + ", params " + shared.params + ", outputs " + shared.outputs
                + (replica ? ", replica" : "") + "]";
    }

    // ---------------------------------------------------------------- parameters and variables (Params, Variables)

    @Override
    public void setParam(String name, float[] values) {
        boolean acquired = enter();
        try {
            prepareAccess();
            params.set(name, values);
        } finally {
            guard.exit(acquired);
        }
    }

    @Override
    public void setParam(String name, MemorySegment bytes) {
        boolean acquired = enter();
        try {
            prepareAccess();
            params.set(name, bytes);
        } finally {
            guard.exit(acquired);
        }
    }

    @Override
    public void setParamTyped(String name, byte[] bytes, DType dtype) { setParamTyped(name, MemorySegment.ofArray(bytes), dtype); }

    @Override
    public void setParamTyped(String name, MemorySegment bytes, DType dtype) {
        boolean acquired = enter();
        try {
            shared.capabilities.require(Capability.TYPED_IO, "setParamTyped");
            prepareAccess();
            params.setTyped(name, bytes, dtype);
        } finally {
            guard.exit(acquired);
        }
    }

    @Override
    public void setVariable(String name, long value) {
        boolean acquired = enter();
        try {
            prepareAccess();
            variables.set(name, value);
        } finally {
            guard.exit(acquired);
        }
    }

    @Override
    public void setActiveExtent(int actual, int upper) {
        shared.capabilities.require(Capability.ACTIVE_EXTENT, "setActiveExtent");
        setVariable(variables.checkActiveExtent(actual, upper).name(), actual);
    }

    @Override
    public void clearActiveExtent() {
        Variable v = extentVariable("clearActiveExtent");
        setVariable(v.name(), v.max());
    }

    /** The one variable of the inputs' symbolic axes: the axis an active extent applies to. */
    Variable extentVariable(String op) { return variables.extentVariable(op); }

    // ---------------------------------------------------------------- synchronous runs (IoBlock)

    @Override
    public List<float[]> run(Map<String, float[]> in) {
        boolean acquired = enter();
        try {
            prepareAccess();
            checks.checkFloatInputs("run", in);
            checkRunnable("run");
            io.writeInputs(in);
            execute();
            return io.readOutputs();
        } finally {
            guard.exit(acquired);
        }
    }

    @Override
    public List<MemorySegment> runRaw(Map<String, float[]> in) {
        boolean acquired = enter();
        try {
            shared.capabilities.require(Capability.HOST_READABLE_OUTPUTS, "runRaw");
            prepareAccess();
            checks.checkFloatInputs("runRaw", in);
            checkRunnable("runRaw");
            io.writeInputs(in);
            execute();
            return io.rawViews();
        } finally {
            guard.exit(acquired);
        }
    }

    @Override
    public OutputSlots runSlots(float[]... in) {
        boolean acquired = enter();
        try {
            shared.capabilities.require(Capability.HOST_READABLE_OUTPUTS, "runSlots");
            prepareAccess();
            checks.checkSlotInputs(in);
            checkRunnable("runSlots");
            for (int i = 0; i < in.length; i++) if (!handles.isBound(i)) io.writeInput(i, in[i]);
            execute();
            return io.slots;
        } finally {
            guard.exit(acquired);
        }
    }

    @Override
    public MemorySegment arena() {
        shared.capabilities.require(Capability.HOST_READABLE_OUTPUTS, "arena");
        checkOpen();
        return io.arenaView;
    }

    @Override
    public List<TypedValues> runTyped(Map<String, TypedValues> in) {
        boolean acquired = enter();
        try {
            shared.capabilities.require(Capability.TYPED_IO, "runTyped");
            prepareAccess();
            checks.checkTypedInputs(in);
            checkRunnable("runTyped");
            io.writeTypedInputs(in);
            execute();
            return io.readTypedOutputs();
        } finally {
            guard.exit(acquired);
        }
    }

    /**
     * Takes the guard for a synchronous call (pass the result to {@code guard.exit}), once this thread's committed
     * runs, which hold it while they run, are done.
     *
     * @throws dev.kiln.runtime.ConcurrentUseException if another thread is inside a call
     */
    private boolean enter() {
        if (ring.pending()) syncPending(); // only after commits: the fast path is one read and one compare-and-set
        return guard.enter(this, REPLICA_API);
    }

    /** Invalidates the last raw views: any access to buffers starts here, after {@link #enter()}. */
    private void prepareAccess() {
        checkOpen();
        io.invalidateRaw(); // committed runs are done: enter() waited for them
    }

    private void checkRunnable(String op) {
        params.checkAllSet(op);
        variables.checkAllSet(op);
    }

    /** Runs the plan on the current input buffers, then applies handle feeds and fills the output block. */
    private void execute() {
        variables.bind();
        plan.execute();
        io.setExtents(variables);
        handles.applyFeeds(io);
        io.fillOutputBlock();
    }

    // ---------------------------------------------------------------- mixture of experts (MoeLayers)

    @Override
    public void setMoeResidentExperts(boolean[] mask) {
        boolean acquired = enter();
        try {
            prepareMoe("setMoeResidentExperts");
            MoeLayers.setResidentExperts(plan, mask);
        } finally {
            guard.exit(acquired);
        }
    }

    @Override
    public void setMoeResidentExpertsPerLayer(boolean[][] masks) {
        boolean acquired = enter();
        try {
            prepareMoe("setMoeResidentExpertsPerLayer");
            MoeLayers.setResidentExpertsPerLayer(plan, masks);
        } finally {
            guard.exit(acquired);
        }
    }

    @Override
    public boolean enableMoeTopkCapture(int numExperts) {
        boolean acquired = enter();
        try {
            prepareMoe("enableMoeTopkCapture");
            return MoeLayers.enableTopkCapture(plan, numExperts);
        } finally {
            guard.exit(acquired);
        }
    }

    @Override
    public Optional<List<int[]>> takeMoeTopkCapture() {
        boolean acquired = enter();
        try {
            prepareMoe("takeMoeTopkCapture");
            return MoeLayers.takeTopkCapture(plan);
        } finally {
            guard.exit(acquired);
        }
    }

    @Override
    public Optional<MoeResidencyStats> takeMoeResidencyStats() {
        boolean acquired = enter();
        try {
            prepareMoe("takeMoeResidencyStats");
            return MoeLayers.takeResidencyStats(plan);
        } finally {
            guard.exit(acquired);
        }
    }

    private void prepareMoe(String op) {
        shared.capabilities.require(Capability.MOE_RESIDENCY, op);
        prepareAccess();
    }

    // ---------------------------------------------------------------- replicas

    @Override
    public CompiledGraph copy() { return copy(true); }

    @Override
    public CompiledGraph copy(boolean handleValues) {
        boolean acquired = enter();
        try {
            shared.capabilities.require(Capability.REPLICAS, "copy");
            prepareAccess();
            Arena own = Arena.ofShared();
            try {
                Map<Buffer, Buffer> rebind = new IdentityHashMap<>();
                MemorySegment[] inputs = io.inputs, mine = new MemorySegment[inputs.length];
                for (int i = 0; i < inputs.length; i++) {
                    Buffer template = shared.templateInputs[i];
                    mine[i] = dev.kiln.runtime.Transfers.allocateHost(own, Math.max(inputs[i].byteSize(), 1), SharedGraphState.ALIGN)
                            .asSlice(0, inputs[i].byteSize());
                    // a new arena holds zeros: a handle left so is bound to zeros
                    if (handleValues || !handles.isBound(i)) MemorySegment.copy(inputs[i], 0, mine[i], 0, inputs[i].byteSize());
                    rebind.put(template, new Buffer(template.device(), template.dtype(), template.count(), mine[i]));
                }
                ExecutionPlan replicaPlan = plan.replicate(rebind);
                shared.retain();
                CompiledGraph c = new CompiledGraph(shared, true, replicaPlan, own, mine);
                c.handles.copyFrom(handles);
                c.variables.copyFrom(variables);
                return c;
            } catch (RuntimeException | Error e) {
                own.close();
                throw e;
            }
        } finally {
            guard.exit(acquired);
        }
    }

    // ---------------------------------------------------------------- handles (Handles)

    @Override
    public void bindHandle(String name, float[] values) {
        boolean acquired = enter();
        try {
            shared.capabilities.require(Capability.HANDLES, "bindHandle");
            prepareAccess();
            int i = handles.toBind(name, values);
            io.writeInput(i, values);
            handles.bind(i);
        } finally {
            guard.exit(acquired);
        }
    }

    @Override
    public void bindZeroHandle(String name) {
        boolean acquired = enter();
        try {
            shared.capabilities.require(Capability.HANDLES, "bindZeroHandle");
            prepareAccess();
            int i = handles.toBind("bindZeroHandle", name);
            io.inputs[i].fill((byte) 0);
            handles.bind(i);
        } finally {
            guard.exit(acquired);
        }
    }

    @Override
    public float[] readHandle(String name) {
        boolean acquired = enter();
        try {
            prepareAccess();
            return io.readInput(handles.boundHandle("readHandle", name));
        } finally {
            guard.exit(acquired);
        }
    }

    /**
     * Copies the first {@code elements} elements of handle {@code sourceName} of {@code source} into this graph's handle
     * {@code name}, in place: a sequence's KV cache moved from one compiled graph to another (a prompt's decoder into a
     * batched decode's slot) without a round trip through a float array of the whole handle. Both handles must be bound
     * and of one dtype; the rest of this graph's handle is left as it was.
     *
     * @throws IllegalArgumentException if a handle is not bound, the dtypes differ or {@code elements} exceeds either
     */
    public void copyHandle(String name, CompiledGraph source, String sourceName, long elements) {
        boolean acquired = enter();
        try {
            shared.capabilities.require(Capability.HANDLES, "copyHandle");
            prepareAccess();
            int i = handles.boundHandle("copyHandle", name);
            TensorSpec to = shared.inputs.get(i);
            source.copyHandleInto(sourceName, to, io.inputs[i], elements);
        } finally {
            guard.exit(acquired);
        }
    }

    /** This graph's handle {@code name}'s first {@code elements} elements into {@code target} (a handle {@code spec} of another graph). */
    private void copyHandleInto(String name, TensorSpec spec, MemorySegment target, long elements) {
        boolean acquired = enter();
        try {
            prepareAccess();
            int i = handles.boundHandle("copyHandle", name);
            TensorSpec from = shared.inputs.get(i);
            if (from.dtype() != spec.dtype()) {
                throw new IllegalArgumentException("copyHandle: handle '" + name + "' is " + from.dtype() + ", handle '" + spec.name() + "' is " + spec.dtype());
            }
            if (elements < 0 || elements > from.numel() || elements > spec.numel()) {
                throw new IllegalArgumentException("copyHandle: " + elements + " elements, handle '" + name + "' holds " + from.numel() + " and handle '"
                        + spec.name() + "' " + spec.numel());
            }
            MemorySegment.copy(io.inputs[i], 0, target, 0, from.dtype().byteSize(elements));
        } finally {
            guard.exit(acquired);
        }
    }

    @Override
    public boolean hasHandle(String name) {
        checkOpen();
        return handles.has(name);
    }

    @Override
    public void setHandleFeed(String name, int outputIndex) {
        boolean acquired = enter();
        try {
            shared.capabilities.require(Capability.DEVICE_RESIDENT_HANDLES, "setHandleFeed");
            prepareAccess();
            int i = handles.boundHandle("setHandleFeed", name);
            handles.checkFeed("setHandleFeed", i, outputIndex);
            handles.setFeed(i, outputIndex);
        } finally {
            guard.exit(acquired);
        }
    }

    @Override
    public void clearHandleFeed(String name) {
        boolean acquired = enter();
        try {
            prepareAccess();
            handles.clearFeed(handles.boundHandle("clearHandleFeed", name));
        } finally {
            guard.exit(acquired);
        }
    }

    @Override
    public float[] runFeedHandle(Map<String, float[]> in, String name, int outputIndex) {
        boolean acquired = enter();
        try {
            shared.capabilities.require(Capability.DEVICE_RESIDENT_HANDLES, "runFeedHandle");
            prepareAccess();
            int h = handles.boundHandle("runFeedHandle", name);
            handles.checkFeed("runFeedHandle", h, outputIndex);
            checks.checkFloatInputs("runFeedHandle", in);
            checkRunnable("runFeedHandle");
            io.writeInputs(in);
            execute();
            io.feed(h, outputIndex);
            return io.readOutput(outputIndex);
        } finally {
            guard.exit(acquired);
        }
    }

    // ---------------------------------------------------------------- asynchronous runs (StagingRing)

    @Override
    public void commitNoWait(Map<String, float[]> in) {
        boolean acquired = commitGuard.enter(this, REPLICA_API);
        try {
            shared.capabilities.require(Capability.ASYNC_COMMIT, "commitNoWait");
            commit("commitNoWait", in, null, 0);
        } finally {
            commitGuard.exit(acquired);
        }
    }

    @Override
    public List<List<float[]>> runPipelined(List<Map<String, float[]>> inputSets) {
        boolean acquired = commitGuard.enter(this, REPLICA_API);
        try {
            shared.capabilities.require(Capability.ASYNC_COMMIT, "runPipelined");
            checkOpen();
            for (int k = 0; k < inputSets.size(); k++) {
                try {
                    checks.checkFloatInputs("runPipelined", inputSets.get(k));
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
        } finally {
            commitGuard.exit(acquired);
        }
    }

    /** Checks {@code in} and queues its run on the ring; with {@code results}, its outputs go to {@code results[index]}. */
    private void commit(String op, Map<String, float[]> in, float[][][] results, int index) {
        checkOpen();
        io.invalidateRaw();
        checks.checkFloatInputs(op, in);
        checkRunnable(op);
        if (ring.failed()) syncPending(); // report a failed earlier run before queueing more
        ring.commit(in, results, index);
    }

    @Override
    public void syncPending() {
        boolean acquired = commitGuard.enter(this, REPLICA_API); // the ring's bookkeeping is the committing thread's
        try {
            checkOpen();
            ring.sync();
        } finally {
            commitGuard.exit(acquired);
        }
    }

    // ---------------------------------------------------------------- closing

    private void checkOpen() {
        if (closed) throw new IllegalStateException("compiled graph is closed");
    }

    @Override
    public void close() {
        if (closed) return;
        boolean committing = commitGuard.enter(this, REPLICA_API); // no other thread may queue runs meanwhile
        try {
            ring.drain(); // this thread's committed runs hold the guard while they run; failures nobody synced for are dropped
            boolean acquired = guard.enter(this, REPLICA_API); // freeing memory under another thread's run would crash it
            try {
                closeGuarded();
            } finally {
                guard.exit(acquired);
            }
        } finally {
            commitGuard.exit(committing);
        }
    }

    private void closeGuarded() {
        if (closed) return;
        try {
            ring.close(); // memory is freed only after the executor has stopped touching it
        } finally {
            closed = true;
            io.invalidateRaw();
            plan.close();
            arena.close();
            shared.release();
        }
    }
}

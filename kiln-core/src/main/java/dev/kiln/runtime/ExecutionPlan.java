package dev.kiln.runtime;

import dev.kiln.types.DType;
import dev.kiln.types.Variable;
import dev.kiln.codegen.IndexCheckFailure;
import dev.kiln.codegen.KernelProgram;
import dev.kiln.ir.IndexCheck;
import dev.kiln.ir.Op;
import dev.kiln.ir.UOp;
import dev.kiln.schedule.MemoryPlan;
import dev.kiln.schedule.Schedule;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.IdentityHashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.RecursiveAction;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A graph prepared once and executed many times: its compiled kernels, its buffers and the order of
 * its steps. It owns all memory it allocated — one arena of intermediates and the output buffers —
 * and frees it on {@link #close()}. Inputs are the realised tensors the graph reads; write new data
 * into their buffers and {@link #execute()} again.
 *
 * <p>Steps whose byte ranges do not conflict ({@link MemoryPlan#conflicts}) may run at the same time on
 * the {@link WorkerPool}; a kernel whose outer loop is marked THREAD is split across the workers.
 *
 * <p>Symbolic sizes are {@link #variables()}, each with a {@link #variableSource source}: given by the caller
 * ({@link #executeWithVars}, {@link #setVariable}) before a run, or produced during it by a sized host step
 * ({@link dev.kiln.Tensor#hostSized}: a data-dependent count), which binds it for every later step of that run; such a
 * plan runs its steps one after another, and {@link #variableValue} gives the count the last run produced.
 *
 * <p>Not thread-safe: one plan runs one execution at a time. A second thread entering {@link #execute()},
 * {@link #executeWithVars} or {@link #executeProfiled()} while a run is in progress gets a
 * {@link ConcurrentUseException} (never a silent wrong result); give each thread its own {@link #replicate}.
 */
public final class ExecutionPlan implements AutoCloseable {
    private final Device device;
    private final Schedule schedule;
    private final MemoryPlan memory;
    private final List<UOp> nodes;
    private final List<PreparedOp> ops;
    private final List<KernelRunner> runners;
    private final Map<Integer, List<UOp>> checks; // per kernel step: its CHECK nodes by site, with the names and sizes errors give
    private final List<Integer> outputs;
    private final List<Variable> variables;
    private final long[] values;
    private final int[][] varSlots;     // per op: indices into values, in the kernel's variable order
    private final long[][] opVars;      // per op: the values handed to its kernel
    private final int[][] predecessors; // per op: earlier ops it must wait for
    /**
     * Per variable: the step whose extent binds it ({@link VariableSource.Step}), or -1 for one the caller gives. A plan
     * with any such step ({@code producing}) hands each step its variables just before it runs, in order, since a
     * value changes mid-run; so it runs its steps one at a time and is never recorded.
     */
    private final int[] producers;
    private final boolean producing;
    private final boolean parallel;
    private final List<Device> opDevices;   // the device each step runs on
    private final boolean multiDevice;
    private UnifiedExecutor executor;       // created on the first multi-device execution; closed with the plan
    private final Map<UOp, MemorySegment> rebound; // external input buffers replaced in a replica (identity keys)
    private final Device[] nodeDevices;     // per plan buffer: the device whose memory holds it
    private final Device[] copySources;     // per copy step: the device it copies from
    private final List<Device> queuing;     // devices whose work may still run when a step returns (device memory)
    private final Device recordable;        // the one device whose work a whole execution can be recorded on, or null
    private DeviceMemory.RecordedWork recorded; // the recorded execution, replayed while the variables keep their values
    private long[] recordedValues;

    private Arena arena;                // outputs and owned buffers; freed by close()
    private Arena intermediates;        // the intermediate arena; freed by releaseIntermediateBuffers()
    private MemorySegment[] segments;   // per plan buffer
    private MemorySegment[][] opBuffers;
    private KernelRunner[] opRunners;   // per kernel step: its runner bound to its opBuffers
    private long allocatedBytes;
    private long intermediateBytes;
    private final long plannedBytes;    // host memory the plan allocates: owned buffers and host arenas
    private boolean closed;
    // per step, the state of a stateful custom function; a field initialiser, so every constructor (a replica's
    // too) starts with none and creates its own on first use
    private final Map<Integer, Object> customStates = new java.util.concurrent.ConcurrentHashMap<>();
    // detects a second thread entering a run; a field initialiser, so a replica has its own
    private final RunGuard guard = new RunGuard();
    private static final String REPLICA_API = "give each thread its own replica (ExecutionPlan.replicate(Map))";

    ExecutionPlan(Device device, Schedule schedule, MemoryPlan memory, List<UOp> nodes, List<PreparedOp> ops,
                  List<KernelRunner> runners, Map<Integer, List<UOp>> checks, List<Integer> outputs, List<Variable> variables,
                  List<Device> opDevices) {
        this.device = device;
        this.schedule = schedule;
        this.memory = memory;
        this.nodes = List.copyOf(nodes);
        this.ops = List.copyOf(ops);
        this.runners = new ArrayList<>(runners);
        this.checks = Map.copyOf(checks);
        this.outputs = List.copyOf(outputs);
        this.variables = variables;
        this.values = new long[variables.size()];
        for (int i = 0; i < variables.size(); i++) values[i] = variables.get(i).min();
        this.varSlots = new int[ops.size()][];
        this.opVars = new long[ops.size()][];
        for (int i = 0; i < ops.size(); i++) {
            if (ops.get(i) instanceof PreparedKernel k) {
                List<Variable> vs = k.program().variables();
                varSlots[i] = vs.stream().mapToInt(variables::indexOf).toArray();
                opVars[i] = new long[vs.size()];
            }
        }
        this.predecessors = memory.predecessors();
        this.producers = producers(this.ops, variables);
        this.producing = java.util.Arrays.stream(producers).anyMatch(p -> p >= 0);
        boolean independent = false;
        for (int j = 1; j < ops.size(); j++) {
            if (predecessors[j].length == 0 && !(ops.get(j) instanceof PreparedBufferView)) independent = true;
        }
        // Steps side by side only pay when no step already splits itself across every worker: nested in a step
        // that runs beside others, a packed GEMM's shares wait on each other's workers (ResNet-50: 290 ms side by
        // side against 99 ms one step at a time).
        boolean splitsItself = false;
        for (int i = 0; i < ops.size(); i++) {
            if (!(ops.get(i) instanceof PreparedKernel k)) continue;
            KernelRunner r = runners.get(i);
            if (k.program().threaded() || r != null && r.usesAllWorkers()) splitsItself = true;
        }
        this.parallel = independent && !splitsItself && WorkerPool.size() > 1 && !producing;
        this.opDevices = List.copyOf(opDevices);
        this.multiDevice = opDevices.stream().distinct().count() > 1;
        if (multiDevice && producing) {
            // a step on another device's queue may start before the host step that binds its size has run
            throw new UnsupportedOperationException("a plan whose steps span devices " + opDevices.stream().distinct().map(d -> d.spec().toString()).toList()
                    + " cannot bind the sizes its host steps produce (" + producedNames() + "); prepare it on one device");
        }
        this.rebound = Map.of();
        this.nodeDevices = nodeDevices(device, this.nodes, this.ops, this.opDevices);
        this.copySources = new Device[ops.size()];
        for (int i = 0; i < ops.size(); i++) {
            if (ops.get(i) instanceof PreparedCopy c) copySources[i] = DeviceRegistry.get(c.fromDevice());
            if (ops.get(i) instanceof PreparedCustomFunction f && this.opDevices.get(i).deviceMemory().isPresent()) {
                logOnce("custom function " + f.function().name() + " on " + this.opDevices.get(i).spec() + " runs on the host: "
                        + "its inputs are copied out of the device's memory and its output back in, on every execution");
            }
        }
        this.queuing = this.opDevices.stream().distinct().filter(d -> d.deviceMemory().isPresent()).toList();
        this.recordable = recordableDevice(this.ops, this.opDevices, copySources);
        this.plannedBytes = hostBytes(memory, this.nodes, nodeDevices);
        checkBudget(device, memory, ops.size(), plannedBytes);
        this.arena = Arena.ofShared();
        allocateOwned();
        allocateIntermediates();
    }

    /** A replica of {@code source}: its steps and compiled kernels, fresh memory, some inputs rebound. */
    private ExecutionPlan(ExecutionPlan source, Map<UOp, MemorySegment> rebound) {
        this.device = source.device;
        this.schedule = source.schedule;
        this.memory = source.memory;
        this.nodes = source.nodes;
        this.ops = source.ops;
        this.runners = source.runners;
        this.checks = source.checks;
        this.outputs = source.outputs;
        this.variables = source.variables;
        this.values = source.values.clone();
        this.varSlots = source.varSlots;
        this.opVars = new long[ops.size()][];
        for (int i = 0; i < ops.size(); i++) if (source.opVars[i] != null) opVars[i] = new long[source.opVars[i].length];
        this.predecessors = source.predecessors;
        this.producers = source.producers;
        this.producing = source.producing;
        this.parallel = source.parallel;
        this.opDevices = source.opDevices;
        this.multiDevice = source.multiDevice;
        this.rebound = rebound;
        this.nodeDevices = source.nodeDevices;
        this.copySources = source.copySources;
        this.queuing = source.queuing;
        this.recordable = source.recordable;
        this.plannedBytes = source.plannedBytes;
        checkBudget(device, memory, ops.size(), plannedBytes);
        this.arena = Arena.ofShared();
        allocateOwned();
        allocateIntermediates();
    }

    /**
     * A replica for another thread: the same steps and the same compiled kernels (nothing is scheduled or
     * compiled again), with its own intermediate arena and outputs. Each external input buffer that is a
     * key of {@code rebind} is replaced by its value; every other input (weights, constants) is shared
     * with this plan, so the two must not write those while either runs. Keys the plan does not read are
     * ignored (a graph may declare an input it never uses).
     *
     * @throws IllegalArgumentException if a replacement's dtype or element count differs from its key's
     */
    public ExecutionPlan replicate(Map<Buffer, Buffer> rebind) {
        checkOpen();
        Map<UOp, MemorySegment> segs = new IdentityHashMap<>(rebound);
        for (var e : rebind.entrySet()) {
            Buffer from = e.getKey(), to = e.getValue();
            if (from.dtype() != to.dtype() || from.count() != to.count()) {
                throw new IllegalArgumentException("replicate: " + from + " cannot be replaced by " + to + " (dtype and count must match)");
            }
            segs.put(UOp.buffer(from), to.segment());
        }
        return new ExecutionPlan(this, segs);
    }

    /** Per variable, the step whose sized host function binds it, or -1. */
    private static int[] producers(List<PreparedOp> ops, List<Variable> variables) {
        int[] out = new int[variables.size()];
        java.util.Arrays.fill(out, -1);
        for (int i = 0; i < ops.size(); i++) {
            if (!(ops.get(i) instanceof PreparedCustomFunction f) || f.function().producedVariable() == null) continue;
            int v = variables.indexOf(f.function().producedVariable());
            if (v < 0) throw new IllegalStateException("step " + f.name() + " binds '" + f.function().producedVariable().name() + "', which the plan does not list");
            if (out[v] >= 0) throw new IllegalArgumentException("variable '" + variables.get(v).name() + "' is bound by two host steps, " + ops.get(out[v]).name() + " and " + f.name());
            out[v] = i;
        }
        return out;
    }

    private List<String> producedNames() {
        List<String> out = new ArrayList<>();
        for (int v = 0; v < producers.length; v++) if (producers[v] >= 0) out.add(variables.get(v).name());
        return out;
    }

    /** Per plan buffer, the device whose memory holds it: an input's own, or the device of the step that writes it. */
    private static Device[] nodeDevices(Device planDevice, List<UOp> nodes, List<PreparedOp> ops, List<Device> opDevices) {
        return nodeDevicesByOutput(planDevice, nodes, ops.stream().map(PreparedOp::output).toList(), opDevices);
    }

    /** {@link #nodeDevices} from each step's output buffer id, as {@link PlanBuilder} knows them before compiling. */
    static Device[] nodeDevicesByOutput(Device planDevice, List<UOp> nodes, List<Integer> stepOutputs, List<Device> opDevices) {
        Device[] out = new Device[nodes.size()];
        for (int i = 0; i < stepOutputs.size(); i++) out[stepOutputs.get(i)] = opDevices.get(i);
        for (int i = 0; i < nodes.size(); i++) {
            if (out[i] == null) out[i] = nodes.get(i).op() == Op.BUFFER ? DeviceRegistry.get(Buffer.of(nodes.get(i)).device()) : planDevice;
        }
        return out;
    }

    /**
     * The device a whole execution can be recorded on and replayed ({@link DeviceMemory#record}): every step runs
     * there and is a kernel, a view or a copy within it. Null when there is none.
     */
    private static Device recordableDevice(List<PreparedOp> ops, List<Device> opDevices, Device[] copySources) {
        if (opDevices.isEmpty()) return null;
        Device d = opDevices.getFirst();
        if (d.deviceMemory().isEmpty() || !d.deviceMemory().get().canRecord()) return null;
        for (int i = 0; i < ops.size(); i++) {
            if (opDevices.get(i) != d || ops.get(i) instanceof PreparedCustomFunction) return null;
            if (ops.get(i) instanceof PreparedCopy && copySources[i] != d) return null;
        }
        return d;
    }

    /** The storage of an external input: its buffer's, or its replacement in a replica. */
    private MemorySegment inputSegment(UOp buffer) {
        MemorySegment s = rebound.get(buffer);
        return s != null ? s : Buffer.of(buffer).segment();
    }

    // ---------------------------------------------------------------- memory

    private void allocateOwned() {
        segments = new MemorySegment[nodes.size()];
        Map<UOp, MemorySegment> owned = new IdentityHashMap<>();
        Map<UOp, Integer> position = new IdentityHashMap<>();
        for (int i = 0; i < nodes.size(); i++) position.put(nodes.get(i), i);
        for (int i = 0; i < nodes.size(); i++) {
            UOp n = nodes.get(i);
            if (n.op() == Op.BUFFER) {
                segments[i] = inputSegment(n);
                continue;
            }
            MemoryPlan.ByteRange r = memory.rangeOf(n);
            if (r.storage() instanceof MemoryPlan.Storage.Owned(UOp owner)) {
                MemorySegment base = owned.get(owner);
                if (base == null) {
                    base = owner.op() == Op.BUFFER ? inputSegment(owner) : allocate(nodeDevices[position.get(owner)], arena, bytesOf(owner));
                    owned.put(owner, base);
                }
                segments[i] = Transfers.slice(nodeDevices[i], base, r.offset(), r.length());
            }
        }
    }

    private void allocateIntermediates() {
        forgetRecording(); // it names the old intermediate memory
        intermediates = Arena.ofShared();
        long before = allocatedBytes;
        Map<String, MemorySegment> blocks = new HashMap<>(); // one arena per device, as planned
        for (var e : memory.arenaSizes().entrySet()) {
            blocks.put(e.getKey(), allocate(DeviceRegistry.get(e.getKey()), intermediates, Math.max(e.getValue(), 1)));
        }
        intermediateBytes = allocatedBytes - before;
        for (int i = 0; i < nodes.size(); i++) {
            UOp n = nodes.get(i);
            if (n.op() == Op.BUFFER) continue;
            MemoryPlan.ByteRange r = memory.rangeOf(n);
            if (r.storage() instanceof MemoryPlan.Storage.Arena(String dev)) {
                segments[i] = Transfers.slice(nodeDevices[i], blocks.get(dev), r.offset(), r.length());
            }
        }
        opBuffers = new MemorySegment[ops.size()][];
        opRunners = new KernelRunner[ops.size()];
        for (int i = 0; i < ops.size(); i++) {
            PreparedOp op = ops.get(i);
            MemorySegment[] b = new MemorySegment[1 + op.inputs().size()];
            boolean[] immutable = new boolean[b.length];
            b[0] = segments[op.output()];
            for (int j = 0; j < op.inputs().size(); j++) {
                UOp in = nodes.get(op.inputs().get(j));
                b[j + 1] = segments[op.inputs().get(j)];
                immutable[j + 1] = in.op() == Op.BUFFER && Buffer.of(in).isImmutable();
            }
            opBuffers[i] = b;
            if (runners.get(i) != null) opRunners[i] = runners.get(i).bind(b, immutable);
        }
    }

    /**
     * Host memory a plan allocates, known from its memory plan before anything is allocated (or compiled): each
     * owned buffer (an output, a buffer several views share) and each host device's intermediate arena, as
     * {@link #allocate} rounds them. Memory of a device with its own ({@link Device#deviceMemory()}) is that
     * device's to bound, so it is not counted.
     *
     * @param nodeDevices per plan buffer, the device whose memory holds it
     */
    static long hostBytes(MemoryPlan memory, List<UOp> nodes, Device[] nodeDevices) {
        long total = hostArenaBytes(memory);
        java.util.Set<UOp> owners = java.util.Collections.newSetFromMap(new IdentityHashMap<>());
        Map<UOp, Integer> position = new IdentityHashMap<>();
        for (int i = 0; i < nodes.size(); i++) position.put(nodes.get(i), i);
        for (UOp n : nodes) {
            if (n.op() == Op.BUFFER) continue;
            if (memory.rangeOf(n).storage() instanceof MemoryPlan.Storage.Owned(UOp owner) && owner.op() != Op.BUFFER
                    && owners.add(owner) && nodeDevices[position.get(owner)].deviceMemory().isEmpty()) {
                total = Math.addExact(total, Math.max(bytesOf(owner), 1));
            }
        }
        return total;
    }

    private static long hostArenaBytes(MemoryPlan memory) {
        long total = 0;
        for (var e : memory.arenaSizes().entrySet()) {
            if (DeviceRegistry.get(e.getKey()).deviceMemory().isEmpty()) total = Math.addExact(total, Math.max(e.getValue(), 1));
        }
        return total;
    }

    /**
     * Refuses a plan of {@code steps} steps on {@code device} whose host memory ({@link #hostBytes}) is over the
     * {@link MemoryBudget}: {@link PlanBuilder} asks before compiling, each plan and replica again before allocating.
     */
    static void checkBudget(Device device, MemoryPlan memory, int steps, long hostBytes) {
        long arenas = hostArenaBytes(memory);
        MemoryBudget.check(hostBytes, "execution plan on " + device.spec() + " (" + steps + (steps == 1 ? " step" : " steps")
                + ": outputs and owned buffers " + (hostBytes - arenas) + " bytes, intermediate arenas " + arenas + " bytes)");
    }

    private MemorySegment allocate(Device on, Arena a, long bytes) {
        MemorySegment s = Transfers.allocate(on, a, bytes);
        long size = Math.max(bytes, 1);
        allocatedBytes += size;
        MemoryStats.allocated(size);
        return s;
    }

    private static long bytesOf(UOp n) { return n.dtype().byteSize(n.shape().numel()); }

    /**
     * Frees the intermediate arena now; the next execution allocates it again. Outputs stay valid.
     */
    public void releaseIntermediateBuffers() {
        checkOpen();
        if (intermediates == null) return;
        forgetRecording();
        queuing.forEach(Transfers::synchronize); // nothing queued may still use the memory
        intermediates.close();
        intermediates = null;
        MemoryStats.freed(intermediateBytes);
        allocatedBytes -= intermediateBytes;
    }

    /** Frees everything this plan allocated. Output buffers and views of them become invalid. */
    @Override
    public void close() {
        boolean acquired = guard.enter(this, REPLICA_API); // freeing memory under another thread's run would crash it
        try {
            closeGuarded();
        } finally {
            guard.exit(acquired);
        }
    }

    private void closeGuarded() {
        if (closed) return;
        closed = true;
        if (executor != null) executor.close();
        forgetRecording();
        for (Device d : queuing) {
            try {
                d.deviceMemory().orElseThrow().synchronize(); // nothing queued may still use the memory freed below
            } catch (RuntimeException e) {
                // an earlier execution's failure, reported there; the memory is freed all the same
            }
        }
        try {
            closeCustomStates();
        } finally {
            if (intermediates != null) intermediates.close();
            arena.close();
            MemoryStats.freed(allocatedBytes);
            allocatedBytes = 0;
        }
    }

    /** Closes the custom functions' states that hold resources (a scan's step plan); the first failure is thrown after all are closed. */
    private void closeCustomStates() {
        RuntimeException first = null;
        for (Object state : customStates.values()) {
            if (!(state instanceof AutoCloseable c)) continue;
            try {
                c.close();
            } catch (Exception e) {
                RuntimeException r = e instanceof RuntimeException re ? re : new IllegalStateException("closing a custom function's state", e);
                if (first == null) first = r;
                else first.addSuppressed(r);
            }
        }
        customStates.clear();
        if (first != null) throw first;
    }

    private void checkOpen() {
        if (closed) throw new IllegalStateException("execution plan is closed");
    }

    // ---------------------------------------------------------------- execution

    /**
     * Runs every step with the current variable values.
     *
     * @throws ConcurrentUseException if another thread is running this plan
     * @throws ExtentOutOfRangeException if a sized host step gives a count outside its capacity
     */
    public void execute() {
        boolean acquired = guard.enter(this, REPLICA_API);
        try {
            executeGuarded();
        } finally {
            guard.exit(acquired);
        }
    }

    private void executeGuarded() {
        checkOpen();
        if (intermediates == null) allocateIntermediates();
        for (int i = 0; i < ops.size(); i++) {
            if (varSlots[i] != null) for (int v = 0; v < varSlots[i].length; v++) opVars[i][v] = values[varSlots[i][v]];
        }
        if (multiDevice) runOnDevices();
        else if (recordable != null) replay();
        else if (parallel) runParallel();
        else runSteps();
        for (Device d : queuing) synchronize(d);
    }

    /**
     * Waits for a device that queues its work ({@link DeviceMemory}), whose kernels report failed index checks
     * only then, in one status block for all of them: the failure is named from the checks of the steps that ran there.
     */
    private void synchronize(Device d) {
        try {
            Transfers.synchronize(d);
        } catch (RuntimeException e) {
            List<Integer> there = new ArrayList<>();
            for (int i = 0; i < ops.size(); i++) if (opDevices.get(i) == d) there.add(i);
            throw named(e, there);
        }
    }

    /** Waits for step {@code i}'s device to finish it, a failed index check named from that step's checks. */
    private void synchronizeStep(int i) {
        try {
            Transfers.synchronize(opDevices.get(i));
        } catch (RuntimeException e) {
            throw named(e, List.of(i));
        }
    }

    /**
     * {@code e} as the public error when it is (or was caused by) a failed index check of one of {@code steps}: the
     * check's operation and axis from the step's list, the range from the size it checks against (a symbolic size
     * at this run's value), the index from the kernel. A site that several of the steps have (a device that cannot
     * tell its kernels apart) names every operation whose range excludes the index. Any other exception is
     * {@code e} itself.
     */
    private RuntimeException named(RuntimeException e, List<Integer> steps) {
        IndexCheckFailure f = IndexCheckFailure.in(e);
        if (f == null) return e;
        List<IndexCheck> found = new ArrayList<>();
        long size = -1;
        for (int step : steps) {
            List<UOp> c = checks.getOrDefault(step, List.of());
            if (f.site() >= c.size()) continue;
            IndexCheck check = c.get(f.site()).indexCheckArg();
            long n = sizeOf(c.get(f.site()).src(1));
            if (check.admits(f.index(), n) || found.contains(check)) continue;
            if (found.isEmpty()) size = n;
            found.add(check);
        }
        if (found.isEmpty()) return e; // no step of this plan has the check: the failure speaks for itself
        IndexCheck c = found.getFirst();
        String op = found.stream().map(IndexCheck::op).distinct().collect(java.util.stream.Collectors.joining(" or "));
        IndexOutOfRangeException named = new IndexOutOfRangeException(op, c.axis(), f.index(), c.min(size), size - 1);
        named.initCause(f);
        return named;
    }

    /** The value of a CHECK's size: a constant, or a variable (at this run's value), broadcast to the index's shape. */
    private long sizeOf(UOp size) {
        UOp u = size;
        while (u.op() == Op.RESHAPE || u.op() == Op.EXPAND) u = u.src(0);
        return switch (u.op()) {
            case CONST -> u.constLong();
            case DEFINE_VAR -> values[variables.indexOf(u.variableArg())];
            default -> throw new IllegalStateException("an index check's size is " + size + ", neither a constant nor a variable");
        };
    }

    /**
     * Runs every step as one recorded unit of device work (a CUDA graph): recorded on the first execution and
     * again whenever a variable has changed since (the kernels' arguments hold the values), replayed otherwise.
     */
    private void replay() {
        if (recorded == null || !java.util.Arrays.equals(recordedValues, values)) {
            forgetRecording();
            recorded = recordable.deviceMemory().orElseThrow().record(() -> {
                for (int i = 0; i < ops.size(); i++) run(i);
            });
            recordedValues = values.clone();
        }
        recorded.replay();
    }

    private void forgetRecording() {
        if (recorded == null) return;
        recorded.close();
        recorded = null;
        recordedValues = null;
    }

    /**
     * Steps on several devices: each goes to its device's queue and waits only for the timeline values of
     * the steps it conflicts with (no global barrier); the execution returns when every device is done.
     */
    private void runOnDevices() {
        if (executor == null) executor = new UnifiedExecutor();
        long[] value = new long[ops.size()];
        for (int i = 0; i < ops.size(); i++) {
            PreparedOp op = ops.get(i);
            DeviceSpec at = opDevices.get(i).spec();
            executor.addDevice(at);
            List<Dependency> after = new ArrayList<>();
            for (int p : predecessors[i]) if (!(ops.get(p) instanceof PreparedBufferView)) after.add(new Dependency(opDevices.get(p).spec(), value[p]));
            Dependency[] deps = after.toArray(Dependency[]::new);
            final int step = i;
            value[i] = switch (op) {
                case PreparedBufferView v -> 0; // no data moves
                case PreparedCopy c -> {
                    DeviceSpec from = DeviceSpec.parse(c.fromDevice());
                    executor.addDevice(from);
                    yield executor.executeTransfer(asBuffer(c.inputs().getFirst(), from), asBuffer(c.output(), at), from, at, deps);
                }
                default -> executor.executeKernel(at, () -> {
                    run(step);
                    synchronizeStep(step); // the timeline advances only once the device is done
                }, deps);
            };
        }
        try {
            executor.synchronizeAll();
        } catch (DeviceExecutionException e) {
            // a failed index check is the caller's input, not the device's failure: it is thrown as itself
            for (Throwable t = e.getCause(); t != null; t = t.getCause()) if (t instanceof IndexOutOfRangeException named) throw named;
            // reported by a copy out of a device's memory, which reads its status block too: any step could have failed it
            throw named(e, java.util.stream.IntStream.range(0, ops.size()).boxed().toList());
        }
    }

    private Buffer asBuffer(int id, DeviceSpec on) {
        UOp n = nodes.get(id);
        return wrap(on.toString(), nodeDevices[id], n.dtype(), n.shape().numel(), segments[id]);
    }

    private static Buffer wrap(String name, Device where, DType dtype, long count, MemorySegment segment) {
        return where.deviceMemory().isPresent() ? Buffer.inDeviceMemory(name, dtype, count, segment) : new Buffer(name, dtype, count, segment);
    }

    /**
     * Sets the variables and runs. Every value is checked against its variable's bounds before anything
     * runs; names not used by the plan are an error too, and so is a variable one of its steps produces.
     *
     * @throws IllegalArgumentException naming the variable, the value and its range
     * @throws ExtentOutOfRangeException if a sized host step gives a count outside its capacity
     */
    public void executeWithVars(Map<String, Long> vars) {
        boolean acquired = guard.enter(this, REPLICA_API); // the variables too must not change under a run in progress
        try {
            checkOpen();
            long[] next = values.clone();
            for (var e : vars.entrySet()) {
                int i = indexOfVariable(e.getKey());
                refuseProduced(i, "executeWithVars");
                if (e.getValue() == null) throw new IllegalArgumentException("executeWithVars: no value for variable '" + e.getKey() + "'");
                next[i] = variables.get(i).bind(e.getValue()).value();
            }
            System.arraycopy(next, 0, values, 0, values.length);
            executeGuarded();
        } finally {
            guard.exit(acquired);
        }
    }

    /**
     * Sets variable {@code index} (in {@link #variables()} order) for the following {@link #execute()}s,
     * checked against its bounds; allocates nothing, for callers that run at a steady rate.
     *
     * @throws IllegalArgumentException naming the variable, the value and its range, or if one of the plan's steps
     *                                  produces that variable ({@link VariableSource.Step})
     * @throws IndexOutOfBoundsException if {@code index} names no variable of the plan
     */
    public void setVariable(int index, long value) {
        boolean acquired = guard.enter(this, REPLICA_API); // a run in progress must not see its variables change
        try {
            checkOpen();
            if (index < 0 || index >= variables.size()) {
                throw new IndexOutOfBoundsException("setVariable: variable " + index + " of a plan with " + variables.size() + " variables "
                        + variables.stream().map(v -> v.name() + "[" + v.min() + ", " + v.max() + "]").toList());
            }
            refuseProduced(index, "setVariable");
            Variable v = variables.get(index);
            if (value < v.min() || value > v.max()) v.bind(value); // throws with the variable's name and range
            values[index] = value;
        } finally {
            guard.exit(acquired);
        }
    }

    /** A variable a step binds is the plan's to set: a value given for it would be overwritten mid-run. */
    private void refuseProduced(int index, String api) {
        if (producers[index] < 0) return;
        throw new IllegalArgumentException(api + ": variable '" + variables.get(index).name() + "' is bound by the host step "
                + producerName(index) + " while the plan runs; it cannot be given");
    }

    /**
     * The value variable {@code index} (in {@link #variables()} order) has now: the last one given, or, for one a step
     * produces ({@link #variableSource}), the extent that step gave in the last run (its minimum before any run).
     */
    public long variableValue(int index) {
        checkOpen();
        java.util.Objects.checkIndex(index, variables.size());
        return values[index];
    }

    /** Where variable {@code index} (in {@link #variables()} order) gets its value: the caller, or one of the plan's steps. */
    public VariableSource variableSource(int index) {
        java.util.Objects.checkIndex(index, variables.size());
        int p = producers[index];
        return p < 0 ? new VariableSource.Caller() : new VariableSource.Step(p, producerName(index));
    }

    /** The name of the host step that produces variable {@code index}. */
    private String producerName(int index) { return ((PreparedCustomFunction) ops.get(producers[index])).function().name(); }

    private int indexOfVariable(String name) {
        for (int i = 0; i < variables.size(); i++) if (variables.get(i).name().equals(name)) return i;
        throw new IllegalArgumentException("executeWithVars: the plan has no variable '" + name + "'; its variables are "
                + variables.stream().map(v -> v.name() + "[" + v.min() + ", " + v.max() + "]").toList());
    }

    /** Runs every step once, sequentially, timing each. */
    public List<KernelProfile> executeProfiled() {
        boolean acquired = guard.enter(this, REPLICA_API);
        try {
            return executeProfiledGuarded();
        } finally {
            guard.exit(acquired);
        }
    }

    private List<KernelProfile> executeProfiledGuarded() {
        checkOpen();
        if (intermediates == null) allocateIntermediates();
        List<KernelProfile> profiles = new ArrayList<>();
        long origin = System.nanoTime();
        for (int i = 0; i < ops.size(); i++) {
            if (varSlots[i] != null) for (int v = 0; v < varSlots[i].length; v++) opVars[i][v] = values[varSlots[i][v]];
            long s = System.nanoTime();
            run(i);
            synchronizeStep(i); // a device that queues its work is timed to its end
            long e = System.nanoTime();
            PreparedOp op = ops.get(i);
            long flops = op instanceof PreparedKernel k ? k.flops() : 0;
            long bytes = switch (op) {
                case PreparedKernel k -> k.bytes();
                case PreparedCopy c -> 2 * c.bytes();
                default -> 0;
            };
            String source = op instanceof PreparedKernel k ? k.source() : "";
            profiles.add(new KernelProfile(op.name(), s - origin, e - s, flops, bytes, Thread.currentThread().getName(), source));
        }
        return profiles;
    }

    /** {@link #executeProfiled()} and a Chrome trace of it written to {@code traceFile}. */
    public List<KernelProfile> executeProfiled(Path traceFile) {
        List<KernelProfile> p = executeProfiled();
        ChromeTrace.write(traceFile, p);
        return p;
    }

    private void run(int i) {
        if (producing && varSlots[i] != null) for (int v = 0; v < varSlots[i].length; v++) opVars[i][v] = values[varSlots[i][v]];
        PreparedOp op = ops.get(i);
        MemorySegment[] b = opBuffers[i];
        switch (op) {
            case PreparedKernel k -> runKernel(i, k);
            case PreparedCopy c -> Transfers.copy(copySources[i], b[1], opDevices.get(i), b[0], c.bytes());
            case PreparedBufferView v -> { } // the view's buffer is its parent's storage
            case PreparedCustomFunction f -> runCustom(i, f, b);
        }
    }

    /** A slower path taken, said once per process. */
    private static final dev.kiln.ir.OnceLog LOG = new dev.kiln.ir.OnceLog(ExecutionPlan.class);

    private static void logOnce(String message) { LOG.info(message); }

    /**
     * A custom function's host code over its buffers: directly in host memory, or, on a device with memory of its
     * own, over host copies of its inputs, its output copied back in after.
     */
    private void runCustom(int i, PreparedCustomFunction f, MemorySegment[] b) {
        Device at = opDevices.get(i);
        boolean staged = at.deviceMemory().isPresent();
        PreparedOp op = ops.get(i);
        List<MemorySegment> ins = new ArrayList<>();
        for (int j = 1; j < b.length; j++) {
            int id = op.inputs().get(j - 1);
            MemorySegment in = b[j];
            if (nodeDevices[id].deviceMemory().isPresent()) {
                in = Arena.ofAuto().allocate(Math.max(1, bytesOf(nodes.get(id))), 64);
                Transfers.copyToHost(nodeDevices[id], b[j], in, bytesOf(nodes.get(id)));
            }
            ins.add(in.asReadOnly());
        }
        long outBytes = bytesOf(nodes.get(op.output()));
        MemorySegment out = staged ? Arena.ofAuto().allocate(Math.max(1, outBytes), 64) : b[0];
        switch (f.function().body()) {
            case dev.kiln.ir.CustomFunction.Stateful<?> s -> applyStateful(s, List.copyOf(ins), out, customState(i));
            case dev.kiln.ir.CustomFunction.Sized s -> bindExtent(f, s.applySized(List.copyOf(ins), out));
            case dev.kiln.ir.CustomFunction.Body plain -> plain.apply(List.copyOf(ins), out);
        }
        if (staged) Transfers.copyFromHost(out, at, b[0], outBytes);
    }

    /** Binds the variable of sized step {@code f} to the extent it gave, for the steps after it. */
    private void bindExtent(PreparedCustomFunction f, long extent) {
        Variable v = f.function().producedVariable();
        if (extent < v.min() || extent > v.max()) throw new ExtentOutOfRangeException(f.function().name(), v, extent);
        values[variables.indexOf(v)] = extent;
    }

    @SuppressWarnings("unchecked")
    private static <S> void applyStateful(dev.kiln.ir.CustomFunction.Stateful<S> body, List<MemorySegment> ins, MemorySegment out, Object state) {
        body.apply(ins, out, (S) state);
    }

    /**
     * The state this plan keeps for step {@code step} of {@link #preparedOps()}, a stateful custom function
     * ({@link dev.kiln.ir.CustomFunction.Stateful}); created on first use, never shared with another plan.
     *
     * @throws IllegalArgumentException if that step is not a stateful custom function
     */
    public Object customState(int step) {
        checkOpen();
        if (step < 0 || step >= ops.size() || !(ops.get(step) instanceof PreparedCustomFunction f)
                || !(f.function().body() instanceof dev.kiln.ir.CustomFunction.Stateful<?> s)) {
            throw new IllegalArgumentException("customState: step " + step + " of " + ops.size() + " is not a stateful custom function");
        }
        return customStates.computeIfAbsent(step, k -> s.newState(opDevices.get(step).spec().toString()));
    }

    private void runSteps() { for (int i = 0; i < ops.size(); i++) run(i); }

    private void runKernel(int i, PreparedKernel k) {
        try {
            KernelRunner.runAll(opRunners[i], k.program(), opBuffers[i], opVars[i]);
        } catch (RuntimeException e) {
            throw named(e, List.of(i));
        }
    }

    /** Runs ops as their predecessors finish, independent ones side by side on the worker pool. */
    private void runParallel() {
        int n = ops.size();
        AtomicInteger[] pending = new AtomicInteger[n];
        List<List<Integer>> successors = new ArrayList<>();
        for (int i = 0; i < n; i++) successors.add(new ArrayList<>());
        for (int j = 0; j < n; j++) {
            pending[j] = new AtomicInteger(predecessors[j].length);
            for (int i : predecessors[j]) successors.get(i).add(j);
        }
        java.util.concurrent.CompletableFuture<Void> all = new java.util.concurrent.CompletableFuture<>();
        AtomicInteger remaining = new AtomicInteger(n);
        class Step extends RecursiveAction {
            final int i;

            Step(int i) { this.i = i; }

            @Override
            protected void compute() {
                try {
                    run(i);
                } catch (Throwable t) {
                    all.completeExceptionally(t);
                    return;
                }
                List<Step> ready = new ArrayList<>();
                for (int s : successors.get(i)) if (pending[s].decrementAndGet() == 0) ready.add(new Step(s));
                if (remaining.decrementAndGet() == 0) all.complete(null);
                if (!ready.isEmpty()) invokeAll(ready);
            }
        }
        for (int i = 0; i < n; i++) if (predecessors[i].length == 0) WorkerPool.pool().execute(new Step(i));
        try {
            all.join();
        } catch (java.util.concurrent.CompletionException e) {
            if (e.getCause() instanceof RuntimeException re) throw re;
            if (e.getCause() instanceof Error er) throw er;
            throw e;
        }
    }

    // ---------------------------------------------------------------- inspection

    /**
     * The guard of this plan's runs. An owner that runs this plan inside calls of its own (a
     * {@link dev.kiln.serve.CompiledGraph}) holds it across each call, so the plan's own entry is a re-entry (one
     * read) and a second thread is stopped before it touches the owner's buffers either.
     */
    public RunGuard runGuard() { return guard; }

    public Device device() { return device; }

    /** The device step {@code i} of {@link #preparedOps()} runs on. */
    public Device deviceOf(int i) { return opDevices.get(i); }

    /** The steps, in schedule order. */
    public List<PreparedOp> preparedOps() { return ops; }

    /** The compiled kernels, with their generated source. */
    public List<PreparedKernel> kernels() {
        return ops.stream().filter(o -> o instanceof PreparedKernel).map(o -> (PreparedKernel) o).toList();
    }

    /** The symbolic variables the plan reads, with their bounds. */
    public List<Variable> variables() { return variables; }

    public int numOutputs() { return outputs.size(); }

    /** Output {@code i} (valid until {@link #close()}; overwritten by the next execution). */
    public Buffer outputBuffer(int i) {
        checkOpen();
        if (i < 0 || i >= outputs.size()) throw new IndexOutOfBoundsException("output " + i + " of a plan with " + outputs.size() + " outputs");
        return buffer((long) outputs.get(i));
    }

    /** The first output. */
    public Buffer outputBuffer() { return outputBuffer(0); }

    public List<Buffer> outputBuffers() {
        List<Buffer> out = new ArrayList<>();
        for (int i = 0; i < outputs.size(); i++) out.add(outputBuffer(i));
        return out;
    }

    /**
     * The buffer with id {@code astId}: the index of a realised node in {@link #buffers()} (the ids
     * {@link PreparedOp#output()} and {@link PreparedOp#inputs()} use).
     */
    public Buffer buffer(long astId) {
        checkOpen();
        if (astId < 0 || astId >= nodes.size()) throw new IllegalArgumentException("plan has no buffer " + astId + " (ids 0.." + (nodes.size() - 1) + ")");
        UOp n = nodes.get((int) astId);
        if (segments[(int) astId] == null) allocateIntermediates();
        Device on = nodeDevices[(int) astId];
        return wrap(on.spec().toString(), on, n.dtype(), n.shape().numel(), segments[(int) astId]);
    }

    /** Every buffer of the plan by id: inputs, intermediates and outputs. */
    public Map<Long, Buffer> buffers() {
        Map<Long, Buffer> out = new LinkedHashMap<>();
        for (int i = 0; i < nodes.size(); i++) out.put((long) i, buffer(i));
        return out;
    }

    /** The schedule the plan was built from. */
    public Schedule schedule() { return schedule; }

    /** Bytes of the intermediate arenas (all devices). */
    public long arenaBytes() { return memory.arenaSizes().values().stream().mapToLong(Long::longValue).sum(); }

    /**
     * Host bytes the plan allocates (owned outputs and buffers, host intermediate arenas), known before it
     * allocated them and checked against the {@link MemoryBudget}: what it holds after {@link #execute()} on host
     * devices, the arenas included.
     */
    public long plannedBytes() { return plannedBytes; }

    /** Bytes this plan holds off-heap now. */
    public long allocatedBytes() { return allocatedBytes; }

    @Override
    public String toString() {
        return "ExecutionPlan[" + device + ", " + ops.size() + " steps, " + kernels().size() + " kernels, arena " + memory.arenaSize() + " B]";
    }
}

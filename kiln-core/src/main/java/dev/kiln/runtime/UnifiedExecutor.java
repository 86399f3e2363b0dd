package dev.kiln.runtime;


import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Runs work across any mix of devices: one {@link DeviceContext} per {@link DeviceSpec}, each with a
 * {@link TimelineSignal} and a compute and a copy queue.
 *
 * <p>The model is stateless: the executor tracks no data hazards. Whoever submits work (an execution
 * plan, whose schedule already knows which step reads what another writes) names what it waits for as
 * {@link Dependency dependencies} — timeline values returned by earlier submissions. Work on one queue
 * runs in submission order; anything else is ordered only by dependencies.
 *
 * <p>Failures inside queued work are captured, fail every wait that depends on them, and are rethrown
 * by {@link #synchronizeAll()}, naming the device.
 *
 * <p>Submitting is thread-safe. {@link #global()} is a process-wide instance for convenience.
 */
public final class UnifiedExecutor implements AutoCloseable {
    /** How long queued work waits for its dependencies, and {@link #synchronizeAll()} for the queues, by default. */
    public static final Duration DEFAULT_TIMEOUT = Duration.ofMinutes(10);

    private static final class Global {
        static final UnifiedExecutor INSTANCE = new UnifiedExecutor(DEFAULT_TIMEOUT, true);
    }

    private final Map<DeviceSpec, DeviceContext> contexts = new ConcurrentHashMap<>();
    private final Duration timeout;
    private final boolean shared;
    private volatile boolean closed;

    /** An executor with {@link #DEFAULT_TIMEOUT}. */
    public UnifiedExecutor() { this(DEFAULT_TIMEOUT); }

    /** An executor whose dependency waits and {@link #synchronizeAll()} give up after {@code timeout}. */
    public UnifiedExecutor(Duration timeout) { this(timeout, false); }

    private UnifiedExecutor(Duration timeout, boolean shared) {
        Objects.requireNonNull(timeout, "timeout");
        if (timeout.isNegative() || timeout.isZero()) throw new IllegalArgumentException("UnifiedExecutor: timeout must be positive, got " + timeout);
        this.timeout = timeout;
        this.shared = shared;
    }

    /** The process-wide executor, created on first use; {@link #close()} does nothing on it. */
    public static UnifiedExecutor global() { return Global.INSTANCE; }

    /** The wait limit of this executor. */
    public Duration timeout() { return timeout; }

    /**
     * Adds a device, creating its context (timeline and queues) unless it is already there.
     *
     * @return the device's context
     * @throws IllegalArgumentException if no provider knows the device kind (from {@link DeviceRegistry})
     * @throws UnsupportedOperationException if the device is not available on this machine, with the reason
     */
    public DeviceContext addDevice(DeviceSpec spec) {
        Objects.requireNonNull(spec, "spec");
        checkOpen();
        DeviceContext existing = contexts.get(spec);
        if (existing != null) return existing;
        Device device = DeviceRegistry.get(spec); // validates before anything is created
        return contexts.computeIfAbsent(spec, s -> new DeviceContext(device, timeout));
    }

    /**
     * The context of an added device.
     *
     * @throws IllegalArgumentException if the device was not added (the message lists the added ones)
     */
    public DeviceContext context(DeviceSpec spec) {
        Objects.requireNonNull(spec, "spec");
        DeviceContext c = contexts.get(spec);
        if (c == null) {
            throw new IllegalArgumentException("device " + spec + " has not been added to this executor (call addDevice first); added devices: "
                    + devices());
        }
        return c;
    }

    /** The added devices, sorted by name. */
    public List<DeviceSpec> devices() {
        return contexts.keySet().stream().sorted(Comparator.comparing(DeviceSpec::toString)).toList();
    }

    /** How data moves from {@code from} to {@code to}: the same device, the same kind, or different kinds. */
    public static SyncStrategy syncStrategy(DeviceSpec from, DeviceSpec to) {
        if (from.equals(to)) return SyncStrategy.LOCAL_COPY;
        if (from.kind().equals(to.kind())) return SyncStrategy.PEER_TO_PEER;
        return SyncStrategy.STAGED_HOST;
    }

    /**
     * The device all {@code buffers} live on, if they share one: then work on them needs no
     * cross-device synchronisation. Empty if they are on several devices or there are none.
     */
    public Optional<DeviceSpec> singleDeviceCheck(Collection<Buffer> buffers) {
        DeviceSpec only = null;
        for (Buffer b : buffers) {
            DeviceSpec d = DeviceSpec.parse(b.device());
            if (only == null) only = d;
            else if (!only.equals(d)) return Optional.empty();
        }
        return Optional.ofNullable(only);
    }

    /**
     * Waits until every queue has finished everything issued before this call, then rethrows the
     * failures of queued work, if any: the earliest as the exception, the others suppressed. Reported
     * failures are cleared, so the devices accept work again.
     *
     * @throws DeviceExecutionException naming the device and timeline value of the first failure
     * @throws TimelineTimeoutException if a device does not finish within the timeout
     */
    public void synchronizeAll() {
        List<DeviceContext> all = List.copyOf(contexts.values());
        for (DeviceContext c : all) c.signal().awaitFinished(c.issued(), timeout);
        List<TimelineSignal.Failure> failures = new ArrayList<>();
        for (DeviceContext c : all) {
            TimelineSignal.Failure f = c.signal().takeFailure();
            if (f != null) failures.add(f);
        }
        if (failures.isEmpty()) return;
        failures.sort(Comparator.comparingLong(TimelineSignal.Failure::nanoTime));
        DeviceExecutionException first = failures.getFirst().error();
        DeviceExecutionException thrown = new DeviceExecutionException(first.device(), first.value(),
                "synchronizeAll: " + first.getMessage(), first);
        for (TimelineSignal.Failure f : failures.subList(1, failures.size())) thrown.addSuppressed(f.error());
        throw thrown;
    }

    /**
     * Queues a kernel on {@code device}'s compute queue, to run once its dependencies are reached.
     *
     * @return the timeline value on {@code device} that later work waits for
     * @throws IllegalArgumentException if the device or a dependency's device was not added, or a
     *         dependency's value was never issued; nothing is queued then
     */
    public long executeKernel(DeviceSpec device, Runnable fn, Dependency... after) {
        Objects.requireNonNull(fn, "fn");
        checkOpen();
        DeviceContext c = context(device);
        return c.submit(DeviceContext.Queue.COMPUTE, resolve(after), fn);
    }

    /**
     * Queues a copy of {@code src} (on {@code srcDevice}) into {@code dst} (on {@code dstDevice}), to run
     * once its dependencies are reached, as {@link #syncStrategy} chooses: on the device's copy queue for
     * the same device; on the destination's copy queue for a peer; for different kinds, out to a host
     * staging buffer on the source's copy queue, then in from it on the destination's copy queue.
     *
     * <p>The dependencies must cover the writes of {@code src} and any earlier use of {@code dst}.
     *
     * @return the timeline value on {@code dstDevice} at which {@code dst} holds the data
     * @throws IllegalArgumentException if the buffers differ in dtype or size, do not live on the given
     *         devices, or a device or dependency is unknown; all is checked before anything is queued
     */
    public long executeTransfer(Buffer src, Buffer dst, DeviceSpec srcDevice, DeviceSpec dstDevice, Dependency... after) {
        Objects.requireNonNull(src, "src");
        Objects.requireNonNull(dst, "dst");
        Objects.requireNonNull(srcDevice, "srcDevice");
        Objects.requireNonNull(dstDevice, "dstDevice");
        checkOpen();
        if (src.dtype() != dst.dtype()) {
            throw new IllegalArgumentException("executeTransfer: source " + src + " and destination " + dst
                    + " have different dtypes (" + src.dtype() + " vs " + dst.dtype() + ")");
        }
        if (src.count() != dst.count()) {
            throw new IllegalArgumentException("executeTransfer: source " + src + " and destination " + dst
                    + " have different sizes (" + src.count() + " vs " + dst.count() + " elements)");
        }
        checkOn("source", src, srcDevice);
        checkOn("destination", dst, dstDevice);
        DeviceContext from = context(srcDevice);
        DeviceContext to = context(dstDevice);
        List<DeviceContext.After> deps = resolve(after);
        long bytes = src.dtype().byteSize(src.count());
        MemorySegment s = src.segment(), d = dst.segment();
        Device fd = from.device(), td = to.device();
        return switch (syncStrategy(srcDevice, dstDevice)) {
            case LOCAL_COPY, PEER_TO_PEER -> to.submit(DeviceContext.Queue.COPY, deps, () -> {
                Transfers.copy(fd, s, td, d, bytes);
                Transfers.synchronize(td); // the timeline advances only once the data is there
            });
            case STAGED_HOST -> {
                // Host staging memory, freed by the GC once both steps have let go of it.
                MemorySegment staging = Arena.ofAuto().allocate(Math.max(1, bytes), 64);
                long out = from.submit(DeviceContext.Queue.COPY, deps, () -> Transfers.copyToHost(fd, s, staging, bytes));
                yield to.submit(DeviceContext.Queue.COPY, List.of(new DeviceContext.After(from, out)),
                        () -> Transfers.copyFromHost(staging, td, d, bytes));
            }
        };
    }

    private static void checkOn(String role, Buffer b, DeviceSpec device) {
        if (!DeviceSpec.parse(b.device()).equals(device)) {
            throw new IllegalArgumentException("executeTransfer: " + role + " " + b + " lives on " + DeviceSpec.parse(b.device())
                    + ", not on the given " + role + " device " + device);
        }
    }

    private List<DeviceContext.After> resolve(Dependency... after) {
        List<DeviceContext.After> out = new ArrayList<>(after.length);
        for (Dependency d : after) {
            DeviceContext c = context(Objects.requireNonNull(d, "dependency").device());
            long issued = c.issued();
            if (d.value() > issued) {
                throw new IllegalArgumentException("dependency on device " + d.device() + " timeline value " + d.value()
                        + " can never be reached: the device has issued values up to " + issued);
            }
            out.add(new DeviceContext.After(c, d.value()));
        }
        return out;
    }

    private void checkOpen() {
        if (closed) throw new IllegalStateException("UnifiedExecutor is closed");
    }

    /**
     * Stops every device's queues after the work already queued (waiting up to the timeout for it).
     * Failures are not reported here: call {@link #synchronizeAll()} first. Does nothing on {@link #global()}.
     */
    @Override
    public void close() {
        if (shared || closed) return;
        closed = true;
        contexts.values().forEach(DeviceContext::close);
    }

    @Override
    public String toString() { return "UnifiedExecutor" + devices(); }
}

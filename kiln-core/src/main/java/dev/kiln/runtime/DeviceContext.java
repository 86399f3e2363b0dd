package dev.kiln.runtime;


import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.TreeSet;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;

/**
 * One device as {@link UnifiedExecutor} drives it: its {@link TimelineSignal} and two in-order queues,
 * one for kernels ({@link Queue#COMPUTE}) and one for copies ({@link Queue#COPY}), each a single daemon
 * thread ({@code kiln-<device>-compute}, {@code kiln-<device>-copy}).
 *
 * <p>Every submission gets the next timeline value. Work on one queue runs in submission order; the
 * two queues run side by side, so the timeline advances to {@code v} only once every value up to
 * {@code v} has finished, whichever queue it ran on. Ordering across queues and devices is explicit:
 * a submission names the timeline values it waits for.
 *
 * <p>If work fails, the failure is recorded on the signal; work submitted after it on this device is
 * skipped (it would read what the failed work should have written) until {@link UnifiedExecutor#synchronizeAll()}
 * reports the failure.
 */
public final class DeviceContext implements AutoCloseable {
    /** The two queues of a device. */
    public enum Queue { COMPUTE, COPY }

    /** Wait until {@code context}'s timeline reaches {@code value}. */
    public record After(DeviceContext context, long value) {
        public After {
            Objects.requireNonNull(context, "context");
        }
    }

    private final DeviceSpec spec;
    private final Device device;
    private final TimelineSignal signal;
    private final Duration timeout;
    private final ExecutorService compute;
    private final ExecutorService copy;
    private final TreeSet<Long> finishedAhead = new TreeSet<>(); // finished values above the signal, guarded by itself
    private long issued;   // guarded by this
    private boolean closed; // guarded by this

    /** A context for {@code device}; dependency waits in its queues give up after {@code timeout}. */
    DeviceContext(Device device, Duration timeout) {
        this.device = Objects.requireNonNull(device, "device");
        this.spec = device.spec();
        this.signal = new TimelineSignal(spec);
        this.timeout = Objects.requireNonNull(timeout, "timeout");
        this.compute = queue("compute");
        this.copy = queue("copy");
    }

    private ExecutorService queue(String role) {
        String name = "kiln-" + spec + "-" + role;
        return Executors.newSingleThreadExecutor(r -> {
            Thread t = new Thread(r, name);
            t.setDaemon(true);
            return t;
        });
    }

    public DeviceSpec spec() { return spec; }

    public Device device() { return device; }

    /** The timeline; its value says how far this device's work has finished. */
    public TimelineSignal signal() { return signal; }

    /** The kernel queue. */
    public ExecutorService computeQueue() { return compute; }

    /** The copy queue. */
    public ExecutorService copyQueue() { return copy; }

    /** The last timeline value handed out (0 before any work); the signal reaches it once all work is done. */
    public synchronized long issued() { return issued; }

    /**
     * Queues {@code work} on {@code queue}: it first waits until every dependency's timeline has reached
     * its value, then runs; when it finishes the timeline can advance to the returned value.
     *
     * @return the timeline value of this work
     * @throws IllegalArgumentException if a dependency waits for a value its device has not issued (it
     *         could never be reached); nothing is queued then
     * @throws IllegalStateException if this context is closed
     */
    public long submit(Queue queue, List<After> after, Runnable work) {
        Objects.requireNonNull(queue, "queue");
        Objects.requireNonNull(work, "work");
        Map<DeviceContext, Long> waits = new LinkedHashMap<>(); // one wait per device: the highest value covers the rest
        for (After a : after) {
            long issuedThere = a.context().issued();
            if (a.value() < 0 || a.value() > issuedThere) {
                throw new IllegalArgumentException("work on " + spec + " cannot wait for device " + a.context().spec()
                        + " to reach timeline value " + a.value() + ": it has issued values 0.." + issuedThere);
            }
            waits.merge(a.context(), a.value(), Math::max);
        }
        List<After> deps = waits.entrySet().stream().map(e -> new After(e.getKey(), e.getValue())).toList();
        ExecutorService q = queue == Queue.COMPUTE ? compute : copy;
        synchronized (this) {
            if (closed) throw new IllegalStateException("device " + spec + ": its context is closed");
            long v = issued + 1;
            try {
                q.execute(() -> run(v, deps, work));
            } catch (RejectedExecutionException e) {
                throw new IllegalStateException("device " + spec + ": its " + queue.name().toLowerCase() + " queue rejected work", e);
            }
            issued = v;
            return v;
        }
    }

    private void run(long v, List<After> deps, Runnable work) {
        try {
            TimelineSignal.Failure f = signal.failure();
            if (f != null && f.value() < v) return; // skipped: earlier work on this device failed
            for (After d : deps) d.context().signal().waitFor(d.value(), timeout);
            work.run();
        } catch (Throwable t) {
            signal.fail(v, new DeviceExecutionException(spec, v, "device " + spec + ": work at timeline value " + v
                    + " failed: " + t, t));
        } finally {
            finished(v);
        }
    }

    /** Advances the signal over every value finished without a gap below it. */
    private void finished(long v) {
        synchronized (finishedAhead) {
            long reached = signal.value();
            if (v != reached + 1) {
                finishedAhead.add(v);
                return;
            }
            reached = v;
            while (!finishedAhead.isEmpty() && finishedAhead.first() == reached + 1) reached = finishedAhead.pollFirst();
            signal.signal(reached);
        }
    }

    /**
     * Stops accepting work and waits (up to the dependency timeout) for queued work to finish, so that
     * nothing touches buffers the caller frees next. Failures are not reported here; call
     * {@link UnifiedExecutor#synchronizeAll()} first to see them.
     */
    @Override
    public void close() {
        synchronized (this) {
            if (closed) return;
            closed = true;
        }
        compute.shutdown();
        copy.shutdown();
        try {
            long budget = TimeUnit.NANOSECONDS.convert(timeout), start = System.nanoTime();
            if (!compute.awaitTermination(budget, TimeUnit.NANOSECONDS)) compute.shutdownNow();
            if (!copy.awaitTermination(Math.max(0, budget - (System.nanoTime() - start)), TimeUnit.NANOSECONDS)) copy.shutdownNow();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            compute.shutdownNow();
            copy.shutdownNow();
        }
    }

    @Override
    public String toString() { return "DeviceContext[" + spec + ", issued " + issued() + ", reached " + signal.value() + "]"; }
}

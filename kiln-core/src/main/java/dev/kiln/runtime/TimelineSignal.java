package dev.kiln.runtime;


import java.time.Duration;
import java.util.Objects;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;

/**
 * A device's timeline: a monotonic 64-bit counter, starting at 0, that the device advances as its work
 * completes. Reaching value {@code v} means every piece of work the device issued with a value up to
 * {@code v} has finished, so one number stands for "everything so far" and later work, on any device,
 * waits for it with {@link #waitFor}.
 *
 * <p>When work fails, the signal remembers the first failed value; waits for that value or a later one
 * then throw {@link DeviceExecutionException} at once instead of running into their timeout.
 */
public final class TimelineSignal {
    /** The first failed work on this timeline. */
    record Failure(long value, DeviceExecutionException error, long nanoTime) {}

    private final DeviceSpec device;
    private final ReentrantLock lock = new ReentrantLock();
    private final Condition changed = lock.newCondition();
    private volatile long value;
    private volatile Failure failure; // written under lock

    public TimelineSignal(DeviceSpec device) {
        this.device = Objects.requireNonNull(device, "device");
    }

    /** The device this timeline belongs to. */
    public DeviceSpec device() { return device; }

    /** The value reached so far. */
    public long value() { return value; }

    /**
     * Advances the timeline to {@code v} and wakes the waiters it satisfies. Signalling the current value
     * again is allowed; going backwards is not.
     *
     * @throws IllegalArgumentException if {@code v} is below the current value
     */
    public void signal(long v) {
        lock.lock();
        try {
            if (v < value) {
                throw new IllegalArgumentException("timeline of device " + device + " cannot go backwards: it is at "
                        + value + ", signalled " + v);
            }
            value = v;
            changed.signalAll();
        } finally {
            lock.unlock();
        }
    }

    /**
     * Returns once the timeline has reached {@code v}.
     *
     * @throws TimelineTimeoutException if it does not within {@code timeout} (naming the device and values)
     * @throws DeviceExecutionException if the work with value {@code v} or earlier failed
     * @throws IllegalStateException if the waiting thread is interrupted (its interrupt flag stays set)
     */
    public void waitFor(long v, Duration timeout) {
        await(v, timeout, true);
    }

    /** As {@link #waitFor} but ignoring failures: the work up to {@code v} has finished, one way or another. */
    void awaitFinished(long v, Duration timeout) {
        await(v, timeout, false);
    }

    private void await(long v, Duration timeout, boolean failFast) {
        Objects.requireNonNull(timeout, "timeout");
        if (timeout.isNegative()) throw new IllegalArgumentException("waitFor: timeout must not be negative, got " + timeout);
        if (value >= v && (!failFast || failure == null)) return;
        long left = TimeUnit.NANOSECONDS.convert(timeout); // saturates for huge timeouts
        lock.lock();
        try {
            while (true) {
                Failure f = failure;
                if (failFast && f != null && f.value() <= v) {
                    throw new DeviceExecutionException(device, f.value(), "waiting for device " + device + " to reach timeline value "
                            + v + ": " + f.error().getMessage(), f.error());
                }
                if (value >= v) return;
                if (left <= 0) throw new TimelineTimeoutException(device, v, value, timeout);
                left = changed.awaitNanos(left);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted while waiting for device " + device + " to reach timeline value "
                    + v + " (it reached " + value + ")", e);
        } finally {
            lock.unlock();
        }
    }

    /** Records that the work with value {@code v} failed; the earliest failed value is kept. */
    void fail(long v, DeviceExecutionException error) {
        lock.lock();
        try {
            if (failure == null || v < failure.value()) failure = new Failure(v, error, System.nanoTime());
            changed.signalAll();
        } finally {
            lock.unlock();
        }
    }

    /** The first failure not yet taken, or null. */
    Failure failure() { return failure; }

    /** Takes the failure (so it is reported once), or null if there is none. */
    Failure takeFailure() {
        lock.lock();
        try {
            Failure f = failure;
            failure = null;
            return f;
        } finally {
            lock.unlock();
        }
    }

    @Override
    public String toString() { return "TimelineSignal[" + device + " at " + value + "]"; }
}

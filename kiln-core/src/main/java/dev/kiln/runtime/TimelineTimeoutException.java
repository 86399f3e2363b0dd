package dev.kiln.runtime;


import java.time.Duration;

/** A wait on a device's {@link TimelineSignal} that did not see the awaited value in time. */
public final class TimelineTimeoutException extends RuntimeException {
    private final DeviceSpec device;
    private final long awaited;
    private final long reached;

    public TimelineTimeoutException(DeviceSpec device, long awaited, long reached, Duration timeout) {
        super("timed out after " + timeout.toMillis() + " ms waiting for device " + device + " to reach timeline value "
                + awaited + " (it reached " + reached + ")");
        this.device = device;
        this.awaited = awaited;
        this.reached = reached;
    }

    /** The device whose timeline was awaited. */
    public DeviceSpec device() { return device; }

    /** The value waited for. */
    public long awaited() { return awaited; }

    /** The value the timeline had when the wait gave up. */
    public long reached() { return reached; }
}

package dev.kiln.runtime;


/**
 * Work queued on a device failed: the kernel or copy threw, or a dependency it waited for failed or
 * timed out. The cause is what went wrong; the device and timeline value say which work it was.
 */
public final class DeviceExecutionException extends RuntimeException {
    private final DeviceSpec device;
    private final long value;

    public DeviceExecutionException(DeviceSpec device, long value, String message, Throwable cause) {
        super(message, cause);
        this.device = device;
        this.value = value;
    }

    /** The device the failed work ran on. */
    public DeviceSpec device() { return device; }

    /** The timeline value of the failed work. */
    public long value() { return value; }
}

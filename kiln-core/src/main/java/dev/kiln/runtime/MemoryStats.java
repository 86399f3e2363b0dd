package dev.kiln.runtime;

import java.util.concurrent.atomic.AtomicLong;

/**
 * Off-heap bytes Kiln holds now, over all plans and devices: what tests check returns to its baseline
 * after {@code close()}, and what diagnostics report.
 */
public final class MemoryStats {
    private static final AtomicLong LIVE = new AtomicLong();

    private MemoryStats() {}

    /** Bytes currently allocated and not yet freed. */
    public static long liveBytes() { return LIVE.get(); }

    static void allocated(long bytes) { LIVE.addAndGet(bytes); }

    static void freed(long bytes) { LIVE.addAndGet(-bytes); }
}

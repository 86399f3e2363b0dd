package dev.kiln.runtime;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.Optional;

/**
 * Memory of any device, handled the one way the runtime needs it: allocated, sliced and copied, whether the
 * device keeps its tensors in host memory (CPU, CLANG, INTERP) or in memory of its own ({@link DeviceMemory}).
 */
public final class Transfers {
    private Transfers() {}

    /**
     * Links host memory's allocator ({@link HostMemory}) on a virtual thread, so that the first plan need not: the first
     * native call a JVM links costs tens of milliseconds (5 % of ResNet-50's prepare with a warm kernel cache), and a
     * device is made before its first graph is built. A plan that allocates sooner waits for the link, as it would have
     * made it itself.
     */
    public static void linkHostMemoryInBackground() { Thread.ofVirtual().name("kiln-host-memory-link").start(HostMemory::linked); }

    /** {@code bytes} of {@code device}'s memory, 64-byte aligned and zero-filled, owned by {@code owner}. */
    public static MemorySegment allocate(Device device, Arena owner, long bytes) {
        Optional<DeviceMemory> m = device.deviceMemory();
        if (m.isPresent()) return m.get().allocate(owner, Math.max(bytes, 1));
        try {
            return HostMemory.allocateZeroed(owner, Math.max(bytes, 1), 64);
        } catch (OutOfMemoryError e) {
            // the JVM refused to reserve it (its off-heap limit, or the system): nothing was allocated
            throw MemoryBudget.refused(bytes, bytes + " bytes on " + device.spec(), e);
        }
    }

    /**
     * {@code bytes} of zero-filled host memory aligned to {@code alignment}, owned by {@code owner}. A large block is
     * neither written nor resident until used: the zeros are the operating system's fresh pages.
     *
     * @throws MemoryBudgetException when the memory cannot be had
     */
    public static MemorySegment allocateHost(Arena owner, long bytes, long alignment) {
        try {
            return HostMemory.allocateZeroed(owner, Math.max(bytes, 1), alignment);
        } catch (OutOfMemoryError e) {
            throw MemoryBudget.refused(bytes, bytes + " bytes of host memory", e);
        }
    }

    /** The part {@code [offset, offset + length)} of a block of {@code device}'s memory. */
    public static MemorySegment slice(Device device, MemorySegment block, long offset, long length) {
        Optional<DeviceMemory> m = device.deviceMemory();
        return m.isPresent() ? m.get().at(block, offset) : block.asSlice(offset, length);
    }

    /**
     * Copies {@code bytes} from {@code src} on {@code from} into {@code dst} on {@code to}: directly between host
     * memories, through the device for host and device memory, and staged through host memory between two
     * devices with memory of their own.
     */
    public static void copy(Device from, MemorySegment src, Device to, MemorySegment dst, long bytes) {
        Optional<DeviceMemory> f = from.deviceMemory();
        if (f.isEmpty()) copyFromHost(src, to, dst, bytes);
        else if (to.deviceMemory().isEmpty()) copyToHost(from, src, dst, bytes);
        else if (bytes == 0) return;
        else if (from == to) f.get().copyWithin(src, dst, bytes);
        else {
            try (Arena staging = Arena.ofConfined()) {
                MemorySegment host = staging.allocate(bytes, 64);
                f.get().copyToHost(src, host, bytes);
                copyFromHost(host, to, dst, bytes);
            }
        }
    }

    /** Copies {@code bytes} of {@code from}'s memory into host memory. */
    public static void copyToHost(Device from, MemorySegment src, MemorySegment host, long bytes) {
        if (bytes == 0) return;
        Optional<DeviceMemory> f = from.deviceMemory();
        if (f.isPresent()) f.get().copyToHost(src, host, bytes);
        else MemorySegment.copy(src, 0, host, 0, bytes);
    }

    /** Copies {@code bytes} of host memory into {@code to}'s memory. */
    public static void copyFromHost(MemorySegment host, Device to, MemorySegment dst, long bytes) {
        if (bytes == 0) return;
        Optional<DeviceMemory> t = to.deviceMemory();
        if (t.isPresent()) t.get().copyFromHost(host, dst, bytes);
        else MemorySegment.copy(host, 0, dst, 0, bytes);
    }

    /** Waits for {@code device}'s queued work, if it queues any ({@link DeviceMemory#synchronize()}). */
    public static void synchronize(Device device) { device.deviceMemory().ifPresent(DeviceMemory::synchronize); }
}

package dev.kiln.runtime;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.util.Optional;

/**
 * Zero-filled host memory whose zeros cost nothing until used. {@link Arena#allocate} writes every byte of a block
 * before returning it; a large block from the C library's {@code calloc} comes from fresh pages that the operating
 * system zeroes on first touch, so a block is neither written nor resident until it is used. A language model's KV
 * caches are hundreds of megabytes of which a short conversation touches the first rows: opening a 1B model spent
 * about a second zero-filling them.
 *
 * <p>A block still belongs to its arena: it is freed when the arena closes. Small blocks, and any block when the C
 * library cannot be linked, come from the arena itself.
 */
final class HostMemory {
    private HostMemory() {}

    /** Blocks from this size on come from {@code calloc}: below it the arena's own zeroing is cheap. */
    static final long CALLOC_MIN = 1L << 20;

    private record CLib(MethodHandle calloc, MethodHandle free) {}

    private static final Optional<CLib> C = link();

    private static Optional<CLib> link() {
        if ("false".equals(System.getProperty("kiln.memory.calloc"))) return Optional.empty(); // -Dkiln.memory.calloc=false: the arena zero-fills
        try {
            Linker linker = Linker.nativeLinker();
            var lookup = linker.defaultLookup();
            MethodHandle calloc = linker.downcallHandle(lookup.find("calloc").orElseThrow(),
                    FunctionDescriptor.of(ValueLayout.ADDRESS, ValueLayout.JAVA_LONG, ValueLayout.JAVA_LONG));
            MethodHandle free = linker.downcallHandle(lookup.find("free").orElseThrow(), FunctionDescriptor.ofVoid(ValueLayout.ADDRESS));
            return Optional.of(new CLib(calloc, free));
        } catch (RuntimeException | LinkageError e) {
            // no C library to link (or native access denied): the arena zero-fills, as before
            return Optional.empty();
        }
    }

    /** Whether {@code calloc} is linked (else the arena zero-fills); the first call links it. */
    static boolean linked() { return C.isPresent(); }

    /**
     * {@code bytes} of zeros aligned to {@code alignment} (a power of two), owned by {@code owner}.
     *
     * @throws OutOfMemoryError when the memory cannot be had
     */
    static MemorySegment allocateZeroed(Arena owner, long bytes, long alignment) {
        if (bytes < CALLOC_MIN || C.isEmpty()) return owner.allocate(bytes, alignment);
        CLib c = C.get();
        MemorySegment raw;
        try {
            raw = (MemorySegment) c.calloc().invokeExact(1L, bytes + alignment);
        } catch (Throwable t) {
            throw new IllegalStateException("calloc of " + bytes + " bytes failed", t);
        }
        if (raw.address() == 0) throw new OutOfMemoryError("calloc of " + bytes + " bytes returned NULL");
        long start = (raw.address() + alignment - 1) & -alignment;
        return MemorySegment.ofAddress(start).reinterpret(bytes, owner, s -> free(c, raw));
    }

    private static void free(CLib c, MemorySegment raw) {
        try {
            c.free().invokeExact(raw);
        } catch (Throwable t) {
            throw new IllegalStateException("free failed", t);
        }
    }
}

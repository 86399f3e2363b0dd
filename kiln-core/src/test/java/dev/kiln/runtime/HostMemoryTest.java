package dev.kiln.runtime;

import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** Host blocks from calloc (large) and from the arena (small) are zero, aligned, writable and owned by the arena. */
class HostMemoryTest {
    @Test
    void blocksOfEverySizeAreZeroAlignedAndOwnedByTheirArena() {
        MemorySegment kept;
        try (Arena arena = Arena.ofShared()) {
            for (long bytes : new long[] {1, 4096, HostMemory.CALLOC_MIN - 1, HostMemory.CALLOC_MIN, 3 * HostMemory.CALLOC_MIN + 12}) {
                for (long align : new long[] {8, 64, 4096}) {
                    MemorySegment s = HostMemory.allocateZeroed(arena, bytes, align);
                    assertThat(s.byteSize()).isEqualTo(bytes);
                    assertThat(s.address() % align).as("alignment of %d bytes at %d", bytes, align).isZero();
                    // every page reads zero (the first, one in the middle, the last byte)
                    for (long at = 0; at < bytes; at += 4093) assertThat(s.get(ValueLayout.JAVA_BYTE, at)).isZero();
                    assertThat(s.get(ValueLayout.JAVA_BYTE, bytes - 1)).isZero();
                    s.set(ValueLayout.JAVA_BYTE, bytes - 1, (byte) 7);
                    assertThat(s.get(ValueLayout.JAVA_BYTE, bytes - 1)).isEqualTo((byte) 7);
                    assertThat(s.scope()).isEqualTo(arena.scope());
                }
            }
            kept = HostMemory.allocateZeroed(arena, 2 * HostMemory.CALLOC_MIN, 64);
        }
        assertThatThrownBy(() -> kept.get(ValueLayout.JAVA_BYTE, 0)).isInstanceOf(IllegalStateException.class);
    }

    @Test
    void aLargeBlockIsReleasedWithItsArena() throws java.io.IOException {
        java.nio.file.Path status = java.nio.file.Path.of("/proc/self/status");
        org.junit.jupiter.api.Assumptions.assumeTrue(java.nio.file.Files.isReadable(status), "needs /proc/self/status (Linux) to read the resident size");
        long before = residentKiB(status);
        // 1 GiB written and freed in turn: without the free, all of it would stay resident
        for (int i = 0; i < 16; i++) {
            try (Arena arena = Arena.ofConfined()) {
                HostMemory.allocateZeroed(arena, 64L << 20, 64).fill((byte) (i + 1));
            }
        }
        assertThat(residentKiB(status) - before).as("resident growth in KiB").isLessThan(256 << 10);
    }

    private static long residentKiB(java.nio.file.Path status) throws java.io.IOException {
        for (String line : java.nio.file.Files.readAllLines(status)) {
            if (line.startsWith("VmRSS:")) return Long.parseLong(line.replaceAll("[^0-9]", ""));
        }
        throw new IllegalStateException("no VmRSS in " + status);
    }
}

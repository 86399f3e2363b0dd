package dev.kiln.codegen;

/**
 * What the {@link Heuristics} know of the CPU a kernel will run on.
 *
 * @param cores       hardware threads available to one kernel (THREAD)
 * @param vectorBytes bytes of the preferred SIMD vector, e.g.
 *                    {@code jdk.incubator.vector.FloatVector.SPECIES_PREFERRED.vectorByteSize()}
 *                    (UPCAST and GROUP use {@code vectorBytes / itemSize} lanes)
 * @param stridedLanes the renderer loads every other element into vector lanes itself with two loads and a permute
 *                     (the Java renderer; the C renderer through {@code kiln_every_other_*}); a C compiler left to
 *                     vectorise such loads made a pooling kernel ten times slower
 * @param maskedLanes  the renderer vectorises a reduction grouped with a remainder, so GROUP may leave one: the Java
 *                     renderer masks the last group's lanes; the C renderer runs the whole groups without their gates
 *                     and the last one apart ({@code LastGroupPeeling}), since GCC vectorises no loop whose loads are
 *                     conditional (a global average pool over 13 x 13 grouped with its gated last group inside the
 *                     loop ran 40 % slower than its plain loop); the CUDA renderer does neither
 */
public record CpuInfo(int cores, int vectorBytes, boolean stridedLanes, boolean maskedLanes) {
    public CpuInfo {
        if (cores < 1) throw new IllegalArgumentException("CpuInfo: cores must be at least 1, got " + cores);
        if (vectorBytes < 1) throw new IllegalArgumentException("CpuInfo: vectorBytes must be at least 1, got " + vectorBytes);
    }

    /** A CPU whose renderer leaves strided and masked loads to single lanes. */
    public CpuInfo(int cores, int vectorBytes) { this(cores, vectorBytes, false, false); }

    /** A CPU whose renderer leaves masked loads to single lanes. */
    public CpuInfo(int cores, int vectorBytes, boolean stridedLanes) { this(cores, vectorBytes, stridedLanes, false); }

    /** Vector lanes of elements of {@code itemSize} bytes (at least 1, at most {@link Optimizer#MAX_EXPANSION}). */
    public int lanes(int itemSize) { return Math.clamp(vectorBytes / Math.max(1, itemSize), 1, Optimizer.MAX_EXPANSION); }
}

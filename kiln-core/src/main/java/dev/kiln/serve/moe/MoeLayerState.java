package dev.kiln.serve.moe;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.Arrays;
import java.util.Optional;

/**
 * The runtime state of one mixture-of-experts layer ({@link MixtureOfExperts#layer}) in one execution plan:
 * which experts are resident, the backing store of the others, the residency counters and the top-k
 * capture. Find a plan's states with {@link MoeLayers#of}. Every plan, and every replica of a plan, has
 * its own states; the layer's weights are shared.
 *
 * <p><b>Residency.</b> A resident expert's weights are read in place from the layer's weight buffers. A
 * non-resident expert's weights live in this state's backing store, a heap copy standing for memory off
 * the device: at the first forward after the expert leaves residency they are copied there from the weight
 * buffers (eviction), and in every forward that routes a token to the expert they are copied from there
 * into a staging buffer (a miss) and the expert computes from the staged copy. The weight buffers
 * themselves are never freed: they are the graph's parameters, shared by every replica. Results are
 * bit-identical whatever the mask, since staged and in-place weights hold the same values and the
 * computation does not depend on where they are read from.
 *
 * <p>Thread-safety: the methods lock the state, and a forward holds the lock while it runs, so a mask set
 * during a forward applies to the next one.
 */
public final class MoeLayerState {
    private static final ValueLayout.OfFloat F = ValueLayout.JAVA_FLOAT_UNALIGNED;

    private final MixtureOfExperts.Layer layer;
    private final boolean[] resident;
    private final float[][] backing;      // per non-resident expert once evicted: its matrices, one after another
    private final long[] backingEpoch;    // the layer's weight epoch when backing[e] was copied
    // off the Java heap like the weight buffers it stands in for, so the expert step reads one kind of
    // segment; an automatic arena, since its owner is this state and the state has no close (the GC frees it)
    private MemorySegment staging = MemorySegment.NULL;
    private float[] scratch = new float[0];
    private boolean capture;
    private int[] captured;               // the last forward's top-k indices since the last take
    private long forwards, hits, misses, residentCalls, stagedCalls, bytesStaged;

    MoeLayerState(MixtureOfExperts.Layer layer) {
        this.layer = layer;
        this.resident = new boolean[layer.experts];
        Arrays.fill(resident, true);
        this.backing = new float[layer.experts][];
        this.backingEpoch = new long[layer.experts];
    }

    /** Number of experts. */
    public int numExperts() { return layer.experts; }

    /** Experts each token is routed to. */
    public int topK() { return layer.topK; }

    /** Features of a token (d). */
    public int modelDim() { return layer.d; }

    /** Hidden features of an expert (ff). */
    public int hiddenDim() { return layer.ff; }

    /** Bytes of one expert's weights: what a miss stages. */
    public long expertBytes() { return layer.expertFloats() * 4; }

    /**
     * Sets which experts are resident ({@code mask[e]}); all are, initially. Takes effect at the next forward.
     *
     * @throws IllegalArgumentException if the mask's length is not the number of experts
     */
    public synchronized void setResident(boolean[] mask) {
        if (mask.length != layer.experts) {
            throw new IllegalArgumentException("setResident: mask has " + mask.length + " entries, the layer has " + layer.experts + " experts");
        }
        System.arraycopy(mask, 0, resident, 0, mask.length);
    }

    /** Which experts are resident (a copy). */
    public synchronized boolean[] resident() { return resident.clone(); }

    /**
     * Turns top-k capture on or off. While on, each forward records the router's chosen experts (see
     * {@link #takeTopkCapture()}); turning it off drops what was captured.
     */
    public synchronized void setTopkCapture(boolean enabled) {
        capture = enabled;
        if (!enabled) captured = null;
    }

    /** Whether top-k capture is on. */
    public synchronized boolean topkCapture() { return capture; }

    /**
     * The expert indices the router chose in the last forward since the previous take, tokens x k flattened
     * (token-major, slots in descending router probability), and clears them; empty if no forward ran with
     * capture on since then.
     */
    public synchronized Optional<int[]> takeTopkCapture() {
        int[] c = captured;
        captured = null;
        return Optional.ofNullable(c);
    }

    /** The counters accumulated since the last take, and resets them. */
    public synchronized MoeResidencyStats.Layer takeStats() {
        var s = new MoeResidencyStats.Layer(forwards, hits, misses, residentCalls, stagedCalls, bytesStaged);
        forwards = hits = misses = residentCalls = stagedCalls = bytesStaged = 0;
        return s;
    }

    /**
     * Declares that the layer's expert weights were overwritten (e.g. a parameter was set): every backing
     * store of this layer, in every plan and replica, is refreshed from the weight buffers at its next
     * forward.
     */
    public void weightsChanged() { layer.weightsChanged(); }

    /** Bytes the backing store holds now (evicted experts' weights). */
    public synchronized long backingStoreBytes() {
        long n = 0;
        for (float[] b : backing) if (b != null) n += 4L * b.length;
        return n;
    }

    // ---------------------------------------------------------------- used by a forward, under the lock

    /**
     * The mask for this forward, after bringing the backing store in line with it: experts now
     * non-resident are evicted into it (or refreshed if the weights changed), resident ones dropped from it.
     */
    boolean[] residentForForward(MemorySegment[] weights) {
        long epoch = layer.weightEpoch();
        long matrixFloats = (long) layer.ff * layer.d;
        for (int e = 0; e < layer.experts; e++) {
            if (resident[e]) {
                backing[e] = null;
            } else if (backing[e] == null || backingEpoch[e] != epoch) {
                float[] b = new float[Math.toIntExact(layer.expertFloats())];
                for (int m = 0; m < weights.length; m++) {
                    MemorySegment.copy(weights[m], F, e * matrixFloats * 4, b, Math.toIntExact(m * matrixFloats), Math.toIntExact(matrixFloats));
                }
                backing[e] = b;
                backingEpoch[e] = epoch;
            }
        }
        return resident.clone();
    }

    /** Makes the staging buffer hold {@code slots} experts' weights. */
    void reserveStaging(int slots) {
        long bytes = slots * layer.expertFloats() * 4;
        if (staging.byteSize() < bytes) staging = Arena.ofAuto().allocate(bytes, 64);
    }

    /** Copies non-resident expert {@code e}'s weights into staging slot {@code slot} and returns the staged copy. */
    MixtureOfExperts.ExpertWeights stage(int e, int slot) {
        long at = 4L * slot * layer.expertFloats();
        MemorySegment.copy(backing[e], 0, staging, F, at, backing[e].length);
        int matrices = layer.matrices();
        MemorySegment[] segments = new MemorySegment[matrices];
        long[] offsets = new long[matrices];
        for (int m = 0; m < matrices; m++) {
            segments[m] = staging;
            offsets[m] = at + 4L * m * layer.ff * layer.d;
        }
        return new MixtureOfExperts.ExpertWeights(segments, offsets);
    }

    /** A reusable scratch array of at least {@code n} floats. */
    float[] scratch(long n) {
        if (scratch.length < n) scratch = new float[Math.toIntExact(n)];
        return scratch;
    }

    void record(int[] idx, long hits, long misses, long residentCalls, long stagedCalls, long bytesStaged) {
        forwards++;
        this.hits += hits;
        this.misses += misses;
        this.residentCalls += residentCalls;
        this.stagedCalls += stagedCalls;
        this.bytesStaged += bytesStaged;
        if (capture) captured = idx.clone();
    }
}

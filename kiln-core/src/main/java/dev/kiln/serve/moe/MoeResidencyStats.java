package dev.kiln.serve.moe;

import java.util.List;

/**
 * Expert residency accounting of a graph's mixture-of-experts layers since the counters were last taken
 * ({@link MoeLayers#takeResidencyStats}), one entry per layer in graph order.
 *
 * <p>A <em>hit</em> is one (token, top-k slot) routed to a resident expert, whose weights are read in
 * place; a <em>miss</em> is one routed to a non-resident expert, whose weights had to be staged from the
 * backing store. So per layer and forward {@code hits + misses = tokens * k}. An expert computes once per
 * forward for all the tokens routed to it: {@code residentExpertCalls} and {@code stagedExpertCalls}
 * count those computations, and each staged call copies the expert's weights once
 * ({@code bytesStaged}).
 *
 * @param layers per MoE layer, in graph order
 */
public record MoeResidencyStats(List<Layer> layers) {
    public MoeResidencyStats {
        layers = List.copyOf(layers);
    }

    /**
     * One layer's counters.
     *
     * @param forwards forward passes counted
     * @param hits (token, slot) assignments to resident experts
     * @param misses (token, slot) assignments to non-resident experts
     * @param residentExpertCalls expert computations reading resident weights in place
     * @param stagedExpertCalls expert computations whose weights were staged first
     * @param bytesStaged bytes copied from the backing store into the staging buffer
     */
    public record Layer(long forwards, long hits, long misses, long residentExpertCalls, long stagedExpertCalls, long bytesStaged) {}

    /** Hits of all layers. */
    public long hits() { return layers.stream().mapToLong(Layer::hits).sum(); }

    /** Misses of all layers. */
    public long misses() { return layers.stream().mapToLong(Layer::misses).sum(); }

    /** Expert computations on resident weights, all layers. */
    public long residentExpertCalls() { return layers.stream().mapToLong(Layer::residentExpertCalls).sum(); }

    /** Expert computations on staged weights, all layers. */
    public long stagedExpertCalls() { return layers.stream().mapToLong(Layer::stagedExpertCalls).sum(); }

    /** Bytes staged, all layers. */
    public long bytesStaged() { return layers.stream().mapToLong(Layer::bytesStaged).sum(); }
}

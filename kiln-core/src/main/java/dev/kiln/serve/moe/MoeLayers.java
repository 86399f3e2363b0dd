package dev.kiln.serve.moe;

import dev.kiln.runtime.ExecutionPlan;
import dev.kiln.runtime.PreparedCustomFunction;
import dev.kiln.runtime.PreparedOp;

import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/**
 * The mixture-of-experts layers of an execution plan and the plan-wide operations on them, one call per
 * operation of a serving graph: residency masks (merged or per layer), top-k capture and residency stats.
 *
 * <p>The states belong to the plan ({@link ExecutionPlan#customState}), so a replica made from a plan
 * starts with fresh states (all experts resident, no capture, zero counters) while sharing the weights;
 * set the masks of each replica that should have them.
 */
public final class MoeLayers {
    private MoeLayers() {}

    /** The plan's MoE layer states, in graph (schedule) order; empty if it has none. */
    public static List<MoeLayerState> of(ExecutionPlan plan) {
        List<MoeLayerState> out = new ArrayList<>();
        List<PreparedOp> ops = plan.preparedOps();
        for (int i = 0; i < ops.size(); i++) {
            if (ops.get(i) instanceof PreparedCustomFunction f && f.function().body() instanceof MixtureOfExperts.Layer) {
                out.add((MoeLayerState) plan.customState(i));
            }
        }
        return out;
    }

    /**
     * Sets one residency mask on every layer (a placement merged across layers).
     *
     * @throws IllegalArgumentException if the plan has no MoE layer, or the mask's length differs from a
     *         layer's number of experts (nothing is changed then)
     */
    public static void setResidentExperts(ExecutionPlan plan, boolean[] mask) {
        List<MoeLayerState> layers = of(plan);
        if (layers.isEmpty()) {
            throw new IllegalArgumentException("setMoeResidentExperts: the graph has no mixture-of-experts layer to apply a mask of "
                    + mask.length + " experts to");
        }
        for (int l = 0; l < layers.size(); l++) {
            if (layers.get(l).numExperts() != mask.length) {
                throw new IllegalArgumentException("setMoeResidentExperts: mask has " + mask.length + " entries, MoE layer " + l
                        + " has " + layers.get(l).numExperts() + " experts");
            }
        }
        for (MoeLayerState s : layers) s.setResident(mask);
    }

    /**
     * Sets each layer's residency mask: {@code masks[layer][expert]}, layers in graph order.
     *
     * @throws IllegalArgumentException if the number of masks differs from the number of layers, or a
     *         mask's length from its layer's number of experts (nothing is changed then)
     */
    public static void setResidentExpertsPerLayer(ExecutionPlan plan, boolean[][] masks) {
        List<MoeLayerState> layers = of(plan);
        if (masks.length != layers.size()) {
            throw new IllegalArgumentException("setMoeResidentExpertsPerLayer: " + masks.length + " masks given, the graph has "
                    + layers.size() + " MoE layers");
        }
        for (int l = 0; l < layers.size(); l++) {
            if (masks[l].length != layers.get(l).numExperts()) {
                throw new IllegalArgumentException("setMoeResidentExpertsPerLayer: mask " + l + " has " + masks[l].length
                        + " entries, MoE layer " + l + " has " + layers.get(l).numExperts() + " experts");
            }
        }
        for (int l = 0; l < layers.size(); l++) layers.get(l).setResident(masks[l]);
    }

    /**
     * Turns top-k capture on for every layer: each later forward records the router's chosen experts.
     *
     * @param numExperts the number of experts the caller expects each layer to have
     * @return false if the plan has no MoE layer (there is nothing to capture)
     * @throws IllegalArgumentException if a layer has a different number of experts
     */
    public static boolean enableTopkCapture(ExecutionPlan plan, int numExperts) {
        List<MoeLayerState> layers = of(plan);
        for (int l = 0; l < layers.size(); l++) {
            if (layers.get(l).numExperts() != numExperts) {
                throw new IllegalArgumentException("enableMoeTopkCapture: expected " + numExperts + " experts, MoE layer " + l
                        + " has " + layers.get(l).numExperts());
            }
        }
        for (MoeLayerState s : layers) s.setTopkCapture(true);
        return !layers.isEmpty();
    }

    /**
     * The experts the router chose in the last captured forward, one array per layer in graph order (tokens
     * x k flattened, see {@link MoeLayerState#takeTopkCapture()}), and clears them; empty if nothing was
     * captured since the last take. A layer that captured nothing gives an empty array.
     */
    public static Optional<List<int[]>> takeTopkCapture(ExecutionPlan plan) {
        List<int[]> out = new ArrayList<>();
        boolean any = false;
        for (MoeLayerState s : of(plan)) {
            Optional<int[]> c = s.takeTopkCapture();
            any |= c.isPresent();
            out.add(c.orElse(new int[0]));
        }
        return any ? Optional.of(List.copyOf(out)) : Optional.empty();
    }

    /**
     * Declares that the plan's parameters were overwritten in place (as setting a parameter does): the
     * backing store of every layer, in this plan and in every plan and replica sharing its layers, is
     * refreshed from the weight buffers at its next forward. Without it, non-resident experts would keep
     * computing with the weights they were evicted with.
     */
    public static void weightsChanged(ExecutionPlan plan) {
        for (MoeLayerState s : of(plan)) s.weightsChanged();
    }

    /**
     * The residency counters of every layer since the last take, and resets them; empty if the plan has no
     * MoE layer.
     */
    public static Optional<MoeResidencyStats> takeResidencyStats(ExecutionPlan plan) {
        List<MoeLayerState> layers = of(plan);
        if (layers.isEmpty()) return Optional.empty();
        return Optional.of(new MoeResidencyStats(layers.stream().map(MoeLayerState::takeStats).toList()));
    }
}

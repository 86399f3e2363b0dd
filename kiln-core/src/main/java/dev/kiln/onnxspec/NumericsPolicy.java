package dev.kiln.onnxspec;

import dev.kiln.codegen.ReductionOrder;

/** The process's numerics policy (docs/ARCHITECTURE.md), as the ONNX importer needs it. */
public final class NumericsPolicy {
    private NumericsPolicy() {}

    /**
     * Whether float reductions may be reassociated (the default, {@code kiln.reductions=fast}): then an importer
     * may also fold constant per-channel factors into a contraction's weights, which rounds like a reordered sum.
     */
    public static boolean mayReorderReductions() { return ReductionOrder.current().mayReorder(); }
}

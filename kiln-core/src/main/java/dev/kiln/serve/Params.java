package dev.kiln.serve;

import dev.kiln.runtime.ExecutionPlan;
import dev.kiln.serve.moe.MoeLayers;
import dev.kiln.types.DType;

import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;

/**
 * Writes the parameters of a compiled graph, which live in the arena its replicas share (so a replica
 * may not write them), and tracks which have been set: a graph runs only once all are.
 */
final class Params {
    private final SharedGraphState shared;
    private final boolean replica;
    private final ExecutionPlan plan;

    Params(SharedGraphState shared, boolean replica, ExecutionPlan plan) {
        this.shared = shared;
        this.replica = replica;
        this.plan = plan;
    }

    void set(String name, float[] values) {
        int p = paramToSet(name, "setParam");
        TensorSpec s = shared.params.get(p);
        InputChecks.checkLength("setParam", "param", s, values.length);
        DTypeCodec.writeFloats(values, shared.paramSegments[p], s.dtype());
        markSet(p);
    }

    void set(String name, MemorySegment bytes) {
        int p = paramToSet(name, "setParam");
        TensorSpec s = shared.params.get(p);
        if (bytes.byteSize() != s.byteSize()) {
            throw new IllegalArgumentException("setParam: param '" + name + "' (" + s.dtype() + s.shape() + ") expects " + s.byteSize()
                    + " bytes, got " + bytes.byteSize());
        }
        MemorySegment.copy(bytes, 0, shared.paramSegments[p], 0, s.byteSize());
        markSet(p);
    }

    void setTyped(String name, MemorySegment bytes, DType dtype) {
        int p = paramToSet(name, "setParamTyped");
        TensorSpec s = shared.params.get(p);
        if (dtype.isPacked()) {
            shared.capabilities.require(Capability.PACKED_WEIGHTS, "setParamTyped(" + dtype + ")");
            if (!s.dtype().isFloat()) {
                throw new IllegalArgumentException("setParamTyped: param '" + name + "' is " + s.dtype() + "; packed " + dtype
                        + " weights dequantise into a float param only");
            }
        } else if (dtype != s.dtype()) {
            throw new IllegalArgumentException("setParamTyped: param '" + name + "' is " + s.dtype() + ", given " + dtype
                    + " bytes (give its own dtype, or packed q8_0/q4_0 for a float param)");
        }
        InputChecks.checkTypedBytes("setParamTyped", "param", s, dtype, bytes.byteSize());
        DTypeCodec.typedToBuffer(bytes, dtype, shared.paramSegments[p], s.dtype(), s.numel());
        markSet(p);
    }

    private int paramToSet(String name, String op) {
        Integer p = shared.paramIndex.get(name);
        if (p == null) {
            String hint = shared.inputIndex.containsKey(name) ? " ('" + name + "' is an input: feed it to run)" : "";
            throw new IllegalArgumentException(op + ": unknown param '" + name + "'" + hint + "; params are " + shared.params);
        }
        if (replica) {
            throw new IllegalStateException(op + ": param '" + name + "' is shared read-only with the graph this replica was copied from; set it there");
        }
        return p;
    }

    private void markSet(int p) {
        MoeLayers.weightsChanged(plan); // staged copies of non-resident experts are stale now
        synchronized (shared) {
            if (!shared.paramSet[p]) {
                shared.paramSet[p] = true;
                shared.unsetParams--;
            }
        }
    }

    /** Fails unless every param has been set. */
    void checkAllSet(String op) {
        if (shared.unsetParams == 0) return;
        List<String> unset = new ArrayList<>();
        synchronized (shared) {
            for (int i = 0; i < shared.paramSet.length; i++) if (!shared.paramSet[i]) unset.add(shared.params.get(i).name());
        }
        if (!unset.isEmpty()) throw new IllegalStateException(op + ": params never set: " + unset + " (setParam before running)");
    }
}

package dev.kiln.serve;

import dev.kiln.types.DType;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;

/** The checks of the inputs a run is given: known names, not bound to a handle, every fed input present, sizes and byte counts. */
final class InputChecks {
    private final SharedGraphState shared;
    private final Handles handles;

    InputChecks(SharedGraphState shared, Handles handles) {
        this.shared = shared;
        this.handles = handles;
    }

    TensorSpec inputToFeed(String op, String name) {
        Integer i = shared.inputIndex.get(name);
        if (i == null) {
            String hint = shared.paramIndex.containsKey(name) ? " ('" + name + "' is a param: set it with setParam)" : "";
            throw new IllegalArgumentException(op + ": unknown input '" + name + "'" + hint + "; inputs are " + shared.inputs);
        }
        if (handles.isBound(i)) {
            throw new IllegalArgumentException(op + ": input '" + name + "' is bound to a handle; the run reads the handle, so do not give it");
        }
        return shared.inputs.get(i);
    }

    void checkFloatInputs(String op, Map<String, float[]> in) {
        for (var e : in.entrySet()) {
            TensorSpec s = inputToFeed(op, e.getKey());
            if (e.getValue() == null) throw new IllegalArgumentException(op + ": input '" + s.name() + "' has no values");
            checkLength(op, "input", s, e.getValue().length);
        }
        checkAllGiven(op, in.keySet());
    }

    void checkAllGiven(String op, Set<String> given) {
        int n = shared.inputs.size();
        if (given.size() == n - handles.count()) return; // every key was checked to be a distinct fed input
        List<String> missing = new ArrayList<>();
        for (int i = 0; i < n; i++) if (!handles.isBound(i) && !given.contains(shared.inputs.get(i).name())) missing.add(shared.inputs.get(i).toString());
        throw new IllegalArgumentException(op + ": missing inputs " + missing + "; every input not bound to a handle must be given");
    }

    /** The positional inputs of {@code runSlots}: one per input in declaration order, null exactly for the handles. */
    void checkSlotInputs(float[][] in) {
        int n = shared.inputs.size();
        if (in.length != n) {
            throw new IllegalArgumentException("runSlots: expects " + n + " inputs in declaration order " + shared.inputs
                    + " (null for a handle), got " + in.length);
        }
        for (int i = 0; i < in.length; i++) {
            TensorSpec s = shared.inputs.get(i);
            if (handles.isBound(i)) {
                if (in[i] != null) throw new IllegalArgumentException("runSlots: input " + i + " '" + s.name() + "' is bound to a handle; pass null");
            } else if (in[i] == null) {
                throw new IllegalArgumentException("runSlots: input " + i + " '" + s.name() + "' (" + s.dtype() + s.shape() + ") is null");
            } else if (in[i].length != s.numel()) {
                checkLength("runSlots", "input", s, in[i].length);
            }
        }
    }

    /** The typed inputs of {@code runTyped}: each in its input's own dtype, of the right byte count. */
    void checkTypedInputs(Map<String, TypedValues> in) {
        for (var e : in.entrySet()) {
            TensorSpec s = inputToFeed("runTyped", e.getKey());
            TypedValues v = e.getValue();
            if (v == null) throw new IllegalArgumentException("runTyped: input '" + s.name() + "' has no values");
            if (v.dtype() != s.dtype()) {
                throw new IllegalArgumentException("runTyped: input '" + s.name() + "' is " + s.dtype() + ", given " + v.dtype() + " values");
            }
            checkTypedBytes("runTyped", "input", s, v.dtype(), v.bytes().length);
        }
        checkAllGiven("runTyped", in.keySet());
    }

    static void checkLength(String op, String what, TensorSpec s, long given) {
        if (given != s.numel()) {
            throw new IllegalArgumentException(op + ": " + what + " '" + s.name() + "' (" + s.dtype() + s.shape() + ") expects " + s.numel()
                    + " values, got " + given);
        }
    }

    static void checkTypedBytes(String op, String what, TensorSpec s, DType given, long bytes) {
        if (given.isPacked() && s.numel() % DType.QUANT_BLOCK != 0) {
            throw new IllegalArgumentException(op + ": " + what + " '" + s.name() + "' (" + s.dtype() + s.shape() + ") has " + s.numel()
                    + " values, not a whole number of " + given + " blocks of " + DType.QUANT_BLOCK);
        }
        long expected = given.byteSize(s.numel());
        if (bytes != expected) {
            throw new IllegalArgumentException(op + ": " + what + " '" + s.name() + "' (" + s.dtype() + s.shape() + ") expects " + expected + " bytes of "
                    + given + " (" + s.numel() + " values), got " + bytes);
        }
    }
}

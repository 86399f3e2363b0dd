package dev.kiln.onnx;

import dev.kiln.Tensor;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * What a scanned or looped body reads of the enclosing graph: constants stay constants in it; the other values (by name)
 * become the scan's or loop's constants, which it reads through the step's arguments. A sequence of tensors of one shape
 * ({@link #stackable}) is one of them too, as its elements stacked ({@code sequences}: their names): the body reads it as the
 * sequence of that constant's rows.
 */
record OuterReads(Map<String, Tensor> constants, List<String> names, List<Tensor> values, java.util.Set<String> sequences) {
    static OuterReads of(OnnxGraph body, GraphBuilder outer, OpContext c) {
        OuterReads r = new OuterReads(new HashMap<>(), new ArrayList<>(), new ArrayList<>(), new java.util.HashSet<>());
        for (String name : body.outerReads()) {
            Tensor rows = stackable(outer.hostValue(name));
            if (rows != null) {
                r.names.add(name);
                r.values.add(rows.to(c.device));
                r.sequences.add(name);
            } else if (outer.isConstant(name)) r.constants.put(name, outer.outerValue(name, c.device));
            else {
                r.names.add(name);
                r.values.add(outer.outerValue(name, c.device));
            }
        }
        return r;
    }

    /**
     * The elements of sequence {@code v} stacked along a new first axis, where it is a sequence of one or more tensors of one
     * shape (a loop's list, its rows as they are); else null (a tensor, an optional, an empty or a ragged sequence).
     */
    static Tensor stackable(OnnxValue v) {
        if (!(v instanceof OnnxValue.SequenceValue s) || s.elements().isEmpty()) return null;
        if (s.rows() != null) return s.rows();
        Tensor first = s.elements().getFirst();
        if (first.shape().isSymbolic() || s.elements().stream().anyMatch(t -> !t.shape().equals(first.shape()))) return null;
        return Tensor.stack(0, s.elements().toArray(Tensor[]::new));
    }
}

package dev.kiln.onnx;

import dev.kiln.Tensor;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * What a scanned or looped body reads of the enclosing graph: constants stay constants in it; the other values (by name)
 * become the scan's or loop's constants, which it reads through the step's arguments.
 */
record OuterReads(Map<String, Tensor> constants, List<String> names, List<Tensor> values) {
    static OuterReads of(OnnxGraph body, GraphBuilder outer, OpContext c) {
        OuterReads r = new OuterReads(new HashMap<>(), new ArrayList<>(), new ArrayList<>());
        for (String name : body.outerReads()) {
            if (outer.isConstant(name)) r.constants.put(name, outer.outerValue(name, c.device));
            else {
                r.names.add(name);
                r.values.add(outer.outerValue(name, c.device));
            }
        }
        return r;
    }
}

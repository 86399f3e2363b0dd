package dev.kiln.onnx;

import dev.kiln.Tensor;

import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * The catalogue of supported ai.onnx operators: each maps one node onto Tensor operations. Operator families
 * register themselves from their own classes ({@link ElementwiseOps}, {@link ShapeOps}, {@link ReduceOps},
 * {@link NnOps}, {@link QuantOps}, {@link RnnOps}, {@link SignalOps}, {@link DataDependentOps}, {@link ControlFlowOps}). Versions: an implementation reads {@link OpContext#opset} where an operator changed
 * between opsets (attributes that became inputs, new defaults); {@code since} is the first opset whose version
 * of the operator it implements.
 */
final class OnnxOps {
    private OnnxOps() {}

    /** Maps one node to its output tensors (in the node's output order; null for an output it cannot give). */
    @FunctionalInterface
    interface Impl {
        List<Tensor> apply(OpContext c);
    }

    /** A static check of a node's attributes before anything runs: the reason it is unsupported, or null. */
    @FunctionalInterface
    interface Check {
        String unsupported(Node n, long opset);
    }

    /** How the builder may fold a node whose inputs are constants. */
    enum Kind {
        /** Folded when all its inputs are small constants. */
        NORMAL,
        /** Reads only its inputs' shapes (static), so it is always folded. */
        SHAPE_ONLY,
        /** Never folded (random numbers). */
        NO_FOLD
    }

    record Spec(String opType, int since, Kind kind, Impl impl, Check check) {}

    private static final Map<String, Spec> OPS = new TreeMap<>();

    static {
        ElementwiseOps.register();
        ShapeOps.register();
        ReduceOps.register();
        NnOps.register();
        QuantOps.register();
        RnnOps.register();
        SignalOps.register();
        DataDependentOps.register();
        ControlFlowOps.register();
    }

    static void add(String opType, int since, Kind kind, Impl impl, Check check) {
        if (OPS.put(opType, new Spec(opType, since, kind, impl, check)) != null) throw new IllegalStateException("operator " + opType + " registered twice");
    }

    static void add(String opType, int since, Impl impl) { add(opType, since, Kind.NORMAL, impl, null); }

    static void add(String opType, int since, Impl impl, Check check) { add(opType, since, Kind.NORMAL, impl, check); }

    /** One output. */
    static List<Tensor> one(Tensor t) { return List.of(t); }

    /** The supported operator types, sorted. */
    static java.util.Set<String> supported() { return Collections.unmodifiableSet(OPS.keySet()); }

    /**
     * Checks that a node's operator is supported at the model's opset for its domain.
     *
     * @throws UnsupportedOnnxOpException naming the operator, domain, opset and node otherwise
     */
    static void check(Node n, long opset) {
        if (!n.domain().isEmpty() && !n.domain().equals("ai.onnx")) {
            throw new UnsupportedOnnxOpException(n.opType(), n.domainName(), opset, n.label(), "only the ai.onnx domain is supported");
        }
        Spec s = OPS.get(n.opType());
        if (s == null) throw new UnsupportedOnnxOpException(n.opType(), n.domainName(), opset, n.label(), "Kiln has no implementation of this operator");
        if (opset < s.since()) {
            throw new UnsupportedOnnxOpException(n.opType(), n.domainName(), opset, n.label(),
                    "Kiln implements this operator from opset " + s.since() + " on");
        }
        String reason = s.check() == null ? null : s.check().unsupported(n, opset);
        if (reason != null) throw new UnsupportedOnnxOpException(n.opType(), n.domainName(), opset, n.label(), reason);
    }

    static Spec spec(Node n) { return OPS.get(n.opType()); }
}

package dev.kiln.onnx;

import dev.kiln.Tensor;

import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * The catalogue of supported operators, by domain (ai.onnx, and ai.onnx.preview.training for the optimizers of
 * {@link TrainingOps}): each maps one node onto Tensor operations. Operator families register themselves from their
 * own classes ({@link ElementwiseOps}, {@link ShapeOps}, {@link ReduceOps}, {@link NnOps}, {@link QuantOps},
 * {@link RnnOps}, {@link SignalOps}, {@link DataDependentOps}, {@link ControlFlowOps}, {@link RandomOnnxOps},
 * {@link TrainingOps}). Versions: an implementation reads {@link OpContext#opset} where an operator changed
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

    /** Maps one node of a {@link Kind#HOST} operator to its outputs: tensors, sequences or optionals (null for one it cannot give). */
    @FunctionalInterface
    interface HostImpl {
        List<OnnxValue> apply(OpContext c);
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
        NO_FOLD,
        /** Takes or gives sequences or optionals ({@link HostImpl}); never folded. */
        HOST,
        /**
         * A {@link #HOST} operator whose tensor outputs depend only on what is known of its sequences and optionals when the
         * graph is built (a length, whether an optional holds a value): they are constants, so a Loop's trip count or an
         * If's condition computed from them is known too.
         */
        HOST_STRUCTURE
    }

    /** An operator: {@code impl} for tensor operators, {@code host} for {@link Kind#HOST} ones. */
    record Spec(String opType, int since, Kind kind, Impl impl, HostImpl host, Check check) {}

    /** The default domain, as {@link Node#domainName} names it. */
    static final String AI_ONNX = "ai.onnx";
    /** The domain of ONNX's training operators (optimizers), opset 1. */
    static final String TRAINING = "ai.onnx.preview.training";

    /** Domain (as {@link Node#domainName} names it) to operator type to implementation. */
    private static final Map<String, Map<String, Spec>> OPS = new TreeMap<>();

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
        SequenceOps.register();
        OptionalOps.register();
        RandomOnnxOps.register();
        TrainingOps.register();
        StringOps.register();
    }

    static void add(String domain, String opType, int since, Kind kind, Impl impl, Check check) {
        if (OPS.computeIfAbsent(domain, d -> new TreeMap<>()).put(opType, new Spec(opType, since, kind, impl, null, check)) != null) {
            throw new IllegalStateException("operator " + opType + " of " + domain + " registered twice");
        }
    }

    /** A {@link Kind#HOST} operator of ai.onnx. */
    static void addHost(String opType, int since, HostImpl host, Check check) { addHost(opType, since, Kind.HOST, host, check); }

    /** A {@link Kind#HOST} or {@link Kind#HOST_STRUCTURE} operator of ai.onnx. */
    static void addHost(String opType, int since, Kind kind, HostImpl host, Check check) {
        if (OPS.computeIfAbsent(AI_ONNX, d -> new TreeMap<>()).put(opType, new Spec(opType, since, kind, null, host, check)) != null) {
            throw new IllegalStateException("operator " + opType + " registered twice");
        }
    }

    static void add(String opType, int since, Kind kind, Impl impl, Check check) { add(AI_ONNX, opType, since, kind, impl, check); }

    static void add(String opType, int since, Impl impl) { add(opType, since, Kind.NORMAL, impl, null); }

    static void add(String opType, int since, Impl impl, Check check) { add(opType, since, Kind.NORMAL, impl, check); }

    /** One output. */
    static List<Tensor> one(Tensor t) { return List.of(t); }

    /** The supported operator types of the ai.onnx domain, sorted. */
    static java.util.Set<String> supported() { return supported(AI_ONNX); }

    /** The supported operator types of {@code domain} (none for a domain Kiln does not implement), sorted. */
    static java.util.Set<String> supported(String domain) { return Collections.unmodifiableSet(OPS.getOrDefault(domain, Map.of()).keySet()); }

    /**
     * Checks that a node's operator is supported at the model's opset for its domain.
     *
     * @throws UnsupportedOnnxOpException naming the operator, domain, opset and node otherwise
     */
    static void check(Node n, long opset) {
        Map<String, Spec> ops = OPS.get(n.domainName());
        if (ops == null) {
            throw new UnsupportedOnnxOpException(n.opType(), n.domainName(), opset, n.label(), "only the domains " + OPS.keySet() + " are supported");
        }
        Spec s = ops.get(n.opType());
        if (s == null) throw new UnsupportedOnnxOpException(n.opType(), n.domainName(), opset, n.label(), "Kiln has no implementation of this operator");
        if (opset < s.since()) {
            throw new UnsupportedOnnxOpException(n.opType(), n.domainName(), opset, n.label(),
                    "Kiln implements this operator from opset " + s.since() + " on");
        }
        String reason = s.check() == null ? null : s.check().unsupported(n, opset);
        if (reason != null) throw new UnsupportedOnnxOpException(n.opType(), n.domainName(), opset, n.label(), reason);
    }

    static Spec spec(Node n) { return OPS.get(n.domainName()).get(n.opType()); }
}

package dev.kiln.onnx;

import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * Checks a graph's structure before anything is built from it, so that a malformed model fails with one
 * {@link OnnxFormatException} naming the node, its operator and the value instead of a raw exception (or, worse,
 * a silently wrong answer) from deep inside an operator:
 * <ul>
 *   <li>every value is defined once: no two initializers, graph inputs or node outputs share a name, and no node
 *       output overwrites a graph input or an initializer (ONNX's static single assignment; without the check the
 *       last definition would silently win);</li>
 *   <li>every node input is empty (an omitted optional input) or names a graph input, an initializer or an
 *       earlier node's output;</li>
 *   <li>every node lists as many inputs as its operator takes ({@link #ARITY}): the required ones present and
 *       non-empty, no more than the operator has;</li>
 *   <li>every node has the attributes its operator requires ({@link #REQUIRED});</li>
 *   <li>every graph output is defined.</li>
 * </ul>
 * Checks that need shapes (ranks, attribute lengths per spatial axis, constant indices) run when the operator is
 * built, through {@link OpContext}.
 */
final class GraphValidator {
    private GraphValidator() {}

    /** How many inputs an operator takes from opset {@code since} on: {@code min} required (leading), {@code max} in all. */
    record Arity(int since, int min, int max) {}

    /**
     * Input counts of the operators whose implementations read required inputs by position. Keyed by operator,
     * newest version first; operators not listed are checked by their implementations ({@link OpContext#in}).
     */
    static final Map<String, List<Arity>> ARITY = new HashMap<>();

    /** An attribute ONNX requires of an operator in opsets {@code since} to {@code until}. */
    record Required(int since, int until, List<String> names) {}

    /** Attributes the operators' implementations read without a default. */
    static final Map<String, List<Required>> REQUIRED = new HashMap<>();

    private static void arity(String op, Arity... byOpset) { ARITY.put(op, List.of(byOpset)); }

    private static Arity from(int since, int min, int max) { return new Arity(since, min, max); }

    static {
        arity("Reshape", from(5, 2, 2), from(1, 1, 1));
        arity("Pad", from(11, 2, 3), from(1, 1, 1));
        arity("TopK", from(10, 2, 2), from(1, 1, 1));
        arity("Slice", from(10, 3, 5), from(1, 1, 1));
        arity("Upsample", from(9, 2, 2), from(1, 1, 1));
        arity("Resize", from(11, 1, 4), from(10, 2, 2));
        // C is required before opset 11, but exporters of old opsets omit it too and it is harmless to accept
        arity("Gemm", from(1, 2, 3));
        arity("MatMul", from(1, 2, 2));
        arity("Conv", from(1, 2, 3));
        arity("ConvTranspose", from(1, 2, 3));
        arity("MaxPool", from(1, 1, 1));
        arity("AveragePool", from(1, 1, 1));
        arity("MaxUnpool", from(9, 2, 3));
        arity("Gather", from(1, 2, 2));
        arity("GatherElements", from(1, 2, 2));
        arity("GatherND", from(1, 2, 2));
        arity("Scatter", from(1, 3, 3));
        arity("ScatterElements", from(1, 3, 3));
        arity("ScatterND", from(1, 3, 3));
        arity("Expand", from(1, 2, 2));
        arity("Tile", from(6, 2, 2));
        arity("Range", from(1, 3, 3));
        arity("OneHot", from(1, 3, 3));
        arity("CumSum", from(1, 2, 2));
        arity("Unsqueeze", from(13, 2, 2), from(1, 1, 1));
        arity("Squeeze", from(13, 1, 2), from(1, 1, 1));
        arity("ConstantOfShape", from(1, 1, 1));
        arity("Transpose", from(1, 1, 1));
        arity("Flatten", from(1, 1, 1));
        arity("Where", from(1, 3, 3));
        arity("BatchNormalization", from(1, 5, 5));
        arity("InstanceNormalization", from(1, 3, 3));
        arity("LayerNormalization", from(1, 2, 3));
        arity("Add", from(1, 2, 2));
        arity("Sub", from(1, 2, 2));
        arity("Mul", from(1, 2, 2));
        arity("Div", from(1, 2, 2));
        arity("Relu", from(1, 1, 1));
        arity("Einsum", from(1, 1, Integer.MAX_VALUE));
        // min and max became inputs at opset 11; a fourth input would be dropped without a word
        arity("Clip", from(11, 1, 3), from(1, 1, 1));
        arity("Concat", from(1, 1, Integer.MAX_VALUE));
        arity("TfIdfVectorizer", from(1, 1, 1));

        required("Cast", 1, 99, "to");
        // before opset 4 Concat's axis defaulted to 1; since then it is required, and a default would join the wrong axis
        required("Concat", 4, 99, "axis");
        required("TfIdfVectorizer", 1, 99, "mode", "min_gram_length", "max_gram_length", "ngram_counts", "ngram_indexes");
        required("MaxPool", 1, 99, "kernel_shape");
        required("AveragePool", 1, 99, "kernel_shape");
        required("LpPool", 1, 99, "kernel_shape");
        required("MaxUnpool", 1, 99, "kernel_shape");
        required("DepthToSpace", 1, 99, "blocksize");
        required("SpaceToDepth", 1, 99, "blocksize");
        required("LRN", 1, 99, "size");
        required("Einsum", 1, 99, "equation");
        required("Unsqueeze", 1, 12, "axes");
        required("Slice", 1, 9, "starts", "ends");
        required("Pad", 2, 10, "pads");
        required("Upsample", 7, 8, "scales");
    }

    private static void required(String op, int since, int until, String... names) {
        REQUIRED.computeIfAbsent(op, k -> new java.util.ArrayList<>()).add(new Required(since, until, List.of(names)));
    }

    /**
     * Checks the graph's definitions, uses and input counts.
     *
     * @param source        the model's name in messages
     * @param initializers  the initializers' names, in file order (repeats included)
     * @param graphInputs   the graph inputs' names, in file order (an initializer may also be listed as an input)
     * @param nodes         the nodes in file order
     * @param graphOutputs  the graph outputs' names
     * @param opsetFor      the model's opset for a node's domain
     * @throws OnnxFormatException at the first violation, naming the node (name or index), operator and value
     */
    static void validate(String source, List<String> initializers, List<String> graphInputs, List<Node> nodes, List<String> graphOutputs,
                         java.util.function.ToLongFunction<Node> opsetFor) {
        // what defines each value, for messages: "initializer", "graph input" or "node 'n' (Op)"
        Map<String, String> definedBy = new HashMap<>();
        for (String i : initializers) {
            String prev = definedBy.putIfAbsent(i, "initializer");
            if (prev != null) throw new OnnxFormatException(source, "initializer '" + i + "' is defined twice");
        }
        for (String i : graphInputs) {
            if (i.isEmpty()) throw new OnnxFormatException(source, "a graph input has no name");
            String prev = definedBy.putIfAbsent(i, "graph input");
            // an input listed beside its initializer is ONNX's way to give the initializer a default: allowed
            if (prev != null && !prev.equals("initializer")) throw new OnnxFormatException(source, "graph input '" + i + "' is listed twice");
        }
        for (Node n : nodes) {
            String where = describe(n);
            for (int k = 0; k < n.inputs().size(); k++) {
                String i = n.inputs().get(k);
                if (!i.isEmpty() && !definedBy.containsKey(i)) {
                    throw new OnnxFormatException(source, where + " reads '" + i + "' (input " + k + "), which no earlier node, input or initializer defines");
                }
            }
            checkArity(source, n, opsetFor.applyAsLong(n));
            checkRequired(source, n, opsetFor.applyAsLong(n));
            for (int k = 0; k < n.outputs().size(); k++) {
                String o = n.outputs().get(k);
                if (o.isEmpty()) continue;
                String prev = definedBy.putIfAbsent(o, where);
                if (prev != null) {
                    throw new OnnxFormatException(source, where + " defines '" + o + "' (output " + k + "), which " + prev
                            + " already defines; every value must be defined once");
                }
            }
        }
        for (String o : graphOutputs) {
            if (!definedBy.containsKey(o)) throw new OnnxFormatException(source, "graph output '" + o + "' is never defined");
        }
    }

    /** The node as messages name it: its name (or index when it has none) and operator. */
    static String describe(Node n) {
        return "node " + (n.name().isEmpty() ? "#" + n.index() : "'" + n.name() + "'") + " (" + n.opType() + ")";
    }

    private static void checkRequired(String source, Node n, long opset) {
        List<Required> rs = REQUIRED.get(n.opType());
        if (rs == null || !n.domain().isEmpty() && !n.domain().equals("ai.onnx")) return;
        for (Required r : rs) {
            if (opset < r.since() || opset > r.until()) continue;
            for (String a : r.names()) {
                if (!n.attrs().has(a)) {
                    throw new OnnxFormatException(source, describe(n) + " at opset " + opset + " requires the attribute " + a + ", which the node lacks; it has "
                            + n.attrs().names());
                }
            }
        }
    }

    private static void checkArity(String source, Node n, long opset) {
        List<Arity> versions = ARITY.get(n.opType());
        if (versions == null || !n.domain().isEmpty() && !n.domain().equals("ai.onnx")) return;
        Arity a = versions.stream().filter(v -> v.since() <= opset).findFirst().orElse(versions.getLast());
        List<String> in = n.inputs();
        String expected = a.min() == a.max() ? a.min() + " inputs"
                : a.max() == Integer.MAX_VALUE ? "at least " + a.min() + (a.min() == 1 ? " input" : " inputs") : a.min() + " to " + a.max() + " inputs";
        if (in.size() > a.max()) {
            throw new OnnxFormatException(source, describe(n) + " at opset " + opset + " takes " + expected + ", the node gives " + in.size() + " " + in);
        }
        for (int k = 0; k < a.min(); k++) {
            if (k >= in.size() || in.get(k).isEmpty()) {
                throw new OnnxFormatException(source, describe(n) + " at opset " + opset + " takes " + expected + " and input " + k + " is required, the node gives "
                        + in.size() + " " + in);
            }
        }
    }
}

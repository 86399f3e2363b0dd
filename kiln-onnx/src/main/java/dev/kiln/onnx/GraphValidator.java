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
 *   <li>every node lists as many inputs as its operator takes at the model's opset ({@link #ARITY}, ONNX's operator
 *       schemas for ai.onnx and ai.onnx.ml, counted as onnx.checker counts them, and a few {@link #DEVIATIONS}): the
 *       required ones present and non-empty, no more than the operator has;</li>
 *   <li>every node has the attributes its operator requires ({@link #REQUIRED});</li>
 *   <li>every graph output is defined.</li>
 * </ul>
 * Checks that need shapes (ranks, attribute lengths per spatial axis, constant indices) run when the operator is
 * built, through {@link OpContext}.
 */
final class GraphValidator {
    private GraphValidator() {}

    /**
     * How many inputs a version of an operator takes from opset {@code since} on: at least {@code min} and at most
     * {@code max} listed (empty names counted, as onnx.checker counts them; {@link Integer#MAX_VALUE} for a variadic
     * last input), of which the first {@code nonEmpty} must name a value (ONNX's required, "Single", inputs).
     */
    record Arity(int since, int min, int max, int nonEmpty) {}

    /** The classpath resource with every operator version's input counts, written by tools/golden/gen_onnx_arity.py. */
    static final String ARITY_RESOURCE = "onnx-arity.tsv";

    /**
     * Input counts of every operator of the domains Kiln checks (ai.onnx and ai.onnx.ml), from ONNX's operator schemas
     * ({@link #ARITY_RESOURCE}): keyed by domain (as {@link Node#domainName} names it) and operator, newest version first.
     * Operators not listed are left to {@link OnnxOps#check}, which refuses them as unsupported.
     */
    static final Map<String, Map<String, List<Arity>>> ARITY = loadArity();

    /** Where Kiln takes other input counts than ONNX's schema, on purpose, in ai.onnx: {@code op} from opset {@code since} to {@code until}. */
    record Deviation(String op, int since, int until, Arity arity) {}

    static final List<Deviation> DEVIATIONS = List.of(
            // C is required before opset 11, but exporters of old opsets omit it too and it is harmless to accept
            new Deviation("Gemm", 1, 10, new Arity(1, 2, 3, 2)));

    /** An attribute ONNX requires of an operator in opsets {@code since} to {@code until}. */
    record Required(int since, int until, List<String> names) {}

    /** Attributes the operators' implementations read without a default. */
    static final Map<String, List<Required>> REQUIRED = new HashMap<>();

    static {
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
        required("Scan", 8, 99, "body", "num_scan_inputs");
        required("If", 1, 99, "then_branch", "else_branch");
        required("Loop", 1, 99, "body");
        required("SequenceMap", 17, 99, "body");
        required("ConcatFromSequence", 11, 99, "axis");
    }

    private static Map<String, Map<String, List<Arity>>> loadArity() {
        Map<String, Map<String, List<Arity>>> byDomain = new HashMap<>();
        try (var in = GraphValidator.class.getResourceAsStream(ARITY_RESOURCE)) {
            if (in == null) throw new IllegalStateException("the resource " + ARITY_RESOURCE + " is missing from kiln-onnx");
            var reader = new java.io.BufferedReader(new java.io.InputStreamReader(in, java.nio.charset.StandardCharsets.UTF_8));
            for (String line; (line = reader.readLine()) != null; ) {
                if (line.isBlank() || line.startsWith("#")) continue;
                String[] f = line.split("\t");
                if (f.length != 6) throw new IllegalStateException(ARITY_RESOURCE + ": expected 6 tab-separated columns in '" + line + "'");
                int max = f[4].equals("unbounded") ? Integer.MAX_VALUE : Integer.parseInt(f[4]);
                byDomain.computeIfAbsent(f[0], k -> new HashMap<>()).computeIfAbsent(f[1], k -> new java.util.ArrayList<>())
                        .add(new Arity(Integer.parseInt(f[2]), Integer.parseInt(f[3]), max, Integer.parseInt(f[5])));
            }
        } catch (java.io.IOException e) {
            throw new java.io.UncheckedIOException("cannot read " + ARITY_RESOURCE, e);
        }
        for (Map<String, List<Arity>> ops : byDomain.values()) {
            ops.replaceAll((op, versions) -> versions.stream().sorted(java.util.Comparator.comparingInt(Arity::since).reversed()).toList());
        }
        byDomain.replaceAll((d, ops) -> Map.copyOf(ops));
        return Map.copyOf(byDomain);
    }

    /**
     * The input counts of the node's operator at the opset: a {@link #DEVIATIONS deviation} where one applies, else the
     * schema's newest version from that opset or before, else (an opset before the operator existed, or -1 when the
     * model imports none for the domain; Kiln runs some operators from opset 1 that ONNX added later, such as Acos at 7)
     * its first version; null when the operator is unknown in its domain (left to {@link OnnxOps#check}).
     */
    static Arity arity(String domain, String op, long opset) {
        if (domain.equals("ai.onnx")) {
            for (Deviation d : DEVIATIONS) if (d.op().equals(op) && d.since() <= opset && opset <= d.until()) return d.arity();
        }
        List<Arity> versions = ARITY.getOrDefault(domain, Map.of()).get(op);
        if (versions == null) return null;
        for (Arity v : versions) if (v.since() <= opset) return v;
        return versions.getLast();
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
        Arity a = arity(n.domainName(), n.opType(), opset);
        if (a == null) return;
        List<String> in = n.inputs();
        String expected = a.min() == a.max() ? a.min() + (a.min() == 1 ? " input" : " inputs")
                : a.max() == Integer.MAX_VALUE ? "at least " + a.min() + (a.min() == 1 ? " input" : " inputs") : a.min() + " to " + a.max() + " inputs";
        if (in.size() > a.max()) {
            throw new OnnxFormatException(source, describe(n) + " at opset " + opset + " takes " + expected + ", the node gives " + in.size() + " " + in);
        }
        for (int k = 0; k < a.min(); k++) {
            if (k >= in.size() || k < a.nonEmpty() && in.get(k).isEmpty()) {
                throw new OnnxFormatException(source, describe(n) + " at opset " + opset + " takes " + expected + " and input " + k + " is required, the node gives "
                        + in.size() + " " + in);
            }
        }
    }
}

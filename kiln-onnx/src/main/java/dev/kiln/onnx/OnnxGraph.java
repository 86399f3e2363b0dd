package dev.kiln.onnx;

import dev.kiln.Tensor;
import onnx.Onnx.GraphProto;
import onnx.Onnx.TensorProto;
import onnx.Onnx.ValueInfoProto;

import java.util.ArrayList;
import java.util.Collection;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.ToLongFunction;

/**
 * What {@link GraphBuilder} builds: a model's main graph, or a graph attribute such as Scan's body (a subgraph, whose
 * nodes may read values of the graphs around it by name).
 *
 * @param source       the model's name and, for a subgraph, where it sits, for messages
 * @param nodes        the nodes in file (topological) order
 * @param initializers the graph's own initializers
 * @param inputs       the graph inputs' names, in order (a subgraph's are bound by its operator)
 * @param outputs      the graph outputs' names, in order
 * @param opsets       the model's opset for a node's domain ({@code ""} is ai.onnx)
 */
record OnnxGraph(String source, List<Node> nodes, Map<String, Tensor> initializers, List<String> inputs, List<String> outputs,
                 ToLongFunction<String> opsets) {

    /** The main graph of {@code m}. */
    static OnnxGraph of(OnnxModel m) {
        return new OnnxGraph(m.source(), m.nodes(), m.initializers(), m.inputs().stream().map(ValueInfo::name).toList(),
                m.outputs().stream().map(ValueInfo::name).toList(), m::opsetFor);
    }

    long opsetFor(String domain) { return opsets.applyAsLong(domain); }

    /** The node that gives value {@code name}, or null where none does (an input, an initializer, an outer value). */
    Node producer(String name) {
        for (Node n : nodes) if (n.outputs().contains(name)) return n;
        return null;
    }

    /**
     * Graph attribute {@code g}, parsed and checked like a model's graph: every value defined once (and none that
     * {@code outer}, the names the graphs around it define, already defines: ONNX's names are unique across scopes),
     * every node input defined by the subgraph or by {@code outer}, input counts and required attributes; then each
     * operator's support.
     *
     * @throws OnnxFormatException        if it breaks the format's rules
     * @throws UnsupportedOnnxOpException if a node's operator is not supported
     */
    static OnnxGraph subgraph(GraphProto g, String source, ExternalData external, ToLongFunction<String> opsets, Collection<String> outer) {
        List<Node> nodes = nodes(g, source, external);
        List<String> initNames = new ArrayList<>();
        for (TensorProto t : g.getInitializerList()) {
            if (t.getName().isEmpty()) throw new OnnxFormatException(source, "an initializer has no name");
            initNames.add(t.getName());
        }
        List<String> inputs = g.getInputList().stream().map(ValueInfoProto::getName).toList();
        List<String> outputs = g.getOutputList().stream().map(ValueInfoProto::getName).toList();
        // the outer names first, as graph inputs: a subgraph input or value that redefines one is refused as defined twice
        List<String> visible = new ArrayList<>(new LinkedHashSet<>(outer));
        for (String i : inputs) {
            if (outer.contains(i)) throw new OnnxFormatException(source, "input '" + i + "' has the name of a value of the enclosing graph; names are unique across scopes");
        }
        visible.addAll(inputs);
        GraphValidator.validate(source, initNames, visible, nodes, outputs, n -> opsets.applyAsLong(n.domain()));
        // the graphs nested in this one read through it: what they read from outside must be defined outside
        for (String r : outerReads(nodes, inputs, initNames, outputs)) {
            if (!outer.contains(r)) {
                throw new OnnxFormatException(source, "a graph nested in it reads '" + r + "', which neither it nor an enclosing graph defines");
            }
        }
        for (Node n : nodes) OnnxOps.check(n, opsets.applyAsLong(n.domain()));
        for (Node n : nodes) n.attrs().checkExternalData();
        Map<String, Tensor> inits = new LinkedHashMap<>();
        for (TensorProto t : g.getInitializerList()) inits.put(t.getName(), TensorProtos.toTensor(t, source + " initializer " + t.getName(), external));
        return new OnnxGraph(source, List.copyOf(nodes), inits, inputs, outputs, opsets);
    }

    /** The nodes of graph attribute {@code g}, read but not checked (for the support check of its operators at load). */
    static List<Node> nodes(GraphProto g, String source, ExternalData external) {
        if (g.getSparseInitializerCount() > 0) throw new UnsupportedOnnxOpException(source, "sparse initializers are not supported");
        List<Node> nodes = new ArrayList<>();
        for (int k = 0; k < g.getNodeCount(); k++) nodes.add(Node.of(g.getNode(k), k, source, external));
        return nodes;
    }

    /**
     * The names this graph reads from the graphs around it: node inputs and graph outputs (and, through nested graph
     * attributes, theirs) that the graph itself does not define, in first-use order.
     */
    Set<String> outerReads() { return outerReads(nodes, inputs, initializers.keySet(), outputs); }

    /** The names the graphs nested in node {@code n} (its graph attributes) read from around them. */
    static Set<String> nestedReads(Node n) {
        Set<String> reads = new LinkedHashSet<>();
        for (GraphProto g : n.attrs().graphs()) reads.addAll(outerReads(g));
        return reads;
    }

    /** What graph attribute {@code g} reads from around it. */
    private static Set<String> outerReads(GraphProto g) {
        Set<String> innerDefined = new HashSet<>();
        for (ValueInfoProto v : g.getInputList()) innerDefined.add(v.getName());
        for (TensorProto t : g.getInitializerList()) innerDefined.add(t.getName());
        return outerReads(nodes(g, "", ExternalData.unavailable()), innerDefined, List.of(),
                g.getOutputList().stream().map(ValueInfoProto::getName).toList());
    }

    // an output that names an outer value directly (no node in between) is a read too: the builder binds only what is read
    private static Set<String> outerReads(List<Node> nodes, Collection<String> inputs, Collection<String> initializers, Collection<String> outputs) {
        Set<String> defined = new HashSet<>(inputs);
        defined.addAll(initializers);
        Set<String> reads = new LinkedHashSet<>();
        for (Node n : nodes) {
            for (String i : n.inputs()) if (!i.isEmpty() && !defined.contains(i)) reads.add(i);
            for (GraphProto g : n.attrs().graphs()) for (String r : outerReads(g)) if (!defined.contains(r)) reads.add(r);
            for (String o : n.outputs()) if (!o.isEmpty()) defined.add(o);
        }
        for (String o : outputs) if (!o.isEmpty() && !defined.contains(o)) reads.add(o);
        return reads;
    }
}

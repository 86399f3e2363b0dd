package dev.kiln.onnx;

import onnx.Onnx.NodeProto;

import java.util.List;

/**
 * One graph node: its operator, domain ({@code ""} for ai.onnx), name, input and output value names (an empty
 * name is an omitted optional input or output) and attributes.
 */
record Node(int index, String opType, String domain, String name, List<String> inputs, List<String> outputs, Attrs attrs) {

    /** Node {@code index} of a model read from {@code source}, whose tensor attributes' external data {@code external} resolves. */
    static Node of(NodeProto p, int index, String source, ExternalData external) {
        String label = !p.getName().isEmpty() ? p.getName() : p.getOutputCount() > 0 ? p.getOutput(0) : "#" + index;
        if (p.getOpType().isEmpty()) throw new OnnxFormatException(source, "node '" + label + "' has no op_type");
        return new Node(index, p.getOpType(), p.getDomain(), p.getName(), List.copyOf(p.getInputList()), List.copyOf(p.getOutputList()),
                new Attrs(p.getAttributeList(), source + " node '" + label + "' (" + p.getOpType() + ")", external));
    }

    /** The node's name, or its first output when it has none. */
    String label() {
        return !name.isEmpty() ? name : !outputs.isEmpty() ? outputs.getFirst() : "#" + index;
    }

    /** The domain as ONNX names it in messages. */
    String domainName() { return domain.isEmpty() ? "ai.onnx" : domain; }
}

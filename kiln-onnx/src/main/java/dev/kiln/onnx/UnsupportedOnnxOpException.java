package dev.kiln.onnx;

/**
 * A model uses something Kiln cannot run: an operator (named with its domain, the model's opset for that
 * domain and the node), an attribute value or input of a supported operator, or a value type such as a
 * sequence, optional or string tensor. {@link OnnxModel#load} checks every node before anything runs. A model
 * Kiln cannot run is bad input to the caller, hence an {@link IllegalArgumentException}.
 */
public class UnsupportedOnnxOpException extends IllegalArgumentException {
    private static final long serialVersionUID = 1L;

    private final String opType;
    private final String domain;
    private final long opset;
    private final String nodeName;

    /**
     * @param opType the operator, or a description of the unsupported feature when no operator is involved
     * @param domain the operator's domain ({@code ai.onnx} for the default domain)
     * @param opset the model's opset version for that domain, or -1 if it imports none
     * @param nodeName the node's name, or its first output when it has no name
     * @param reason what is not supported
     */
    public UnsupportedOnnxOpException(String opType, String domain, long opset, String nodeName, String reason) {
        super("unsupported ONNX op " + opType + " (domain " + domain + ", opset " + opset + ") at node '" + nodeName + "': " + reason);
        this.opType = opType;
        this.domain = domain;
        this.opset = opset;
        this.nodeName = nodeName;
    }

    /**
     * An unsupported value (a sequence, optional, map, sparse or string tensor, or a model-level feature such as
     * its opset); {@code valueName} names it, e.g. {@code "'x'"} or {@code "initializer W"}.
     */
    public UnsupportedOnnxOpException(String valueName, String reason) {
        super("unsupported ONNX value " + valueName + ": " + reason);
        this.opType = null;
        this.domain = null;
        this.opset = -1;
        this.nodeName = null;
    }

    /** The operator type, or null when the problem is a value's type. */
    public String opType() { return opType; }

    /** The operator's domain, or null when the problem is a value's type. */
    public String domain() { return domain; }

    /** The model's opset for the operator's domain (-1 if none or not an operator problem). */
    public long opset() { return opset; }

    /** The node's name (or first output), or null when the problem is a value's type. */
    public String nodeName() { return nodeName; }
}

package dev.kiln.onnx;

/**
 * An ONNX or TensorProto file that cannot be read: unreadable, truncated, not a valid protobuf message,
 * or a message that breaks the ONNX format's rules (a missing graph, a node reading an undefined value).
 * The message names the file and what is wrong. It is bad input, hence an {@link IllegalArgumentException}.
 */
public class OnnxFormatException extends IllegalArgumentException {
    private static final long serialVersionUID = 1L;

    /** An error in {@code source} (a file name or a description such as "initializer W"). */
    public OnnxFormatException(String source, String problem) {
        super(source + ": " + problem);
    }

    /** An error in {@code source} caused by {@code cause}. */
    public OnnxFormatException(String source, String problem, Throwable cause) {
        super(source + ": " + problem, cause);
    }
}

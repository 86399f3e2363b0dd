package dev.kiln.onnx;

import java.util.List;

/**
 * What an integer value of a graph is as another value plus a constant, read from the nodes that compute it: TorchScript
 * exports {@code x[t:t + 1]} in a loop as a Slice from {@code t} to {@code Add(t, 1)} (each through Unsqueeze), whose
 * length is 1 whatever {@code t} is when the loop runs. Only what such exports use is followed: Add and Sub of a constant,
 * and the nodes that pass one value through (Unsqueeze, Squeeze, Reshape, Cast, Identity).
 */
final class ConstantOffsets {
    private ConstantOffsets() {}

    /** {@code name} is {@code base} plus {@code constant}; {@code base} is empty where the value is the constant itself. */
    record Offset(String base, long constant) {}

    /** {@code name} as a base value plus a constant, following at most 16 nodes. */
    static Offset of(GraphBuilder b, String name) {
        long constant = 0;
        for (int guard = 0; guard < 16; guard++) {
            long[] v = b.constantIntegers(name);
            if (v != null) return v.length == 1 ? new Offset("", constant + v[0]) : new Offset(name, constant);
            Node n = b.graph().producer(name);
            if (n == null || !n.domainName().equals("ai.onnx")) break;
            List<String> in = n.inputs();
            switch (n.opType()) {
                case "Unsqueeze", "Squeeze", "Reshape", "Cast", "Identity" -> name = in.getFirst();
                case "Add", "Sub" -> {
                    long[] right = b.constantIntegers(in.get(1)), left = n.opType().equals("Add") ? b.constantIntegers(in.get(0)) : null;
                    if (right != null && right.length == 1) {
                        constant += n.opType().equals("Add") ? right[0] : -right[0];
                        name = in.get(0);
                    } else if (left != null && left.length == 1) {
                        constant += left[0];
                        name = in.get(1);
                    } else {
                        return new Offset(name, constant);
                    }
                }
                default -> {
                    return new Offset(name, constant);
                }
            }
        }
        return new Offset(name, constant);
    }

    /** {@code to - from} where both are one base value plus constants (the base's value cancels), else null. */
    static Long difference(GraphBuilder b, String from, String to) {
        Offset f = of(b, from), t = of(b, to);
        return f.base().equals(t.base()) ? t.constant() - f.constant() : null;
    }
}

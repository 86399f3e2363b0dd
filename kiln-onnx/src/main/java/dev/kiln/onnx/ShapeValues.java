package dev.kiln.onnx;

import dev.kiln.types.Shape;
import dev.kiln.types.Variable;

import java.util.ArrayList;
import java.util.List;

/**
 * The elements of a shape computed in the graph where some are sizes known only when the plan runs: Shape of a tensor
 * with a symbolic axis (a prepared plan's input dimension, a data-dependent count) gives that axis's {@link Variable},
 * and exporters pass it through Gather, Slice, Concat, Unsqueeze and Cast before a Reshape reads it
 * ({@code x.reshape(y.shape)}). Read from the nodes that compute the value, as {@link ConstantOffsets} does, so a Reshape
 * to such a shape keeps the symbolic axis instead of needing the values while the graph is built. Each element is a
 * {@link Long} or a {@link Variable}.
 */
final class ShapeValues {
    private ShapeValues() {}

    /** The elements of the 1-D (or one-element) integer value {@code name}, or null where a node computing it is not followed. */
    static List<Object> of(GraphBuilder b, String name) { return of(b, name, 0); }

    /** Constant elements as a shape's elements. */
    static List<Object> boxed(long[] values) {
        List<Object> out = new ArrayList<>();
        for (long v : values) out.add(v);
        return out;
    }

    private static List<Object> of(GraphBuilder b, String name, int depth) {
        long[] constant = b.constantIntegers(name);
        if (constant != null) return boxed(constant);
        Node n = depth > 32 ? null : b.graph().producer(name);
        if (n == null || !n.domainName().equals("ai.onnx")) return null;
        List<String> in = n.inputs();
        long opset = b.graph().opsetFor(n.domain());
        return switch (n.opType()) {
            case "Shape" -> {
                Shape s = b.shapeOf(in.getFirst());
                if (s == null) yield null;
                int r = s.rank(), start = 0, end = r;
                if (opset >= 15) {
                    start = ShapeOps.clampAxis(n.attrs().i("start", 0), r);
                    end = ShapeOps.clampAxis(n.attrs().i("end", r), r);
                }
                List<Object> out = new ArrayList<>();
                for (int a = start; a < end; a++) out.add(s.variable(a) != null ? s.variable(a) : (Object) (long) s.dim(a));
                yield out;
            }
            case "Unsqueeze", "Squeeze", "Cast", "Identity" -> of(b, in.getFirst(), depth + 1);
            case "Concat" -> {
                List<Object> out = new ArrayList<>();
                for (String part : in) {
                    List<Object> p = of(b, part, depth + 1);
                    if (p == null) yield null;
                    out.addAll(p);
                }
                yield out;
            }
            case "Gather" -> {
                List<Object> data = of(b, in.getFirst(), depth + 1);
                long[] at = b.constantIntegers(in.get(1));
                if (data == null || at == null || n.attrs().i("axis", 0) != 0) yield null;
                List<Object> out = new ArrayList<>();
                for (long i : at) {
                    long k = i < 0 ? i + data.size() : i;
                    if (k < 0 || k >= data.size()) yield null; // the Gather reports its own range error
                    out.add(data.get((int) k));
                }
                yield out;
            }
            case "Slice" -> {
                List<Object> data = of(b, in.getFirst(), depth + 1);
                if (data == null || opset < 10 || in.size() < 3) yield null;
                long[] starts = b.constantIntegers(in.get(1)), ends = b.constantIntegers(in.get(2));
                long[] steps = in.size() > 4 && !in.get(4).isEmpty() ? b.constantIntegers(in.get(4)) : new long[] {1};
                long[] axes = in.size() > 3 && !in.get(3).isEmpty() ? b.constantIntegers(in.get(3)) : new long[] {0};
                if (axes == null || axes.length != 1 || axes[0] != 0 && axes[0] != -1) yield null;
                if (starts == null || ends == null || steps == null || starts.length != 1 || ends.length != 1 || steps.length != 1 || steps[0] != 1) yield null;
                int r = data.size();
                int from = ShapeOps.clampAxis(starts[0], r);
                yield new ArrayList<>(data.subList(from, Math.max(from, ShapeOps.clampAxis(ends[0], r))));
            }
            default -> null;
        };
    }
}

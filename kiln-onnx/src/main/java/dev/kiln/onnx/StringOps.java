package dev.kiln.onnx;

import dev.kiln.Tensor;
import dev.kiln.types.DType;
import dev.kiln.types.Shape;
import onnx.Onnx.TensorProto;

import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Set;

/**
 * Operators on tensors of strings ({@link OnnxValue.StringValue}, host values known when the graph is built): StringNormalizer,
 * and Cast and CastLike to and from STRING. Cast and CastLike stay tensor operators (folded, lazy) for every other pair of
 * types; the builder hands a node to {@link #cast} instead when a string is on either side ({@link #involvesStrings}).
 * A number cast to a string is read while the graph is built (a constant, or the graph input it comes from under
 * {@link OnnxModel#run}; a prepared plan refuses, naming the node).
 */
final class StringOps {
    private StringOps() {}

    /** The spec the builder uses for a Cast or CastLike node with a string on either side. */
    static final OnnxOps.Spec CAST = new OnnxOps.Spec("Cast", 6, OnnxOps.Kind.HOST, null, StringOps::cast, null);

    static void register() {
        OnnxOps.addHost("StringNormalizer", 10, StringOps::normalize, null);
    }

    /** Whether {@code n} is a Cast to STRING, or a Cast or CastLike of a string tensor or like one. */
    static boolean involvesStrings(Node n, GraphBuilder b) {
        if (!n.domainName().equals(OnnxOps.AI_ONNX)) return false;
        return switch (n.opType()) {
            case "Cast" -> n.attrs().i("to", 0) == TensorProto.DataType.STRING_VALUE || isString(b, n.inputs(), 0);
            case "CastLike" -> isString(b, n.inputs(), 0) || isString(b, n.inputs(), 1);
            default -> false;
        };
    }

    private static boolean isString(GraphBuilder b, List<String> inputs, int i) {
        return i < inputs.size() && !inputs.get(i).isEmpty() && b.hostValue(inputs.get(i)) instanceof OnnxValue.StringValue;
    }

    /** Cast (attribute {@code to}) or CastLike (the type of input 1) with a string on either side. */
    private static List<OnnxValue> cast(OpContext c) {
        boolean toString;
        DType target = null;
        if (c.node.opType().equals("CastLike")) {
            OnnxValue like = c.value(1);
            toString = like instanceof OnnxValue.StringValue;
            if (!toString) target = HostValues.dtypeOf(like);
            if (!toString && !(like instanceof OnnxValue.TensorValue)) throw c.bad("input 1 ('" + c.node.inputs().get(1) + "') is " + like.describe() + ", expected a tensor");
        } else {
            int to = c.a.int32("to", 0);
            toString = to == TensorProto.DataType.STRING_VALUE;
            if (!toString) target = TensorProtos.dtype(to, "Cast target");
        }
        OnnxValue x = c.value(0);
        if (x instanceof OnnxValue.StringValue s) return List.of(toString ? s : fromStrings(c, s, target));
        if (!(x instanceof OnnxValue.TensorValue(Tensor t))) throw c.bad("input 0 ('" + c.node.inputs().getFirst() + "') is " + x.describe() + ", expected a tensor");
        return List.of(toStrings(c, t));
    }

    /** A number tensor written as strings, NumPy's way ({@link Strings#format}). */
    private static OnnxValue toStrings(OpContext c, Tensor t) {
        if (t.dtype().isPacked()) throw c.bad("input 0 has packed dtype " + t.dtype() + ", which holds no element values");
        Tensor v = c.builder().valuesOf(c.node.inputs().getFirst(), t);
        List<String> out = new ArrayList<>();
        if (t.dtype().isFloat() || t.dtype().isBool()) for (double d : v.toDoubleArray()) out.add(Strings.format(d, t.dtype()));
        else for (long l : v.toLongArray()) out.add(Strings.format(l, t.dtype()));
        return new OnnxValue.StringValue(out, t.shape());
    }

    /** Strings read as numbers of {@code target}. */
    private static OnnxValue fromStrings(OpContext c, OnnxValue.StringValue s, DType target) {
        int[] dims = s.shape().toArray();
        List<String> values = s.values();
        try {
            if (target.isFloat()) {
                double[] out = new double[values.size()];
                for (int i = 0; i < out.length; i++) out[i] = Strings.parseFloat(values.get(i), target);
                return new OnnxValue.TensorValue(c.constant(target, out, dims));
            }
            long[] out = new long[values.size()];
            for (int i = 0; i < out.length; i++) {
                out[i] = target.isBool() ? parseBool(values.get(i)) : Strings.parseInteger(values.get(i), target);
            }
            return new OnnxValue.TensorValue(c.constant(target, out, dims));
        } catch (IllegalArgumentException e) {
            throw c.bad("cannot cast to " + target + ": " + e.getMessage());
        }
    }

    private static long parseBool(String s) {
        return switch (s.strip().toLowerCase(Locale.ROOT)) {
            case "true", "1" -> 1;
            case "false", "0" -> 0;
            default -> throw new IllegalArgumentException("'" + s + "' is not a boolean (true, false, 1 or 0)");
        };
    }

    /**
     * StringNormalizer: the strings of a [C] or [1, C] tensor without the stopwords (compared with or without case), then
     * lower- or upper-cased; when every string is removed, one empty string remains ([1] or [1, 1]), as ONNX says.
     */
    private static List<OnnxValue> normalize(OpContext c) {
        if (!(c.value(0) instanceof OnnxValue.StringValue x)) throw c.bad("input 0 ('" + c.node.inputs().getFirst() + "') is " + c.value(0).describe()
                + ", expected a string tensor");
        int[] d = x.shape().toArray();
        if (!(d.length == 1 || d.length == 2 && d[0] == 1)) throw c.bad("input 0 has shape " + x.shape() + ", expected [C] or [1, C]");
        String action = c.a.s("case_change_action", "NONE");
        if (!Set.of("NONE", "LOWER", "UPPER").contains(action)) throw c.bad("case_change_action is '" + action + "', expected NONE, LOWER or UPPER");
        boolean caseSensitive = c.a.i("is_case_sensitive", 0) != 0;
        Locale locale = c.a.has("locale") ? Locale.forLanguageTag(c.a.s("locale", "en-US").replace('_', '-')) : Locale.US;
        Set<String> stop = new HashSet<>();
        String[] words = c.a.strings("stopwords");
        if (words != null) for (String w : words) stop.add(caseSensitive ? w : w.toLowerCase(locale));
        List<String> kept = new ArrayList<>();
        for (String s : x.values()) {
            if (stop.contains(caseSensitive ? s : s.toLowerCase(locale))) continue;
            kept.add(switch (action) {
                case "LOWER" -> s.toLowerCase(locale);
                case "UPPER" -> s.toUpperCase(locale);
                default -> s;
            });
        }
        if (kept.isEmpty()) kept.add("");
        Shape shape = d.length == 1 ? Shape.of(kept.size()) : Shape.of(1, kept.size());
        return List.of(new OnnxValue.StringValue(kept, shape));
    }
}

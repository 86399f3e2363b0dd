package dev.kiln.onnx;

import dev.kiln.Tensor;
import onnx.Onnx.AttributeProto;
import onnx.Onnx.AttributeProto.AttributeType;

import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/** A node's attributes by name, with typed accessors that apply the operator's defaults. */
final class Attrs {
    private final Map<String, AttributeProto> byName = new LinkedHashMap<>();
    private final String where;
    private final ExternalData external;

    Attrs(List<AttributeProto> attributes, String where, ExternalData external) {
        this.where = where;
        this.external = external;
        for (AttributeProto a : attributes) {
            if (!a.getRefAttrName().isEmpty()) throw new OnnxFormatException(where, "attribute " + a.getName() + " refers to a function attribute outside a function");
            byName.put(a.getName(), a);
        }
    }

    boolean has(String name) { return byName.containsKey(name); }

    java.util.Set<String> names() { return byName.keySet(); }

    private AttributeProto get(String name, AttributeType type) {
        AttributeProto a = byName.get(name);
        if (a == null) return null;
        // IR version 1 files may lack the type field; the value fields then tell
        if (a.hasType() && a.getType() != type) {
            throw new OnnxFormatException(where, "attribute " + name + " is " + a.getType() + ", expected " + type);
        }
        return a;
    }

    long i(String name, long dflt) {
        AttributeProto a = get(name, AttributeType.INT);
        return a == null ? dflt : a.getI();
    }

    /** An INT attribute that must fit an int (an axis, a count, a dtype code): a larger value is an error, not truncated. */
    int int32(String name, int dflt) {
        long v = i(name, dflt);
        if (v != (int) v) throw new OnnxFormatException(where, "attribute " + name + " is " + v + ", expected a value in the int range");
        return (int) v;
    }

    boolean b(String name, boolean dflt) { return i(name, dflt ? 1 : 0) != 0; }

    double f(String name, double dflt) {
        AttributeProto a = get(name, AttributeType.FLOAT);
        return a == null ? dflt : a.getF();
    }

    String s(String name, String dflt) {
        AttributeProto a = get(name, AttributeType.STRING);
        return a == null ? dflt : a.getS().toString(StandardCharsets.UTF_8);
    }

    /** The INTS attribute, or null when absent. */
    long[] longs(String name) {
        AttributeProto a = get(name, AttributeType.INTS);
        if (a == null) return null;
        long[] out = new long[a.getIntsCount()];
        for (int k = 0; k < out.length; k++) out[k] = a.getInts(k);
        return out;
    }

    /** The INTS attribute as ints, or null when absent. */
    int[] ints(String name) {
        long[] l = longs(name);
        if (l == null) return null;
        int[] out = new int[l.length];
        for (int k = 0; k < l.length; k++) out[k] = (int) Math.max(Integer.MIN_VALUE, Math.min(Integer.MAX_VALUE, l[k]));
        return out;
    }

    /** The FLOATS attribute, or null when absent. */
    float[] floats(String name) {
        AttributeProto a = get(name, AttributeType.FLOATS);
        if (a == null) return null;
        float[] out = new float[a.getFloatsCount()];
        for (int k = 0; k < out.length; k++) out[k] = a.getFloats(k);
        return out;
    }

    /** The STRINGS attribute, or null when absent. */
    String[] strings(String name) {
        AttributeProto a = get(name, AttributeType.STRINGS);
        if (a == null) return null;
        String[] out = new String[a.getStringsCount()];
        for (int k = 0; k < out.length; k++) out[k] = a.getStrings(k).toString(StandardCharsets.UTF_8);
        return out;
    }

    /** The TENSOR attribute as a realised tensor, or null when absent. */
    Tensor tensor(String name) {
        AttributeProto a = get(name, AttributeType.TENSOR);
        return a == null ? null : TensorProtos.toTensor(a.getT(), where + " attribute " + name, external);
    }

    /** Checks the external data of every tensor attribute ({@link TensorProtos#checkExternal}). */
    void checkExternalData() {
        for (AttributeProto a : byName.values()) if (a.hasT()) TensorProtos.checkExternal(a.getT(), where + " attribute " + a.getName(), external);
    }

    /** The GRAPH attribute (a subgraph, such as Scan's body), or null when absent. */
    onnx.Onnx.GraphProto graph(String name) {
        AttributeProto a = get(name, AttributeType.GRAPH);
        return a == null ? null : a.getG();
    }

    /** Every graph the attributes hold (GRAPH and GRAPHS values), for the names they read from the enclosing graph. */
    List<onnx.Onnx.GraphProto> graphs() {
        List<onnx.Onnx.GraphProto> out = new java.util.ArrayList<>();
        for (AttributeProto a : byName.values()) {
            if (a.hasG()) out.add(a.getG());
            out.addAll(a.getGraphsList());
        }
        return out;
    }

    /** The external data this node's tensors resolve against (a subgraph's initializers too). */
    ExternalData external() { return external; }

    /** The raw attribute (for Constant's several value kinds), or null. */
    AttributeProto raw(String name) { return byName.get(name); }
}

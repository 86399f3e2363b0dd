package dev.kiln.onnx;

import dev.kiln.fuzz.FuzzCampaign;
import dev.kiln.fuzz.ByteMutator;

import com.google.protobuf.ByteString;
import com.google.protobuf.InvalidProtocolBufferException;
import onnx.Onnx.AttributeProto;
import onnx.Onnx.GraphProto;
import onnx.Onnx.ModelProto;
import onnx.Onnx.NodeProto;
import onnx.Onnx.TensorProto;
import onnx.Onnx.TensorShapeProto;
import onnx.Onnx.TypeProto;
import onnx.Onnx.ValueInfoProto;

import java.util.ArrayList;
import java.util.List;
import java.util.Random;

/**
 * Structure-aware mutations of an ONNX model: the input is parsed as a ModelProto, one to three of its nodes,
 * attributes, inputs, initializers or opset imports are changed to what a careless exporter or a hostile file could
 * hold (a dropped or foreign input, an attribute one value short or set to a boundary value, another operator, a
 * constant index or shape of extreme values, a value defined twice), and the model is written back to bytes. An input
 * that is not a ModelProto falls back to byte-level mutation, as do a share of the others, so the parser is fuzzed too.
 */
final class ModelMutator implements FuzzCampaign.Mutation {
    private static final long[] VALUES = {0, 1, -1, 2, 3, -2, 5, -5, 100_000_000, Integer.MAX_VALUE, Integer.MIN_VALUE, 1L << 31,
            1L << 40, Long.MAX_VALUE, Long.MIN_VALUE};
    private static final String[] OPS = {"Gather", "GatherElements", "GatherND", "ScatterElements", "ScatterND", "Reshape", "Pad", "TopK",
            "Slice", "ConvTranspose", "MaxUnpool", "AveragePool", "MaxPool", "Upsample", "Resize", "OneHot", "Tile", "Expand", "Range",
            "Gemm", "MatMul", "Conv", "LSTM", "GRU", "RNN", "Concat", "Split", "Squeeze", "Unsqueeze", "Transpose", "Flatten",
            "ReduceSum", "ReduceMean", "Softmax", "Cast", "Constant", "ConstantOfShape", "Where", "Einsum", "CumSum", "DepthToSpace",
            "SpaceToDepth", "Trilu", "NonZero", "Compress", "Shape", "Size", "ArgMax", "BatchNormalization", "InstanceNormalization",
            "LRN", "DFT", "STFT", "Add", "Mul", "Relu", "Identity", "Dropout", "QuantizeLinear", "DequantizeLinear", "Clip",
            "GlobalAveragePool", "LpPool", "RoiAlign", "NonMaxSuppression", "Mod", "Det", "Hardmax", "ReverseSequence"};
    private static final String[] ATTRS = {"axis", "axes", "pads", "strides", "kernel_shape", "dilations", "perm", "k", "to", "mode",
            "group", "output_padding", "output_shape", "starts", "ends", "shape", "value", "keepdims", "split", "blocksize", "hidden_size",
            "direction", "transA", "transB", "largest", "sorted", "auto_pad", "ceil_mode", "count_include_pad", "scales", "batch_dims"};

    private final ByteMutator bytes;

    ModelMutator(ByteMutator bytes) {
        this.bytes = bytes;
    }

    @Override
    public byte[] mutate(byte[] parent, List<byte[]> pool, Random r) {
        if (r.nextInt(4) == 0) return bytes.mutate(parent, pool, r);
        ModelProto m;
        try {
            m = ModelProto.parseFrom(parent);
        } catch (InvalidProtocolBufferException e) {
            return bytes.mutate(parent, pool, r);
        }
        ModelProto.Builder b = m.toBuilder();
        for (int n = 1 + r.nextInt(3); n > 0; n--) once(b, r);
        return b.build().toByteArray();
    }

    private static void once(ModelProto.Builder m, Random r) {
        GraphProto.Builder g = m.getGraphBuilder();
        List<String> names = valueNames(g);
        int nodes = g.getNodeCount();
        switch (r.nextInt(10)) {
            case 0, 1 -> { if (nodes > 0) nodeInputs(g.getNodeBuilder(r.nextInt(nodes)), names, r); }
            case 2, 3 -> { if (nodes > 0) attribute(g.getNodeBuilder(r.nextInt(nodes)), r); }
            case 4 -> { if (nodes > 0) g.getNodeBuilder(r.nextInt(nodes)).setOpType(OPS[r.nextInt(OPS.length)]); }
            case 5 -> { if (g.getInputCount() > 0) graphInput(g.getInputBuilder(r.nextInt(g.getInputCount())), r); }
            case 6 -> { if (g.getInitializerCount() > 0) initializer(g.getInitializerBuilder(r.nextInt(g.getInitializerCount())), r); }
            case 7 -> constantInput(g, r);
            case 8 -> {
                if (nodes == 0) return;
                NodeProto.Builder n = g.getNodeBuilder(r.nextInt(nodes));
                // a value defined twice, or a node output that overwrites a graph input
                if (r.nextBoolean()) g.addNode(n.build());
                else if (n.getOutputCount() > 0 && !names.isEmpty()) n.setOutput(0, names.get(r.nextInt(names.size())));
            }
            default -> {
                if (m.getOpsetImportCount() > 0) m.getOpsetImportBuilder(0).setVersion(r.nextInt(22));
            }
        }
    }

    private static List<String> valueNames(GraphProto.Builder g) {
        List<String> names = new ArrayList<>();
        g.getInputList().forEach(v -> names.add(v.getName()));
        g.getInitializerList().forEach(t -> names.add(t.getName()));
        g.getNodeList().forEach(n -> names.addAll(n.getOutputList()));
        return names;
    }

    private static void nodeInputs(NodeProto.Builder n, List<String> names, Random r) {
        int count = n.getInputCount();
        switch (r.nextInt(4)) {
            case 0 -> {
                if (count == 0) return;
                List<String> keep = new ArrayList<>(n.getInputList().subList(0, count - 1));
                n.clearInput().addAllInput(keep);
            }
            case 1 -> { if (count > 0) n.setInput(r.nextInt(count), ""); }
            case 2 -> { if (count > 0 && !names.isEmpty()) n.setInput(r.nextInt(count), names.get(r.nextInt(names.size()))); }
            default -> n.addInput(names.isEmpty() ? "missing" : names.get(r.nextInt(names.size())));
        }
    }

    private static void attribute(NodeProto.Builder n, Random r) {
        if (n.getAttributeCount() == 0 || r.nextInt(4) == 0) {
            AttributeProto.Builder a = AttributeProto.newBuilder().setName(ATTRS[r.nextInt(ATTRS.length)]);
            if (r.nextBoolean()) {
                a.setType(AttributeProto.AttributeType.INT).setI(value(r));
            } else {
                a.setType(AttributeProto.AttributeType.INTS);
                for (int k = r.nextInt(6); k > 0; k--) a.addInts(value(r));
            }
            n.addAttribute(a);
            return;
        }
        int j = r.nextInt(n.getAttributeCount());
        AttributeProto.Builder a = n.getAttributeBuilder(j);
        switch (r.nextInt(7)) {
            case 0 -> n.removeAttribute(j);
            case 1 -> { if (a.getIntsCount() > 0) a.setInts(r.nextInt(a.getIntsCount()), value(r)); else a.setI(value(r)); }
            case 2 -> {
                if (a.getIntsCount() == 0) return;
                List<Long> keep = new ArrayList<>(a.getIntsList().subList(0, r.nextInt(a.getIntsCount())));
                a.clearInts().addAllInts(keep);
            }
            case 3 -> a.addInts(value(r));
            case 4 -> {
                float[] fs = {Float.NaN, Float.POSITIVE_INFINITY, -1f, 0f, 1e30f};
                if (a.getFloatsCount() > 0) a.setFloats(r.nextInt(a.getFloatsCount()), fs[r.nextInt(fs.length)]);
                else a.setF(fs[r.nextInt(fs.length)]);
            }
            case 5 -> {
                // another declared type than the value carries (0 is UNDEFINED; numbers without a type stay INT)
                AttributeProto.AttributeType t = AttributeProto.AttributeType.forNumber(r.nextInt(15));
                a.setType(t == null ? AttributeProto.AttributeType.INT : t);
            }
            default -> a.setS(ByteString.copyFromUtf8(r.nextBoolean() ? "" : "nonsense"));
        }
    }

    private static void graphInput(ValueInfoProto.Builder v, Random r) {
        TypeProto.Tensor.Builder t = v.getTypeBuilder().getTensorTypeBuilder();
        TensorShapeProto.Builder s = t.getShapeBuilder();
        switch (r.nextInt(4)) {
            case 0 -> { if (s.getDimCount() > 0) s.getDimBuilder(r.nextInt(s.getDimCount())).setDimValue(value(r)); }
            case 1 -> s.addDim(TensorShapeProto.Dimension.newBuilder().setDimValue(1 + r.nextInt(3)));
            case 2 -> { if (s.getDimCount() > 0) s.removeDim(r.nextInt(s.getDimCount())); }
            default -> t.setElemType(r.nextInt(17));
        }
    }

    private static void initializer(TensorProto.Builder t, Random r) {
        switch (r.nextInt(5)) {
            case 0 -> { if (t.getDimsCount() > 0) t.setDims(r.nextInt(t.getDimsCount()), value(r)); }
            case 1 -> t.addDims(value(r));
            case 2 -> t.setDataType(r.nextInt(17));
            case 3 -> t.setRawData(t.getRawData().substring(0, r.nextInt(t.getRawData().size() + 1)));
            default -> {
                if (t.getFloatDataCount() > 0) {
                    List<Float> keep = new ArrayList<>(t.getFloatDataList().subList(0, r.nextInt(t.getFloatDataCount())));
                    t.clearFloatData().addAllFloatData(keep);
                } else {
                    t.clearDims().addDims(value(r));
                }
            }
        }
    }

    /** A new int64 initializer of extreme values fed to a node's input: an index, a shape, pads, k, repeats, ... */
    private static void constantInput(GraphProto.Builder g, Random r) {
        if (g.getNodeCount() == 0) return;
        String name = "fuzz_const_" + g.getInitializerCount();
        TensorProto.Builder t = TensorProto.newBuilder().setName(name).setDataType(TensorProto.DataType.INT64_VALUE);
        int len = r.nextInt(5);
        if (r.nextInt(4) != 0) t.addDims(len);
        else len = 1;
        for (int k = 0; k < len; k++) t.addInt64Data(value(r));
        g.addInitializer(t);
        NodeProto.Builder n = g.getNodeBuilder(r.nextInt(g.getNodeCount()));
        if (n.getInputCount() == 0 || r.nextInt(3) == 0) n.addInput(name);
        else n.setInput(r.nextInt(n.getInputCount()), name);
    }

    private static long value(Random r) {
        return r.nextInt(3) == 0 ? r.nextInt(8) - 2 : VALUES[r.nextInt(VALUES.length)];
    }
}

package dev.kiln.onnx;

import dev.kiln.Tensor;
import onnx.Onnx.AttributeProto;
import onnx.Onnx.GraphProto;
import onnx.Onnx.ModelProto;
import onnx.Onnx.NodeProto;
import onnx.Onnx.OperatorSetIdProto;
import onnx.Onnx.TensorShapeProto;
import onnx.Onnx.TypeProto;
import onnx.Onnx.ValueInfoProto;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.Map;

/** Small one-node models built in Java for operator tests (no Python needed to run them). */
final class OnnxTestModels {
    private OnnxTestModels() {}

    static ValueInfoProto value(String name, int elemType, long... dims) {
        TensorShapeProto.Builder s = TensorShapeProto.newBuilder();
        for (long d : dims) s.addDim(TensorShapeProto.Dimension.newBuilder().setDimValue(d));
        return ValueInfoProto.newBuilder().setName(name)
                .setType(TypeProto.newBuilder().setTensorType(TypeProto.Tensor.newBuilder().setElemType(elemType).setShape(s))).build();
    }

    /** A value of unknown shape. */
    static ValueInfoProto anyShape(String name, int elemType) {
        return ValueInfoProto.newBuilder().setName(name).setType(TypeProto.newBuilder().setTensorType(TypeProto.Tensor.newBuilder().setElemType(elemType))).build();
    }

    static NodeProto node(String op, List<String> in, List<String> out, AttributeProto... attrs) {
        return NodeProto.newBuilder().setOpType(op).setName("n").addAllInput(in).addAllOutput(out).addAllAttribute(Arrays.asList(attrs)).build();
    }

    static AttributeProto f(String name, double v) {
        return AttributeProto.newBuilder().setName(name).setType(AttributeProto.AttributeType.FLOAT).setF((float) v).build();
    }

    static AttributeProto i(String name, long v) {
        return AttributeProto.newBuilder().setName(name).setType(AttributeProto.AttributeType.INT).setI(v).build();
    }

    static AttributeProto s(String name, String v) {
        return AttributeProto.newBuilder().setName(name).setType(AttributeProto.AttributeType.STRING).setS(com.google.protobuf.ByteString.copyFromUtf8(v)).build();
    }

    static AttributeProto ints(String name, long... v) {
        AttributeProto.Builder b = AttributeProto.newBuilder().setName(name).setType(AttributeProto.AttributeType.INTS);
        for (long x : v) b.addInts(x);
        return b.build();
    }

    static ModelProto model(int opset, GraphProto.Builder g) {
        return ModelProto.newBuilder().setIrVersion(8).addOpsetImport(OperatorSetIdProto.newBuilder().setDomain("").setVersion(opset)).setGraph(g.setName("g")).build();
    }

    static OnnxModel load(Path dir, ModelProto m) {
        try {
            Path p = Files.createTempFile(dir, "m", ".onnx");
            Files.write(p, m.toByteArray());
            return OnnxModel.load(p);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** Runs the model on {@code device} and reads every output as doubles. */
    static List<double[]> run(OnnxModel m, String device, Map<String, Tensor> inputs) {
        Map<String, Tensor> on = new java.util.LinkedHashMap<>();
        inputs.forEach((k, v) -> on.put(k, v.to(device).realize()));
        return m.run(on).stream().map(t -> t.realize().toDoubleArray()).toList();
    }
}

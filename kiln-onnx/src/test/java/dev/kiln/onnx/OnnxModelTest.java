package dev.kiln.onnx;

import com.google.protobuf.ByteString;
import dev.kiln.types.DType;
import dev.kiln.Tensor;
import onnx.Onnx.AttributeProto;
import onnx.Onnx.GraphProto;
import onnx.Onnx.ModelProto;
import onnx.Onnx.NodeProto;
import onnx.Onnx.OperatorSetIdProto;
import onnx.Onnx.TensorProto;
import onnx.Onnx.TensorShapeProto;
import onnx.Onnx.TypeProto;
import onnx.Onnx.ValueInfoProto;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** Loading, running and the typed errors of {@link OnnxModel} and {@link TensorProtos}. */
class OnnxModelTest {
    @TempDir
    Path dir;

    private static ValueInfoProto value(String name, int elemType, Object... dims) {
        TensorShapeProto.Builder s = TensorShapeProto.newBuilder();
        for (Object d : dims) {
            if (d instanceof String p) s.addDim(TensorShapeProto.Dimension.newBuilder().setDimParam(p));
            else s.addDim(TensorShapeProto.Dimension.newBuilder().setDimValue(((Number) d).longValue()));
        }
        return ValueInfoProto.newBuilder().setName(name)
                .setType(TypeProto.newBuilder().setTensorType(TypeProto.Tensor.newBuilder().setElemType(elemType).setShape(s))).build();
    }

    private static NodeProto node(String op, String name, List<String> in, List<String> out, AttributeProto... attrs) {
        return NodeProto.newBuilder().setOpType(op).setName(name).addAllInput(in).addAllOutput(out).addAllAttribute(Arrays.asList(attrs)).build();
    }

    private static ModelProto model(int opset, GraphProto.Builder g) {
        return ModelProto.newBuilder().setIrVersion(8).addOpsetImport(OperatorSetIdProto.newBuilder().setDomain("").setVersion(opset)).setGraph(g).build();
    }

    private Path write(String name, byte[] bytes) throws IOException {
        Path p = dir.resolve(name);
        Files.write(p, bytes);
        return p;
    }

    /** y = relu(x + b) with x of shape (N, 3) and b an initializer. */
    private ModelProto addRelu() {
        TensorProto b = TensorProto.newBuilder().setName("b").setDataType(1).addDims(3).addAllFloatData(List.of(1f, -2f, 0.5f)).build();
        return model(13, GraphProto.newBuilder().setName("g").addInitializer(b)
                .addInput(value("x", 1, "N", 3)).addOutput(value("y", 1, "N", 3))
                .addNode(node("Add", "add", List.of("x", "b"), List.of("s")))
                .addNode(node("Relu", "relu", List.of("s"), List.of("y"))));
    }

    @Test
    void runsAModelWithAnInitializerAndASymbolicDim() throws IOException {
        OnnxModel m = OnnxModel.load(write("m.onnx", addRelu().toByteArray()));
        assertThat(m.opset()).isEqualTo(13);
        assertThat(m.inputs()).hasSize(1);
        ValueInfo x = m.inputs().getFirst();
        assertThat(x.name()).isEqualTo("x");
        assertThat(x.dtype()).isEqualTo(DType.F32);
        assertThat(x.dims().get(0).symbol()).isEqualTo("N");
        assertThat(x.dims().get(1).size()).isEqualTo(3);
        assertThat(m.outputs().getFirst().name()).isEqualTo("y");

        Tensor in = Tensor.of(new float[] {1, 1, 1, -5, 3, -1}, 2, 3).to("INTERP");
        List<Tensor> out = m.run(Map.of("x", in));
        assertThat(out.getFirst().device().spec().toString()).isEqualTo("INTERP");
        assertThat(out.getFirst().toFloatArray()).containsExactly(2, 0, 1.5f, 0, 1, 0);
        assertThat(m.bindDims(Map.of("x", in))).containsEntry("N", 2L);
    }

    @Test
    void aModelLoadsFromItsBytesAsFromItsFile() {
        try (OnnxModel m = OnnxModel.load(addRelu().toByteArray(), "broadcast model")) {
            Tensor in = Tensor.of(new float[] {1, 1, 1, -5, 3, -1}, 2, 3).to("INTERP");
            assertThat(m.run(Map.of("x", in)).getFirst().toFloatArray()).containsExactly(2, 0, 1.5f, 0, 1, 0);
            assertThat(m.toString()).contains("broadcast model");
        }
        assertThatThrownBy(() -> OnnxModel.load(new byte[] {1, 2, 3, 4}, "broadcast model")).isInstanceOf(OnnxFormatException.class)
                .hasMessageContaining("broadcast model");
    }

    @Test
    void badInputsAreNamed() throws IOException {
        OnnxModel m = OnnxModel.load(write("m.onnx", addRelu().toByteArray()));
        assertThatThrownBy(() -> m.run(Map.of())).isInstanceOf(IllegalArgumentException.class).hasMessageContaining("input 'x'").hasMessageContaining("missing");
        assertThatThrownBy(() -> m.run(Map.of("x", Tensor.zeros(2, 4)))).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("[N, 3]").hasMessageContaining("[2, 4]");
        assertThatThrownBy(() -> m.run(Map.of("x", Tensor.zeros(DType.I32, 2, 3)))).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("must be f32, got i32");
        assertThatThrownBy(() -> m.run(Map.of("x", Tensor.zeros(2, 3), "z", Tensor.zeros(1)))).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("no input 'z'");
    }

    @Test
    void aSymbolicDimTakesOneSize() throws IOException {
        ModelProto p = model(13, GraphProto.newBuilder().addInput(value("a", 1, "N")).addInput(value("b", 1, "N")).addOutput(value("c", 1, "N"))
                .addNode(node("Add", "add", List.of("a", "b"), List.of("c"))));
        OnnxModel m = OnnxModel.load(write("m.onnx", p.toByteArray()));
        assertThatThrownBy(() -> m.run(Map.of("a", Tensor.zeros(2), "b", Tensor.zeros(3)))).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("dimension 'N' is 2 in one input and 3 in input 'b'");
    }

    @Test
    void unsupportedOpsAreReportedAtLoadWithTheirNode() throws IOException {
        ModelProto p = model(13, GraphProto.newBuilder().addInput(value("x", 1, 2)).addOutput(value("y", 1, 2))
                .addNode(node("Relu", "first", List.of("x"), List.of("r")))
                .addNode(node("FancyOp", "second", List.of("r"), List.of("y"))));
        Path f = write("m.onnx", p.toByteArray());
        assertThatThrownBy(() -> OnnxModel.load(f)).isInstanceOf(UnsupportedOnnxOpException.class)
                .hasMessageContaining("FancyOp").hasMessageContaining("domain ai.onnx").hasMessageContaining("opset 13").hasMessageContaining("'second'")
                .satisfies(e -> {
                    UnsupportedOnnxOpException u = (UnsupportedOnnxOpException) e;
                    assertThat(u.opType()).isEqualTo("FancyOp");
                    assertThat(u.nodeName()).isEqualTo("second");
                    assertThat(u.opset()).isEqualTo(13);
                });
        ModelProto other = p.toBuilder().setGraph(p.getGraph().toBuilder().setNode(1, p.getGraph().getNode(1).toBuilder().setOpType("Relu").setDomain("com.example"))).build();
        assertThatThrownBy(() -> OnnxModel.load(write("o.onnx", other.toByteArray()))).isInstanceOf(UnsupportedOnnxOpException.class)
                .hasMessageContaining("domain com.example");
    }

    @Test
    void unsupportedAttributeValuesAreReportedAtLoad() throws IOException {
        AttributeProto mode = AttributeProto.newBuilder().setName("mode").setType(AttributeProto.AttributeType.STRING).setS(ByteString.copyFromUtf8("wrap")).build();
        ModelProto p = model(13, GraphProto.newBuilder().addInput(value("x", 1, 2)).addInput(value("p", 7, 2)).addOutput(value("y", 1, 4))
                .addNode(node("Pad", "pad", List.of("x", "p"), List.of("y"), mode)));
        assertThatThrownBy(() -> OnnxModel.load(write("m.onnx", p.toByteArray()))).isInstanceOf(UnsupportedOnnxOpException.class)
                .hasMessageContaining("Pad").hasMessageContaining("'wrap'");
    }

    @Test
    void sequencesOfSequencesAreUnsupportedAndTheTensorApiRefusesSequences() throws IOException {
        TypeProto tensor = value("e", 1).getType();
        ValueInfoProto nested = ValueInfoProto.newBuilder().setName("s").setType(TypeProto.newBuilder().setSequenceType(TypeProto.Sequence.newBuilder()
                .setElemType(TypeProto.newBuilder().setSequenceType(TypeProto.Sequence.newBuilder().setElemType(tensor))))).build();
        ModelProto p = model(13, GraphProto.newBuilder().addInput(nested).addNode(NodeProto.newBuilder().setOpType("SequenceLength").addInput("s").addOutput("y"))
                .addOutput(value("y", 7)));
        assertThatThrownBy(() -> OnnxModel.load(write("m.onnx", p.toByteArray()))).isInstanceOf(UnsupportedOnnxOpException.class)
                .hasMessageContaining("'s'").hasMessageContaining("sequence of sequence");
        ValueInfoProto seq = ValueInfoProto.newBuilder().setName("s").setType(TypeProto.newBuilder().setSequenceType(TypeProto.Sequence.newBuilder().setElemType(tensor))).build();
        ModelProto q = model(13, GraphProto.newBuilder().addInput(seq).addNode(NodeProto.newBuilder().setOpType("SequenceLength").addInput("s").addOutput("y"))
                .addOutput(value("y", 7)));
        try (OnnxModel m = OnnxModel.load(write("q.onnx", q.toByteArray()))) {
            assertThat(m.inputs().getFirst().kind()).isEqualTo(ValueInfo.Kind.SEQUENCE);
            assertThatThrownBy(() -> m.run(java.util.Map.of())).isInstanceOf(UnsupportedOperationException.class).hasMessageContaining("input 's'");
        }
    }

    @Test
    void malformedFilesAreFormatErrorsNamingTheFile() throws IOException {
        byte[] good = addRelu().toByteArray();
        Path truncated = write("truncated.onnx", Arrays.copyOf(good, good.length / 2));
        assertThatThrownBy(() -> OnnxModel.load(truncated)).isInstanceOf(OnnxFormatException.class).hasMessageContaining("truncated.onnx");
        Path garbage = write("garbage.onnx", new byte[] {(byte) 0xff, (byte) 0xff, (byte) 0xff, 0x07, 0x12});
        assertThatThrownBy(() -> OnnxModel.load(garbage)).isInstanceOf(OnnxFormatException.class).hasMessageContaining("garbage.onnx");
        Path empty = write("empty.onnx", new byte[0]);
        assertThatThrownBy(() -> OnnxModel.load(empty)).isInstanceOf(OnnxFormatException.class).hasMessageContaining("empty.onnx")
                .hasMessageContaining("no graph");
        assertThatThrownBy(() -> OnnxModel.load(dir.resolve("missing.onnx"))).isInstanceOf(OnnxFormatException.class).hasMessageContaining("missing.onnx");
        ModelProto dangling = model(13, GraphProto.newBuilder().addInput(value("x", 1, 2)).addOutput(value("y", 1, 2))
                .addNode(node("Relu", "r", List.of("nowhere"), List.of("y"))));
        assertThatThrownBy(() -> OnnxModel.load(write("d.onnx", dangling.toByteArray()))).isInstanceOf(OnnxFormatException.class)
                .hasMessageContaining("'nowhere'");
    }

    @Test
    void tensorProtosReadTypedFieldsAndRawData() throws IOException {
        TensorProto f16 = TensorProto.newBuilder().setDataType(10).addDims(2).addInt32Data(0x3C00).addInt32Data(0xC000).build();
        assertThat(TensorProtos.read(write("h.pb", f16.toByteArray())).toDoubleArray()).containsExactly(1.0, -2.0);
        TensorProto bf16 = TensorProto.newBuilder().setDataType(16).addDims(1).addInt32Data(0x3FC0).build();
        assertThat(TensorProtos.read(write("b.pb", bf16.toByteArray())).toDoubleArray()).containsExactly(1.5);
        TensorProto u64 = TensorProto.newBuilder().setDataType(13).addDims(1).addUint64Data(-1L).build();
        assertThat(TensorProtos.read(write("u.pb", u64.toByteArray())).toLongArray()).containsExactly(-1L);
        TensorProto i8 = TensorProto.newBuilder().setDataType(3).addDims(2).addInt32Data(-3).addInt32Data(127).build();
        Tensor t8 = TensorProtos.read(write("i8.pb", i8.toByteArray()));
        assertThat(t8.dtype()).isEqualTo(DType.I8);
        assertThat(t8.toLongArray()).containsExactly(-3, 127);
        TensorProto bool = TensorProto.newBuilder().setDataType(9).addDims(3).addInt32Data(1).addInt32Data(0).addInt32Data(1).build();
        assertThat(TensorProtos.read(write("bool.pb", bool.toByteArray())).toBooleanArray()).containsExactly(true, false, true);
        ByteBuffer raw = ByteBuffer.allocate(16).order(ByteOrder.LITTLE_ENDIAN).putDouble(0.25).putDouble(-8);
        TensorProto f64 = TensorProto.newBuilder().setDataType(11).addDims(2).addDims(1).setRawData(ByteString.copyFrom(raw.array())).build();
        Tensor d = TensorProtos.read(write("d.pb", f64.toByteArray()));
        assertThat(d.dims()).containsExactly(2, 1);
        assertThat(d.toDoubleArray()).containsExactly(0.25, -8.0);
        TensorProto scalar = TensorProto.newBuilder().setDataType(7).addInt64Data(42).build();
        Tensor s = TensorProtos.read(write("s.pb", scalar.toByteArray()));
        assertThat(s.ndim()).isZero();
        assertThat(s.toLongArray()).containsExactly(42L);
    }

    @Test
    void tensorProtoErrors() throws IOException {
        TensorProto str = TensorProto.newBuilder().setDataType(8).addDims(1).addStringData(ByteString.copyFromUtf8("a")).build();
        assertThatThrownBy(() -> TensorProtos.read(write("str.pb", str.toByteArray()))).isInstanceOf(UnsupportedOnnxOpException.class)
                .hasMessageContaining("STRING");
        TensorProto shortRaw = TensorProto.newBuilder().setDataType(1).addDims(4).setRawData(ByteString.copyFrom(new byte[8])).build();
        assertThatThrownBy(() -> TensorProtos.read(write("short.pb", shortRaw.toByteArray()))).isInstanceOf(OnnxFormatException.class)
                .hasMessageContaining("short.pb").hasMessageContaining("raw_data has 8 bytes");
        TensorProto few = TensorProto.newBuilder().setDataType(1).addDims(3).addFloatData(1).build();
        assertThatThrownBy(() -> TensorProtos.read(write("few.pb", few.toByteArray()))).isInstanceOf(OnnxFormatException.class)
                .hasMessageContaining("holds 1 values");
        byte[] good = TensorProto.newBuilder().setDataType(1).addDims(2).addFloatData(1).addFloatData(2).setName("tensor").build().toByteArray();
        assertThatThrownBy(() -> TensorProtos.read(write("cut.pb", Arrays.copyOf(good, good.length - 2)))).isInstanceOf(OnnxFormatException.class)
                .hasMessageContaining("cut.pb");
    }
}

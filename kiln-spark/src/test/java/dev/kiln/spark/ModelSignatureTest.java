package dev.kiln.spark;

import dev.kiln.onnx.OnnxModel;
import onnx.Onnx.GraphProto;
import onnx.Onnx.ModelProto;
import onnx.Onnx.NodeProto;
import onnx.Onnx.OperatorSetIdProto;
import onnx.Onnx.TensorShapeProto;
import onnx.Onnx.TypeProto;
import onnx.Onnx.ValueInfoProto;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** {@link ModelSignature}: a model whose values are not tensors (strings here) is refused when bound, naming the value. */
class ModelSignatureTest {

    private static ValueInfoProto strings(String name) {
        TensorShapeProto.Builder s = TensorShapeProto.newBuilder().addDim(TensorShapeProto.Dimension.newBuilder().setDimParam("N"));
        return ValueInfoProto.newBuilder().setName(name).setType(TypeProto.newBuilder().setTensorType(TypeProto.Tensor.newBuilder().setElemType(8).setShape(s))).build();
    }

    @Test
    void stringValuesAreRefusedNamingThem() {
        GraphProto g = GraphProto.newBuilder().setName("g").addInput(strings("text")).addOutput(strings("norm"))
                .addNode(NodeProto.newBuilder().setOpType("StringNormalizer").setName("n").addInput("text").addOutput("norm")).build();
        ModelProto m = ModelProto.newBuilder().setIrVersion(8).addOpsetImport(OperatorSetIdProto.newBuilder().setVersion(13)).setGraph(g).build();
        try (OnnxModel model = OnnxModel.load(m.toByteArray(), "strings.onnx")) {
            assertThatThrownBy(() -> ModelSignature.of(model, "strings.onnx")).isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("input 'text'").hasMessageContaining("is not a tensor");
        }
    }
}

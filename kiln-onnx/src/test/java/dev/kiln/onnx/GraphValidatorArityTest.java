package dev.kiln.onnx;

import onnx.Onnx.GraphProto;
import onnx.Onnx.ModelProto;
import onnx.Onnx.NodeProto;
import onnx.Onnx.OperatorSetIdProto;
import onnx.Onnx.TensorShapeProto;
import onnx.Onnx.TypeProto;
import onnx.Onnx.ValueInfoProto;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * Input counts from ONNX's operator schemas ({@link GraphValidator#ARITY}, the resource tools/golden/gen_onnx_arity.py
 * writes): every operator of ai.onnx and ai.onnx.ml is checked at load, not only the ones listed by hand before, and
 * counts as onnx.checker counts (an empty trailing name is an input; an empty name only fails at a required input).
 */
class GraphValidatorArityTest {
    private static final int F32 = 1;

    // ---- the table -------------------------------------------------------------------------------------------

    @Test
    void theTableHoldsTheSchemasOfWellKnownOperators() {
        assertThat(GraphValidator.ARITY).containsOnlyKeys("ai.onnx", "ai.onnx.ml", "ai.onnx.preview.training");
        // R, T, then at least one tensor (variadic): the groups' sizes are checked by the optimizer
        assertThat(GraphValidator.arity("ai.onnx.preview.training", "Adam", 1)).isEqualTo(new GraphValidator.Arity(1, 3, Integer.MAX_VALUE, 2));
        assertThat(GraphValidator.ARITY.get("ai.onnx")).hasSizeGreaterThan(180);
        assertThat(GraphValidator.ARITY.get("ai.onnx.ml")).hasSizeGreaterThan(15);
        int max = Integer.MAX_VALUE;
        // newest first: Conv's versions are 22, 11 and 1
        assertThat(GraphValidator.ARITY.get("ai.onnx").get("Conv").getLast()).isEqualTo(new GraphValidator.Arity(1, 2, 3, 2));
        assertThat(GraphValidator.arity("ai.onnx", "Conv", 13)).isEqualTo(new GraphValidator.Arity(11, 2, 3, 2));
        assertThat(GraphValidator.arity("ai.onnx", "LSTM", 14)).isEqualTo(new GraphValidator.Arity(14, 3, 8, 3));
        assertThat(GraphValidator.arity("ai.onnx", "Softmax", 13)).isEqualTo(new GraphValidator.Arity(13, 1, 1, 1));
        assertThat(GraphValidator.arity("ai.onnx", "Reshape", 4)).isEqualTo(new GraphValidator.Arity(1, 1, 1, 1));
        assertThat(GraphValidator.arity("ai.onnx", "Reshape", 5)).isEqualTo(new GraphValidator.Arity(5, 2, 2, 2));
        assertThat(GraphValidator.arity("ai.onnx", "Resize", 11)).isEqualTo(new GraphValidator.Arity(11, 3, 4, 3));
        assertThat(GraphValidator.arity("ai.onnx", "Resize", 13)).isEqualTo(new GraphValidator.Arity(13, 1, 4, 1));
        assertThat(GraphValidator.arity("ai.onnx", "QuantizeLinear", 13)).isEqualTo(new GraphValidator.Arity(13, 2, 3, 2));
        assertThat(GraphValidator.arity("ai.onnx", "Concat", 13)).isEqualTo(new GraphValidator.Arity(13, 1, max, 0));
        // Loop: M and cond are optional but counted (ONNX's min_input 2), the carried values variadic
        assertThat(GraphValidator.arity("ai.onnx", "Loop", 16)).isEqualTo(new GraphValidator.Arity(16, 2, max, 0));
        assertThat(GraphValidator.arity("ai.onnx.ml", "LinearClassifier", 1)).isEqualTo(new GraphValidator.Arity(1, 1, 1, 1));
        // before an operator existed (Acos came at opset 7, LayerNormalization at 17): its first version
        assertThat(GraphValidator.arity("ai.onnx", "Acos", 6)).isEqualTo(new GraphValidator.Arity(7, 1, 1, 1));
        assertThat(GraphValidator.arity("ai.onnx", "LayerNormalization", 13)).isEqualTo(new GraphValidator.Arity(17, 2, 3, 2));
        // unknown: left to OnnxOps.check

        assertThat(GraphValidator.arity("ai.onnx", "NoSuchOp", 13)).isNull();
        assertThat(GraphValidator.arity("com.microsoft", "FusedConv", 1)).isNull();
    }

    @Test
    void theTableSaysWhichOnnxWroteIt() throws IOException {
        try (InputStream in = GraphValidator.class.getResourceAsStream(GraphValidator.ARITY_RESOURCE)) {
            assertThat(in).isNotNull();
            String first = new String(in.readAllBytes(), StandardCharsets.UTF_8).lines().findFirst().orElseThrow();
            assertThat(first).matches("# ONNX operator input counts, generated from onnx \\d+\\.\\d+\\.\\d+ by: python3 tools/golden/gen_onnx_arity.py");
        }
    }

    @Test
    void everyOperatorKilnImplementsIsInTheTable() {
        assertThat(OnnxOps.supported()).hasSizeGreaterThan(100).allSatisfy(op -> assertThat(GraphValidator.ARITY.get("ai.onnx")).containsKey(op));
    }

    @Test
    void gemmKeepsItsDeliberateDeviation() {
        // ONNX requires C before opset 11; Kiln accepts it omitted there too
        assertThat(GraphValidator.arity("ai.onnx", "Gemm", 9)).isEqualTo(new GraphValidator.Arity(1, 2, 3, 2));
        assertThat(GraphValidator.arity("ai.onnx", "Gemm", 11)).isEqualTo(new GraphValidator.Arity(11, 2, 3, 2));
        loads(model(9, node("Gemm", "x", "x")));
        refused(model(9, node("Gemm", "x", "x", "x", "x")), "bad.onnx: node 'n' (Gemm) at opset 9 takes 2 to 3 inputs, the node gives 4 [x, x, x, x]");
    }

    // ---- operators the hand-written list did not have ----------------------------------------------------------

    @Test
    void softmaxWithTwoInputs() {
        refused(model(13, node("Softmax", "x", "x")), "bad.onnx: node 'n' (Softmax) at opset 13 takes 1 input, the node gives 2 [x, x]");
    }

    @Test
    void lstmWithNineInputs() {
        refused(model(14, node("LSTM", "x", "x", "x", "", "", "", "", "", "x")),
                "bad.onnx: node 'n' (LSTM) at opset 14 takes 3 to 8 inputs, the node gives 9 [x, x, x, , , , , , x]");
    }

    @Test
    void sigmoidWithNoInput() {
        refused(model(13, node("Sigmoid")), "bad.onnx: node 'n' (Sigmoid) at opset 13 takes 1 input and input 0 is required, the node gives 0 []");
    }

    @Test
    void quantizeLinearWithoutItsScale() {
        refused(model(13, node("QuantizeLinear", "x")),
                "bad.onnx: node 'n' (QuantizeLinear) at opset 13 takes 2 to 3 inputs and input 1 is required, the node gives 1 [x]");
    }

    @Test
    void convWithAnEmptyWeight() {
        refused(model(13, node("Conv", "x", "")), "bad.onnx: node 'n' (Conv) at opset 13 takes 2 to 3 inputs and input 1 is required, the node gives 2 [x, ]");
    }

    @Test
    void sumWithNoInput() {
        refused(model(13, node("Sum")), "bad.onnx: node 'n' (Sum) at opset 13 takes at least 1 input and input 0 is required, the node gives 0 []");
    }

    @Test
    void anOperatorOfAnOlderOpsetIsCheckedAgainstThatVersion() {
        // Reshape took its shape as an attribute before opset 5
        refused(model(4, node("Reshape", "x", "x")), "bad.onnx: node 'n' (Reshape) at opset 4 takes 1 input, the node gives 2 [x, x]");
        // Resize's roi and scales are required at opset 11 and 12 (optional from 13), as onnx.checker has them
        refused(model(11, node("Resize", "x", "", "", "x")),
                "bad.onnx: node 'n' (Resize) at opset 11 takes 3 to 4 inputs and input 1 is required, the node gives 4 [x, , , x]");
    }

    // ---- counting as onnx.checker counts ------------------------------------------------------------------------

    @Test
    void anEmptyTrailingNameIsStillAnInput() {
        // onnx.checker: "Node(n) with schema(::Relu:14) has input size 2 not in range [min=1, max=1]"
        refused(model(13, node("Relu", "x", "")), "bad.onnx: node 'n' (Relu) at opset 13 takes 1 input, the node gives 2 [x, ]");
        refused(model(13, node("Clip", "x", "", "", "")), "bad.onnx: node 'n' (Clip) at opset 13 takes 1 to 3 inputs, the node gives 4 [x, , , ]");
    }

    @Test
    void emptyNamesAtOptionalInputsAreOmittedInputs() {
        loads(model(13, node("Clip", "x", "", "")));
        // Loop's M and cond are optional but counted: the arity check passes, and the missing body is what is refused
        assertThatThrownBy(() -> load(model(13, node("Loop", "", "x")))).isExactlyInstanceOf(OnnxFormatException.class)
                .hasMessage("bad.onnx: node 'n' (Loop) at opset 13 requires the attribute body, which the node lacks; it has []");
        refused(model(13, node("Loop", "x")), "bad.onnx: node 'n' (Loop) at opset 13 takes at least 2 inputs and input 1 is required, the node gives 1 [x]");
    }

    // ---- domains and unknown operators --------------------------------------------------------------------------

    @Test
    void anAiOnnxMlNodeIsCheckedBeforeItsDomainIsRefused() {
        NodeProto ml = node("Normalizer", "x", "x").toBuilder().setDomain("ai.onnx.ml").build();
        ModelProto m = model(13, ml).toBuilder().addOpsetImport(OperatorSetIdProto.newBuilder().setDomain("ai.onnx.ml").setVersion(3)).build();
        refused(m, "bad.onnx: node 'n' (Normalizer) at opset 3 takes 1 input, the node gives 2 [x, x]");
        NodeProto fine = node("Normalizer", "x").toBuilder().setDomain("ai.onnx.ml").build();
        ModelProto ok = model(13, fine).toBuilder().addOpsetImport(OperatorSetIdProto.newBuilder().setDomain("ai.onnx.ml").setVersion(3)).build();
        assertThatThrownBy(() -> load(ok)).isExactlyInstanceOf(UnsupportedOnnxOpException.class)
                .hasMessage("unsupported ONNX op Normalizer (domain ai.onnx.ml, opset 3) at node 'n': only the domains [ai.onnx, ai.onnx.preview.training] are supported");
    }

    @Test
    void anUnknownOperatorIsLeftToTheUnsupportedOperatorError() {
        assertThatThrownBy(() -> load(model(13, node("NoSuchOp", "x", "x", "x", "x", "x")))).isExactlyInstanceOf(UnsupportedOnnxOpException.class)
                .hasMessage("unsupported ONNX op NoSuchOp (domain ai.onnx, opset 13) at node 'n': Kiln has no implementation of this operator");
    }

    // ---- building models ------------------------------------------------------------------------------------------

    private static NodeProto node(String op, String... in) {
        return NodeProto.newBuilder().setOpType(op).setName("n").addAllInput(List.of(in)).addOutput("y").build();
    }

    private static ValueInfoProto value(String name, long... dims) {
        TensorShapeProto.Builder s = TensorShapeProto.newBuilder();
        for (long d : dims) s.addDim(TensorShapeProto.Dimension.newBuilder().setDimValue(d));
        return ValueInfoProto.newBuilder().setName(name).setType(TypeProto.newBuilder().setTensorType(TypeProto.Tensor.newBuilder().setElemType(F32).setShape(s))).build();
    }

    /** One node reading x (f32 [2, 3]) and writing y. */
    private static ModelProto model(long opset, NodeProto n) {
        GraphProto.Builder g = GraphProto.newBuilder().setName("g").addInput(value("x", 2, 3)).addOutput(value("y")).addNode(n);
        return ModelProto.newBuilder().setIrVersion(8).addOpsetImport(OperatorSetIdProto.newBuilder().setVersion(opset)).setGraph(g).build();
    }

    private static OnnxModel load(ModelProto m) { return OnnxModel.fromProto(m, "bad.onnx"); }

    private static void loads(ModelProto m) {
        try (OnnxModel model = load(m)) {
            assertThat(model.inputs()).hasSize(1);
        }
    }

    private static void refused(ModelProto m, String message) {
        assertThatThrownBy(() -> load(m)).isExactlyInstanceOf(OnnxFormatException.class).hasMessage(message)
                .satisfies(e -> assertThat(e.getMessage()).doesNotContain("\n"));
    }
}

package dev.kiln.onnx;

import dev.kiln.Tensor;
import dev.kiln.runtime.DeviceRegistry;
import dev.kiln.types.DType;
import dev.kiln.types.Shape;
import onnx.Onnx.AttributeProto;
import onnx.Onnx.GraphProto;
import onnx.Onnx.ModelProto;
import onnx.Onnx.NodeProto;
import onnx.Onnx.TensorProto;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * Tensors of strings as host values ({@link OnnxValue.StringValue}): Cast and CastLike to and from STRING, StringNormalizer,
 * NumPy's way of writing numbers, and the refusals: strings that are no numbers, shapes StringNormalizer does not take, the
 * tensor-only {@code run}.
 */
class StringOpsTest {
    private static final int FLOAT = TensorProto.DataType.FLOAT_VALUE, STRING = TensorProto.DataType.STRING_VALUE;

    /** The string cases of the ONNX conformance data (Cast, CastLike and their expansions, StringNormalizer). */
    @ParameterizedTest
    @ValueSource(strings = {"INTERP", "CPU"})
    void conformanceCasesPass(String device) {
        Path node = ConformanceTest.data().resolve("onnx-node");
        Assumptions.assumeTrue(Files.isDirectory(node), () -> "ONNX conformance data not found at " + node);
        List<Path> cases = List.of("test_cast_STRING_to_FLOAT", "test_castlike_FLOAT_to_STRING", "test_castlike_FLOAT_to_STRING_expanded",
                "test_castlike_STRING_to_FLOAT", "test_castlike_STRING_to_FLOAT_expanded", "test_strnormalizer_export_monday_casesensintive_lower",
                "test_strnormalizer_export_monday_casesensintive_nochangecase", "test_strnormalizer_export_monday_insensintive_upper_twodim",
                "test_strnormalizer_nostopwords_nochangecase").stream().map(node::resolve).toList();
        ConformanceRunner.Report report = ConformanceRunner.run(cases, device, line -> {});
        assertThat(report.results()).hasSize(9);
        assertThat(report.results()).allSatisfy(r -> assertThat(r.status()).as(r.line()).isEqualTo(ConformanceRunner.Status.PASS));
    }

    @Test
    void numbersAreWrittenAsNumPyWritesThem() {
        assertThat(Strings.format(1e-5f, DType.F32)).isEqualTo("1e-05");
        assertThat(Strings.format(1.5e-5f, DType.F32)).isEqualTo("1.5e-05");
        assertThat(Strings.format(0.0001f, DType.F32)).isEqualTo("1e-04"); // f32's 0.0001 is below 1e-4
        assertThat(Strings.format(0.0001, DType.F64)).isEqualTo("0.0001");
        assertThat(Strings.format(100f, DType.F32)).isEqualTo("100.0");
        assertThat(Strings.format(999999f, DType.F32)).isEqualTo("999999.0");
        assertThat(Strings.format(1234567f, DType.F32)).isEqualTo("1.234567e+06");
        assertThat(Strings.format(1e15, DType.F64)).isEqualTo("1000000000000000.0");
        assertThat(Strings.format(1e16, DType.F64)).isEqualTo("1e+16");
        assertThat(Strings.format(1f / 3, DType.F32)).isEqualTo("0.33333334");
        assertThat(Strings.format(-0.0, DType.F32)).isEqualTo("-0.0");
        assertThat(Strings.format(Double.NaN, DType.F32)).isEqualTo("nan");
        assertThat(Strings.format(Double.NEGATIVE_INFINITY, DType.F64)).isEqualTo("-inf");
        assertThat(Strings.format(Float.float16ToFloat(Float.floatToFloat16(0.1f)), DType.F16)).isEqualTo("0.1");
        assertThat(Strings.format(1000.0, DType.F16)).isEqualTo("1e+03");
        assertThat(Strings.format(1.0, DType.BOOL)).isEqualTo("True");
        assertThat(Strings.format(-7L, DType.I32)).isEqualTo("-7");
        assertThat(Strings.format(-1L, DType.U64)).isEqualTo("18446744073709551615");
    }

    @Test
    void stringsAreReadAsNumbers() {
        assertThat(Strings.parseFloat("0.47892547", DType.F32)).isEqualTo(0.47892547f);
        assertThat(Strings.parseFloat(" -INF ", DType.F32)).isEqualTo(Double.NEGATIVE_INFINITY);
        assertThat(Strings.parseFloat("NaN", DType.F64)).isNaN();
        assertThat(Strings.parseFloat("1e-3", DType.F64)).isEqualTo(1e-3);
        assertThatThrownBy(() -> Strings.parseFloat("1f", DType.F32)).isInstanceOf(IllegalArgumentException.class).hasMessageContaining("'1f' is not a number");
        assertThat(Strings.parseInteger("18446744073709551615", DType.U64)).isEqualTo(-1L);
        assertThatThrownBy(() -> Strings.parseInteger("1.5", DType.I64)).isInstanceOf(IllegalArgumentException.class).hasMessageContaining("not an integer");
    }

    private static ModelProto cast(int from, int to) {
        GraphProto.Builder g = GraphProto.newBuilder().addInput(OnnxTestModels.anyShape("x", from))
                .addNode(NodeProto.newBuilder().setOpType("Cast").setName("c").addInput("x").addOutput("y")
                        .addAttribute(AttributeProto.newBuilder().setName("to").setType(AttributeProto.AttributeType.INT).setI(to)))
                .addOutput(OnnxTestModels.anyShape("y", to));
        return OnnxTestModels.model(13, g);
    }

    private static OnnxValue.StringValue strings(Shape shape, String... s) { return new OnnxValue.StringValue(List.of(s), shape); }

    /** Numbers to strings and back, through a graph: the round trip gives the numbers again. */
    @ParameterizedTest
    @ValueSource(strings = {"INTERP", "CPU"})
    void castsToAndFromStrings(String device) {
        var d = DeviceRegistry.get(device);
        OnnxModel toStrings = OnnxModel.fromProto(cast(FLOAT, STRING), "cast.onnx");
        float[] x = {1.5f, -0.1f, 1e-7f, 3e8f};
        List<OnnxValue> s = toStrings.runValues(Map.of("x", new OnnxValue.TensorValue(Tensor.of(x, 2, 2).to(d).realize())), d);
        assertThat(s.getFirst()).isEqualTo(strings(Shape.of(2, 2), "1.5", "-0.1", "1e-07", "3e+08"));
        OnnxModel fromStrings = OnnxModel.fromProto(cast(STRING, FLOAT), "cast.onnx");
        List<OnnxValue> back = fromStrings.runValues(Map.of("x", s.getFirst()), d);
        assertThat(((OnnxValue.TensorValue) back.getFirst()).tensor().realize().toFloatArray()).containsExactly(x);
        // a string that is no number names the node and the string
        assertThatThrownBy(() -> fromStrings.runValues(Map.of("x", strings(Shape.of(2), "1", "one")), d)).isInstanceOf(OnnxFormatException.class)
                .hasMessageContaining("Cast node 'c'").hasMessageContaining("'one' is not a number");
        // the tensor-only run refuses a model of strings, naming the input
        assertThatThrownBy(() -> fromStrings.run(Map.of("x", Tensor.zeros(DType.F32, 2)))).isInstanceOf(UnsupportedOperationException.class)
                .hasMessageContaining("input 'x'").hasMessageContaining("string");
    }

    private static ModelProto normalizer(AttributeProto... attrs) {
        GraphProto.Builder g = GraphProto.newBuilder().addInput(OnnxTestModels.anyShape("x", STRING))
                .addNode(NodeProto.newBuilder().setOpType("StringNormalizer").setName("norm").addInput("x").addOutput("y").addAllAttribute(List.of(attrs)))
                .addOutput(OnnxTestModels.anyShape("y", STRING));
        return OnnxTestModels.model(13, g);
    }

    /** Every string a stopword: one empty string remains, as ONNX says; shapes other than [C] and [1, C] are refused. */
    @Test
    void stringNormalizerEdges() {
        var d = DeviceRegistry.get("INTERP");
        AttributeProto stop = AttributeProto.newBuilder().setName("stopwords").setType(AttributeProto.AttributeType.STRINGS)
                .addStrings(com.google.protobuf.ByteString.copyFromUtf8("a")).addStrings(com.google.protobuf.ByteString.copyFromUtf8("B")).build();
        OnnxModel m = OnnxModel.fromProto(normalizer(stop), "norm.onnx");
        assertThat(m.runValues(Map.of("x", strings(Shape.of(1, 3), "A", "b", "a")), d).getFirst()).isEqualTo(strings(Shape.of(1, 1), ""));
        assertThat(m.runValues(Map.of("x", strings(Shape.of(3), "A", "c", "Ü")), d).getFirst()).isEqualTo(strings(Shape.of(2), "c", "Ü"));
        assertThatThrownBy(() -> m.runValues(Map.of("x", strings(Shape.of(2, 1), "a", "b")), d)).isInstanceOf(OnnxFormatException.class)
                .hasMessageContaining("StringNormalizer node 'norm'").hasMessageContaining("expected [C] or [1, C]");
        AttributeProto bad = AttributeProto.newBuilder().setName("case_change_action").setType(AttributeProto.AttributeType.STRING)
                .setS(com.google.protobuf.ByteString.copyFromUtf8("TITLE")).build();
        assertThatThrownBy(() -> OnnxModel.fromProto(normalizer(bad), "norm.onnx").runValues(Map.of("x", strings(Shape.of(1), "a")), d))
                .isInstanceOf(OnnxFormatException.class).hasMessageContaining("case_change_action is 'TITLE'");
    }
}

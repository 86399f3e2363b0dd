package dev.kiln.onnx;

import dev.kiln.Tensor;
import dev.kiln.runtime.DeviceRegistry;
import dev.kiln.types.DType;
import onnx.Onnx.AttributeProto;
import onnx.Onnx.GraphProto;
import onnx.Onnx.ModelProto;
import onnx.Onnx.NodeProto;
import onnx.Onnx.TensorProto;
import onnx.Onnx.TypeProto;
import onnx.Onnx.ValueInfoProto;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import static dev.kiln.onnx.OnnxTestModels.anyShape;
import static dev.kiln.onnx.OnnxTestModels.i;
import static dev.kiln.onnx.OnnxTestModels.value;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * Sequence and optional values: each sequence operator, SequenceMap, Optional*, If and Loop carrying them, on small models
 * built here, against values this test computes itself; and the typed errors for out-of-range positions, wrong kinds,
 * lengths known only when the model runs, and the tensor-only public API.
 */
class SequenceValuesTest {
    private static final int FLOAT = 1, INT64 = 7;

    // ------------------------------------------------------------------------------------------------- model helpers

    static ValueInfoProto seq(String name, int elemType) {
        return ValueInfoProto.newBuilder().setName(name).setType(TypeProto.newBuilder().setSequenceType(TypeProto.Sequence.newBuilder()
                .setElemType(TypeProto.newBuilder().setTensorType(TypeProto.Tensor.newBuilder().setElemType(elemType))))).build();
    }

    static ValueInfoProto opt(String name, int elemType) {
        return ValueInfoProto.newBuilder().setName(name).setType(TypeProto.newBuilder().setOptionalType(TypeProto.Optional.newBuilder()
                .setElemType(TypeProto.newBuilder().setTensorType(TypeProto.Tensor.newBuilder().setElemType(elemType))))).build();
    }

    static NodeProto node(String op, List<String> in, List<String> out, AttributeProto... attrs) {
        return NodeProto.newBuilder().setOpType(op).setName(op.toLowerCase() + "_" + out.getFirst()).addAllInput(in).addAllOutput(out)
                .addAllAttribute(Arrays.asList(attrs)).build();
    }

    static TensorProto ints(String name, long[] v, long... dims) {
        TensorProto.Builder b = TensorProto.newBuilder().setName(name).setDataType(INT64);
        for (long d : dims) b.addDims(d);
        for (long x : v) b.addInt64Data(x);
        return b.build();
    }

    static AttributeProto graph(String name, GraphProto g) {
        return AttributeProto.newBuilder().setName(name).setType(AttributeProto.AttributeType.GRAPH).setG(g).build();
    }

    static OnnxModel model(int opset, GraphProto.Builder g) { return OnnxModel.fromProto(OnnxTestModels.model(opset, g), "test"); }

    /** The model's outputs on INTERP for tensor inputs. */
    static List<OnnxValue> run(OnnxModel m, Map<String, Tensor> inputs) {
        Map<String, OnnxValue> in = new LinkedHashMap<>();
        inputs.forEach((k, v) -> in.put(k, new OnnxValue.TensorValue(v)));
        return m.runValues(in, DeviceRegistry.get("INTERP"));
    }

    /** A sequence output's elements as {@code shape=values} strings, e.g. {@code [2]=[1.0, 4.0]}. */
    static List<String> elements(OnnxValue v) {
        assertThat(v).isInstanceOf(OnnxValue.SequenceValue.class);
        List<String> out = new ArrayList<>();
        for (Tensor t : ((OnnxValue.SequenceValue) v).elements()) out.add(Arrays.toString(t.dims()) + "=" + Arrays.toString(t.realize().toDoubleArray()));
        return out;
    }

    static double[] tensor(OnnxValue v) {
        assertThat(v).isInstanceOf(OnnxValue.TensorValue.class);
        return ((OnnxValue.TensorValue) v).tensor().realize().toDoubleArray();
    }

    /** x = [[1, 2, 3], [4, 5, 6]]. */
    static Tensor x() { return Tensor.of(new float[] {1, 2, 3, 4, 5, 6}, 2, 3); }

    // ------------------------------------------------------------------------------------------------- SplitToSequence, ConcatFromSequence

    @Test
    void splitToSequenceWithoutSplitTakesSlicesOfOne() {
        GraphProto.Builder g = GraphProto.newBuilder().addInput(value("x", FLOAT, 2, 3))
                .addNode(node("SplitToSequence", List.of("x"), List.of("kept"), i("axis", 1)))
                .addNode(node("SplitToSequence", List.of("x"), List.of("squeezed"), i("axis", 1), i("keepdims", 0)))
                .addNode(node("SequenceLength", List.of("kept"), List.of("n")))
                .addOutput(seq("kept", FLOAT)).addOutput(seq("squeezed", FLOAT)).addOutput(anyShape("n", INT64));
        List<OnnxValue> out = run(model(13, g), Map.of("x", x()));
        // the columns of x
        assertThat(elements(out.get(0))).containsExactly("[2, 1]=[1.0, 4.0]", "[2, 1]=[2.0, 5.0]", "[2, 1]=[3.0, 6.0]");
        assertThat(elements(out.get(1))).containsExactly("[2]=[1.0, 4.0]", "[2]=[2.0, 5.0]", "[2]=[3.0, 6.0]");
        assertThat(tensor(out.get(2))).containsExactly(3);
    }

    @Test
    void splitToSequenceBySizes() {
        GraphProto.Builder g = GraphProto.newBuilder().addInput(value("x", FLOAT, 2, 3))
                .addInitializer(ints("two", new long[] {2})).addInitializer(ints("sizes", new long[] {1, 2}, 2))
                .addNode(node("SplitToSequence", List.of("x", "two"), List.of("chunks"), i("axis", -1)))
                .addNode(node("SplitToSequence", List.of("x", "sizes"), List.of("parts"), i("axis", 1)))
                .addOutput(seq("chunks", FLOAT)).addOutput(seq("parts", FLOAT));
        List<OnnxValue> out = run(model(13, g), Map.of("x", x()));
        // chunks of 2 columns, the last one shorter
        assertThat(elements(out.get(0))).containsExactly("[2, 2]=[1.0, 2.0, 4.0, 5.0]", "[2, 1]=[3.0, 6.0]");
        assertThat(elements(out.get(1))).containsExactly("[2, 1]=[1.0, 4.0]", "[2, 2]=[2.0, 3.0, 5.0, 6.0]");
    }

    @Test
    void splitToSequenceRefusesASplitKnownOnlyWhenTheModelRuns() {
        GraphProto.Builder g = GraphProto.newBuilder().addInput(value("x", FLOAT, 2, 3)).addInput(value("split", INT64))
                .addNode(node("SplitToSequence", List.of("x", "split"), List.of("s"), i("axis", 1))).addOutput(seq("s", FLOAT));
        OnnxModel m = model(13, g);
        assertThatThrownBy(() -> run(m, Map.of("x", x(), "split", Tensor.scalar(2L, DType.I64))))
                .isInstanceOf(UnsupportedOnnxOpException.class).hasMessageContaining("split").hasMessageContaining("length");
    }

    @Test
    void splitSizesThatDoNotSumToTheAxisAreTheModelsFault() {
        GraphProto.Builder g = GraphProto.newBuilder().addInput(value("x", FLOAT, 2, 3)).addInitializer(ints("sizes", new long[] {1, 1}, 2))
                .addNode(node("SplitToSequence", List.of("x", "sizes"), List.of("s"), i("axis", 1))).addOutput(seq("s", FLOAT));
        assertThatThrownBy(() -> run(model(13, g), Map.of("x", x()))).isInstanceOf(OnnxFormatException.class).hasMessageContaining("sums to 2");
    }

    @Test
    void concatFromSequenceJoinsOrStacks() {
        GraphProto.Builder g = GraphProto.newBuilder().addInput(value("a", FLOAT, 2)).addInput(value("b", FLOAT, 2))
                .addNode(node("SequenceConstruct", List.of("a", "b"), List.of("s")))
                .addNode(node("ConcatFromSequence", List.of("s"), List.of("joined"), i("axis", 0)))
                .addNode(node("ConcatFromSequence", List.of("s"), List.of("stacked"), i("axis", -1), i("new_axis", 1)))
                .addOutput(anyShape("joined", FLOAT)).addOutput(anyShape("stacked", FLOAT));
        List<OnnxValue> out = run(model(13, g), Map.of("a", Tensor.of(new float[] {1, 2}, 2), "b", Tensor.of(new float[] {3, 4}, 2)));
        assertThat(tensor(out.get(0))).containsExactly(1, 2, 3, 4);
        // new axis last: [[a0, b0], [a1, b1]]
        assertThat(((OnnxValue.TensorValue) out.get(1)).tensor().dims()).containsExactly(2, 2);
        assertThat(tensor(out.get(1))).containsExactly(1, 3, 2, 4);
    }

    // ------------------------------------------------------------------------------------------------- At, Insert, Erase, Empty

    /** s = (a, b, c), each a one-element tensor of its value 1, 2, 3; the model's nodes follow. */
    private static GraphProto.Builder abc() {
        GraphProto.Builder g = GraphProto.newBuilder();
        for (String n : List.of("a", "b", "c")) g.addInput(value(n, FLOAT, 1));
        return g.addNode(node("SequenceConstruct", List.of("a", "b", "c"), List.of("s")));
    }

    private static Map<String, Tensor> abcInputs() {
        return Map.of("a", Tensor.of(new float[] {1}, 1), "b", Tensor.of(new float[] {2}, 1), "c", Tensor.of(new float[] {3}, 1));
    }

    @Test
    void sequenceAtTakesNegativePositionsFromTheBack() {
        GraphProto.Builder g = abc().addInitializer(ints("minus1", new long[] {-1})).addInitializer(ints("zero", new long[] {0}))
                .addNode(node("SequenceAt", List.of("s", "minus1"), List.of("last")))
                .addNode(node("SequenceAt", List.of("s", "zero"), List.of("first")))
                .addOutput(anyShape("last", FLOAT)).addOutput(anyShape("first", FLOAT));
        List<OnnxValue> out = run(model(13, g), abcInputs());
        assertThat(tensor(out.get(0))).containsExactly(3);
        assertThat(tensor(out.get(1))).containsExactly(1);
    }

    @Test
    void sequenceAtOutOfRangeNamesTheNodeThePositionAndTheLength() {
        GraphProto.Builder g = abc().addInitializer(ints("three", new long[] {3}))
                .addNode(node("SequenceAt", List.of("s", "three"), List.of("y"))).addOutput(anyShape("y", FLOAT));
        assertThatThrownBy(() -> run(model(13, g), abcInputs())).isInstanceOf(OnnxFormatException.class)
                .hasMessageContaining("SequenceAt node 'sequenceat_y'").hasMessageContaining("position 3").hasMessageContaining("length 3");
    }

    @Test
    void sequenceInsertAndErase() {
        GraphProto.Builder g = abc().addInput(value("d", FLOAT, 1)).addInitializer(ints("zero", new long[] {0})).addInitializer(ints("minus1", new long[] {-1}))
                .addNode(node("SequenceInsert", List.of("s", "d"), List.of("back")))
                .addNode(node("SequenceInsert", List.of("s", "d", "zero"), List.of("front")))
                .addNode(node("SequenceInsert", List.of("s", "d", "minus1"), List.of("beforeLast")))
                .addNode(node("SequenceErase", List.of("s"), List.of("noLast")))
                .addNode(node("SequenceErase", List.of("s", "zero"), List.of("noFirst")))
                .addOutput(seq("back", FLOAT)).addOutput(seq("front", FLOAT)).addOutput(seq("beforeLast", FLOAT))
                .addOutput(seq("noLast", FLOAT)).addOutput(seq("noFirst", FLOAT));
        Map<String, Tensor> in = new LinkedHashMap<>(abcInputs());
        in.put("d", Tensor.of(new float[] {9}, 1));
        List<OnnxValue> out = run(model(13, g), in);
        assertThat(elements(out.get(0))).containsExactly("[1]=[1.0]", "[1]=[2.0]", "[1]=[3.0]", "[1]=[9.0]");
        assertThat(elements(out.get(1))).containsExactly("[1]=[9.0]", "[1]=[1.0]", "[1]=[2.0]", "[1]=[3.0]");
        assertThat(elements(out.get(2))).containsExactly("[1]=[1.0]", "[1]=[2.0]", "[1]=[9.0]", "[1]=[3.0]");
        assertThat(elements(out.get(3))).containsExactly("[1]=[1.0]", "[1]=[2.0]");
        assertThat(elements(out.get(4))).containsExactly("[1]=[2.0]", "[1]=[3.0]");
    }

    @Test
    void sequenceEmptyHasItsDtypeAndNoElements() {
        GraphProto.Builder g = GraphProto.newBuilder().addInput(value("v", INT64, 2))
                .addNode(node("SequenceEmpty", List.of(), List.of("e"), i("dtype", INT64)))
                .addNode(node("SequenceLength", List.of("e"), List.of("n0")))
                .addNode(node("SequenceInsert", List.of("e", "v"), List.of("one")))
                .addOutput(seq("e", INT64)).addOutput(anyShape("n0", INT64)).addOutput(seq("one", INT64));
        List<OnnxValue> out = run(model(13, g), Map.of("v", Tensor.of(new long[] {5, 6}, 2)));
        assertThat(out.get(0)).isEqualTo(new OnnxValue.SequenceValue(List.of(), DType.I64));
        assertThat(tensor(out.get(1))).containsExactly(0);
        assertThat(elements(out.get(2))).containsExactly("[2]=[5.0, 6.0]");
    }

    @Test
    void mixedDtypesAndTensorOperatorsOnSequencesAreTheModelsFault() {
        GraphProto.Builder mixed = GraphProto.newBuilder().addInput(value("a", FLOAT, 1)).addInput(value("b", INT64, 1))
                .addNode(node("SequenceConstruct", List.of("a", "b"), List.of("s"))).addOutput(seq("s", FLOAT));
        assertThatThrownBy(() -> run(model(13, mixed), Map.of("a", Tensor.of(new float[] {1}, 1), "b", Tensor.of(new long[] {1}, 1))))
                .isInstanceOf(OnnxFormatException.class).hasMessageContaining("one dtype");
        GraphProto.Builder add = abc().addNode(node("Add", List.of("s", "a"), List.of("y"))).addOutput(anyShape("y", FLOAT));
        assertThatThrownBy(() -> run(model(13, add), abcInputs())).isInstanceOf(OnnxFormatException.class)
                .hasMessageContaining("Add node 'add_y'").hasMessageContaining("'s'").hasMessageContaining("sequence of 3");
    }

    // ------------------------------------------------------------------------------------------------- SequenceMap

    @Test
    void sequenceMapAppliesTheBodyToEachElementWithATensorGivenWhole() {
        GraphProto body = GraphProto.newBuilder().setName("body").addInput(anyShape("e", FLOAT)).addInput(anyShape("weight", FLOAT))
                .addNode(node("Mul", List.of("e", "weight"), List.of("p"))).addNode(node("Shape", List.of("e"), List.of("shape")))
                .addOutput(anyShape("p", FLOAT)).addOutput(anyShape("shape", INT64)).build();
        GraphProto.Builder g = GraphProto.newBuilder().addInput(value("x", FLOAT, 2, 3)).addInput(value("w", FLOAT, 1))
                .addInitializer(ints("sizes", new long[] {1, 2}, 2))
                .addNode(node("SplitToSequence", List.of("x", "sizes"), List.of("s"), i("axis", 1)))
                .addNode(NodeProto.newBuilder().setOpType("SequenceMap").setName("map").addInput("s").addInput("w").addOutput("products").addOutput("shapes")
                        .addAttribute(graph("body", body)))
                .addOutput(seq("products", FLOAT)).addOutput(seq("shapes", INT64));
        List<OnnxValue> out = run(model(17, g), Map.of("x", x(), "w", Tensor.of(new float[] {10}, 1)));
        assertThat(elements(out.get(0))).containsExactly("[2, 1]=[10.0, 40.0]", "[2, 2]=[20.0, 30.0, 50.0, 60.0]");
        assertThat(elements(out.get(1))).containsExactly("[2]=[2.0, 1.0]", "[2]=[2.0, 2.0]");
    }

    @Test
    void sequenceMapRefusesSequencesOfDifferentLengths() {
        GraphProto body = GraphProto.newBuilder().setName("body").addInput(anyShape("e", FLOAT)).addInput(anyShape("f", FLOAT))
                .addNode(node("Add", List.of("e", "f"), List.of("y"))).addOutput(anyShape("y", FLOAT)).build();
        GraphProto.Builder g = abc().addNode(node("SequenceConstruct", List.of("a", "b"), List.of("t")))
                .addNode(NodeProto.newBuilder().setOpType("SequenceMap").setName("map").addInput("s").addInput("t").addOutput("y").addAttribute(graph("body", body)))
                .addOutput(seq("y", FLOAT));
        assertThatThrownBy(() -> run(model(17, g), abcInputs())).isInstanceOf(OnnxFormatException.class)
                .hasMessageContaining("input 1 ('t') has 2 elements, input 0 has 3");
    }

    // ------------------------------------------------------------------------------------------------- optionals

    @Test
    void optionalsHoldAValueOrNothing() {
        AttributeProto type = AttributeProto.newBuilder().setName("type").setType(AttributeProto.AttributeType.TYPE_PROTO)
                .setTp(TypeProto.newBuilder().setTensorType(TypeProto.Tensor.newBuilder().setElemType(FLOAT))).build();
        GraphProto.Builder g = GraphProto.newBuilder().addInput(value("x", FLOAT, 2))
                .addNode(node("Optional", List.of("x"), List.of("some")))
                .addNode(node("Optional", List.of(), List.of("none"), type))
                .addNode(node("OptionalHasElement", List.of("some"), List.of("hasSome")))
                .addNode(node("OptionalHasElement", List.of("none"), List.of("hasNone")))
                .addNode(node("OptionalGetElement", List.of("some"), List.of("got")))
                .addNode(node("Identity", List.of("none"), List.of("stillNone")))
                .addOutput(anyShape("hasSome", 9)).addOutput(anyShape("hasNone", 9)).addOutput(anyShape("got", FLOAT)).addOutput(opt("stillNone", FLOAT));
        List<OnnxValue> out = run(model(16, g), Map.of("x", Tensor.of(new float[] {7, 8}, 2)));
        assertThat(tensor(out.get(0))).containsExactly(1);
        assertThat(tensor(out.get(1))).containsExactly(0);
        assertThat(tensor(out.get(2))).containsExactly(7, 8);
        assertThat(out.get(3)).isEqualTo(new OnnxValue.OptionalValue(null));
    }

    @Test
    void gettingTheElementOfAnEmptyOptionalIsAnError() {
        GraphProto.Builder g = GraphProto.newBuilder().addInput(opt("o", FLOAT))
                .addNode(node("OptionalGetElement", List.of("o"), List.of("y"))).addOutput(anyShape("y", FLOAT));
        OnnxModel m = model(16, g);
        assertThatThrownBy(() -> m.runValues(Map.of("o", new OnnxValue.OptionalValue(null)), DeviceRegistry.get("INTERP")))
                .isInstanceOf(OnnxFormatException.class).hasMessageContaining("OptionalGetElement node 'optionalgetelement_y'").hasMessageContaining("empty optional");
        // a graph input of the wrong kind is the caller's error, named
        assertThatThrownBy(() -> m.runValues(Map.of("o", new OnnxValue.TensorValue(Tensor.of(new float[] {1}, 1))), DeviceRegistry.get("INTERP")))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("input 'o'").hasMessageContaining("optional<");
    }

    // ------------------------------------------------------------------------------------------------- If, Loop

    @Test
    void ifGivesTheSequenceOfTheBranchItsConditionPicks() {
        GraphProto then = GraphProto.newBuilder().setName("then").addNode(node("SequenceConstruct", List.of("a"), List.of("ts"))).addOutput(seq("ts", FLOAT)).build();
        GraphProto otherwise = GraphProto.newBuilder().setName("else").addNode(node("SequenceConstruct", List.of("b", "b"), List.of("es")))
                .addOutput(seq("es", FLOAT)).build();
        GraphProto.Builder g = GraphProto.newBuilder().addInput(value("cond", 9)).addInput(value("a", FLOAT, 1)).addInput(value("b", FLOAT, 1))
                .addNode(node("If", List.of("cond"), List.of("y"), graph("then_branch", then), graph("else_branch", otherwise))).addOutput(seq("y", FLOAT));
        OnnxModel m = model(13, g);
        Tensor a = Tensor.of(new float[] {1}, 1), b = Tensor.of(new float[] {2}, 1);
        assertThat(elements(run(m, Map.of("cond", Tensor.of(new boolean[] {true}).reshape(), "a", a, "b", b)).getFirst())).containsExactly("[1]=[1.0]");
        assertThat(elements(run(m, Map.of("cond", Tensor.of(new boolean[] {false}).reshape(), "a", a, "b", b)).getFirst()))
                .containsExactly("[1]=[2.0]", "[1]=[2.0]");
    }

    @Test
    void ifCarryingASequenceIsRefusedInAPlanWhoseConditionIsAnInput() {
        // the sequence's branch depends on the condition's value: a prepared plan knows it only when it runs
        GraphProto then = GraphProto.newBuilder().setName("then").addNode(node("SequenceConstruct", List.of("a"), List.of("ts"))).addOutput(seq("ts", FLOAT)).build();
        GraphProto otherwise = GraphProto.newBuilder().setName("else").addNode(node("SequenceConstruct", List.of("a", "a"), List.of("es")))
                .addOutput(seq("es", FLOAT)).build();
        GraphProto.Builder g = GraphProto.newBuilder().addInput(value("cond", 9)).addInput(value("a", FLOAT, 1))
                .addNode(node("If", List.of("cond"), List.of("s"), graph("then_branch", then), graph("else_branch", otherwise)))
                .addNode(node("ConcatFromSequence", List.of("s"), List.of("y"), i("axis", 0))).addOutput(anyShape("y", FLOAT));
        OnnxModel m = model(13, g);
        assertThatThrownBy(() -> m.prepare(DeviceRegistry.get("INTERP"), Map.of())).isInstanceOf(UnsupportedOnnxOpException.class)
                .hasMessageContaining("If").hasMessageContaining("'cond'");
        // run builds it for the condition given: the else branch's two elements joined
        List<OnnxValue> out = run(m, Map.of("cond", Tensor.of(new boolean[] {false}).reshape(), "a", Tensor.of(new float[] {4}, 1)));
        assertThat(tensor(out.getFirst())).containsExactly(4, 4);
    }

    @Test
    void loopCarryingASequenceIsBuiltOncePerIteration() {
        // the body appends its iteration number (a constant in each copy: SequenceAt and Slice of it are known) times 10
        GraphProto body = GraphProto.newBuilder().setName("body").addInput(value("i", INT64)).addInput(value("c", 9)).addInput(seq("acc", INT64))
                .addInitializer(ints("ten", new long[] {10}))
                .addNode(node("Identity", List.of("c"), List.of("c_out")))
                .addNode(node("Mul", List.of("i", "ten"), List.of("v")))
                .addNode(node("SequenceInsert", List.of("acc", "v"), List.of("acc_out")))
                .addOutput(value("c_out", 9)).addOutput(seq("acc_out", INT64)).build();
        GraphProto.Builder g = GraphProto.newBuilder().addInput(value("x", INT64, 1)).addInitializer(ints("m", new long[] {3}))
                .addNode(node("SequenceConstruct", List.of("x"), List.of("init")))
                .addNode(NodeProto.newBuilder().setOpType("Loop").setName("loop").addInput("m").addInput("").addInput("init").addOutput("all")
                        .addAttribute(graph("body", body)))
                .addOutput(seq("all", INT64));
        List<OnnxValue> out = run(model(13, g), Map.of("x", Tensor.of(new long[] {-1}, 1)));
        assertThat(elements(out.getFirst())).containsExactly("[1]=[-1.0]", "[]=[0.0]", "[]=[10.0]", "[]=[20.0]");
    }

    // ------------------------------------------------------------------------------------------------- loading and the public API

    @Test
    void aTensorOperatorReadingAnOptionalNamesIt() {
        GraphProto.Builder g = GraphProto.newBuilder().addInput(opt("o", FLOAT)).addInput(value("x", FLOAT, 1))
                .addNode(node("If", List.of("o"), List.of("y"),
                        graph("then_branch", GraphProto.newBuilder().setName("t").addNode(node("Identity", List.of("x"), List.of("t1"))).addOutput(anyShape("t1", FLOAT)).build()),
                        graph("else_branch", GraphProto.newBuilder().setName("e").addNode(node("Identity", List.of("x"), List.of("e1"))).addOutput(anyShape("e1", FLOAT)).build())))
                .addOutput(anyShape("y", FLOAT));
        OnnxModel m = model(16, g);
        assertThatThrownBy(() -> m.runValues(Map.of("o", new OnnxValue.OptionalValue(null), "x", new OnnxValue.TensorValue(Tensor.of(new float[] {1}, 1))),
                DeviceRegistry.get("INTERP"))).isInstanceOf(OnnxFormatException.class).hasMessageContaining("If node 'if_y'")
                .hasMessageContaining("input 0 ('o') is an empty optional, expected a tensor");
    }

    @Test
    void theTensorApiRefusesSequenceOutputsNamingThem() {
        OnnxModel m = model(13, abc().addOutput(seq("s", FLOAT)));
        assertThat(m.outputs().getFirst().kind()).isEqualTo(ValueInfo.Kind.SEQUENCE);
        assertThat(m.outputs().getFirst().toString()).isEqualTo("s: sequence<f32[unknown shape]>");
        assertThatThrownBy(() -> m.run(abcInputs())).isInstanceOf(UnsupportedOperationException.class).hasMessageContaining("output 's'");
    }

    @Test
    void sequencesOfMapsAreRefusedWhenTheModelLoads() {
        ValueInfoProto mapSeq = ValueInfoProto.newBuilder().setName("m").setType(TypeProto.newBuilder().setSequenceType(TypeProto.Sequence.newBuilder()
                .setElemType(TypeProto.newBuilder().setMapType(TypeProto.Map.newBuilder().setKeyType(INT64)
                        .setValueType(TypeProto.newBuilder().setTensorType(TypeProto.Tensor.newBuilder().setElemType(FLOAT))))))).build();
        GraphProto.Builder g = GraphProto.newBuilder().addInput(mapSeq).addNode(node("Identity", List.of("m"), List.of("y"))).addOutput(seq("y", FLOAT));
        ModelProto proto = OnnxTestModels.model(13, g);
        assertThatThrownBy(() -> OnnxModel.fromProto(proto, "test")).isInstanceOf(UnsupportedOnnxOpException.class)
                .hasMessageContaining("'m'").hasMessageContaining("sequence of map");
    }
}

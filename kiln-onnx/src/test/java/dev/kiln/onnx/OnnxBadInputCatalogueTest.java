package dev.kiln.onnx;

import com.google.protobuf.ByteString;
import dev.kiln.Tensor;
import dev.kiln.catalogue.BadInput;
import dev.kiln.types.DType;
import onnx.Onnx.AttributeProto;
import onnx.Onnx.GraphProto;
import onnx.Onnx.ModelProto;
import onnx.Onnx.NodeProto;
import onnx.Onnx.OperatorSetIdProto;
import onnx.Onnx.TensorProto;
import onnx.Onnx.TensorShapeProto;
import onnx.Onnx.TypeProto;
import onnx.Onnx.ValueInfoProto;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;

import static dev.kiln.catalogue.BadInput.bad;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * The ONNX importer's bad-input catalogue (issue 13): wrong feeds to {@link OnnxModel#run} and {@link OnnxPlan}, and
 * models built by hand with the protobuf classes: missing inputs, attributes of the wrong type or length, bad shapes and
 * dtypes, huge dims, cycles, duplicate names, opsets. One row per case, checked by {@link BadInput#check()}: an
 * {@link OnnxFormatException} (or {@link UnsupportedOnnxOpException}, or the plain {@link IllegalArgumentException} that
 * {@code run} documents for feeds) on one line naming the node, its operator and what was expected. Models run on INTERP
 * with zero inputs; their outputs are built, not computed.
 */
class OnnxBadInputCatalogueTest {
    private static final Class<OnnxFormatException> FORMAT = OnnxFormatException.class;
    private static final Class<UnsupportedOnnxOpException> UNSUPPORTED = UnsupportedOnnxOpException.class;
    private static final Class<IllegalArgumentException> IAE = IllegalArgumentException.class;
    private static final int F32 = 1, I64 = 7, STRING = 8, BOOL = 9;

    // ---- building models --------------------------------------------------------------------------------------

    private static ValueInfoProto value(String name, int elemType, Object... dims) {
        TypeProto.Tensor.Builder t = TypeProto.Tensor.newBuilder().setElemType(elemType);
        TensorShapeProto.Builder s = TensorShapeProto.newBuilder();
        for (Object d : dims) {
            if (d instanceof String p) s.addDim(TensorShapeProto.Dimension.newBuilder().setDimParam(p));
            else s.addDim(TensorShapeProto.Dimension.newBuilder().setDimValue(((Number) d).longValue()));
        }
        t.setShape(s);
        return ValueInfoProto.newBuilder().setName(name).setType(TypeProto.newBuilder().setTensorType(t)).build();
    }

    private static NodeProto node(String op, String name, List<String> in, List<String> out, AttributeProto... attrs) {
        return NodeProto.newBuilder().setOpType(op).setName(name).addAllInput(in).addAllOutput(out).addAllAttribute(Arrays.asList(attrs)).build();
    }

    private static NodeProto node(String op, List<String> in, AttributeProto... attrs) { return node(op, "n", in, List.of("y"), attrs); }

    private static AttributeProto ints(String name, long... v) {
        AttributeProto.Builder a = AttributeProto.newBuilder().setName(name).setType(AttributeProto.AttributeType.INTS);
        for (long x : v) a.addInts(x);
        return a.build();
    }

    private static AttributeProto integer(String name, long v) {
        return AttributeProto.newBuilder().setName(name).setType(AttributeProto.AttributeType.INT).setI(v).build();
    }

    private static AttributeProto real(String name, float v) {
        return AttributeProto.newBuilder().setName(name).setType(AttributeProto.AttributeType.FLOAT).setF(v).build();
    }

    private static AttributeProto text(String name, String v) {
        return AttributeProto.newBuilder().setName(name).setType(AttributeProto.AttributeType.STRING).setS(ByteString.copyFromUtf8(v)).build();
    }

    private static TensorProto longs(String name, long... v) {
        TensorProto.Builder t = TensorProto.newBuilder().setName(name).setDataType(I64).addDims(v.length);
        for (long x : v) t.addInt64Data(x);
        return t.build();
    }

    private static TensorProto floats(String name, long[] dims, int count) {
        TensorProto.Builder t = TensorProto.newBuilder().setName(name).setDataType(F32);
        for (long d : dims) t.addDims(d);
        for (int i = 0; i < count; i++) t.addFloatData(i);
        return t.build();
    }

    private static ModelProto model(long opset, GraphProto.Builder g) {
        return ModelProto.newBuilder().setIrVersion(8).addOpsetImport(OperatorSetIdProto.newBuilder().setVersion(opset)).setGraph(g).build();
    }

    /** A graph with input x (f32 of {@code dims}), output y, and the given initializers and nodes; opset 13. */
    private static ModelProto on(long[] dims, List<TensorProto> inits, NodeProto... nodes) {
        Object[] d = Arrays.stream(dims).boxed().toArray();
        GraphProto.Builder g = GraphProto.newBuilder().setName("g").addInput(value("x", F32, d)).addOutput(value("y", F32)).addAllInitializer(inits);
        for (NodeProto n : nodes) g.addNode(n);
        return model(13, g);
    }

    private static long[] d(long... dims) { return dims; }

    /** Loads {@code m} and builds it on a zero x of its declared (fixed) shape. */
    private static void build(ModelProto m) {
        OnnxModel model = OnnxModel.fromProto(m, "bad.onnx");
        Map<String, Tensor> in = new HashMap<>();
        for (ValueInfo v : model.inputs()) {
            int[] dims = v.dims().stream().mapToInt(x -> x.isFixed() ? (int) x.size() : 1).toArray();
            in.put(v.name(), Tensor.zeros(v.dtype(), dims).to("INTERP"));
        }
        model.run(in);
    }

    private static BadInput model(String what, Class<? extends Throwable> type, ModelProto m, String... parts) {
        return bad(what, type, () -> build(m), parts);
    }

    // ---- fixtures for feeds ------------------------------------------------------------------------------------

    /** y = relu(x W) with x [N, 4], W [4, 3]. */
    private static OnnxModel symbolic;
    private static OnnxModel closed;
    private static OnnxPlan plan;

    private static ModelProto symbolicModel() {
        GraphProto.Builder g = GraphProto.newBuilder().setName("g").addInput(value("x", F32, "N", 4)).addOutput(value("y", F32, "N", 3))
                .addInitializer(floats("W", d(4, 3), 12)).addNode(node("MatMul", "mm", List.of("x", "W"), List.of("m")))
                .addNode(node("Relu", "relu", List.of("m"), List.of("y")));
        return model(13, g);
    }

    /** z = a + b with a [N, 2] and b [N, 2]: two inputs sharing a symbolic dimension. */
    private static OnnxModel twoInputs;

    @BeforeAll
    static void fixtures() {
        symbolic = OnnxModel.fromProto(symbolicModel(), "sym.onnx");
        closed = OnnxModel.fromProto(symbolicModel(), "closed.onnx");
        closed.close();
        plan = symbolic.prepare(dev.kiln.runtime.DeviceRegistry.get("INTERP"), Map.of("N", 4));
        GraphProto.Builder g = GraphProto.newBuilder().setName("g").addInput(value("a", F32, "N", 2)).addInput(value("b", F32, "N", 2))
                .addOutput(value("z", F32)).addNode(node("Add", "add", List.of("a", "b"), List.of("z")));
        twoInputs = OnnxModel.fromProto(model(13, g), "two.onnx");
    }

    @AfterAll
    static void close() { plan.close(); }

    private static Tensor zeros(DType t, int... dims) { return Tensor.zeros(t, dims).to("INTERP"); }

    private static Tensor zeros(int... dims) { return zeros(DType.F32, dims); }

    static Stream<BadInput> cases() {
        return Stream.concat(feeds(), models());
    }

    static Stream<BadInput> feeds() {
        return Stream.of(
                bad("run: an unknown input", IAE, () -> symbolic.run(Map.of("x", zeros(2, 4), "q", zeros(1))),
                        "run: sym.onnx has no input 'q'; its inputs are [x]"),
                bad("run: a missing input", IAE, () -> symbolic.run(Map.of()), "run: input 'x' (x: f32[N, 4]) of sym.onnx is missing"),
                bad("run: another dtype", IAE, () -> symbolic.run(Map.of("x", zeros(DType.F64, 2, 4))), "run: input 'x' must be f32, got f64"),
                bad("run: another rank", IAE, () -> symbolic.run(Map.of("x", zeros(8))), "run: input 'x' must have shape [N, 4], got [8]"),
                bad("run: another fixed dim", IAE, () -> symbolic.run(Map.of("x", zeros(2, 5))),
                        "run: input 'x' must have shape [N, 4], got [2, 5] (axis 1)"),
                bad("run: a symbolic dim of two sizes", IAE, () -> twoInputs.run(Map.of("a", zeros(2, 2), "b", zeros(3, 2))),
                        "run: dimension 'N' is 2 in one input and 3 in input 'b' (axis 0)"),
                bad("run: a closed model", IllegalStateException.class, () -> closed.run(Map.of("x", zeros(2, 4))),
                        "run: closed.onnx has been closed"),
                bad("prepare: a closed model", IllegalStateException.class, () -> closed.prepare(Tensor.defaultDevice(), Map.of("N", 4)),
                        "prepare: closed.onnx has been closed"),
                bad("prepare: an unknown dimension", IAE, () -> symbolic.prepare(Tensor.defaultDevice(), Map.of("N", 4, "T", 2)),
                        "prepare: sym.onnx has no symbolic input dimension 'T'; its symbolic dimensions are [N]"),
                bad("prepare: no maximum for a dimension", IAE, () -> symbolic.prepare(Tensor.defaultDevice(), Map.of()),
                        "prepare: input 'x' (x: f32[N, 4]) of sym.onnx has the symbolic dimension 'N'; give its maximum size"),
                bad("prepare: a maximum of 0", IAE, () -> symbolic.prepare(Tensor.defaultDevice(), Map.of("N", 0)),
                        "prepare: the maximum of dimension 'N' must be at least 1, got 0"),
                bad("prepare: an input without a shape", IAE, () -> OnnxModel.fromProto(model(13, GraphProto.newBuilder()
                        .addInput(ValueInfoProto.newBuilder().setName("x").setType(TypeProto.newBuilder()
                                .setTensorType(TypeProto.Tensor.newBuilder().setElemType(F32))))
                        .addOutput(value("y", F32)).addNode(node("Relu", List.of("x")))), "noshape.onnx")
                        .prepare(Tensor.defaultDevice(), Map.of()), "prepare: input 'x' of noshape.onnx declares no shape"),
                bad("prepare: an open dimension without a name", IAE, () -> OnnxModel.fromProto(model(13, GraphProto.newBuilder()
                        .addInput(ValueInfoProto.newBuilder().setName("x").setType(TypeProto.newBuilder().setTensorType(TypeProto.Tensor.newBuilder()
                                .setElemType(F32).setShape(TensorShapeProto.newBuilder().addDim(TensorShapeProto.Dimension.newBuilder())))))
                        .addOutput(value("y", F32)).addNode(node("Relu", List.of("x")))), "open.onnx")
                        .prepare(Tensor.defaultDevice(), Map.of()),
                        "prepare: axis 0 of input 'x' (x: f32[?]) of open.onnx has neither a size nor a name; only named symbolic dimensions can be given a maximum"),
                bad("bind: a size over the maximum", IAE, () -> plan.bind(Map.of("x", zeros(5, 4))),
                        "run: dimension 'N' is 5, the plan was prepared for 1 to 4"),
                bad("bind: a size of 0", IAE, () -> plan.bind(Map.of("x", zeros(0, 4))), "run: dimension 'N' is 0, the plan was prepared for 1 to 4"),
                bad("bind: another dtype", IAE, () -> plan.bind(Map.of("x", zeros(DType.I64, 2, 4))), "run: input 'x' must be f32, got i64"),
                bad("bind: an unknown input", IAE, () -> plan.bind(Map.of("x", zeros(2, 4), "z", zeros(1))),
                        "run: sym.onnx has no input 'z'; its inputs are [x]"),
                bad("outputDims: an output past the end", IndexOutOfBoundsException.class, () -> {
                    plan.bind(Map.of("x", zeros(2, 4)));
                    plan.outputDims(1);
                }, "outputDims: output 1 of sym.onnx, which has 1 outputs [y]"),
                bad("execute: nothing bound", IllegalStateException.class, () -> {
                    try (OnnxPlan p = symbolic.prepare(dev.kiln.runtime.DeviceRegistry.get("INTERP"), Map.of("N", 2))) {
                        p.execute();
                    }
                }, "execute: no inputs bound yet; call bind or run first"),
                bad("outputDims: nothing bound", IllegalStateException.class, () -> {
                    try (OnnxPlan p = symbolic.prepare(dev.kiln.runtime.DeviceRegistry.get("INTERP"), Map.of("N", 2))) {
                        p.outputDims(0);
                    }
                }, "outputDims: no inputs bound yet"),
                bad("load: a missing file", FORMAT, () -> OnnxModel.load(java.nio.file.Path.of("no/such/model.onnx")),
                        "no/such/model.onnx: cannot read the file (no such file)"),
                bad("load: a directory", FORMAT, () -> OnnxModel.load(java.nio.file.Path.of(".")), ".: cannot read the file (Is a directory)"),
                bad("parse: bytes that are no model", FORMAT, () -> OnnxModel.parse(new byte[] {8, (byte) 0xff}, "x.onnx"),
                        "x.onnx: not a valid ONNX ModelProto (While parsing a protocol message, the input ended unexpectedly in the middle of a field.  This could mean either that the input has been truncated or that an embedded message misreported its own length.)"),
                bad("parse: no bytes at all", FORMAT, () -> OnnxModel.parse(new byte[0], "x.onnx"),
                        "x.onnx: the model has no graph (empty or not an ONNX model)"));
    }

    static Stream<BadInput> models() {
        long[] x23 = d(2, 3), x1388 = d(1, 3, 8, 8);
        return Stream.of(
                // ---- inputs: missing, extra, undefined
                model("Conv without its weight", FORMAT, on(x1388, List.of(), node("Conv", List.of("x"))),
                        "bad.onnx: node 'n' (Conv) at opset 13 takes 2 to 3 inputs and input 1 is required, the node gives 1 [x]"),
                model("MatMul with one input", FORMAT, on(x23, List.of(), node("MatMul", List.of("x"))),
                        "bad.onnx: node 'n' (MatMul) at opset 13 takes 2 inputs and input 1 is required, the node gives 1 [x]"),
                model("Add with three inputs", FORMAT, on(x23, List.of(), node("Add", List.of("x", "x", "x"))),
                        "bad.onnx: node 'n' (Add) at opset 13 takes 2 inputs, the node gives 3 [x, x, x]"),
                model("Where with two inputs", FORMAT, on(x23, List.of(), node("Where", List.of("x", "x"))),
                        "bad.onnx: node 'n' (Where) at opset 13 takes 3 inputs and input 2 is required, the node gives 2 [x, x]"),
                model("Gemm with one input", FORMAT, on(x23, List.of(), node("Gemm", List.of("x"))),
                        "bad.onnx: node 'n' (Gemm) at opset 13 takes 2 to 3 inputs and input 1 is required, the node gives 1 [x]"),
                model("Clip with four inputs", FORMAT, on(x23, List.of(), node("Clip", List.of("x", "", "", "x"))),
                        "bad.onnx: node 'n' (Clip) at opset 13 takes 1 to 3 inputs, the node gives 4 [x, , , x]"),
                model("Concat with no input", FORMAT, on(x23, List.of(), node("Concat", List.of(), integer("axis", 0))),
                        "bad.onnx: node 'n' (Concat) at opset 13 takes at least 1 input and input 0 is required, the node gives 0 []"),
                model("Expand without its shape", FORMAT, on(x23, List.of(), node("Expand", List.of("x"))),
                        "bad.onnx: node 'n' (Expand) at opset 13 takes 2 inputs and input 1 is required, the node gives 1 [x]"),
                model("Relu of an undefined value", FORMAT, on(x23, List.of(), node("Relu", List.of("ghost"))),
                        "bad.onnx: node 'n' (Relu) reads 'ghost' (input 0), which no earlier node, input or initializer defines"),

                // ---- attributes: type, presence, length, range
                model("Softmax axis as a float", FORMAT, on(x23, List.of(), node("Softmax", List.of("x"), real("axis", 1f))),
                        "bad.onnx node 'n' (Softmax): attribute axis is FLOAT, expected INT"),
                model("Transpose perm as one int", FORMAT, on(x23, List.of(), node("Transpose", List.of("x"), integer("perm", 1))),
                        "bad.onnx node 'n' (Transpose): attribute perm is INT, expected INTS"),
                model("Conv strides as a string", FORMAT, on(x1388, List.of(floats("W", d(2, 3, 3, 3), 54)), node("Conv", List.of("x", "W"),
                        text("strides", "2"))), "bad.onnx node 'n' (Conv): attribute strides is STRING, expected INTS"),
                model("Cast to as a string", FORMAT, on(x23, List.of(), node("Cast", List.of("x"), text("to", "float"))),
                        "bad.onnx node 'n' (Cast): attribute to is STRING, expected INT"),
                model("Cast to an unknown dtype", UNSUPPORTED, on(x23, List.of(), node("Cast", List.of("x"), integer("to", 999))),
                        "unsupported ONNX op Cast (domain ai.onnx, opset 13) at node 'n': cast to code 999 is not supported (no Kiln dtype)"),
                model("LeakyRelu alpha as a string", FORMAT, on(x23, List.of(), node("LeakyRelu", List.of("x"), text("alpha", "0.1"))),
                        "bad.onnx node 'n' (LeakyRelu): attribute alpha is STRING, expected FLOAT"),
                model("Gather axis past the rank", FORMAT, on(x23, List.of(longs("i", 0)), node("Gather", List.of("x", "i"), integer("axis", 2))),
                        "bad.onnx: Gather node 'n': axis 2 is out of range for rank 2"),
                model("Concat without its axis", FORMAT, on(x23, List.of(), node("Concat", List.of("x", "x"))),
                        "bad.onnx: node 'n' (Concat) at opset 13 requires the attribute axis, which the node lacks; it has []"),
                model("Concat axis past the rank", FORMAT, on(x23, List.of(), node("Concat", List.of("x", "x"), integer("axis", 5))),
                        "bad.onnx: Concat node 'n': axis 5 is out of range for rank 2"),
                model("Flatten axis past the rank", FORMAT, on(x23, List.of(), node("Flatten", List.of("x"), integer("axis", 3))),
                        "bad.onnx: Flatten node 'n': axis 3 out of range for rank 2"),
                model("Transpose perm too short", FORMAT, on(x23, List.of(), node("Transpose", List.of("x"), ints("perm", 0))),
                        "bad.onnx: Transpose node 'n': permute: order [0] has 1 axes, shape [2, 3] has 2"),
                model("Transpose perm repeated", FORMAT, on(x23, List.of(), node("Transpose", List.of("x"), ints("perm", 1, 1))),
                        "bad.onnx: Transpose node 'n': permute: axis 1 repeated in [1, 1]"),
                model("Squeeze of an axis of size 3", FORMAT, on(x23, List.of(longs("a", 1)), node("Squeeze", List.of("x", "a"))),
                        "bad.onnx: Squeeze node 'n': squeeze: axis 1 of shape [2, 3] has size 3, not 1"),
                model("Unsqueeze of an axis twice", FORMAT, on(x23, List.of(longs("a", 0, 0)), node("Unsqueeze", List.of("x", "a"))),
                        "bad.onnx: Unsqueeze node 'n': axis 0 repeated in [0, 0]"),
                model("ReduceSum over an axis past the rank", FORMAT, on(x23, List.of(longs("a", 4)), node("ReduceSum", List.of("x", "a"))),
                        "bad.onnx: ReduceSum node 'n': axis 4 is out of range for rank 2"),
                model("Split sizes that do not sum to the axis", FORMAT, on(x23, List.of(longs("s", 1, 1)), NodeProto.newBuilder().setOpType("Split").setName("n")
                        .addInput("x").addInput("s").addOutput("y").addOutput("y2").addAttribute(integer("axis", 1)).build()),
                        "bad.onnx: Split node 'n': split: sizes [1, 1] do not add up to axis 1 of [2, 3]"),
                model("Softmax axis past the rank", FORMAT, on(x23, List.of(), node("Softmax", List.of("x"), integer("axis", 2))),
                        "bad.onnx: Softmax node 'n': axis 2 is out of range for rank 2"),
                model("ArgMax axis before -rank", FORMAT, on(x23, List.of(), node("ArgMax", List.of("x"), integer("axis", -3))),
                        "bad.onnx: ArgMax node 'n': argmax: axis -3 out of range for shape [2, 3] (rank 2)"),
                model("DepthToSpace of blocksize 0", FORMAT, on(d(1, 4, 2, 2), List.of(), node("DepthToSpace", List.of("x"), integer("blocksize", 0))),
                        "bad.onnx: DepthToSpace node 'n': depthToSpace: blockSize must be > 0, got 0"),
                model("DepthToSpace of an unknown mode", FORMAT, on(d(1, 4, 2, 2), List.of(), node("DepthToSpace", List.of("x"), integer("blocksize", 2),
                        text("mode", "XYZ"))), "bad.onnx: DepthToSpace node 'n': depthToSpace: unknown mode 'XYZ'; valid are 'DCR', 'CRD'"),
                model("Pad of an unknown mode", UNSUPPORTED, on(x23, List.of(longs("p", 0, 0, 0, 0)), node("Pad", List.of("x", "p"), text("mode", "wrap"))),
                        "unsupported ONNX op Pad (domain ai.onnx, opset 13) at node 'n': pad mode 'wrap' is not supported"),
                model("Resize of an unknown mode", UNSUPPORTED, on(x1388, List.of(TensorProto.newBuilder().setName("s").setDataType(F32).addDims(4)
                        .addFloatData(1).addFloatData(1).addFloatData(2).addFloatData(2).build()), node("Resize", List.of("x", "", "s"),
                        text("mode", "bicubical"))), "unsupported ONNX op Resize (domain ai.onnx, opset 13) at node 'n': mode 'bicubical' is not supported"),
                model("Conv with 3 pads for 2 axes", FORMAT, on(x1388, List.of(floats("W", d(2, 3, 3, 3), 54)), node("Conv", List.of("x", "W"),
                        ints("pads", 1, 1, 1))), "bad.onnx: Conv node 'n': pads [1, 1, 1] must have 4 values"),
                model("Conv groups that do not divide the channels", FORMAT, on(x1388, List.of(floats("W", d(2, 1, 3, 3), 18)), node("Conv", List.of("x",
                        "W"),
                        integer("group", 2))), "bad.onnx: Conv node 'n': conv: groups 2 does not divide the 3 channels of input [1, 3, 8, 8]"),
                model("MaxPool of stride 0", FORMAT, on(x1388, List.of(), node("MaxPool", List.of("x"), ints("kernel_shape", 2, 2), ints("strides", 0, 1))),
                        "bad.onnx: MaxPool node 'n': maxPool: strides must be positive, got [0, 1]"),
                model("AveragePool of a kernel larger than the input", FORMAT, on(x1388, List.of(), node("AveragePool", List.of("x"), ints("kernel_shape", 9, 9))),
                        "bad.onnx: AveragePool node 'n': avgPool: kernel [9, 9] (dilations [1, 1]) does not fit input [1, 3, 8, 8] padded by [0, 0, 0, 0] (spatial axis 0)"),
                model("Einsum of an invalid equation", FORMAT, on(x23, List.of(), node("Einsum", List.of("x"), text("equation", "i1->i"))),
                        "bad.onnx: Einsum node 'n': einsum: invalid subscript '1' in 'i1->i'"),
                model("Gemm with transA on mismatched dims", FORMAT, on(x23, List.of(floats("B", d(3, 4), 12)), node("Gemm", List.of("x", "B"),
                        integer("transA", 1))), "bad.onnx: Gemm node 'n': matmul: [3, 2] @ [3, 4]: inner dimensions 2 and 3 differ"),
                model("LRN of size 0", FORMAT, on(x1388, List.of(), node("LRN", List.of("x"), integer("size", 0))),
                        "bad.onnx: LRN node 'n': lrn: size must be > 0, got 0"),
                model("TopK of k past the axis", FORMAT, on(x23, List.of(longs("k", 7)), NodeProto.newBuilder().setOpType("TopK").setName("n")
                        .addInput("x").addInput("k").addOutput("y").addOutput("i").build()),
                        "bad.onnx: TopK node 'n': topk: k 7 out of range for axis -1 of shape [2, 3] (size 3)"),
                model("CumSum over an axis past the rank", FORMAT, on(x23, List.of(longs("a", 2)), node("CumSum", List.of("x", "a"))),
                        "bad.onnx: CumSum node 'n': cumsum: axis 2 out of range for shape [2, 3] (rank 2)"),
                model("Trilu of a vector", FORMAT, model(14, GraphProto.newBuilder().addInput(value("x", F32, 4)).addOutput(value("y", F32))
                        .addNode(node("Trilu", List.of("x")))), "bad.onnx: Trilu node 'n': triu: needs at least 2 axes, shape is [4]"),

                // ---- shapes and values the nodes get
                model("Reshape to two -1", FORMAT, on(x23, List.of(longs("s", -1, -1)), node("Reshape", List.of("x", "s"))),
                        "bad.onnx: Reshape node 'n': reshape: more than one -1 in [-1, -1]"),
                model("Reshape to another element count", FORMAT, on(x23, List.of(longs("s", 4, 2)), node("Reshape", List.of("x", "s"))),
                        "bad.onnx: Reshape node 'n': reshape: cannot reshape [2, 3] (6 elements) to [4, 2] (8 elements)"),
                model("Expand to an incompatible shape", FORMAT, on(x23, List.of(longs("s", 2, 4)), node("Expand", List.of("x", "s"))),
                        "bad.onnx: Expand node 'n': cannot expand [2, 3] to [2, 4]"),
                model("Tile with repeats of the wrong length", FORMAT, on(x23, List.of(longs("r", 2)), node("Tile", List.of("x", "r"))),
                        "bad.onnx: Tile node 'n': repeat: 1 repeats for shape [2, 3] of rank 2"),
                model("Tile with a negative repeat", FORMAT, on(x23, List.of(longs("r", 1, -2)), node("Tile", List.of("x", "r"))),
                        "bad.onnx: Tile node 'n': repeat: negative count -2"),
                model("Slice with step 0", FORMAT, on(x23, List.of(longs("s", 0), longs("e", 2), longs("a", 1), longs("st", 0)),
                        node("Slice", List.of("x", "s", "e", "a", "st"))), "bad.onnx: Slice node 'n': step 0 on axis 1"),
                model("Range with delta 0", FORMAT, on(x23, List.of(longs("s", 0), longs("l", 5), longs("dd", 0)), node("Range", List.of("s", "l", "dd"))),
                        "bad.onnx: Range node 'n': range: delta must not be 0"),
                model("OneHot of a negative depth", FORMAT, on(x23, List.of(longs("i", 0, 1), longs("dp", -3), floats("v", d(2), 2)),
                        node("OneHot", List.of("i", "dp", "v"))), "bad.onnx: OneHot node 'n': oneHot: depth must be > 0, got -3"),
                model("ConstantOfShape of a negative dim", FORMAT, on(x23, List.of(longs("s", 2, -1)), node("ConstantOfShape", List.of("s"))),
                        "bad.onnx: ConstantOfShape node 'n': shape [2, -1] has a negative dimension -1"),
                model("MatMul of mismatched inner dims", FORMAT, on(x23, List.of(floats("B", d(2, 4), 8)), node("MatMul", List.of("x", "B"))),
                        "bad.onnx: MatMul node 'n': matmul: [2, 3] @ [2, 4]: inner dimensions 3 and 2 differ"),
                model("Add of shapes that do not broadcast", FORMAT, on(x23, List.of(floats("B", d(4), 4)), node("Add", List.of("x", "B"))),
                        "bad.onnx: Add node 'n': add: shapes [2, 3] and [4] cannot broadcast (axis -1: 3 vs 4)"),
                model("Where of a float condition", FORMAT, on(x23, List.of(), node("Where", List.of("x", "x", "x"))),
                        "bad.onnx: Where node 'n': condition must be bool, got f32 [2, 3]"),
                model("Constant without a value", UNSUPPORTED, on(x23, List.of(), node("Constant", "n", List.of(), List.of("y"))),
                        "unsupported ONNX op Constant (domain ai.onnx, opset 13) at node 'n': Constant without a supported value attribute"),
                model("Constant with two values", FORMAT, on(x23, List.of(), node("Constant", "n", List.of(), List.of("y"), integer("value_int", 1),
                        real("value_float", 1f))), "bad.onnx: Constant node 'n': expected exactly one value attribute, got [value_float, value_int]"),

                // ---- dtypes and initializers
                model("an initializer of an undefined dtype", UNSUPPORTED, on(x23, List.of(TensorProto.newBuilder().setName("w").setDataType(0).addDims(1).build()),
                        node("Add", List.of("x", "w"))), "unsupported ONNX value bad.onnx initializer w (tensor w): element type UNDEFINED has no Kiln dtype"),
                model("an initializer of dtype 999", UNSUPPORTED, on(x23, List.of(TensorProto.newBuilder().setName("w").setDataType(999).addDims(1).build()),
                        node("Add", List.of("x", "w"))), "unsupported ONNX value bad.onnx initializer w (tensor w): element type code 999 has no Kiln dtype"),
                model("a string initializer", UNSUPPORTED, on(x23, List.of(TensorProto.newBuilder().setName("w").setDataType(STRING).addDims(1)
                        .addStringData(ByteString.copyFromUtf8("a")).build()), node("Add", List.of("x", "w"))),
                        "unsupported ONNX value bad.onnx initializer w (tensor w): element type STRING has no Kiln dtype"),
                model("raw data shorter than the dims", FORMAT, on(x23, List.of(TensorProto.newBuilder().setName("w").setDataType(F32).addDims(4)
                        .setRawData(ByteString.copyFrom(new byte[12])).build()), node("Add", List.of("x", "w"))),
                        "bad.onnx initializer w (tensor w): raw_data has 12 bytes, 4 elements of f32 need 16"),
                model("raw data of a bool initializer past its dims", FORMAT, on(x23, List.of(TensorProto.newBuilder().setName("w").setDataType(BOOL).addDims(2)
                        .setRawData(ByteString.copyFrom(new byte[5])).build()), node("Where", List.of("w", "x", "x"))),
                        "bad.onnx initializer w (tensor w): raw_data has 5 bytes, 2 elements of bool need 2"),
                model("an initializer of 2^62 elements", FORMAT, on(x23, List.of(TensorProto.newBuilder().setName("w").setDataType(F32)
                        .addDims(1L << 31).addDims(1L << 31).build()), node("Add", List.of("x", "w"))),
                        "bad.onnx initializer w (tensor w): dimension 0 is 2147483648, over Kiln's limit of 2^31 - 1"),
                model("an input of an undefined dtype", UNSUPPORTED, model(13, GraphProto.newBuilder().addInput(value("x", 0, 2)).addOutput(value("y", F32))
                        .addNode(node("Relu", List.of("x")))), "unsupported ONNX value 'x': element type UNDEFINED has no Kiln dtype"),
                model("an input of a negative dim", FORMAT, on(d(2, -3), List.of(), node("Relu", List.of("x"))),
                        "bad.onnx: value 'x' has dimension 1 of size -3: expected a size from 0 to 2147483647 or a symbolic name"),
                model("an input of a dim past int", FORMAT, on(d(1L << 33), List.of(), node("Relu", List.of("x"))),
                        "bad.onnx: value 'x' has dimension 0 of size 8589934592: expected a size from 0 to 2147483647 or a symbolic name"),
                model("an output of a negative dim", FORMAT, model(13, GraphProto.newBuilder().addInput(value("x", F32, 2)).addOutput(value("y", F32, -1))
                        .addNode(node("Relu", List.of("x")))),
                        "bad.onnx: value 'y' has dimension 0 of size -1: expected a size from 0 to 2147483647 or a symbolic name"),

                // ---- huge sizes from attributes and constants
                model("Expand to 2^31 x 2^31", FORMAT, on(x23, List.of(longs("s", 1L << 31, 3)), node("Expand", List.of("x", "s"))),
                        "bad.onnx: Expand node 'n': cannot expand [2, 3] to [2147483647, 3]"),
                model("Tile by 2^30", FORMAT, on(x23, List.of(longs("r", 1L << 30, 1L << 30)), node("Tile", List.of("x", "r"))),
                        "bad.onnx: Tile node 'n': repeat of [2, 3] by [1073741824, 1073741824] gives axis 0 the size 2147483648, outside [0, 2147483647]"),
                model("ConstantOfShape of 2^40 elements", FORMAT, on(x23, List.of(longs("s", 1L << 20, 1L << 20)), node("ConstantOfShape", List.of("s"))),
                        "bad.onnx: ConstantOfShape node 'n': output of shape [1048576, 1048576] x f32 needs 4398046511104 bytes (4 TiB), over the memory budget of"),
                model("Reshape to 2^40 elements", FORMAT, on(x23, List.of(longs("s", 1L << 40)), node("Reshape", List.of("x", "s"))),
                        "bad.onnx: Reshape node 'n': a size overflows (integer overflow)"),
                model("Range of 2^40 elements", FORMAT, on(x23, List.of(longs("s", 0), longs("l", 1L << 40), longs("dd", 1)), node("Range", List.of("s", "l", "dd"))),
                        "bad.onnx: Range node 'n': range: 1099511627776 elements from 0 to 1099511627776 by 1 are too many"),

                // ---- the graph: cycles, duplicate names, opsets
                model("a two-node cycle", FORMAT, on(x23, List.of(), node("Relu", "a", List.of("b"), List.of("y")), node("Neg", "b", List.of("y"), List.of("b"))),
                        "bad.onnx: node 'a' (Relu) reads 'b' (input 0), which no earlier node, input or initializer defines"),
                model("a node reading its own output", FORMAT, on(x23, List.of(), node("Relu", "self", List.of("y"), List.of("y"))),
                        "bad.onnx: node 'self' (Relu) reads 'y' (input 0), which no earlier node, input or initializer defines"),
                model("two graph inputs of one name", FORMAT, model(13, GraphProto.newBuilder().addInput(value("x", F32, 2)).addInput(value("x", F32, 3))
                        .addOutput(value("y", F32)).addNode(node("Relu", List.of("x")))), "bad.onnx: graph input 'x' is listed twice"),
                model("one node writing one name twice", FORMAT, on(x23, List.of(), NodeProto.newBuilder().setOpType("Split").setName("n").addInput("x")
                        .addOutput("y").addOutput("y").addAttribute(integer("axis", 1)).build()),
                        "bad.onnx: node 'n' (Split) defines 'y' (output 1), which node 'n' (Split) already defines; every value must be defined once"),
                model("an operator with an empty type", FORMAT, on(x23, List.of(), node("", List.of("x"))), "bad.onnx: node 'n' has no op_type"),
                model("an operator of another domain", UNSUPPORTED, on(x23, List.of(), node("Relu", List.of("x")).toBuilder().setDomain("com.example").build()),
                        "unsupported ONNX op Relu (domain com.example, opset -1) at node 'n': only the domains [ai.onnx, ai.onnx.preview.training] are supported"),
                model("an opset past Kiln's", UNSUPPORTED, model(18, GraphProto.newBuilder().addInput(value("x", F32, 2)).addOutput(value("y", F32))
                        .addNode(node("Relu", List.of("x")))), "unsupported ONNX value ai.onnx opset 18: Kiln maps ai.onnx opsets 1 to 17 only"),
                model("opset 0", UNSUPPORTED, model(0, GraphProto.newBuilder().addInput(value("x", F32, 2)).addOutput(value("y", F32))
                        .addNode(node("Relu", List.of("x")))), "unsupported ONNX value ai.onnx opset 0: Kiln maps ai.onnx opsets 1 to 17 only"),
                model("an If node without its branches", FORMAT, on(x23, List.of(), node("If", List.of("x"))),
                        "bad.onnx: node 'n' (If) at opset 13 requires the attribute then_branch, which the node lacks; it has []"),
                model("a Loop node without its body", FORMAT, on(x23, List.of(), node("Loop", List.of("", "x"))),
                        "bad.onnx: node 'n' (Loop) at opset 13 requires the attribute body, which the node lacks; it has []"),
                model("a sequence input without an element type", FORMAT, model(13, GraphProto.newBuilder().addInput(ValueInfoProto.newBuilder().setName("x")
                        .setType(TypeProto.newBuilder().setSequenceType(TypeProto.Sequence.newBuilder()))).addOutput(value("y", F32))
                        .addNode(node("Relu", List.of("x")))), "bad.onnx: value 'x' is a sequence with no element type"),
                model("an input without a type", FORMAT, model(13, GraphProto.newBuilder().addInput(ValueInfoProto.newBuilder().setName("x"))
                        .addOutput(value("y", F32)).addNode(node("Relu", List.of("x")))), "bad.onnx: value 'x' has no type"),
                model("an initializer without a name", FORMAT, on(x23, List.of(TensorProto.newBuilder().setDataType(F32).addDims(1).addFloatData(1).build()),
                        node("Relu", List.of("x"))), "bad.onnx: an initializer has no name"));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("cases")
    void failsTypedOnOneLine(BadInput c) {
        c.check();
    }

    @Test
    void theCatalogueHoldsDistinctCases() {
        BadInput.assertDistinct(cases().toList(), 100);
    }
}

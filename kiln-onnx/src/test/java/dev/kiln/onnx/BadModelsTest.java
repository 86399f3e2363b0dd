package dev.kiln.onnx;

import com.google.protobuf.ByteString;
import dev.kiln.Tensor;
import onnx.Onnx.AttributeProto;
import onnx.Onnx.GraphProto;
import onnx.Onnx.ModelProto;
import onnx.Onnx.NodeProto;
import onnx.Onnx.OperatorSetIdProto;
import onnx.Onnx.StringStringEntryProto;
import onnx.Onnx.TensorProto;
import onnx.Onnx.TensorShapeProto;
import onnx.Onnx.TypeProto;
import onnx.Onnx.ValueInfoProto;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

import java.util.Arrays;
import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * Malformed models (issue 13's audit: invalid graphs, missing inputs, short attribute lists, wrong ranks, size bombs in
 * initializers, constant out-of-range indices) fail with one {@link OnnxFormatException} naming the node, its operator and
 * what was expected: never a raw index, null-pointer or negative-size exception, an OutOfMemoryError or a wrong answer.
 */
class BadModelsTest {
    private static final int F32 = 1, I64 = 7;

    // ---- building models -------------------------------------------------------------------------------------

    private static ValueInfoProto value(String name, int elemType, long... dims) {
        TensorShapeProto.Builder s = TensorShapeProto.newBuilder();
        for (long d : dims) s.addDim(TensorShapeProto.Dimension.newBuilder().setDimValue(d));
        return ValueInfoProto.newBuilder().setName(name)
                .setType(TypeProto.newBuilder().setTensorType(TypeProto.Tensor.newBuilder().setElemType(elemType).setShape(s))).build();
    }

    private static NodeProto node(String op, String name, List<String> in, List<String> out, AttributeProto... attrs) {
        return NodeProto.newBuilder().setOpType(op).setName(name).addAllInput(in).addAllOutput(out).addAllAttribute(Arrays.asList(attrs)).build();
    }

    private static AttributeProto ints(String name, long... v) {
        AttributeProto.Builder a = AttributeProto.newBuilder().setName(name).setType(AttributeProto.AttributeType.INTS);
        for (long x : v) a.addInts(x);
        return a.build();
    }

    private static AttributeProto floats(String name, float... v) {
        AttributeProto.Builder a = AttributeProto.newBuilder().setName(name).setType(AttributeProto.AttributeType.FLOATS);
        for (float x : v) a.addFloats(x);
        return a.build();
    }

    private static AttributeProto integer(String name, long v) {
        return AttributeProto.newBuilder().setName(name).setType(AttributeProto.AttributeType.INT).setI(v).build();
    }

    private static TensorProto longs(String name, long[] dims, long... v) {
        TensorProto.Builder t = TensorProto.newBuilder().setName(name).setDataType(I64);
        for (long d : dims) t.addDims(d);
        for (long x : v) t.addInt64Data(x);
        return t.build();
    }

    private static TensorProto vector(String name, long... v) { return longs(name, new long[] {v.length}, v); }

    private static ModelProto model(int opset, GraphProto.Builder g) {
        return ModelProto.newBuilder().setIrVersion(8).addOpsetImport(OperatorSetIdProto.newBuilder().setDomain("").setVersion(opset)).setGraph(g).build();
    }

    /** A graph with input x (f32 of {@code dims}), output y, and the given nodes and initializers. */
    private static GraphProto.Builder graph(long[] dims, List<TensorProto> inits, NodeProto... nodes) {
        GraphProto.Builder g = GraphProto.newBuilder().setName("g").addInput(value("x", F32, dims)).addOutput(value("y", F32));
        g.addAllInitializer(inits);
        for (NodeProto n : nodes) g.addNode(n);
        return g;
    }

    private static long[] dims(long... d) { return d; }

    /** Loading {@code m} and running it on a zero x of {@code xDims} fails with a format error whose message has every part. */
    private static void fails(ModelProto m, int[] xDims, String... parts) {
        assertThatThrownBy(() -> OnnxModel.fromProto(m, "bad.onnx").run(Map.of("x", Tensor.zeros(xDims).to("INTERP"))))
                .isInstanceOf(OnnxFormatException.class)
                .hasMessageStartingWith("bad.onnx")
                .satisfies(e -> assertThat(e.getMessage()).contains(parts));
    }

    /** Loading {@code m} alone fails with a format error whose message has every part: nothing is built. */
    private static void failsAtLoad(ModelProto m, String... parts) {
        assertThatThrownBy(() -> OnnxModel.fromProto(m, "bad.onnx")).isInstanceOf(OnnxFormatException.class)
                .hasMessageStartingWith("bad.onnx")
                .satisfies(e -> assertThat(e.getMessage()).contains(parts));
    }

    private static int[] shape(int... d) { return d; }

    // ---- 1. the graph: each value defined once, each use defined before ---------------------------------------

    @Test
    void aValueDefinedByTwoNodes() {
        failsAtLoad(model(13, graph(dims(2), List.of(), node("Relu", "first", List.of("x"), List.of("y")), node("Neg", "second", List.of("x"), List.of("y")))),
                "node 'second' (Neg)", "'y'", "node 'first' (Relu) already defines", "defined once");
    }

    @Test
    void aNodeOutputOverwritingAGraphInput() {
        failsAtLoad(model(13, graph(dims(2), List.of(), node("Relu", "r", List.of("x"), List.of("x")), node("Neg", "n", List.of("x"), List.of("y")))),
                "node 'r' (Relu)", "defines 'x'", "graph input already defines");
    }

    @Test
    void aNodeOutputOverwritingAnInitializer() {
        failsAtLoad(model(13, graph(dims(2), List.of(vector("w", 1, 2)), node("Relu", "r", List.of("x"), List.of("w")),
                node("Add", "a", List.of("x", "w"), List.of("y")))), "node 'r' (Relu)", "defines 'w'", "initializer already defines");
    }

    @Test
    void anUnnamedNodeIsNamedByItsIndex() {
        failsAtLoad(model(13, graph(dims(2), List.of(), node("Relu", "", List.of("x"), List.of("y")), node("Neg", "", List.of("x"), List.of("y")))),
                "node #1 (Neg)", "'y'");
    }

    @Test
    void aNodeReadingAnUndefinedValue() {
        failsAtLoad(model(13, graph(dims(2), List.of(), node("Add", "add", List.of("x", "ghost"), List.of("y")))),
                "node 'add' (Add)", "reads 'ghost' (input 1)", "which no earlier node, input or initializer defines");
    }

    @Test
    void aNodeReadingALaterNodesOutput() {
        failsAtLoad(model(13, graph(dims(2), List.of(), node("Relu", "early", List.of("t"), List.of("y")), node("Neg", "late", List.of("x"), List.of("t")))),
                "node 'early' (Relu)", "reads 't'");
    }

    @Test
    void anInitializerDefinedTwice() {
        failsAtLoad(model(13, graph(dims(2), List.of(vector("w", 1, 2), vector("w", 3, 4)), node("Relu", "r", List.of("x"), List.of("y")))),
                "initializer 'w' is defined twice");
    }

    @Test
    void aGraphOutputNeverDefined() {
        failsAtLoad(model(13, graph(dims(2), List.of(), node("Relu", "r", List.of("x"), List.of("z")))), "graph output 'y' is never defined");
    }

    // ---- 2. input counts (at load) and attribute lengths and ranks (when the node is built) ---------------------

    @Test
    void reshapeWithoutItsShapeInput() {
        failsAtLoad(model(13, graph(dims(2, 3), List.of(), node("Reshape", "reshape", List.of("x"), List.of("y")))),
                "node 'reshape' (Reshape)", "takes 2 inputs", "input 1 is required", "gives 1 [x]");
    }

    @Test
    void reshapeWithAnEmptyShapeInput() {
        failsAtLoad(model(13, graph(dims(2, 3), List.of(), node("Reshape", "reshape", List.of("x", ""), List.of("y")))),
                "node 'reshape' (Reshape)", "input 1 is required");
    }

    @Test
    void padWithoutPads() {
        failsAtLoad(model(13, graph(dims(2, 3), List.of(), node("Pad", "pad", List.of("x"), List.of("y")))),
                "node 'pad' (Pad)", "takes 2 to 3 inputs", "input 1 is required");
    }

    @Test
    void topKWithoutK() {
        failsAtLoad(model(13, GraphProto.newBuilder().addInput(value("x", F32, 4)).addOutput(value("y", F32)).addOutput(value("i", I64))
                .addNode(node("TopK", "topk", List.of("x"), List.of("y", "i")))), "node 'topk' (TopK)", "takes 2 inputs", "input 1 is required");
    }

    @Test
    void sliceWithoutEnds() {
        failsAtLoad(model(13, graph(dims(4), List.of(vector("s", 0)), node("Slice", "slice", List.of("x", "s"), List.of("y")))),
                "node 'slice' (Slice)", "takes 3 to 5 inputs", "input 2 is required");
    }

    @Test
    void gatherWithTooManyInputs() {
        failsAtLoad(model(13, graph(dims(4), List.of(vector("i", 0)), node("Gather", "gather", List.of("x", "i", "i"), List.of("y")))),
                "node 'gather' (Gather)", "takes 2 inputs", "gives 3");
    }

    @Test
    void sliceWithShortSteps() {
        fails(model(13, graph(dims(4, 4), List.of(vector("s", 0, 0), vector("e", 2, 2), vector("a", 0, 1), vector("st", 1)),
                node("Slice", "slice", List.of("x", "s", "e", "a", "st"), List.of("y")))), shape(4, 4),
                "Slice node 'slice'", "steps [1] has 1 values, expected 2");
    }

    @Test
    void sliceWithShortAxes() {
        fails(model(13, graph(dims(4, 4), List.of(vector("s", 0, 0), vector("e", 2, 2), vector("a", 0)),
                node("Slice", "slice", List.of("x", "s", "e", "a"), List.of("y")))), shape(4, 4),
                "Slice node 'slice'", "axes [0] has 1 values, expected 2");
    }

    @Test
    void sliceOfOpset9WithShortAxesAttribute() {
        fails(model(9, graph(dims(4, 4), List.of(), node("Slice", "slice", List.of("x"), List.of("y"), ints("starts", 0, 0), ints("ends", 2, 2), ints("axes", 1)))),
                shape(4, 4), "Slice node 'slice'", "axes [1] has 1 values, expected 2");
    }

    @Test
    void convTransposeWithThreePads() {
        TensorProto w = TensorProto.newBuilder().setName("w").setDataType(F32).addAllDims(List.of(1L, 1L, 2L, 2L)).addAllFloatData(List.of(1f, 1f, 1f, 1f)).build();
        fails(model(13, graph(dims(1, 1, 3, 3), List.of(w), node("ConvTranspose", "deconv", List.of("x", "w"), List.of("y"), ints("pads", 1, 1, 1)))),
                shape(1, 1, 3, 3), "ConvTranspose node 'deconv'", "pads [1, 1, 1] has 3 values, expected 4");
    }

    @Test
    void maxUnpoolWithShortPads() {
        GraphProto.Builder g = GraphProto.newBuilder().addInput(value("x", F32, 1, 1, 2, 2)).addOutput(value("y", F32))
                .addInitializer(longs("i", new long[] {1, 1, 2, 2}, 0, 3, 8, 15))
                .addNode(node("MaxUnpool", "unpool", List.of("x", "i"), List.of("y"), ints("kernel_shape", 2, 2), ints("strides", 2, 2), ints("pads", 0, 0)));
        fails(model(11, g), shape(1, 1, 2, 2), "MaxUnpool node 'unpool'", "pads [0, 0] has 2 values, expected 4");
    }

    @Test
    void averagePoolOnARank1Input() {
        fails(model(13, graph(dims(8), List.of(), node("AveragePool", "pool", List.of("x"), List.of("y"), ints("kernel_shape", 2)))), shape(8),
                "AveragePool node 'pool'", "input X must have rank 3 or more", "[8]");
    }

    @Test
    void maxPoolWithoutKernelShape() {
        failsAtLoad(model(13, graph(dims(1, 1, 4, 4), List.of(), node("MaxPool", "pool", List.of("x"), List.of("y")))),
                "node 'pool' (MaxPool)", "requires the attribute kernel_shape");
    }

    @Test
    void maxPoolWithAShortKernelShape() {
        fails(model(13, graph(dims(1, 1, 4, 4), List.of(), node("MaxPool", "pool", List.of("x"), List.of("y"), ints("kernel_shape", 2)))), shape(1, 1, 4, 4),
                "MaxPool node 'pool'", "kernel_shape [2] has 1 values, expected 2");
    }

    @Test
    void castWithoutTo() {
        failsAtLoad(model(13, graph(dims(2), List.of(), node("Cast", "cast", List.of("x"), List.of("y")))), "node 'cast' (Cast)", "requires the attribute to");
    }

    @Test
    void convTransposeWithAShortOutputShape() {
        TensorProto w = TensorProto.newBuilder().setName("w").setDataType(F32).addAllDims(List.of(1L, 1L, 2L, 2L)).addAllFloatData(List.of(1f, 1f, 1f, 1f)).build();
        fails(model(13, graph(dims(1, 1, 3, 3), List.of(w), node("ConvTranspose", "deconv", List.of("x", "w"), List.of("y"), ints("output_shape", 6)))),
                shape(1, 1, 3, 3), "ConvTranspose node 'deconv'", "output_shape [6] has 1 values, expected 2");
    }

    @Test
    void batchNormalizationOnARank1Input() {
        List<TensorProto> stats = List.of(
                TensorProto.newBuilder().setName("s").setDataType(F32).addDims(1).addFloatData(1).build(),
                TensorProto.newBuilder().setName("b").setDataType(F32).addDims(1).addFloatData(0).build(),
                TensorProto.newBuilder().setName("m").setDataType(F32).addDims(1).addFloatData(0).build(),
                TensorProto.newBuilder().setName("v").setDataType(F32).addDims(1).addFloatData(1).build());
        fails(model(15, graph(dims(4), stats, node("BatchNormalization", "bn", List.of("x", "s", "b", "m", "v"), List.of("y"), integer("training_mode", 1)))),
                shape(4), "BatchNormalization node 'bn'", "must have rank 2 or more", "[4]");
    }

    @Test
    void einsumWithMoreTermsThanInputs() {
        AttributeProto eq = AttributeProto.newBuilder().setName("equation").setType(AttributeProto.AttributeType.STRING).setS(ByteString.copyFromUtf8("ij,jk->ik")).build();
        fails(model(13, graph(dims(2, 2), List.of(), node("Einsum", "einsum", List.of("x"), List.of("y"), eq))), shape(2, 2),
                "Einsum node 'einsum'", "has 2 operand terms, expected 1");
    }

    @Test
    void einsumWithATermOfTheWrongRank() {
        AttributeProto eq = AttributeProto.newBuilder().setName("equation").setType(AttributeProto.AttributeType.STRING).setS(ByteString.copyFromUtf8("...ij->...")).build();
        fails(model(13, graph(dims(2), List.of(), node("Einsum", "einsum", List.of("x"), List.of("y"), eq))), shape(2),
                "Einsum node 'einsum'", "term '...ij'", "names 2 axes besides '...'", "[2]");
    }

    @Test
    void convWithAKernelShapeOfTheWrongLength() {
        TensorProto w = TensorProto.newBuilder().setName("w").setDataType(F32).addAllDims(List.of(1L, 1L, 1L, 1L)).addFloatData(1f).build();
        fails(model(13, graph(dims(1, 1, 4, 4), List.of(w), node("Conv", "conv", List.of("x", "w"), List.of("y"), ints("kernel_shape", 1)))),
                shape(1, 1, 4, 4), "Conv node 'conv'", "kernel_shape [1] has 1 values, expected 2");
    }

    @Test
    void upsampleOfOpset7WithoutScales() {
        failsAtLoad(model(7, graph(dims(1, 1, 2, 2), List.of(), node("Upsample", "up", List.of("x"), List.of("y")))),
                "node 'up' (Upsample)", "at opset 7 requires the attribute scales");
    }

    @Test
    void upsampleOfOpset7WithShortScales() {
        fails(model(7, graph(dims(1, 1, 2, 2), List.of(), node("Upsample", "up", List.of("x"), List.of("y"), floats("scales", 1, 2)))), shape(1, 1, 2, 2),
                "Upsample node 'up'", "scales [1.0, 2.0] has 2 values, expected 4");
    }

    @Test
    void upsampleOfOpset9WithoutScales() {
        failsAtLoad(model(9, graph(dims(1, 1, 2, 2), List.of(), node("Upsample", "up", List.of("x"), List.of("y")))),
                "node 'up' (Upsample)", "takes 2 inputs", "input 1 is required");
    }

    @Test
    void gemmOnOneDimensionalInputs() {
        TensorProto b = TensorProto.newBuilder().setName("b").setDataType(F32).addDims(3).addAllFloatData(List.of(1f, 2f, 3f)).build();
        fails(model(13, graph(dims(3), List.of(b), node("Gemm", "gemm", List.of("x", "b"), List.of("y")))), shape(3),
                "Gemm node 'gemm'", "input 0 ('x') must have rank 2", "[3]");
    }

    @Test
    void anIntAttributeOutsideTheIntRangeIsNotTruncated() {
        // (int) 2^32 + 1 would be 1, f32: a silently wrong Cast
        fails(model(13, graph(dims(2), List.of(), node("Cast", "cast", List.of("x"), List.of("y"), integer("to", (1L << 32) + 1)))), shape(2),
                "node 'cast' (Cast)", "attribute to is 4294967297, expected a value in the int range");
    }

    @Test
    void anAxisOutsideTheIntRange() {
        fails(indexModel("Gather", List.of(vector("i", 0)), List.of("x", "i"), integer("axis", 1L << 32)), shape(3, 2),
                "Gather node 'idx'", "axis 4294967296 is out of range for rank 2");
    }

    // ---- 3. size bombs in initializers: checked against the bytes present, before allocating -------------------

    private static ModelProto withInitializer(TensorProto t) {
        return model(13, graph(dims(1), List.of(t), node("Identity", "id", List.of("x"), List.of("y"))));
    }

    @Test
    void aTinyModelClaiming2To28FloatsFailsWithoutAllocating() {
        TensorProto bomb = TensorProto.newBuilder().setName("w").setDataType(F32).addDims(1L << 28).setRawData(ByteString.copyFrom(new byte[4])).build();
        ModelProto m = withInitializer(bomb);
        assertThat(m.getSerializedSize()).isLessThan(120);
        long before = usedHeap();
        long t0 = System.nanoTime();
        failsAtLoad(m, "initializer w", "raw_data has 4 bytes, 268435456 elements of f32 need 1073741824");
        assertThat((System.nanoTime() - t0) / 1e9).isLessThan(1.0);
        assertThat(usedHeap() - before).isLessThan(256L << 20);
    }

    private static long usedHeap() {
        Runtime r = Runtime.getRuntime();
        return r.totalMemory() - r.freeMemory();
    }

    @Test
    void aTypedFieldClaimingMoreValuesThanItHolds() {
        failsAtLoad(withInitializer(TensorProto.newBuilder().setName("w").setDataType(F32).addDims(1L << 28).addFloatData(1f).build()),
                "initializer w", "holds 1 values in its typed field, its shape needs 268435456");
    }

    @Test
    void aNegativeDim() {
        failsAtLoad(withInitializer(TensorProto.newBuilder().setName("w").setDataType(F32).addDims(-2).build()),
                "initializer w", "dimension 0 is -2, expected a size of at least 0");
    }

    @Test
    void aDimOver2To31() {
        failsAtLoad(withInitializer(TensorProto.newBuilder().setName("w").setDataType(F32).addDims(1L << 40).build()),
                "initializer w", "dimension 0 is 1099511627776, over Kiln's limit");
    }

    @Test
    void dimsHoldingOver2To31Elements() {
        failsAtLoad(withInitializer(TensorProto.newBuilder().setName("w").setDataType(11).addDims(1L << 16).addDims(1L << 16).build()),
                "initializer w", "hold 4294967296 elements, over Kiln's limit of 2^31 - 1 per tensor");
    }

    @Test
    void dimsWhoseProductOverflows64Bits() {
        TensorProto.Builder t = TensorProto.newBuilder().setName("w").setDataType(F32);
        for (int k = 0; k < 3; k++) t.addDims(Integer.MAX_VALUE);
        failsAtLoad(withInitializer(t.build()), "initializer w", "overflow 64 bits");
    }

    @Test
    void aZeroDimMakesAnEmptyTensorEvenBesideLargeOnes() {
        TensorProto t = TensorProto.newBuilder().setName("w").setDataType(F32).addDims(Integer.MAX_VALUE).addDims(0).build();
        assertThat(OnnxModel.fromProto(withInitializer(t), "ok.onnx").initializers().get("w").numel()).isZero();
    }

    // ---- 4. constant indices out of range: an error at build time, never a silent read of nothing ----------------

    private static ModelProto indexModel(String op, List<TensorProto> inits, List<String> in, AttributeProto... attrs) {
        return model(13, graph(dims(3, 2), inits, node(op, "idx", in, List.of("y"), attrs)));
    }

    @Test
    void gatherWithAConstantIndexPastTheAxis() {
        fails(indexModel("Gather", List.of(vector("i", 0, 5)), List.of("x", "i")), shape(3, 2),
                "Gather node 'idx'", "index 5", "out of range for axis 0", "size 3", "valid are -3 to 2");
    }

    @Test
    void gatherWithANegativeIndexPastMinusN() {
        fails(indexModel("Gather", List.of(vector("i", -4)), List.of("x", "i"), integer("axis", 0)), shape(3, 2),
                "Gather node 'idx'", "index -4", "valid are -3 to 2");
    }

    @Test
    void gatherWithNegativeIndicesInRangeReadsFromTheEnd() {
        ModelProto m = indexModel("Gather", List.of(vector("i", -1, -3)), List.of("x", "i"));
        Tensor x = Tensor.of(new float[] {1, 2, 3, 4, 5, 6}, 3, 2).to("INTERP");
        assertThat(OnnxModel.fromProto(m, "ok.onnx").run(Map.of("x", x)).getFirst().toFloatArray()).containsExactly(5, 6, 1, 2);
    }

    @Test
    void gatherElementsWithAConstantIndexPastTheAxis() {
        fails(indexModel("GatherElements", List.of(longs("i", new long[] {1, 2}, 0, 2)), List.of("x", "i"), integer("axis", 1)), shape(3, 2),
                "GatherElements node 'idx'", "index 2", "axis 1", "size 2");
    }

    @Test
    void gatherNDWithAConstantTuplePastTheAxis() {
        fails(indexModel("GatherND", List.of(longs("i", new long[] {1, 2}, 2, 7)), List.of("x", "i")), shape(3, 2),
                "GatherND node 'idx'", "index 7", "axis 1", "size 2", "valid are -2 to 1");
    }

    @Test
    void scatterElementsWithAConstantIndexPastTheAxis() {
        TensorProto u = TensorProto.newBuilder().setName("u").setDataType(F32).addDims(1).addDims(2).addAllFloatData(List.of(1f, 2f)).build();
        fails(indexModel("ScatterElements", List.of(longs("i", new long[] {1, 2}, 3, -1), u), List.of("x", "i", "u")), shape(3, 2),
                "ScatterElements node 'idx'", "index 3", "axis 0", "size 3");
    }

    @Test
    void scatterNDWithAConstantTuplePastTheAxis() {
        TensorProto u = TensorProto.newBuilder().setName("u").setDataType(F32).addDims(1).addDims(2).addAllFloatData(List.of(1f, 2f)).build();
        fails(indexModel("ScatterND", List.of(longs("i", new long[] {1, 1}, -4), u), List.of("x", "i", "u")), shape(3, 2),
                "ScatterND node 'idx'", "index -4", "axis 0", "valid are -3 to 2");
    }

    // ---- 5. external data: a reference from an untrusted file is checked before a byte is mapped -----------------

    @TempDir
    Path tmp;

    /** The model folder: tmp/model, beside a secret file tmp/secret.bin the model must not reach. */
    private Path modelDir() throws IOException {
        Path d = Files.createDirectories(tmp.resolve("model"));
        Files.write(tmp.resolve("secret.bin"), new byte[16]);
        Files.write(d.resolve("w.bin"), new byte[16]); // room for 4 floats
        return d;
    }

    /** Loading y = x + w, with w f32 [4] stored as {@code w}, from the model folder fails at load with every part in one line. */
    private void externalFails(TensorProto w, String... parts) throws IOException {
        Path file = modelDir().resolve("m.onnx");
        Files.write(file, ExternalDataTest.addModel(w, 4).toByteArray());
        assertThatThrownBy(() -> OnnxModel.load(file)).isInstanceOf(OnnxFormatException.class)
                .hasMessageStartingWith(file + " initializer w (tensor w): ")
                .satisfies(e -> assertThat(e.getMessage()).contains(parts).doesNotContain("\n"));
    }

    private static TensorProto w(String location, long offset, Long length) { return ExternalDataTest.external("w", location, offset, length, 4); }

    @Test
    void externalDataOffsetPastTheEndOfTheFile() throws IOException {
        externalFails(w("w.bin", 32, 16L), "external data location 'w.bin'", "offset 32 is past the end of the file (16 bytes)");
    }

    @Test
    void externalDataLengthNotTheShapesByteCount() throws IOException {
        externalFails(w("w.bin", 0, 12L), "'w.bin'", "length 12 is not the 16 bytes that 4 elements of f32 need");
        externalFails(w("w.bin", 4, null), "'w.bin'", "the 12 bytes from offset 4 to the end of the file (no length given) are not the 16 bytes");
    }

    @Test
    void externalDataReachingPastTheEndOfTheFile() throws IOException {
        externalFails(w("w.bin", 8, 16L), "'w.bin'", "bytes 8 to 24 reach past the end of the file (16 bytes)");
    }

    @Test
    void aHugeExternalLengthFailsWithoutAllocating() throws IOException {
        TensorProto bomb = ExternalDataTest.external("w", "w.bin", 0, 1L << 30, 1L << 28);
        Path file = modelDir().resolve("bomb.onnx");
        Files.write(file, ExternalDataTest.addModel(bomb, 4).toByteArray());
        long before = usedHeap();
        assertThatThrownBy(() -> OnnxModel.load(file)).isInstanceOf(OnnxFormatException.class).hasMessageContaining("reach past the end of the file (16 bytes)");
        assertThat(usedHeap() - before).isLessThan(256L << 20);
    }

    @Test
    void externalDataLocationWithDotDot() throws IOException {
        externalFails(w("../secret.bin", 0, 16L), "location '../secret.bin'", "has a '..' component", "in the model's directory or below it");
        externalFails(w("sub/../../secret.bin", 0, 16L), "'sub/../../secret.bin'", "has a '..' component");
        externalFails(w("..\\secret.bin", 0, 16L), "'..\\secret.bin'", "has a '..' component");
    }

    @Test
    void externalDataAtAnAbsoluteLocation() throws IOException {
        String abs = tmp.resolve("secret.bin").toString();
        externalFails(w(abs, 0, 16L), "location '" + abs + "'", "is an absolute path");
        externalFails(w("C:\\secret.bin", 0, 16L), "is an absolute path");
    }

    @Test
    void externalDataFileMissing() throws IOException {
        externalFails(w("nope.bin", 0, 16L), "location 'nope.bin'", "nope.bin does not exist");
    }

    @Test
    void externalDataThroughASymbolicLinkOutOfTheDirectory() throws IOException {
        Path d = modelDir();
        Files.createSymbolicLink(d.resolve("link.bin"), tmp.resolve("secret.bin"));
        externalFails(w("link.bin", 0, 16L), "location 'link.bin'", "through a symbolic link, outside the model's directory");
        Files.createSymbolicLink(d.resolve("up"), tmp);
        externalFails(w("up/secret.bin", 0, 16L), "location 'up/secret.bin'", "through a symbolic link, outside the model's directory");
    }

    @Test
    void externalDataThatIsNotARegularFile() throws IOException {
        Files.createDirectories(modelDir().resolve("folder"));
        externalFails(w("folder", 0, 16L), "location 'folder'", "is not a regular file");
    }

    @Test
    void externalDataWithoutALocationOrWithABadNumber() throws IOException {
        externalFails(TensorProto.newBuilder(w("w.bin", 0, 16L)).removeExternalData(0).build(), "external_data has no location");
        externalFails(TensorProto.newBuilder(w("w.bin", 0, 16L)).setExternalData(1, StringStringEntryProto.newBuilder().setKey("offset").setValue("-1")).build(),
                "external_data offset is '-1', expected a byte count");
        externalFails(TensorProto.newBuilder(w("w.bin", 0, 16L)).setExternalData(1, StringStringEntryProto.newBuilder().setKey("offset")
                .setValue("99999999999999999999")).build(), "expected a byte count");
    }

    @Test
    void externalDataBesideInlineData() throws IOException {
        externalFails(TensorProto.newBuilder(w("w.bin", 0, 16L)).setRawData(ByteString.copyFrom(new byte[16])).build(), "holds data inline too");
    }

    @Test
    void externalDataInAModelFromBytesNeedsItsDirectory() {
        assertThatThrownBy(() -> OnnxModel.parse(ExternalDataTest.addModel(w("w.bin", 0, 16L), 4).toByteArray(), "bytes.onnx"))
                .isInstanceOf(OnnxFormatException.class)
                .hasMessage("bytes.onnx initializer w (tensor w): external data location 'w.bin' is relative to the model file's directory,"
                        + " but this model was not loaded from a file; load it with OnnxModel.load(Path) from its directory");
    }

    @Test
    void aTensorAttributesExternalDataIsCheckedAtLoad() throws IOException {
        Path file = modelDir().resolve("c.onnx");
        NodeProto constant = node("Constant", "c", List.of(), List.of("y"), AttributeProto.newBuilder().setName("value")
                .setType(AttributeProto.AttributeType.TENSOR).setT(ExternalDataTest.external("v", "../secret.bin", 0, 16L, 4)).build());
        Files.write(file, model(13, GraphProto.newBuilder().setName("g").addOutput(value("y", F32)).addNode(constant)).toByteArray());
        assertThatThrownBy(() -> OnnxModel.load(file)).isInstanceOf(OnnxFormatException.class)
                .hasMessageStartingWith(file + " node 'c' (Constant) attribute value (tensor v): external data location '../secret.bin' has a '..' component");
    }
}

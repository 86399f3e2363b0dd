package dev.kiln.onnx;

import dev.kiln.Tensor;
import dev.kiln.runtime.MemoryBudget;
import dev.kiln.runtime.MemoryBudgetException;
import onnx.Onnx.AttributeProto;
import onnx.Onnx.GraphProto;
import onnx.Onnx.ModelProto;
import onnx.Onnx.NodeProto;
import onnx.Onnx.OperatorSetIdProto;
import onnx.Onnx.TensorProto;
import onnx.Onnx.TensorShapeProto;
import onnx.Onnx.TypeProto;
import onnx.Onnx.ValueInfoProto;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.file.Files;
import java.nio.file.Path;

import java.util.Arrays;
import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * Issue 13, allocations bounded before they happen, through ONNX: operators whose output size comes from the file
 * (ConstantOfShape, OneHot, Tile, Expand, Range, Resize) asked for more than the {@link MemoryBudget} fail with an
 * {@link OnnxFormatException} naming the node, caused by the {@link MemoryBudgetException} with both figures: never
 * an {@link OutOfMemoryError}. Tiny models are built as in {@link BadModelsTest}; the budget is 64 MiB so each case is fast.
 */
class OnnxMemoryBudgetTest {
    private static final int F32 = 1, I64 = 7;
    private String saved;

    @BeforeEach
    void smallBudget() {
        saved = System.getProperty(MemoryBudget.PROPERTY);
        System.setProperty(MemoryBudget.PROPERTY, "64m");
    }

    @AfterEach
    void restore() {
        if (saved == null) System.clearProperty(MemoryBudget.PROPERTY);
        else System.setProperty(MemoryBudget.PROPERTY, saved);
    }

    // ---- building models (as BadModelsTest does) -----------------------------------------------------------------

    private static ValueInfoProto value(String name, int elemType, long... dims) {
        TensorShapeProto.Builder s = TensorShapeProto.newBuilder();
        for (long d : dims) s.addDim(TensorShapeProto.Dimension.newBuilder().setDimValue(d));
        return ValueInfoProto.newBuilder().setName(name)
                .setType(TypeProto.newBuilder().setTensorType(TypeProto.Tensor.newBuilder().setElemType(elemType).setShape(s))).build();
    }

    private static NodeProto node(String op, String name, List<String> in, List<String> out, AttributeProto... attrs) {
        return NodeProto.newBuilder().setOpType(op).setName(name).addAllInput(in).addAllOutput(out).addAllAttribute(Arrays.asList(attrs)).build();
    }

    private static TensorProto longs(String name, long[] dims, long... v) {
        TensorProto.Builder t = TensorProto.newBuilder().setName(name).setDataType(I64);
        for (long d : dims) t.addDims(d);
        for (long x : v) t.addInt64Data(x);
        return t.build();
    }

    private static TensorProto vector(String name, long... v) { return longs(name, new long[] {v.length}, v); }

    private static TensorProto scalar(String name, long v) { return longs(name, new long[0], v); }

    private static TensorProto floats(String name, float... v) {
        TensorProto.Builder t = TensorProto.newBuilder().setName(name).setDataType(F32).addDims(v.length);
        for (float x : v) t.addFloatData(x);
        return t.build();
    }

    /** A model with input x (f32 of {@code xDims}), output y, and the given initializers and nodes. */
    private static ModelProto model(long[] xDims, List<TensorProto> inits, NodeProto... nodes) {
        GraphProto.Builder g = GraphProto.newBuilder().setName("g").addInput(value("x", F32, xDims)).addOutput(value("y", F32));
        g.addAllInitializer(inits);
        for (NodeProto n : nodes) g.addNode(n);
        return ModelProto.newBuilder().setIrVersion(8).addOpsetImport(OperatorSetIdProto.newBuilder().setDomain("").setVersion(13)).setGraph(g).build();
    }

    /** Building {@code m} on a zero x fails with a format error naming the node, caused by a budget refusal of {@code needed} bytes. */
    private static void overBudget(ModelProto m, int[] xDims, String nodePart, long needed) {
        long t0 = System.nanoTime();
        assertThatThrownBy(() -> OnnxModel.fromProto(m, "big.onnx").run(Map.of("x", Tensor.zeros(xDims))).forEach(Tensor::realize))
                .isInstanceOf(OnnxFormatException.class)
                .hasMessageStartingWith("big.onnx: " + nodePart)
                .hasMessageContaining("needs " + needed + " bytes")
                .hasMessageContaining("over the memory budget of 67108864 bytes (64 MiB)")
                .hasMessageContaining("kiln.memory.budget")
                .hasCauseInstanceOf(MemoryBudgetException.class);
        assertThat((System.nanoTime() - t0) / 1e9).isLessThan(10.0); // refused, not computed
    }

    private static long[] dims(long... d) { return d; }

    private static int[] shape(int... d) { return d; }

    // ---- the operators ---------------------------------------------------------------------------------------------

    @Test
    void constantOfShape() {
        overBudget(model(dims(1), List.of(vector("s", 5000, 5000)), node("ConstantOfShape", "c", List.of("s"), List.of("y"))),
                shape(1), "ConstantOfShape node 'c'", 100_000_000L);
    }

    @Test
    void oneHot() {
        overBudget(model(dims(1), List.of(vector("i", 0, 1), scalar("depth", 100_000_000), floats("v", 0, 1)),
                node("OneHot", "h", List.of("i", "depth", "v"), List.of("y"))), shape(1), "OneHot node 'h'", 800_000_000L);
    }

    @Test
    void tile() {
        overBudget(model(dims(2), List.of(vector("r", 50_000_000)), node("Tile", "t", List.of("x", "r"), List.of("y"))),
                shape(2), "Tile node 't'", 400_000_000L);
    }

    @Test
    void expand() {
        overBudget(model(dims(1), List.of(vector("s", 1, 100_000_000)), node("Expand", "e", List.of("x", "s"), List.of("y"))),
                shape(1), "Expand node 'e'", 400_000_000L);
    }

    @Test
    void range() {
        // integer: a Java array of the values first, then the tensor; both are counted
        overBudget(model(dims(1), List.of(scalar("a", 0), scalar("b", 100_000_000), scalar("d", 1)),
                node("Range", "r", List.of("a", "b", "d"), List.of("y"))), shape(1), "Range node 'r'", 1_600_000_000L);
    }

    @Test
    void resize() {
        overBudget(model(dims(1, 1, 2, 2), List.of(vector("sizes", 1, 1, 20_000, 20_000)),
                node("Resize", "rs", List.of("x", "", "", "sizes"), List.of("y"))), shape(1, 1, 2, 2), "Resize node 'rs'", 1_600_000_000L);
    }

    @Test
    void anInitializerOverTheBudgetFailsAtLoad() {
        System.setProperty(MemoryBudget.PROPERTY, "16m");
        // 4 Mi floats whose 16 MiB the file really holds: staged and copied, 32 MiB
        TensorProto w = TensorProto.newBuilder().setName("w").setDataType(F32).addDims(1 << 22)
                .setRawData(com.google.protobuf.ByteString.copyFrom(new byte[4 << 22])).build();
        ModelProto m = model(dims(1), List.of(w), node("Identity", "id", List.of("x"), List.of("y")));
        assertThatThrownBy(() -> OnnxModel.fromProto(m, "big.onnx")).isInstanceOf(OnnxFormatException.class)
                .hasMessageStartingWith("big.onnx").hasMessageContaining("w")
                .hasMessageContaining("needs 33554432 bytes (32 MiB), over the memory budget of 16777216 bytes (16 MiB)")
                .hasCauseInstanceOf(MemoryBudgetException.class);
        System.setProperty(MemoryBudget.PROPERTY, "64m");
        assertThat(OnnxModel.fromProto(m, "big.onnx").inputs()).hasSize(1); // under it: loaded
    }

    @Test
    void mappedExternalDataIsNotAnAllocationButACopyOfItIs(@TempDir Path dir) throws IOException {
        System.setProperty(MemoryBudget.PROPERTY, "16m");
        long n = 8L << 20; // 32 MiB of f32 in a sparse file: twice the budget
        try (RandomAccessFile f = new RandomAccessFile(dir.resolve("w.bin").toFile(), "rw")) {
            f.setLength(4 * n + 4);
        }
        Path aligned = dir.resolve("aligned.onnx");
        Files.write(aligned, ExternalDataTest.addModel(ExternalDataTest.external("w", "w.bin", 0, 4 * n, n), n).toByteArray());
        try (OnnxModel m = OnnxModel.load(aligned)) {
            assertThat(m.initializers().get("w").buffer().segment().isMapped()).isTrue();
        }
        // at offset 2 the floats are copied: that copy is an allocation, and the budget refuses it
        Path misaligned = dir.resolve("misaligned.onnx");
        Files.write(misaligned, ExternalDataTest.addModel(ExternalDataTest.external("w", "w.bin", 2, 4 * n, n), n).toByteArray());
        assertThatThrownBy(() -> OnnxModel.load(misaligned)).isInstanceOf(OnnxFormatException.class)
                .hasMessageContaining("initializer w").hasMessageContaining("over the memory budget of 16777216 bytes")
                .hasCauseInstanceOf(MemoryBudgetException.class);
    }

    @Test
    void aHugeTileUnderTheDefaultBudget() {
        System.clearProperty(MemoryBudget.PROPERTY);
        // 2^38 f32 elements = 2^40 bytes
        ModelProto m = model(dims(1), List.of(vector("r", 1L << 38)), node("Tile", "t", List.of("x", "r"), List.of("y")));
        assertThatThrownBy(() -> OnnxModel.fromProto(m, "big.onnx").run(Map.of("x", Tensor.zeros(1))).forEach(Tensor::realize))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageStartingWith("big.onnx: Tile node 't'");
        ModelProto e = model(dims(1), List.of(vector("s", 1L << 20, 1L << 18)), node("Expand", "e", List.of("x", "s"), List.of("y")));
        assertThatThrownBy(() -> OnnxModel.fromProto(e, "big.onnx").run(Map.of("x", Tensor.zeros(1))).forEach(Tensor::realize))
                .isInstanceOf(OnnxFormatException.class).hasMessageStartingWith("big.onnx: Expand node 'e'")
                .hasMessageContaining("needs 1099511627776 bytes (1 TiB)").hasCauseInstanceOf(MemoryBudgetException.class);
    }

    @Test
    void underTheBudgetTheSameOperatorsRun() {
        List<Tensor> y = OnnxModel.fromProto(model(dims(2), List.of(vector("r", 1000)), node("Tile", "t", List.of("x", "r"), List.of("y"))), "ok.onnx")
                .run(Map.of("x", Tensor.of(new float[] {1, 2}, 2)));
        assertThat(y.getFirst().dims()).containsExactly(2000);
        assertThat(y.getFirst().toFloatArray()[1999]).isEqualTo(2f);
    }
}

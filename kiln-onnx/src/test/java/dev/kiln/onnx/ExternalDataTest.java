package dev.kiln.onnx;

import dev.kiln.Tensor;
import dev.kiln.io.Npy;
import dev.kiln.runtime.Buffer;
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
import java.io.RandomAccessFile;
import java.lang.foreign.MemorySegment;
import java.net.URISyntaxException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.within;

/**
 * ONNX external data read in place: the model tools/onnx/gen_external_data.py wrote (every tensor in weights.bin)
 * loads, runs and matches ONNX Runtime; its weights are slices of the mapped file, not copies, and are unmapped when
 * the model is closed. Files over protobuf's 2 GiB limit are refused in one line. The refusals of malicious
 * references are in {@link BadModelsTest}.
 */
class ExternalDataTest {
    @TempDir
    Path dir;

    static Path resource(String name) {
        try {
            return Path.of(ExternalDataTest.class.getResource("/external/" + name).toURI());
        } catch (URISyntaxException e) {
            throw new IllegalStateException(e);
        }
    }

    private static void assertClose(float[] got, float[] want) {
        assertThat(got).hasSameSizeAs(want);
        for (int i = 0; i < want.length; i++) assertThat(got[i]).as("element %d", i).isCloseTo(want[i], within(1e-5f + 1e-5f * Math.abs(want[i])));
    }

    @Test
    void theGeneratedModelRunsAndMatchesOnnxRuntime() {
        try (OnnxModel m = OnnxModel.load(resource("model.onnx"))) {
            Tensor x = Npy.read(resource("input.npy"));
            Tensor y = m.run(Map.of("x", x)).getFirst();
            Tensor want = Npy.read(resource("expected.npy"));
            assertThat(y.dims()).containsExactly(want.dims());
            assertClose(y.toFloatArray(), want.toFloatArray());
        }
    }

    @Test
    void aPlanPreparedFromItRunsToo() {
        Tensor x = Npy.read(resource("input.npy"));
        try (OnnxModel m = OnnxModel.load(resource("model.onnx")); OnnxPlan plan = m.prepare(Tensor.defaultDevice(), Map.of())) {
            assertClose(plan.run(Map.of("x", x)).getFirst().toFloatArray(), Npy.read(resource("expected.npy")).toFloatArray());
            assertClose(plan.run(Map.of("x", x)).getFirst().toFloatArray(), Npy.read(resource("expected.npy")).toFloatArray());
        }
    }

    @Test
    void initializersAreSlicesOfTheMappedFileAndCloseUnmapsThem() {
        OnnxModel m = OnnxModel.load(resource("model.onnx"));
        Map<String, Tensor> inits = m.initializers();
        Map<String, Long> offsets = Map.of("W1", 0L, "b1", 512L, "W2", 576L, "b2", 832L, "shape", 848L);
        long base = inits.get("W1").buffer().segment().address();
        for (var e : offsets.entrySet()) {
            Buffer b = inits.get(e.getKey()).buffer();
            MemorySegment s = b.segment();
            assertThat(s.isMapped()).as(e.getKey()).isTrue();
            assertThat(s.isReadOnly()).as(e.getKey()).isTrue();
            assertThat(b.isImmutable()).as(e.getKey()).isTrue();
            assertThat(s.address() - base).as(e.getKey()).isEqualTo(e.getValue());
            assertThat(s.byteSize()).as(e.getKey()).isEqualTo(b.dtype().byteSize(b.count()));
        }
        assertThat(inits.get("shape").toLongArray()).containsExactly(4, 2);
        assertThat(m.externalData().hasMappings()).isTrue();
        MemorySegment w1 = inits.get("W1").buffer().segment();

        m.close();
        assertThat(w1.scope().isAlive()).isFalse();
        assertThat(m.externalData().hasMappings()).isFalse();
        assertThatThrownBy(() -> inits.get("W1").toFloatArray()).isInstanceOf(IllegalStateException.class);
        assertThatThrownBy(() -> m.run(Map.of("x", Tensor.zeros(2, 8)))).isInstanceOf(IllegalStateException.class).hasMessageContaining("closed");
        m.close(); // idempotent
    }

    // ---- hand-made models: one initializer w stored at a chosen place of a data file -----------------------------

    private static ValueInfoProto value(String name, long... dims) {
        TensorShapeProto.Builder s = TensorShapeProto.newBuilder();
        for (long d : dims) s.addDim(TensorShapeProto.Dimension.newBuilder().setDimValue(d));
        return ValueInfoProto.newBuilder().setName(name)
                .setType(TypeProto.newBuilder().setTensorType(TypeProto.Tensor.newBuilder().setElemType(1).setShape(s))).build();
    }

    /** An f32 initializer {@code name} of {@code dims} whose data is in {@code location}, at {@code offset} (and {@code length} if not null). */
    static TensorProto external(String name, String location, long offset, Long length, long... dims) {
        TensorProto.Builder t = TensorProto.newBuilder().setName(name).setDataType(1).setDataLocation(TensorProto.DataLocation.EXTERNAL)
                .addExternalData(StringStringEntryProto.newBuilder().setKey("location").setValue(location))
                .addExternalData(StringStringEntryProto.newBuilder().setKey("offset").setValue(Long.toString(offset)));
        if (length != null) t.addExternalData(StringStringEntryProto.newBuilder().setKey("length").setValue(Long.toString(length)));
        for (long d : dims) t.addDims(d);
        return t.build();
    }

    /** y = x + w, x and w f32 of {@code n} elements. */
    static ModelProto addModel(TensorProto w, long n) {
        GraphProto g = GraphProto.newBuilder().setName("g").addInput(value("x", n)).addOutput(value("y", n)).addInitializer(w)
                .addNode(NodeProto.newBuilder().setOpType("Add").setName("add").addInput("x").addInput(w.getName()).addOutput("y")).build();
        return ModelProto.newBuilder().setIrVersion(8).addOpsetImport(OperatorSetIdProto.newBuilder().setDomain("").setVersion(13)).setGraph(g).build();
    }

    private static byte[] floats(int pad, float... v) {
        ByteBuffer b = ByteBuffer.allocate(pad + 4 * v.length).order(ByteOrder.LITTLE_ENDIAN);
        b.position(pad);
        for (float f : v) b.putFloat(f);
        return b.array();
    }

    private Path write(ModelProto m) throws IOException {
        Path f = dir.resolve("m.onnx");
        Files.write(f, m.toByteArray());
        return f;
    }

    @Test
    void aTensorAtAnOffsetThatIsNotAMultipleOfItsElementSizeIsCopied() throws IOException {
        Files.write(dir.resolve("w.bin"), floats(2, 1, 2, 3, 4));
        try (OnnxModel m = OnnxModel.load(write(addModel(external("w", "w.bin", 2, 16L, 4), 4)))) {
            MemorySegment s = m.initializers().get("w").buffer().segment();
            assertThat(s.isMapped()).isFalse();
            assertThat(m.run(Map.of("x", Tensor.of(10f, 20f, 30f, 40f))).getFirst().toFloatArray()).containsExactly(11, 22, 33, 44);
        }
    }

    @Test
    void withoutALengthTheDataRunsToTheEndOfTheFileInASubfolder() throws IOException {
        Files.createDirectories(dir.resolve("data"));
        Files.write(dir.resolve("data/w.bin"), floats(8, 5, 6));
        try (OnnxModel m = OnnxModel.load(write(addModel(external("w", "./data//w.bin", 8, null, 2), 2)))) {
            assertThat(m.initializers().get("w").buffer().segment().isMapped()).isTrue();
            assertThat(m.run(Map.of("x", Tensor.of(1f, 1f))).getFirst().toFloatArray()).containsExactly(6, 7);
        }
    }

    @Test
    void aSymbolicLinkInsideTheDirectoryIsFollowed() throws IOException {
        Files.createDirectories(dir.resolve("real"));
        Files.write(dir.resolve("real/w.bin"), floats(0, 1, 2));
        Files.createSymbolicLink(dir.resolve("link.bin"), dir.resolve("real/w.bin"));
        try (OnnxModel m = OnnxModel.load(write(addModel(external("w", "link.bin", 0, 8L, 2), 2)))) {
            assertThat(m.initializers().get("w").toFloatArray()).containsExactly(1, 2);
        }
    }

    @Test
    void aLargeMappedWeightDoesNotGrowTheHeap() throws IOException {
        long n = 16L << 20; // 64 MiB of zeros: a sparse file, nothing written to disk
        try (RandomAccessFile f = new RandomAccessFile(dir.resolve("big.bin").toFile(), "rw")) {
            f.setLength(4 * n);
        }
        Path model = write(addModel(external("w", "big.bin", 0, 4 * n, n), n));
        System.gc();
        long before = usedHeap();
        try (OnnxModel m = OnnxModel.load(model)) {
            long grown = usedHeap() - before;
            assertThat(m.initializers().get("w").buffer().segment().isMapped()).isTrue();
            assertThat(grown).as("heap growth while loading a 64 MiB weight").isLessThan(16L << 20);
        }
    }

    private static long usedHeap() {
        Runtime r = Runtime.getRuntime();
        return r.totalMemory() - r.freeMemory();
    }

    @Test
    void aTensorProtoFileReadsItsExternalDataBesideIt() throws IOException {
        Files.write(dir.resolve("t.bin"), floats(4, 7, 8, 9));
        Path pb = dir.resolve("t.pb");
        Files.write(pb, external("t", "t.bin", 4, 12L, 3).toByteArray());
        assertThat(TensorProtos.read(pb).toFloatArray()).containsExactly(7, 8, 9);
    }

    // ---- over protobuf's 2 GiB ---------------------------------------------------------------------------------

    @Test
    void aModelFileOver2GiBIsRefusedInOneLineWithoutReadingIt() throws IOException {
        Path huge = dir.resolve("huge.onnx");
        try (RandomAccessFile f = new RandomAccessFile(huge.toFile(), "rw")) {
            f.setLength(1L << 31); // sparse: costs no disk space
        }
        long before = usedHeap();
        long t0 = System.nanoTime();
        assertThatThrownBy(() -> OnnxModel.load(huge)).isInstanceOf(OnnxFormatException.class)
                .hasMessage(huge + ": the file is 2147483648 bytes (2.00 GiB), over protobuf's limit of 2 GiB (2147483647 bytes) for one message;"
                        + " a model this large must keep its weights in ONNX external data files (onnx.save_model(model, path, save_as_external_data=True))");
        assertThat((System.nanoTime() - t0) / 1e9).isLessThan(1.0);
        assertThat(usedHeap() - before).isLessThan(64L << 20);
        assertThatThrownBy(() -> TensorProtos.read(huge)).isInstanceOf(OnnxFormatException.class).hasMessageContaining("over protobuf's limit of 2 GiB");
    }

    @Test
    void aFolderIsNoModelFile() {
        assertThatThrownBy(() -> OnnxModel.load(dir)).isInstanceOf(OnnxFormatException.class).hasMessageStartingWith(dir + ": cannot read the file (");
    }

    @Test
    void theModelFileItselfIsParsedFromAMapping() throws IOException {
        // inline weights: parsed from the mapped file, the mapping released after the parse (nothing left to close)
        ModelProto inline = addModel(TensorProto.newBuilder().setName("w").setDataType(1).addDims(2).addAllFloatData(List.of(1f, 2f)).build(), 2);
        try (OnnxModel m = OnnxModel.load(write(inline))) {
            assertThat(m.externalData().hasMappings()).isFalse();
            assertThat(m.run(Map.of("x", Tensor.of(1f, 1f))).getFirst().toFloatArray()).containsExactly(2, 3);
        }
    }
}

package dev.kiln.llm.gguf;

import dev.kiln.Tensor;
import dev.kiln.io.Npy;
import dev.kiln.llm.ModelFileException;
import dev.kiln.types.DType;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.net.URISyntaxException;
import java.nio.file.Path;
import java.util.EnumSet;
import java.util.List;
import java.util.Set;
import java.util.stream.Collectors;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * Kiln's dequantisation against the reference of llama.cpp's own Python package: tensors.gguf was written by the
 * official gguf writer and gguf/ref/NAME.npy holds {@code gguf.quants.dequantize} of each tensor
 * (tools/golden/gen_gguf.py). The comparison is bit for bit: both sides compute the same f32 products of f16 scales.
 */
class GgufDequantTest {
    static GgufFile file;

    static Path resource(String name) {
        try {
            return Path.of(GgufDequantTest.class.getResource(name).toURI());
        } catch (URISyntaxException e) {
            throw new IllegalStateException(e);
        }
    }

    @BeforeAll
    static void open() { file = GgufFile.open(resource("/gguf/files/tensors.gguf")); }

    @AfterAll
    static void close() { file.close(); }

    static List<String> names() {
        try (GgufFile f = GgufFile.open(resource("/gguf/files/tensors.gguf"))) {
            return f.tensors().stream().map(GgufTensor::name).toList();
        }
    }

    static float[] reference(String name, int[] expectedShape) {
        Npy.Array ref = Npy.readArray(resource("/gguf/ref/" + name + ".npy"));
        assertThat(ref.shape()).as(name + " reference shape").isEqualTo(expectedShape);
        return ref.data().toArray(ValueLayout.JAVA_FLOAT);
    }

    /** Bit-equal, except that any NaN equals any NaN (NumPy and Java may keep different payloads). */
    static void assertBitExact(String name, float[] actual, float[] expected) {
        assertThat(actual).as(name).hasSameSizeAs(expected);
        for (int i = 0; i < expected.length; i++) {
            boolean same = Float.floatToRawIntBits(actual[i]) == Float.floatToRawIntBits(expected[i])
                    || Float.isNaN(actual[i]) && Float.isNaN(expected[i]);
            if (!same) throw new AssertionError(name + "[" + i + "]: expected " + expected[i] + " (0x" + Integer.toHexString(Float.floatToRawIntBits(expected[i]))
                    + "), got " + actual[i] + " (0x" + Integer.toHexString(Float.floatToRawIntBits(actual[i])) + ")");
        }
    }

    @Test
    void everySupportedTypeIsInTheFixture() {
        Set<GgmlType> types = file.tensors().stream().map(GgufTensor::type).collect(Collectors.toSet());
        Set<GgmlType> supported = EnumSet.noneOf(GgmlType.class);
        for (GgmlType t : GgmlType.values()) if (t.isSupported()) supported.add(t);
        assertThat(types).isEqualTo(supported);
    }

    @ParameterizedTest
    @MethodSource("names")
    void dequantisesBitExactlyAsGgufQuants(String name) {
        GgufTensor t = file.tensor(name);
        float[] expected = reference(name, t.shape());
        assertBitExact(name, t.dequantize(), expected);
        // row by row, at an offset in a bigger array
        float[] rows = new float[expected.length + 3];
        for (long r = 0; r < t.rows(); r++) t.dequantizeRow(r, rows, 3 + (int) (r * t.rowLength()));
        assertBitExact(name + " by rows", java.util.Arrays.copyOfRange(rows, 3, rows.length), expected);
    }

    @ParameterizedTest
    @MethodSource("names")
    void toTensorHasTheValuesInKilnOrder(String name) {
        GgufTensor t = file.tensor(name);
        Tensor k = t.toTensor();
        assertThat(k.dims()).isEqualTo(t.shape());
        assertThat(k.dtype()).isEqualTo(switch (t.type()) {
            case F16 -> DType.F16;
            case BF16 -> DType.BF16;
            default -> DType.F32;
        });
        assertBitExact(name + " toTensor", k.toFloatArray(), reference(name, t.shape()));
    }

    @Test
    void shapesAreGgmlOrderAndKilnOrder() {
        GgufTensor t = file.tensor("q4_k_3x256");
        assertThat(t.ne()).containsExactly(256, 3);
        assertThat(t.shape()).containsExactly(3, 256);
        assertThat(t.rows()).isEqualTo(3);
        assertThat(t.rowBytes()).isEqualTo(144);
        assertThat(t.byteSize()).isEqualTo(3 * 144);
        GgufTensor four = file.tensor("f32_2x1x3x2");
        assertThat(four.ne()).containsExactly(2, 3, 1, 2);
        assertThat(four.shape()).containsExactly(2, 1, 3, 2);
        // the data is a slice of the mapping at dataOffset + offset, and every offset honours the alignment
        for (GgufTensor x : file.tensors()) {
            assertThat(x.offset() % file.alignment()).as(x.name()).isZero();
            assertThat(x.data().byteSize()).isEqualTo(x.byteSize());
        }
        assertThat(file.dataOffset() % 32).isZero();
    }

    @Test
    void f32TensorsAreWrappedInPlace() {
        GgufTensor t = file.tensor("f32_3x5");
        Tensor k = t.toTensor();
        // Kiln reads the mapping itself: the first value is the file's
        assertThat(k.toFloatArray()[0]).isEqualTo(t.data().get(ValueLayout.JAVA_FLOAT_UNALIGNED, 0));
    }

    /**
     * The comparison above can fail: flipping any single bit of a block (a scale, a minimum, a packed 6-bit scale, a
     * high bit, a quant) changes the dequantised block, so a wrong index or shift in a kernel cannot pass unnoticed.
     */
    @ParameterizedTest
    @MethodSource("names")
    void everyBitOfABlockMatters(String name) {
        GgufTensor t = file.tensor(name);
        if (!t.type().isQuantized()) return;
        int block = t.type().bytesPerBlock(), values = t.type().blockSize();
        float[] expected = reference(name, t.shape());
        byte[] bytes = t.data().toArray(ValueLayout.JAVA_BYTE);
        for (int bit = 0; bit < block * 8; bit++) {
            byte[] flipped = bytes.clone();
            flipped[bit / 8] ^= (byte) (1 << (bit % 8));
            GgufTensor mutated = new GgufTensor(t.file(), t.name(), t.type(), t.ne(), t.offset(), t.byteSize(), MemorySegment.ofArray(flipped));
            float[] got = new float[t.rowLength()];
            mutated.dequantizeRow(0, got, 0);
            boolean changed = false;
            for (int i = 0; i < values && !changed; i++) changed = Float.floatToRawIntBits(got[i]) != Float.floatToRawIntBits(expected[i]);
            assertThat(changed).as(name + ": flipping bit " + bit + " of block 0 changes its values").isTrue();
            // and only block 0's values
            for (int i = values; i < got.length; i++) assertThat(got[i]).isEqualTo(expected[i]);
        }
    }

    @Test
    void unsupportedTypesParseButTheirDataIsRefused() {
        // an IQ2_XS tensor: its layout is known (checked), its values are not
        byte[] b = GgufBuilder.valid().noTensors().tensor("iq", new long[] {256}, GgmlType.IQ2_XS.id(), 0).build();
        byte[] withData = java.util.Arrays.copyOf(b, b.length + GgmlType.IQ2_XS.bytesPerBlock());
        GgufFile f = GgufFile.parse(MemorySegment.ofArray(withData), Path.of("iq.gguf"));
        GgufTensor t = f.tensor("iq");
        assertThat(t.type()).isEqualTo(GgmlType.IQ2_XS);
        assertThatThrownBy(t::dequantize).isInstanceOf(ModelFileException.class)
                .hasMessageContaining("iq.gguf").hasMessageContaining("tensor 'iq'").hasMessageContaining("IQ2_XS (ggml id 17) is not supported");
        assertThatThrownBy(t::toTensor).isInstanceOf(ModelFileException.class).hasMessageContaining("IQ2_XS");
    }

    @Test
    void typeTableMatchesGgml() {
        assertThat(GgmlType.byId(14)).contains(GgmlType.Q6_K);
        assertThat(GgmlType.byId(30)).contains(GgmlType.BF16);
        assertThat(GgmlType.byId(4)).isEmpty();   // Q4_2, retired
        assertThat(GgmlType.byId(-1)).isEmpty();
        assertThat(GgmlType.Q4_K.rowBytes(512)).isEqualTo(288);
        assertThat(GgmlType.Q6_K.rowBytes(256)).isEqualTo(210);
        assertThatThrownBy(() -> GgmlType.Q8_0.rowBytes(33)).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> GgmlType.F64.rowBytes(Long.MAX_VALUE)).isInstanceOf(IllegalArgumentException.class);
    }

    @Test
    void closedFilesRefuseReads() {
        GgufFile f = GgufFile.open(resource("/gguf/files/tensors.gguf"));
        GgufTensor t = f.tensor("q8_0_5x64");
        f.close();
        f.close(); // idempotent
        assertThatThrownBy(t::dequantize).isInstanceOf(IllegalStateException.class);
    }
}

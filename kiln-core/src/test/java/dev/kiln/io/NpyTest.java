package dev.kiln.io;

import dev.kiln.types.DType;
import dev.kiln.Tensor;
import dev.kiln.runtime.Buffer;
import dev.kiln.runtime.DeviceRegistry;
import dev.kiln.ir.Elements;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;
import org.junit.jupiter.params.provider.ValueSource;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.net.URISyntaxException;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * The .npy reader and writer: files NumPy wrote (tools/golden/gen_npy.py; element i holds a value the
 * test recomputes), round trips of every dtype and several shapes, and every error.
 */
class NpyTest {
    @TempDir
    Path tmp;

    private static Path resource(String name) {
        try {
            return Path.of(NpyTest.class.getResource("/npy/" + name + ".npy").toURI());
        } catch (URISyntaxException e) {
            throw new IllegalStateException(e);
        }
    }

    /** The value gen_npy.py stores at element i of a file of {@code dtype}. */
    private static double expected(DType dtype, long i) {
        if (dtype.isBool()) return i % 2;
        if (dtype.isUnsigned()) return i;
        if (dtype.isInt()) return i - 3;
        return (i - 3) * 0.5;
    }

    private static void assertGolden(Tensor t, DType dtype, int... shape) {
        assertThat(t.dtype()).isEqualTo(dtype);
        assertThat(t.dims()).containsExactly(shape);
        double[] v = t.toDoubleArray();
        for (int i = 0; i < v.length; i++) assertThat(v[i]).as("element %d", i).isEqualTo(expected(dtype, i));
    }

    private static final Map<String, DType> CODES = Map.ofEntries(Map.entry("b1", DType.BOOL), Map.entry("i1", DType.I8),
            Map.entry("u1", DType.U8), Map.entry("i2", DType.I16), Map.entry("u2", DType.U16), Map.entry("i4", DType.I32),
            Map.entry("u4", DType.U32), Map.entry("i8", DType.I64), Map.entry("u8", DType.U64), Map.entry("f2", DType.F16),
            Map.entry("f4", DType.F32), Map.entry("f8", DType.F64));

    @ParameterizedTest
    @ValueSource(strings = {"b1", "i1", "u1", "i2", "u2", "i4", "u4", "i8", "u8", "f2", "f4", "f8"})
    void readsNumpyLittleEndian(String code) {
        assertGolden(Npy.read(resource("le_" + code)), CODES.get(code), 2, 3);
    }

    @ParameterizedTest
    @ValueSource(strings = {"i2", "u2", "i4", "u4", "i8", "u8", "f2", "f4", "f8"})
    void readsNumpyBigEndian(String code) {
        Npy.Header h = Npy.readHeader(resource("be_" + code));
        assertThat(h.order()).isEqualTo(ByteOrder.BIG_ENDIAN);
        assertGolden(Npy.read(resource("be_" + code)), CODES.get(code), 2, 3);
    }

    @Test
    void readsNumpyShapes() {
        assertGolden(Npy.read(resource("scalar_f4")), DType.F32);
        assertGolden(Npy.read(resource("vector_i8")), DType.I64, 5);
        assertGolden(Npy.read(resource("empty_f4")), DType.F32, 2, 0, 3);
        assertGolden(Npy.read(resource("rank4_f4")), DType.F32, 2, 1, 3, 2);
    }

    @Test
    void readsFortranOrderAsCOrder() {
        assertThat(Npy.readHeader(resource("fortran_f4")).fortranOrder()).isTrue();
        assertGolden(Npy.read(resource("fortran_f4")), DType.F32, 2, 3, 4);
        assertGolden(Npy.read(resource("fortran_be_i2")), DType.I16, 3, 2);
    }

    @Test
    void readsFormatVersions2And3() {
        assertThat(Npy.readHeader(resource("v2_f4")).version()).isEqualTo(2);
        assertThat(Npy.readHeader(resource("v3_f4")).version()).isEqualTo(3);
        assertGolden(Npy.read(resource("v2_f4")), DType.F32, 2, 3);
        assertGolden(Npy.read(resource("v3_f4")), DType.F32, 2, 3);
    }

    @Test
    void readsOntoAGivenDevice() {
        Tensor t = Npy.read(resource("le_f4"), DeviceRegistry.get("INTERP"));
        assertThat(t.device().spec().kind()).isEqualTo("INTERP");
        assertGolden(t, DType.F32, 2, 3);
    }

    @Test
    void rawArrayIsNativeCOrder() {
        Npy.Array a = Npy.readArray(resource("fortran_be_i2"));
        assertThat(a.dtype()).isEqualTo(DType.I16);
        assertThat(a.shape()).containsExactly(3, 2);
        for (int i = 0; i < 6; i++) assertThat(Elements.getLong(a.data(), DType.I16, i)).isEqualTo(i - 3);
    }

    /** Writes NumPy's own bytes back: Kiln's files equal NumPy's for the little-endian C-order cases. */
    @ParameterizedTest
    @ValueSource(strings = {"le_b1", "le_i1", "le_u1", "le_i2", "le_u2", "le_i4", "le_u4", "le_i8", "le_u8", "le_f2", "le_f4",
            "le_f8", "scalar_f4", "vector_i8", "empty_f4", "rank4_f4"})
    void writesTheBytesNumpyWrites(String name) throws IOException {
        Path out = tmp.resolve(name + ".npy");
        Npy.write(out, Npy.read(resource(name)));
        assertThat(Files.readAllBytes(out)).isEqualTo(Files.readAllBytes(resource(name)));
    }

    @ParameterizedTest
    @EnumSource(value = DType.class, names = {"BF16", "Q8_0", "Q4_0"}, mode = EnumSource.Mode.EXCLUDE)
    void roundTripsEveryDtypeAndShape(DType dtype) {
        for (int[] shape : List.of(new int[0], new int[] {0}, new int[] {7}, new int[] {2, 0, 3}, new int[] {3, 4}, new int[] {2, 3, 1, 2})) {
            int n = Arrays.stream(shape).reduce(1, (a, b) -> a * b);
            long[] values = new long[n];
            for (int i = 0; i < n; i++) values[i] = dtype.isBool() ? i % 2 : dtype.isUnsigned() ? i * 7 : i * 7 - 20;
            Tensor t = Tensor.of(dtype, values, n).reshape(shape); // of(...) has no 0-d form
            Path f = tmp.resolve(dtype + "_" + shape.length + "_" + n + ".npy");
            Npy.write(f, t);
            Tensor back = Npy.read(f);
            assertThat(back.dtype()).isEqualTo(dtype);
            assertThat(back.dims()).containsExactly(shape);
            assertThat(back.toDoubleArray()).containsExactly(t.toDoubleArray());
        }
    }

    @Test
    void roundTripsSpecialFloatsBitExactly() {
        double[] v = {Double.NaN, Double.POSITIVE_INFINITY, Double.NEGATIVE_INFINITY, -0.0, Double.MIN_VALUE, 1e300};
        for (DType d : List.of(DType.F16, DType.F32, DType.F64)) {
            Tensor t = Tensor.of(d, v, 6);
            Path f = tmp.resolve(d + ".npy");
            Npy.write(f, t);
            Buffer a = t.buffer();
            MemorySegment b = Npy.readArray(f).data();
            assertThat(b.toArray(java.lang.foreign.ValueLayout.JAVA_BYTE))
                    .isEqualTo(a.segment().asSlice(0, d.byteSize(6)).toArray(java.lang.foreign.ValueLayout.JAVA_BYTE));
        }
    }

    @Test
    void writesNonContiguousTensorsInLogicalOrder() {
        Tensor t = Tensor.arange(6).reshape(2, 3).permute(1, 0);
        Path f = tmp.resolve("t.npy");
        Npy.write(f, t);
        Tensor back = Npy.read(f);
        assertThat(back.dims()).containsExactly(3, 2);
        assertThat(back.toIntArray()).containsExactly(0, 3, 1, 4, 2, 5);
    }

    @Test
    void writesFromASegment() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment s = arena.allocate(4 * 4);
            for (int i = 0; i < 4; i++) s.setAtIndex(java.lang.foreign.ValueLayout.JAVA_INT, i, i * 10);
            Path f = tmp.resolve("s.npy");
            Npy.write(f, DType.I32, new int[] {2, 2}, s);
            assertThat(Npy.read(f).toIntArray()).containsExactly(0, 10, 20, 30);
            Npy.write(f, new Buffer("CPU", DType.I32, 4, s), 4);
            assertThat(Npy.read(f).dims()).containsExactly(4);
        }
    }

    @Test
    void overwritesAtomicallyAndLeavesNoTemporaryFiles() throws IOException {
        Path f = tmp.resolve("x.npy");
        Npy.write(f, Tensor.of(1f, 2f));
        Npy.write(f, Tensor.of(3f));
        assertThat(Npy.read(f).toFloatArray()).containsExactly(3f);
        try (var files = Files.list(tmp)) {
            assertThat(files.map(p -> p.getFileName().toString()).toList()).containsExactly("x.npy");
        }
    }

    // ------------------------------------------------------------------------------------------- errors

    @Test
    void bf16AndPackedCannotBeWritten() throws IOException {
        Path f = tmp.resolve("b.npy");
        assertThatThrownBy(() -> Npy.write(f, Tensor.of(1f, 2f).cast(DType.BF16)))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("bf16 has no NumPy dtype").hasMessageContaining("f32");
        try (Arena arena = Arena.ofConfined()) {
            assertThatThrownBy(() -> Npy.write(f, DType.Q8_0, new int[] {32}, arena.allocate(34)))
                    .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("packed dtype q8_0");
        }
        try (var files = Files.list(tmp)) {
            assertThat(files.toList()).isEmpty();
        }
    }

    @Test
    void tooSmallDataIsAnError() {
        try (Arena arena = Arena.ofConfined()) {
            assertThatThrownBy(() -> Npy.write(tmp.resolve("a.npy"), DType.F32, new int[] {4}, arena.allocate(8)))
                    .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("needs 16 bytes, the data has 8");
        }
    }

    @Test
    void writingIntoAMissingDirectoryFailsWithoutAFile() {
        Path f = tmp.resolve("no/such/dir/x.npy");
        assertThatThrownBy(() -> Npy.write(f, Tensor.of(1f))).isInstanceOf(UncheckedIOException.class).hasMessageContaining(f.toString());
        assertThat(Files.exists(tmp.resolve("no"))).isFalse();
    }

    @Test
    void missingFileIsNoSuchFile() {
        assertThatThrownBy(() -> Npy.read(tmp.resolve("missing.npy"))).isInstanceOf(UncheckedIOException.class)
                .hasCauseInstanceOf(NoSuchFileException.class).hasMessageContaining("missing.npy");
    }

    @Test
    void unsupportedNumpyDtypesAreNamed() {
        assertFormatError("bad_complex", "unsupported dtype '<c8' (complex)", "Kiln reads b1");
        assertFormatError("bad_object", "unsupported dtype '|O' (Python objects)");
        assertFormatError("bad_structured", "unsupported dtype [(", "structured");
        assertFormatError("bad_unicode", "unsupported dtype '<U2' (strings)");
        assertThatThrownBy(() -> Npy.readHeader(resource("bad_complex"))).isInstanceOf(NpyFormatException.class);
    }

    @Test
    void truncatedFilesAreNamed() {
        assertFormatError("bad_truncated_data", "truncated data: expected 24 data bytes for f32 [2, 3], found 22");
        assertFormatError("bad_truncated_header", "truncated header: expected 118 header bytes, found 20");
    }

    @Test
    void malformedFiles() throws IOException {
        assertMalformed(new byte[0], "expected the .npy magic string \\x93NUMPY at the start, found an empty file");
        assertMalformed("PK\u0003\u0004 zip".getBytes(StandardCharsets.ISO_8859_1), "found 'PK\\x03\\x04 z'");
        assertMalformed(headerBytes(4, "{'descr': '<f4', 'fortran_order': False, 'shape': (1,), }"), "expected format version 1.0, 2.0 or 3.0, found 4.0");
        assertMalformed(headerBytes(1, "{'descr': '<f4', 'shape': (1,), }"), "expected the header keys descr, fortran_order and shape, found [descr, shape]");
        assertMalformed(headerBytes(1, "{'descr': '<f4', 'fortran_order': 0, 'shape': (1,), }"), "expected fortran_order True or False, found 0");
        assertMalformed(headerBytes(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (-1,), }"), "expected dimensions between 0 and");
        assertMalformed(headerBytes(1, "{'descr': '<f4', 'fortran_order': False, 'shape': ('a',), }"), "expected shape to be a tuple of integers, found ('a',)");
        assertMalformed(headerBytes(1, "{'descr': '<f4' 'fortran_order': False}"), "malformed header: expected ',' or '}' at character 16");
        assertMalformed(headerBytes(1, "{'descr': <f4}"), "malformed header: expected a Python literal");
        byte[] valid = headerBytes(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (1,), }");
        byte[] trailing = Arrays.copyOf(valid, valid.length + 4 + 3);
        assertMalformed(trailing, "trailing bytes after the data: expected 4 data bytes for f32 [1], found 7");
    }

    @Test
    void deeplyNestedHeadersAreMalformedNotAStackOverflow() throws IOException {
        String deep = "(".repeat(10_000) + ")".repeat(10_000);
        String dict = "{'descr': '<f4', 'fortran_order': False, 'shape': " + deep + ", }";
        byte[] text = (dict + "\n").getBytes(StandardCharsets.ISO_8859_1);
        byte[] content = new byte[12 + text.length];
        System.arraycopy(new byte[] {(byte) 0x93, 'N', 'U', 'M', 'P', 'Y', 2, 0}, 0, content, 0, 8);
        java.nio.ByteBuffer.wrap(content, 8, 4).order(java.nio.ByteOrder.LITTLE_ENDIAN).putInt(text.length);
        System.arraycopy(text, 0, content, 12, text.length);
        Path f = tmp.resolve("nested.npy");
        Files.write(f, content);
        for (var read : List.<org.assertj.core.api.ThrowableAssert.ThrowingCallable>of(() -> Npy.read(f), () -> Npy.readHeader(f))) {
            assertThatThrownBy(read).isInstanceOf(NpyFormatException.class)
                    .hasMessage(f + ": malformed header: tuples and lists nested deeper than 64 levels at character 114");
        }
        // nesting within the bound still parses (and is then rejected for what it is)
        assertMalformed(headerBytes(1, "{'descr': '<f4', 'fortran_order': False, 'shape': ((((1,),),),), }"),
                "expected shape to be a tuple of integers, found ((((1,),),),)");
    }

    private static byte[] headerBytes(int major, String dict) {
        byte[] text = (dict + "\n").getBytes(StandardCharsets.ISO_8859_1);
        byte[] out = new byte[10 + text.length];
        System.arraycopy(new byte[] {(byte) 0x93, 'N', 'U', 'M', 'P', 'Y', (byte) major, 0, (byte) text.length, 0}, 0, out, 0, 10);
        System.arraycopy(text, 0, out, 10, text.length);
        return out;
    }

    private void assertMalformed(byte[] content, String message) throws IOException {
        Path f = tmp.resolve("bad.npy");
        Files.write(f, content);
        assertThatThrownBy(() -> Npy.read(f)).isInstanceOf(NpyFormatException.class).hasMessageStartingWith(f + ": ")
                .hasMessageContaining(message);
    }

    private static void assertFormatError(String name, String... parts) {
        Path f = resource(name);
        var a = assertThatThrownBy(() -> Npy.read(f)).isInstanceOf(NpyFormatException.class)
                .isInstanceOf(IllegalArgumentException.class).hasMessageStartingWith(f + ": ");
        for (String p : parts) a.hasMessageContaining(p);
    }
}

package dev.kiln.llm.safetensors;

import dev.kiln.Tensor;
import dev.kiln.io.Npy;
import dev.kiln.llm.ModelFileException;
import dev.kiln.types.DType;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.net.URISyntaxException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.Map;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * The safetensors reader against a file written by the {@code safetensors} package from PyTorch tensors
 * (tools/golden/gen_gguf.py; safetensors/ref/NAME.npy holds each tensor as f32), and against hand-made bad headers.
 */
class SafetensorsFileTest {

    static Path resource(String name) {
        try {
            return Path.of(SafetensorsFileTest.class.getResource(name).toURI());
        } catch (URISyntaxException e) {
            throw new IllegalStateException(e);
        }
    }

    /** A file: the header's length, the header, then {@code dataBytes} bytes counting up. */
    static byte[] file(String header, int dataBytes) {
        byte[] h = header.getBytes(StandardCharsets.UTF_8);
        ByteBuffer b = ByteBuffer.allocate(8 + h.length + dataBytes).order(ByteOrder.LITTLE_ENDIAN);
        b.putLong(h.length).put(h);
        for (int i = 0; i < dataBytes; i++) b.put((byte) i);
        return b.array();
    }

    @Test
    void readsWhatTheSafetensorsPackageWrote() {
        try (SafetensorsFile f = SafetensorsFile.open(resource("/safetensors/files/model.safetensors"))) {
            assertThat(f.metadata()).isEqualTo(Map.of("format", "pt"));
            assertThat(f.dataOffset() % 8).as("the writer pads the header to 8 bytes").isZero();
            assertThat(f.tensors()).extracting(SafetensorsTensor::name).containsExactlyInAnyOrder("model.embed_tokens.weight", "model.norm.weight",
                    "lm_head.weight", "model.layers.0.self_attn.q_proj.weight", "scalar");
            assertThat(f.tensor("model.norm.weight").dtype()).isEqualTo(DType.F16);
            assertThat(f.tensor("lm_head.weight").dtype()).isEqualTo(DType.BF16);
            assertThat(f.tensor("scalar").shape()).isEmpty();
            for (SafetensorsTensor t : f.tensors()) {
                Npy.Array ref = Npy.readArray(resource("/safetensors/ref/" + t.name() + ".npy"));
                assertThat(t.shape()).as(t.name()).isEqualTo(ref.shape());
                Tensor k = t.toTensor();
                assertThat(k.dtype()).isEqualTo(t.dtype());
                assertThat(k.dims()).isEqualTo(t.shape());
                float[] expected = ref.data().toArray(ValueLayout.JAVA_FLOAT), got = k.toFloatArray();
                for (int i = 0; i < expected.length; i++) {
                    assertThat(Float.floatToRawIntBits(got[i])).as(t.name() + "[" + i + "]").isEqualTo(Float.floatToRawIntBits(expected[i]));
                }
                assertThat(t.byteSize()).isEqualTo(t.numel() * t.dtype().itemSize());
            }
            assertThatThrownBy(() -> f.tensor("nope")).isExactlyInstanceOf(ModelFileException.class).hasMessageContaining("tensor 'nope': expected in the file");
        }
    }

    @Test
    void misalignedDataIsCopiedNotMisread() {
        // a 3-byte header padding would leave F32 data at an odd address: a writer that does not pad
        byte[] bytes = file("{\"x\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}   ", 8);
        MemorySegment native_ = java.lang.foreign.Arena.ofAuto().allocate(bytes.length + 1, 8).asSlice(1);
        native_.copyFrom(MemorySegment.ofArray(bytes));
        SafetensorsFile f = SafetensorsFile.parse(native_, Path.of("odd.safetensors"));
        SafetensorsTensor x = f.tensor("x");
        assertThat(x.data().address() % 4).isNotZero();
        float[] expected = {Float.intBitsToFloat(0x03020100), Float.intBitsToFloat(0x07060504)};
        assertThat(x.toTensor().toFloatArray()).containsExactly(expected);
    }

    @Test
    void everyTruncationIsRefused() throws IOException {
        byte[] whole = Files.readAllBytes(resource("/safetensors/files/model.safetensors"));
        for (int n = 0; n < whole.length; n++) {
            MemorySegment prefix = MemorySegment.ofArray(Arrays.copyOf(whole, n));
            int len = n;
            assertThatThrownBy(() -> SafetensorsFile.parse(prefix, Path.of("cut.safetensors"))).as("cut to " + len)
                    .isExactlyInstanceOf(ModelFileException.class);
        }
    }

    private static Arguments bad(String name, byte[] bytes, String message) { return Arguments.of(name, bytes, message); }

    private static Arguments bad(String name, String header, int dataBytes, String message) { return bad(name, file(header, dataBytes), message); }

    private static String one(String dtype, String shape, String offsets) {
        return "{\"t\":{\"dtype\":" + dtype + ",\"shape\":" + shape + ",\"data_offsets\":" + offsets + "}}";
    }

    static Stream<Arguments> corruptions() {
        byte[] hugeLength = file("{}", 0);
        hugeLength[7] = 0x40;
        byte[] overLimit = file("{}", 0);
        ByteBuffer.wrap(overLimit).order(ByteOrder.LITTLE_ENDIAN).putLong(0, 100_000_001L);
        byte[] badUtf8 = file("{\"t\u00e9\":{}}", 0);
        badUtf8[11] = (byte) 0xFF;
        return Stream.of(
                bad("shorter than the length", new byte[5], "truncated: the 8-byte header length needs 8 bytes, the file has 5"),
                bad("length past the end", hugeLength, "header length: expected 2 to 2 bytes"),
                bad("length over the format's limit", overLimit, "at most 100000000), found 100000001"),
                bad("not JSON", "{\"t\":", 0, "header: expected a JSON object, found invalid JSON"),
                bad("invalid UTF-8", badUtf8, "invalid JSON"),
                bad("array root", "[1,2]", 0, "header: expected a JSON object, found array"),
                bad("trailing garbage", "{} x", 0, "invalid JSON"),
                bad("duplicate tensor", "{\"t\":{},\"t\":{}}", 0, "invalid JSON: Duplicate field 't'"),
                bad("entry not an object", "{\"t\":3}", 0, "tensor 't': expected an object with dtype, shape and data_offsets, found number"),
                bad("unknown field", "{\"t\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offset\":[0,4]}}", 4, "tensor 't': unexpected field 'data_offset'"),
                bad("unsupported dtype", one("\"I64\"", "[1]", "[0,8]"), 8, "tensor 't': dtype I64 is not supported; expected F32, F16 or BF16"),
                bad("dtype not a string", one("32", "[1]", "[0,4]"), 4, "tensor 't': dtype: expected a string, found number"),
                bad("shape not an array", one("\"F32\"", "4", "[0,4]"), 4, "tensor 't': shape: expected an array of integers, found number"),
                bad("negative dimension", one("\"F32\"", "[-1]", "[0,4]"), 4, "tensor 't': shape[0]: expected an integer from 0 to 2147483647, found -1"),
                bad("fractional dimension", one("\"F32\"", "[1.5]", "[0,4]"), 4, "tensor 't': shape[0]: expected an integer"),
                bad("dimension beyond int", one("\"F32\"", "[1,2147483648]", "[0,4]"), 4, "tensor 't': shape[1]: expected an integer from 0 to 2147483647, found 2147483648"),
                bad("value count overflow", one("\"F32\"", "[2147483647,2147483647,2147483647]", "[0,4]"), 4, "the number of values of shape [2147483647,2147483647,2147483647] overflows"),
                bad("byte size overflow", one("\"F32\"", "[2147483647,2147483647,2]", "[0,4]"), 4, "tensor 't': the byte size overflows 64 bits"),
                bad("three offsets", one("\"F32\"", "[1]", "[0,4,8]"), 8, "tensor 't': data_offsets: expected an array of two integers, found array of 3"),
                bad("offset beyond long", one("\"F32\"", "[1]", "[0,99999999999999999999]"), 4, "tensor 't': data_offsets[1]: expected an integer"),
                bad("begin after end", one("\"F32\"", "[1]", "[8,4]"), 8, "tensor 't': data_offsets [8, 4]: expected begin <= end <= 8"),
                bad("past the data", one("\"F32\"", "[2]", "[0,8]"), 4, "tensor 't': data_offsets [0, 8]: expected begin <= end <= 4"),
                bad("size against shape", one("\"F32\"", "[2,2]", "[0,12]"), 16, "tensor 't': data_offsets [0, 12] hold 12 bytes; expected 16 for F32 [2, 2]"),
                bad("overlap", "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},\"b\":{\"dtype\":\"F16\",\"shape\":[2],\"data_offsets\":[4,8]}}", 8,
                        "tensor 'b': data_offsets [4, 8] overlap tensor 'a' at [0, 8]"),
                bad("metadata not an object", "{\"__metadata__\":[]}", 0, "__metadata__: expected an object of strings, found array"),
                bad("metadata value not a string", "{\"__metadata__\":{\"format\":1}}", 0, "__metadata__.format: expected a string, found number"),
                bad("nested too deep", "{\"t\":" + "[".repeat(100) + "]".repeat(100) + "}", 0, "invalid JSON"));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("corruptions")
    void refusedWithATypedErrorNamingTheField(String name, byte[] bytes, String message) {
        assertThatThrownBy(() -> SafetensorsFile.parse(MemorySegment.ofArray(bytes), Path.of("bad.safetensors")))
                .isExactlyInstanceOf(ModelFileException.class)
                .hasMessageStartingWith("bad.safetensors: ")
                .hasMessageContaining(message);
    }

    @Test
    void emptyTensorsAndEmptyFilesAreFine() {
        SafetensorsFile f = SafetensorsFile.parse(MemorySegment.ofArray(file(
                "{\"e\":{\"dtype\":\"F32\",\"shape\":[0,3],\"data_offsets\":[4,4]},\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", 4)),
                Path.of("ok.safetensors"));
        assertThat(f.tensor("e").numel()).isZero();
        assertThat(f.tensor("e").toTensor().dims()).containsExactly(0, 3);
        assertThat(SafetensorsFile.parse(MemorySegment.ofArray(file("{}", 0)), Path.of("ok.safetensors")).tensors()).isEmpty();
    }

    @Test
    void openNamesTheFile(@org.junit.jupiter.api.io.TempDir Path dir) throws IOException {
        assertThatThrownBy(() -> SafetensorsFile.open(dir.resolve("none.safetensors"))).isExactlyInstanceOf(ModelFileException.class)
                .hasMessageContaining("none.safetensors");
        Path p = Files.write(dir.resolve("x.safetensors"), file(one("\"F64\"", "[1]", "[0,8]"), 8));
        assertThatThrownBy(() -> SafetensorsFile.open(p)).isExactlyInstanceOf(ModelFileException.class)
                .hasMessageContaining("x.safetensors: tensor 't': dtype F64 is not supported");
    }
}

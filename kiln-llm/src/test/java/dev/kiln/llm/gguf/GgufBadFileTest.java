package dev.kiln.llm.gguf;

import dev.kiln.llm.ModelFileException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.function.Consumer;
import java.util.stream.Stream;

import static dev.kiln.llm.gguf.GgufDequantTest.resource;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * Hand-made corruptions of a valid GGUF file, one field at a time: each is refused with a {@link ModelFileException}
 * whose message names the file and the field (issue 13's standard: no index exception, no allocation of a claimed
 * size, no wrong answer).
 */
class GgufBadFileTest {
    private static final int F32 = 0, Q8_0 = 8, STRING = 8, UINT32 = 4, BOOL = 7, ARRAY = 9;

    private static Arguments bad(String name, Consumer<GgufBuilder> change, String message) {
        return Arguments.of(name, change, message);
    }

    static Stream<Arguments> corruptions() {
        return Stream.of(
                bad("empty file", b -> b.truncateTo = 0, "truncated: magic needs 4 bytes at offset 0"),
                bad("truncated header", b -> b.truncateTo = 6, "truncated: version needs 4 bytes at offset 4"),
                bad("truncated counts", b -> b.truncateTo = 20, "tensor count at offset 8: 1 exceeds what the remaining 4 bytes can hold (at most 0)"),
                bad("truncated metadata count", b -> { b.noTensors(); b.truncateTo = 20; }, "truncated: metadata count needs 8 bytes at offset 16"),
                bad("wrong magic", b -> b.magic = 0x46554748, "expected the magic GGUF (47 47 55 46) at offset 0, found 48 47 55 46"),
                bad("version 1", b -> b.version = 1, "GGUF version 1 (32-bit counts) is not supported"),
                bad("version 4", b -> b.version = 4, "version: expected 2 or 3, found 4"),
                bad("big-endian", b -> b.version = 0x03000000, "a big-endian GGUF file (version 3) is not supported"),
                bad("huge tensor count", b -> b.tensorCount = 1L << 40, "tensor count at offset 8: 1099511627776 exceeds what the remaining"),
                bad("negative tensor count", b -> b.tensorCount = -1L, "tensor count at offset 8: 18446744073709551615 exceeds"),
                bad("huge metadata count", b -> b.kvCount = 1L << 50, "metadata count at offset 16: 1125899906842624 exceeds"),
                bad("huge key length", b -> b.kvs.addFirst(le -> le.u64(1L << 60)), "metadata key 0 length at offset 24: 1152921504606846976 exceeds"),
                bad("unknown value type", b -> b.kv("k", 13, v -> v.u8(0)), "metadata key 'k': unknown value type 13; expected 0 to 12"),
                bad("huge string", b -> b.kv("k", STRING, v -> v.u64(Long.MAX_VALUE)), "value of metadata key 'k' length"),
                bad("huge array", b -> b.kv("k", ARRAY, v -> v.u32(UINT32).u64(1L << 40)), "length of metadata array 'k'"),
                bad("huge string array", b -> b.kv("k", ARRAY, v -> v.u32(STRING).u64(1L << 40)), "length of metadata array 'k'"),
                bad("unknown array element type", b -> b.kv("k", ARRAY, v -> v.u32(99).u64(1)), "elements of metadata key 'k': unknown value type 99"),
                bad("arrays nested too deep", b -> b.kv("k", ARRAY, GgufBadFileTest::deepArray), "metadata key 'k': arrays nested deeper than 16 levels"),
                bad("duplicate key", b -> b.kv("general.architecture", STRING, v -> v.str("qwen2")), "metadata key 'general.architecture' appears twice"),
                bad("invalid UTF-8 key", b -> b.kvs.addFirst(le -> le.u64(2).u8(0xC3).u8(0x28).u32(BOOL).u8(1)), "metadata key 0 at offset 32: expected UTF-8 text"),
                bad("bool of 2", b -> b.kv("k", BOOL, v -> v.u8(2)), "metadata key 'k': expected a BOOL of 0 or 1, found 2"),
                bad("bool array with 7", b -> b.kv("k", ARRAY, v -> v.u32(BOOL).u64(2).u8(1).u8(7)), "metadata key 'k[1]': expected a BOOL of 0 or 1, found 7"),
                bad("alignment not a power of two", b -> b.kv("general.alignment", UINT32, v -> v.u32(48)),
                        "metadata key 'general.alignment': expected a power of two from 1 to 2^30, found 48"),
                bad("alignment zero", b -> b.kv("general.alignment", UINT32, v -> v.u32(0)), "expected a power of two from 1 to 2^30, found 0"),
                bad("alignment a string", b -> b.kv("general.alignment", STRING, v -> v.str("32")),
                        "metadata key 'general.alignment': expected an unsigned integer, found STRING"),
                bad("five dimensions", b -> b.tensor("t", new long[] {1, 1, 1, 1, 1}, F32, 32), "tensor 't': dimension count: expected 1 to 4, found 5"),
                bad("no dimensions", b -> b.tensor("t", new long[0], F32, 32), "tensor 't': dimension count: expected 1 to 4, found 0"),
                bad("zero dimension", b -> b.tensor("t", new long[] {4, 0}, F32, 32), "tensor 't': dimension ne1: expected 1 to 2147483647, found 0"),
                bad("dimension beyond int", b -> b.tensor("t", new long[] {1L << 31}, F32, 32), "tensor 't': dimension ne0: expected 1 to 2147483647, found 2147483648"),
                bad("negative dimension", b -> b.tensor("t", new long[] {-4}, F32, 32), "found 18446744073709551612"),
                bad("value count overflow", b -> b.tensor("t", new long[] {Integer.MAX_VALUE, Integer.MAX_VALUE, Integer.MAX_VALUE}, F32, 32),
                        "tensor 't': the number of values [2147483647, 2147483647, 2147483647] overflows 64 bits"),
                bad("byte size overflow", b -> b.tensor("t", new long[] {Integer.MAX_VALUE, Integer.MAX_VALUE}, F32, 32), "tensor 't': the byte size overflows 64 bits"),
                bad("unknown type", b -> b.tensor("t", new long[] {4}, 4, 32), "tensor 't': unknown ggml type id 4"),
                bad("huge type id", b -> b.tensor("t", new long[] {4}, -1, 32), "tensor 't': unknown ggml type id 4294967295"),
                bad("row not whole blocks", b -> b.tensor("t", new long[] {33, 2}, Q8_0, 32), "tensor 't': ne0 = 33 is not a multiple of Q8_0's block size 32"),
                bad("misaligned offset", b -> b.tensor("t", new long[] {4}, F32, 16), "tensor 't': offset 16 is not a multiple of the alignment 32"),
                bad("negative offset", b -> b.tensor("t", new long[] {4}, F32, -32), "tensor 't': offset 18446744073709551584 is not a multiple"),
                bad("overlapping tensors", b -> b.tensor("t", new long[] {4}, F32, 0), "tensor 't': data at offset 0 overlaps tensor 'w' at [0, 32)"),
                bad("duplicate tensor name", b -> b.tensor("w", new long[] {4}, F32, 64), "tensor 'w' appears twice"),
                bad("data past the end", b -> b.tensor("t", new long[] {4}, F32, 32), "tensor 't': data [32, 48) of the data section"),
                bad("data section truncated", b -> b.dataBytes = 31, "tensor 'w': data [0, 32) of the data section (32 bytes of F32 [4, 2]) extends past its end at 31"),
                bad("offset far past the end", b -> b.tensor("t", new long[] {4}, F32, 1L << 62), "extends past its end"),
                bad("truncated tensor info", b -> { b.dataBytes = 0; b.truncateTo = 80; }, "truncated: dimension count of tensor 'w' needs 4 bytes at offset 78"),
                bad("huge tensor name", b -> b.tensors.add(le -> le.u64(1L << 61)), "name of tensor 1 length"),
                bad("data section beyond the file", b -> { b.dataBytes = 0; b.alignment = 1; },
                        "truncated: the data section starts at offset 128, beyond the file's 110 bytes"));
    }

    /** 17 levels of single-element arrays of arrays. */
    private static void deepArray(GgufBuilder.Le v) {
        for (int i = 0; i < 17; i++) v.u32(ARRAY).u64(1);
        v.u32(UINT32).u64(1).u32(7);
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("corruptions")
    void refusedWithATypedErrorNamingTheField(String name, Consumer<GgufBuilder> change, String message) {
        GgufBuilder b = GgufBuilder.valid();
        change.accept(b);
        byte[] bytes = b.build();
        assertThatThrownBy(() -> GgufFile.parse(MemorySegment.ofArray(bytes), Path.of("bad.gguf")))
                .isExactlyInstanceOf(ModelFileException.class)
                .hasMessageStartingWith("bad.gguf: ")
                .hasMessageContaining(message);
    }

    @Test
    void theBaseFileIsValid() {
        GgufFile f = GgufFile.parse(MemorySegment.ofArray(GgufBuilder.valid().build()), Path.of("ok.gguf"));
        assertThat(f.tensor("w").dequantize()).hasSize(8);
        assertThat(GgufFile.parse(MemorySegment.ofArray(GgufBuilder.valid().noTensors().build()), Path.of("ok.gguf")).tensors()).isEmpty();
        // a U+FFFD written as such is text, not a decoding error
        GgufFile replacement = GgufFile.parse(MemorySegment.ofArray(GgufBuilder.valid().kv("r", STRING, v -> v.str("a\uFFFDb")).build()), Path.of("ok.gguf"));
        assertThat(replacement.string("r")).isEqualTo("a\uFFFDb");
    }

    /**
     * Every prefix of a real file (written by llama.cpp's writer) that cuts into its tensor data or anything before is
     * refused; the padding after the last tensor is optional.
     */
    @Test
    void everyTruncationIsRefused() throws IOException {
        for (String name : new String[] {"metadata.gguf", "aligned64.gguf", "tensors.gguf"}) {
            byte[] whole = Files.readAllBytes(resource("/gguf/files/" + name));
            GgufFile full = GgufFile.parse(MemorySegment.ofArray(whole), Path.of(name));
            long needed = full.dataOffset() + full.tensors().stream().mapToLong(t -> t.offset() + t.byteSize()).max().orElseThrow();
            assertThat(needed).isLessThan(whole.length); // the writer pads after the last tensor too
            for (int n = 0; n < whole.length; n++) {
                MemorySegment prefix = MemorySegment.ofArray(java.util.Arrays.copyOf(whole, n));
                if (n >= needed) {
                    assertThat(GgufFile.parse(prefix, Path.of(name)).tensors()).hasSameSizeAs(full.tensors());
                } else {
                    int len = n;
                    assertThatThrownBy(() -> GgufFile.parse(prefix, Path.of(name))).as(name + " cut to " + len + " bytes")
                            .isExactlyInstanceOf(ModelFileException.class);
                }
            }
        }
    }

    @Test
    void openNamesTheFileOnIoErrors(@org.junit.jupiter.api.io.TempDir Path dir) throws IOException {
        Path missing = dir.resolve("missing.gguf");
        assertThatThrownBy(() -> GgufFile.open(missing)).isExactlyInstanceOf(ModelFileException.class).hasMessageContaining("missing.gguf");
        Path empty = Files.write(dir.resolve("empty.gguf"), new byte[0]);
        assertThatThrownBy(() -> GgufFile.open(empty)).isExactlyInstanceOf(ModelFileException.class).hasMessageContaining("truncated: magic");
        Path bad = Files.write(dir.resolve("v1.gguf"), GgufBuilder.valid().build());
        Files.write(bad, new byte[] {'G', 'G', 'U', 'F', 1, 0, 0, 0}, java.nio.file.StandardOpenOption.WRITE);
        assertThatThrownBy(() -> GgufFile.open(bad)).isExactlyInstanceOf(ModelFileException.class).hasMessageContaining("v1.gguf: version: GGUF version 1");
    }
}

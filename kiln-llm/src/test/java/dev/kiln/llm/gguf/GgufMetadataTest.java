package dev.kiln.llm.gguf;

import dev.kiln.llm.ModelFileException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.util.List;
import java.util.Map;

import static dev.kiln.llm.gguf.GgufDequantTest.resource;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.entry;

/**
 * Metadata written by llama.cpp's writer (gguf/files/metadata.gguf, see tools/golden/gen_gguf.py, which lists the
 * same values) read back with the documented Java mapping, in v3 and in the same file patched to v2.
 */
class GgufMetadataTest {

    @ParameterizedTest
    @ValueSource(strings = {"metadata.gguf", "v2.gguf"})
    void everyValueTypeRoundTrips(String name) {
        try (GgufFile f = GgufFile.open(resource("/gguf/files/" + name))) {
            assertThat(f.version()).isEqualTo(name.startsWith("v2") ? 2 : 3);
            Map<String, Object> m = f.metadata();
            assertThat(m).contains(
                    entry("general.architecture", "llama"),
                    entry("test.u8", 200L), entry("test.i8", -100L), entry("test.u16", 60000L), entry("test.i16", -30000L),
                    entry("test.u32", 4_000_000_000L), entry("test.i32", -2_000_000_000L),
                    entry("test.f32", (double) 0.1f), entry("test.bool_true", true), entry("test.bool_false", false),
                    entry("test.string", "h\u00e9llo w\u00f6rld \u2764 \uD83D\uDE00"), entry("test.empty_string", ""),
                    entry("test.u64", -1L), entry("test.i64", -9_000_000_000_000_000_000L), entry("test.f64", 3.141592653589793));
            assertThat(m.get("test.arr_u8")).isEqualTo(List.of(0L, 1L, 255L));
            assertThat(m.get("test.arr_i8")).isEqualTo(List.of(-128L, 0L, 127L));
            assertThat(m.get("test.arr_u16")).isEqualTo(List.of(0L, 65535L));
            assertThat(m.get("test.arr_i16")).isEqualTo(List.of(-32768L, 32767L));
            assertThat(m.get("test.arr_u32")).isEqualTo(List.of(0L, 4294967295L));
            assertThat(m.get("test.arr_i32")).isEqualTo(List.of(-1L, 2L, -3L));
            assertThat(m.get("test.arr_u64")).isEqualTo(List.of(1L, -1L));
            assertThat(m.get("test.arr_i64")).isEqualTo(List.of(-5L, 5L));
            assertThat(m.get("test.arr_f32")).isEqualTo(List.of(1.5, -0.25, (double) 0.1f));
            assertThat(m.get("test.arr_f64")).isEqualTo(List.of(2.5, -1e300));
            assertThat(m.get("test.arr_bool")).isEqualTo(List.of(true, false, true));
            assertThat(m.get("test.arr_string")).isEqualTo(List.of("a", "", "\u00df\u4e2d"));
            assertThat(m.get("test.nested_i32")).isEqualTo(List.of(List.of(1L, 2L), List.of(3L), List.of(4L, 5L, 6L)));
            assertThat(m.get("test.nested_string")).isEqualTo(List.of(List.of("x", "y"), List.of("z")));
            assertThat(m.get("test.nested3")).isEqualTo(List.of(List.of(List.of(1L), List.of(2L, 3L)), List.of(List.of(4L))));
            assertThat(f.typeOf("test.u32")).contains("UINT32");
            assertThat(f.typeOf("test.nested_i32")).contains("ARRAY of ARRAY");
            assertThat(f.typeOf("tokenizer.ggml.tokens")).contains("ARRAY of STRING");
            // file order is kept
            assertThat(List.copyOf(m.keySet()).subList(0, 3)).containsExactly("general.architecture", "test.u8", "test.i8");
            assertThat(f.tensor("weight").dequantize()).containsExactly(0, 1, 2, 3, 4, 5);
        }
    }

    @Test
    void typedGettersConvertAndCheck() {
        try (GgufFile f = GgufFile.open(resource("/gguf/files/metadata.gguf"))) {
            assertThat(f.string("general.architecture")).isEqualTo("llama");
            assertThat(f.integer("test.u32")).isEqualTo(4_000_000_000L);
            assertThat(f.optionalInteger("test.i8")).hasValue(-100);
            assertThat(f.optionalInteger("absent")).isEmpty();
            assertThat(f.optionalString("absent")).isEmpty();
            assertThat(f.real("test.f64")).isEqualTo(3.141592653589793);
            assertThat(f.real("test.u64")).isEqualTo(0x1p64);       // unsigned, not -1
            assertThat(f.real("test.i32")).isEqualTo(-2e9);
            assertThat(f.optionalReal("test.f32")).hasValue((double) 0.1f);
            assertThat(f.bool("test.bool_true")).isTrue();
            assertThat(f.optionalBool("absent")).isEmpty();
            assertThat(f.strings("tokenizer.ggml.tokens")).containsExactly("<unk>", "<s>", "</s>", "\u2581the");
            assertThat(f.floats("tokenizer.ggml.scores")).containsExactly(0f, -1f, -2f, -3.5f);
            assertThat(f.ints("tokenizer.ggml.token_type")).containsExactly(2, 3, 3, 1);
            assertThat(f.longs("test.arr_u64")).containsExactly(1L, -1L);
            // 4294967295 is a UINT32 but not an int
            assertThatThrownBy(() -> f.ints("test.arr_u32")).isInstanceOf(ModelFileException.class)
                    .hasMessageContaining("metadata key 'test.arr_u32' [1]: expected a value within int range, found 4294967295");
            assertThatThrownBy(() -> f.ints("test.arr_u64")).isInstanceOf(ModelFileException.class)
                    .hasMessageContaining("found 18446744073709551615");
        }
    }

    @Test
    void typedGettersNameKeyExpectedAndFound() {
        try (GgufFile f = GgufFile.open(resource("/gguf/files/metadata.gguf"))) {
            assertThatThrownBy(() -> f.string("test.u32")).isInstanceOf(ModelFileException.class)
                    .hasMessageContaining("metadata.gguf").hasMessageContaining("metadata key 'test.u32': expected STRING, found UINT32");
            assertThatThrownBy(() -> f.integer("absent.key")).isInstanceOf(ModelFileException.class)
                    .hasMessageContaining("metadata key 'absent.key': expected in the file, not found");
            assertThatThrownBy(() -> f.optionalInteger("test.string")).isInstanceOf(ModelFileException.class)
                    .hasMessageContaining("expected an integer (UINT8 to INT64), found STRING");
            assertThatThrownBy(() -> f.floats("test.arr_f64")).isInstanceOf(ModelFileException.class)
                    .hasMessageContaining("expected ARRAY of FLOAT32, found ARRAY of FLOAT64");
            assertThatThrownBy(() -> f.strings("test.nested_string")).isInstanceOf(ModelFileException.class)
                    .hasMessageContaining("expected ARRAY of STRING, found ARRAY of ARRAY");
            assertThatThrownBy(() -> f.longs("test.arr_string")).isInstanceOf(ModelFileException.class)
                    .hasMessageContaining("expected ARRAY of an integer type, found ARRAY of STRING");
            assertThatThrownBy(() -> f.bool("test.u8")).isInstanceOf(ModelFileException.class)
                    .hasMessageContaining("expected BOOL, found UINT8");
            assertThatThrownBy(() -> f.real("test.string")).isInstanceOf(ModelFileException.class)
                    .hasMessageContaining("expected a number");
            assertThatThrownBy(() -> f.tensor("nope")).isInstanceOf(ModelFileException.class)
                    .hasMessageContaining("tensor 'nope': expected in the file, not found among its 1 tensors");
            assertThatThrownBy(() -> f.metadata().put("x", 1)).isInstanceOf(UnsupportedOperationException.class);
        }
    }

    @Test
    void customAlignmentPlacesTheDataSection() {
        try (GgufFile f = GgufFile.open(resource("/gguf/files/aligned64.gguf"))) {
            assertThat(f.alignment()).isEqualTo(64);
            assertThat(f.integer("general.alignment")).isEqualTo(64);
            assertThat(f.dataOffset() % 64).isZero();
            assertThat(f.tensors()).extracting(GgufTensor::offset).containsExactly(0L, 64L, 128L);
            assertThat(f.tensor("a").dequantize()).containsExactly(0, 1, 2);
            assertThat(f.tensor("b").dequantize()).containsExactly(0, 1, 2, 3, 4);
            assertThat(f.tensor("c").type()).isEqualTo(GgmlType.Q8_0);
        }
    }

    @Test
    void defaultAlignmentIs32() {
        try (GgufFile f = GgufFile.open(resource("/gguf/files/metadata.gguf"))) {
            assertThat(f.alignment()).isEqualTo(32);
            assertThat(f.metadata()).doesNotContainKey("general.alignment");
        }
    }
}

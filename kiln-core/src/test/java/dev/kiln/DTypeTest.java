package dev.kiln;

import dev.kiln.types.DType;
import org.junit.jupiter.api.Test;

import java.util.Arrays;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class DTypeTest {
    private static final List<DType> COMPUTABLE = Arrays.stream(DType.values()).filter(d -> !d.isPacked()).toList();

    /** promote(row, column), the whole documented lattice. */
    private static final String TABLE = """
                 bool i8   u8   i16  u16  i32  u32  i64  u64  f16  bf16 f32  f64
            bool bool i8   u8   i16  u16  i32  u32  i64  u64  f16  bf16 f32  f64
            i8   i8   i8   i16  i16  i32  i32  i64  i64  f32  f16  bf16 f32  f64
            u8   u8   i16  u8   i16  u16  i32  u32  i64  u64  f16  bf16 f32  f64
            i16  i16  i16  i16  i16  i32  i32  i64  i64  f32  f16  bf16 f32  f64
            u16  u16  i32  u16  i32  u16  i32  u32  i64  u64  f16  bf16 f32  f64
            i32  i32  i32  i32  i32  i32  i32  i64  i64  f32  f16  bf16 f32  f64
            u32  u32  i64  u32  i64  u32  i64  u32  i64  u64  f16  bf16 f32  f64
            i64  i64  i64  i64  i64  i64  i64  i64  i64  f32  f16  bf16 f32  f64
            u64  u64  f32  u64  f32  u64  f32  u64  f32  u64  f16  bf16 f32  f64
            f16  f16  f16  f16  f16  f16  f16  f16  f16  f16  f16  f32  f32  f64
            bf16 bf16 bf16 bf16 bf16 bf16 bf16 bf16 bf16 bf16 f32  bf16 f32  f64
            f32  f32  f32  f32  f32  f32  f32  f32  f32  f32  f32  f32  f32  f64
            f64  f64  f64  f64  f64  f64  f64  f64  f64  f64  f64  f64  f64  f64
            """;

    @Test
    void promotionTable() {
        String[] lines = TABLE.strip().split("\n");
        List<DType> columns = Arrays.stream(lines[0].trim().split("\\s+")).map(DType::parse).toList();
        assertThat(columns).containsExactlyElementsOf(COMPUTABLE);
        assertThat(lines).hasSize(COMPUTABLE.size() + 1);
        for (int r = 1; r < lines.length; r++) {
            String[] cells = lines[r].trim().split("\\s+");
            DType a = DType.parse(cells[0]);
            for (int c = 0; c < columns.size(); c++) {
                assertThat(DType.promote(a, columns.get(c))).as("%s + %s", a, columns.get(c)).isEqualTo(DType.parse(cells[c + 1]));
            }
        }
    }

    @Test
    void promotionIsSymmetricIdempotentAndAbsorbing() {
        for (DType a : COMPUTABLE) {
            assertThat(DType.promote(a, a)).isEqualTo(a);
            assertThat(DType.promote(a, DType.BOOL)).isEqualTo(a);
            assertThat(DType.promote(a, DType.F64)).isEqualTo(DType.F64);
            for (DType b : COMPUTABLE) {
                DType ab = DType.promote(a, b);
                assertThat(DType.promote(b, a)).as("%s + %s", b, a).isEqualTo(ab);
                // the result is an upper bound: promoting either operand to it changes nothing
                assertThat(DType.promote(a, ab)).as("%s + (%s + %s)", a, a, b).isEqualTo(ab);
                assertThat(DType.promote(b, ab)).as("%s + (%s + %s)", b, a, b).isEqualTo(ab);
            }
        }
    }

    @Test
    void documentedExamples() {
        assertThat(DType.promote(DType.I8, DType.U8)).isEqualTo(DType.I16);
        assertThat(DType.promote(DType.U8, DType.I16)).isEqualTo(DType.I16);
        assertThat(DType.promote(DType.U32, DType.I32)).isEqualTo(DType.I64);
        assertThat(DType.promote(DType.I32, DType.F16)).isEqualTo(DType.F16);
        assertThat(DType.promote(DType.F16, DType.BF16)).isEqualTo(DType.F32);
        // f16 and bf16 are both minimal above i64 and u64; the least type above both is f32
        assertThat(DType.promote(DType.I64, DType.U64)).isEqualTo(DType.F32);
        assertThat(DType.promote(DType.I8, DType.U64)).isEqualTo(DType.F32);
    }

    @Test
    void packedDtypesTakeNoPartInPromotion() {
        assertThatThrownBy(() -> DType.promote(DType.Q8_0, DType.F32)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("q8_0");
        assertThatThrownBy(() -> DType.promote(DType.F16, DType.Q4_0)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("q4_0");
    }

    @Test
    void itemSizesAndBits() {
        int[] sizes = {1, 1, 1, 2, 2, 4, 4, 8, 8, 2, 2, 4, 8, 34, 18};
        DType[] all = DType.values();
        assertThat(all).hasSize(sizes.length);
        for (int i = 0; i < all.length; i++) assertThat(all[i].itemSize()).as(all[i].toString()).isEqualTo(sizes[i]);
        for (DType d : COMPUTABLE) {
            if (!d.isBool()) assertThat(d.bits()).as(d.toString()).isEqualTo(8 * d.itemSize());
        }
        assertThat(DType.F32.byteSize(10)).isEqualTo(40);
        assertThat(DType.Q8_0.byteSize(64)).isEqualTo(68);
        assertThat(DType.Q4_0.byteSize(32)).isEqualTo(18);
        assertThatThrownBy(() -> DType.Q4_0.byteSize(33)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("q4_0").hasMessageContaining("33");
    }

    @Test
    void integerLimits() {
        assertThat(DType.I8.minInt()).isEqualTo(-128);
        assertThat(DType.I8.maxInt()).isEqualTo(127);
        assertThat(DType.U16.maxInt()).isEqualTo(65535);
        assertThat(DType.I64.minInt()).isEqualTo(Long.MIN_VALUE);
        assertThat(DType.U64.minInt()).isZero();
        assertThat(DType.BOOL.maxInt()).isEqualTo(1);
        assertThatThrownBy(DType.F32::minInt).isInstanceOf(IllegalStateException.class).hasMessageContaining("f32");
    }

    @Test
    void accumulators() {
        assertThat(DType.F16.accumulator()).isEqualTo(DType.F32);
        assertThat(DType.BF16.accumulator()).isEqualTo(DType.F32);
        assertThat(DType.F32.accumulator()).isEqualTo(DType.F32);
        assertThat(DType.F64.accumulator()).isEqualTo(DType.F64);
        for (DType d : List.of(DType.BOOL, DType.I8, DType.I16, DType.I32, DType.I64)) assertThat(d.accumulator()).isEqualTo(DType.I64);
        for (DType d : List.of(DType.U8, DType.U16, DType.U32, DType.U64)) assertThat(d.accumulator()).isEqualTo(DType.U64);
    }

    @Test
    void kinds() {
        assertThat(COMPUTABLE.stream().filter(DType::isFloat)).containsExactly(DType.F16, DType.BF16, DType.F32, DType.F64);
        assertThat(COMPUTABLE.stream().filter(DType::isUnsigned)).containsExactly(DType.U8, DType.U16, DType.U32, DType.U64);
        assertThat(DType.BOOL.isInt()).isFalse();
        assertThat(DType.Q8_0.isPacked()).isTrue();
    }

    @Test
    void parsing() {
        for (DType d : DType.values()) assertThat(DType.parse(d.shortName())).isEqualTo(d);
        assertThat(DType.parse("BF16")).isEqualTo(DType.BF16);
        assertThat(DType.F32.toString()).isEqualTo("f32");
        assertThatThrownBy(() -> DType.parse("float32")).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("'float32'").hasMessageContaining("f32").hasMessageContaining("bf16");
        assertThatThrownBy(() -> DType.parse("")).isInstanceOf(IllegalArgumentException.class).hasMessageContaining("unknown dtype");
    }
}

package dev.kiln;

import dev.kiln.types.DType;
import dev.kiln.types.Shape;
import org.assertj.core.api.ThrowableAssert.ThrowingCallable;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * Element counts and byte sizes computed from shapes never overflow: a shape too large for any buffer, or an
 * operation whose result would be one, is an IllegalArgumentException naming the shape, before anything is
 * allocated, never an ArithmeticException from deep inside or a negative length.
 */
class ShapeOverflowTest {
    private static void assertTooLarge(ThrowingCallable call, String... parts) {
        var a = assertThatThrownBy(call).isExactlyInstanceOf(IllegalArgumentException.class).hasMessageNotContaining("\n");
        for (String p : parts) a.hasMessageContaining(p);
    }

    @Test
    void shapesBeyondAnyBufferAreRefusedWhenMade() {
        assertTooLarge(() -> Shape.of(1 << 20, 1 << 20, 1 << 20), "shape [1048576, 1048576, 1048576] is too large",
                "1152921504606846976 elements", "2^60 - 1");
        assertTooLarge(() -> Shape.of(Integer.MAX_VALUE, Integer.MAX_VALUE, Integer.MAX_VALUE, Integer.MAX_VALUE),
                "21267647892944572736998860269687930881 elements");
        assertTooLarge(() -> Shape.of(0, 1 << 30, 1 << 30, 1 << 30), "shape [0, 1073741824, 1073741824, 1073741824]");
        // the largest shape allowed: every byte size and stride computed from it is exact
        Shape max = Shape.of(1 << 30, (1 << 30) - 1);
        assertThat(max.numel()).isEqualTo((1L << 60) - (1L << 30));
        assertThat(DType.F64.byteSize(max.numel())).isEqualTo(((1L << 60) - (1L << 30)) * 8);
        assertThat(max.strides()).containsExactly((1L << 30) - 1, 1);
        assertThat(Shape.of(0, Integer.MAX_VALUE).numel()).isZero();
    }

    @Test
    void byteSizesThatDoNotFitALongAreRefused() {
        assertTooLarge(() -> DType.F32.byteSize(Long.MAX_VALUE / 2), "4611686018427387903 elements of f32", "2^63 - 1 bytes");
        assertTooLarge(() -> DType.U8.byteSize(-1), "-1 elements of u8", "negative");
        assertThat(DType.U8.byteSize(Long.MAX_VALUE)).isEqualTo(Long.MAX_VALUE);
        assertThat(DType.Q8_0.byteSize(64)).isEqualTo(68);
    }

    @Test
    void tensorsBeyondAnyBufferAreRefusedBeforeAllocating() {
        assertTooLarge(() -> Tensor.zeros(1 << 20, 1 << 20, 1 << 20), "shape [1048576, 1048576, 1048576] is too large");
        assertTooLarge(() -> Tensor.full(1, DType.F64, 1 << 30, 1 << 30, 4), "shape [1073741824, 1073741824, 4]");
        assertTooLarge(() -> Tensor.of(new float[4], 1 << 20, 1 << 20, 1 << 20, 1 << 20), "shape [1048576, 1048576, 1048576, 1048576]");
        Tensor one = Tensor.ones(1, 1, 1);
        assertTooLarge(() -> one.expand(1 << 21, 1 << 21, 1 << 20), "shape [2097152, 2097152, 1048576] is too large",
                "4611686018427387904 elements");
        assertTooLarge(() -> Tensor.ones(1, 1).expand(1 << 30, Integer.MAX_VALUE), "shape [1073741824, 2147483647]");
    }

    @Test
    void movementResultsWhoseAxesOverflowAnIntAreRefused() {
        Tensor x = Tensor.ones(4, 4);
        assertTooLarge(() -> x.tile(1 << 30, 1), "repeat of [4, 4] by [1073741824, 1] gives axis 0 the size 4294967296");
        assertTooLarge(() -> Tensor.ones(1 << 20, 1 << 20).tile(1 << 20, 1 << 20), "repeat of [1048576, 1048576]");
        assertTooLarge(() -> x.pad(new int[][] {{0, Integer.MAX_VALUE}, {0, 0}}), "PAD", "of [4, 4] gives axis 0 the size 2147483651");
        assertTooLarge(() -> Tensor.cat(0, Tensor.ones(1 << 30, 1), Tensor.ones(1 << 30, 1)), "cat of 2 tensors like [1073741824, 1]",
                "size 2147483648");
        Tensor big = Tensor.ones(1, 1, 1).expand(1 << 20, 1 << 20, 1 << 10);
        assertTooLarge(() -> big.reshape(-1), "reshape of [1048576, 1048576, 1024] to [-1] gives axis 0 the size 1125899906842624");
        assertTooLarge(() -> big.reshape(-1, 1 << 30, 1 << 30, 1 << 30), "reshape: cannot infer -1");
        assertTooLarge(() -> x.reshape(1 << 30, 1 << 30, 1 << 30, 1 << 30, 4), "shape [1073741824, 1073741824, 1073741824, 1073741824, 4]");
        assertTooLarge(() -> big.flatten(0, 1), "flatten of [1048576, 1048576, 1024] from axis 0 to 1 gives axis 0 the size 1099511627776");
        assertThat(big.flatten(1, 2).shape()).isEqualTo(Shape.of(1 << 20, 1 << 30));
        assertTooLarge(big::flatten, "flatten of [1048576, 1048576, 1024] gives axis 0 the size 1125899906842624");
        assertThat(big.reshape(1 << 20, -1).shape()).isEqualTo(Shape.of(1 << 20, 1 << 30));
    }

    @Test
    void tensorsTooLargeForAJavaArrayAreNamedBeforeTheyAreComputed() {
        Tensor x = Tensor.zeros(1 << 16, 1 << 16);
        assertTooLarge(x::toFloatArray, "toFloatArray: a tensor of shape [65536, 65536] has 4294967296 elements, more than a Java array holds");
        assertTooLarge(x::toDoubleArray, "toDoubleArray");
        assertTooLarge(x::toLongArray, "toLongArray");
    }
}

package dev.kiln;

import dev.kiln.types.DType;
import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;

import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * Bad-input errors of the core Tensor ops (creation, elementwise, reductions, movement, linear
 * algebra): each is an IllegalArgumentException naming the op, the operands and the offending value.
 */
class CoreOpsErrorsTest {
    private static final Tensor M = Tensor.zeros(3, 4);

    private static void fails(Runnable r, String... parts) {
        var a = assertThatThrownBy(r::run).isInstanceOf(IllegalArgumentException.class);
        for (String p : parts) a.hasMessageContaining(p);
    }

    @Test
    void creation() {
        fails(() -> Tensor.of(new float[5], 2, 3), "of", "5 values", "[2, 3]");
        fails(() -> Tensor.arange(0, 5, 0), "arange", "step");
        fails(() -> Tensor.arange(0.0, 1.0, Double.NaN), "arange", "NaN");
        fails(() -> Tensor.linspace(0, 1, -1), "linspace", "-1");
        fails(() -> Tensor.full(1, DType.Q8_0, 32), "full", "q8_0");
        fails(() -> Tensor.fromSegment(Arena.ofAuto().allocate(8), DType.F32, 3), "fromSegment", "12 bytes", "8");
        fails(() -> M.cast(DType.Q4_0), "cast", "q4_0");
        fails(() -> M.bitcast(DType.F16), "bitcast", "f32", "f16");
    }

    @Test
    void elementwise() {
        fails(() -> M.add(Tensor.zeros(3)), "add", "[3, 4]", "[3]");
        fails(() -> M.lt(Tensor.zeros(2, 4)), "lt", "[2, 4]");
        fails(() -> Tensor.where(Tensor.zeros(DType.BOOL, 2), M, 0.0), "where", "[2]", "[3, 4]");
        fails(() -> Tensor.ones(DType.BOOL, 2).neg(), "neg", "bool");
        fails(() -> M.bitwiseAnd(1), "bitwiseAnd", "f32");
        fails(() -> Tensor.zeros(DType.I32, 2).shl(M), "shl", "f32");
        fails(() -> M.add("x"), "String");
        fails(() -> M.broadcastTo(2, 4), "broadcastTo", "[3, 4]", "[2, 4]");
    }

    @Test
    void reductions() {
        fails(() -> M.sum(2), "sum", "axis 2", "[3, 4]");
        fails(() -> M.max(new int[] {-3}, false), "max", "axis -3");
        fails(() -> M.mean(1, -1), "mean", "given twice");
        fails(() -> Tensor.zeros(2, 0).argmax(1), "argmax", "empty");
        fails(() -> M.cumsum(5), "cumsum", "axis 5");
    }

    @Test
    void movement() {
        fails(() -> M.reshape(5, -1), "reshape", "-1", "[3, 4]");
        fails(() -> M.reshape(-1, -1), "reshape", "more than one -1");
        fails(() -> M.reshape(5, 3), "reshape", "[5, 3]");
        fails(() -> M.permute(0, 0), "permute", "repeated");
        fails(() -> M.permute(0), "permute", "[3, 4]");
        fails(() -> M.expand(3, 5), "expand", "size 4", "5");
        fails(() -> M.squeeze(0), "squeeze", "size 3");
        fails(() -> M.unsqueeze(3), "unsqueeze", "axis 3");
        fails(() -> M.flatten(1, 0), "flatten", "start axis 1");
        fails(() -> M.slice(0, 0, 3, 0), "slice", "step");
        fails(() -> M.pad(new int[][] {{1, 1}}), "pad", "rank 2");
        fails(() -> M.pad(new int[][] {{3, 0}, {0, 0}}, Tensor.PadMode.REFLECT, 0), "pad", "reflect", "axis size 3");
        fails(() -> M.pad(new int[][] {{0, 0}, {5, 0}}, Tensor.PadMode.CIRCULAR, 0), "pad", "circular");
        fails(() -> Tensor.cat(0, M, Tensor.zeros(3)), "cat", "different ranks");
        fails(() -> Tensor.cat(0, M, Tensor.zeros(3, 5)), "cat", "[3, 5]", "axis 1");
        fails(() -> Tensor.stack(0, M, Tensor.zeros(4, 3)), "stack", "[4, 3]");
        fails(() -> M.split(new int[] {1, 1}, 0), "split", "[1, 1]");
        fails(() -> M.split(0, 0), "split", "size");
        fails(() -> M.chunk(0, 0), "chunk", "chunks");
        fails(() -> M.repeat(2), "repeat", "rank 2");
        fails(() -> Tensor.zeros(3).triu(0), "triu", "[3]");
        fails(() -> Tensor.zeros(3).mT(), "mT", "[3]");
    }

    @Test
    void linearAlgebra() {
        fails(() -> M.matmul(Tensor.zeros(3, 2)), "matmul", "[3, 4]", "[3, 2]");
        fails(() -> M.matmul(Tensor.scalar(1.0)), "matmul", "at least 1 axis");
        fails(() -> Tensor.einsum("ij,jk->ik", M), "einsum", "2 operands");
        fails(() -> Tensor.einsum("ijk->i", M), "einsum", "'ijk'");
        fails(() -> Tensor.einsum("ij,jk->ik", M, Tensor.zeros(3, 2)), "einsum", "subscript 'j'");
        fails(() -> Tensor.einsum("ij->x", M), "einsum", "'x'");
        fails(() -> M.linear(Tensor.zeros(4), null), "linear", "2-D");
    }

    @Test
    void aNonNumericOperandNamesTheOp() {
        Tensor x = Tensor.ones(2);
        org.assertj.core.api.Assertions.assertThatThrownBy(() -> x.add("x"))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("add:").hasMessageContaining("got String")
                .hasMessageNotContaining("java.lang."); // the caller's type by its simple name: no JDK package in a message
        org.assertj.core.api.Assertions.assertThatThrownBy(() -> x.pow(new Object()))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("pow:");
    }
}

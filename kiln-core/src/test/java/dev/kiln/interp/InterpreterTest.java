package dev.kiln.interp;

import dev.kiln.types.DType;
import dev.kiln.types.Shape;
import dev.kiln.Tensor;
import dev.kiln.types.Variable;
import dev.kiln.ir.Op;
import dev.kiln.ir.ReduceArg;
import dev.kiln.ir.UOp;
import dev.kiln.ir.Ints;
import dev.kiln.runtime.Buffer;
import dev.kiln.runtime.DeviceRegistry;
import org.junit.jupiter.api.Test;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** The interpreter's buffer and meta ops, and primitives the Tensor API reaches only indirectly. */
class InterpreterTest {
    private static final InterpDevice INTERP = (InterpDevice) DeviceRegistry.get("INTERP");

    @Test
    void realiseIsComputedOnceAndReused() {
        int[] calls = {0};
        Tensor counted = Tensor.custom("count", DType.F32, new int[] {2}, (in, out) -> {
            calls[0]++;
            out.setAtIndex(ValueLayout.JAVA_FLOAT_UNALIGNED, 0, 1f);
            out.setAtIndex(ValueLayout.JAVA_FLOAT_UNALIGNED, 1, 2f);
        });
        counted.realize();
        Tensor y = counted.add(1);
        assertThat(y.toFloatArray()).containsExactly(2f, 3f);
        assertThat(counted.toFloatArray()).containsExactly(1f, 2f);
        assertThat(calls[0]).isEqualTo(1);
    }

    @Test
    void customFunctionReadsItsInputsAndWritesItsOutput() {
        Tensor a = Tensor.of(new float[] {1, 2, 3});
        Tensor doubled = Tensor.custom("double", DType.F32, new int[] {3}, (in, out) -> {
            assertThat(in).hasSize(1);
            assertThat(in.getFirst().isReadOnly()).isTrue();
            for (int i = 0; i < 3; i++) {
                out.setAtIndex(ValueLayout.JAVA_FLOAT_UNALIGNED, i, 2 * in.getFirst().getAtIndex(ValueLayout.JAVA_FLOAT_UNALIGNED, i));
            }
        }, a.mul(1));
        assertThat(doubled.add(1).toFloatArray()).containsExactly(3f, 5f, 7f);
    }

    @Test
    void assignWritesIntoTheTargetBuffer() {
        Tensor target = Tensor.zeros(2, 2).contiguous().realize();
        Tensor assigned = target.assign(Tensor.ones(2, 2).mul(7));
        assertThat(assigned.toFloatArray()).containsExactly(7f, 7f, 7f, 7f);
        assertThat(target.toFloatArray()).containsExactly(7f, 7f, 7f, 7f);
        assertThatThrownBy(() -> target.assign(Tensor.ones(3)))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("assign").hasMessageContaining("[3]").hasMessageContaining("[2, 2]");
    }

    @Test
    void assignOfAShiftedReadOfTheTargetIsComputedBeforeWriting() {
        Tensor target = Tensor.arange(4).cast(DType.F32).contiguous().realize();
        Tensor flipped = target.assign(target.flip(0).add(target));
        var schedule = dev.kiln.schedule.Scheduler.schedule(java.util.List.of(flipped.uop()));
        assertThat(schedule.kernelCount()).as("the flipped value is its own kernel, then the in-place write").isEqualTo(2);
        Tensor elementwise = target.assign(target.mul(2));
        assertThat(dev.kiln.schedule.Scheduler.schedule(java.util.List.of(elementwise.uop())).kernelCount()).isEqualTo(1);
        assertThat(flipped.toFloatArray()).containsExactly(3f, 3f, 3f, 3f);
    }

    @Test
    void copyAndContiguousKeepValues() {
        Tensor a = Tensor.arange(6).reshape(2, 3).mT();
        assertThat(a.contiguous().toIntArray()).containsExactly(0, 3, 1, 4, 2, 5);
        assertThat(a.to("INTERP:1").device().spec().toString()).isEqualTo("INTERP:1");
        assertThat(a.to("INTERP:1").toIntArray()).containsExactly(0, 3, 1, 4, 2, 5);
    }

    @Test
    void fromSegmentCopiesTheData() {
        MemorySegment seg = MemorySegment.ofArray(new float[] {1, 2, 3, 4});
        Tensor t = Tensor.fromSegment(seg, DType.F32, 2, 2);
        seg.setAtIndex(ValueLayout.JAVA_FLOAT, 0, 99f);
        assertThat(t.toFloatArray()).containsExactly(1f, 2f, 3f, 4f);
        assertThatThrownBy(() -> Tensor.fromSegment(seg, DType.F32, 3, 2))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("24 bytes").hasMessageContaining("16");
    }

    @Test
    void mulaccRoundsTwiceAndThreefryMatchesAlu() {
        UOp a = UOp.constant(DType.F32, 1.0000001), b = UOp.constant(DType.F32, 3.0), c = UOp.constant(DType.F32, -3.0);
        UOp mulacc = UOp.of(Op.ADD, DType.F32, null, UOp.of(Op.MUL, DType.F32, null, a, b), c);
        float expected = (float) ((double) (float) (1.0000001f * 3f) - 3.0);
        assertThat(INTERP.realize(mulacc, Map.of()).segment().get(ValueLayout.JAVA_FLOAT_UNALIGNED, 0)).isEqualTo(expected);

        UOp tf = UOp.of(Op.THREEFRY, DType.U64, null, UOp.constant(DType.U64, 0), UOp.constant(DType.U64, 0));
        assertThat(INTERP.realize(tf, Map.of()).segment().get(ValueLayout.JAVA_LONG_UNALIGNED, 0)).isEqualTo(0x99ba4efe6b200159L);
    }

    @Test
    void variablesAreBoundAndChecked() {
        Variable n = new Variable("n", 1, 10);
        UOp expr = UOp.variable(n).mul(3).add(1);
        assertThat(INTERP.realize(expr, Map.of(n, 4L)).segment().get(ValueLayout.JAVA_LONG_UNALIGNED, 0)).isEqualTo(13);
        assertThatThrownBy(() -> INTERP.realize(expr, Map.of())).hasMessageContaining("'n' is not bound");
        assertThatThrownBy(() -> INTERP.realize(expr, Map.of(n, 11L)))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("11").hasMessageContaining("[1, 10]");
    }

    @Test
    void reductionsOverEmptyAxesGiveTheIdentity() {
        UOp empty = UOp.of(Op.RESHAPE, DType.F32, Shape.of(2, 0), UOp.of(Op.EXPAND, DType.F32, Shape.of(0),
                UOp.of(Op.RESHAPE, DType.F32, Shape.of(1), UOp.constant(DType.F32, 1.0))));
        for (var kind : ReduceArg.Kind.values()) {
            Buffer b = INTERP.realize(UOp.of(Op.REDUCE, DType.F32, new ReduceArg(kind, Ints.of(1)), empty), Map.of());
            float v = b.segment().getAtIndex(ValueLayout.JAVA_FLOAT_UNALIGNED, 0);
            float expected = switch (kind) {
                case SUM -> 0f;
                case PROD -> 1f;
                case MAX -> Float.NEGATIVE_INFINITY;
                case MIN -> Float.POSITIVE_INFINITY;
            };
            assertThat(v).as(kind.name()).isEqualTo(expected);
        }
    }

    @Test
    void kernelLevelOpsAreRejectedAtTensorLevel() {
        UOp buf = UOp.buffer(INTERP.allocate(DType.F32, 4));
        UOp load = UOp.of(Op.LOAD, DType.F32, null, buf, UOp.index(0));
        assertThatThrownBy(() -> INTERP.realize(load, Map.of()))
                .isInstanceOf(UnsupportedOperationException.class).hasMessageContaining("kernel-level");
    }
}

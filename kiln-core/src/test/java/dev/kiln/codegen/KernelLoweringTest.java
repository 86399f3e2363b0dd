package dev.kiln.codegen;

import dev.kiln.types.DType;
import dev.kiln.Tensor;
import dev.kiln.schedule.ScheduleItem;
import dev.kiln.schedule.Scheduler;
import org.junit.jupiter.api.Test;

import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

/** Lowering as a structure keeps a broadcast scalar input apart from a full-size one. */
class KernelLoweringTest {
    private static List<Long> sizesOf(Tensor t) {
        for (ScheduleItem item : Scheduler.schedule(List.of(t.uop())).items().reversed()) {
            if (item instanceof ScheduleItem.Kernel k) return KernelLowering.lower(k.output(), k.inputs(), "k").sizes();
        }
        throw new AssertionError("no kernel");
    }

    @Test
    void aBroadcastScalarInputIsNotMistakenForAFullSizeInput() {
        Tensor x = Tensor.of(DType.U8, new long[] {1, 2, 3, 4}, 4), y = Tensor.of(DType.U8, new long[] {5, 6, 7, 8}, 4);
        Tensor s = y.sum().cast(DType.U8).contiguous(); // a rank-0 buffer, broadcast inside the add kernel
        // with the output graph alone as the key, both kernels are EXPAND(RESHAPE(param, [1]), [4]) + the same
        assertThat(sizesOf(x.add(y))).containsExactly(4L, 4L, 4L);
        assertThat(sizesOf(x.add(s))).containsExactly(4L, 4L, 1L);
        assertThat(x.add(s).toLongArray()).containsExactly(27, 28, 29, 30);
    }
}

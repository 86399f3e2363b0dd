package dev.kiln.codegen;

import dev.kiln.types.Shape;
import dev.kiln.ir.GraphRewriter;
import dev.kiln.ir.Op;
import dev.kiln.ir.PatternMatcher;
import dev.kiln.ir.Slot;
import dev.kiln.ir.UOp;
import dev.kiln.schedule.ScheduleItem;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;

/**
 * Lowers a scheduled kernel as its structure: its inputs are replaced by canonical placeholders (parameter
 * slot i, broadcast to the input's shape), so kernels that compute the same thing from different buffers —
 * the same layer with other weights, the same model prepared again — lower to one program; only its name
 * differs. Caching per structure is the {@link dev.kiln.compile.KernelPipeline}'s job (its key holds the
 * placeholders too: the output alone is ambiguous, since a scalar input broadcast inside the kernel and an
 * input of the full shape can give the same output graph, but they are buffers of different sizes).
 */
public final class KernelLowering {
    private KernelLowering() {}

    /** The program of {@code kernel}, lowered as its structure, named {@code name}. */
    public static KernelProgram lower(ScheduleItem.Kernel kernel, String name) {
        return Lowerer.lower(canonical(kernel), "kernel").withName(name);
    }

    /** The kernel with input i replaced by a placeholder of its dtype and shape. */
    static ScheduleItem.Kernel canonical(ScheduleItem.Kernel kernel) {
        Map<UOp, UOp> replace = new IdentityHashMap<>();
        List<UOp> placeholders = new ArrayList<>();
        for (int i = 0; i < kernel.inputs().size(); i++) {
            UOp ph = placeholder(i + 1, kernel.inputs().get(i));
            replace.put(kernel.inputs().get(i), ph);
            placeholders.add(ph);
        }
        return new ScheduleItem.Kernel(GraphRewriter.substitute(kernel.output(), PatternMatcher.replacing(replace)), placeholders);
    }

    private static UOp placeholder(int index, UOp like) {
        UOp slot = new Slot(Slot.Kind.PARAM, index, like.dtype()).uop();
        Shape s = like.shape();
        if (s.rank() == 0) return slot;
        int[] ones = new int[s.rank()];
        Arrays.fill(ones, 1);
        return UOp.of(Op.EXPAND, like.dtype(), s, UOp.of(Op.RESHAPE, like.dtype(), Shape.of(ones), slot));
    }
}

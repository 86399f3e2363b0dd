package dev.kiln.codegen;

import dev.kiln.types.Shape;
import dev.kiln.ir.GraphRewriter;
import dev.kiln.ir.Op;
import dev.kiln.ir.PatternMatcher;
import dev.kiln.ir.Slot;
import dev.kiln.ir.UOp;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

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

    /** The program of the kernel {@code output} over {@code inputs}, lowered as its structure, named {@code name}. */
    public static KernelProgram lower(UOp output, List<UOp> inputs, String name) {
        List<UOp> placeholders = placeholders(inputs);
        return ReduceLoopMerging.merge(Lowerer.lower(canonical(output, inputs, placeholders), placeholders, "kernel")).withName(name);
    }

    /**
     * The {@link Op#CHECK} nodes of the kernel {@code output} over {@code inputs}, as the front end built them (with
     * their names and the sizes they check against), sources before users: a check's position is its site in the
     * lowered program. The kernel reports a failed check by site, and the plan step that runs it names the
     * operation and the range from this list. (The lowerer numbers the canonical graph, inputs as placeholders,
     * whose order is the same.)
     */
    public static List<UOp> indexChecks(UOp output, List<UOp> inputs) {
        List<UOp> out = new ArrayList<>();
        for (UOp u : output.toposort(Set.copyOf(inputs))) if (u.op() == Op.CHECK) out.add(u);
        return out;
    }

    /** Input i as a placeholder of its dtype and shape (parameter slot i + 1). */
    static List<UOp> placeholders(List<UOp> inputs) {
        List<UOp> out = new ArrayList<>();
        for (int i = 0; i < inputs.size(); i++) out.add(placeholder(i + 1, inputs.get(i)));
        return out;
    }

    /** {@code output} with each input replaced by its placeholder. */
    static UOp canonical(UOp output, List<UOp> inputs, List<UOp> placeholders) {
        Map<UOp, UOp> replace = new IdentityHashMap<>();
        for (int i = 0; i < inputs.size(); i++) replace.put(inputs.get(i), placeholders.get(i));
        return GraphRewriter.substitute(output, PatternMatcher.replacing(replace));
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

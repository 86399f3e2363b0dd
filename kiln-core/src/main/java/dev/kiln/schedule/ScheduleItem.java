package dev.kiln.schedule;

import dev.kiln.ir.UOp;

import java.util.List;

/**
 * One step of a schedule. Every step produces one realised node ({@link #output()}) from realised
 * inputs; steps appear in an order where every input is produced before it is read.
 */
public sealed interface ScheduleItem {
    /** The realised node this step produces. */
    UOp output();

    /** The realised nodes this step reads. */
    List<UOp> inputs();

    /**
     * A fused kernel: computes {@code output} from its tensor-level subgraph, which is cut at the
     * realised {@code inputs} (they become loads).
     */
    record Kernel(UOp output, List<UOp> inputs) implements ScheduleItem {}

    /** A move of {@code input}'s data to another device ({@code output} is the COPY node). */
    record Copy(UOp output, List<UOp> inputs) implements ScheduleItem {}

    /** A host function over realised inputs ({@code output} is the CUSTOM node). */
    record Custom(UOp output, List<UOp> inputs) implements ScheduleItem {}

    /**
     * A reshape of a realised node: the output aliases the input's storage (no data moves).
     */
    record View(UOp output, List<UOp> inputs) implements ScheduleItem {}

    /**
     * A concatenation whose pieces were computed in place: the kernel producing each input wrote it into
     * its own range of the output's bytes, from byte {@code offsets[i]}, so this step moves no data. The
     * {@link Scheduler} makes one only where every piece is an intermediate with no other reader, produced
     * by a kernel of its own, and each piece is one contiguous range of the output.
     */
    record Join(UOp output, List<UOp> inputs, List<Long> offsets) implements ScheduleItem {
        public Join {
            inputs = List.copyOf(inputs);
            offsets = List.copyOf(offsets);
            if (inputs.size() != offsets.size()) throw new IllegalArgumentException("join: " + inputs.size() + " inputs, " + offsets.size() + " offsets");
        }
    }
}

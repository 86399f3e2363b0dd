package dev.kiln.schedule;

import dev.kiln.ir.UOp;

import java.util.List;

/**
 * The result of {@link Scheduler#schedule}: the graph outputs and the steps that compute them, in an
 * order where every step's inputs are produced before it runs.
 */
public record Schedule(List<UOp> outputs, List<ScheduleItem> items) {
    /** Number of fused kernels (the tested contract of the kernel cut). */
    public long kernelCount() {
        return items.stream().filter(i -> i instanceof ScheduleItem.Kernel).count();
    }
}

package dev.kiln.testing;

import dev.kiln.Tensor;
import dev.kiln.types.DType;

import java.lang.foreign.MemorySegment;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

/**
 * A host step that holds a run inside a plan or graph: it copies its 4-float input once {@link #release()} is called
 * (or after 10 s), having signalled that a run is inside. Tests of concurrent misuse start a run on one thread, wait
 * for {@link #awaitInside()}, then call the plan from another.
 */
public final class BlockingStep {
    private final CountDownLatch inside = new CountDownLatch(1), release = new CountDownLatch(1);

    /** The step over {@code in} (4 floats): its output equals its input. */
    public Tensor over(Tensor in) {
        return Tensor.custom("block", DType.F32, new int[] {4}, (ins, out) -> {
            inside.countDown();
            try {
                release.await(10, TimeUnit.SECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            MemorySegment.copy(ins.getFirst(), 0, out, 0, 16);
        }, in);
    }

    /** Whether a run entered the step within 10 s. */
    public boolean awaitInside() throws InterruptedException { return inside.await(10, TimeUnit.SECONDS); }

    /** Lets the run inside the step go on. */
    public void release() { release.countDown(); }
}

package dev.kiln.clang;

import dev.kiln.runtime.KernelRunner;

import java.lang.foreign.MemorySegment;

/**
 * A {@link CKernel} bound to the buffers of one prepared step. A segment's size, address, read-only flag
 * and whether it lives on the heap never change, so for the same segments they are checked on the first
 * call only; every call still checks the range, the variables' bounds and that each buffer is alive and
 * usable from the calling thread. Called with other segments, it checks everything, as the kernel does.
 */
final class BoundCKernel implements KernelRunner {
    private static final int UNCHECKED = 0, OFF_HEAP = 1, STAGED = 2;

    private final CKernel kernel;
    private final MemorySegment[] bound; // the segments when bound (a copy: the caller's array is not trusted to stay)
    // one int, written once a call has passed the full checks: a racing worker sees the whole result or none
    private int checked = UNCHECKED;

    BoundCKernel(CKernel kernel, MemorySegment[] buffers) {
        this.kernel = kernel;
        this.bound = buffers.clone();
    }

    @Override
    public void run(MemorySegment[] bufs, long[] vars, long start, long end) {
        int state = checked;
        if (state == UNCHECKED || !isBound(bufs)) {
            boolean heap = kernel.checkAll(bufs, vars, start, end);
            if (isBound(bufs)) checked = heap ? STAGED : OFF_HEAP;
            kernel.runChecked(bufs, vars, start, end, heap);
            return;
        }
        kernel.checkShape(bufs, vars, start, end);
        for (int i = 0; i < bufs.length; i++) kernel.checkUsable(i, bufs[i]);
        kernel.checkVariables(vars);
        kernel.runChecked(bufs, vars, start, end, state == STAGED);
    }

    private boolean isBound(MemorySegment[] bufs) {
        if (bufs.length != bound.length) return false;
        for (int i = 0; i < bufs.length; i++) if (bufs[i] != bound[i]) return false;
        return true;
    }

    @Override
    public String toString() { return kernel + " bound to " + bound.length + " buffers"; }
}

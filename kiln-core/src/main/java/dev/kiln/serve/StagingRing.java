package dev.kiln.serve;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.Map;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.function.BooleanSupplier;
import java.util.function.Consumer;

/**
 * The asynchronous runs of one compiled graph: a commit copies its inputs into a free slot of a small
 * ring (the caller blocks while every slot is taken) and queues the run on the graph's single executor
 * thread, which copies the slot into the plan's input buffers, frees the slot and runs. Runs are strictly
 * ordered, so the inputs of run k+1 reach the plan's buffers only after run k has finished reading them,
 * while the caller stages run k+1 during run k.
 */
final class StagingRing {
    private final SharedGraphState shared;
    private final IoBlock io;
    private final Runnable execute;  // runs the plan on its input buffers and fills the output block
    private final BooleanSupplier enter;    // takes the graph's run guard (RunGuard.enter)
    private final Consumer<Boolean> exit;   // releases it (RunGuard.exit)
    /** The slots, each allocated on its first use: a graph that never commits asynchronously (a language model's,
     * whose inputs include its KV caches) would otherwise hold, and zero, its inputs' size again per slot. */
    private final MemorySegment[] staging;
    private final Arena arena;
    private final long stagingBytes;
    private final BlockingQueue<Integer> freeSlots;
    private ExecutorService executor;
    private Future<?> last;
    private volatile RuntimeException asyncFailure;

    StagingRing(SharedGraphState shared, IoBlock io, Arena arena, Runnable execute, BooleanSupplier enter, Consumer<Boolean> exit) {
        this.shared = shared;
        this.io = io;
        this.execute = execute;
        this.enter = enter;
        this.exit = exit;
        long bytes = 0;
        for (TensorSpec s : shared.inputs) bytes = SharedGraphState.align(bytes + s.byteSize());
        this.stagingBytes = Math.max(bytes, 1);
        this.arena = arena;
        this.staging = new MemorySegment[shared.options.stagingSlots()];
        this.freeSlots = new ArrayBlockingQueue<>(staging.length);
        for (int s = 0; s < staging.length; s++) freeSlots.add(s);
    }

    /** Whether runs have been queued since the last {@link #sync}. */
    boolean pending() { return last != null; }

    /** Whether a queued run failed and {@link #sync} has not reported it yet. */
    boolean failed() { return asyncFailure != null; }

    /**
     * Stages {@code in} (checked beforehand) in a free slot of the ring, waiting for one, and queues the run;
     * with {@code results}, the run's outputs are copied into {@code results[index]}.
     */
    void commit(Map<String, float[]> in, float[][][] results, int index) {
        int slot = takeSlot();
        // only the committing thread (under the graph's run guard) takes a slot, and the executor reads it after submit
        if (staging[slot] == null) staging[slot] = dev.kiln.runtime.Transfers.allocateHost(arena, stagingBytes, SharedGraphState.ALIGN);
        MemorySegment stage = staging[slot];
        long offset = 0;
        boolean[] given = new boolean[io.inputs.length];
        for (int i = 0; i < io.inputs.length; i++) {
            TensorSpec s = shared.inputs.get(i);
            float[] v = in.get(s.name());
            if (v != null) {
                DTypeCodec.writeFloats(v, stage.asSlice(offset, s.byteSize()), s.dtype());
                given[i] = true;
            }
            offset = SharedGraphState.align(offset + s.byteSize());
        }
        if (executor == null) {
            executor = Executors.newSingleThreadExecutor(Thread.ofPlatform().daemon().name("kiln-serve-" + shared.device).factory());
        }
        last = executor.submit(() -> runStaged(slot, given, results, index));
    }

    /** On the executor thread: moves a staged run's inputs into the plan's buffers, frees the slot, runs. */
    private void runStaged(int slot, boolean[] given, float[][][] results, int index) {
        boolean acquired = false;
        try {
            if (asyncFailure != null) return; // an earlier run failed: later ones are skipped, sync reports it
            // held from before the inputs are written: another thread's synchronous call must not see them change
            acquired = enter.getAsBoolean();
            long offset = 0;
            for (int i = 0; i < io.inputs.length; i++) {
                long bytes = shared.inputs.get(i).byteSize();
                if (given[i]) MemorySegment.copy(staging[slot], offset, io.inputs[i], 0, bytes);
                offset = SharedGraphState.align(offset + bytes);
            }
            freeSlots.add(slot);
            slot = -1;
            execute.run();
            if (results != null) {
                float[][] r = new float[io.outputs.length][];
                for (int i = 0; i < io.outputs.length; i++) r[i] = io.readOutput(i);
                results[index] = r;
            }
        } catch (RuntimeException e) {
            asyncFailure = e;
        } finally {
            if (slot >= 0) freeSlots.add(slot);
            exit.accept(acquired);
        }
    }

    private int takeSlot() {
        try {
            return freeSlots.take();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("commit: interrupted while waiting for a free staging slot", e);
        }
    }

    /** Waits for every queued run and reports the first failure. */
    void sync() {
        Future<?> f = last;
        if (f != null) {
            try {
                f.get(); // one executor thread runs commits in order: the last one done means all are
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IllegalStateException("syncPending: interrupted while waiting for committed runs", e);
            } catch (ExecutionException e) {
                throw new IllegalStateException("syncPending: a committed run failed", e.getCause());
            }
            last = null;
        }
        RuntimeException failure = asyncFailure;
        if (failure != null) {
            asyncFailure = null;
            throw failure;
        }
    }

    /** Waits for the queued runs (even if interrupted; the interrupt is kept); failures nobody synced for are dropped. */
    void drain() {
        awaitQuietly(last);
    }

    /** Waits for the queued runs (even if interrupted; the interrupt is kept), then stops the thread; failures nobody synced for are dropped. */
    void close() {
        try {
            awaitQuietly(last); // memory is freed only after the executor has stopped touching it
        } finally {
            if (executor != null) executor.shutdownNow();
        }
    }

    private static void awaitQuietly(Future<?> f) {
        if (f == null) return;
        boolean interrupted = false;
        while (true) {
            try {
                f.get();
                break;
            } catch (InterruptedException e) {
                interrupted = true;
            } catch (ExecutionException e) {
                break; // closing: a failure nobody synced for goes with the graph
            }
        }
        if (interrupted) Thread.currentThread().interrupt();
    }
}

package dev.kiln.runtime;

import dev.kiln.ir.OnceLog;

import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.atomic.AtomicReferenceArray;
import java.util.concurrent.locks.LockSupport;
import java.util.function.IntConsumer;

/**
 * Runs the shares of one split piece of work (a kernel cut into ranges) on the calling thread and on helper threads
 * that poll for shares for {@link #spinNanos} after their last one before they park.
 *
 * <p>Why not the fork/join pool: a parked pool worker took from 50 microseconds to more than 1.5 milliseconds to wake on
 * a 2-vCPU virtual machine (an idle vCPU is halted and rescheduled by the hypervisor), so a 1.5 ms convolution cut in
 * six shares mostly ran all six on the one worker that was awake (SqueezeNet's last 1 x 1 convolution: 1.6 ms on two
 * workers, 1.3 ms on one). A kernel's next split comes microseconds after the last one, so helpers that are still
 * polling take it at once. ONNX Runtime's intra-op threads spin the same way.
 *
 * <p>Shares are claimed from a counter, so the caller runs whatever no helper took; a share may itself split (its thread
 * is then the caller of the nested split). A thread that waits for shares claimed by others never claims, so no wait
 * depends on itself. The first exception a share throws is rethrown to the caller after every share has ended.
 */
final class ShareRunner {
    private static final OnceLog LOG = new OnceLog(ShareRunner.class);
    /** Splits open at once beyond which a split runs on its caller alone (logged once). */
    private static final int SLOTS = 32;

    /** One split: its shares are claimed by index; {@code done} counts the ended ones. */
    private static final class Job {
        final IntConsumer share;
        final int count;
        final AtomicInteger next = new AtomicInteger(), done = new AtomicInteger();
        final AtomicReference<Throwable> failure = new AtomicReference<>();
        volatile Thread waiter;

        Job(IntConsumer share, int count) {
            this.share = share;
            this.count = count;
        }
    }

    /** A helper thread and whether it is parked (read by {@link #run} to decide whom to wake). */
    private final class Helper implements Runnable {
        volatile boolean parked;
        Thread thread;

        @Override
        public void run() {
            while (true) {
                Job j = claimable();
                if (j != null) {
                    work(j);
                    continue;
                }
                long until = System.nanoTime() + spinNanos;
                for (int spins = 1; open.get() == 0 && System.nanoTime() < until; spins++) pause(spins);
                parked = true;
                // published work is seen either here or by the publisher's check of `parked` (both volatile)
                if (claimable() == null) LockSupport.park(this);
                parked = false;
            }
        }
    }

    private final long spinNanos;
    private final AtomicReferenceArray<Job> slots = new AtomicReferenceArray<>(SLOTS);
    /** Jobs in {@link #slots}: helpers poll this one field while idle. */
    private final AtomicInteger open = new AtomicInteger();
    private final Helper[] helpers;

    /**
     * @param helperCount threads beside the callers (the cores less one: a caller runs shares too)
     * @param spinNanos   how long an idle helper polls, and a waiting caller spins, before parking
     */
    ShareRunner(int helperCount, long spinNanos, String name) {
        this.spinNanos = spinNanos;
        this.helpers = new Helper[Math.max(0, helperCount)];
        for (int i = 0; i < helpers.length; i++) {
            Helper h = new Helper();
            h.thread = Thread.ofPlatform().name(name + "-" + i).daemon(true).unstarted(h);
            helpers[i] = h;
            h.thread.start();
        }
    }

    /**
     * Runs {@code share.accept(i)} for every i in {@code [0, count)}, on this thread and on the helpers, and returns
     * when all have ended; rethrows the first exception a share threw (as it is: the same object).
     */
    void run(int count, IntConsumer share) {
        if (count <= 0) return;
        if (count == 1 || helpers.length == 0) {
            for (int i = 0; i < count; i++) share.accept(i);
            return;
        }
        Job job = new Job(share, count);
        int slot = publish(job);
        if (slot < 0) {
            LOG.info("more than " + SLOTS + " splits open at once: a split runs on its calling thread alone");
            for (int i = 0; i < count; i++) share.accept(i);
            return;
        }
        try {
            for (Helper h : helpers) if (h.parked) LockSupport.unpark(h.thread);
            work(job);
        } finally {
            // every share is claimed once work() returns: a helper that still sees the job finds nothing to claim
            slots.set(slot, null);
            open.decrementAndGet();
        }
        await(job);
        switch (job.failure.get()) {
            case null -> { }
            case RuntimeException e -> throw e;
            case Error e -> throw e;
            case Throwable t -> throw new IllegalStateException(t); // an IntConsumer throws no checked exception
        }
    }

    private int publish(Job job) {
        for (int i = 0; i < SLOTS; i++) {
            if (slots.get(i) == null && slots.compareAndSet(i, null, job)) {
                open.incrementAndGet();
                return i;
            }
        }
        return -1;
    }

    /** An open job with a share left to claim, or null. */
    private Job claimable() {
        if (open.get() == 0) return null;
        for (int i = 0; i < SLOTS; i++) {
            Job j = slots.get(i);
            if (j != null && j.next.get() < j.count) return j;
        }
        return null;
    }

    /** Claims and runs shares of {@code job} until none is left to claim. */
    private static void work(Job job) {
        for (int i; (i = job.next.getAndIncrement()) < job.count; ) {
            try {
                job.share.accept(i);
            } catch (Throwable t) {
                job.failure.compareAndSet(null, t);
            } finally {
                if (job.done.incrementAndGet() == job.count) {
                    Thread w = job.waiter;
                    if (w != null) LockSupport.unpark(w);
                }
            }
        }
    }

    /**
     * One step of a polling loop: a spin-wait hint, and every {@link #YIELD_EVERY}th step a yield, so a poller gives its
     * core to another runnable thread on a loaded machine and keeps it when the core is idle (SqueezeNet beside two
     * busy processes on 2 vCPUs: 27.0, 24.4 ms against 28.2, 20.4 ms with the fork/join pool; ONNX Runtime, whose
     * threads spin, 29.7-31.8 ms in the same commands).
     */
    private static void pause(int spins) {
        if (spins % YIELD_EVERY == 0) Thread.yield();
        else Thread.onSpinWait();
    }

    private static final int YIELD_EVERY = 32;

    /** Waits until every share of {@code job} has ended: spinning a while, then parked until the last one ends. */
    private void await(Job job) {
        long until = System.nanoTime() + spinNanos;
        for (int spins = 1; job.done.get() < job.count; spins++) {
            if (System.nanoTime() < until) {
                pause(spins);
                continue;
            }
            job.waiter = Thread.currentThread();
            if (job.done.get() < job.count) LockSupport.park(this);
        }
    }
}

package dev.kiln.llm.server;

import dev.kiln.llm.LanguageModel;
import dev.kiln.llm.generate.Decoder;
import dev.kiln.llm.generate.GeneratedToken;
import dev.kiln.llm.generate.TokenStream;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.UnaryOperator;

/**
 * Runs generations in a fixed number of decode slots, with a bounded queue in front.
 *
 * <p><b>Admission.</b> {@link #submit} admits a job while fewer than {@code parallel + queue} are admitted and not
 * finished; beyond that it refuses with 429 at once (nothing waits unboundedly). Admitted jobs wait in FIFO order.
 *
 * <p><b>The loop.</b> One scheduler thread owns the slots. Each turn it (1) drops cancelled jobs and fills free slots
 * from the queue, each slot starting a {@link TokenStream} on a decoder of its own ({@link LanguageModel#stream}; the
 * model keeps one idle decoder per slot, over its own replica of the compiled graph, so slots never share KV caches
 * or a graph's buffers), (2) runs <em>one step</em> of every active slot through a {@link DecodeStep}, and (3) hands
 * each slot's token to its job and frees the slots whose generation ended, failed or was cancelled. A new request
 * therefore joins between two steps, and a finished or abandoned one leaves between two steps: the shape of
 * continuous batching.
 *
 * <p><b>Per-slot steps, for now.</b> Today's {@link DecodeStep} ({@link PerSlotStep}) advances each active slot's
 * stream on a thread of a fixed pool of {@code parallel} platform threads and waits for all of them: each slot runs
 * its own single-sequence decode (or, on its first step, its prompt's prefill), side by side. Kiln has no batched
 * decode graph yet (one forward pass over the last token of several sequences, each with its own KV cache and
 * position); when it has, a {@code DecodeStep} that gathers the active slots' last tokens into one batched run
 * replaces {@code PerSlotStep} and nothing else here changes. No batching is pretended meanwhile: aggregate throughput
 * comes from running the slots' decodes on several cores at once, not from sharing a step. As in continuous batching
 * without chunked prefill, a new request's prompt is one step, which the other slots wait for; a turn lasts as long
 * as its slowest slot's step.
 *
 * <p>The scheduler never blocks on a client: tokens go to the job's unbounded event queue (a generation's length
 * bounds it), and its handler thread writes them out.
 */
final class Scheduler implements AutoCloseable {
    /** One step of every active slot. A batched decode would implement this with a single forward pass. */
    interface DecodeStep extends AutoCloseable {
        /** Advances each slot of {@code active} by one token ({@link Slot#advance()}), returning when all have. */
        void step(List<Slot> active) throws InterruptedException;

        @Override
        void close();
    }

    /** A decode slot: the job it runs and that job's stream. Touched by the scheduler thread, and during a step by one step thread. */
    static final class Slot {
        final int index;
        Job job;
        TokenStream stream;
        GeneratedToken last;
        RuntimeException failure;

        Slot(int index) { this.index = index; }

        /** One token of this slot's generation (the first call runs the prompt); a failure is kept for the scheduler. */
        void advance() {
            try {
                last = stream.hasNext() ? stream.next() : null;
            } catch (RuntimeException e) {
                failure = e;
            }
        }
    }

    /** Each active slot's step on a thread of its own (a fixed pool), side by side. */
    static final class PerSlotStep implements DecodeStep {
        private final ExecutorService pool;

        PerSlotStep(int threads) {
            AtomicInteger n = new AtomicInteger();
            pool = Executors.newFixedThreadPool(threads, r -> Thread.ofPlatform().daemon().name("kiln-serve-slot-" + n.getAndIncrement()).unstarted(r));
        }

        @Override
        public void step(List<Slot> active) throws InterruptedException {
            if (active.size() == 1) { // nothing to overlap
                active.getFirst().advance();
                return;
            }
            List<Callable<Void>> tasks = new ArrayList<>(active.size());
            for (Slot s : active) tasks.add(() -> {
                s.advance();
                return null;
            });
            for (Future<Void> f : pool.invokeAll(tasks)) {
                try {
                    f.get();
                } catch (ExecutionException e) { // advance() keeps its own failures; an Error lands here
                    throw new IllegalStateException("a decode step failed", e.getCause());
                }
            }
        }

        @Override
        public void close() { pool.shutdownNow(); }
    }

    private final LanguageModel model;
    private final Slot[] slots;
    private final int capacity;
    private final LinkedBlockingQueue<Job> waiting = new LinkedBlockingQueue<>();
    private final AtomicInteger admitted = new AtomicInteger();
    private final AtomicInteger busy = new AtomicInteger();
    private final AtomicLong completed = new AtomicLong(), cancelled = new AtomicLong(), rejected = new AtomicLong(), failed = new AtomicLong();
    private final DecodeStep step;
    private final Thread loop;
    private volatile boolean stopping;
    private volatile Throwable broken; // what stopped the loop other than close()

    /** Slots for {@code parallel} generations and a queue of {@code queue}; each slot's decoder is made (and its graph replicated) now. */
    Scheduler(LanguageModel model, int parallel, int queue) { this(model, parallel, queue, UnaryOperator.identity()); }

    /** With the step wrapped by {@code wrapStep} (tests slow it down or hold it). */
    Scheduler(LanguageModel model, int parallel, int queue, UnaryOperator<DecodeStep> wrapStep) {
        this.model = model;
        this.slots = new Slot[parallel];
        for (int i = 0; i < parallel; i++) slots[i] = new Slot(i);
        this.capacity = parallel + queue;
        warm(model, parallel);
        this.step = wrapStep.apply(new PerSlotStep(parallel));
        this.loop = Thread.ofPlatform().name("kiln-serve-scheduler").daemon().start(this::run);
    }

    /** Opens {@code n} decoders at once and returns them to the model's idle pool, so no request pays for a graph replica. */
    private static void warm(LanguageModel model, int n) {
        List<Decoder> ds = new ArrayList<>(n);
        try {
            for (int i = 0; i < n; i++) ds.add(model.newDecoder());
        } finally {
            for (Decoder d : ds) d.close();
        }
    }

    /**
     * Admits {@code job}, or refuses it.
     *
     * @throws ApiError 429 when every slot is busy and the queue is full; 503 when the server is stopping
     */
    void submit(Job job) {
        if (stopping) throw unavailable();
        for (;;) {
            int n = admitted.get();
            if (n >= capacity) {
                rejected.incrementAndGet();
                throw ApiError.queueFull("the server is busy: all " + slots.length + " decode slots are generating and " + (capacity - slots.length)
                        + " requests are waiting (the queue is full); retry later");
            }
            if (admitted.compareAndSet(n, n + 1)) break;
        }
        waiting.add(job);
        if (stopping) drainWaiting(); // stop() may have drained before this job arrived
    }

    private void run() {
        List<Slot> active = new ArrayList<>(slots.length);
        try {
            while (!stopping) {
                admit();
                active.clear();
                for (Slot s : slots) if (s.job != null) active.add(s);
                if (active.isEmpty()) {
                    Job j = waiting.poll(100, TimeUnit.MILLISECONDS);
                    if (j != null) start(slots[0], j);
                    continue;
                }
                step.step(active);
                for (Slot s : active) deliver(s);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } catch (RuntimeException | Error e) {
            broken = e;
            stopping = true;
            for (Slot s : slots) if (s.job != null) end(s, new Job.Failed(ApiError.internal("the server's scheduler failed: " + e)), failed);
            drainWaiting();
            throw e;
        } finally {
            for (Slot s : slots) if (s.job != null) end(s, new Job.Failed(unavailable()), failed);
            drainWaiting();
        }
    }

    /** 503: stopping, or the loop failed (nothing more will run). */
    private ApiError unavailable() {
        Throwable b = broken;
        return b == null ? ApiError.unavailable("the server is shutting down", "server_shutting_down")
                : ApiError.unavailable("the server cannot generate any more: its scheduler failed (" + b + "); restart it", "scheduler_failed");
    }

    /** Cancelled jobs leave their slots; free slots take waiting jobs. */
    private void admit() {
        for (Slot s : slots) {
            if (s.job != null && s.job.cancelled()) end(s, null, cancelled);
            while (s.job == null) {
                Job j = waiting.poll();
                if (j == null) break;
                start(s, j);
            }
        }
    }

    private void start(Slot s, Job j) {
        if (j.cancelled()) {
            admitted.decrementAndGet();
            cancelled.incrementAndGet();
            return;
        }
        try {
            s.stream = model.stream(j.prompt, j.options);
        } catch (RuntimeException e) { // the handler checked the context already: a failure here is the server's
            admitted.decrementAndGet();
            failed.incrementAndGet();
            j.emit(new Job.Failed(ApiError.internal("the generation could not start: " + e.getMessage())));
            return;
        }
        s.job = j;
        s.last = null;
        s.failure = null;
        busy.incrementAndGet();
    }

    private void deliver(Slot s) {
        if (s.failure != null) {
            end(s, new Job.Failed(ApiError.internal("the generation failed: " + s.failure.getMessage())), failed);
        } else if (s.last == null) {
            end(s, new Job.Failed(ApiError.internal("the generation ended without a finish reason")), failed);
        } else {
            s.job.emit(new Job.Token(s.last));
            if (s.last.isLast()) end(s, new Job.Done(s.stream.result()), completed);
            else if (s.job.cancelled()) end(s, null, cancelled);
        }
    }

    /** Frees {@code s}: its stream closed (its decoder back to the model), the job told {@code last} unless null. */
    private void end(Slot s, Job.Event last, AtomicLong counter) {
        try {
            s.stream.close();
        } finally {
            if (last != null) s.job.emit(last);
            counter.incrementAndGet();
            s.job = null;
            s.stream = null;
            s.last = null;
            s.failure = null;
            busy.decrementAndGet();
            admitted.decrementAndGet();
        }
    }

    private void drainWaiting() {
        for (Job j; (j = waiting.poll()) != null; ) {
            admitted.decrementAndGet();
            failed.incrementAndGet();
            j.emit(new Job.Failed(unavailable()));
        }
    }

    int parallel() { return slots.length; }

    int queueCapacity() { return capacity - slots.length; }

    int busy() { return busy.get(); }

    int waiting() { return waiting.size(); }

    long completed() { return completed.get(); }

    long cancelled() { return cancelled.get(); }

    long rejected() { return rejected.get(); }

    long failed() { return failed.get(); }

    boolean stopping() { return stopping; }

    /** Refuses new jobs, fails the waiting and running ones with 503, and waits for the current step to end. */
    @Override
    public void close() {
        stopping = true;
        try {
            loop.join(30_000);
            if (loop.isAlive()) {
                loop.interrupt();
                loop.join(5_000);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } finally {
            step.close();
        }
    }
}

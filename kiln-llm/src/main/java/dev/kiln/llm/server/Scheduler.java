package dev.kiln.llm.server;

import dev.kiln.llm.LanguageModel;
import dev.kiln.llm.generate.Decoder;
import dev.kiln.llm.generate.GeneratedToken;
import dev.kiln.llm.generate.TokenStream;
import dev.kiln.llm.model.BatchedDecode;

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
 * from the queue, each slot starting a {@link TokenStream}, (2) runs <em>one step</em> of every active slot through a
 * {@link DecodeStep}, and (3) hands each slot's token to its job and frees the slots whose generation ended, failed or
 * was cancelled. A new request therefore joins between two steps, and a finished or abandoned one leaves between two
 * steps: continuous batching.
 *
 * <p><b>Batched steps.</b> With more than one slot the step is {@link BatchedStep}: one forward pass of a
 * {@link BatchedDecode} computes the next token of every slot whose sequence has joined it, each at its own position
 * over its own KV caches, so the weights are read once a step for all slots. A new request's prompt runs on an
 * ordinary decoder in its first step (one prompt after the other, the others waiting: continuous batching without
 * chunked prefill) and its sequence then joins its slot. With one slot the step is {@link PerSlotStep}: that slot's own
 * decode.
 *
 * <p>The scheduler never blocks on a client: tokens go to the job's unbounded event queue (a generation's length
 * bounds it), and its handler thread writes them out.
 */
final class Scheduler implements AutoCloseable {
    /** One step of every active slot. */
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
        SlotDecoder decoder; // the stream's decoder when slots share a batched decode
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

    /** Each active slot's step on a thread of its own (a fixed pool), side by side: with one slot, its own decode. */
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

    /**
     * Every slot's next token in one forward pass ({@link BatchedDecode}): the joined slots' last tokens are gathered and
     * stepped together, each slot's logits handed to its {@link SlotDecoder}, then the streams advance one after the
     * other (sampling, text, stop strings), a slot that has not run its prompt yet running it now on an ordinary
     * decoder and joining the batch. The weights are read once a step for every slot, not once a slot.
     */
    static final class BatchedStep implements DecodeStep {
        private final BatchedDecode batch;

        BatchedStep(BatchedDecode batch) { this.batch = batch; }

        @Override
        public void step(List<Slot> active) {
            int n = batch.slots();
            int[] tokens = new int[n];
            boolean[] joined = new boolean[n];
            boolean any = false;
            for (Slot s : active) {
                if (s.decoder != null && s.decoder.joined()) {
                    tokens[s.index] = s.last.id();
                    joined[s.index] = any = true;
                }
            }
            if (any) {
                try {
                    float[][] logits = batch.step(tokens, joined);
                    for (Slot s : active) if (joined[s.index]) s.decoder.prepare(tokens[s.index], logits[s.index]);
                } catch (RuntimeException e) { // the step is every joined slot's: each fails with it
                    for (Slot s : active) if (joined[s.index]) s.failure = e;
                }
            }
            for (Slot s : active) if (s.failure == null) s.advance();
        }

        @Override
        public void close() { batch.close(); }
    }

    private final LanguageModel model;
    private final BatchedDecode batch; // null with one slot: a step is that slot's own decode
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
        this.batch = parallel > 1 ? model.compiled().newBatchedDecode(parallel) : null;
        warm(model, batch == null ? parallel : 1); // batched, prompts run one at a time on the scheduler's thread
        this.step = wrapStep.apply(batch == null ? new PerSlotStep(parallel) : new BatchedStep(batch));
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
            if (batch == null) s.stream = model.stream(j.prompt, j.options);
            else {
                SlotDecoder d = new SlotDecoder(model, batch, s.index);
                try {
                    s.stream = new TokenStream(d, model.tokenizer(), j.prompt, j.options);
                } catch (RuntimeException e) {
                    d.close();
                    throw e;
                }
                s.decoder = d;
            }
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
            // the counters first: a client that reads its last event and then asks /health sees the slot free
            Job job = s.job;
            counter.incrementAndGet();
            s.job = null;
            s.stream = null;
            s.decoder = null;
            s.last = null;
            s.failure = null;
            busy.decrementAndGet();
            admitted.decrementAndGet();
            if (last != null) job.emit(last);
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

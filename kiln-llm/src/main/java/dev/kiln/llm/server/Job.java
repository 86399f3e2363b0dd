package dev.kiln.llm.server;

import dev.kiln.llm.generate.GeneratedToken;
import dev.kiln.llm.generate.GenerationOptions;
import dev.kiln.llm.generate.GenerationResult;

import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

/**
 * One generation asked of the {@link Scheduler}: its prompt and options, and the events it produces for the request's
 * handler thread. The scheduler never blocks on a job's reader: events go to an unbounded queue, bounded in practice
 * by the generation's length (at most the context). The reader {@link #cancel() cancels} it when its client goes away;
 * the scheduler then stops the generation at its next step and frees the slot.
 */
final class Job {
    /** What a generation reports, in order: tokens, then exactly one {@link Done} or {@link Failed}. */
    sealed interface Event permits Token, Done, Failed {}

    record Token(GeneratedToken token) implements Event {}

    record Done(GenerationResult result) implements Event {}

    record Failed(ApiError error) implements Event {}

    final int[] prompt;
    final GenerationOptions options;
    private final BlockingQueue<Event> events = new LinkedBlockingQueue<>();
    private volatile boolean cancelled;

    Job(int[] prompt, GenerationOptions options) {
        this.prompt = prompt;
        this.options = options;
    }

    /** Asks the scheduler to stop this generation (the client went away); it may already have ended. */
    void cancel() { cancelled = true; }

    boolean cancelled() { return cancelled; }

    void emit(Event e) { events.add(e); }

    /** The next event, waiting for it. */
    Event next() throws InterruptedException { return events.take(); }

    /** The next event, or null after {@code millis}. */
    Event next(long millis) throws InterruptedException { return events.poll(millis, TimeUnit.MILLISECONDS); }
}

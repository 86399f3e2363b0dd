package dev.kiln.llm.generate;

import java.util.Objects;
import java.util.concurrent.Flow;
import java.util.function.Supplier;

/**
 * A generation as a {@link Flow.Publisher}: every subscriber gets its own generation, run on a virtual thread of its
 * own one step per requested token, so demand is backpressure and a cancelled subscription stops the model. Signals
 * follow the Reactive Streams rules: {@code onSubscribe} first, then at most the requested {@code onNext}s, then one
 * {@code onComplete} (after the step that carries the finish reason) or {@code onError}; a request of zero or fewer
 * is an {@code onError(IllegalArgumentException)}.
 */
public final class GenerationPublisher implements Flow.Publisher<GeneratedToken> {
    private final Supplier<TokenStream> streams;

    /** A publisher whose subscribers each run the stream {@code streams} makes (when they subscribe). */
    public GenerationPublisher(Supplier<TokenStream> streams) { this.streams = Objects.requireNonNull(streams); }

    @Override
    public void subscribe(Flow.Subscriber<? super GeneratedToken> subscriber) {
        Objects.requireNonNull(subscriber, "subscriber");
        Run run = new Run(subscriber);
        subscriber.onSubscribe(run);
        Thread.ofVirtual().name("kiln-generate").start(run::loop);
    }

    private final class Run implements Flow.Subscription {
        private final Flow.Subscriber<? super GeneratedToken> subscriber;
        private long demand;
        private boolean cancelled;
        private IllegalArgumentException badRequest;

        Run(Flow.Subscriber<? super GeneratedToken> subscriber) { this.subscriber = subscriber; }

        @Override
        public synchronized void request(long n) {
            if (n <= 0) badRequest = new IllegalArgumentException("request(" + n + "): Reactive Streams rule 3.9 requires a positive count");
            else demand = demand + n < 0 ? Long.MAX_VALUE : demand + n; // saturates, as rule 3.17 allows
            notifyAll();
        }

        @Override
        public synchronized void cancel() {
            cancelled = true;
            notifyAll();
        }

        /** Waits for demand; false when the subscription was cancelled. */
        private synchronized boolean awaitDemand() throws InterruptedException {
            while (demand == 0 && !cancelled && badRequest == null) wait();
            if (badRequest != null || cancelled) return false;
            demand--;
            return true;
        }

        void loop() {
            TokenStream stream = null;
            try {
                stream = streams.get();
                while (awaitDemand() && stream.hasNext()) subscriber.onNext(stream.next()); // a step runs only once asked for
                IllegalArgumentException bad;
                boolean stop;
                synchronized (this) {
                    bad = badRequest;
                    stop = cancelled;
                }
                if (bad != null) subscriber.onError(bad);
                else if (!stop) subscriber.onComplete();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            } catch (RuntimeException | Error e) {
                if (!isCancelled()) subscriber.onError(e);
            } finally {
                if (stream != null) stream.close();
            }
        }

        private synchronized boolean isCancelled() { return cancelled; }
    }
}

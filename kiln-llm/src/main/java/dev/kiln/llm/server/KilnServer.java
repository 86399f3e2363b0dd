package dev.kiln.llm.server;

import com.sun.net.httpserver.HttpServer;
import dev.kiln.llm.LanguageModel;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.net.URI;
import java.time.Instant;
import java.util.Objects;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.function.UnaryOperator;

/**
 * An OpenAI-compatible HTTP server over one {@link LanguageModel}: {@code POST /v1/chat/completions} and
 * {@code POST /v1/completions} (whole or streamed as server-sent events), {@code GET /v1/models} and
 * {@code GET /health}. OpenAI's clients (the official SDKs, LangChain4j's {@code OpenAiChatModel}, curl) talk to it
 * with {@code baseUrl = http://HOST:PORT/v1}.
 *
 * <pre>{@code
 * try (LanguageModel model = LanguageModel.open(Path.of("model.gguf"));
 *      KilnServer server = KilnServer.start(model, ServerOptions.defaults().withPort(0).withModelName("my-model"))) {
 *     System.out.println("listening on " + server.url());
 *     server.awaitStop();
 * }
 * }</pre>
 *
 * <p><b>HTTP.</b> The JDK's own {@code com.sun.net.httpserver} (module {@code jdk.httpserver}) with a
 * virtual-thread-per-exchange executor: no run-time dependency, and a handler may block (waiting for its generation's
 * tokens) without holding a platform thread. It held up under the load test ({@code ServerLoadTest}: 8 concurrent
 * streaming clients sending 320 requests back to back, every answer equal to the single-client one), so no HTTP
 * library is needed.
 *
 * <p><b>Threads.</b> One virtual thread per exchange parses and checks the request (JSON via Jackson, the chat
 * template rendered and tokenized there), submits it to the {@link Scheduler}, and writes its tokens out as they come
 * (or the whole answer at the end). The scheduler's one platform thread owns {@link ServerOptions#parallel()} decode
 * slots and runs a step of every active slot per turn, each slot on a platform thread of a fixed pool with its own
 * decoder (KV caches) over its own replica of the compiled graph. Requests beyond the slots wait in a bounded FIFO
 * queue ({@link ServerOptions#queue()}); beyond that they are refused with 429. The step is per slot today (Kiln has
 * no batched decode graph yet); the scheduler is shaped for continuous batching so that a batched step replaces it
 * (see {@link Scheduler}).
 *
 * <p><b>Refusals</b> are OpenAI's JSON errors: 400 for a malformed or invalid body (naming the parameter), a prompt
 * that does not fit the context ({@code context_length_exceeded}), a parameter Kiln cannot honour, or chat with a
 * model without a chat template; 401 for a missing or wrong API key; 404 for another model's name or an unknown URL;
 * 413 for a body over {@link ServerOptions#maxBodyBytes()}; 429 when the queue is full; 503 while stopping. A client
 * that disconnects from a stream cancels its generation: the slot is free at the next step.
 */
public final class KilnServer implements AutoCloseable {
    private final HttpServer http;
    private final ExecutorService executor;
    private final Scheduler scheduler;
    private final ServerOptions options;
    private final CountDownLatch stopped = new CountDownLatch(1);
    private boolean stopping; // guarded by this

    private KilnServer(HttpServer http, ExecutorService executor, Scheduler scheduler, ServerOptions options) {
        this.http = http;
        this.executor = executor;
        this.scheduler = scheduler;
        this.options = options;
    }

    /**
     * Prepares the decode slots (a decoder per slot) and starts listening on {@link ServerOptions#host()}:{@link
     * ServerOptions#port()}. The model stays the caller's to close, after the server.
     *
     * @throws UncheckedIOException if the address cannot be bound (the port in use, an unknown host)
     */
    public static KilnServer start(LanguageModel model, ServerOptions options) { return start(model, options, UnaryOperator.identity()); }

    /** {@link #start(LanguageModel, ServerOptions)} with the scheduler's step wrapped (for tests). */
    static KilnServer start(LanguageModel model, ServerOptions options, UnaryOperator<Scheduler.DecodeStep> wrapStep) {
        Objects.requireNonNull(model, "model");
        Objects.requireNonNull(options, "options");
        Scheduler scheduler = new Scheduler(model, options.parallel(), options.queue(), wrapStep);
        ExecutorService executor = Executors.newThreadPerTaskExecutor(Thread.ofVirtual().name("kiln-serve-http-", 0).factory());
        HttpServer http;
        try {
            http = HttpServer.create(new InetSocketAddress(options.host(), options.port()), 128);
        } catch (IOException e) {
            scheduler.close();
            executor.close();
            throw new UncheckedIOException("cannot listen on " + options.host() + ":" + options.port() + ": " + e.getMessage(), e);
        }
        http.setExecutor(executor);
        http.createContext("/", new Router(model, options, scheduler, Instant.now().getEpochSecond()));
        http.start();
        return new KilnServer(http, executor, scheduler, options);
    }

    /** The port listened on (the one picked, for port 0). */
    public int port() { return http.getAddress().getPort(); }

    /** The address listened on. */
    public String host() { return options.host(); }

    /** {@code http://HOST:PORT}; OpenAI clients take {@code url() + "/v1"} as their base URL. */
    public URI url() {
        String h = options.host().contains(":") ? "[" + options.host() + "]" : options.host();
        return URI.create("http://" + h + ":" + port());
    }

    /** The options it runs with. */
    public ServerOptions options() { return options; }

    /** Waits until {@link #stop()} has run. */
    public void awaitStop() throws InterruptedException { stopped.await(); }

    /**
     * Stops: new requests get 503, waiting and running generations end with a 503 error (an error event on a stream),
     * the listener closes once the exchanges have finished (at most a second later), and the slots' decoders go back
     * to the model. Idempotent.
     */
    public void stop() {
        synchronized (this) {
            if (stopping) return;
            stopping = true;
        }
        try {
            scheduler.close();
            http.stop(1);
            executor.shutdownNow();
        } finally {
            stopped.countDown();
        }
    }

    /** {@link #stop()}. */
    @Override
    public void close() { stop(); }

    @Override
    public String toString() { return "KilnServer[" + url() + ", model " + options.modelName() + "]"; }
}

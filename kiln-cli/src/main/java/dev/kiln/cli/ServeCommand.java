package dev.kiln.cli;

import dev.kiln.llm.LanguageModel;
import dev.kiln.llm.generate.SamplingOptions;
import dev.kiln.llm.server.KilnServer;
import dev.kiln.llm.server.ServerOptions;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

import java.io.PrintWriter;
import java.io.UncheckedIOException;
import java.nio.file.Path;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

/**
 * {@code kiln serve MODEL}: an OpenAI-compatible HTTP server over a language model ({@link KilnServer}):
 * {@code /v1/chat/completions}, {@code /v1/completions} (streamed or not), {@code /v1/models} and {@code /health}. It
 * prints the URL it listens on (the port it picked, for {@code --port 0}) and serves until Ctrl-C (a shutdown hook
 * stops it: waiting and running requests get 503, the model is closed) or, embedded, until its thread is interrupted.
 *
 * <p>The sampling flags are {@code kiln generate}'s and set what a request's omitted fields take (llama.cpp's
 * defaults, as llama.cpp's server applies them); a request's own {@code temperature}, {@code top_p}, {@code seed},
 * {@code stop} and {@code presence_penalty} win. {@code --seed} fixes the seed of requests that give none (otherwise each
 * draws a fresh one); {@code --stop} gives the stop strings of requests that give none.
 */
@Command(name = "serve", mixinStandardHelpOptions = true, sortOptions = false,
        description = {"Serve a language model over HTTP with OpenAI's API: POST /v1/chat/completions and /v1/completions (streamed as"
                + " server-sent events with \"stream\": true), GET /v1/models and /health. OpenAI clients take http://HOST:PORT/v1 as their base URL.",
                "MODEL is a .gguf file or a Hugging Face folder of the Llama family. Listens on 127.0.0.1 unless --host says otherwise;"
                        + " stops on Ctrl-C.",
                "The sampling flags set what a request's omitted fields take (defaults: llama.cpp's, as kiln generate)."})
final class ServeCommand extends KilnCommand {
    @Parameters(index = "0", paramLabel = "MODEL", description = "A .gguf file or a Hugging Face model folder.")
    Path model;

    @Option(names = "--host", paramLabel = "ADDR", defaultValue = "127.0.0.1",
            description = "Address to listen on; 0.0.0.0 for every interface (then give --api-key) (default: ${DEFAULT-VALUE}).")
    String host;

    @Option(names = "--port", paramLabel = "N", defaultValue = "" + ServerOptions.DEFAULT_PORT,
            description = "TCP port; 0 = any free port, printed at start (default: ${DEFAULT-VALUE}).")
    int port;

    @Option(names = "--api-key", paramLabel = "KEY",
            description = "Require 'Authorization: Bearer KEY' on every /v1/ request (401 otherwise); /health stays open (default: no key).")
    String apiKey;

    @Option(names = "--parallel", paramLabel = "N", defaultValue = "" + ServerOptions.DEFAULT_PARALLEL,
            description = "Decode slots: generations running at once, each with its own KV caches for the whole context (default: ${DEFAULT-VALUE}).")
    int parallel;

    @Option(names = "--queue", paramLabel = "N", defaultValue = "" + ServerOptions.DEFAULT_QUEUE,
            description = "Requests that may wait for a free slot; beyond them a request gets 429 (default: ${DEFAULT-VALUE}).")
    int queue;

    @Option(names = "--max-body", paramLabel = "BYTES", defaultValue = "" + ServerOptions.DEFAULT_MAX_BODY_BYTES,
            description = "The largest request body accepted; a larger one gets 413 (default: ${DEFAULT-VALUE}).")
    int maxBody;

    @Option(names = "--name", paramLabel = "NAME",
            description = "The model's id in /v1/models, which requests must give as \"model\" (default: MODEL's file or folder name without .gguf).")
    String name;

    @Mixin
    SamplingFlags flags;

    @Override
    int execute() throws InterruptedException {
        ServerOptions options = serverOptions();
        LanguageModel lm = openLanguageModel(model, flags);
        CountDownLatch closed = new CountDownLatch(1);
        try (lm) {
            KilnServer server;
            try {
                server = KilnServer.start(lm, options);
            } catch (UncheckedIOException e) {
                throw new IllegalArgumentException("--host " + host + " --port " + port + ": " + e.getMessage(), e);
            }
            Thread hook = Thread.ofPlatform().unstarted(() -> { // Ctrl-C: stop serving, then let this thread close the model
                server.stop();
                try {
                    closed.await(10, TimeUnit.SECONDS);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            });
            Runtime.getRuntime().addShutdownHook(hook);
            try {
                PrintWriter out = out();
                out.println("listening on " + server.url() + "/v1 (model " + options.modelName() + ", context " + lm.contextLength() + " tokens, "
                        + parallel + " slots, queue " + queue + (apiKey != null ? ", API key required" : "") + ")");
                out.flush();
                if (!host.equals("127.0.0.1") && !host.equals("localhost") && !host.equals("::1") && apiKey == null) {
                    err().println("warning: listening on " + host + " without --api-key: anyone who can reach it may use it");
                    err().flush();
                }
                try {
                    server.awaitStop();
                } catch (InterruptedException e) {
                    // embedded: the caller stops the server by interrupting this thread
                }
            } finally {
                server.stop();
                try {
                    Runtime.getRuntime().removeShutdownHook(hook);
                } catch (IllegalStateException e) {
                    // the JVM is shutting down: the hook is what stopped the server
                }
            }
            out().println("stopped");
            out().flush();
        } finally {
            closed.countDown();
        }
        return 0;
    }

    /** The server's options, checked with the command line's names before the model loads. */
    ServerOptions serverOptions() {
        if (host.isBlank()) throw new IllegalArgumentException("--host: expected an address such as 127.0.0.1, got an empty string");
        SamplingFlags.check(port >= 0 && port <= 65535, "--port", "a port number from 0 (any free port) to 65535", port);
        SamplingFlags.check(parallel >= 1 && parallel <= 256, "--parallel", "a number of slots from 1 to 256", parallel);
        SamplingFlags.check(queue >= 0, "--queue", "a whole number >= 0", queue);
        SamplingFlags.check(maxBody >= 1024, "--max-body", "a number of bytes >= 1024", maxBody);
        if (apiKey != null && apiKey.isBlank()) throw new IllegalArgumentException("--api-key: expected a key, got an empty string");
        if (name != null && name.isBlank()) throw new IllegalArgumentException("--name: expected a name, got an empty string");
        SamplingOptions sampling = flags.sampling();
        if (flags.seed == null) {
            sampling = new SamplingOptions(sampling.temperature(), sampling.topK(), sampling.topP(), sampling.minP(), sampling.repetitionPenalty(),
                    sampling.presencePenalty(), sampling.penaltyLastN(), java.util.OptionalLong.empty()); // each request draws its own seed
        }
        String id = name != null ? name : defaultName(model);
        return new ServerOptions(host, port, apiKey, parallel, queue, maxBody, id, sampling, flags.stop);
    }

    /** The file's name without {@code .gguf}, or the folder's name. */
    static String defaultName(Path model) {
        Path f = model.toAbsolutePath().normalize().getFileName();
        String n = f == null ? "model" : f.toString();
        return n.toLowerCase(java.util.Locale.ROOT).endsWith(".gguf") && n.length() > 5 ? n.substring(0, n.length() - 5) : n;
    }
}

package dev.kiln.llm.server;

import dev.kiln.llm.generate.SamplingOptions;

import java.util.List;
import java.util.Objects;

/**
 * How a {@link KilnServer} listens and schedules.
 *
 * @param host         the address to bind; {@code 127.0.0.1} by default, so nothing off the machine reaches it
 * @param port         the TCP port; 0 picks a free one ({@link KilnServer#port()} tells which)
 * @param apiKey       when not null, every {@code /v1/} request must carry {@code Authorization: Bearer <apiKey>}
 *                     (401 otherwise); {@code /health} stays open
 * @param parallel     decode slots: generations running at once, each on its own decoder (KV caches for the whole
 *                     context)
 * @param queue        requests that may wait for a slot; one more is refused with 429
 * @param maxBodyBytes the largest request body read; a larger one is refused with 413
 * @param modelName    the model's id in {@code /v1/models}; requests must name it (404 otherwise)
 * @param sampling     what a request's omitted sampling fields take ({@link SamplingOptions#defaults()}: OpenAI's
 *                     temperature 1, no filter); its seed, if any, is the seed of requests that give none
 * @param stop         stop strings of requests that give none
 */
public record ServerOptions(String host, int port, String apiKey, int parallel, int queue, int maxBodyBytes, String modelName,
                            SamplingOptions sampling, List<String> stop) {
    public static final int DEFAULT_PORT = 8080, DEFAULT_PARALLEL = 4, DEFAULT_QUEUE = 16, DEFAULT_MAX_BODY_BYTES = 1 << 20;

    public ServerOptions {
        Objects.requireNonNull(host, "host");
        if (port < 0 || port > 65535) throw new IllegalArgumentException("port: expected 0 (any free port) to 65535, got " + port);
        if (apiKey != null && apiKey.isBlank()) throw new IllegalArgumentException("apiKey: expected some text or null, got an empty string");
        if (parallel < 1) throw new IllegalArgumentException("parallel: expected at least 1 slot, got " + parallel);
        if (queue < 0) throw new IllegalArgumentException("queue: expected 0 or more waiting requests, got " + queue);
        if (maxBodyBytes < 1024) throw new IllegalArgumentException("maxBodyBytes: expected at least 1024, got " + maxBodyBytes);
        Objects.requireNonNull(modelName, "modelName");
        if (modelName.isBlank()) throw new IllegalArgumentException("modelName: expected a name, got an empty string");
        Objects.requireNonNull(sampling, "sampling");
        stop = List.copyOf(stop);
        for (String s : stop) if (s.isEmpty()) throw new IllegalArgumentException("stop strings must not be empty");
    }

    /** 127.0.0.1:8080, no key, 4 slots, 16 waiting, 1 MiB bodies, model "kiln", OpenAI's sampling defaults, no stop string. */
    public static ServerOptions defaults() {
        return new ServerOptions("127.0.0.1", DEFAULT_PORT, null, DEFAULT_PARALLEL, DEFAULT_QUEUE, DEFAULT_MAX_BODY_BYTES, "kiln",
                SamplingOptions.defaults(), List.of());
    }

    public ServerOptions withHost(String h) { return new ServerOptions(h, port, apiKey, parallel, queue, maxBodyBytes, modelName, sampling, stop); }

    public ServerOptions withPort(int p) { return new ServerOptions(host, p, apiKey, parallel, queue, maxBodyBytes, modelName, sampling, stop); }

    public ServerOptions withApiKey(String k) { return new ServerOptions(host, port, k, parallel, queue, maxBodyBytes, modelName, sampling, stop); }

    public ServerOptions withParallel(int n) { return new ServerOptions(host, port, apiKey, n, queue, maxBodyBytes, modelName, sampling, stop); }

    public ServerOptions withQueue(int n) { return new ServerOptions(host, port, apiKey, parallel, n, maxBodyBytes, modelName, sampling, stop); }

    public ServerOptions withMaxBodyBytes(int n) { return new ServerOptions(host, port, apiKey, parallel, queue, n, modelName, sampling, stop); }

    public ServerOptions withModelName(String n) { return new ServerOptions(host, port, apiKey, parallel, queue, maxBodyBytes, n, sampling, stop); }

    public ServerOptions withSampling(SamplingOptions s) { return new ServerOptions(host, port, apiKey, parallel, queue, maxBodyBytes, modelName, s, stop); }

    public ServerOptions withStop(List<String> s) { return new ServerOptions(host, port, apiKey, parallel, queue, maxBodyBytes, modelName, sampling, s); }
}

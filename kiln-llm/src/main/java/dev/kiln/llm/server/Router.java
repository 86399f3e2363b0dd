package dev.kiln.llm.server;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpHandler;
import dev.kiln.llm.LanguageModel;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;

/**
 * Every request's way through the server: the route and method, the API key, the body's size, then the endpoint.
 * Refusals are {@link ApiError}s, sent as OpenAI's JSON errors; a client that went away ends its exchange quietly.
 *
 * <ul>
 *   <li>{@code GET /health}: the server's state (open without a key);</li>
 *   <li>{@code GET /v1/models}, {@code GET /v1/models/{id}}: the one model served;</li>
 *   <li>{@code POST /v1/chat/completions}, {@code POST /v1/completions}: generation ({@link Completions}).</li>
 * </ul>
 */
final class Router implements HttpHandler {
    private final LanguageModel model;
    private final ServerOptions options;
    private final Scheduler scheduler;
    private final Completions completions;
    private final byte[] key;
    private final long created;

    Router(LanguageModel model, ServerOptions options, Scheduler scheduler, long created) {
        this.model = model;
        this.options = options;
        this.scheduler = scheduler;
        this.completions = new Completions(scheduler, options.modelName());
        this.key = options.apiKey() == null ? null : ("Bearer " + options.apiKey()).getBytes(StandardCharsets.UTF_8);
        this.created = created;
    }

    @Override
    public void handle(HttpExchange ex) {
        try (ex) {
            try {
                route(ex);
            } catch (ApiError e) {
                sendError(ex, e);
            } catch (IOException e) {
                // the client went away; nothing to answer
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                sendError(ex, ApiError.unavailable("the server is shutting down", "server_shutting_down"));
            } catch (RuntimeException e) {
                sendError(ex, ApiError.internal("internal error: " + e));
            }
        }
    }

    private void route(HttpExchange ex) throws IOException, InterruptedException {
        String path = ex.getRequestURI().getPath();
        if (path.equals("/health")) {
            allow(ex, "GET");
            health(ex);
            return;
        }
        if (!path.startsWith("/v1/")) throw invalidUrl(ex);
        authorize(ex);
        switch (path) {
            case "/v1/models" -> {
                allow(ex, "GET");
                ObjectNode o = JsonNodeFactory.instance.objectNode();
                o.put("object", "list");
                o.putArray("data").add(modelObject());
                sendJson(ex, 200, o);
            }
            case "/v1/chat/completions", "/v1/completions" -> {
                allow(ex, "POST");
                boolean chat = path.equals("/v1/chat/completions");
                JsonNode body = Requests.parse(body(ex));
                completions.serve(ex, Requests.read(body, chat, model, options.modelName(), options));
            }
            default -> {
                if (path.startsWith("/v1/models/")) {
                    allow(ex, "GET");
                    String id = path.substring("/v1/models/".length());
                    if (!id.equals(options.modelName())) {
                        throw ApiError.notFound("The model '" + id + "' does not exist: this server serves '" + options.modelName() + "'", "model_not_found");
                    }
                    sendJson(ex, 200, modelObject());
                } else throw invalidUrl(ex);
            }
        }
    }

    private static ApiError invalidUrl(HttpExchange ex) {
        return ApiError.notFound("Invalid URL (" + ex.getRequestMethod() + " " + ex.getRequestURI().getPath() + ")", "unknown_url");
    }

    private static void allow(HttpExchange ex, String method) {
        if (!ex.getRequestMethod().equals(method)) {
            ex.getResponseHeaders().set("Allow", method);
            throw ApiError.methodNotAllowed("Method " + ex.getRequestMethod() + " is not allowed for " + ex.getRequestURI().getPath() + "; use " + method);
        }
    }

    /** With an API key, the request must carry {@code Authorization: Bearer <key>} (compared in constant time). */
    private void authorize(HttpExchange ex) {
        if (key == null) return;
        String given = ex.getRequestHeaders().getFirst("Authorization");
        if (given == null) {
            ex.getResponseHeaders().set("WWW-Authenticate", "Bearer");
            throw ApiError.unauthorized("You didn't provide an API key. You need to provide your API key in an Authorization header using Bearer auth"
                    + " (i.e. Authorization: Bearer YOUR_KEY).");
        }
        if (!MessageDigest.isEqual(given.strip().getBytes(StandardCharsets.UTF_8), key)) {
            ex.getResponseHeaders().set("WWW-Authenticate", "Bearer");
            throw ApiError.unauthorized("Incorrect API key provided.");
        }
    }

    /** The body, at most {@link ServerOptions#maxBodyBytes()}: refused with 413 from its Content-Length, or once it reads past that. */
    private byte[] body(HttpExchange ex) throws IOException {
        int max = options.maxBodyBytes();
        String length = ex.getRequestHeaders().getFirst("Content-Length");
        if (length != null) {
            long n;
            try {
                n = Long.parseLong(length.strip());
            } catch (NumberFormatException e) {
                throw ApiError.invalid("Content-Length: expected a number of bytes, got '" + length + "'", null);
            }
            if (n > max) throw tooLarge(ex, n + " bytes", max);
        }
        try (InputStream in = ex.getRequestBody()) {
            byte[] b = in.readNBytes(max + 1);
            if (b.length > max) throw tooLarge(ex, "more than " + max + " bytes", max);
            return b;
        }
    }

    private static ApiError tooLarge(HttpExchange ex, String size, int max) {
        ex.getResponseHeaders().set("Connection", "close"); // the rest of the body is not read
        return ApiError.tooLarge("the request body (" + size + ") is over this server's limit of " + max + " bytes");
    }

    private ObjectNode modelObject() {
        ObjectNode m = JsonNodeFactory.instance.objectNode();
        m.put("id", options.modelName());
        m.put("object", "model");
        m.put("created", created);
        m.put("owned_by", "kiln");
        m.put("context_length", model.contextLength());
        return m;
    }

    private void health(HttpExchange ex) throws IOException {
        ObjectNode o = JsonNodeFactory.instance.objectNode();
        boolean stopping = scheduler.stopping();
        o.put("status", stopping ? "stopping" : "ok");
        o.put("model", options.modelName());
        ObjectNode slots = o.putObject("slots");
        slots.put("total", scheduler.parallel());
        slots.put("busy", scheduler.busy());
        ObjectNode queue = o.putObject("queue");
        queue.put("capacity", scheduler.queueCapacity());
        queue.put("waiting", scheduler.waiting());
        ObjectNode req = o.putObject("requests");
        req.put("completed", scheduler.completed());
        req.put("cancelled", scheduler.cancelled());
        req.put("failed", scheduler.failed());
        req.put("rejected", scheduler.rejected());
        sendJson(ex, stopping ? 503 : 200, o);
    }

    static void sendJson(HttpExchange ex, int status, JsonNode json) throws IOException {
        byte[] b = Requests.JSON.writeValueAsBytes(json);
        ex.getResponseHeaders().set("Content-Type", "application/json");
        ex.sendResponseHeaders(status, b.length);
        ex.getResponseBody().write(b);
    }

    private static void sendError(HttpExchange ex, ApiError e) {
        if (ex.getResponseCode() != -1) return; // the response began (a stream): it carries its own error event
        try {
            if (e.status == 429 || e.status == 503) ex.getResponseHeaders().set("Retry-After", "1");
            sendJson(ex, e.status, e.body());
        } catch (IOException ignored) {
            // the client went away
        }
    }
}

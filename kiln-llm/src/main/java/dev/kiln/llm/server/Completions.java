package dev.kiln.llm.server;

import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.sun.net.httpserver.HttpExchange;
import dev.kiln.llm.generate.GenerationResult;

import java.io.IOException;
import java.security.SecureRandom;
import java.time.Instant;

/**
 * The two generating endpoints, {@code /v1/chat/completions} and {@code /v1/completions}: a checked request becomes a
 * {@link Job}, and its events become OpenAI's response, whole ({@code chat.completion} / {@code text_completion}) or as
 * server-sent chunks ({@code chat.completion.chunk} / {@code text_completion}). The handler thread (a virtual thread
 * per exchange) waits on the job's events; the scheduler never waits on it.
 */
final class Completions {
    private static final JsonNodeFactory F = JsonNodeFactory.instance;
    private static final SecureRandom RANDOM = new SecureRandom();
    private static final String ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";

    private final Scheduler scheduler;
    private final String modelName;

    Completions(Scheduler scheduler, String modelName) {
        this.scheduler = scheduler;
        this.modelName = modelName;
    }

    /** Runs {@code r} and answers it on {@code ex}; an {@link ApiError} before the response began is the caller's to send. */
    void serve(HttpExchange ex, Requests.Request r) throws IOException, InterruptedException {
        Job job = new Job(r.prompt(), r.options());
        scheduler.submit(job);
        String id = (r.chat() ? "chatcmpl-" : "cmpl-") + randomId();
        long created = Instant.now().getEpochSecond();
        try {
            if (r.stream()) stream(ex, r, job, id, created);
            else whole(ex, r, job, id, created);
        } finally {
            job.cancel(); // nothing when it ended; otherwise (client gone, thread interrupted) its slot is freed at the next step
        }
    }

    private void whole(HttpExchange ex, Requests.Request r, Job job, String id, long created) throws IOException, InterruptedException {
        for (;;) {
            switch (job.next()) {
                case Job.Token t -> { }
                case Job.Failed f -> throw f.error();
                case Job.Done d -> {
                    GenerationResult res = d.result();
                    ObjectNode o = head(r, id, created, false);
                    ObjectNode c = o.putArray("choices").addObject();
                    c.put("index", 0);
                    if (r.chat()) {
                        ObjectNode m = c.putObject("message");
                        m.put("role", "assistant");
                        m.put("content", res.text());
                        m.putNull("refusal");
                    } else c.put("text", res.text());
                    c.putNull("logprobs");
                    c.put("finish_reason", res.finish().openAiName());
                    o.set("usage", usage(r.prompt().length, res));
                    Router.sendJson(ex, 200, o);
                    return;
                }
            }
        }
    }

    private void stream(HttpExchange ex, Requests.Request r, Job job, String id, long created) throws IOException, InterruptedException {
        Job.Event first = job.next(); // the first token (after the prompt ran) or a failure, sent as a status while we still can
        if (first instanceof Job.Failed f) throw f.error();
        ex.getResponseHeaders().set("Content-Type", "text/event-stream; charset=utf-8");
        ex.getResponseHeaders().set("Cache-Control", "no-cache");
        ex.sendResponseHeaders(200, 0);
        SseWriter out = new SseWriter(ex.getResponseBody());
        try {
            if (r.chat()) out.event(chunk(r, id, created, delta("assistant", ""), null));
            for (Job.Event e = first; ; e = job.next()) {
                switch (e) {
                    case Job.Token t -> {
                        String text = t.token().text();
                        if (!text.isEmpty()) out.event(chunk(r, id, created, r.chat() ? delta(null, text) : F.textNode(text), null));
                    }
                    case Job.Done d -> {
                        GenerationResult res = d.result();
                        out.event(chunk(r, id, created, r.chat() ? F.objectNode() : F.textNode(""), res.finish().openAiName()));
                        if (r.includeUsage()) {
                            ObjectNode u = head(r, id, created, true);
                            u.putArray("choices");
                            u.set("usage", usage(r.prompt().length, res));
                            out.event(u);
                        }
                        out.done();
                        return;
                    }
                    case Job.Failed f -> { // after the status line: an error event, as OpenAI sends mid-stream errors
                        out.event(f.error().body());
                        out.done();
                        return;
                    }
                }
            }
        } catch (IOException e) {
            job.cancel(); // the client went away
            throw e;
        }
    }

    private ObjectNode head(Requests.Request r, String id, long created, boolean chunk) {
        ObjectNode o = F.objectNode();
        o.put("id", id);
        o.put("object", r.chat() ? (chunk ? "chat.completion.chunk" : "chat.completion") : "text_completion");
        o.put("created", created);
        o.put("model", modelName);
        o.putNull("system_fingerprint");
        return o;
    }

    private ObjectNode chunk(Requests.Request r, String id, long created, com.fasterxml.jackson.databind.JsonNode content, String finish) {
        ObjectNode o = head(r, id, created, true);
        ObjectNode c = o.putArray("choices").addObject();
        c.put("index", 0);
        if (r.chat()) c.set("delta", content);
        else c.set("text", content);
        c.putNull("logprobs");
        c.put("finish_reason", finish);
        if (r.includeUsage()) o.putNull("usage");
        return o;
    }

    private static ObjectNode delta(String role, String content) {
        ObjectNode d = F.objectNode();
        if (role != null) d.put("role", role);
        d.put("content", content);
        return d;
    }

    private static ObjectNode usage(int promptTokens, GenerationResult res) {
        int completion = res.stats().generatedTokens();
        ObjectNode u = F.objectNode();
        u.put("prompt_tokens", promptTokens);
        u.put("completion_tokens", completion);
        u.put("total_tokens", promptTokens + completion);
        return u;
    }

    private static String randomId() {
        char[] c = new char[24];
        for (int i = 0; i < c.length; i++) c[i] = ALPHABET.charAt(RANDOM.nextInt(ALPHABET.length()));
        return new String(c);
    }
}

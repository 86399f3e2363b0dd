package dev.kiln.llm.server;

import com.fasterxml.jackson.databind.JsonNode;

import java.io.IOException;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;

/**
 * Server-sent events as OpenAI streams them: each event one {@code data: <json>} line and a blank line, flushed at
 * once, the stream ended by {@code data: [DONE]}. A write that fails means the client went away: the caller cancels
 * its generation.
 */
final class SseWriter {
    private final OutputStream out;

    SseWriter(OutputStream out) { this.out = out; }

    /** Writes {@code json} as one event. */
    void event(JsonNode json) throws IOException { raw("data: " + Requests.JSON.writeValueAsString(json) + "\n\n"); }

    /** Writes the end-of-stream marker. */
    void done() throws IOException { raw("data: [DONE]\n\n"); }

    private void raw(String s) throws IOException {
        out.write(s.getBytes(StandardCharsets.UTF_8));
        out.flush();
    }
}

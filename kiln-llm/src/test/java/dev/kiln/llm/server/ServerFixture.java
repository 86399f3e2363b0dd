package dev.kiln.llm.server;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.kiln.llm.LanguageModel;
import dev.kiln.llm.chat.ChatMessage;
import dev.kiln.llm.generate.GenerationOptions;
import dev.kiln.llm.generate.GenerationResult;
import dev.kiln.llm.model.LlmFixtures;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

/** The server tests' model (the tiny random-weight Llama 3 GGUF, with a chat template, context 64) and an HTTP client on 127.0.0.1. */
final class ServerFixture {
    private ServerFixture() {}

    static final String NAME = "tiny-llama";
    static final ObjectMapper JSON = new ObjectMapper();
    static final HttpClient HTTP = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).connectTimeout(Duration.ofSeconds(10)).build();

    /** The Llama GGUF (context 64), opened once for every test class. */
    static LanguageModel model() { return LlmFixtures.open(LlmFixtures.CASES.get(1)); }

    static ServerOptions options() { return ServerOptions.defaults().withPort(0).withModelName(NAME); }

    static HttpResponse<String> post(KilnServer s, String path, String body, String... headers) {
        HttpRequest.Builder b = HttpRequest.newBuilder(URI.create(s.url() + path)).timeout(Duration.ofSeconds(60))
                .POST(HttpRequest.BodyPublishers.ofString(body)).header("Content-Type", "application/json");
        if (headers.length > 0) b.headers(headers);
        return send(b.build());
    }

    static HttpResponse<String> get(KilnServer s, String path, String... headers) {
        HttpRequest.Builder b = HttpRequest.newBuilder(URI.create(s.url() + path)).timeout(Duration.ofSeconds(60)).GET();
        if (headers.length > 0) b.headers(headers);
        return send(b.build());
    }

    static HttpResponse<String> send(HttpRequest r) {
        try {
            return HTTP.send(r, HttpResponse.BodyHandlers.ofString());
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }

    static JsonNode json(String s) {
        try {
            return JSON.readTree(s);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** The events of an SSE body, checked to end with {@code data: [DONE]} and to hold nothing but {@code data:} events. */
    static List<JsonNode> events(String body) {
        List<JsonNode> out = new ArrayList<>();
        String[] blocks = body.split("\n\n", -1);
        assertThat(blocks[blocks.length - 1]).as("the body ends with a blank line").isEmpty();
        assertThat(blocks[blocks.length - 2]).isEqualTo("data: [DONE]");
        for (int i = 0; i < blocks.length - 2; i++) {
            assertThat(blocks[i]).startsWith("data: ").doesNotContain("\n");
            out.add(json(blocks[i].substring("data: ".length())));
        }
        return out;
    }

    /** The error object of an OpenAI error body, checked for its four fields. */
    static JsonNode error(HttpResponse<String> r, int status) {
        assertThat(r.statusCode()).as("status of %s", r.body()).isEqualTo(status);
        assertThat(r.headers().firstValue("Content-Type")).hasValue("application/json");
        JsonNode e = json(r.body()).get("error");
        assertThat(e).as(r.body()).isNotNull();
        assertThat(e.get("message").isTextual()).isTrue();
        assertThat(e.get("type").isTextual()).isTrue();
        assertThat(e.has("param")).isTrue();
        assertThat(e.has("code")).isTrue();
        return e;
    }

    /** A chat request body. */
    static String chatBody(String user, String extra) {
        return "{\"model\":\"" + NAME + "\",\"messages\":[{\"role\":\"system\",\"content\":\"Be brief.\"},{\"role\":\"user\",\"content\":"
                + JSON.valueToTree(user) + "}]" + (extra.isEmpty() ? "" : "," + extra) + "}";
    }

    /** A completion request body. */
    static String completionBody(String prompt, String extra) {
        return "{\"model\":\"" + NAME + "\",\"prompt\":" + JSON.valueToTree(prompt) + (extra.isEmpty() ? "" : "," + extra) + "}";
    }

    /** What {@link LanguageModel#chat} makes of {@link #chatBody}'s conversation. */
    static GenerationResult expectedChat(String user, GenerationOptions o) {
        return model().chat(List.of(ChatMessage.system("Be brief."), ChatMessage.user(user)), o, t -> {});
    }

    /** What {@link LanguageModel#generate} makes of the prompt. */
    static GenerationResult expectedCompletion(String prompt, GenerationOptions o) { return model().generate(prompt, o); }
}

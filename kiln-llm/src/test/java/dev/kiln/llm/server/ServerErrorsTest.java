package dev.kiln.llm.server;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.kiln.llm.LanguageModel;
import dev.kiln.llm.ModelOptions;
import dev.kiln.llm.model.LlmFixtures;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Semaphore;

import static dev.kiln.llm.server.ServerFixture.NAME;
import static dev.kiln.llm.server.ServerFixture.chatBody;
import static dev.kiln.llm.server.ServerFixture.completionBody;
import static dev.kiln.llm.server.ServerFixture.error;
import static dev.kiln.llm.server.ServerFixture.get;
import static dev.kiln.llm.server.ServerFixture.json;
import static dev.kiln.llm.server.ServerFixture.model;
import static dev.kiln.llm.server.ServerFixture.post;
import static org.assertj.core.api.Assertions.assertThat;

/** Every refusal of {@link KilnServer}: its status and OpenAI's JSON error naming the parameter. */
class ServerErrorsTest {
    static KilnServer server;

    @BeforeAll
    static void start() { server = KilnServer.start(model(), ServerFixture.options().withMaxBodyBytes(4096)); }

    @AfterAll
    static void stop() { server.close(); }

    @ParameterizedTest(name = "{0}")
    @CsvSource(delimiter = '|', quoteCharacter = '`', textBlock = """
            malformed JSON          | /v1/chat/completions | {"model":"tiny-llama","messages":[   | 400 |                  | could not parse the JSON body
            trailing garbage        | /v1/completions      | {"model":"tiny-llama","prompt":"a"} x | 400 |                  | could not parse the JSON body
            duplicate key           | /v1/completions      | {"model":"tiny-llama","prompt":"a","prompt":"b"} | 400 |   | could not parse the JSON body
            not an object           | /v1/completions      | [1,2]                                  | 400 |                  | expected a JSON object
            empty body              | /v1/completions      | ``                                     | 400 |                  | has no body
            no model                | /v1/completions      | {"prompt":"a"}                         | 400 | model            | you must provide a model
            unknown model           | /v1/chat/completions | {"model":"gpt-4o","messages":[{"role":"user","content":"a"}]} | 404 |  | The model 'gpt-4o' does not exist
            unknown field           | /v1/completions      | {"model":"tiny-llama","prompt":"a","foo":1} | 400 | foo         | Unrecognized request argument supplied: foo
            frequency penalty       | /v1/completions      | {"model":"tiny-llama","prompt":"a","frequency_penalty":0.5} | 400 | frequency_penalty | 'frequency_penalty' is not supported
            n                       | /v1/chat/completions | {"model":"tiny-llama","messages":[{"role":"user","content":"a"}],"n":2} | 400 | n | only 1 choice
            temperature range       | /v1/completions      | {"model":"tiny-llama","prompt":"a","temperature":3} | 400 | temperature | expected a number in [0, 2], got 3
            temperature type        | /v1/completions      | {"model":"tiny-llama","prompt":"a","temperature":"hot"} | 400 | temperature | expected a number, got a string
            top_p zero              | /v1/completions      | {"model":"tiny-llama","prompt":"a","top_p":0} | 400 | top_p | (0, 1]
            presence penalty range  | /v1/completions      | {"model":"tiny-llama","prompt":"a","presence_penalty":-3} | 400 | presence_penalty | [-2, 2]
            max_tokens zero         | /v1/completions      | {"model":"tiny-llama","prompt":"a","max_tokens":0} | 400 | max_tokens | expected an integer >= 1
            max_tokens fraction     | /v1/completions      | {"model":"tiny-llama","prompt":"a","max_tokens":1.5} | 400 | max_tokens | expected an integer
            max tokens disagree     | /v1/chat/completions | {"model":"tiny-llama","messages":[{"role":"user","content":"a"}],"max_tokens":2,"max_completion_tokens":3} | 400 | max_completion_tokens | disagree
            seed type               | /v1/completions      | {"model":"tiny-llama","prompt":"a","seed":"x"} | 400 | seed | expected an integer
            stop empty              | /v1/completions      | {"model":"tiny-llama","prompt":"a","stop":[""]} | 400 | stop | must not be empty
            stop type               | /v1/completions      | {"model":"tiny-llama","prompt":"a","stop":5} | 400 | stop | expected a string or an array of strings
            stream type             | /v1/completions      | {"model":"tiny-llama","prompt":"a","stream":"yes"} | 400 | stream | expected true or false
            stream options alone    | /v1/chat/completions | {"model":"tiny-llama","messages":[{"role":"user","content":"a"}],"stream_options":{"include_usage":true}} | 400 | stream_options | only allowed when 'stream' is true
            logprobs                | /v1/chat/completions | {"model":"tiny-llama","messages":[{"role":"user","content":"a"}],"logprobs":true} | 400 | logprobs | not supported
            logit bias              | /v1/completions      | {"model":"tiny-llama","prompt":"a","logit_bias":{"5":10}} | 400 | logit_bias | not supported
            tools                   | /v1/chat/completions | {"model":"tiny-llama","messages":[{"role":"user","content":"a"}],"tools":[{"type":"function"}]} | 400 | tools | not supported
            json mode               | /v1/chat/completions | {"model":"tiny-llama","messages":[{"role":"user","content":"a"}],"response_format":{"type":"json_object"}} | 400 | response_format | only {"type": "text"}
            echo                    | /v1/completions      | {"model":"tiny-llama","prompt":"a","echo":true} | 400 | echo | not supported
            no messages             | /v1/chat/completions | {"model":"tiny-llama"} | 400 | messages | Missing required parameter: 'messages'
            empty messages          | /v1/chat/completions | {"model":"tiny-llama","messages":[]} | 400 | messages | at least one message
            bad role                | /v1/chat/completions | {"model":"tiny-llama","messages":[{"role":"wizard","content":"a"}]} | 400 | messages[0].role | expected one of system, developer, user, assistant
            tool role               | /v1/chat/completions | {"model":"tiny-llama","messages":[{"role":"tool","content":"a"}]} | 400 | messages[0].role | not supported
            image part              | /v1/chat/completions | {"model":"tiny-llama","messages":[{"role":"user","content":[{"type":"image_url"}]}]} | 400 | messages[0].content[0] | only text content parts
            no prompt               | /v1/completions      | {"model":"tiny-llama"} | 400 | prompt | Missing required parameter: 'prompt'
            two prompts             | /v1/completions      | {"model":"tiny-llama","prompt":["a","b"]} | 400 | prompt | only one prompt per request
            token out of vocabulary | /v1/completions      | {"model":"tiny-llama","prompt":[1,99999]} | 400 | prompt | expected token ids in [0,
            overflow by max_tokens  | /v1/completions      | {"model":"tiny-llama","prompt":"a","max_tokens":1000} | 400 | prompt | This model's maximum context length is 64 tokens. However, you requested 100
            """)
    void refusesWithOpenAisError(String what, String path, String body, int status, String param, String message) {
        JsonNode e = error(post(server, path, body == null ? "" : body), status);
        assertThat(e.get("message").asText()).contains(message);
        assertThat(e.get("type").asText()).isEqualTo("invalid_request_error");
        if (param == null) assertThat(e.get("param").isNull()).as("param of %s", e).isTrue();
        else assertThat(e.get("param").asText()).isEqualTo(param);
    }

    @Test
    void aPromptLongerThanTheContextIsContextLengthExceeded() {
        JsonNode e = error(post(server, "/v1/chat/completions", chatBody("word ".repeat(80), "")), 400);
        assertThat(e.get("code").asText()).isEqualTo("context_length_exceeded");
        assertThat(e.get("param").asText()).isEqualTo("messages");
        assertThat(e.get("message").asText()).startsWith("This model's maximum context length is 64 tokens. However, your messages resulted in ");
        JsonNode m = error(post(server, "/v1/completions", completionBody("a", "\"max_tokens\":64")), 400);
        assertThat(m.get("code").asText()).isEqualTo("context_length_exceeded");
    }

    @Test
    void unsupportedParametersAtTheirDefaultsAreAccepted() {
        HttpResponse<String> r = post(server, "/v1/chat/completions", chatBody("a", "\"max_tokens\":2,\"frequency_penalty\":0,\"n\":1,\"logprobs\":false,"
                + "\"user\":\"me\",\"response_format\":{\"type\":\"text\"},\"tools\":[],\"temperature\":null"));
        assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
    }

    @Test
    void unknownModelIsModelNotFound() {
        JsonNode e = error(post(server, "/v1/completions", "{\"model\":\"other\",\"prompt\":\"a\"}"), 404);
        assertThat(e.get("code").asText()).isEqualTo("model_not_found");
        assertThat(error(get(server, "/v1/models/other"), 404).get("code").asText()).isEqualTo("model_not_found");
    }

    @Test
    void unknownUrlsAndWrongMethods() {
        assertThat(error(get(server, "/v1/embeddings"), 404).get("message").asText()).isEqualTo("Invalid URL (GET /v1/embeddings)");
        assertThat(error(get(server, "/"), 404).get("code").asText()).isEqualTo("unknown_url");
        HttpResponse<String> r = get(server, "/v1/chat/completions");
        assertThat(error(r, 405).get("message").asText()).contains("use POST");
        assertThat(r.headers().firstValue("Allow")).hasValue("POST");
        error(post(server, "/v1/models", "{}"), 405);
    }

    @Test
    void aBodyOverTheLimitIs413WithOrWithoutContentLength() {
        String big = completionBody("x".repeat(5000), "");
        JsonNode e = error(post(server, "/v1/completions", big), 413);
        assertThat(e.get("code").asText()).isEqualTo("request_too_large");
        assertThat(e.get("message").asText()).contains("over this server's limit of 4096 bytes");
        HttpRequest chunked = HttpRequest.newBuilder(URI.create(server.url() + "/v1/completions"))
                .POST(HttpRequest.BodyPublishers.ofInputStream(() -> new ByteArrayInputStream(big.getBytes()))).build();
        assertThat(error(ServerFixture.send(chunked), 413).get("code").asText()).isEqualTo("request_too_large");
        // the server still answers afterwards
        assertThat(post(server, "/v1/completions", completionBody("a", "\"max_tokens\":1")).statusCode()).isEqualTo(200);
    }

    @Test
    void withAnApiKeyEveryV1RequestNeedsTheBearerToken() {
        try (KilnServer keyed = KilnServer.start(model(), ServerFixture.options().withApiKey("sekret"))) {
            JsonNode none = error(get(keyed, "/v1/models"), 401);
            assertThat(none.get("code").asText()).isEqualTo("invalid_api_key");
            assertThat(none.get("message").asText()).contains("You didn't provide an API key");
            assertThat(error(post(keyed, "/v1/completions", completionBody("a", ""), "Authorization", "Bearer wrong"), 401).get("message").asText())
                    .isEqualTo("Incorrect API key provided.");
            error(post(keyed, "/v1/completions", completionBody("a", ""), "Authorization", "sekret"), 401);
            assertThat(get(keyed, "/v1/models", "Authorization", "Bearer sekret").statusCode()).isEqualTo(200);
            assertThat(post(keyed, "/v1/completions", completionBody("a", "\"max_tokens\":2"), "Authorization", "Bearer sekret").statusCode()).isEqualTo(200);
            assertThat(get(keyed, "/health").statusCode()).as("health stays open").isEqualTo(200);
        }
        assertThat(get(server, "/v1/models").statusCode()).as("no key, no check").isEqualTo(200);
    }

    @Test
    void aModelWithoutAChatTemplateRefusesChatButCompletes(@TempDir Path tmp) throws IOException {
        Path hf = LlmFixtures.root().resolve("llama/hf");
        for (String f : List.of("config.json", "tokenizer.json", "model.safetensors")) Files.copy(hf.resolve(f), tmp.resolve(f));
        ObjectNode config = (ObjectNode) json(Files.readString(hf.resolve("tokenizer_config.json")));
        config.remove("chat_template");
        Files.writeString(tmp.resolve("tokenizer_config.json"), config.toString());
        try (LanguageModel bare = LanguageModel.open(tmp, ModelOptions.defaults().withContextLength(64));
             KilnServer s = KilnServer.start(bare, ServerFixture.options().withParallel(1))) {
            JsonNode e = error(post(s, "/v1/chat/completions", chatBody("Hi", "")), 400);
            assertThat(e.get("message").asText()).contains("has no chat template").contains("use /v1/completions");
            assertThat(e.get("param").asText()).isEqualTo("messages");
            assertThat(e.get("code").asText()).isEqualTo("chat_template_unavailable");
            assertThat(post(s, "/v1/completions", completionBody("Hi", "\"max_tokens\":2")).statusCode()).isEqualTo(200);
        }
    }

    @Test
    void beyondTheSlotsAndTheQueueIs429AndStoppingIs503() throws Exception {
        Semaphore gate = new Semaphore(0);
        KilnServer s = KilnServer.start(model(), ServerFixture.options().withParallel(1).withQueue(1), step -> new Scheduler.DecodeStep() {
            @Override
            public void step(List<Scheduler.Slot> active) throws InterruptedException {
                gate.acquire();
                step.step(active);
            }

            @Override
            public void close() { step.close(); }
        });
        try {
            String body = completionBody("Hello", "\"max_tokens\":2,\"ignore_eos\":true");
            CompletableFuture<HttpResponse<String>> running = CompletableFuture.supplyAsync(() -> post(s, "/v1/completions", body));
            awaitHealth(s, 1, 0);
            CompletableFuture<HttpResponse<String>> waiting = CompletableFuture.supplyAsync(() -> post(s, "/v1/completions", body));
            awaitHealth(s, 1, 1);
            HttpResponse<String> refused = post(s, "/v1/completions", body);
            JsonNode e = error(refused, 429);
            assertThat(e.get("type").asText()).isEqualTo("rate_limit_error");
            assertThat(e.get("code").asText()).isEqualTo("queue_full");
            assertThat(e.get("message").asText()).contains("all 1 decode slots are generating and 1 requests are waiting");
            assertThat(refused.headers().firstValue("Retry-After")).isPresent();
            assertThat(json(get(s, "/health").body()).get("requests").get("rejected").asInt()).isEqualTo(1);

            gate.release(4); // both finish: 2 steps each
            assertThat(running.get().statusCode()).isEqualTo(200);
            assertThat(waiting.get().statusCode()).isEqualTo(200);

            CompletableFuture<HttpResponse<String>> cut = CompletableFuture.supplyAsync(() -> post(s, "/v1/completions", body));
            CompletableFuture<HttpResponse<String>> queued = CompletableFuture.supplyAsync(() -> post(s, "/v1/completions", body));
            awaitHealth(s, 1, 1);
            Thread stopper = Thread.ofPlatform().start(s::stop);
            Thread.sleep(100);
            gate.release(100);
            stopper.join();
            for (var f : List.of(cut, queued)) {
                JsonNode u = error(f.get(), 503);
                assertThat(u.get("code").asText()).isEqualTo("server_shutting_down");
                assertThat(u.get("message").asText()).isEqualTo("the server is shutting down");
            }
        } finally {
            gate.release(1000);
            s.stop();
        }
    }

    @Test
    void aGenerationThatFailsIs500OrAnErrorEventAndFreesItsSlot() {
        java.util.concurrent.atomic.AtomicInteger steps = new java.util.concurrent.atomic.AtomicInteger(), failAt = new java.util.concurrent.atomic.AtomicInteger(-1);
        try (KilnServer s = KilnServer.start(model(), ServerFixture.options().withParallel(1).withQueue(0), step -> new Scheduler.DecodeStep() {
            @Override
            public void step(List<Scheduler.Slot> active) throws InterruptedException {
                step.step(active);
                if (steps.incrementAndGet() == failAt.get()) for (Scheduler.Slot slot : active) slot.failure = new IllegalStateException("device lost");
            }

            @Override
            public void close() { step.close(); }
        })) {
            String body = completionBody("Hello", "\"max_tokens\":8,\"ignore_eos\":true,\"temperature\":0");
            failAt.set(steps.get() + 3);
            JsonNode e = error(post(s, "/v1/completions", body), 500);
            assertThat(e.get("type").asText()).isEqualTo("server_error");
            assertThat(e.get("message").asText()).isEqualTo("the generation failed: device lost");

            failAt.set(steps.get() + 3);
            HttpResponse<String> r = post(s, "/v1/completions", body.replace("}", ",\"stream\":true}"));
            assertThat(r.statusCode()).isEqualTo(200);
            List<JsonNode> ev = ServerFixture.events(r.body());
            assertThat(ev).hasSize(3); // two tokens, then the error
            assertThat(ev.getLast().get("error").get("message").asText()).isEqualTo("the generation failed: device lost");

            assertThat(post(s, "/v1/completions", body).statusCode()).as("the slot is free again").isEqualTo(200);
            assertThat(json(get(s, "/health").body()).get("requests").get("failed").asInt()).isEqualTo(2);
        }
    }

    /** Waits until {@code busy} slots run and {@code waiting} requests wait. */
    static void awaitHealth(KilnServer s, int busy, int waiting) throws InterruptedException {
        JsonNode h = null;
        for (long deadline = System.nanoTime() + 10_000_000_000L; System.nanoTime() < deadline; Thread.sleep(10)) {
            h = json(get(s, "/health").body());
            if (h.get("slots").get("busy").asInt() == busy && h.get("queue").get("waiting").asInt() == waiting) return;
        }
        throw new AssertionError("health never showed " + busy + " busy and " + waiting + " waiting: " + h);
    }
}

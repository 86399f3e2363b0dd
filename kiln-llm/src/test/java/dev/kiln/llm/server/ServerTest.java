package dev.kiln.llm.server;

import com.fasterxml.jackson.databind.JsonNode;
import dev.kiln.llm.generate.GenerationOptions;
import dev.kiln.llm.generate.GenerationResult;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.net.Socket;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;

import static dev.kiln.llm.server.ServerFixture.NAME;
import static dev.kiln.llm.server.ServerFixture.chatBody;
import static dev.kiln.llm.server.ServerFixture.completionBody;
import static dev.kiln.llm.server.ServerFixture.events;
import static dev.kiln.llm.server.ServerFixture.expectedChat;
import static dev.kiln.llm.server.ServerFixture.expectedCompletion;
import static dev.kiln.llm.server.ServerFixture.get;
import static dev.kiln.llm.server.ServerFixture.json;
import static dev.kiln.llm.server.ServerFixture.model;
import static dev.kiln.llm.server.ServerFixture.post;
import static org.assertj.core.api.Assertions.assertThat;

/** {@link KilnServer} over HTTP: answers equal to {@link dev.kiln.llm.LanguageModel}'s own, streamed and whole, one client and many. */
class ServerTest {
    static KilnServer server;

    @BeforeAll
    static void start() { server = KilnServer.start(model(), ServerFixture.options()); }

    @AfterAll
    static void stop() { server.close(); }

    @Test
    void listensOn127001AndPicksAFreePort() {
        assertThat(server.host()).isEqualTo("127.0.0.1");
        assertThat(server.port()).isPositive().isNotEqualTo(ServerOptions.DEFAULT_PORT);
        assertThat(server.url().toString()).isEqualTo("http://127.0.0.1:" + server.port());
        assertThat(ServerOptions.defaults().host()).isEqualTo("127.0.0.1");
    }

    @Test
    void chatGreedyEqualsLanguageModelChatWithUsage() {
        GenerationResult want = expectedChat("Hello there", GenerationOptions.greedy().withMaxTokens(20));
        assertThat(want.text()).as("the model writes something").isNotEmpty();
        HttpResponse<String> r = post(server, "/v1/chat/completions", chatBody("Hello there", "\"temperature\":0,\"max_tokens\":20"));
        assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
        assertThat(r.headers().firstValue("Content-Type")).hasValue("application/json");
        JsonNode o = json(r.body());
        assertThat(o.get("id").asText()).matches("chatcmpl-[A-Za-z0-9]{24}");
        assertThat(o.get("object").asText()).isEqualTo("chat.completion");
        assertThat(o.get("model").asText()).isEqualTo(NAME);
        assertThat(o.get("created").asLong()).isCloseTo(System.currentTimeMillis() / 1000, org.assertj.core.data.Offset.offset(60L));
        JsonNode c = o.get("choices").get(0);
        assertThat(o.get("choices")).hasSize(1);
        assertThat(c.get("index").asInt()).isZero();
        assertThat(c.get("message").get("role").asText()).isEqualTo("assistant");
        assertThat(c.get("message").get("content").asText()).isEqualTo(want.text());
        assertThat(c.get("finish_reason").asText()).isEqualTo(want.finish().openAiName());
        JsonNode u = o.get("usage");
        int promptTokens = want.stats().promptTokens();
        assertThat(u.get("prompt_tokens").asInt()).isEqualTo(promptTokens);
        assertThat(u.get("completion_tokens").asInt()).isEqualTo(want.tokens().length);
        assertThat(u.get("total_tokens").asInt()).isEqualTo(promptTokens + want.tokens().length);
    }

    @Test
    void chatStreamsTheSameTextInChunksWithRoleFinishUsageAndDone() {
        GenerationResult want = expectedChat("Tell me a story", GenerationOptions.greedy().withMaxTokens(24));
        assertThat(want.text()).as("the model writes something").isNotEmpty();
        HttpResponse<String> r = post(server, "/v1/chat/completions",
                chatBody("Tell me a story", "\"temperature\":0,\"max_tokens\":24,\"stream\":true,\"stream_options\":{\"include_usage\":true}"));
        assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
        assertThat(r.headers().firstValue("Content-Type").orElseThrow()).startsWith("text/event-stream");
        List<JsonNode> ev = events(r.body());
        String id = ev.getFirst().get("id").asText();
        assertThat(id).startsWith("chatcmpl-");
        assertThat(ev.getFirst().get("choices").get(0).get("delta").get("role").asText()).isEqualTo("assistant");
        StringBuilder text = new StringBuilder();
        for (JsonNode e : ev) {
            assertThat(e.get("id").asText()).isEqualTo(id);
            assertThat(e.get("object").asText()).isEqualTo("chat.completion.chunk");
            assertThat(e.get("model").asText()).isEqualTo(NAME);
            if (!e.get("choices").isEmpty()) text.append(e.get("choices").get(0).get("delta").path("content").asText(""));
        }
        assertThat(text.toString()).isEqualTo(want.text());
        JsonNode finish = ev.get(ev.size() - 2);
        assertThat(finish.get("choices").get(0).get("finish_reason").asText()).isEqualTo(want.finish().openAiName());
        assertThat(finish.get("choices").get(0).get("delta")).isEmpty();
        JsonNode usage = ev.getLast();
        assertThat(usage.get("choices")).isEmpty();
        assertThat(usage.get("usage").get("completion_tokens").asInt()).isEqualTo(want.tokens().length);
        assertThat(usage.get("usage").get("prompt_tokens").asInt()).isEqualTo(want.stats().promptTokens());
        for (JsonNode e : ev.subList(0, ev.size() - 1)) assertThat(e.get("usage").isNull()).isTrue();
    }

    @Test
    void streamWithoutIncludeUsageHasNoUsage() {
        HttpResponse<String> r = post(server, "/v1/chat/completions", chatBody("Hi", "\"temperature\":0,\"max_tokens\":4,\"stream\":true"));
        List<JsonNode> ev = events(r.body());
        for (JsonNode e : ev) assertThat(e.has("usage")).isFalse();
        assertThat(ev.getLast().get("choices").get(0).get("finish_reason").isTextual()).isTrue();
    }

    @Test
    void completionsGreedyWholeAndStreamedEqualLanguageModelGenerate() {
        String prompt = "Once upon a time";
        GenerationResult want = expectedCompletion(prompt, GenerationOptions.greedy().withMaxTokens(16));
        assertThat(want.text()).as("the model writes something").isNotEmpty();
        JsonNode o = json(post(server, "/v1/completions", completionBody(prompt, "\"temperature\":0")).body()); // OpenAI's default max_tokens: 16
        assertThat(o.get("id").asText()).matches("cmpl-[A-Za-z0-9]{24}");
        assertThat(o.get("object").asText()).isEqualTo("text_completion");
        assertThat(o.get("choices").get(0).get("text").asText()).isEqualTo(want.text());
        assertThat(o.get("choices").get(0).get("finish_reason").asText()).isEqualTo(want.finish().openAiName());
        assertThat(o.get("usage").get("prompt_tokens").asInt()).isEqualTo(model().encode(prompt).length);
        assertThat(o.get("usage").get("completion_tokens").asInt()).isEqualTo(want.tokens().length);

        List<JsonNode> ev = events(post(server, "/v1/completions", completionBody(prompt, "\"temperature\":0,\"stream\":true")).body());
        StringBuilder text = new StringBuilder();
        for (JsonNode e : ev) {
            assertThat(e.get("object").asText()).isEqualTo("text_completion");
            text.append(e.get("choices").get(0).get("text").asText());
        }
        assertThat(text.toString()).isEqualTo(want.text());
        assertThat(ev.getLast().get("choices").get(0).get("finish_reason").asText()).isEqualTo(want.finish().openAiName());
    }

    @Test
    void maxTokensEndsWithFinishReasonLength() {
        JsonNode o = json(post(server, "/v1/completions", completionBody("The sky", "\"temperature\":0,\"max_tokens\":7,\"ignore_eos\":true")).body());
        assertThat(o.get("choices").get(0).get("finish_reason").asText()).isEqualTo("length");
        assertThat(o.get("usage").get("completion_tokens").asInt()).isEqualTo(7);
        JsonNode c = json(post(server, "/v1/chat/completions", chatBody("Hi", "\"temperature\":0,\"max_completion_tokens\":3,\"ignore_eos\":true")).body());
        assertThat(c.get("usage").get("completion_tokens").asInt()).isEqualTo(3);
        assertThat(c.get("choices").get(0).get("finish_reason").asText()).isEqualTo("length");
    }

    @Test
    void stopStringsEndTheTextBeforeThemWithFinishReasonStop() {
        String prompt = "Once upon a time";
        GenerationResult full = expectedCompletion(prompt, GenerationOptions.greedy().withMaxTokens(30).withIgnoreEos(true));
        String text = full.text();
        assertThat(text.length()).as("the model writes something to cut: %s", text).isGreaterThan(6);
        String stop = text.substring(text.length() / 2, text.length() / 2 + 3);
        String want = text.substring(0, text.indexOf(stop));
        for (String stops : List.of("\"stop\":" + ServerFixture.JSON.valueToTree(stop), "\"stop\":[\"\\u0000never\"," + ServerFixture.JSON.valueToTree(stop) + "]")) {
            JsonNode o = json(post(server, "/v1/completions", completionBody(prompt, "\"temperature\":0,\"max_tokens\":30,\"ignore_eos\":true," + stops)).body());
            assertThat(o.get("choices").get(0).get("text").asText()).isEqualTo(want);
            assertThat(o.get("choices").get(0).get("finish_reason").asText()).isEqualTo("stop");
            List<JsonNode> ev = events(post(server, "/v1/completions",
                    completionBody(prompt, "\"temperature\":0,\"max_tokens\":30,\"ignore_eos\":true,\"stream\":true," + stops)).body());
            StringBuilder streamed = new StringBuilder();
            for (JsonNode e : ev) streamed.append(e.get("choices").get(0).get("text").asText());
            assertThat(streamed.toString()).isEqualTo(want);
            assertThat(ev.getLast().get("choices").get(0).get("finish_reason").asText()).isEqualTo("stop");
        }
    }

    @Test
    void seededSamplingIsRepeatableAndTokenIdPromptsWork() {
        String body = completionBody("Hello", "\"temperature\":0.9,\"top_p\":0.9,\"seed\":42,\"max_tokens\":12,\"presence_penalty\":0.5");
        String a = json(post(server, "/v1/completions", body).body()).get("choices").get(0).get("text").asText();
        String b = json(post(server, "/v1/completions", body).body()).get("choices").get(0).get("text").asText();
        assertThat(a).isEqualTo(b);
        int[] ids = model().encode("Hello");
        String byIds = json(post(server, "/v1/completions", "{\"model\":\"" + NAME + "\",\"prompt\":" + ServerFixture.JSON.valueToTree(ids)
                + ",\"temperature\":0.9,\"top_p\":0.9,\"seed\":42,\"max_tokens\":12,\"presence_penalty\":0.5}").body()).get("choices").get(0).get("text").asText();
        assertThat(byIds).isEqualTo(a);
    }

    @Test
    void modelsListsTheModelAndHealthReportsTheSlots() {
        HttpResponse<String> r = get(server, "/v1/models");
        assertThat(r.statusCode()).isEqualTo(200);
        JsonNode list = json(r.body());
        assertThat(list.get("object").asText()).isEqualTo("list");
        assertThat(list.get("data")).hasSize(1);
        JsonNode m = list.get("data").get(0);
        assertThat(m.get("id").asText()).isEqualTo(NAME);
        assertThat(m.get("object").asText()).isEqualTo("model");
        assertThat(m.get("owned_by").asText()).isEqualTo("kiln");
        assertThat(json(get(server, "/v1/models/" + NAME).body()).get("id").asText()).isEqualTo(NAME);

        JsonNode h = json(get(server, "/health").body());
        assertThat(h.get("status").asText()).isEqualTo("ok");
        assertThat(h.get("slots").get("total").asInt()).isEqualTo(ServerOptions.DEFAULT_PARALLEL);
        assertThat(h.get("queue").get("capacity").asInt()).isEqualTo(ServerOptions.DEFAULT_QUEUE);
    }

    @Test
    void eightConcurrentStreamingClientsEachGetTheirSingleClientResult() throws Exception {
        List<String> prompts = new ArrayList<>();
        List<GenerationResult> want = new ArrayList<>();
        for (int i = 0; i < 8; i++) {
            boolean chat = i % 2 == 1; // the chat template's headers take most of the 64-token context
            String p = chat ? "Hi " + i : "Client " + i + " says" + " hello".repeat(i % 3);
            prompts.add(p);
            want.add(chat ? expectedChat(p, GenerationOptions.greedy().withMaxTokens(max(i))) : expectedCompletion(p, GenerationOptions.greedy().withMaxTokens(max(i))));
        }
        try (ExecutorService clients = Executors.newFixedThreadPool(8)) {
            List<Future<String>> got = new ArrayList<>();
            for (int i = 0; i < 8; i++) {
                int k = i;
                got.add(clients.submit((Callable<String>) () -> {
                    boolean chat = k % 2 == 1;
                    String extra = "\"temperature\":0,\"stream\":true,\"max_tokens\":" + max(k);
                    HttpResponse<String> r = chat ? post(server, "/v1/chat/completions", chatBody(prompts.get(k), extra))
                            : post(server, "/v1/completions", completionBody(prompts.get(k), extra));
                    assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
                    StringBuilder text = new StringBuilder();
                    for (JsonNode e : events(r.body())) {
                        JsonNode c = e.get("choices").get(0);
                        text.append(chat ? c.get("delta").path("content").asText("") : c.get("text").asText());
                    }
                    return text.toString();
                }));
            }
            for (int i = 0; i < 8; i++) assertThat(got.get(i).get()).as("client %d", i).isEqualTo(want.get(i).text());
        }
        JsonNode h = json(get(server, "/health").body());
        assertThat(h.get("slots").get("busy").asInt()).isZero();
        assertThat(h.get("queue").get("waiting").asInt()).isZero();
    }

    /** Client i's max_tokens: the chat clients' prompts are longer. */
    private static int max(int i) { return i % 2 == 1 ? 6 + i : 20 + i; }

    @Test
    void aClientThatDisconnectsMidStreamFreesItsSlot() throws Exception {
        // one slot, no queue, each step slowed to 20 ms: a generation of 40 tokens takes most of a second
        try (KilnServer one = KilnServer.start(model(), ServerFixture.options().withParallel(1).withQueue(0), ServerTest::slow)) {
            String body = completionBody("Once upon a time", "\"temperature\":0,\"max_tokens\":40,\"ignore_eos\":true,\"stream\":true");
            try (Socket s = new Socket("127.0.0.1", one.port())) {
                OutputStream out = s.getOutputStream();
                byte[] b = body.getBytes(StandardCharsets.UTF_8);
                out.write(("POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: " + b.length + "\r\n\r\n")
                        .getBytes(StandardCharsets.US_ASCII));
                out.write(b);
                out.flush();
                BufferedReader in = new BufferedReader(new InputStreamReader(s.getInputStream(), StandardCharsets.UTF_8));
                assertThat(in.readLine()).isEqualTo("HTTP/1.1 200 OK");
                for (String line; (line = in.readLine()) != null; ) if (line.contains("data: ")) break;
            } // closed after the first event
            JsonNode h = null;
            for (long deadline = System.nanoTime() + 10_000_000_000L; System.nanoTime() < deadline; Thread.sleep(20)) {
                h = json(get(one, "/health").body());
                if (h.get("requests").get("cancelled").asInt() == 1 && h.get("slots").get("busy").asInt() == 0) break;
            }
            assertThat(h.get("requests").get("cancelled").asInt()).as("%s", h).isEqualTo(1);
            assertThat(h.get("requests").get("completed").asInt()).isZero();
            assertThat(h.get("slots").get("busy").asInt()).isZero();
            HttpResponse<String> next = post(one, "/v1/completions", completionBody("Hello", "\"temperature\":0,\"max_tokens\":3"));
            assertThat(next.statusCode()).as(next.body()).isEqualTo(200);
        }
    }

    /** Each step 20 ms slower. */
    static Scheduler.DecodeStep slow(Scheduler.DecodeStep step) {
        return new Scheduler.DecodeStep() {
            @Override
            public void step(List<Scheduler.Slot> active) throws InterruptedException {
                Thread.sleep(20);
                step.step(active);
            }

            @Override
            public void close() { step.close(); }
        };
    }
}

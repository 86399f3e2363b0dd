package dev.kiln.llm.server;

import com.fasterxml.jackson.databind.JsonNode;
import dev.kiln.llm.LanguageModel;
import dev.kiln.llm.ModelOptions;
import dev.kiln.llm.generate.GenerationOptions;
import dev.kiln.llm.model.LlmFixtures;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;

import static dev.kiln.llm.server.ServerFixture.events;
import static dev.kiln.llm.server.ServerFixture.post;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * A small load test, not part of the default run (tag {@code soak}): 1 and then 8 concurrent streaming clients, each
 * sending requests back to back, every answer checked against the single-client greedy result; prints the aggregate
 * generated tokens per second. Run it with
 * {@code ./mvnw -pl kiln-llm verify -Dtest=ServerLoadTest -Dkiln.test.excludedGroups=none}; {@code -Dkiln.load.model=PATH}
 * loads another model (default: the tiny test Llama, context 128), {@code -Dkiln.load.tokens=N} sets max_tokens,
 * {@code -Dkiln.load.context=N} the context, {@code -Dkiln.load.q8Activations=true} quantises x (CLANG, Q8_0/Q4_0).
 */
@Tag("soak")
class ServerLoadTest {
    @Test
    void oneVersusEightConcurrentStreamingClients() throws Exception {
        String path = System.getProperty("kiln.load.model");
        Path model = path != null ? Path.of(path) : LlmFixtures.root().resolve("llama/llama-f32.gguf");
        int tokens = Integer.getInteger("kiln.load.tokens", 64);
        int perClient = Integer.getInteger("kiln.load.requests", 8);
        ModelOptions options = ModelOptions.defaults().withContextLength(Integer.getInteger("kiln.load.context", 128))
                .withQuantizedActivations(Boolean.getBoolean("kiln.load.q8Activations"));
        try (LanguageModel lm = LanguageModel.open(model, options);
             KilnServer server = KilnServer.start(lm, ServerOptions.defaults().withPort(0).withModelName("load").withParallel(8).withQueue(64))) {
            String prompt = "Once upon a time";
            String want = lm.generate(prompt, GenerationOptions.greedy().withMaxTokens(tokens).withIgnoreEos(true)).text();
            String body = "{\"model\":\"load\",\"prompt\":" + ServerFixture.JSON.valueToTree(prompt) + ",\"temperature\":0,\"ignore_eos\":true,\"max_tokens\":"
                    + tokens + ",\"stream\":true,\"stream_options\":{\"include_usage\":true}}";
            run(server, body, want, 1, 2); // warm-up
            for (int threads : new int[] {1, 8}) { // the same work on LanguageModel directly: what the server adds
                long t0 = System.nanoTime();
                try (ExecutorService pool = Executors.newFixedThreadPool(threads)) {
                    List<Future<?>> fs = new ArrayList<>();
                    for (int t = 0; t < threads; t++) fs.add(pool.submit(() -> {
                        for (int i = 0; i < perClient; i++) {
                            assertThat(lm.generate(prompt, GenerationOptions.greedy().withMaxTokens(tokens).withIgnoreEos(true)).text()).isEqualTo(want);
                        }
                    }));
                    for (Future<?> f : fs) f.get();
                }
                double s = (System.nanoTime() - t0) / 1e9;
                long generated = (long) threads * perClient * tokens;
                System.out.printf(Locale.ROOT, "LanguageModel.generate: %d thread(s) x %d x %d tokens: %.1f tokens/s aggregate%n", threads, perClient, tokens, generated / s);
            }
            for (int clients : new int[] {1, 8}) {
                long t0 = System.nanoTime();
                long generated = run(server, body, want, clients, perClient);
                double s = (System.nanoTime() - t0) / 1e9;
                System.out.printf(Locale.ROOT, "kiln serve load: %d streaming client(s) x %d requests x %d tokens: %d tokens in %.2f s = %.1f tokens/s aggregate%n",
                        clients, perClient, tokens, generated, s, generated / s);
            }
        }
    }

    /** {@code clients} threads each sending {@code requests} streaming requests; returns the tokens generated. */
    private static long run(KilnServer server, String body, String want, int clients, int requests) throws Exception {
        try (ExecutorService pool = Executors.newFixedThreadPool(clients)) {
            List<Future<Long>> fs = new ArrayList<>();
            for (int c = 0; c < clients; c++) {
                fs.add(pool.submit(() -> {
                    long n = 0;
                    for (int i = 0; i < requests; i++) {
                        HttpResponse<String> r = post(server, "/v1/completions", body);
                        assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
                        StringBuilder text = new StringBuilder();
                        List<JsonNode> ev = events(r.body());
                        for (JsonNode e : ev) if (!e.get("choices").isEmpty()) text.append(e.get("choices").get(0).get("text").asText());
                        assertThat(text.toString()).isEqualTo(want);
                        n += ev.getLast().get("usage").get("completion_tokens").asLong();
                    }
                    return n;
                }));
            }
            long total = 0;
            for (Future<Long> f : fs) total += f.get();
            return total;
        }
    }
}

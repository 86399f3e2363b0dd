package dev.kiln.cli;

import dev.kiln.llm.LanguageModel;
import dev.kiln.llm.ModelOptions;
import dev.kiln.llm.generate.GenerationOptions;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.net.HttpURLConnection;
import java.net.ServerSocket;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static dev.kiln.cli.CommandsTest.kiln;
import static org.assertj.core.api.Assertions.assertThat;

/** {@code kiln serve} end to end: it prints the URL it picked, answers OpenAI requests, and stops when its thread is interrupted. */
class ServeCommandTest {
    static final Path GGUF = GenerateCommandTest.LLAMA.resolve("llama-f32.gguf");
    static final Pattern LISTENING = Pattern.compile("listening on (http://127\\.0\\.0\\.1:(\\d+))/v1 \\(model ([^,]+), context (\\d+) tokens, (\\d+) slots, queue (\\d+)(, API key required)?\\)");

    /** A running {@code kiln serve}: its thread, output and exit code. */
    record Running(Thread thread, StringWriter out, StringWriter err, AtomicInteger code, Matcher listening) {
        String url() { return listening.group(1); }

        int stop() throws InterruptedException {
            thread.interrupt();
            thread.join(30_000);
            assertThat(thread.isAlive()).isFalse();
            return code.get();
        }
    }

    static Running serve(String... args) throws InterruptedException {
        StringWriter out = new StringWriter(), err = new StringWriter();
        AtomicInteger code = new AtomicInteger(-1);
        String[] all = new String[args.length + 1];
        all[0] = "serve";
        System.arraycopy(args, 0, all, 1, args.length);
        Thread t = Thread.ofPlatform().start(() -> code.set(Main.run(new PrintWriter(out, true), new PrintWriter(err, true), all)));
        for (long deadline = System.nanoTime() + 60_000_000_000L; System.nanoTime() < deadline && t.isAlive(); Thread.sleep(20)) {
            Matcher m = LISTENING.matcher(out.toString());
            if (m.find()) return new Running(t, out, err, code, m);
        }
        t.join(1000);
        throw new AssertionError("kiln serve did not start (exit " + code.get() + "): " + out + err);
    }

    /** status, then body. */
    static String[] http(String method, String url, String body, String... headers) throws IOException {
        HttpURLConnection c = (HttpURLConnection) URI.create(url).toURL().openConnection();
        c.setRequestMethod(method);
        for (int i = 0; i < headers.length; i += 2) c.setRequestProperty(headers[i], headers[i + 1]);
        if (body != null) {
            c.setDoOutput(true);
            c.setRequestProperty("Content-Type", "application/json");
            try (OutputStream o = c.getOutputStream()) {
                o.write(body.getBytes(StandardCharsets.UTF_8));
            }
        }
        int status = c.getResponseCode();
        try (InputStream in = status < 400 ? c.getInputStream() : c.getErrorStream()) {
            return new String[] {"" + status, new String(in.readAllBytes(), StandardCharsets.UTF_8)};
        }
    }

    @Test
    void servesOnAFreePortWithTheFileNameAsModelAndStops() throws Exception {
        Running s = serve(GGUF.toString(), "--port", "0", "--context", "64", "--parallel", "2", "--queue", "3", "--temperature", "0");
        assertThat(s.listening().group(3)).isEqualTo("llama-f32");
        assertThat(s.listening().group(4)).isEqualTo("64");
        assertThat(s.listening().group(5)).isEqualTo("2");
        assertThat(s.listening().group(6)).isEqualTo("3");
        String[] health = http("GET", s.url() + "/health", null);
        assertThat(health[0]).isEqualTo("200");
        assertThat(health[1]).contains("\"status\":\"ok\"").contains("\"total\":2");
        assertThat(http("GET", s.url() + "/v1/models", null)[1]).contains("\"id\":\"llama-f32\"");

        // --temperature 0 is the default of requests that give none: the answer is LanguageModel's greedy one
        String want;
        try (LanguageModel lm = LanguageModel.open(GGUF, ModelOptions.defaults().withContextLength(64))) {
            want = lm.generate("Once upon a time", GenerationOptions.greedy().withMaxTokens(8)).text();
        }
        String[] r = http("POST", s.url() + "/v1/completions", "{\"model\":\"llama-f32\",\"prompt\":\"Once upon a time\",\"max_tokens\":8}");
        assertThat(r[0]).as(r[1]).isEqualTo("200");
        assertThat(r[1]).contains("\"text\":" + new com.fasterxml.jackson.databind.ObjectMapper().writeValueAsString(want));

        assertThat(s.stop()).isZero();
        assertThat(s.out().toString()).endsWith("stopped" + System.lineSeparator());
        assertThat(s.err().toString()).isEmpty();
    }

    @Test
    void anApiKeyIsRequiredAndTheNameIsTheFlags() throws Exception {
        Running s = serve(GGUF.toString(), "--port", "0", "--context", "64", "--parallel", "1", "--api-key", "k1", "--name", "mine");
        assertThat(s.listening().group(3)).isEqualTo("mine");
        assertThat(s.listening().group(7)).isNotNull();
        assertThat(http("GET", s.url() + "/v1/models", null)[0]).isEqualTo("401");
        String[] ok = http("GET", s.url() + "/v1/models", null, "Authorization", "Bearer k1");
        assertThat(ok[0]).isEqualTo("200");
        assertThat(ok[1]).contains("\"id\":\"mine\"");
        assertThat(s.stop()).isZero();
    }

    @Test
    void aPortInUseIsBadInput() throws Exception {
        try (ServerSocket taken = new ServerSocket(0, 1, java.net.InetAddress.getByName("127.0.0.1"))) {
            kiln("serve", GGUF.toString(), "--port", "" + taken.getLocalPort(), "--context", "64", "--parallel", "1")
                    .badInput("kiln serve: --host 127.0.0.1 --port " + taken.getLocalPort() + ": cannot listen on 127.0.0.1:" + taken.getLocalPort());
        }
    }

    @Test
    void theDefaultNameDropsGguf() {
        assertThat(ServeCommand.defaultName(Path.of("/m/llama-f32.gguf"))).isEqualTo("llama-f32");
        assertThat(ServeCommand.defaultName(Path.of("/m/SmolLM2"))).isEqualTo("SmolLM2");
        assertThat(ServeCommand.defaultName(Path.of("x.GGUF"))).isEqualTo("x");
    }
}

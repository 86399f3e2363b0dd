package dev.kiln.cli;

import dev.kiln.llm.LanguageModel;
import dev.kiln.llm.ModelOptions;
import dev.kiln.llm.chat.ChatMessage;
import dev.kiln.llm.chat.ChatTemplate;
import dev.kiln.llm.generate.GenerationOptions;
import dev.kiln.llm.generate.GenerationResult;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.io.PrintWriter;
import java.io.StringReader;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * {@code kiln chat} end to end on kiln-llm's tiny committed Llama (its Hugging Face folder carries a Llama 3 style
 * chat template), stdin piped from a string.
 */
class ChatCommandTest {
    static final Path HF = GenerateCommandTest.LLAMA.resolve("hf");
    static final String[] GREEDY = {"--temperature", "0", "--max-tokens", "6", "--context", "128"};

    @TempDir
    Path tmp;

    static CommandsTest.Result chat(String stdin, String... args) {
        StringWriter out = new StringWriter(), err = new StringWriter();
        String[] all = new String[args.length + 1];
        all[0] = "chat";
        System.arraycopy(args, 0, all, 1, args.length);
        int code = Main.run(new StringReader(stdin), new PrintWriter(out, true), new PrintWriter(err, true), all);
        return new CommandsTest.Result(code, out.toString(), err.toString());
    }

    static String[] args(Path model, String... more) {
        List<String> a = new ArrayList<>(List.of(model.toString()));
        a.addAll(List.of(GREEDY));
        a.addAll(List.of(more));
        return a.toArray(String[]::new);
    }

    /** The replies the library gives to {@code users} in turn, each seeing the earlier turns. */
    static List<String> expectedReplies(Path model, String system, String... users) {
        List<String> replies = new ArrayList<>();
        try (LanguageModel lm = LanguageModel.open(model, ModelOptions.defaults().withContextLength(128))) {
            ChatTemplate t = ChatTemplate.forTokenizer(lm.tokenizer());
            List<ChatMessage> conv = new ArrayList<>();
            if (system != null) conv.add(ChatMessage.system(system));
            for (String u : users) {
                conv.add(ChatMessage.user(u));
                GenerationResult r = lm.chat(t, conv, GenerationOptions.greedy().withMaxTokens(6), x -> {});
                replies.add(r.text());
                conv.add(ChatMessage.assistant(r.text()));
            }
        }
        return replies;
    }

    @Test
    void eachLineIsATurnTheConversationIsKeptAndExitEndsIt() {
        var r = chat("Hello\n\nHow are you?\n/exit\nnever read\n", args(HF, "--system", "Be brief.")).ok();
        List<String> want = expectedReplies(HF, "Be brief.", "Hello", "How are you?");
        assertThat(r.out()).isEqualTo(want.get(0) + "\n" + want.get(1) + "\n");
        List<String> stats = r.err().lines().toList();
        assertThat(stats).as("one stats line per reply").hasSize(2);
        Matcher first = GenerateCommandTest.STATS.matcher(stats.get(0)), second = GenerateCommandTest.STATS.matcher(stats.get(1));
        assertThat(first.matches()).as(stats.get(0)).isTrue();
        assertThat(second.matches()).as(stats.get(1)).isTrue();
        assertThat(Integer.parseInt(second.group(1))).as("the second prompt holds the first turn").isGreaterThan(Integer.parseInt(first.group(1)) + 6);
    }

    @Test
    void theEndOfInputEndsTheChatLikeExit() {
        var a = chat("Hello", args(HF)).ok();
        var b = chat("Hello\n/exit\n", args(HF)).ok();
        assertThat(a.out()).isEqualTo(b.out()).isEqualTo(expectedReplies(HF, null, "Hello").getFirst() + "\n");
        var none = chat("", args(HF)).ok();
        assertThat(none.out()).isEmpty();
        assertThat(none.err()).isEmpty();
    }

    @Test
    void repliesStreamAsTheyAreMade() {
        List<String> atFlush = new ArrayList<>();
        StringWriter sink = new StringWriter() {
            @Override
            public void flush() {
                atFlush.add(toString());
            }
        };
        StringWriter err = new StringWriter();
        int code = Main.run(new StringReader("Tell me a story\n"), new PrintWriter(sink), new PrintWriter(err, true), "chat", HF.toString(),
                "--temperature", "0", "--max-tokens", "24", "--context", "128");
        assertThat(code).as("stderr: %s", err).isZero();
        List<String> distinct = atFlush.stream().filter(t -> !t.isEmpty()).distinct().toList();
        assertThat(distinct.size()).as("distinct texts seen at flushes: %s", distinct).isGreaterThan(3);
        for (int i = 1; i < distinct.size(); i++) assertThat(distinct.get(i)).startsWith(distinct.get(i - 1));
    }

    /** A copy of the tiny Llama folder with {@code tokenizer_config.json}'s chat_template replaced (or removed when null). */
    Path withTemplate(String template) throws IOException {
        Path dir = Files.createDirectory(tmp.resolve("model"));
        try (Stream<Path> files = Files.list(HF)) {
            for (Path f : files.toList()) Files.copy(f, dir.resolve(f.getFileName()));
        }
        Path config = dir.resolve("tokenizer_config.json");
        String json = Files.readString(config);
        Matcher m = TEMPLATE_FIELD.matcher(json);
        assertThat(m.find()).as("chat_template in %s", json).isTrue();
        String replacement = template == null ? "\"kiln_test_no_template\": null" : "\"chat_template\": " + jsonString(template);
        Files.writeString(config, json.substring(0, m.start()) + replacement + json.substring(m.end()));
        return dir;
    }

    private static final java.util.regex.Pattern TEMPLATE_FIELD = java.util.regex.Pattern.compile("\"chat_template\"\\s*:\\s*\"(?:[^\"\\\\]|\\\\.)*\"");

    private static String jsonString(String s) {
        StringBuilder b = new StringBuilder("\"");
        for (char c : s.toCharArray()) {
            switch (c) {
                case '"' -> b.append("\\\"");
                case '\\' -> b.append("\\\\");
                case '\n' -> b.append("\\n");
                default -> b.append(c);
            }
        }
        return b.append('"').toString();
    }

    @Test
    void aModelWithoutATemplateIsRefusedUnlessChatMlIsAskedFor() throws IOException {
        Path model = withTemplate(null);
        chat("Hello\n", args(model)).badInput("no chat template", "--chatml");
        var r = chat("Hello\n", args(model, "--chatml")).ok();
        assertThat(r.out()).endsWith("\n");
        assertThat(r.err().lines().toList()).hasSize(1);
    }

    @Test
    void aTemplateThatRefusesTheSystemMessageOrDoesNotParseIsBadInput() throws IOException {
        Path model = withTemplate("{% for m in messages %}{% if m['role'] == 'system' %}{{ raise_exception('System role not supported') }}"
                + "{% endif %}{{ m['content'] }}{% endfor %}");
        chat("Hello\n", args(model, "--system", "x")).badInput("chat template: System role not supported", "--system");
        chat("Hello\n", args(model)).ok();
    }

    @Test
    void aTemplateWithASyntaxErrorIsBadInput() throws IOException {
        Path model = withTemplate("{% for m in messages %}{{ m['content'] }}");
        chat("Hello\n", args(model)).badInput("chat template: ");
    }

    @Test
    void badOptionsAreNamed() {
        chat("", HF.toString(), "--temperature", "-1").badInput("--temperature");
        chat("", HF.toString(), "--system", "").badInput("--system");
        chat("", tmp.resolve("nothing.gguf").toString()).badInput("nothing.gguf");
    }
}

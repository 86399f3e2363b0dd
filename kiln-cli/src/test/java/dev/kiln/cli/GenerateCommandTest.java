package dev.kiln.cli;

import dev.kiln.llm.gguf.GgufFile;
import dev.kiln.llm.tokenizer.Tokenizer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.io.IOException;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static dev.kiln.cli.CommandsTest.kiln;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * {@code kiln generate} end to end on kiln-llm's tiny committed test models (a random-weight Llama, read from
 * {@code ../kiln-llm/src/test/resources/llm}, the module folder being the tests' working directory).
 */
class GenerateCommandTest {
    static final Path LLAMA = Path.of("../kiln-llm/src/test/resources/llm/llama").toAbsolutePath().normalize();
    static final Path GREEDY = LLAMA.resolve("ref-f32/greedy.json");

    @TempDir
    Path tmp;

    /** The reference prompt of greedy.json. */
    static String referencePrompt() throws IOException {
        Matcher m = Pattern.compile("\"prompt\"\\s*:\\s*\"([^\"]*)\"").matcher(Files.readString(GREEDY));
        assertThat(m.find()).isTrue();
        return m.group(1);
    }

    /** The reference continuation's token ids of greedy.json (transformers' greedy generate on the f32 weights). */
    static int[] referenceContinuation() throws IOException {
        Matcher m = Pattern.compile("\"continuation\"\\s*:\\s*\\[([^\\]]*)]").matcher(Files.readString(GREEDY));
        assertThat(m.find()).isTrue();
        return Arrays.stream(m.group(1).split(",")).map(String::strip).mapToInt(Integer::parseInt).toArray();
    }

    /** The reference continuation as text, decoded with the tokenizer of {@code model}. */
    static String referenceText(String model) throws IOException {
        Path p = LLAMA.resolve(model);
        if (Files.isDirectory(p)) return Tokenizer.fromTokenizerJson(p.resolve("tokenizer.json")).decode(referenceContinuation());
        try (GgufFile g = GgufFile.open(p)) {
            return Tokenizer.fromGguf(g.metadata(), p).decode(referenceContinuation());
        }
    }

    static String model(String name) { return LLAMA.resolve(name).toString(); }

    static final Pattern STATS = Pattern.compile(
            "prompt (\\d+) tokens, generated (\\d+) tokens; prefill (\\d+\\.\\d) tokens/s, decode (\\d+\\.\\d) tokens/s; finish (\\w+) \\((\\w+)\\)(; seed (-?\\d+))?");

    /** The one stats line on stderr, parsed. */
    static Matcher stats(CommandsTest.Result r) {
        assertThat(r.err().lines().toList()).as("stderr").hasSize(1);
        Matcher m = STATS.matcher(r.err().strip());
        assertThat(m.matches()).as("stats line: %s", r.err()).isTrue();
        return m;
    }

    @ParameterizedTest
    @ValueSource(strings = {"llama-f32.gguf", "hf"})
    void greedyStreamsTheReferenceContinuationAndPrintsTheStatsLine(String file) throws IOException {
        int[] want = referenceContinuation();
        var r = kiln("generate", model(file), "--prompt", referencePrompt(), "--temperature", "0", "--max-tokens", "" + want.length,
                "--ignore-eos", "--context", "64").ok();
        String text = referenceText(file);
        assertThat(r.out()).isEqualTo(text.endsWith("\n") ? text : text + "\n");
        Matcher s = stats(r);
        assertThat(s.group(1)).isEqualTo("12");
        assertThat(s.group(2)).isEqualTo("" + want.length);
        assertThat(Double.parseDouble(s.group(3))).isPositive();
        assertThat(Double.parseDouble(s.group(4))).isPositive();
        assertThat(s.group(5)).isEqualTo("length");
        assertThat(s.group(6)).isEqualTo("max_tokens");
        assertThat(s.group(7)).as("no seed when greedy").isNull();
    }

    @Test
    void theTextIsFlushedAsItIsMadeNotOnlyAtTheEnd() throws IOException {
        List<String> atFlush = new ArrayList<>();
        StringWriter sink = new StringWriter() {
            @Override
            public void flush() {
                atFlush.add(toString());
            }
        };
        StringWriter err = new StringWriter();
        int code = Main.run(new PrintWriter(sink), new PrintWriter(err, true), "generate", model("llama-f32.gguf"), "--prompt", referencePrompt(),
                "--temperature", "0", "--max-tokens", "32", "--ignore-eos", "--context", "64");
        assertThat(code).as("stderr: %s", err).isZero();
        List<String> distinct = atFlush.stream().filter(t -> !t.isEmpty()).distinct().toList();
        assertThat(distinct.size()).as("distinct texts seen at flushes").isGreaterThan(10);
        for (int i = 1; i < distinct.size(); i++) assertThat(distinct.get(i)).startsWith(distinct.get(i - 1));
        String text = referenceText("llama-f32.gguf");
        assertThat(sink.toString()).isEqualTo(text.endsWith("\n") ? text : text + "\n");
    }

    @Test
    void theSameSeedGivesTheSameTextAndTheSeedIsReported() throws IOException {
        String[] args = {"generate", model("llama-f32.gguf"), "--prompt", referencePrompt(), "--temperature", "1.2", "--top-k", "0", "--top-p", "1",
                "--min-p", "0", "--max-tokens", "24", "--ignore-eos", "--context", "64", "--seed"};
        var a = kiln(concat(args, "7")).ok();
        var b = kiln(concat(args, "7")).ok();
        var c = kiln(concat(args, "8")).ok();
        assertThat(a.out()).isEqualTo(b.out()).isNotBlank();
        assertThat(c.out()).as("another seed").isNotEqualTo(a.out());
        assertThat(stats(a).group(8)).isEqualTo("7");
        assertThat(stats(c).group(8)).isEqualTo("8");
        // without --seed a fresh one is drawn and printed, and rerunning with it gives the same text
        var d = kiln(Arrays.copyOf(args, args.length - 1)).ok();
        String seed = stats(d).group(8);
        assertThat(seed).isNotNull();
        assertThat(kiln(concat(args, seed)).ok().out()).isEqualTo(d.out());
    }

    @Test
    void aStopStringEndsTheTextBeforeIt() throws IOException {
        String text = referenceText("llama-f32.gguf");
        String stop = text.substring(text.length() / 2, text.length() / 2 + 3);
        int at = text.indexOf(stop);
        assertThat(at).isPositive();
        var r = kiln("generate", model("llama-f32.gguf"), "--prompt", referencePrompt(), "--temperature", "0", "--max-tokens", "32",
                "--ignore-eos", "--context", "64", "--stop", "\u0001never", "--stop", stop).ok();
        String before = text.substring(0, at);
        assertThat(r.out()).isEqualTo(before.endsWith("\n") ? before : before + "\n");
        Matcher s = stats(r);
        assertThat(s.group(5)).isEqualTo("stop");
        assertThat(s.group(6)).isEqualTo("stop_string");
    }

    @Test
    void aPromptOverTheContextIsBadInput() throws IOException {
        kiln("generate", model("llama-f32.gguf"), "--prompt", referencePrompt(), "--context", "16", "--max-tokens", "32")
                .badInput("kiln generate: context overflow: the prompt's 12 tokens plus --max-tokens 32 is 44, over the context length of 16",
                        "larger --context (the model was trained for 128)");
        kiln("generate", model("llama-f32.gguf"), "--prompt", referencePrompt(), "--context", "8", "--max-tokens", "0")
                .badInput("kiln generate: context overflow: the prompt's 12 tokens fill the context length of 8");
    }

    @Test
    void badModelsAreBadInput() throws IOException {
        kiln("generate", tmp.resolve("none.gguf").toString(), "--prompt", "hi").badInput("kiln generate: ", "none.gguf");
        Path junk = Files.writeString(tmp.resolve("junk.gguf"), "this is not a GGUF file at all, just some text");
        kiln("generate", junk.toString(), "--prompt", "hi").badInput("kiln generate: ", "junk.gguf");
        Path empty = Files.createDirectory(tmp.resolve("empty"));
        kiln("generate", empty.toString(), "--prompt", "hi").badInput("kiln generate: ", "found a folder without config.json");
        Path noWeights = Files.createDirectory(tmp.resolve("no-weights"));
        for (String f : new String[] {"config.json", "tokenizer.json"}) Files.copy(LLAMA.resolve("hf").resolve(f), noWeights.resolve(f));
        kiln("generate", noWeights.toString(), "--prompt", "hi").badInput("kiln generate: ", "no-weights", "safetensors");
        Files.writeString(noWeights.resolve("config.json"), "{\"model_type\": ");
        kiln("generate", noWeights.toString(), "--prompt", "hi").badInput("kiln generate: ", "config.json", "JSON");
        byte[] gguf = Files.readAllBytes(LLAMA.resolve("llama-f32.gguf"));
        Path truncated = Files.write(tmp.resolve("truncated.gguf"), Arrays.copyOf(gguf, gguf.length / 2));
        kiln("generate", truncated.toString(), "--prompt", "hi").badInput("kiln generate: ", "truncated.gguf");
    }

    @Test
    void badOptionValuesAreBadInputBeforeTheModelLoads() {
        String m = tmp.resolve("never-read.gguf").toString(); // the options are checked first: the model is never opened
        kiln("generate", m, "--prompt", "hi", "--temperature", "-1").badInput("--temperature: expected a number >= 0", "got -1.0");
        kiln("generate", m, "--prompt", "hi", "--temperature", "NaN").badInput("--temperature: expected", "got NaN");
        kiln("generate", m, "--prompt", "hi", "--top-p", "0").badInput("--top-p: expected a number in (0, 1]", "got 0.0");
        kiln("generate", m, "--prompt", "hi", "--top-p", "1.5").badInput("--top-p: expected a number in (0, 1]", "got 1.5");
        kiln("generate", m, "--prompt", "hi", "--min-p", "2").badInput("--min-p: expected a number in [0, 1]", "got 2.0");
        kiln("generate", m, "--prompt", "hi", "--top-k", "-3").badInput("--top-k: expected a whole number >= 0", "got -3");
        kiln("generate", m, "--prompt", "hi", "--max-tokens", "-1").badInput("--max-tokens: expected a whole number >= 0", "got -1");
        kiln("generate", m, "--prompt", "hi", "--context", "-5").badInput("--context: expected a whole number >= 0", "got -5");
        kiln("generate", m, "--prompt", "hi", "--repetition-penalty", "0").badInput("--repetition-penalty: expected a number > 0", "got 0.0");
        kiln("generate", m, "--prompt", "hi", "--presence-penalty", "Infinity").badInput("--presence-penalty: expected a finite number");
        kiln("generate", m, "--prompt", "hi", "--stop", "").badInput("--stop: expected some text");
        kiln("generate", m, "--prompt", "").badInput("--prompt: expected some text");
        kiln("generate", m, "--prompt", "hi", "--temperature", "warm").badInput("kiln generate: ", "--temperature", "warm");
        kiln("generate", m, "--prompt", "hi", "--seed", "x").badInput("kiln generate: ", "--seed", "x");
        kiln("generate", m).badInput("kiln generate: Missing required option: '--prompt=TEXT'");
        kiln("generate", m, "--prompt", "hi", "--device", "NOPE").badInput("kiln generate: ", "NOPE");
        kiln("generate", m, "--prompt", "hi", "--kv-cache", "f8").badInput("--kv-cache: expected f32 or f16", "got f8");
        kiln("generate", m, "--prompt", "hi", "--q8-activations", "--device", "CPU").badInput("--q8-activations: expected --device CLANG", "--device CPU");
    }

    /** llama.cpp's rounding on CLANG: x quantised to 8 bits, an f16 cache; the text streams and the stats line ends it. */
    @Test
    void llamaCppRoundingOnClang() throws IOException {
        var reason = dev.kiln.runtime.DeviceRegistry.providers().get("CLANG").unavailableReason();
        org.junit.jupiter.api.Assumptions.assumeTrue(reason.isEmpty(), () -> "CLANG device unavailable: " + reason.orElse(""));
        var r = kiln("generate", model("llama-q8_0.gguf"), "--prompt", referencePrompt(), "--temperature", "0", "--max-tokens", "8",
                "--ignore-eos", "--context", "64", "--device", "CLANG", "--q8-activations", "--kv-cache", "f16").ok();
        assertThat(r.out()).isNotBlank();
        assertThat(stats(r).group(2)).isEqualTo("8");
    }

    private static String[] concat(String[] a, String last) {
        String[] r = Arrays.copyOf(a, a.length + 1);
        r[a.length] = last;
        return r;
    }
}

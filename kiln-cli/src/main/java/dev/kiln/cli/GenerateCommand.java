package dev.kiln.cli;

import dev.kiln.llm.LanguageModel;
import dev.kiln.llm.ModelOptions;
import dev.kiln.llm.generate.ContextOverflowException;
import dev.kiln.llm.generate.GenerationOptions;
import dev.kiln.llm.generate.GenerationResult;
import dev.kiln.llm.generate.GenerationStats;
import dev.kiln.llm.generate.SamplingOptions;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

import java.io.PrintWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.ThreadLocalRandom;

/**
 * {@code kiln generate MODEL --prompt TEXT}: continues a prompt with a language model (kiln-llm), streaming the text to
 * standard output as it is made, then one line of statistics on standard error.
 *
 * <p>The sampling options carry OpenAI's names; their defaults are llama.cpp's ({@code --temperature 0.8},
 * {@code --top-k 40}, {@code --top-p 0.95}, {@code --min-p 0.05}, no penalty), which suit small local models better than
 * OpenAI's (temperature 1, no filter). {@code --temperature 0} is greedy.
 */
@Command(name = "generate", mixinStandardHelpOptions = true, sortOptions = false,
        description = {"Continue a prompt with a language model: stream the generated text to standard output as it is made, then print"
                + " one line on standard error: prompt and generated tokens, prefill and decode tokens/s, the finish reason (and the seed"
                + " when sampling).",
                "MODEL is a .gguf file or a Hugging Face folder (config.json, tokenizer.json, *.safetensors) of the Llama family"
                        + " (Llama 2/3, Mistral, Qwen2, SmolLM).",
                "Sampling defaults are llama.cpp's: temperature 0.8, top-k 40, top-p 0.95, min-p 0.05, no penalty; --temperature 0 is greedy."})
final class GenerateCommand extends KilnCommand {
    static final int DEFAULT_MAX_TOKENS = 128;

    @Parameters(index = "0", paramLabel = "MODEL", description = "A .gguf file or a Hugging Face model folder.")
    Path model;

    @Option(names = "--prompt", required = true, paramLabel = "TEXT", description = "The text to continue.")
    String prompt;

    @Option(names = "--max-tokens", paramLabel = "N", defaultValue = "" + DEFAULT_MAX_TOKENS,
            description = "The most tokens to generate; 0 = until an end token or the context is full (default: ${DEFAULT-VALUE}).")
    int maxTokens;

    @Option(names = "--temperature", paramLabel = "T", defaultValue = "0.8",
            description = "Sampling temperature, >= 0; 0 = greedy (always the most likely token) (default: ${DEFAULT-VALUE}).")
    double temperature;

    @Option(names = "--top-k", paramLabel = "K", defaultValue = "40",
            description = "Keep only the K most likely tokens; 0 = off (default: ${DEFAULT-VALUE}).")
    int topK;

    @Option(names = "--top-p", paramLabel = "P", defaultValue = "0.95",
            description = "Nucleus sampling: keep the most likely tokens whose probabilities sum to P, in (0, 1]; 1 = off (default: ${DEFAULT-VALUE}).")
    double topP;

    @Option(names = "--min-p", paramLabel = "P", defaultValue = "0.05",
            description = "Drop tokens less likely than P times the most likely one, in [0, 1]; 0 = off (default: ${DEFAULT-VALUE}).")
    double minP;

    @Option(names = "--repetition-penalty", paramLabel = "R", defaultValue = "1",
            description = "Penalise the last 64 tokens' logits (divide positive ones by R, multiply negative ones), > 0; 1 = off (default: ${DEFAULT-VALUE}).")
    double repetitionPenalty;

    @Option(names = "--presence-penalty", paramLabel = "X", defaultValue = "0",
            description = "Subtract X from the logit of every token among the last 64; 0 = off (default: ${DEFAULT-VALUE}).")
    double presencePenalty;

    @Option(names = "--seed", paramLabel = "S",
            description = "Seed of the random draw: the same seed, options and model give the same text (default: a fresh seed, printed with the statistics).")
    Long seed;

    @Option(names = "--stop", paramLabel = "TEXT",
            description = "Stop where the text first contains TEXT, which is not printed (repeatable).")
    List<String> stop = new ArrayList<>();

    @Option(names = "--ignore-eos", description = "Keep generating past end-of-text tokens.")
    boolean ignoreEos;

    @Option(names = "--context", paramLabel = "N", defaultValue = "0",
            description = "Context length in tokens (prompt and generated text; the KV caches are sized for it); 0 = the model's, at most "
                    + ModelOptions.DEFAULT_MAX_CONTEXT + " (default: ${DEFAULT-VALUE}).")
    int context;

    @Mixin
    DeviceOption device;

    @Override
    int execute() {
        GenerationOptions options = generationOptions();
        if (device.device != null) device.resolve(); // a bad --device is bad input, named as such, before the model loads
        ModelOptions modelOptions = ModelOptions.defaults().withDevice(device.device).withContextLength(context);
        checkFolder(model);
        LanguageModel lm;
        try (Progress p = progress("loading " + model)) {
            lm = LanguageModel.open(model, modelOptions);
        }
        try (lm) {
            PrintWriter out = out();
            boolean[] endsWithNewline = {true};
            GenerationResult r;
            try {
                r = lm.generate(prompt, options, t -> {
                    if (!t.text().isEmpty()) {
                        out.print(t.text());
                        out.flush();
                        endsWithNewline[0] = t.text().endsWith("\n");
                    }
                });
            } catch (ContextOverflowException e) {
                int promptTokens = lm.encode(prompt).length;
                String need = maxTokens == 0 ? "the prompt's " + promptTokens + " tokens fill"
                        : "the prompt's " + promptTokens + " tokens plus --max-tokens " + maxTokens + " is " + ((long) promptTokens + maxTokens) + ", over";
                throw new IllegalArgumentException("context overflow: " + need + " the context length of " + e.contextLength()
                        + "; give a larger --context (the model was trained for " + lm.config().maxPositionEmbeddings()
                        + "), a shorter prompt or fewer --max-tokens", e);
            }
            if (!endsWithNewline[0]) out.println();
            out.flush();
            err().println(statsLine(r, options.sampling()));
            err().flush();
        }
        return 0;
    }

    /** The options, checked with the command line's names before the model loads. */
    GenerationOptions generationOptions() {
        if (prompt.isEmpty()) throw new IllegalArgumentException("--prompt: expected some text, got an empty string");
        check(maxTokens >= 0, "--max-tokens", "a whole number >= 0 (0 = up to the context)", maxTokens);
        check(temperature >= 0 && Double.isFinite(temperature), "--temperature", "a number >= 0 (0 = greedy)", temperature);
        check(topK >= 0, "--top-k", "a whole number >= 0 (0 = off)", topK);
        check(topP > 0 && topP <= 1, "--top-p", "a number in (0, 1]", topP);
        check(minP >= 0 && minP <= 1, "--min-p", "a number in [0, 1]", minP);
        check(repetitionPenalty > 0 && Double.isFinite(repetitionPenalty), "--repetition-penalty", "a number > 0 (1 = off)", repetitionPenalty);
        check(Double.isFinite(presencePenalty), "--presence-penalty", "a finite number (0 = off)", presencePenalty);
        check(context >= 0, "--context", "a whole number >= 0 (0 = the model's)", context);
        for (String s : stop) if (s.isEmpty()) throw new IllegalArgumentException("--stop: expected some text, got an empty string");
        long s = seed != null ? seed : ThreadLocalRandom.current().nextLong();
        SamplingOptions sampling = SamplingOptions.defaults().withTemperature(temperature).withTopK(topK).withTopP(topP).withMinP(minP)
                .withRepetitionPenalty(repetitionPenalty).withPresencePenalty(presencePenalty).withSeed(s);
        return new GenerationOptions(maxTokens, stop, ignoreEos, sampling);
    }

    /** A folder MODEL must hold config.json and tokenizer.json: said here in the command line's words, before kiln-llm's own reading. */
    private static void checkFolder(Path model) {
        if (!Files.isDirectory(model)) return;
        for (String f : new String[] {"config.json", "tokenizer.json"}) {
            if (!Files.isRegularFile(model.resolve(f))) {
                throw new IllegalArgumentException(model + ": expected a .gguf file or a Hugging Face model folder (config.json, tokenizer.json,"
                        + " safetensors weights), found a folder without " + f);
            }
        }
    }

    private static void check(boolean ok, String option, String expected, Object got) {
        if (!ok) throw new IllegalArgumentException(option + ": expected " + expected + ", got " + got);
    }

    /** The statistics line: tokens, speeds, the finish reason (OpenAI's name and ours), the seed when sampling. */
    static String statsLine(GenerationResult r, SamplingOptions sampling) {
        GenerationStats s = r.stats();
        String line = String.format(Locale.ROOT,
                "prompt %d tokens, generated %d tokens; prefill %.1f tokens/s, decode %.1f tokens/s; finish %s (%s)",
                s.promptTokens(), s.generatedTokens(), s.prefillTokensPerSecond(), s.decodeTokensPerSecond(),
                r.finish().openAiName(), r.finish().name().toLowerCase(Locale.ROOT));
        if (!sampling.isGreedy() && sampling.seed().isPresent()) line += "; seed " + sampling.seed().getAsLong();
        return line;
    }
}

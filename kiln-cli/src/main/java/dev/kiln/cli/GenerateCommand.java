package dev.kiln.cli;

import dev.kiln.llm.LanguageModel;
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
import java.nio.file.Path;
import java.util.Locale;

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

    @Option(names = "--ignore-eos", description = "Keep generating past end-of-text tokens.")
    boolean ignoreEos;

    @Mixin
    SamplingFlags flags;

    @Override
    int execute() {
        GenerationOptions options = generationOptions();
        LanguageModel lm = openLanguageModel(model, flags);
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
        SamplingFlags.check(maxTokens >= 0, "--max-tokens", "a whole number >= 0 (0 = up to the context)", maxTokens);
        SamplingOptions sampling = flags.sampling();
        return new GenerationOptions(maxTokens, flags.stop, ignoreEos, sampling);
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

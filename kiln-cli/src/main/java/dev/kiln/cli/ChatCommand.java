package dev.kiln.cli;

import dev.kiln.llm.LanguageModel;
import dev.kiln.llm.ModelOptions;
import dev.kiln.llm.chat.ChatMessage;
import dev.kiln.llm.chat.ChatTemplate;
import dev.kiln.llm.chat.ChatTemplateException;
import dev.kiln.llm.generate.ContextOverflowException;
import dev.kiln.llm.generate.GenerationOptions;
import dev.kiln.llm.generate.GenerationResult;
import dev.kiln.llm.generate.SamplingOptions;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintWriter;
import java.io.Reader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ThreadLocalRandom;

/**
 * {@code kiln chat MODEL}: a conversation with a language model. Each line read from standard input is a user turn;
 * the model's reply, rendered through its chat template and stopped at its end-of-turn token, streams to standard
 * output as it is made, followed by a newline; one line of statistics per reply goes to standard error. The
 * conversation is kept (each reply sees every earlier turn) until {@code /exit} or the end of input.
 *
 * <p>A model whose files hold no chat template is refused (exit 2) unless {@code --chatml} asks for the ChatML format
 * instead. Sampling options and defaults are {@code kiln generate}'s.
 */
@Command(name = "chat", mixinStandardHelpOptions = true, sortOptions = false,
        description = {"Chat with a language model: each line of standard input is a user message; the reply streams to standard output as"
                + " it is made (one line of statistics per reply on standard error). The conversation is kept until /exit or the end of input.",
                "MODEL is a .gguf file or a Hugging Face folder (config.json, tokenizer.json, tokenizer_config.json, *.safetensors) of the Llama"
                        + " family; its chat template (tokenizer.chat_template, or chat_template in tokenizer_config.json) formats the conversation.",
                "Sampling defaults are kiln generate's (llama.cpp's): temperature 0.8, top-k 40, top-p 0.95, min-p 0.05; --temperature 0 is greedy."})
final class ChatCommand extends KilnCommand {
    static final String EXIT = "/exit";

    @Parameters(index = "0", paramLabel = "MODEL", description = "A .gguf file or a Hugging Face model folder.")
    Path model;

    @Option(names = "--system", paramLabel = "TEXT", description = "A system message that opens the conversation.")
    String system;

    @Option(names = "--chatml", description = "If the model has no chat template, use ChatML (<|im_start|>role ... <|im_end|>) rather than refuse."
            + " A model not trained on it will answer poorly.")
    boolean chatMl;

    @Option(names = "--max-tokens", paramLabel = "N", defaultValue = "512",
            description = "The most tokens of one reply; 0 = until the end of the turn or the context is full (default: ${DEFAULT-VALUE}).")
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
            description = "Seed of the random draw: the same seed, options, model and input give the same replies (default: a fresh seed, printed with the statistics).")
    Long seed;

    @Option(names = "--stop", paramLabel = "TEXT",
            description = "End a reply where its text first contains TEXT, which is not printed (repeatable).")
    List<String> stop = new ArrayList<>();

    @Option(names = "--context", paramLabel = "N", defaultValue = "0",
            description = "Context length in tokens (the whole conversation; the KV caches are sized for it); 0 = the model's, at most "
                    + ModelOptions.DEFAULT_MAX_CONTEXT + " (default: ${DEFAULT-VALUE}).")
    int context;

    @Mixin
    DeviceOption device;

    @Override
    int execute() throws IOException {
        GenerationOptions options = generationOptions();
        if (device.device != null) device.resolve();
        ModelOptions modelOptions = ModelOptions.defaults().withDevice(device.device).withContextLength(context);
        checkFolder(model);
        LanguageModel lm;
        try (Progress p = progress("loading " + model)) {
            lm = LanguageModel.open(model, modelOptions);
        }
        try (lm) {
            ChatTemplate template = template(lm);
            List<ChatMessage> conversation = new ArrayList<>();
            if (system != null) conversation.add(ChatMessage.system(system));
            // the template's own refusals (a system message it does not take, say) before the first line is read
            List<ChatMessage> probe = new ArrayList<>(conversation);
            probe.add(ChatMessage.user("Hello"));
            try {
                template.render(probe, true);
            } catch (ChatTemplateException e) {
                throw new IllegalArgumentException(model + ": " + e.getMessage() + (system != null ? " (with --system)" : ""), e);
            }
            BufferedReader in = new BufferedReader(input());
            PrintWriter out = out();
            boolean prompt = spec.root().userObject() instanceof Main m && m.interactive;
            for (;;) {
                if (prompt) {
                    err().print("> ");
                    err().flush();
                }
                String line = in.readLine();
                if (line == null || line.strip().equals(EXIT)) break;
                if (line.isBlank()) continue;
                conversation.add(ChatMessage.user(line));
                GenerationResult r;
                try {
                    r = lm.chat(template, conversation, options, t -> {
                        if (!t.text().isEmpty()) {
                            out.print(t.text());
                            out.flush();
                        }
                    });
                } catch (ContextOverflowException e) {
                    throw new IllegalArgumentException("context overflow: the conversation (" + lm.encodeChat(template, conversation).length
                            + " tokens" + (maxTokens > 0 ? " plus --max-tokens " + maxTokens : "") + ") no longer fits the context length of "
                            + e.contextLength() + "; start again with a larger --context (the model was trained for "
                            + lm.config().maxPositionEmbeddings() + ") or fewer --max-tokens", e);
                }
                out.println();
                out.flush();
                conversation.add(ChatMessage.assistant(r.text()));
                err().println(GenerateCommand.statsLine(r, options.sampling()));
                err().flush();
            }
        }
        return 0;
    }

    private ChatTemplate template(LanguageModel lm) {
        try {
            return ChatTemplate.forTokenizer(lm.tokenizer(), chatMl);
        } catch (ChatTemplateException e) {
            String hint = e.kind() == ChatTemplateException.Kind.MISSING
                    ? model + ": the model has no chat template (tokenizer.chat_template in GGUF, chat_template in tokenizer_config.json);"
                    + " give --chatml to use the ChatML format, or use kiln generate"
                    : model + ": " + e.getMessage();
            throw new IllegalArgumentException(hint, e);
        }
    }

    private Reader input() {
        if (spec.root().userObject() instanceof Main m && m.in != null) return m.in;
        return new InputStreamReader(System.in, StandardCharsets.UTF_8);
    }

    /** The options, checked with the command line's names before the model loads. */
    GenerationOptions generationOptions() {
        if (system != null && system.isBlank()) throw new IllegalArgumentException("--system: expected some text, got an empty string");
        check(maxTokens >= 0, "--max-tokens", "a whole number >= 0 (0 = up to the end of the turn)", maxTokens);
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
        return new GenerationOptions(maxTokens, stop, false, sampling);
    }

    /** A folder MODEL must hold config.json and tokenizer.json: said here in the command line's words. */
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
}

package dev.kiln.cli;

import dev.kiln.llm.LanguageModel;
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
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

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

    @Mixin
    SamplingFlags flags;

    @Override
    int execute() throws IOException {
        GenerationOptions options = generationOptions();
        LanguageModel lm = openLanguageModel(model, flags);
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
        SamplingFlags.check(maxTokens >= 0, "--max-tokens", "a whole number >= 0 (0 = up to the end of the turn)", maxTokens);
        SamplingOptions sampling = flags.sampling();
        return new GenerationOptions(maxTokens, flags.stop, false, sampling);
    }
}

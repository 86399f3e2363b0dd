package dev.kiln.langchain4j;

import dev.kiln.llm.LanguageModel;
import dev.kiln.llm.chat.ChatTemplate;
import dev.kiln.llm.chat.ChatTemplateException;
import dev.kiln.llm.generate.ContextOverflowException;
import dev.kiln.llm.generate.GenerationOptions;
import dev.kiln.llm.generate.GenerationResult;
import dev.kiln.llm.generate.SamplingOptions;
import dev.kiln.llm.generate.TokenStream;
import dev.langchain4j.data.message.AiMessage;
import dev.langchain4j.data.message.ChatMessage;
import dev.langchain4j.data.message.Content;
import dev.langchain4j.data.message.SystemMessage;
import dev.langchain4j.data.message.TextContent;
import dev.langchain4j.data.message.UserMessage;
import dev.langchain4j.exception.InvalidRequestException;
import dev.langchain4j.exception.ModelNotFoundException;
import dev.langchain4j.exception.UnsupportedFeatureException;
import dev.langchain4j.model.chat.request.ChatRequest;
import dev.langchain4j.model.chat.request.ChatRequestParameters;
import dev.langchain4j.model.chat.request.ResponseFormatType;
import dev.langchain4j.model.chat.request.ToolChoice;
import dev.langchain4j.model.chat.response.ChatResponse;
import dev.langchain4j.model.output.FinishReason;
import dev.langchain4j.model.output.TokenUsage;

import java.util.ArrayList;
import java.util.List;

/**
 * What {@link KilnChatModel} and {@link KilnStreamingChatModel} share: the model, its chat template, its name, the
 * default parameters, and the mapping of a LangChain4j request onto Kiln's options and of Kiln's result onto a
 * LangChain4j response. Immutable; safe to use from many threads (each generation gets its own decoder).
 */
final class KilnEngine implements AutoCloseable {
    final LanguageModel model;
    final boolean owned;
    final ChatTemplate template;
    final String modelName;
    final ChatRequestParameters defaults;
    final SamplingOptions sampling;

    KilnEngine(LanguageModel model, boolean owned, ChatTemplate template, String modelName, ChatRequestParameters defaults,
               SamplingOptions sampling) {
        this.model = model;
        this.owned = owned;
        this.template = template;
        this.modelName = modelName;
        this.defaults = defaults;
        this.sampling = sampling;
        // the defaults are checked when the model is built, so a bad default fails there and not on every request
        options(defaults);
    }

    /** A checked request: the prompt's token ids and the generation's options. */
    record Prepared(int[] prompt, GenerationOptions options) {}

    /**
     * Checks a request (its parameters already merged with {@link #defaults} by LangChain4j's {@code chat}) and maps
     * it onto Kiln's prompt and options. Nothing runs.
     *
     * @throws UnsupportedFeatureException for what Kiln cannot honour (tools, JSON response formats, a frequency
     *                                     penalty, content other than text, tool messages, participant names)
     * @throws InvalidRequestException     for a value out of range, a conversation the template refuses, or one
     *                                     that does not fit the context
     * @throws ModelNotFoundException      when the request names another model
     */
    Prepared prepare(ChatRequest request) {
        ChatRequestParameters p = request.parameters() == null ? defaults : request.parameters();
        GenerationOptions options = options(p);
        List<dev.kiln.llm.chat.ChatMessage> messages = messages(request.messages());
        int[] prompt;
        try {
            prompt = model.encodeChat(template, messages);
        } catch (ChatTemplateException e) {
            throw new InvalidRequestException("the model's chat template refused the messages: " + e.getMessage(), e);
        }
        int context = model.contextLength(), max = options.maxTokens();
        if (prompt.length > context || (max > 0 && (long) prompt.length + max > context)) {
            throw new InvalidRequestException(max == 0
                    ? "This model's maximum context length is " + context + " tokens. However, your messages resulted in " + prompt.length
                    + " tokens. Please reduce the length of the messages."
                    : "This model's maximum context length is " + context + " tokens. However, you requested " + ((long) prompt.length + max)
                    + " tokens (" + prompt.length + " in the messages, " + max + " in the completion). Please reduce the length of the messages or"
                    + " maxOutputTokens.");
        }
        return new Prepared(prompt, options);
    }

    /** The generation of a prepared request, step by step; close it when done. */
    TokenStream stream(Prepared p) {
        try {
            return model.stream(p.prompt(), p.options());
        } catch (ContextOverflowException e) {
            throw new InvalidRequestException(e.getMessage(), e);
        }
    }

    /** LangChain4j's response for a finished generation. */
    ChatResponse response(GenerationResult r) {
        FinishReason finish = switch (r.finish()) {
            case END_OF_TEXT, STOP_STRING -> FinishReason.STOP;
            case MAX_TOKENS, CONTEXT_FULL -> FinishReason.LENGTH;
        };
        return ChatResponse.builder()
                .aiMessage(AiMessage.from(r.text()))
                .modelName(modelName)
                .tokenUsage(new TokenUsage(r.stats().promptTokens(), r.tokens().length))
                .finishReason(finish)
                .build();
    }

    /** The parameters mapped as the server maps OpenAI's fields; see {@link KilnChatModel} for the table. */
    GenerationOptions options(ChatRequestParameters p) {
        if (p.modelName() != null && !p.modelName().equals(modelName)) {
            throw new ModelNotFoundException("The model '" + p.modelName() + "' does not exist: this Kiln chat model is '" + modelName + "'");
        }
        if (p.toolSpecifications() != null && !p.toolSpecifications().isEmpty()) {
            throw new UnsupportedFeatureException("tool specifications are not supported by Kiln (got " + p.toolSpecifications().size()
                    + "): Kiln does not generate tool calls");
        }
        if (p.toolChoice() == ToolChoice.REQUIRED) {
            throw new UnsupportedFeatureException("toolChoice REQUIRED is not supported by Kiln: Kiln does not generate tool calls");
        }
        if (p.responseFormat() != null && p.responseFormat().type() != ResponseFormatType.TEXT) {
            throw new UnsupportedFeatureException("responseFormat " + p.responseFormat().type()
                    + (p.responseFormat().jsonSchema() != null ? " with a JSON schema" : "") + " is not supported by Kiln: only TEXT is");
        }
        if (p.frequencyPenalty() != null && p.frequencyPenalty() != 0) {
            throw new UnsupportedFeatureException("frequencyPenalty is not supported by Kiln (it has presencePenalty and repetitionPenalty);"
                    + " give 0 or leave it out, got " + p.frequencyPenalty());
        }
        SamplingOptions s = sampling;
        if (p.temperature() != null) s = s.withTemperature(range("temperature", p.temperature(), 0, 2));
        if (p.topP() != null) {
            double topP = p.topP();
            if (!(topP > 0 && topP <= 1)) throw new InvalidRequestException("topP: expected a number in (0, 1], got " + p.topP());
            s = s.withTopP(topP);
        }
        if (p.topK() != null) {
            if (p.topK() < 0) throw new InvalidRequestException("topK: expected an integer >= 0 (0 = off), got " + p.topK());
            s = s.withTopK(p.topK());
        }
        if (p.presencePenalty() != null) s = s.withPresencePenalty(range("presencePenalty", p.presencePenalty(), -2, 2));
        int maxTokens = 0;
        if (p.maxOutputTokens() != null) {
            if (p.maxOutputTokens() < 1) throw new InvalidRequestException("maxOutputTokens: expected an integer >= 1, got " + p.maxOutputTokens());
            maxTokens = p.maxOutputTokens();
        }
        List<String> stop = p.stopSequences() == null ? List.of() : p.stopSequences();
        for (String x : stop) {
            if (x == null || x.isEmpty()) throw new InvalidRequestException("stopSequences: stop sequences must not be empty, got " + stop);
        }
        return new GenerationOptions(maxTokens, stop, false, s);
    }

    private static double range(String name, double v, double min, double max) {
        if (!(v >= min && v <= max)) {
            throw new InvalidRequestException(name + ": expected a number in [" + (long) min + ", " + (long) max + "], got " + v);
        }
        return v;
    }

    /** LangChain4j's messages as Kiln's roles: system, user (text only), assistant (text only). */
    static List<dev.kiln.llm.chat.ChatMessage> messages(List<ChatMessage> in) {
        if (in == null || in.isEmpty()) throw new InvalidRequestException("messages: expected at least one message, got none");
        List<dev.kiln.llm.chat.ChatMessage> out = new ArrayList<>(in.size());
        for (int i = 0; i < in.size(); i++) {
            ChatMessage m = in.get(i);
            String at = "messages[" + i + "]";
            switch (m) {
                case SystemMessage sm -> out.add(dev.kiln.llm.chat.ChatMessage.system(sm.text()));
                case UserMessage um -> {
                    if (um.name() != null) throw new UnsupportedFeatureException(at + ": participant names are not supported by Kiln, got '" + um.name() + "'");
                    StringBuilder text = new StringBuilder();
                    for (Content c : um.contents()) {
                        if (!(c instanceof TextContent t)) {
                            throw new UnsupportedFeatureException(at + ": only text content is supported by Kiln, got " + c.type() + " content");
                        }
                        text.append(t.text());
                    }
                    out.add(dev.kiln.llm.chat.ChatMessage.user(text.toString()));
                }
                case AiMessage am -> {
                    if (am.hasToolExecutionRequests()) {
                        throw new UnsupportedFeatureException(at + ": tool execution requests are not supported by Kiln");
                    }
                    out.add(dev.kiln.llm.chat.ChatMessage.assistant(am.text() == null ? "" : am.text()));
                }
                default -> throw new UnsupportedFeatureException(at + ": " + m.type() + " messages are not supported by Kiln"
                        + " (it takes SYSTEM, USER and AI messages)");
            }
        }
        return out;
    }

    @Override
    public void close() {
        if (owned) model.close();
    }
}

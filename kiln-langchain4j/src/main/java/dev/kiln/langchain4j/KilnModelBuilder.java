package dev.kiln.langchain4j;

import dev.kiln.llm.LanguageModel;
import dev.kiln.llm.ModelOptions;
import dev.kiln.llm.chat.ChatTemplate;
import dev.langchain4j.model.chat.request.ChatRequestParameters;

import java.nio.file.Path;
import java.util.List;

/**
 * What the builders of {@link KilnChatModel} and {@link KilnStreamingChatModel} share: the model, its template and the
 * default request parameters, in LangChain4j's style.
 *
 * @param <B> the concrete builder, which every setter returns
 */
public abstract class KilnModelBuilder<B extends KilnModelBuilder<B>> {
    final KilnSettings settings = new KilnSettings();

    KilnModelBuilder() {}

    @SuppressWarnings("unchecked")
    private B self() { return (B) this; }

    /** The model to generate with; it stays the caller's to close. */
    public B model(LanguageModel model) { settings.model = model; return self(); }

    /** A GGUF file or Hugging Face folder that the built model opens; the chat model owns it and closes it. */
    public B modelPath(Path path) { settings.modelPath = path; return self(); }

    /** How {@link #modelPath(Path)} is opened; {@link ModelOptions#defaults()} if not given. */
    public B modelOptions(ModelOptions options) { settings.modelOptions = options; return self(); }

    /** The name in responses; default the file name without its extension, or {@code kiln} for a given model. */
    public B modelName(String name) { settings.modelName = name; return self(); }

    /** The chat template to render conversations with; default the model's own. */
    public B chatTemplate(ChatTemplate template) { settings.chatTemplate = template; return self(); }

    /** Defaults for every request; the builder's own fields override them, and a request's parameters both. */
    public B defaultRequestParameters(ChatRequestParameters parameters) { settings.defaultRequestParameters = parameters; return self(); }

    public B temperature(Double temperature) { settings.temperature = temperature; return self(); }

    public B topP(Double topP) { settings.topP = topP; return self(); }

    public B topK(Integer topK) { settings.topK = topK; return self(); }

    public B presencePenalty(Double penalty) { settings.presencePenalty = penalty; return self(); }

    /** Only 0 (or null) is accepted: Kiln has no frequency penalty. */
    public B frequencyPenalty(Double penalty) { settings.frequencyPenalty = penalty; return self(); }

    /** The most tokens a reply may have ({@code maxOutputTokens}). */
    public B maxTokens(Integer maxTokens) { settings.maxTokens = maxTokens; return self(); }

    /** {@link #maxTokens(Integer)}, by LangChain4j's parameter name. */
    public B maxOutputTokens(Integer maxTokens) { settings.maxTokens = maxTokens; return self(); }

    public B stopSequences(List<String> stop) { settings.stopSequences = stop; return self(); }

    /** The random draw's seed for every request (same seed, options and model: same reply); default a fresh seed per request. */
    public B seed(Long seed) { settings.seed = seed; return self(); }

    /** Kiln's min-p filter for every request; default 0 (off). */
    public B minP(Double minP) { settings.minP = minP; return self(); }

    /** Kiln's repetition penalty (CTRL's) for every request; default 1 (off). */
    public B repetitionPenalty(Double penalty) { settings.repetitionPenalty = penalty; return self(); }
}

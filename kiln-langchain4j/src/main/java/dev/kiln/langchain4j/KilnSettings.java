package dev.kiln.langchain4j;

import dev.kiln.llm.LanguageModel;
import dev.kiln.llm.ModelOptions;
import dev.kiln.llm.chat.ChatTemplate;
import dev.kiln.llm.chat.ChatTemplateException;
import dev.kiln.llm.generate.SamplingOptions;
import dev.langchain4j.model.chat.request.ChatRequestParameters;
import dev.langchain4j.model.chat.request.DefaultChatRequestParameters;

import java.nio.file.Path;
import java.util.List;

/** The state the two builders share, and what makes a {@link KilnEngine} of it. */
final class KilnSettings {
    LanguageModel model;
    Path modelPath;
    ModelOptions modelOptions = ModelOptions.defaults();
    String modelName;
    ChatTemplate chatTemplate;
    ChatRequestParameters defaultRequestParameters;
    Double temperature, topP, presencePenalty, frequencyPenalty;
    Integer topK, maxTokens;
    List<String> stopSequences;
    Long seed;
    Double minP, repetitionPenalty;

    KilnEngine build(String what) {
        if (model != null && modelPath != null) {
            throw new IllegalStateException(what + ": give model(LanguageModel) or modelPath(Path), not both");
        }
        if (model == null && modelPath == null) throw new IllegalStateException(what + ": give model(LanguageModel) or modelPath(Path)");
        String name = modelName != null ? modelName : modelPath != null ? stem(modelPath) : "kiln";
        if (name.isBlank()) throw new IllegalArgumentException(what + ": modelName must not be empty");
        SamplingOptions sampling = SamplingOptions.defaults();
        // Kiln's own sampling options (LangChain4j's parameters have no place for them): every request takes them
        try {
            if (minP != null) sampling = sampling.withMinP(minP);
            if (repetitionPenalty != null) sampling = sampling.withRepetitionPenalty(repetitionPenalty);
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException(what + ": " + e.getMessage(), e);
        }
        if (seed != null) sampling = sampling.withSeed(seed);
        DefaultChatRequestParameters.Builder<?> p = DefaultChatRequestParameters.builder();
        if (defaultRequestParameters != null) p.overrideWith(defaultRequestParameters);
        p.modelName(name);
        if (temperature != null) p.temperature(temperature);
        if (topP != null) p.topP(topP);
        if (topK != null) p.topK(topK);
        if (presencePenalty != null) p.presencePenalty(presencePenalty);
        if (frequencyPenalty != null) p.frequencyPenalty(frequencyPenalty);
        if (maxTokens != null) p.maxOutputTokens(maxTokens);
        if (stopSequences != null) p.stopSequences(stopSequences);
        ChatRequestParameters defaults = p.build();

        boolean owned = model == null;
        LanguageModel m = owned ? LanguageModel.open(modelPath, modelOptions) : model;
        try {
            ChatTemplate t = chatTemplate;
            if (t == null) {
                try {
                    t = m.chatTemplate();
                } catch (ChatTemplateException e) {
                    throw new IllegalArgumentException(what + ": " + (e.kind() == ChatTemplateException.Kind.MISSING
                            ? "the model has no chat template (tokenizer.chat_template in a GGUF file, chat_template in tokenizer_config.json),"
                            + " so chat messages cannot be formatted for it; give one with chatTemplate(ChatTemplate), e.g."
                            + " ChatTemplate.forTokenizer(model.tokenizer(), true) for ChatML, or use LanguageModel.generate with a prompt"
                            : "the model's chat template cannot be used: " + e.getMessage()), e);
                }
            }
            return new KilnEngine(m, owned, t, name, defaults, sampling);
        } catch (RuntimeException | Error e) {
            if (owned) m.close();
            throw e;
        }
    }

    /** The file name without its extension: {@code model.gguf} is {@code model}; a folder's own name. */
    private static String stem(Path p) {
        Path f = p.toAbsolutePath().normalize().getFileName();
        String s = f == null ? "kiln" : f.toString();
        int dot = s.lastIndexOf('.');
        return dot > 0 ? s.substring(0, dot) : s;
    }
}

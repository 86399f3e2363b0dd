package dev.kiln.langchain4j;

import dev.kiln.llm.LanguageModel;
import dev.kiln.llm.generate.GeneratedToken;
import dev.kiln.llm.generate.TokenStream;
import dev.langchain4j.model.chat.StreamingChatModel;
import dev.langchain4j.model.chat.request.ChatRequest;
import dev.langchain4j.model.chat.request.ChatRequestParameters;
import dev.langchain4j.model.chat.response.ChatResponse;
import dev.langchain4j.model.chat.response.PartialResponse;
import dev.langchain4j.model.chat.response.PartialResponseContext;
import dev.langchain4j.model.chat.response.StreamingChatResponseHandler;
import dev.langchain4j.model.chat.response.StreamingHandle;

import java.nio.file.Path;
import java.util.Objects;
import java.util.concurrent.Executor;

/**
 * LangChain4j's {@link StreamingChatModel} backed by a Kiln {@link LanguageModel} in this process: the reply's text
 * goes to {@code onPartialResponse} as it is generated, then the whole reply to {@code onCompleteResponse}.
 *
 * <p>Requests, parameters, refusals and responses are those of {@link KilnChatModel}: the same request gives the
 * same reply, whose partial responses concatenate to the complete one. A request is checked on the caller's thread;
 * a refusal goes to {@code onError} before {@code chat} returns, and nothing runs. The generation then runs on the
 * builder's {@link Builder#executor(Executor) executor} (default: a new virtual thread per request), which calls the
 * handler; an exception from the generation, or from the handler's {@code onPartialResponse}, ends it and goes to
 * {@code onError}. A handler may stop a generation through the {@link StreamingHandle} of the partial response's
 * context: nothing more is called then.
 *
 * <p>One instance may serve many threads at once, each request on its own decoder. A model built from a path is
 * owned and closed by {@link #close()}.
 */
public final class KilnStreamingChatModel implements StreamingChatModel, AutoCloseable {
    private static final Executor VIRTUAL_THREAD = r -> Thread.ofVirtual().name("kiln-langchain4j").start(r);

    private final KilnEngine engine;
    private final Executor executor;

    private KilnStreamingChatModel(KilnEngine engine, Executor executor) {
        this.engine = engine;
        this.executor = executor;
    }

    public static Builder builder() { return new Builder(); }

    @Override
    public void doChat(ChatRequest request, StreamingChatResponseHandler handler) {
        Objects.requireNonNull(handler, "handler");
        KilnEngine.Prepared p;
        try {
            p = engine.prepare(request);
        } catch (RuntimeException e) {
            handler.onError(e);
            return;
        }
        try {
            executor.execute(() -> generate(p, handler));
        } catch (RuntimeException e) {
            handler.onError(e);
        }
    }

    private void generate(KilnEngine.Prepared p, StreamingChatResponseHandler handler) {
        Handle handle = new Handle();
        PartialResponseContext context = new PartialResponseContext(handle);
        ChatResponse response;
        try (TokenStream s = engine.stream(p)) {
            while (s.hasNext()) {
                if (handle.cancelled) return;
                GeneratedToken t = s.next();
                if (!t.text().isEmpty()) handler.onPartialResponse(new PartialResponse(t.text()), context);
            }
            if (handle.cancelled) return;
            response = engine.response(s.result());
        } catch (RuntimeException | Error e) {
            handler.onError(e);
            return;
        }
        handler.onCompleteResponse(response);
    }

    /** Stops a generation at its next step. */
    private static final class Handle implements StreamingHandle {
        volatile boolean cancelled;

        @Override public void cancel() { cancelled = true; }

        @Override public boolean isCancelled() { return cancelled; }
    }

    @Override
    public ChatRequestParameters defaultRequestParameters() { return engine.defaults; }

    /** The name responses carry, and requests may give. */
    public String modelName() { return engine.modelName; }

    /** The Kiln model this chat model generates with. */
    public LanguageModel model() { return engine.model; }

    /** Closes the model if this chat model opened it (built with {@link Builder#modelPath(Path)}); else does nothing. */
    @Override
    public void close() { engine.close(); }

    @Override
    public String toString() { return "KilnStreamingChatModel[" + engine.modelName + ", " + engine.model + "]"; }

    /** Builds a {@link KilnStreamingChatModel}, in LangChain4j's style; the fields are {@link KilnChatModel.Builder}'s. */
    public static final class Builder extends KilnModelBuilder<Builder> {
        private Executor executor = VIRTUAL_THREAD;

        private Builder() {}

        /** Where generations run and call the handler; default a new virtual thread per request ({@code Runnable::run}: the caller's). */
        public Builder executor(Executor executor) { this.executor = Objects.requireNonNull(executor, "executor"); return this; }

        /** The streaming chat model; refusals as {@link KilnChatModel.Builder#build()}'s. */
        public KilnStreamingChatModel build() { return new KilnStreamingChatModel(settings.build("KilnStreamingChatModel"), executor); }
    }
}

package dev.kiln.llm.server;

import dev.langchain4j.data.message.SystemMessage;
import dev.langchain4j.data.message.UserMessage;
import dev.langchain4j.exception.HttpException;
import dev.langchain4j.model.chat.request.ChatRequest;
import dev.langchain4j.model.chat.response.ChatResponse;
import dev.langchain4j.model.chat.response.StreamingChatResponseHandler;
import dev.langchain4j.model.openai.OpenAiChatModel;
import dev.langchain4j.model.openai.OpenAiStreamingChatModel;
import dev.langchain4j.model.output.FinishReason;
import dev.kiln.llm.generate.GenerationOptions;
import dev.kiln.llm.generate.GenerationResult;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import static dev.kiln.llm.server.ServerFixture.NAME;
import static dev.kiln.llm.server.ServerFixture.expectedChat;
import static dev.kiln.llm.server.ServerFixture.model;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** LangChain4j's own OpenAI clients against {@link KilnServer} (with an API key, as they send it). */
class ServerLangChain4jTest {
    static final String KEY = "test-key";
    static KilnServer server;

    @BeforeAll
    static void start() { server = KilnServer.start(model(), ServerFixture.options().withApiKey(KEY)); }

    @AfterAll
    static void stop() { server.close(); }

    static String baseUrl() { return server.url() + "/v1"; }

    static ChatRequest request(String user) {
        return ChatRequest.builder().messages(SystemMessage.from("Be brief."), UserMessage.from(user)).build();
    }

    @Test
    void openAiChatModelGetsTheGreedyReplyWithUsageAndFinishReason() {
        GenerationResult want = expectedChat("Hello there", GenerationOptions.greedy().withMaxTokens(20));
        assertThat(want.text()).as("the model writes something").isNotEmpty();
        OpenAiChatModel chat = OpenAiChatModel.builder().baseUrl(baseUrl()).apiKey(KEY).modelName(NAME).temperature(0.0).maxTokens(20)
                .timeout(Duration.ofSeconds(60)).build();
        ChatResponse r = chat.chat(request("Hello there"));
        assertThat(r.aiMessage().text()).isEqualTo(want.text());
        assertThat(r.finishReason()).isEqualTo(want.finish().openAiName().equals("stop") ? FinishReason.STOP : FinishReason.LENGTH);
        assertThat(r.tokenUsage().inputTokenCount()).isEqualTo(want.stats().promptTokens());
        assertThat(r.tokenUsage().outputTokenCount()).isEqualTo(want.tokens().length);
        assertThat(r.modelName()).isEqualTo(NAME);
        assertThat(r.id()).startsWith("chatcmpl-");
    }

    @Test
    void openAiStreamingChatModelStreamsTheSameReply() throws Exception {
        GenerationResult want = expectedChat("Tell me a story", GenerationOptions.greedy().withMaxTokens(24));
        assertThat(want.text()).as("the model writes something").isNotEmpty();
        OpenAiStreamingChatModel chat = OpenAiStreamingChatModel.builder().baseUrl(baseUrl()).apiKey(KEY).modelName(NAME).temperature(0.0)
                .maxTokens(24).timeout(Duration.ofSeconds(60)).build();
        StringBuilder partials = new StringBuilder();
        CompletableFuture<ChatResponse> done = new CompletableFuture<>();
        chat.chat(request("Tell me a story"), new StreamingChatResponseHandler() {
            @Override
            public void onPartialResponse(String partial) { partials.append(partial); }

            @Override
            public void onCompleteResponse(ChatResponse response) { done.complete(response); }

            @Override
            public void onError(Throwable error) { done.completeExceptionally(error); }
        });
        ChatResponse r = done.get(60, TimeUnit.SECONDS);
        assertThat(partials.toString()).isEqualTo(want.text());
        assertThat(r.aiMessage().text()).isEqualTo(want.text());
        assertThat(r.finishReason()).isEqualTo(want.finish().openAiName().equals("stop") ? FinishReason.STOP : FinishReason.LENGTH);
        assertThat(r.tokenUsage().outputTokenCount()).isEqualTo(want.tokens().length);
    }

    @Test
    void aWrongKeyIsTheClientsAuthenticationError() {
        OpenAiChatModel chat = OpenAiChatModel.builder().baseUrl(baseUrl()).apiKey("wrong").modelName(NAME).maxRetries(0).build();
        assertThatThrownBy(() -> chat.chat("Hi")).hasMessageContaining("Incorrect API key provided.");
    }

    @Test
    void anUnsupportedParameterIsTheClientsError() {
        OpenAiChatModel chat = OpenAiChatModel.builder().baseUrl(baseUrl()).apiKey(KEY).modelName(NAME).frequencyPenalty(0.5).maxRetries(0).build();
        assertThatThrownBy(() -> chat.chat("Hi")).hasMessageContaining("'frequency_penalty' is not supported");
        OpenAiChatModel other = OpenAiChatModel.builder().baseUrl(baseUrl()).apiKey(KEY).modelName("gpt-4o").maxRetries(0).build();
        assertThatThrownBy(() -> other.chat("Hi")).hasMessageContaining("The model 'gpt-4o' does not exist");
    }
}

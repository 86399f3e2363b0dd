package dev.kiln.langchain4j;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.kiln.llm.LanguageModel;
import dev.kiln.llm.ModelOptions;
import dev.kiln.llm.chat.ChatTemplate;
import dev.kiln.llm.generate.FinishReason;
import dev.kiln.llm.generate.GenerationOptions;
import dev.kiln.llm.generate.GenerationResult;
import dev.langchain4j.agent.tool.ToolSpecification;
import dev.langchain4j.data.message.AiMessage;
import dev.langchain4j.data.message.ImageContent;
import dev.langchain4j.data.message.SystemMessage;
import dev.langchain4j.data.message.TextContent;
import dev.langchain4j.data.message.ToolExecutionResultMessage;
import dev.langchain4j.data.message.UserMessage;
import dev.langchain4j.exception.InvalidRequestException;
import dev.langchain4j.exception.ModelNotFoundException;
import dev.langchain4j.exception.UnsupportedFeatureException;
import dev.langchain4j.model.chat.request.ChatRequest;
import dev.langchain4j.model.chat.request.ResponseFormat;
import dev.langchain4j.model.chat.response.ChatResponse;
import dev.langchain4j.model.chat.response.PartialResponse;
import dev.langchain4j.model.chat.response.PartialResponseContext;
import dev.langchain4j.model.chat.response.StreamingChatResponseHandler;
import dev.langchain4j.service.AiServices;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** {@link KilnChatModel} and {@link KilnStreamingChatModel} through LangChain4j's API, on kiln-llm's tiny random-weight Llama 3 GGUF. */
class KilnChatModelTest {
    static final String SYSTEM = "Be brief.";
    static LanguageModel model;
    static KilnChatModel chat;
    static KilnStreamingChatModel streaming;

    static Path llm() { return Path.of(System.getProperty("kiln.test.llm", "../kiln-llm/src/test/resources/llm")); }

    @BeforeAll
    static void open() {
        model = LanguageModel.open(llm().resolve("llama/llama-f32.gguf"), ModelOptions.defaults().withContextLength(64));
        chat = KilnChatModel.builder().model(model).modelName("tiny-llama").temperature(0.0).build();
        streaming = KilnStreamingChatModel.builder().model(model).modelName("tiny-llama").temperature(0.0).build();
    }

    @AfterAll
    static void close() {
        chat.close();
        streaming.close();
        model.close();
    }

    static ChatRequest request(String user, int maxTokens) {
        return ChatRequest.builder().messages(SystemMessage.from(SYSTEM), UserMessage.from(user)).maxOutputTokens(maxTokens).build();
    }

    static GenerationResult expected(String user, GenerationOptions o) {
        return model.chat(List.of(dev.kiln.llm.chat.ChatMessage.system(SYSTEM), dev.kiln.llm.chat.ChatMessage.user(user)), o, t -> {});
    }

    static ChatResponse stream(KilnStreamingChatModel m, ChatRequest r, StringBuilder partials) throws Exception {
        CompletableFuture<ChatResponse> done = new CompletableFuture<>();
        m.chat(r, new StreamingChatResponseHandler() {
            @Override public void onPartialResponse(String partial) { partials.append(partial); }

            @Override public void onCompleteResponse(ChatResponse response) { done.complete(response); }

            @Override public void onError(Throwable error) { done.completeExceptionally(error); }
        });
        return done.get(60, TimeUnit.SECONDS);
    }

    @Test
    void greedyChatIsLanguageModelChatWithTheSameOptions() {
        GenerationResult want = expected("Hello there", GenerationOptions.greedy().withMaxTokens(20));
        assertThat(want.text()).as("the model writes something").isNotEmpty();
        ChatResponse r = chat.chat(request("Hello there", 20));
        assertThat(r.aiMessage().text()).isEqualTo(want.text());
        assertThat(r.aiMessage().hasToolExecutionRequests()).isFalse();
        assertThat(r.finishReason()).isEqualTo(want.finish().openAiName().equals("stop")
                ? dev.langchain4j.model.output.FinishReason.STOP : dev.langchain4j.model.output.FinishReason.LENGTH);
        assertThat(r.modelName()).isEqualTo("tiny-llama");
        assertThat(r.metadata().modelName()).isEqualTo("tiny-llama");
    }

    @Test
    void usageCountsThePromptAndTheGeneratedTokens() {
        GenerationResult want = expected("Count me", GenerationOptions.greedy().withMaxTokens(12));
        int prompt = model.encodeChat(model.chatTemplate(),
                List.of(dev.kiln.llm.chat.ChatMessage.system(SYSTEM), dev.kiln.llm.chat.ChatMessage.user("Count me"))).length;
        ChatResponse r = chat.chat(request("Count me", 12));
        assertThat(r.tokenUsage().inputTokenCount()).isEqualTo(prompt).isEqualTo(want.stats().promptTokens());
        assertThat(r.tokenUsage().outputTokenCount()).isEqualTo(want.tokens().length).isBetween(1, 12);
        assertThat(r.tokenUsage().totalTokenCount()).isEqualTo(prompt + want.tokens().length);
    }

    @Test
    void streamingPartialsMakeTheCompleteResponseAndEqualTheWholeOne() throws Exception {
        ChatResponse whole = chat.chat(request("Tell me a story", 24));
        assertThat(whole.aiMessage().text()).isNotEmpty();
        StringBuilder partials = new StringBuilder();
        ChatResponse r = stream(streaming, request("Tell me a story", 24), partials);
        assertThat(partials.toString()).isEqualTo(r.aiMessage().text()).isEqualTo(whole.aiMessage().text());
        assertThat(r.finishReason()).isEqualTo(whole.finishReason());
        assertThat(r.tokenUsage()).isEqualTo(whole.tokenUsage());
        assertThat(r.modelName()).isEqualTo("tiny-llama");
    }

    @Test
    void maxOutputTokensEndsWithLength() throws Exception {
        GenerationResult want = expected("Go on", GenerationOptions.greedy().withMaxTokens(3));
        assertThat(want.finish()).as("three random-weight tokens hold no end token").isEqualTo(FinishReason.MAX_TOKENS);
        ChatResponse r = chat.chat(request("Go on", 3));
        assertThat(r.finishReason()).isEqualTo(dev.langchain4j.model.output.FinishReason.LENGTH);
        assertThat(r.tokenUsage().outputTokenCount()).isEqualTo(3);
        assertThat(r.aiMessage().text()).isEqualTo(want.text());
        ChatResponse s = stream(streaming, request("Go on", 3), new StringBuilder());
        assertThat(s.finishReason()).isEqualTo(dev.langchain4j.model.output.FinishReason.LENGTH);
    }

    @Test
    void aStopSequenceEndsTheReplyBeforeIt() throws Exception {
        String full = chat.chat(request("Say something", 24)).aiMessage().text();
        assertThat(full.strip().length()).as("enough text to cut: %s", full).isGreaterThan(4);
        String stop = full.strip().substring(2, 4);
        String cut = full.substring(0, full.indexOf(stop));
        ChatRequest r = ChatRequest.builder().messages(SystemMessage.from(SYSTEM), UserMessage.from("Say something")).maxOutputTokens(24)
                .stopSequences(List.of(stop)).build();
        ChatResponse got = chat.chat(r);
        assertThat(got.aiMessage().text()).isEqualTo(cut)
                .isEqualTo(expected("Say something", GenerationOptions.greedy().withMaxTokens(24).withStop(stop)).text());
        assertThat(got.finishReason()).isEqualTo(dev.langchain4j.model.output.FinishReason.STOP);
        StringBuilder partials = new StringBuilder();
        ChatResponse streamed = stream(streaming, r, partials);
        assertThat(partials.toString()).isEqualTo(streamed.aiMessage().text()).isEqualTo(cut);
        // the builder's stop sequences are every request's default
        try (KilnChatModel stopping = KilnChatModel.builder().model(model).temperature(0.0).stopSequences(List.of(stop)).build()) {
            assertThat(stopping.chat(request("Say something", 24)).aiMessage().text()).isEqualTo(cut);
        }
    }

    @Test
    void aConversationWithAnAssistantTurnIsRenderedByTheTemplate() {
        // no system message: the 64-token context holds the template's own
        List<dev.kiln.llm.chat.ChatMessage> kiln = List.of(dev.kiln.llm.chat.ChatMessage.user("Hi"), dev.kiln.llm.chat.ChatMessage.assistant("Yo"),
                dev.kiln.llm.chat.ChatMessage.user("And now?"));
        GenerationResult want = model.chat(kiln, GenerationOptions.greedy().withMaxTokens(4), t -> {});
        ChatResponse r = chat.chat(ChatRequest.builder().messages(UserMessage.from("Hi"), AiMessage.from("Yo"),
                UserMessage.from(TextContent.from("And "), TextContent.from("now?"))).maxOutputTokens(4).build());
        assertThat(r.aiMessage().text()).isEqualTo(want.text());
        assertThat(r.tokenUsage().inputTokenCount()).isEqualTo(want.stats().promptTokens());
    }

    @Test
    void fourConcurrentCallsOnOneModelGetTheirOwnReplies() throws Exception {
        List<String> users = List.of("one", "two two", "three three three", "four");
        List<String> want = new ArrayList<>();
        for (String u : users) want.add(expected(u, GenerationOptions.greedy().withMaxTokens(16)).text());
        ExecutorService pool = Executors.newFixedThreadPool(4);
        try {
            for (int round = 0; round < 2; round++) {
                List<Future<String>> got = new ArrayList<>();
                for (int i = 0; i < 4; i++) {
                    String u = users.get(i);
                    got.add(i % 2 == 0 ? pool.submit(() -> chat.chat(request(u, 16)).aiMessage().text())
                            : pool.submit(() -> stream(streaming, request(u, 16), new StringBuilder()).aiMessage().text()));
                }
                for (int i = 0; i < 4; i++) assertThat(got.get(i).get(120, TimeUnit.SECONDS)).as(users.get(i)).isEqualTo(want.get(i));
            }
        } finally {
            pool.shutdownNow();
        }
    }

    @Test
    void seededSamplingRepeats() {
        try (KilnChatModel sampled = KilnChatModel.builder().model(model).temperature(1.0).topK(40).topP(0.9).seed(7L).build()) {
            String a = sampled.chat(request("Roll", 10)).aiMessage().text();
            assertThat(sampled.chat(request("Roll", 10)).aiMessage().text()).isEqualTo(a);
            GenerationOptions o = GenerationOptions.defaults().withMaxTokens(10)
                    .withSampling(dev.kiln.llm.generate.SamplingOptions.defaults().withTopK(40).withTopP(0.9).withSeed(7));
            assertThat(a).isEqualTo(expected("Roll", o).text());
        }
    }

    @Test
    void toolSpecificationsAreRefused() {
        ToolSpecification tool = ToolSpecification.builder().name("weather").description("The weather").build();
        ChatRequest r = ChatRequest.builder().messages(UserMessage.from("Weather?")).toolSpecifications(tool).build();
        assertThatThrownBy(() -> chat.chat(r)).isInstanceOf(UnsupportedFeatureException.class).hasMessageContaining("tool specifications");
        CompletableFuture<ChatResponse> done = new CompletableFuture<>();
        streaming.chat(r, new StreamingChatResponseHandler() {
            @Override public void onCompleteResponse(ChatResponse response) { done.complete(response); }

            @Override public void onError(Throwable error) { done.completeExceptionally(error); }
        });
        assertThat(done).as("refused through onError before chat returns").isCompletedExceptionally();
        assertThatThrownBy(done::join).hasCauseInstanceOf(UnsupportedFeatureException.class);
    }

    @Test
    void imageContentAndToolMessagesAreRefused() {
        ChatRequest image = ChatRequest.builder().messages(UserMessage.from(TextContent.from("What is this?"), ImageContent.from("https://example.com/a.png")))
                .build();
        assertThatThrownBy(() -> chat.chat(image)).isInstanceOf(UnsupportedFeatureException.class).hasMessageContaining("messages[0]")
                .hasMessageContaining("IMAGE");
        ChatRequest tool = ChatRequest.builder().messages(UserMessage.from("Hi"), ToolExecutionResultMessage.from("id", "weather", "sunny")).build();
        assertThatThrownBy(() -> chat.chat(tool)).isInstanceOf(UnsupportedFeatureException.class).hasMessageContaining("TOOL_EXECUTION_RESULT");
        ChatRequest named = ChatRequest.builder().messages(UserMessage.from("Ann", "Hi")).build();
        assertThatThrownBy(() -> chat.chat(named)).isInstanceOf(UnsupportedFeatureException.class).hasMessageContaining("participant names");
    }

    @Test
    void whatKilnCannotHonourIsRefusedAndBadValuesAreInvalid() {
        assertThatThrownBy(() -> chat.chat(ChatRequest.builder().messages(UserMessage.from("Hi")).responseFormat(ResponseFormat.JSON).build()))
                .isInstanceOf(UnsupportedFeatureException.class).hasMessageContaining("responseFormat JSON");
        assertThatThrownBy(() -> chat.chat(ChatRequest.builder().messages(UserMessage.from("Hi")).frequencyPenalty(0.5).build()))
                .isInstanceOf(UnsupportedFeatureException.class).hasMessageContaining("frequencyPenalty");
        assertThat(chat.chat(ChatRequest.builder().messages(UserMessage.from("Hi")).frequencyPenalty(0.0).maxOutputTokens(2).build()).aiMessage().text())
                .as("a zero frequency penalty changes nothing, so it is accepted").isNotNull();
        assertThatThrownBy(() -> chat.chat(ChatRequest.builder().messages(UserMessage.from("Hi")).temperature(3.0).build()))
                .isInstanceOf(InvalidRequestException.class).hasMessageContaining("temperature");
        assertThatThrownBy(() -> chat.chat(ChatRequest.builder().messages(UserMessage.from("Hi")).topP(0.0).build()))
                .isInstanceOf(InvalidRequestException.class).hasMessageContaining("topP");
        assertThatThrownBy(() -> chat.chat(ChatRequest.builder().messages(UserMessage.from("Hi")).modelName("gpt-4o").build()))
                .isInstanceOf(ModelNotFoundException.class).hasMessageContaining("gpt-4o");
        assertThatThrownBy(() -> chat.chat(ChatRequest.builder().messages(UserMessage.from("Hi")).maxOutputTokens(1000).build()))
                .isInstanceOf(InvalidRequestException.class).hasMessageContaining("maximum context length is 64");
        assertThatThrownBy(() -> KilnChatModel.builder().model(model).frequencyPenalty(1.0).build())
                .as("a default that every request would refuse fails the build").isInstanceOf(UnsupportedFeatureException.class);
    }

    @Test
    void aModelWithoutAChatTemplateIsRefusedUnlessOneIsGiven(@TempDir Path tmp) throws IOException {
        Path hf = llm().resolve("llama/hf");
        for (String f : List.of("config.json", "tokenizer.json", "model.safetensors")) Files.copy(hf.resolve(f), tmp.resolve(f));
        ObjectMapper json = new ObjectMapper();
        ObjectNode config = (ObjectNode) json.readTree(hf.resolve("tokenizer_config.json").toFile());
        config.remove("chat_template");
        Files.writeString(tmp.resolve("tokenizer_config.json"), config.toString());
        try (LanguageModel bare = LanguageModel.open(tmp, ModelOptions.defaults().withContextLength(64))) {
            assertThatThrownBy(() -> KilnChatModel.builder().model(bare).build()).isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("has no chat template").hasMessageContaining("chatTemplate(ChatTemplate)");
            assertThatThrownBy(() -> KilnStreamingChatModel.builder().model(bare).build()).isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("has no chat template");
            try (KilnChatModel chatMl = KilnChatModel.builder().model(bare).chatTemplate(ChatTemplate.forTokenizer(bare.tokenizer(), true))
                    .temperature(0.0).maxTokens(4).build()) {
                ChatResponse r = chatMl.chat(ChatRequest.builder().messages(UserMessage.from("Hi")).build());
                assertThat(r.tokenUsage().outputTokenCount()).isBetween(1, 4);
            }
        }
    }

    @Test
    void builtFromAPathItOpensOwnsAndNamesTheModel() {
        Path gguf = llm().resolve("llama/llama-f32.gguf");
        try (KilnChatModel own = KilnChatModel.builder().modelPath(gguf).modelOptions(ModelOptions.defaults().withContextLength(64)).temperature(0.0)
                .maxOutputTokens(20).build()) {
            assertThat(own.modelName()).isEqualTo("llama-f32");
            assertThat(own.model()).isNotSameAs(model);
            ChatResponse r = own.chat(request("Hello there", 20));
            assertThat(r.aiMessage().text()).isEqualTo(expected("Hello there", GenerationOptions.greedy().withMaxTokens(20)).text());
            assertThat(r.modelName()).isEqualTo("llama-f32");
        }
        assertThatThrownBy(() -> KilnChatModel.builder().build()).isInstanceOf(IllegalStateException.class);
        assertThatThrownBy(() -> KilnChatModel.builder().model(model).modelPath(gguf).build()).isInstanceOf(IllegalStateException.class);
    }

    @Test
    void aHandlerMayCancelTheStream() {
        KilnStreamingChatModel sync = KilnStreamingChatModel.builder().model(model).temperature(0.0).executor(Runnable::run).build();
        List<String> calls = new ArrayList<>();
        sync.chat(request("Tell me a story", 24), new StreamingChatResponseHandler() {
            @Override
            public void onPartialResponse(PartialResponse partial, PartialResponseContext context) {
                calls.add("partial");
                context.streamingHandle().cancel();
            }

            @Override public void onCompleteResponse(ChatResponse response) { calls.add("complete"); }

            @Override public void onError(Throwable error) { calls.add("error " + error); }
        });
        assertThat(calls).containsExactly("partial");
    }

    /** An AI service of LangChain4j's, as an application would declare one. */
    interface Assistant {
        @dev.langchain4j.service.SystemMessage(SYSTEM)
        String chat(String message);
    }

    @Test
    void anAiServiceAnswersThroughIt() {
        try (KilnChatModel m = KilnChatModel.builder().model(model).temperature(0.0).maxTokens(16).build()) {
            Assistant assistant = AiServices.create(Assistant.class, m);
            assertThat(assistant.chat("Hello there")).isEqualTo(expected("Hello there", GenerationOptions.greedy().withMaxTokens(16)).text());
        }
    }
}

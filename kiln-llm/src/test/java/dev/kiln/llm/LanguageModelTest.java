package dev.kiln.llm;

import dev.kiln.llm.generate.ContextOverflowException;
import dev.kiln.llm.generate.Decoder;
import dev.kiln.llm.generate.FinishReason;
import dev.kiln.llm.generate.GeneratedToken;
import dev.kiln.llm.generate.GenerationOptions;
import dev.kiln.llm.generate.GenerationResult;
import dev.kiln.llm.generate.SamplingOptions;
import dev.kiln.llm.generate.TokenStream;
import dev.kiln.llm.model.LlmFixtures;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Flow;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** Generation through the facade on the tiny Llama 3: sampling with a seed, streaming three ways, limits, the context. */
class LanguageModelTest {
    private static final LanguageModel MODEL = LlmFixtures.open(LlmFixtures.CASES.getFirst());
    private static final String PROMPT = "This License applies to";
    private static final GenerationOptions SAMPLED = GenerationOptions.defaults().withMaxTokens(24).withIgnoreEos(true)
            .withSampling(SamplingOptions.defaults().withTemperature(0.9).withTopK(40).withTopP(0.95).withMinP(0.02).withRepetitionPenalty(1.1)
                    .withPresencePenalty(0.2).withSeed(7));

    @Test
    void theSameSeedGivesTheSameTextAndAnotherSeedAnother() {
        GenerationResult a = MODEL.generate(PROMPT, SAMPLED), b = MODEL.generate(PROMPT, SAMPLED);
        GenerationResult c = MODEL.generate(PROMPT, SAMPLED.withSampling(SAMPLED.sampling().withSeed(8)));
        assertThat(a.tokens()).hasSize(24).containsExactly(b.tokens());
        assertThat(a.text()).isEqualTo(b.text());
        assertThat(a.tokens()).isNotEqualTo(c.tokens());
        assertThat(a.finish()).isEqualTo(FinishReason.MAX_TOKENS);
        // sampled, not greedy: the greedy continuation is another sequence
        assertThat(a.tokens()).isNotEqualTo(MODEL.generate(PROMPT, GenerationOptions.greedy().withMaxTokens(24).withIgnoreEos(true)).tokens());
    }

    @Test
    void theCallbackTheIteratorAndThePublisherStreamTheSameSteps() throws Exception {
        List<GeneratedToken> callback = new ArrayList<>();
        GenerationResult r = MODEL.generate(PROMPT, SAMPLED, callback::add);
        List<GeneratedToken> iterated = new ArrayList<>();
        try (TokenStream s = MODEL.stream(PROMPT, SAMPLED)) {
            s.forEachRemaining(iterated::add);
            assertThat(s.result().tokens()).containsExactly(r.tokens());
        }
        assertThat(iterated).isEqualTo(callback);
        assertThat(callback).hasSize(24);
        assertThat(callback.getLast().finish()).isEqualTo(FinishReason.MAX_TOKENS);
        assertThat(String.join("", callback.stream().map(GeneratedToken::text).toList())).isEqualTo(r.text());

        List<GeneratedToken> published = new ArrayList<>();
        CompletableFuture<Void> done = new CompletableFuture<>();
        MODEL.publisher(PROMPT, SAMPLED).subscribe(new Flow.Subscriber<>() {
            Flow.Subscription sub;
            @Override public void onSubscribe(Flow.Subscription s) { sub = s; s.request(1); }
            @Override public void onNext(GeneratedToken t) { published.add(t); sub.request(1); }
            @Override public void onError(Throwable e) { done.completeExceptionally(e); }
            @Override public void onComplete() { done.complete(null); }
        });
        done.get(60, TimeUnit.SECONDS);
        assertThat(published).isEqualTo(callback);
    }

    @Test
    void thePublisherWaitsForDemandAndStopsWhenCancelled() throws Exception {
        List<GeneratedToken> got = new ArrayList<>();
        CountDownLatch three = new CountDownLatch(3);
        CompletableFuture<String> end = new CompletableFuture<>();
        Flow.Subscription[] sub = new Flow.Subscription[1];
        MODEL.publisher(PROMPT, SAMPLED).subscribe(new Flow.Subscriber<>() {
            @Override public void onSubscribe(Flow.Subscription s) { sub[0] = s; s.request(3); }
            @Override public synchronized void onNext(GeneratedToken t) { got.add(t); three.countDown(); }
            @Override public void onError(Throwable e) { end.complete("error " + e); }
            @Override public void onComplete() { end.complete("complete"); }
        });
        assertThat(three.await(60, TimeUnit.SECONDS)).isTrue();
        Thread.sleep(300);
        synchronized (got) {
            assertThat(got).as("no more than requested").hasSize(3);
        }
        sub[0].cancel();
        Thread.sleep(300);
        assertThat(end).isNotDone(); // a cancelled subscription gets no terminal signal
        assertThat(got).hasSize(3);
        // its decoder went back to the model: a new generation still runs
        assertThat(MODEL.generate(PROMPT, SAMPLED.withMaxTokens(2)).tokens()).hasSize(2);

        CompletableFuture<String> bad = new CompletableFuture<>();
        MODEL.publisher(PROMPT, SAMPLED).subscribe(new Flow.Subscriber<>() {
            @Override public void onSubscribe(Flow.Subscription s) { s.request(0); }
            @Override public void onNext(GeneratedToken t) { bad.complete("next"); }
            @Override public void onError(Throwable e) { bad.complete(e.getMessage()); }
            @Override public void onComplete() { bad.complete("complete"); }
        });
        assertThat(bad.get(60, TimeUnit.SECONDS)).contains("3.9");
    }

    @Test
    void stopStringsEndTheTextOfARealGeneration() {
        GenerationOptions greedy = GenerationOptions.greedy().withMaxTokens(32).withIgnoreEos(true);
        String full = MODEL.generate(PROMPT, greedy).text();
        String stop = full.substring(full.length() / 2, full.length() / 2 + 3);
        GenerationResult r = MODEL.generate(PROMPT, greedy.withStop(stop));
        assertThat(r.finish()).isEqualTo(FinishReason.STOP_STRING);
        assertThat(r.text()).isEqualTo(full.substring(0, full.indexOf(stop)));
    }

    @Test
    void statsReportPrefillAndDecodeSpeeds() {
        GenerationResult r = MODEL.generate(PROMPT, GenerationOptions.greedy().withMaxTokens(8).withIgnoreEos(true));
        assertThat(r.stats().promptTokens()).isEqualTo(MODEL.encode(PROMPT).length);
        assertThat(r.stats().decodeSteps()).isEqualTo(7);
        assertThat(r.stats().prefillTokensPerSecond()).isPositive();
        assertThat(r.stats().decodeTokensPerSecond()).isPositive();
        assertThat(r.stats().toString()).contains("tokens/s");
    }

    @Test
    void contextOverflowIsATypedErrorAndLeavesTheDecoderAsItWas() {
        assertThat(MODEL.contextLength()).isEqualTo(64);
        int[] long65 = new int[65];
        assertThatThrownBy(() -> MODEL.generate(MODEL.tokenizer().decode(long65), GenerationOptions.greedy()))
                .isInstanceOf(ContextOverflowException.class);
        assertThatThrownBy(() -> MODEL.stream(new int[60], GenerationOptions.greedy().withMaxTokens(5)))
                .isInstanceOf(ContextOverflowException.class).hasMessageContaining("context length of 64");
        assertThatThrownBy(() -> MODEL.logits(long65)).isInstanceOf(ContextOverflowException.class);
        try (Decoder d = MODEL.newDecoder()) {
            d.append(new int[60]);
            ContextOverflowException e = org.junit.jupiter.api.Assertions.assertThrows(ContextOverflowException.class, () -> d.append(new int[5]));
            assertThat(e.position()).isEqualTo(60);
            assertThat(e.requested()).isEqualTo(5);
            assertThat(d.position()).isEqualTo(60);
            assertThat(d.append(1, 2, 3, 4)).hasSize(MODEL.config().vocabSize()); // exactly full
            assertThatThrownBy(() -> d.append(1)).isInstanceOf(ContextOverflowException.class);
            assertThatThrownBy(() -> d.append(384)).isInstanceOf(ContextOverflowException.class);
            d.reset();
            assertThatThrownBy(() -> d.append(384)).isInstanceOf(IllegalArgumentException.class).hasMessageContaining("vocabulary [0, 384)");
            assertThatThrownBy(() -> d.append(-1)).isInstanceOf(IllegalArgumentException.class);
        }
        // up to the context: generation fills it and says so
        GenerationResult r = MODEL.generate(PROMPT, GenerationOptions.greedy().withMaxTokens(0).withIgnoreEos(true));
        assertThat(r.finish()).isEqualTo(FinishReason.CONTEXT_FULL);
        assertThat(r.tokens()).hasSize(64 - MODEL.encode(PROMPT).length + 1);
    }

    @Test
    void decodersRunSideBySideOnThreads() throws Exception {
        GenerationOptions g = GenerationOptions.greedy().withMaxTokens(16).withIgnoreEos(true);
        int[] alone = MODEL.generate(PROMPT, g).tokens();
        List<CompletableFuture<int[]>> runs = new ArrayList<>();
        for (int i = 0; i < 3; i++) runs.add(CompletableFuture.supplyAsync(() -> MODEL.generate(PROMPT, g).tokens()));
        for (CompletableFuture<int[]> f : runs) assertThat(f.get(120, TimeUnit.SECONDS)).containsExactly(alone);
    }
}

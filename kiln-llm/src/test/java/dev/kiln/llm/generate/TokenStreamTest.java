package dev.kiln.llm.generate;

import dev.kiln.llm.tokenizer.Tokenizer;
import org.junit.jupiter.api.Test;

import java.net.URISyntaxException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * The generation loop on a scripted decoder whose logits make greedy choose given ids, with the tiny Llama's real
 * tokenizer: end tokens, stop strings, limits, the context, and that streamed texts add up to the result.
 */
class TokenStreamTest {
    static final Tokenizer TOKENIZER = tokenizer();
    static final int EOT = TOKENIZER.encode("<|eot_id|>", false, true)[0];

    static Tokenizer tokenizer() {
        try {
            return Tokenizer.fromTokenizerJson(Path.of(TokenStreamTest.class.getResource("/llm/llama/hf/tokenizer.json").toURI()));
        } catch (URISyntaxException e) {
            throw new IllegalStateException(e);
        }
    }

    /** Answers each append with logits whose largest entry is the next scripted id; records what it was given. */
    static final class Scripted implements Decoder {
        final int[] script;
        final int context;
        final List<int[]> appended = new ArrayList<>();
        int next, position;
        boolean closed;

        Scripted(int context, int... script) {
            this.context = context;
            this.script = script;
        }

        @Override public int contextLength() { return context; }
        @Override public int vocabularySize() { return TOKENIZER.vocabularySize(); }
        @Override public int position() { return position; }

        @Override
        public float[] append(int... tokens) {
            if (position + tokens.length > context) throw new ContextOverflowException(position, tokens.length, context);
            appended.add(tokens.clone());
            position += tokens.length;
            float[] l = new float[vocabularySize()];
            l[script[Math.min(next++, script.length - 1)]] = 10;
            return l;
        }

        @Override public void reset() { position = 0; }
        @Override public void close() { closed = true; }
    }

    private static int[] ids(String text) { return TOKENIZER.encode(text, false, false); }

    private static int[] concat(int[] a, int... b) {
        int[] out = Arrays.copyOf(a, a.length + b.length);
        System.arraycopy(b, 0, out, a.length, b.length);
        return out;
    }

    private static String streamed(List<GeneratedToken> steps) {
        StringBuilder sb = new StringBuilder();
        for (GeneratedToken t : steps) sb.append(t.text());
        return sb.toString();
    }

    @Test
    void anEndTokenEndsTheGenerationAndTheStreamedTextsAddUp() {
        int[] words = ids("Hello there, world");
        Scripted d = new Scripted(64, concat(words, EOT, 5));
        List<GeneratedToken> steps = new ArrayList<>();
        GenerationResult r;
        try (TokenStream s = new TokenStream(d, TOKENIZER, ids("Say:"), GenerationOptions.greedy())) {
            r = s.drain(steps::add);
        }
        assertThat(r.text()).isEqualTo("Hello there, world");
        assertThat(streamed(steps)).isEqualTo(r.text());
        assertThat(r.finish()).isEqualTo(FinishReason.END_OF_TEXT);
        assertThat(r.tokens()).containsExactly(concat(words, EOT));
        assertThat(steps.getLast()).isEqualTo(new GeneratedToken(EOT, "", FinishReason.END_OF_TEXT));
        assertThat(steps.subList(0, steps.size() - 1)).allMatch(t -> t.finish() == null);
        // the prompt ran once, then each chosen token but the end token
        assertThat(d.appended.getFirst()).containsExactly(ids("Say:"));
        assertThat(d.appended).hasSize(1 + words.length);
        assertThat(d.closed).as("the decoder is released when the generation ends").isTrue();
        assertThat(r.stats().promptTokens()).isEqualTo(ids("Say:").length);
        assertThat(r.stats().generatedTokens()).isEqualTo(words.length + 1);
        assertThat(r.stats().decodeSteps()).isEqualTo(words.length);
    }

    @Test
    void ignoringEndTokensRunsToMaxTokens() {
        Scripted d = new Scripted(64, EOT);
        try (TokenStream s = new TokenStream(d, TOKENIZER, ids("x"), GenerationOptions.greedy().withIgnoreEos(true).withMaxTokens(3))) {
            GenerationResult r = s.drain(t -> {});
            assertThat(r.tokens()).containsExactly(EOT, EOT, EOT);
            assertThat(r.finish()).isEqualTo(FinishReason.MAX_TOKENS);
            assertThat(r.text()).isEmpty();
        }
    }

    @Test
    void aStopStringEndsTheTextBeforeItEvenAcrossTokens() {
        int[] words = ids("The answer is 42.\nUser: next");
        List<GeneratedToken> steps = new ArrayList<>();
        try (TokenStream s = new TokenStream(new Scripted(64, words), TOKENIZER, ids("Q"), GenerationOptions.greedy().withStop("\nUser:", "zzz"))) {
            GenerationResult r = s.drain(steps::add);
            assertThat(r.text()).isEqualTo("The answer is 42.");
            assertThat(r.finish()).isEqualTo(FinishReason.STOP_STRING);
            assertThat(streamed(steps)).isEqualTo(r.text());
            assertThat(steps.getLast().finish()).isEqualTo(FinishReason.STOP_STRING);
            assertThat(r.tokens().length).isLessThan(words.length);
        }
    }

    @Test
    void heldBackTextIsReleasedAtTheEnd() {
        int[] words = ids("a\nUse");
        try (TokenStream s = new TokenStream(new Scripted(64, concat(words, EOT)), TOKENIZER, ids("Q"), GenerationOptions.greedy().withStop("\nUser:"))) {
            List<GeneratedToken> steps = new ArrayList<>();
            GenerationResult r = s.drain(steps::add);
            assertThat(r.text()).isEqualTo("a\nUse");
            assertThat(steps.getLast().text()).endsWith("Use"); // held until the end token settled it
            assertThat(r.finish()).isEqualTo(FinishReason.END_OF_TEXT);
        }
    }

    @Test
    void maxTokensEndsTheGeneration() {
        int[] words = ids("one two three four five six");
        try (TokenStream s = new TokenStream(new Scripted(64, words), TOKENIZER, ids("Count:"), GenerationOptions.greedy().withMaxTokens(2))) {
            GenerationResult r = s.drain(t -> {});
            assertThat(r.tokens()).containsExactly(words[0], words[1]);
            assertThat(r.finish()).isEqualTo(FinishReason.MAX_TOKENS);
        }
    }

    @Test
    void withoutMaxTokensTheGenerationFillsTheContext() {
        Scripted d = new Scripted(10, ids("x x x x x x x x x x x x x x x x x x x x"));
        try (TokenStream s = new TokenStream(d, TOKENIZER, ids("abc"), GenerationOptions.greedy().withMaxTokens(0))) {
            GenerationResult r = s.drain(t -> {});
            assertThat(r.finish()).isEqualTo(FinishReason.CONTEXT_FULL);
            assertThat(d.position()).isEqualTo(10); // every position used, none overflowed
            assertThat(r.tokens().length).isEqualTo(10 - ids("abc").length + 1); // the last token needs no position
        }
    }

    @Test
    void aPromptThatCannotFitIsRefusedBeforeAnythingRuns() {
        Scripted d = new Scripted(8, 1);
        assertThatThrownBy(() -> new TokenStream(d, TOKENIZER, new int[9], GenerationOptions.greedy().withMaxTokens(0)))
                .isInstanceOf(ContextOverflowException.class).hasMessageContaining("context length of 8");
        assertThatThrownBy(() -> new TokenStream(d, TOKENIZER, new int[5], GenerationOptions.greedy().withMaxTokens(4)))
                .isInstanceOf(ContextOverflowException.class).hasMessageContaining("plus 9 more");
        assertThat(d.appended).isEmpty();
        assertThatThrownBy(() -> new TokenStream(d, TOKENIZER, new int[0], GenerationOptions.greedy())).hasMessageContaining("no tokens");
    }

    @Test
    void closingEarlyReleasesTheDecoderAndLeavesNoResult() {
        Scripted d = new Scripted(64, ids("one two three"));
        TokenStream s = new TokenStream(d, TOKENIZER, ids("x"), GenerationOptions.greedy());
        assertThat(s.next().finish()).isNull();
        s.close();
        assertThat(d.closed).isTrue();
        assertThat(s.hasNext()).isFalse();
        assertThatThrownBy(s::result).isInstanceOf(IllegalStateException.class).hasMessageContaining("closed");
    }
}

package dev.kiln.llm.tokenizer;

import com.fasterxml.jackson.databind.JsonNode;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** The public API on the fixture tokenizers: special ids, flags, templates, streaming details, bad ids, scale. */
class TokenizerApiTest {
    private static final Tokenizer SPM = Tokenizer.fromGguf(Fixtures.ggufMetadata("spm"));
    private static final Tokenizer LLAMA3 = Tokenizer.fromGguf(Fixtures.ggufMetadata("llama3"));
    private static final Tokenizer LLAMA3_JSON =
            Tokenizer.fromTokenizerJson(Fixtures.dir("llama3").resolve("tokenizer.json"));
    private static final Tokenizer QWEN2_JSON = Tokenizer.fromTokenizerJson(Fixtures.dir("qwen2").resolve("tokenizer.json"));

    @Test
    void sentencePieceSpecialTokensAndTypes() {
        assertThat(SPM.vocabularySize()).isEqualTo(1000);
        assertThat(SPM.specialTokens()).isEqualTo(new SpecialTokens(1, 2, SpecialTokens.NONE, SpecialTokens.NONE,
                SpecialTokens.NONE, 0));
        assertThat(SPM.tokenType(0)).isEqualTo(TokenType.UNKNOWN);
        assertThat(SPM.tokenType(1)).isEqualTo(TokenType.CONTROL);
        assertThat(SPM.tokenText(3 + 0x0A)).isEqualTo("<0x0A>");
        assertThat(SPM.tokenType(3 + 0x0A)).isEqualTo(TokenType.BYTE);
        assertThat(SPM.isSpecial(1)).isTrue();
        assertThat(SPM.isSpecial(3 + 0x0A)).isFalse();
        assertThat(SPM.isEndOfGeneration(2)).isTrue();
        assertThat(SPM.isEndOfGeneration(1)).isFalse();
        assertThat(SPM.encode("", true, true)).containsExactly(1);
        assertThat(SPM.encode("", false, true)).isEmpty();
        assertThat(SPM.decode(new int[] {1, 3 + 0x41, 2}, true)).isEqualTo("<s>A</s>");
        assertThat(SPM.chatTemplate()).contains((String) Fixtures.ggufMetadata("spm").get("tokenizer.chat_template"));
    }

    @Test
    void llama3SpecialTokensFromGgufAndTokenizerJson() {
        for (Tokenizer t : List.of(LLAMA3, LLAMA3_JSON)) {
            SpecialTokens s = t.specialTokens();
            assertThat(t.tokenText(s.bos())).isEqualTo("<|begin_of_text|>");
            assertThat(t.tokenText(s.eos())).isEqualTo("<|eot_id|>");
            assertThat(t.tokenText(s.eot())).isEqualTo("<|eot_id|>");
            assertThat(t.tokenText(s.eom())).isEqualTo("<|eom_id|>");
            assertThat(t.isEndOfGeneration(s.eom())).isTrue();
            assertThat(t.encode("hi", true, false)[0]).isEqualTo(s.bos());
            assertThat(t.chatTemplate()).get().asString().contains("<|start_header_id|>");
            // without parseSpecial a control token is text; an added non-special token is always found
            int ud = 1006;
            assertThat(t.tokenType(ud)).isEqualTo(TokenType.USER_DEFINED);
            assertThat(t.encode("<|eot_id|>", false, true)).containsExactly(s.eot());
            assertThat(t.encode("<|eot_id|>", false, false)).hasSizeGreaterThan(1).doesNotContain(s.eot());
            assertThat(t.encode("a<|ud|>", false, false)).endsWith(ud);
            assertThat(t.decode(t.encode("x<|eot_id|>y", false, true))).isEqualTo("xy");
            assertThat(t.decode(t.encode("x<|eot_id|>y", false, true), true)).isEqualTo("x<|eot_id|>y");
        }
    }

    @Test
    void qwen2HasNoBosAndTakesIdsFromItsConfig() {
        SpecialTokens s = QWEN2_JSON.specialTokens();
        assertThat(s.hasBos()).isFalse();
        assertThat(QWEN2_JSON.tokenText(s.eos())).isEqualTo("<|im_end|>");
        assertThat(QWEN2_JSON.tokenText(s.pad())).isEqualTo("<|endoftext|>");
        assertThat(QWEN2_JSON.isEndOfGeneration(QWEN2_JSON.encode("<|endoftext|>", false, true)[0])).isTrue();
        assertThat(QWEN2_JSON.encode("hi", true, true)).isEqualTo(QWEN2_JSON.encode("hi", false, true));
        // NFC: a decomposed é encodes as the composed one
        assertThat(QWEN2_JSON.encode("e\u0301", false, false)).isEqualTo(QWEN2_JSON.encode("\u00e9", false, false));
    }

    @Test
    void streamingHoldsBytesUntilTheCharacterIsComplete() {
        // the byte tokens of "€" (E2 82 AC) one at a time
        int[] ids = {3 + 0xE2, 3 + 0x82, 3 + 0xAC};
        TokenDecoder decoder = SPM.newDecoder(false);
        assertThat(decoder.next(ids[0])).isEmpty();
        assertThat(decoder.next(ids[1])).isEmpty();
        assertThat(decoder.next(ids[2])).isEqualTo("\u20ac");
        assertThat(decoder.finish()).isEmpty();
        // a character that never completes is one U+FFFD at the end
        assertThat(decoder.next(ids[0]) + decoder.next(ids[1]) + decoder.finish()).isEqualTo("\uFFFD");
        // after finish the decoder starts a new text: the leading space of the first piece goes again
        int hello = SPM.encode("Hello", false, false)[0];
        assertThat(SPM.tokenText(hello)).startsWith("\u2581");
        assertThat(decoder.next(hello)).doesNotStartWith(" ");
    }

    @Test
    void badIdsAreRejected() {
        assertThatThrownBy(() -> SPM.decode(new int[] {1000})).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("1000");
        assertThatThrownBy(() -> LLAMA3.newDecoder(true).next(-1)).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> LLAMA3.tokenText(5000)).isInstanceOf(IllegalArgumentException.class);
    }

    /** Malformed UTF-8 decodes as Python does it (the Unicode maximal-subpart practice, like Rust's decoder). */
    @Test
    void malformedBytesDecodeLikePython() {
        JsonNode cases = Fixtures.read(Fixtures.dir("utf8").resolve("cases.json")).get("cases");
        assertThat(cases.size()).isGreaterThan(100);
        for (JsonNode c : cases) {
            int[] values = Fixtures.ids(c.get("bytes"));
            byte[] bytes = new byte[values.length];
            for (int i = 0; i < bytes.length; i++) bytes[i] = (byte) values[i];
            assertThat(Utf8.decode(bytes, 0, bytes.length)).as("bytes %s", c.get("bytes"))
                    .isEqualTo(c.get("decoded").textValue());
            // the same bytes as byte tokens, through decode and the streaming decoder
            int[] ids = new int[bytes.length];
            for (int i = 0; i < ids.length; i++) ids[i] = 3 + values[i];
            assertThat(SPM.decode(ids)).isEqualTo(c.get("decoded").textValue());
            assertThat(TokenizerGoldenTest.streamed(SPM, ids, false)).isEqualTo(c.get("decoded").textValue());
        }
    }

    /** Merging uses a priority queue: long inputs without spaces (one word) stay fast. */
    @Test
    @Timeout(value = 60, unit = TimeUnit.SECONDS)
    void longWordsEncodeInReasonableTime() {
        String word = "abcdefghij".repeat(20_000);
        String text = "The licence says, in many words, that you may copy it. ".repeat(4_000);
        for (Tokenizer t : List.of(SPM, LLAMA3, LLAMA3_JSON)) {
            assertThat(t.decode(t.encode(word, false, false))).isEqualTo(word);
            assertThat(t.decode(t.encode(text, false, false))).isEqualTo(text);
        }
    }

    /**
     * Without tokenizer.ggml.pre llama.cpp applies its default patterns one after the other: punctuation runs, GPT-2's
     * pattern, digit runs, then groups of three ASCII digits (no reference library has this, so the pieces are
     * worked out by hand from the patterns).
     */
    @Test
    void ggufWithoutPreUsesLlamaCppsDefaultPatterns() {
        Map<String, Object> meta = new java.util.HashMap<>(Fixtures.ggufMetadata("llama3"));
        meta.remove("tokenizer.ggml.pre");
        meta.remove("tokenizer.ggml.add_bos_token");
        Tokenizer t = Tokenizer.fromGguf(meta);
        List<String> pieces = t.pipeline().preTokenizer()
                .apply(List.of(new PreTokenizer.Piece("Hello, world! 12345", true))).stream()
                .map(PreTokenizer.Piece::text).toList();
        assertThat(pieces).containsExactly("Hello", ",", "\u0120world", "!", "\u0120", "123", "45");
        assertThat(t.encode("x", true, false)).hasSize(1); // without the key, add_bos defaults to true for llama3 only
        String text = "Tabs\tand \u00e9t\u00e9 \uD83D\uDC4B 2024";
        assertThat(t.decode(t.encode(text, false, false), true)).isEqualTo(text);
    }

    @Test
    void lstripAndRstripSwallowWhiteSpaceAroundAddedTokens() {
        Vocabulary vocab = new Vocabulary(new String[] {"a", "<m>"}, new TokenType[] {TokenType.NORMAL,
                TokenType.CONTROL}, new float[2], new SpecialTokens(-1, -1, -1, -1, -1, -1),
                new TextDecoding.ByteLevelBytes());
        SpecialSplitter splitter = new SpecialSplitter(vocab, Map.of(1, new SpecialSplitter.Flags(true, true, false)));
        assertThat(splitter.split("x \u00a0<m>\u3000 y", true)).containsExactly(
                new SpecialSplitter.Segment.Text("x", true), new SpecialSplitter.Segment.Token(1),
                new SpecialSplitter.Segment.Text("y", false));
        SpecialSplitter single = new SpecialSplitter(vocab, Map.of(1, new SpecialSplitter.Flags(false, false, true)));
        assertThat(single.split("a<m>b", true)).containsExactly(new SpecialSplitter.Segment.Text("a<m>b", true));
        assertThat(single.split("a <m> b", true)).hasSize(3);
    }

    @Test
    void metadataWithoutScoresOrTypesIsAllNormal() {
        Map<String, Object> meta = Map.of("tokenizer.ggml.model", "llama",
                "tokenizer.ggml.tokens", List.of("<unk>", "<s>", "</s>", "\u2581a", "a", "\u2581"));
        Tokenizer t = Tokenizer.fromGguf(meta);
        assertThat(t.encode("a", true, false)).containsExactly(1, 3);
        assertThat(t.tokenType(1)).isEqualTo(TokenType.NORMAL);
    }
}
